/* sc_job_auth.h — reads a job's key (job.auth.key_file or job.auth.key_env)
 * into an sc_auth_t (sc_auth.h). The key is never printed. */
#ifndef SC_JOB_AUTH_H
#define SC_JOB_AUTH_H

#include "sc_auth.h"
#include "sc_conf.h"

/* What a job member logs (a warning) at start when its job names no key. */
#define SC_JOB_AUTH_OFF                                                                            \
        "the job is not authenticated (no job.auth.key_file or key_env): any client that "         \
        "can write to its topics can forge updates, models and control records "                   \
        "(docs/SECURITY.md)"

/* Leaves auth off when the job names no key; errors (the key cannot be
 * read, is too short) name the property and the file or variable, never
 * the key. auth must be zeroed; sc_auth_free() it. */
sc_err_t sc_job_auth_load(sc_auth_t *auth, const sc_conf_t *conf, char *errstr, size_t errstr_size);

#endif
