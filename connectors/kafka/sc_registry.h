/* sc_registry.h — a Schema Registry client (Confluent's REST API): a
 * schema's text by its id, over http or https (libcurl), with basic
 * authentication, a cache of the schemas fetched, and a back-off after a
 * failed request so an outage costs one request per interval, not one per
 * record. Blocking: one request takes at most the configured timeout. */
#ifndef SC_REGISTRY_H
#define SC_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#include "sc_err.h"

typedef struct sc_registry sc_registry_t;

typedef struct sc_registry_spec {
        const char *url;       /* http(s)://host[:port][/path] */
        const char *auth_file; /* first line user:password; NULL or "" = none */
        const char *ca;        /* PEM CA bundle; NULL or "" = the system's */
        double timeout;        /* s, one request */
} sc_registry_spec_t;

typedef enum sc_registry_result {
        SC_REGISTRY_OK,          /* *schema holds the schema's text */
        SC_REGISTRY_NOT_FOUND,   /* the registry answered that it has no such id (or not an
                                    Avro schema): why says so */
        SC_REGISTRY_UNAVAILABLE, /* no answer, a 5xx, an authentication failure, or in the
                                    back-off after one: try again later */
} sc_registry_result_t;

typedef struct sc_registry_stats {
        uint64_t requests;   /* HTTP requests made */
        uint64_t failures;   /* of which unavailable */
        uint64_t not_found;  /* ids the registry does not have */
        int unavailable;     /* 1 from a failed request to the next good one */
        int pending;         /* ids answered "not found" not believed yet (asked again) */
        double outage_since; /* t of the first failure of the current outage */
} sc_registry_stats_t;

/* Checks the spec and reads the auth file; errors name what is wrong. */
sc_err_t sc_registry_new(sc_registry_t **out, const sc_registry_spec_t *spec, char *errstr,
                         size_t errstr_size);
void sc_registry_destroy(sc_registry_t *r);

/* The schema of id at time t (s, any monotonic clock): *schema points at
 * the registry's cached text (NUL-terminated, *len bytes; valid until
 * sc_registry_destroy). why says what went wrong otherwise. */
sc_registry_result_t sc_registry_get(sc_registry_t *r, int32_t id, double t, const char **schema,
                                     size_t *len, char *why, size_t why_size);

/* Registers schema (Avro JSON text) under subject (POST
 * /subjects/SUBJECT/versions; the registry answers the id of the same
 * schema when it has it already): *id. Blocking, one request; why says
 * what failed (the registry's message for a schema it refuses, e.g. an
 * incompatible one). */
sc_err_t sc_registry_register(sc_registry_t *r, const char *subject, const char *schema,
                              int32_t *id, char *why, size_t why_size);

/* 1 while records may be waiting for it at t: it is down, or an id's "not
 * found" is being asked again. */
int sc_registry_waiting(const sc_registry_t *r, double t);

/* Seconds until the next request is allowed (0 when it is now). */
double sc_registry_retry_in(const sc_registry_t *r, double t);
const sc_registry_stats_t *sc_registry_stats(const sc_registry_t *r);
const char *sc_registry_url(const sc_registry_t *r);

#endif
