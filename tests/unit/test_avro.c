/* test_avro.c — Schema Registry framed Avro records read by named fields
 * (core/decode_avro.c): plans per schema id, a second schema version with
 * the fields reordered and retyped, nulls, fields absent from a schema,
 * nested records, every kind of malformed body (truncated at every byte,
 * lengths and counts that lie, union branches out of range), schemas that
 * cannot be used, and the cache's bookkeeping. The bodies are written here
 * byte by byte from the Avro specification's binary encoding. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sc_avro.h"
#include "sc_decode.h"

/* ---- an Avro body, byte by byte ---- */

typedef struct buf {
        uint8_t b[4096];
        size_t n;
} buf_t;

static void put_byte(buf_t *b, uint8_t v)
{
        assert_true(b->n < sizeof(b->b));
        b->b[b->n++] = v;
}

static void put_long(buf_t *b, int64_t v)
{
        uint64_t u = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
        while (u >= 0x80) {
                put_byte(b, (uint8_t)(u | 0x80));
                u >>= 7;
        }
        put_byte(b, (uint8_t)u);
}

static void put_str(buf_t *b, const char *s)
{
        put_long(b, (int64_t)strlen(s));
        for (const char *p = s; *p; p++)
                put_byte(b, (uint8_t)*p);
}

static void put_double(buf_t *b, double v)
{
        uint8_t x[8];
        memcpy(x, &v, 8);
        for (int i = 0; i < 8; i++)
                put_byte(b, x[i]);
}

static void put_float(buf_t *b, float v)
{
        uint8_t x[4];
        memcpy(x, &v, 4);
        for (int i = 0; i < 4; i++)
                put_byte(b, x[i]);
}

static void put_frame(buf_t *b, int32_t id)
{
        b->n = 0;
        put_byte(b, 0);
        put_byte(b, (uint8_t)((uint32_t)id >> 24));
        put_byte(b, (uint8_t)((uint32_t)id >> 16));
        put_byte(b, (uint8_t)((uint32_t)id >> 8));
        put_byte(b, (uint8_t)id);
}

/* Version 1: kind an enum, sensors a nested record, tags a map, a fixed. */
static const char *const schema_v1 =
    "{\"type\":\"record\",\"name\":\"M\",\"fields\":["
    "{\"name\":\"device\",\"type\":\"string\"},"
    "{\"name\":\"kind\",\"type\":{\"type\":\"enum\",\"name\":\"Kind\","
    "\"symbols\":[\"pump\",\"fan\",\"mixer\"]}},"
    "{\"name\":\"temp\",\"type\":[\"null\",\"double\"]},"
    "{\"name\":\"sensors\",\"type\":{\"type\":\"record\",\"name\":\"S\",\"fields\":["
    "{\"name\":\"extra\",\"type\":{\"type\":\"array\",\"items\":\"long\"}},"
    "{\"name\":\"vib\",\"type\":[\"null\",\"float\"]}]}},"
    "{\"name\":\"on\",\"type\":\"boolean\"},"
    "{\"name\":\"tags\",\"type\":{\"type\":\"map\",\"values\":\"string\"}},"
    "{\"name\":\"blob\",\"type\":{\"type\":\"fixed\",\"name\":\"B\",\"size\":3}},"
    "{\"name\":\"status\",\"type\":\"string\"}]}";

/* Version 2: reordered, kind a string, temp an int, vib a double, no on. */
static const char *const schema_v2 =
    "{\"type\":\"record\",\"name\":\"M\",\"fields\":["
    "{\"name\":\"status\",\"type\":\"string\"},"
    "{\"name\":\"sensors\",\"type\":{\"type\":\"record\",\"name\":\"S\",\"fields\":["
    "{\"name\":\"vib\",\"type\":[\"double\",\"null\"]}]}},"
    "{\"name\":\"temp\",\"type\":\"int\"},"
    "{\"name\":\"kind\",\"type\":\"string\"},"
    "{\"name\":\"device\",\"type\":\"string\"}]}";

/* A v1 body: device, kind index, temp (NAN = null), vib (NAN = null), on,
 * status. */
static void v1_body(buf_t *b, const char *device, int kind, double temp, float vib, int on,
                    const char *status)
{
        put_frame(b, 1);
        put_str(b, device);
        put_long(b, kind);
        if (isnan(temp)) {
                put_long(b, 0);
        } else {
                put_long(b, 1);
                put_double(b, temp);
        }
        put_long(b, 2); /* extra: a block of 2 longs, then the end */
        put_long(b, 7);
        put_long(b, -300);
        put_long(b, 0);
        if (isnan(vib)) {
                put_long(b, 0);
        } else {
                put_long(b, 1);
                put_float(b, vib);
        }
        put_byte(b, (uint8_t)on);
        put_long(b, -1); /* tags: a block of 1 with its byte size, then the end */
        put_long(b, 7);
        put_str(b, "fw");
        put_str(b, "1.2");
        put_long(b, 0);
        put_byte(b, 'x');
        put_byte(b, 'y');
        put_byte(b, 'z');
        put_str(b, status);
}

/* temp (mean 70, std 2), $.sensors.vib (indicator, mean 1), kind
 * (categorical pump/fan), device (hashed, 4 buckets), on (boolean, missing
 * is an error): 11 features; labels ok, overheat, leak at $.status. */
typedef struct fixture {
        sc_fields_t *fs;
        sc_vocab_t *labels;
        sc_decode_spec_t spec;
        sc_avro_cache_t *cache;
} fixture_t;

static int setup(void **state)
{
        fixture_t *f = calloc(1, sizeof(*f));
        sc_field_t fd;
        char err[256];
        f->fs = sc_fields_new();
        sc_field_defaults(&fd);
        snprintf(fd.path, sizeof(fd.path), "temp");
        fd.mean = 70;
        fd.std = 2;
        assert_int_equal(sc_fields_add(f->fs, &fd, err, sizeof(err)), 0);
        sc_field_defaults(&fd);
        snprintf(fd.path, sizeof(fd.path), "$.sensors.vib");
        fd.indicator = 1;
        fd.mean = 1;
        assert_int_equal(sc_fields_add(f->fs, &fd, err, sizeof(err)), 0);
        sc_field_defaults(&fd);
        snprintf(fd.path, sizeof(fd.path), "kind");
        fd.kind = SC_FIELD_CATEGORICAL;
        fd.missing = SC_MISSING_ZERO;
        fd.vocab = sc_vocab_new();
        sc_vocab_add(fd.vocab, "pump", 4);
        sc_vocab_add(fd.vocab, "fan", 3);
        assert_int_equal(sc_fields_add(f->fs, &fd, err, sizeof(err)), 0);
        sc_field_defaults(&fd);
        snprintf(fd.path, sizeof(fd.path), "device");
        fd.kind = SC_FIELD_HASHED;
        fd.missing = SC_MISSING_ZERO;
        fd.buckets = 4;
        assert_int_equal(sc_fields_add(f->fs, &fd, err, sizeof(err)), 0);
        sc_field_defaults(&fd);
        snprintf(fd.path, sizeof(fd.path), "on");
        fd.kind = SC_FIELD_BOOLEAN;
        fd.missing = SC_MISSING_ERROR;
        assert_int_equal(sc_fields_add(f->fs, &fd, err, sizeof(err)), 0);
        assert_int_equal(f->fs->width, 11);
        f->labels = sc_vocab_new();
        sc_vocab_add(f->labels, "ok", 2);
        sc_vocab_add(f->labels, "overheat", 8);
        sc_vocab_add(f->labels, "leak", 4);

        sc_decode_spec_defaults(&f->spec, SC_DECODE_AVRO);
        f->spec.numel = 11;
        f->spec.n_classes = 3;
        f->spec.fields = f->fs;
        f->spec.labels = f->labels;
        snprintf(f->spec.label_path, sizeof(f->spec.label_path), "$.status");
        assert_int_equal(sc_decode_spec_check(&f->spec, err, sizeof(err)), SC_OK);
        f->cache = sc_avro_cache_new(&f->spec);
        assert_non_null(f->cache);
        f->spec.avro = f->cache;
        assert_int_equal(
            sc_avro_cache_put(f->cache, 1, schema_v1, strlen(schema_v1), err, sizeof(err)), SC_OK);
        assert_int_equal(
            sc_avro_cache_put(f->cache, 2, schema_v2, strlen(schema_v2), err, sizeof(err)), SC_OK);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        fixture_t *f = *state;
        sc_avro_cache_free(f->cache);
        sc_fields_unref(f->fs);
        sc_vocab_unref(f->labels);
        free(f);
        return 0;
}

static sc_decode_fault_t decode(const fixture_t *f, const buf_t *b, float *x, int32_t *label,
                                char *err, size_t err_size)
{
        sc_record_t r = {.value = b->b, .value_size = b->n};
        return sc_decode_record(&f->spec, &r, x, label, err, err_size);
}

static int device_slot(const char *device)
{
        return (int)(sc_fnv1a(device, strlen(device)) % 4);
}

static void decodes_fields_by_name(void **state)
{
        fixture_t *f = *state;
        buf_t b;
        float x[11];
        int32_t label = -1;
        char err[256];
        v1_body(&b, "m-17", 1, 71.0, 2.5f, 1, "overheat");
        assert_int_equal(decode(f, &b, x, &label, err, sizeof(err)), SC_DECODE_OK);
        assert_int_equal(label, 1);
        assert_float_equal(x[0], 0.5f, 1e-6); /* (71 - 70) / 2 */
        assert_float_equal(x[1], 1.5f, 1e-6); /* vib - 1 */
        assert_float_equal(x[2], 0.0f, 0);    /* vib present */
        assert_float_equal(x[3], 0.0f, 0);    /* kind: fan */
        assert_float_equal(x[4], 1.0f, 0);
        assert_float_equal(x[5], 0.0f, 0);
        for (int k = 0; k < 4; k++)
                assert_float_equal(x[6 + k], k == device_slot("m-17") ? 1.0f : 0.0f, 0);
        assert_float_equal(x[10], 1.0f, 0); /* on */

        /* an enum symbol outside the vocabulary takes the other slot */
        v1_body(&b, "m-17", 2, NAN, NAN, 0, "ok");
        assert_int_equal(decode(f, &b, x, &label, err, sizeof(err)), SC_DECODE_OK);
        assert_int_equal(label, 0);
        assert_float_equal(x[0], 0.0f, 1e-6); /* null temp: the mean */
        assert_float_equal(x[1], 0.0f, 1e-6); /* null vib: the mean */
        assert_float_equal(x[2], 1.0f, 0);    /* and its indicator */
        assert_float_equal(x[5], 1.0f, 0);    /* mixer: out of vocabulary */
        assert_float_equal(x[10], 0.0f, 0);
}

static void second_version_decodes_the_same(void **state)
{
        fixture_t *f = *state;
        buf_t b;
        float x1[11], x2[11];
        int32_t l1, l2;
        char err[256];
        v1_body(&b, "m-3", 0, 74.0, 0.5f, 1, "leak");
        assert_int_equal(decode(f, &b, x1, &l1, err, sizeof(err)), SC_DECODE_OK);
        put_frame(&b, 2);
        put_str(&b, "leak");
        put_long(&b, 0); /* vib: the double branch */
        put_double(&b, 0.5);
        put_long(&b, 74);
        put_str(&b, "pump");
        put_str(&b, "m-3");
        /* v2 has no "on", whose missing rule is error */
        assert_int_equal(decode(f, &b, x2, &l2, err, sizeof(err)), SC_DECODE_MISSING_FIELD);
        assert_non_null(strstr(err, "$.on"));

        /* the same spec without "on" (its own cache: plans follow the spec) */
        sc_decode_spec_t s = f->spec;
        sc_fields_t *fs = sc_fields_new();
        char e2[256];
        for (size_t i = 0; i < 4; i++) {
                sc_field_t fd = f->fs->field[i];
                if (fd.vocab)
                        fd.vocab = (sc_vocab_t *)sc_vocab_ref(fd.vocab);
                snprintf(fd.path, sizeof(fd.path), "%s", f->fs->field[i].given);
                assert_int_equal(sc_fields_add(fs, &fd, e2, sizeof(e2)), 0);
        }
        s.fields = fs;
        s.numel = fs->width;
        sc_avro_cache_t *c = sc_avro_cache_new(&s);
        s.avro = c;
        assert_int_equal(sc_avro_cache_put(c, 2, schema_v2, strlen(schema_v2), e2, sizeof(e2)),
                         SC_OK);
        assert_int_equal(sc_avro_cache_put(c, 1, schema_v1, strlen(schema_v1), e2, sizeof(e2)),
                         SC_OK);
        sc_record_t r = {.value = b.b, .value_size = b.n};
        assert_int_equal(sc_decode_record(&s, &r, x2, &l2, err, sizeof(err)), SC_DECODE_OK);
        assert_int_equal(l2, 2);
        for (int i = 0; i < 10; i++)
                assert_float_equal(x1[i], x2[i], 1e-6);
        sc_avro_cache_free(c);
        sc_fields_unref(fs);
}

static void truncated_at_every_byte(void **state)
{
        fixture_t *f = *state;
        buf_t b;
        float x[11];
        int32_t label;
        char err[256];
        v1_body(&b, "m-17", 1, 71.0, 2.5f, 1, "overheat");
        size_t full = b.n;
        for (size_t n = 0; n < full; n++) {
                buf_t c = b;
                c.n = n;
                sc_record_t r = {.value = n ? c.b : NULL, .value_size = n};
                /* a heap copy of exactly n bytes: a read past it is caught
                 * under AddressSanitizer */
                uint8_t *heap = malloc(n ? n : 1);
                memcpy(heap, c.b, n);
                r.value = n ? heap : NULL;
                sc_decode_fault_t k = sc_decode_record(&f->spec, &r, x, &label, err, sizeof(err));
                assert_int_equal(k, n == 0 ? SC_DECODE_EMPTY : SC_DECODE_BAD_AVRO);
                free(heap);
        }
        put_byte(&b, 0); /* one byte too many */
        assert_int_equal(decode(f, &b, x, &label, err, sizeof(err)), SC_DECODE_BAD_AVRO);
        assert_non_null(strstr(err, "left over"));
}

static void lying_bodies_are_refused(void **state)
{
        fixture_t *f = *state;
        buf_t b;
        float x[11];
        int32_t label;
        char err[256];

        /* a string claiming 2^62 bytes */
        put_frame(&b, 1);
        put_long(&b, (int64_t)1 << 62);
        put_str(&b, "m");
        assert_int_equal(decode(f, &b, x, &label, err, sizeof(err)), SC_DECODE_BAD_AVRO);
        assert_non_null(strstr(err, "past the end"));
        /* a negative length */
        put_frame(&b, 1);
        put_long(&b, -5);
        assert_int_equal(decode(f, &b, x, &label, err, sizeof(err)), SC_DECODE_BAD_AVRO);
        /* a varint of 11 bytes */
        put_frame(&b, 1);
        for (int i = 0; i < 11; i++)
                put_byte(&b, 0xff);
        assert_int_equal(decode(f, &b, x, &label, err, sizeof(err)), SC_DECODE_BAD_AVRO);
        /* an enum symbol and a union branch out of range */
        put_frame(&b, 1);
        put_str(&b, "m");
        put_long(&b, 3);
        assert_int_equal(decode(f, &b, x, &label, err, sizeof(err)), SC_DECODE_BAD_AVRO);
        assert_non_null(strstr(err, "enum"));
        put_frame(&b, 1);
        put_str(&b, "m");
        put_long(&b, 0);
        put_long(&b, 2);
        assert_int_equal(decode(f, &b, x, &label, err, sizeof(err)), SC_DECODE_BAD_AVRO);
        assert_non_null(strstr(err, "union branch"));
        /* an array block of 2^40 longs in a few bytes */
        put_frame(&b, 1);
        put_str(&b, "m");
        put_long(&b, 0);
        put_long(&b, 0);
        put_long(&b, (int64_t)1 << 40);
        for (int i = 0; i < 20; i++)
                put_long(&b, 1);
        assert_int_equal(decode(f, &b, x, &label, err, sizeof(err)), SC_DECODE_BAD_AVRO);
        assert_non_null(strstr(err, "truncated"));
        /* an enum index over 32 bits */
        put_frame(&b, 1);
        put_str(&b, "m");
        put_long(&b, (int64_t)1 << 33);
        assert_int_equal(decode(f, &b, x, &label, err, sizeof(err)), SC_DECODE_BAD_AVRO);
        assert_non_null(strstr(err, "over 32 bits"));
        /* a boolean that is 2 */
        buf_t c;
        put_frame(&c, 1);
        put_str(&c, "m-1");
        put_long(&c, 0);
        put_long(&c, 1);
        put_double(&c, 70);
        put_long(&c, 0);
        put_long(&c, 0);
        put_byte(&c, 2);
        assert_int_equal(decode(f, &c, x, &label, err, sizeof(err)), SC_DECODE_BAD_AVRO);
        assert_non_null(strstr(err, "boolean"));
}

/* A spec of one numeric field "v" (3 classes, label at $.label, or none),
 * its field list in *fs and its cache as s.avro. */
static sc_decode_spec_t one_field(sc_fields_t **fs, int labelled)
{
        char err[256];
        sc_field_t fd;
        *fs = sc_fields_new();
        sc_field_defaults(&fd);
        snprintf(fd.path, sizeof(fd.path), "v");
        assert_int_equal(sc_fields_add(*fs, &fd, err, sizeof(err)), 0);
        sc_decode_spec_t s;
        sc_decode_spec_defaults(&s, SC_DECODE_AVRO);
        s.numel = 1;
        s.fields = *fs;
        s.n_classes = 3;
        if (!labelled)
                s.label_source = SC_DECODE_LABEL_NONE;
        s.avro = sc_avro_cache_new(&s);
        assert_non_null(s.avro);
        return s;
}

static void array_of_nulls_is_bounded(void **state)
{
        char err[256];
        float x[1];
        int32_t label;
        sc_fields_t *fs;
        sc_decode_spec_t s = one_field(&fs, 0);
        sc_avro_cache_t *c = (sc_avro_cache_t *)s.avro;
        const char *sch = "{\"type\":\"record\",\"name\":\"R\",\"fields\":["
                          "{\"name\":\"n\",\"type\":{\"type\":\"array\",\"items\":\"null\"}},"
                          "{\"name\":\"v\",\"type\":\"double\"}]}";
        assert_int_equal(sc_avro_cache_put(c, 5, sch, strlen(sch), err, sizeof(err)), SC_OK);
        buf_t b;
        put_frame(&b, 5);
        put_long(&b, (int64_t)1 << 60); /* 2^60 nulls take no bytes */
        put_long(&b, 0);
        put_double(&b, 3);
        sc_record_t r = {.value = b.b, .value_size = b.n};
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)), SC_DECODE_BAD_AVRO);
        assert_non_null(strstr(err, "too many values"));
        put_frame(&b, 5); /* 1000 nulls in 2 bytes are a valid record */
        put_long(&b, 1000);
        put_long(&b, 0);
        put_double(&b, 4);
        r.value_size = b.n;
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)), SC_DECODE_OK);
        assert_float_equal(x[0], 4.0f, 0);
        put_frame(&b, 5);
        put_long(&b, 3);
        put_long(&b, 0);
        put_double(&b, 3);
        r.value_size = b.n;
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)), SC_DECODE_OK);
        assert_float_equal(x[0], 3.0f, 0);
        assert_int_equal(label, -1);
        sc_avro_cache_free(c);
        sc_fields_unref(fs);
}

static void wrong_types_name_the_field(void **state)
{
        char err[256];
        float x[1];
        int32_t label;
        sc_fields_t *fs;
        sc_decode_spec_t s = one_field(&fs, 1);
        sc_avro_cache_t *c = (sc_avro_cache_t *)s.avro;
        const char *str = "{\"type\":\"record\",\"name\":\"R\",\"fields\":["
                          "{\"name\":\"v\",\"type\":\"string\"},{\"name\":\"label\",\"type\":"
                          "\"long\"}]}";
        const char *arr = "{\"type\":\"record\",\"name\":\"R\",\"fields\":["
                          "{\"name\":\"v\",\"type\":{\"type\":\"array\",\"items\":\"int\"}},"
                          "{\"name\":\"label\",\"type\":\"long\"}]}";
        assert_int_equal(sc_avro_cache_put(c, 1, str, strlen(str), err, sizeof(err)), SC_OK);
        assert_int_equal(sc_avro_cache_put(c, 2, arr, strlen(arr), err, sizeof(err)), SC_OK);
        buf_t b;
        sc_record_t r;
        put_frame(&b, 1);
        put_str(&b, "12.5"); /* a string holding a number is one */
        put_long(&b, 2);
        r = (sc_record_t){.value = b.b, .value_size = b.n};
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)), SC_DECODE_OK);
        assert_float_equal(x[0], 12.5f, 0);
        assert_int_equal(label, 2);
        put_frame(&b, 1);
        put_str(&b, "hot");
        put_long(&b, 1);
        r.value_size = b.n;
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)),
                         SC_DECODE_NOT_NUMERIC);
        assert_non_null(strstr(err, "$.v"));
        put_frame(&b, 1);
        put_str(&b, "1");
        put_long(&b, 7); /* label 7 of 3 classes */
        r.value_size = b.n;
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)),
                         SC_DECODE_LABEL_RANGE);
        put_frame(&b, 2);
        put_long(&b, 1);
        put_long(&b, 4);
        put_long(&b, 0);
        put_long(&b, 0);
        r.value_size = b.n;
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)),
                         SC_DECODE_WRONG_TYPE);
        assert_non_null(strstr(err, "$.v"));
        sc_avro_cache_free(c);
        sc_fields_unref(fs);
}

static void unknown_and_refused_ids(void **state)
{
        fixture_t *f = *state;
        buf_t b;
        float x[11];
        int32_t label, id = 0;
        char err[256];
        v1_body(&b, "m-1", 0, 70, 1, 1, "ok");
        b.b[4] = 9; /* id 9: not in the cache */
        assert_int_equal(sc_avro_cache_need(f->cache, b.b, b.n, &id), 1);
        assert_int_equal(id, 9);
        assert_int_equal(decode(f, &b, x, &label, err, sizeof(err)), SC_DECODE_UNKNOWN_SCHEMA);
        assert_int_equal(sc_avro_cache_refuse(f->cache, 9, "the registry has no schema id 9"),
                         SC_OK);
        assert_int_equal(sc_avro_cache_need(f->cache, b.b, b.n, &id), 0);
        assert_int_equal(decode(f, &b, x, &label, err, sizeof(err)), SC_DECODE_UNKNOWN_SCHEMA);
        assert_non_null(strstr(err, "the registry has no schema id 9"));
        assert_int_equal(sc_avro_cache_size(f->cache), 3);

        /* schemas that cannot be used are kept as refused, with why */
        const char *bad[] = {
            "{not json", "\"string\"",
            "{\"type\":\"record\",\"name\":\"L\",\"fields\":[{\"name\":\"next\","
            "\"type\":[\"null\",\"L\"]},{\"name\":\"temp\",\"type\":\"double\"}]}"};
        const char *why[] = {"not an Avro schema", "not a record", "recursive"};
        for (int i = 0; i < 3; i++) {
                assert_int_equal(
                    sc_avro_cache_put(f->cache, 20 + i, bad[i], strlen(bad[i]), err, sizeof(err)),
                    SC_ERR_DECODE);
                assert_non_null(strstr(err, why[i]));
                b.b[4] = (uint8_t)(20 + i);
                assert_int_equal(sc_avro_cache_need(f->cache, b.b, b.n, &id), 0);
                assert_int_equal(decode(f, &b, x, &label, err, sizeof(err)),
                                 SC_DECODE_UNKNOWN_SCHEMA);
                assert_non_null(strstr(err, why[i]));
        }

        /* not framed */
        const char *json = "{\"temp\":1}";
        sc_record_t r = {.value = json, .value_size = strlen(json)};
        assert_int_equal(sc_decode_record(&f->spec, &r, x, &label, err, sizeof(err)),
                         SC_DECODE_BAD_AVRO);
        assert_non_null(strstr(err, "not framed"));
        assert_int_equal(sc_avro_frame_id(json, strlen(json), &id), -1);
        assert_int_equal(sc_avro_frame_id("\0\0\0\1", 4, &id), -1);
        assert_int_equal(sc_avro_frame_id("\0\x7f\xff\xff\xff", 5, &id), 0);
        assert_int_equal(id, INT32_MAX);
}

/* A path through an optional record (a union of null and a record):
 * the record's field when the branch is the record, the missing rule when
 * it is null; a union of two records is not followed. */
static void paths_through_optional_records(void **state)
{
        char err[256];
        float x[2];
        int32_t label;
        sc_fields_t *fs = sc_fields_new();
        sc_field_t fd;
        sc_field_defaults(&fd);
        snprintf(fd.path, sizeof(fd.path), "$.a.v");
        fd.indicator = 1;
        assert_int_equal(sc_fields_add(fs, &fd, err, sizeof(err)), 0);
        sc_decode_spec_t s;
        sc_decode_spec_defaults(&s, SC_DECODE_AVRO);
        s.numel = 2;
        s.fields = fs;
        s.label_source = SC_DECODE_LABEL_NONE;
        sc_avro_cache_t *c = sc_avro_cache_new(&s);
        s.avro = c;
        const char *opt = "{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"a\","
                          "\"type\":[\"null\",{\"type\":\"record\",\"name\":\"S\",\"fields\":["
                          "{\"name\":\"w\",\"type\":\"string\"},{\"name\":\"v\",\"type\":"
                          "\"double\"}]}]},{\"name\":\"z\",\"type\":\"long\"}]}";
        const char *two = "{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"a\","
                          "\"type\":[{\"type\":\"record\",\"name\":\"S\",\"fields\":[{\"name\":"
                          "\"v\",\"type\":\"double\"}]},{\"type\":\"record\",\"name\":\"T\","
                          "\"fields\":[{\"name\":\"v\",\"type\":\"double\"}]}]}]}";
        assert_int_equal(sc_avro_cache_put(c, 1, opt, strlen(opt), err, sizeof(err)), SC_OK);
        assert_int_equal(sc_avro_cache_put(c, 2, two, strlen(two), err, sizeof(err)), SC_OK);
        buf_t b;
        put_frame(&b, 1);
        put_long(&b, 1); /* the record */
        put_str(&b, "skipped");
        put_double(&b, 42);
        put_long(&b, 9);
        sc_record_t r = {.value = b.b, .value_size = b.n};
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)), SC_DECODE_OK);
        assert_float_equal(x[0], 42.0f, 0);
        assert_float_equal(x[1], 0.0f, 0);
        put_frame(&b, 1);
        put_long(&b, 0); /* null: the field is missing */
        put_long(&b, 9);
        r.value_size = b.n;
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)), SC_DECODE_OK);
        assert_float_equal(x[0], 0.0f, 0);
        assert_float_equal(x[1], 1.0f, 0);
        put_frame(&b, 2);
        put_long(&b, 1);
        put_double(&b, 42);
        r.value_size = b.n;
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)), SC_DECODE_OK);
        assert_float_equal(x[1], 1.0f, 0); /* two record branches: not followed */
        sc_avro_cache_free(c);
        sc_fields_unref(fs);
}

/* A number read by a categorical field is its JSON text: an int's digits,
 * a real's shortest text that reads back to it. */
static void numbers_as_categories(void **state)
{
        char err[256];
        float x[4];
        int32_t label;
        sc_fields_t *fs = sc_fields_new();
        sc_field_t fd;
        const char *names[] = {"9007199254740993", "0.1", "2.3"};
        sc_field_defaults(&fd);
        snprintf(fd.path, sizeof(fd.path), "k");
        fd.kind = SC_FIELD_CATEGORICAL;
        fd.missing = SC_MISSING_ZERO;
        fd.vocab = sc_vocab_new();
        for (int i = 0; i < 3; i++)
                sc_vocab_add(fd.vocab, names[i], strlen(names[i]));
        assert_int_equal(sc_fields_add(fs, &fd, err, sizeof(err)), 0);
        sc_decode_spec_t s;
        sc_decode_spec_defaults(&s, SC_DECODE_AVRO);
        s.numel = 4;
        s.fields = fs;
        s.label_source = SC_DECODE_LABEL_NONE;
        sc_avro_cache_t *c = sc_avro_cache_new(&s);
        s.avro = c;
        const char *sch = "{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"k\","
                          "\"type\":[\"long\",\"double\",\"float\"]}]}";
        assert_int_equal(sc_avro_cache_put(c, 1, sch, strlen(sch), err, sizeof(err)), SC_OK);
        for (int i = 0; i < 3; i++) {
                buf_t b;
                put_frame(&b, 1);
                put_long(&b, i);
                if (i == 0)
                        put_long(&b, 9007199254740993LL);
                else if (i == 1)
                        put_double(&b, 0.1);
                else
                        put_float(&b, 2.3f);
                sc_record_t r = {.value = b.b, .value_size = b.n};
                assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)),
                                 SC_DECODE_OK);
                for (int k = 0; k < 4; k++)
                        assert_float_equal(x[k], k == i ? 1.0f : 0.0f, 0);
        }
        sc_avro_cache_free(c);
        sc_fields_unref(fs);
}

static void spec_checks(void **state)
{
        fixture_t *f = *state;
        char err[256];
        sc_decode_spec_t s = f->spec;
        s.fields = NULL;
        assert_int_equal(sc_decode_spec_check(&s, err, sizeof(err)), SC_ERR_CONFIG);
        assert_non_null(strstr(err, "named fields"));
        s = f->spec;
        snprintf(s.label_path, sizeof(s.label_path), "$.a[0]");
        assert_int_equal(sc_decode_spec_check(&s, err, sizeof(err)), SC_ERR_CONFIG);
        assert_non_null(strstr(err, "label_path"));
        assert_string_equal(sc_decode_format_name(SC_DECODE_AVRO), "avro");
        assert_string_equal(sc_decode_fault_name(SC_DECODE_BAD_AVRO), "bad_avro");
        assert_int_equal(sc_decode_fault_parse("unknown_schema"), SC_DECODE_UNKNOWN_SCHEMA);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(decodes_fields_by_name, setup, teardown),
            cmocka_unit_test_setup_teardown(second_version_decodes_the_same, setup, teardown),
            cmocka_unit_test_setup_teardown(truncated_at_every_byte, setup, teardown),
            cmocka_unit_test_setup_teardown(lying_bodies_are_refused, setup, teardown),
            cmocka_unit_test(array_of_nulls_is_bounded),
            cmocka_unit_test(wrong_types_name_the_field),
            cmocka_unit_test_setup_teardown(unknown_and_refused_ids, setup, teardown),
            cmocka_unit_test(paths_through_optional_records),
            cmocka_unit_test(numbers_as_categories),
            cmocka_unit_test_setup_teardown(spec_checks, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
