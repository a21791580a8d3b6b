/* job_auth.c — loads the job key from a file or an environment variable and
 * derives the per-signer keys (sc_job_auth.h). */
#include "sc_job_auth.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SC_JOB_KEY_MAX 4096

sc_err_t sc_job_auth_load(sc_auth_t *auth, const sc_conf_t *conf, char *errstr, size_t errstr_size)
{
        const sc_conf_job_t *job = &conf->job;
        uint8_t key[SC_JOB_KEY_MAX + 1];
        size_t len = 0;
        const char *what;
        sc_err_t err;

        if (job->auth_key_file[0]) {
                FILE *f = fopen(job->auth_key_file, "rb");
                what = "$.job.auth.key_file";
                if (!f)
                        return sc_errf(SC_ERR_CONFIG, errstr, errstr_size, "%s: %s: %s: %s",
                                       conf->origin, what, job->auth_key_file, strerror(errno));
                len = fread(key, 1, sizeof(key), f);
                fclose(f);
                if (len > SC_JOB_KEY_MAX) {
                        sc_auth_wipe(key, sizeof(key));
                        return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                       "%s: %s: %s: more than %d bytes", conf->origin, what,
                                       job->auth_key_file, SC_JOB_KEY_MAX);
                }
        } else if (!job->auth_none) {
                const char *name = job->auth_key_env[0] ? job->auth_key_env : SC_JOB_KEY_ENV;
                const char *v = getenv(name);
                what = job->auth_key_env[0] ? "$.job.auth.key_env" : "$.job.auth";
                if ((!v || !*v) && !job->auth_key_env[0])
                        return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                       "%s: $.job.auth: job %s has no key: neither "
                                       "job.auth.key_file nor job.auth.key_env is set, and the "
                                       "environment variable " SC_JOB_KEY_ENV
                                       " is not. Make one with `scadles keygen -o job.key` and "
                                       "set job.auth.key_file to it (or `export " SC_JOB_KEY_ENV
                                       "=$(scadles keygen)`); to run the job unauthenticated, set "
                                       "job.auth.mode to \"none\"",
                                       conf->origin, job->name);
                if (!v || !*v)
                        return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                       "%s: %s: environment variable %s is not set", conf->origin,
                                       what, name);
                len = strlen(v);
                if (len > SC_JOB_KEY_MAX)
                        return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                       "%s: %s: %s holds more than %d bytes", conf->origin, what,
                                       name, SC_JOB_KEY_MAX);
                memcpy(key, v, len);
        } else {
                return SC_OK;
        }
        while (len > 0 && (key[len - 1] == '\n' || key[len - 1] == '\r'))
                len--;
        err = sc_auth_init(auth, key, len, job->name, job->sync.n_workers, errstr, errstr_size);
        sc_auth_wipe(key, sizeof(key));
        if (err == SC_ERR_CONFIG)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "%s: %s: the job key has %zu bytes, at least %d are needed",
                               conf->origin, what, len, SC_AUTH_MIN_KEY);
        return err;
}
