/* sc_job_auth.h — reads a job's key (job.auth.key_file or job.auth.key_env)
 * into an sc_auth_t (sc_auth.h). The key is never printed. */
#ifndef SC_JOB_AUTH_H
#define SC_JOB_AUTH_H

#include "sc_auth.h"
#include "sc_conf.h"

/* What a job member logs (a warning) at start when its job is not
 * authenticated. */
#define SC_JOB_AUTH_OFF                                                                            \
        "the job is not authenticated (job.auth.mode \"none\"): any client that can write to "     \
        "its topics can forge updates, models and control records (docs/SECURITY.md)"

/* The environment variable that holds the job key when the configuration
 * names neither a file nor a variable. */
#define SC_JOB_KEY_ENV "SCADLES_JOB_KEY"

/* Reads the job key (job.auth.key_file, else the variable job.auth.key_env
 * names, else SC_JOB_KEY_ENV) into auth; leaves auth off with
 * job.auth.mode none. Errors (no key anywhere, the key cannot be read, is
 * too short) name the property and the file or variable, never the key.
 * auth must be zeroed; sc_auth_free() it. */
sc_err_t sc_job_auth_load(sc_auth_t *auth, const sc_conf_t *conf, char *errstr, size_t errstr_size);

#endif
