/* api_conf.c — the public configuration object (scadles_conf_t): the training
 * configuration (sc_conf_t) plus the embedding properties and callbacks, and
 * the version and error calls of the public API. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api_impl.h"
#include "sc_file.h"

static const char *const sc_api_errstrs[SCADLES_ERR__END] = {
    [SCADLES_OK] = "Success",
    [SCADLES_ERR_INVALID_ARG] = "Invalid argument",
    [SCADLES_ERR_CONFIG] = "Invalid configuration",
    [SCADLES_ERR_NOMEM] = "Out of memory",
    [SCADLES_ERR_STATE] = "Operation not valid in the worker's current state",
    [SCADLES_ERR_QUEUE_FULL] = "Queue full: record dropped",
    [SCADLES_ERR_TIMED_OUT] = "Timed out",
    [SCADLES_ERR_IO] = "Data, file or broker error",
    [SCADLES_ERR_RUNTIME] = "Training stopped on an error",
    [SCADLES_ERR_UNSUPPORTED] = "Not supported by this build",
};

SCADLES_EXPORT int scadles_version(void)
{
        return SCADLES_VERSION;
}

SCADLES_EXPORT const char *scadles_version_str(void)
{
        return SCADLES_VERSION_STR;
}

SCADLES_EXPORT const char *scadles_err2str(scadles_resp_err_t err)
{
        if ((int)err < 0 || err >= SCADLES_ERR__END)
                return "Unknown error code";
        return sc_api_errstrs[err];
}

scadles_resp_err_t sc_api_err(sc_err_t err)
{
        switch (err) {
        case SC_OK:
                return SCADLES_OK;
        case SC_ERR_NOMEM:
                return SCADLES_ERR_NOMEM;
        case SC_ERR_INVAL:
                return SCADLES_ERR_INVALID_ARG;
        case SC_ERR_CONFIG:
        case SC_ERR_SHAPE:
                return SCADLES_ERR_CONFIG;
        case SC_ERR_STATE:
                return SCADLES_ERR_STATE;
        case SC_ERR_UNSUPPORTED:
                return SCADLES_ERR_UNSUPPORTED;
        case SC_ERR_DIVERGED:
                return SCADLES_ERR_RUNTIME;
        default:
                return SCADLES_ERR_IO;
        }
}

scadles_resp_err_t sc_api_errf(scadles_resp_err_t err, char *errstr, size_t errstr_size,
                               const char *msg)
{
        sc_errf(SC_OK, errstr, errstr_size, "%s", msg);
        return err;
}

SCADLES_EXPORT scadles_conf_t *scadles_conf_new(void)
{
        scadles_conf_t *conf = calloc(1, sizeof(*conf));
        if (!conf)
                return NULL;
        sc_conf_defaults(&conf->sc);
        return conf;
}

SCADLES_EXPORT void scadles_conf_destroy(scadles_conf_t *conf)
{
        if (!conf)
                return;
        sc_conf_free(&conf->sc);
        free(conf);
}

SCADLES_EXPORT scadles_conf_t *scadles_conf_dup(const scadles_conf_t *conf)
{
        if (!conf)
                return NULL;
        scadles_conf_t *dup = malloc(sizeof(*dup));
        if (!dup)
                return NULL;
        *dup = *conf;
        sc_conf_ref_values(&dup->sc);
        void **objs[] = {&dup->sc.kafka, &dup->sc.kafka_consumer, &dup->sc.kafka_producer};
        for (size_t i = 0; i < sizeof(objs) / sizeof(objs[0]); i++)
                *objs[i] = NULL;
        const void *src[] = {conf->sc.kafka, conf->sc.kafka_consumer, conf->sc.kafka_producer};
        for (size_t i = 0; i < sizeof(objs) / sizeof(objs[0]); i++) {
                if (src[i] && !(*objs[i] = json_deep_copy(src[i]))) {
                        sc_conf_free(&dup->sc);
                        free(dup);
                        return NULL;
                }
        }
        return dup;
}

/* Swaps a freshly parsed training configuration in (conf keeps the old one
 * on error); the embedding properties stay as they were set. */
static scadles_resp_err_t sc_api_conf_swap(scadles_conf_t *conf, sc_conf_t *fresh, sc_err_t err)
{
        if (err)
                return sc_api_err(err) == SCADLES_ERR_IO ? SCADLES_ERR_CONFIG : sc_api_err(err);
        fresh->embed = conf->sc.embed;
        sc_conf_free(&conf->sc);
        conf->sc = *fresh;
        return SCADLES_OK;
}

SCADLES_EXPORT scadles_resp_err_t scadles_conf_set_json(scadles_conf_t *conf, const char *json,
                                                        const char *origin, char *errstr,
                                                        size_t errstr_size)
{
        if (!conf || !json)
                return sc_api_errf(SCADLES_ERR_INVALID_ARG, errstr, errstr_size,
                                   "scadles_conf_set_json: NULL conf or json");
        sc_conf_t fresh;
        sc_err_t err = sc_conf_parse(&fresh, json, origin ? origin : "<json>", errstr, errstr_size);
        return sc_api_conf_swap(conf, &fresh, err);
}

SCADLES_EXPORT scadles_resp_err_t scadles_conf_load(scadles_conf_t *conf, const char *path,
                                                    char *errstr, size_t errstr_size)
{
        if (!conf || !path)
                return sc_api_errf(SCADLES_ERR_INVALID_ARG, errstr, errstr_size,
                                   "scadles_conf_load: NULL conf or path");
        sc_conf_t fresh;
        sc_err_t err = sc_conf_load(&fresh, path, errstr, errstr_size);
        return sc_api_conf_swap(conf, &fresh, err);
}

SCADLES_EXPORT scadles_resp_err_t scadles_conf_set(scadles_conf_t *conf, const char *name,
                                                   const char *value, char *errstr,
                                                   size_t errstr_size)
{
        int known;
        if (!conf || !name || !value || !*name)
                return sc_api_errf(SCADLES_ERR_INVALID_ARG, errstr, errstr_size,
                                   "scadles_conf_set: NULL conf, name or value");
        sc_err_t e = sc_conf_set_embedding(&conf->sc, name, value, &known, errstr, errstr_size);
        if (known)
                return e ? SCADLES_ERR_CONFIG : SCADLES_OK;
        size_t n = strlen(name) + strlen(value) + 2;
        char *line = malloc(n);
        if (!line)
                return sc_api_errf(SCADLES_ERR_NOMEM, errstr, errstr_size, "out of memory");
        snprintf(line, n, "%s=%s", name, value);
        e = sc_conf_set(&conf->sc, line, errstr, errstr_size);
        free(line);
        if (e == SC_OK)
                return SCADLES_OK;
        return e == SC_ERR_NOMEM ? SCADLES_ERR_NOMEM : SCADLES_ERR_CONFIG;
}

SCADLES_EXPORT void scadles_conf_set_log_cb(scadles_conf_t *conf, scadles_log_cb_t *log_cb)
{
        if (conf)
                conf->log_cb = log_cb;
}

SCADLES_EXPORT void scadles_conf_set_stats_cb(scadles_conf_t *conf, scadles_stats_cb_t *stats_cb)
{
        if (conf)
                conf->stats_cb = stats_cb;
}

SCADLES_EXPORT void scadles_conf_set_opaque(scadles_conf_t *conf, void *opaque)
{
        if (conf)
                conf->opaque = opaque;
}

SCADLES_EXPORT char *scadles_conf_dump(const scadles_conf_t *conf)
{
        return conf ? sc_conf_dump(&conf->sc) : NULL;
}

SCADLES_EXPORT void scadles_mem_free(void *ptr)
{
        free(ptr);
}
