/* sc_avro.h — Avro records framed for a Schema Registry (a 0 byte, a 4-byte
 * big-endian schema id, then the Avro binary body), read by named fields.
 *
 * A schema cache holds, per schema id, a plan compiled from the writer's
 * schema for one decoder spec: where each of the spec's fields (and the
 * label field) is in that schema's record, or that it is not there (the
 * field's missing-value rule applies), or why the schema cannot be used.
 * The schema text is parsed with libavro; a record's body is then read by a
 * bounds-checked walker over the plan that reads only the fields the spec
 * names, skips the rest and allocates nothing, whatever the bytes claim.
 *
 * Sans-I/O: fetching a schema by id (the registry's REST API) is the
 * caller's; sc_avro_cache_need says when a record's schema is not known yet.
 * A cache is used by one thread at a time; its plans are fixed once put. */
#ifndef SC_AVRO_H
#define SC_AVRO_H

#include <stddef.h>
#include <stdint.h>

#include "sc_decode.h"
#include "sc_err.h"

#define SC_AVRO_SCHEMA_MAX (1u << 20) /* bytes of one schema's JSON text */
#define SC_AVRO_NODES_MAX 4096        /* nodes of one compiled schema */
#define SC_AVRO_DEPTH_MAX 32          /* nesting of one schema */
#define SC_AVRO_IDS_MAX 4096          /* schema ids one cache compiles */
#define SC_AVRO_REFUSED_MAX                                                                        \
        1024 /* refused ids it remembers besides (the first                                        \
                one goes to make room) */

typedef struct sc_avro_cache sc_avro_cache_t;

/* An empty cache for records decoded with spec (its fields, label path and
 * label source are what plans are compiled for; spec is copied, its field
 * list and class names referenced). NULL when out of memory. */
sc_avro_cache_t *sc_avro_cache_new(const sc_decode_spec_t *spec);
void sc_avro_cache_free(sc_avro_cache_t *c);

/* The schema id of a framed value: 0 and *id, or -1 when value is not framed
 * (shorter than 5 bytes or not starting with a 0 byte). */
int sc_avro_frame_id(const void *value, size_t size, int32_t *id);

/* 1 when value is framed with an id the cache has no entry for (the caller
 * fetches the schema and puts it, or refuses the id), 0 otherwise. */
int sc_avro_cache_need(const sc_avro_cache_t *c, const void *value, size_t size, int32_t *id);

/* Compiles schema (len bytes of the writer's schema JSON) as id. A schema
 * that cannot be used (not valid Avro, not a record, too large, recursive)
 * is stored as refused, with the reason, and SC_ERR_DECODE is returned with
 * it in errstr; records of that id are then refused as unknown_schema.
 * SC_ERR_NOMEM, SC_ERR_UNSUPPORTED (the cache compiled SC_AVRO_IDS_MAX
 * ids): nothing stored. */
sc_err_t sc_avro_cache_put(sc_avro_cache_t *c, int32_t id, const char *schema, size_t len,
                           char *errstr, size_t errstr_size);

/* Stores id as refused (the registry does not have it): reason is kept and
 * repeated in each of its records' faults. */
sc_err_t sc_avro_cache_refuse(sc_avro_cache_t *c, int32_t id, const char *reason);

/* Entries held (ready or refused). */
size_t sc_avro_cache_size(const sc_avro_cache_t *c);

/* The fields (their paths, comma-separated, then the label path if the
 * label is a field) that schema id does not have, into buf; how many. 0
 * when id is not compiled. */
size_t sc_avro_cache_absent(const sc_avro_cache_t *c, int32_t id, char *buf, size_t size);

/* Decodes a framed Avro record with the plan of its id (spec->avro). Faults:
 * bad_avro (not framed, truncated, an invalid length or union branch, bytes
 * left over), unknown_schema (the id is refused or not in the cache), and
 * those of named fields (wrong_type, not_numeric, missing_field, ...).
 * Called by sc_decode_record. */
sc_decode_fault_t sc_decode_avro(const sc_decode_spec_t *spec, const sc_record_t *rec, float *x,
                                 int32_t *label, char *errstr, size_t errstr_size);

#endif
