/* test_decode.c — json/csv/raw decoders: values, labels, normalization, spec
 * checks, fault counting, the data-driven malformed cases under
 * tests/data/decode/invalid/ and random bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "sc_decode.h"
#include "sc_rng.h"

static sc_record_t rec_of(const char *value, const char *key)
{
        sc_record_t r = {0};
        r.value = value;
        r.value_size = value ? strlen(value) : 0;
        r.key = key;
        r.key_size = key ? strlen(key) : 0;
        return r;
}

static sc_decode_spec_t spec_of(sc_decode_format_t format, size_t numel)
{
        sc_decode_spec_t s;
        sc_decode_spec_defaults(&s, format);
        s.numel = numel;
        return s;
}

static void raw_u8_key_ascii_and_normalization(void **state)
{
        sc_decode_spec_t s = spec_of(SC_DECODE_RAW, 4);
        unsigned char v[4] = {0, 51, 255, 128};
        float x[4];
        int32_t label = -1;
        char err[128];
        s.scale = 1.0f / 255.0f;
        s.mean = 0.5f;
        s.std = 0.25f;
        assert_int_equal(sc_decode_spec_check(&s, err, sizeof(err)), SC_OK);
        sc_record_t r = {.key = "7", .key_size = 1, .value = v, .value_size = 4};
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)), SC_DECODE_OK);
        assert_int_equal(label, 7);
        for (int i = 0; i < 4; i++)
                assert_float_equal(x[i], (v[i] / 255.0f - 0.5f) / 0.25f, 1e-5);
}

static void raw_labels_from_byte_key_header_and_offset(void **state)
{
        sc_decode_spec_t s = spec_of(SC_DECODE_RAW, 3);
        unsigned char v[4] = {9, 1, 2, 3};
        unsigned char kb = 4;
        float x[3];
        int32_t label;
        char err[128];
        sc_record_t r = {.key = &kb, .key_size = 1, .value = v + 1, .value_size = 3};

        s.label_encoding = SC_DECODE_ENC_BYTE;
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)), SC_DECODE_OK);
        assert_int_equal(label, 4);

        sc_decode_header_t h[2] = {{"other", "1", 1}, {"y", "8", 1}};
        s.label_source = SC_DECODE_LABEL_HEADER;
        s.label_encoding = SC_DECODE_ENC_ASCII;
        strcpy(s.label_header, "y");
        r.headers = h;
        r.n_headers = 2;
        assert_int_equal(sc_decode_spec_check(&s, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)), SC_DECODE_OK);
        assert_int_equal(label, 8);

        /* Label byte first, tensor after it. */
        s.label_source = SC_DECODE_LABEL_OFFSET;
        s.label_offset = 0;
        s.data_offset = 1;
        r.value = v;
        r.value_size = 4;
        assert_int_equal(sc_decode_spec_check(&s, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)), SC_DECODE_OK);
        assert_int_equal(label, 9);
        assert_float_equal(x[0], 1, 0);
        assert_float_equal(x[2], 3, 0);
        /* A label byte inside the tensor is a spec error. */
        s.label_offset = 2;
        assert_int_equal(sc_decode_spec_check(&s, err, sizeof(err)), SC_ERR_CONFIG);
        assert_non_null(strstr(err, "decode.label_offset"));
}

/* Up to SC_DECODE_MAX_HEADERS headers are read (a label in the last one is
 * seen); one more and the record is refused, never read in part. */
static void too_many_headers_are_refused(void **state)
{
        sc_decode_spec_t s = spec_of(SC_DECODE_RAW, 3);
        unsigned char v[3] = {1, 2, 3};
        sc_decode_header_t h[SC_DECODE_MAX_HEADERS + 1];
        float x[3];
        int32_t label = -1;
        char err[128];
        sc_record_t r = {.value = v, .value_size = 3, .headers = h};

        (void)state;
        for (int i = 0; i <= SC_DECODE_MAX_HEADERS; i++)
                h[i] = (sc_decode_header_t){"other", "1", 1};
        h[SC_DECODE_MAX_HEADERS - 1] = (sc_decode_header_t){"y", "7", 1};
        s.label_source = SC_DECODE_LABEL_HEADER;
        strcpy(s.label_header, "y");
        assert_int_equal(sc_decode_spec_check(&s, err, sizeof(err)), SC_OK);
        r.n_headers = SC_DECODE_MAX_HEADERS;
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)), SC_DECODE_OK);
        assert_int_equal(label, 7);
        r.n_headers = SC_DECODE_MAX_HEADERS + 1;
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)),
                         SC_DECODE_TOO_MANY_HEADERS);
        assert_non_null(strstr(err, "more than 64"));
        assert_string_equal(sc_decode_fault_name(SC_DECODE_TOO_MANY_HEADERS), "too_many_headers");
}

static void raw_float32_little_endian(void **state)
{
        sc_decode_spec_t s = spec_of(SC_DECODE_RAW, 2);
        unsigned char v[8] = {0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x20, 0xc1}; /* 1.0, -10.0 */
        float x[2];
        int32_t label;
        s.dtype = SC_DECODE_F32;
        s.mean = 1.0f;
        sc_record_t r = {.key = "0", .key_size = 1, .value = v, .value_size = 8};
        assert_int_equal(sc_decode_record(&s, &r, x, &label, NULL, 0), SC_DECODE_OK);
        assert_float_equal(x[0], 0.0f, 0);
        assert_float_equal(x[1], -11.0f, 0);
        assert_int_equal(label, 0);
}

static void json_paths_nested_arrays_and_labels(void **state)
{
        sc_decode_spec_t s = spec_of(SC_DECODE_JSON, 6);
        float x[6];
        int32_t label;
        char err[128];
        strcpy(s.features_path, "$.sample.pixels");
        strcpy(s.label_path, "$.meta[1].y");
        s.scale = 0.5f;
        assert_int_equal(sc_decode_spec_check(&s, err, sizeof(err)), SC_OK);
        sc_record_t r = rec_of("{\"sample\": {\"pixels\": [[1, 2, 3], [4.5, -6, 1e2]]},"
                               " \"meta\": [{}, {\"y\": 3.0}]}",
                               NULL);
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)), SC_DECODE_OK);
        assert_int_equal(label, 3);
        const float want[6] = {0.5f, 1, 1.5f, 2.25f, -3, 50};
        for (int i = 0; i < 6; i++)
                assert_float_equal(x[i], want[i], 1e-6);

        /* Label from the key instead of a field. */
        s.label_source = SC_DECODE_LABEL_KEY;
        r = rec_of("{\"sample\": {\"pixels\": [1,2,3,4,5,6]}}", "5");
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)), SC_DECODE_OK);
        assert_int_equal(label, 5);

        strcpy(s.features_path, "pixels");
        assert_int_equal(sc_decode_spec_check(&s, err, sizeof(err)), SC_ERR_CONFIG);
        strcpy(s.features_path, "$.a[x]");
        assert_int_equal(sc_decode_spec_check(&s, err, sizeof(err)), SC_ERR_CONFIG);
        strcpy(s.features_path, "$..a");
        assert_int_equal(sc_decode_spec_check(&s, err, sizeof(err)), SC_ERR_CONFIG);
}

static void json_syntax_details(void **state)
{
        sc_decode_spec_t s = spec_of(SC_DECODE_JSON, 2);
        float x[2];
        int32_t label;
        char err[160];
        struct {
                const char *text;
                sc_decode_fault_t want;
                const char *where; /* expected in the message, or NULL */
        } cases[] = {
            {" {\"label\": 4, \"features\": [ 1 , -2.5e0 ] }\r\n", SC_DECODE_OK, NULL},
            /* A member name given twice in one object (after unescaping, at any
             * depth, on a path or off it) makes the record bad_json, with the
             * byte of the second name; the same name in sibling objects is fine. */
            {"{\"features\": [1, 2], \"label\": 4, \"label\": 3}", SC_DECODE_BAD_JSON,
             "duplicate member name at byte 33"},
            {"{\"features\": [1, 2], \"label\": 4, \"l\\u0061bel\": 4}", SC_DECODE_BAD_JSON,
             "duplicate"},
            {"{\"m\": {\"a\": 1, \"b\": {\"a\": 2}, \"a\": 3}, \"features\": [1, 2], \"label\": 4}",
             SC_DECODE_BAD_JSON, "at byte 30"},
            {"{\"m\": [{\"a\": 1}, {\"a\": 2}], \"n\": {\"a\": 1}, \"features\": [1, 2], "
             "\"label\": 4}",
             SC_DECODE_OK, NULL},
            {"{\"a\": 1, \"A\": 2, \"a \": 3, \"features\": [1, 2], \"label\": 4}", SC_DECODE_OK,
             NULL},

            {"{\"fe\\u0061tures\": [1, 2], \"label\": 4}", SC_DECODE_OK, NULL},
            {"{\"features\": [9], \"features\": [1, 2], \"label\": 4}", SC_DECODE_BAD_JSON, NULL},
            {"{\"x\": \"\\ud83d\\ude00 caf\xc3\xa9\", \"features\": [1, 2], \"label\": 4}",
             SC_DECODE_OK, NULL},
            {"{\"features\": [1, 2], \"label\": 4, \"n\": [true, false, null, {}]}", SC_DECODE_OK,
             NULL},
            {"{\"features\": [1, 2], \"label\": 4} x", SC_DECODE_BAD_JSON, NULL},
            {"{\"features\": [1, 2,], \"label\": 4}", SC_DECODE_BAD_JSON, NULL},
            {"{\"features\": [01, 2], \"label\": 4}", SC_DECODE_BAD_JSON, NULL},
            {"{\"features\": [1., 2], \"label\": 4}", SC_DECODE_BAD_JSON, NULL},
            {"{\"features\": [+1, 2], \"label\": 4}", SC_DECODE_BAD_JSON, NULL},
            {"{\"x\": \"\\ud83d\", \"features\": [1, 2], \"label\": 4}", SC_DECODE_BAD_JSON, NULL},
            {"{\"x\": \"\\u0000\", \"features\": [1, 2], \"label\": 4}", SC_DECODE_BAD_JSON, NULL},
            {"{\"x\": \"\xc3\x28\", \"features\": [1, 2], \"label\": 4}", SC_DECODE_BAD_JSON, NULL},
            {"{\"x\": \"a\tb\", \"features\": [1, 2], \"label\": 4}", SC_DECODE_BAD_JSON, NULL},
            {"{\"x\": tru, \"features\": [1, 2], \"label\": 4}", SC_DECODE_BAD_JSON, NULL},
            {"\"features\"", SC_DECODE_BAD_JSON, NULL},
            {"{\"features\": [1, \"2\"], \"label\": 4 ", SC_DECODE_BAD_JSON, NULL},
            {"{\"features\": [1, [2]], \"label\": null}", SC_DECODE_MISSING_FIELD, NULL},
            {"{\"features\": [1, 2], \"label\": 1e999}", SC_DECODE_NOT_FINITE, NULL},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                sc_record_t r = rec_of(cases[i].text, NULL);
                err[0] = '\0';
                sc_decode_fault_t got = sc_decode_record(&s, &r, x, &label, err, sizeof(err));
                if (got != cases[i].want)
                        fail_msg("case %zu: expected %s, got %s (%s)", i,
                                 sc_decode_fault_name(cases[i].want), sc_decode_fault_name(got),
                                 err);
                if (cases[i].where && !strstr(err, cases[i].where))
                        fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err, cases[i].where);
                if (got == SC_DECODE_OK) {
                        assert_int_equal(label, 4);
                        assert_float_equal(x[0], 1, 0);
                        assert_float_equal(x[1], i == 0 ? -2.5f : 2, 0);
                }
        }
        /* A path through an array at the root. */
        strcpy(s.features_path, "$[1]");
        strcpy(s.label_path, "$[0]");
        sc_record_t r = rec_of("[7, [3, 4]]", NULL);
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)), SC_DECODE_OK);
        assert_int_equal(label, 7);
        assert_float_equal(x[1], 4, 0);
}

/* The duplicate check is bounded by the names open at once, not by the
 * record: 1000 distinct names are fine, one repeated at the end is not (the
 * other duplicate cases are in json_syntax_details). */
static void json_duplicate_keys(void **state)
{
        sc_decode_spec_t s = spec_of(SC_DECODE_JSON, 2);
        float x[2];
        int32_t label;
        char err[160], big[20000];
        /* 1000 distinct names are fine; one repeated at the end is not. */
        size_t at = (size_t)snprintf(big, sizeof(big), "{");
        for (int k = 0; k < 1000; k++)
                at += (size_t)snprintf(big + at, sizeof(big) - at, "\"k%d\": %d, ", k, k);
        size_t keep = at;
        snprintf(big + at, sizeof(big) - at, "\"features\": [1, 2], \"label\": 4}");
        sc_record_t r = rec_of(big, NULL);
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)), SC_DECODE_OK);
        snprintf(big + keep, sizeof(big) - keep,
                 "\"features\": [1, 2], \"label\": 4, \"k517\": 0}");
        r = rec_of(big, NULL);
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)), SC_DECODE_BAD_JSON);
        assert_non_null(strstr(err, "duplicate member name"));
        /* More names open at once than the check remembers: refused, not unchecked. */
        at = (size_t)snprintf(big, sizeof(big), "{");
        for (int k = 0; k < 1100; k++)
                at += (size_t)snprintf(big + at, sizeof(big) - at, "\"k%d\": 0, ", k);
        snprintf(big + at, sizeof(big) - at, "\"features\": [1, 2], \"label\": 4}");
        r = rec_of(big, NULL);
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)), SC_DECODE_BAD_JSON);
        assert_non_null(strstr(err, "too many member names"));
}

/* The json decoder agrees with jansson on which texts are valid JSON. */
static void json_validity_matches_jansson(void **state)
{
        static const char *const seeds[] = {
            "{\"features\": [1, 2.5, -3e2, 4], \"label\": 3, \"s\": \"a\\n\\u00e9\"}",
            "{\"a\": {\"b\": [true, false, null]}, \"features\": [[1, 2], [3, 4]], "
            "\"label\": 1}",
            "[{\"k\": \"v\"}, 0.5, -0, 1E+2, \"\\ud83d\\ude00\"]",
        };
        const char noise[] = "{}[],:\"\\-+.eE0123456789 truefalsnul\x80\xc3\xa9\xff\x01u";
        sc_decode_spec_t s = spec_of(SC_DECODE_JSON, 4);
        sc_rng_t rng;
        char buf[256];
        float x[4];
        int32_t label;
        int valid = 0, invalid = 0;

        sc_rng_seed(&rng, 4321);
        for (int it = 0; it < 40000; it++) {
                const char *src = seeds[sc_rng_below(&rng, 3)];
                size_t n = strlen(src);
                memcpy(buf, src, n);
                int edits = 1 + (int)sc_rng_below(&rng, 3);
                for (int m = 0; m < edits; m++) {
                        size_t at = sc_rng_below(&rng, (uint32_t)n);
                        char c = noise[sc_rng_below(&rng, sizeof(noise) - 1)];
                        switch (sc_rng_below(&rng, 3)) {
                        case 0: /* replace */
                                buf[at] = c;
                                break;
                        case 1: /* delete */
                                memmove(buf + at, buf + at + 1, n - at - 1);
                                n--;
                                break;
                        default: /* insert */
                                if (n + 1 < sizeof(buf)) {
                                        memmove(buf + at + 1, buf + at, n - at);
                                        buf[at] = c;
                                        n++;
                                }
                        }
                }
                json_error_t jerr;
                json_t *ref =
                    json_loadb(buf, n, JSON_DECODE_INT_AS_REAL | JSON_REJECT_DUPLICATES, &jerr);
                sc_record_t r = {.value = buf, .value_size = n};
                sc_decode_fault_t got = sc_decode_record(&s, &r, x, &label, NULL, 0);
                if (n == 0)
                        continue;
                if (!ref && strstr(jerr.text, "overflow"))
                        continue; /* jansson refuses 1e999; here it reads as infinity */
                if ((got == SC_DECODE_BAD_JSON) != (ref == NULL))
                        fail_msg("\"%.*s\": decoder says %s, jansson %s", (int)n, buf,
                                 sc_decode_fault_name(got), ref ? "valid" : jerr.text);
                valid += ref != NULL;
                invalid += ref == NULL;
                json_decref(ref);
        }
        assert_true(valid > 1000 && invalid > 1000);
}

/* Text numbers in every common spelling read as strtod reads them. */
static void numbers_match_strtod(void **state)
{
        sc_decode_spec_t s = spec_of(SC_DECODE_CSV, 1);
        sc_rng_t rng;
        char line[96];
        float x[1];
        int32_t label;
        char err[128];

        sc_rng_seed(&rng, 77);
        for (int it = 0; it < 20000; it++) {
                double v =
                    (sc_rng_uniform(&rng) - 0.5) * pow(10.0, (double)sc_rng_below(&rng, 40) - 20.0);
                char num[64];
                switch (it % 4) {
                case 0:
                        snprintf(num, sizeof(num), "%.*e", (int)sc_rng_below(&rng, 17), v);
                        break;
                case 1:
                        snprintf(num, sizeof(num), "%.*f", (int)sc_rng_below(&rng, 12), v);
                        break;
                case 2:
                        snprintf(num, sizeof(num), "%.17g", v);
                        break;
                default:
                        snprintf(num, sizeof(num), "%dE%d", (int)sc_rng_below(&rng, 100000),
                                 (int)sc_rng_below(&rng, 60) - 30);
                }
                snprintf(line, sizeof(line), "1,%s", num);
                sc_record_t r = rec_of(line, NULL);
                double want = strtod(num, NULL);
                if (!isfinite((float)want))
                        continue;
                assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)),
                                 SC_DECODE_OK);
                float fw = (float)want;
                if (!(fabsf(x[0] - fw) <= 1e-6f * fabsf(fw) || fabsf(fw) < 1e-37f))
                        fail_msg("%s: read %.9g, strtod %.9g", num, (double)x[0], (double)fw);
        }
}

static void csv_columns_delimiters_and_line_ends(void **state)
{
        sc_decode_spec_t s = spec_of(SC_DECODE_CSV, 3);
        float x[3];
        int32_t label;
        char err[128];
        sc_record_t r = rec_of("2, 0.25 ,-1.5e1,7\r\n", NULL);
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)), SC_DECODE_OK);
        assert_int_equal(label, 2);
        assert_float_equal(x[0], 0.25f, 0);
        assert_float_equal(x[1], -15.0f, 0);
        assert_float_equal(x[2], 7.0f, 0);

        /* Label last, an ignored id column first, ';' delimiter. */
        s.delimiter = ';';
        s.first_feature_column = 1;
        s.label_column = 4;
        s.columns = 5;
        assert_int_equal(sc_decode_spec_check(&s, err, sizeof(err)), SC_OK);
        r = rec_of("id-17;1;2;3;9", NULL);
        /* The id column is not parsed. */
        s.first_feature_column = 1;
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)), SC_DECODE_OK);
        assert_int_equal(label, 9);
        assert_float_equal(x[2], 3.0f, 0);

        s.label_column = 2;
        assert_int_equal(sc_decode_spec_check(&s, err, sizeof(err)), SC_ERR_CONFIG);
        assert_non_null(strstr(err, "decode.label_column"));
        s.label_column = 4;
        s.delimiter = '.';
        assert_int_equal(sc_decode_spec_check(&s, err, sizeof(err)), SC_ERR_CONFIG);
}

/* Records without a label: each format's layout less its label, label -1. */
static void unlabelled_layouts(void **state)
{
        (void)state;
        float x[3];
        int32_t label = 0;
        char err[128];

        /* CSV, label first: the features move down to column 0. */
        sc_decode_spec_t s = spec_of(SC_DECODE_CSV, 3);
        sc_decode_spec_unlabelled(&s);
        assert_int_equal(sc_decode_spec_check(&s, err, sizeof(err)), SC_OK);
        sc_record_t r = rec_of("0.25,-1.5e1,7\n", NULL);
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)), SC_DECODE_OK);
        assert_int_equal(label, -1);
        assert_float_equal(x[0], 0.25f, 0);
        assert_float_equal(x[2], 7.0f, 0);
        r = rec_of("2,0.25,-1.5e1,7", NULL); /* a labelled line is one column too many */
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)), SC_DECODE_BAD_CSV);

        /* CSV, an id column, the features, the label last of 5: 4 columns. */
        s = spec_of(SC_DECODE_CSV, 3);
        s.label_column = 4;
        s.columns = 5;
        sc_decode_spec_unlabelled(&s);
        assert_int_equal(s.first_feature_column, 1);
        assert_int_equal(s.columns, 4);
        r = rec_of("id-3,1,2,3", NULL);
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)), SC_DECODE_OK);
        assert_float_equal(x[0], 1.0f, 0);
        assert_int_equal(label, -1);

        /* JSON: the label path is not read; present or not, no fault. */
        s = spec_of(SC_DECODE_JSON, 3);
        sc_decode_spec_unlabelled(&s);
        r = rec_of("{\"features\":[1,2,3]}", NULL);
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)), SC_DECODE_OK);
        assert_int_equal(label, -1);
        r = rec_of("{\"features\":[1,2,3],\"label\":\"x\"}", NULL);
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)), SC_DECODE_OK);

        /* Raw: a label byte before the tensor is taken out; a key label is
         * not read (no key needed). */
        uint8_t v[3] = {10, 20, 30};
        s = spec_of(SC_DECODE_RAW, 3);
        s.label_source = SC_DECODE_LABEL_OFFSET;
        s.label_offset = 0;
        s.data_offset = 1;
        s.scale = 1;
        sc_decode_spec_unlabelled(&s);
        assert_int_equal(s.data_offset, 0);
        r = (sc_record_t){.value = v, .value_size = sizeof(v)};
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)), SC_DECODE_OK);
        assert_float_equal(x[1], 20.0f, 0);
        assert_int_equal(label, -1);
        s = spec_of(SC_DECODE_RAW, 3);
        s.scale = 1;
        sc_decode_spec_unlabelled(&s);
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)), SC_DECODE_OK);
        assert_int_equal(label, -1);
}

static void spec_checks_name_fields(void **state)
{
        sc_decode_spec_t s = spec_of(SC_DECODE_JSON, 0);
        char err[128];
        assert_int_equal(sc_decode_spec_check(&s, err, sizeof(err)), SC_ERR_CONFIG);
        assert_non_null(strstr(err, "decode.numel"));
        s.numel = 4;
        s.std = 0;
        assert_int_equal(sc_decode_spec_check(&s, err, sizeof(err)), SC_ERR_CONFIG);
        assert_non_null(strstr(err, "decode.std"));
        s.std = 1;
        s.n_classes = 0;
        assert_int_equal(sc_decode_spec_check(&s, err, sizeof(err)), SC_ERR_CONFIG);
        s.n_classes = 10;
        s.label_source = SC_DECODE_LABEL_OFFSET;
        assert_int_equal(sc_decode_spec_check(&s, err, sizeof(err)), SC_ERR_CONFIG);
        s = spec_of(SC_DECODE_RAW, 4);
        s.label_source = SC_DECODE_LABEL_FIELD;
        assert_int_equal(sc_decode_spec_check(&s, err, sizeof(err)), SC_ERR_CONFIG);
        /* An unchecked broken spec is refused per record, not crashed on. */
        float x[4];
        int32_t label;
        sc_record_t r = rec_of("abcd", "1");
        s = spec_of(SC_DECODE_CSV, 4);
        s.first_feature_column = -3;
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)), SC_DECODE_BAD_SPEC);
}

static void stats_report_first_of_each_kind(void **state)
{
        sc_decode_stats_t st = {0};
        assert_int_equal(sc_decode_stats_add(&st, SC_DECODE_OK), 0);
        assert_int_equal(sc_decode_stats_add(&st, SC_DECODE_BAD_JSON), 1);
        assert_int_equal(sc_decode_stats_add(&st, SC_DECODE_BAD_JSON), 0);
        assert_int_equal(sc_decode_stats_add(&st, SC_DECODE_BAD_KEY), 1);
        assert_int_equal(st.rejected, 3);
        assert_int_equal(st.count[SC_DECODE_BAD_JSON], 2);
        assert_int_equal(st.count[SC_DECODE_OK], 1);
        for (int f = 0; f < SC_DECODE_FAULT__END; f++)
                assert_int_equal(sc_decode_fault_parse(sc_decode_fault_name(f)), f);
        assert_int_equal(sc_decode_fault_parse("nope"), SC_DECODE_FAULT__END);
}

/* ---- data-driven malformed records ---- */

#define INVALID_DIR "tests/data/decode/invalid"

static char *slurp(const char *path, size_t *size)
{
        FILE *f = fopen(path, "rb");
        char *buf = NULL;
        size_t n = 0, cap = 0;
        if (!f)
                return NULL;
        for (;;) {
                if (n + 4096 > cap) {
                        cap = cap ? 2 * cap : 8192;
                        char *nb = realloc(buf, cap);
                        assert_non_null(nb);
                        buf = nb;
                }
                size_t got = fread(buf + n, 1, cap - n - 1, f);
                n += got;
                if (got == 0)
                        break;
        }
        fclose(f);
        buf[n] = '\0';
        *size = n;
        return buf;
}

static int enum_of(const char *v, const char *const *names, int n)
{
        for (int i = 0; i < n; i++)
                if (!strcmp(v, names[i]))
                        return i;
        fail_msg("unknown enum value %s", v);
        return -1;
}

/* Applies the test case's config.json (decoder fields by name) to spec. */
static void apply_config(sc_decode_spec_t *s, const char *text, const char *where)
{
        json_error_t jerr;
        json_t *root = json_loads(text, 0, &jerr), *v;
        const char *key;
        static const char *const formats[] = {"json", "csv", "raw"};
        static const char *const sources[] = {"field", "key", "header", "offset"};
        static const char *const encs[] = {"ascii", "byte"};
        static const char *const dtypes[] = {"uint8", "float32"};

        if (!root)
                fail_msg("%s: %s", where, jerr.text);
        if (json_object_get(root, "format")) {
                sc_decode_format_t f =
                    enum_of(json_string_value(json_object_get(root, "format")), formats, 3);
                size_t numel = s->numel;
                sc_decode_spec_defaults(s, f);
                s->numel = numel;
        }
        json_object_foreach(root, key, v)
        {
                if (!strcmp(key, "format"))
                        continue;
                else if (!strcmp(key, "numel"))
                        s->numel = (size_t)json_integer_value(v);
                else if (!strcmp(key, "n_classes"))
                        s->n_classes = (int)json_integer_value(v);
                else if (!strcmp(key, "scale"))
                        s->scale = (float)json_number_value(v);
                else if (!strcmp(key, "mean"))
                        s->mean = (float)json_number_value(v);
                else if (!strcmp(key, "std"))
                        s->std = (float)json_number_value(v);
                else if (!strcmp(key, "label_source"))
                        s->label_source = enum_of(json_string_value(v), sources, 4);
                else if (!strcmp(key, "label_encoding"))
                        s->label_encoding = enum_of(json_string_value(v), encs, 2);
                else if (!strcmp(key, "label_header"))
                        snprintf(s->label_header, sizeof(s->label_header), "%s",
                                 json_string_value(v));
                else if (!strcmp(key, "features_path"))
                        snprintf(s->features_path, sizeof(s->features_path), "%s",
                                 json_string_value(v));
                else if (!strcmp(key, "label_path"))
                        snprintf(s->label_path, sizeof(s->label_path), "%s", json_string_value(v));
                else if (!strcmp(key, "delimiter"))
                        s->delimiter = json_string_value(v)[0];
                else if (!strcmp(key, "label_column"))
                        s->label_column = (int)json_integer_value(v);
                else if (!strcmp(key, "first_feature_column"))
                        s->first_feature_column = (int)json_integer_value(v);
                else if (!strcmp(key, "columns"))
                        s->columns = (int)json_integer_value(v);
                else if (!strcmp(key, "dtype"))
                        s->dtype = enum_of(json_string_value(v), dtypes, 2);
                else if (!strcmp(key, "data_offset"))
                        s->data_offset = (size_t)json_integer_value(v);
                else if (!strcmp(key, "label_offset"))
                        s->label_offset = (size_t)json_integer_value(v);
                else
                        fail_msg("%s: unknown key %s", where, key);
        }
        json_decref(root);
}

static void invalid_cases(void **state)
{
        DIR *d = opendir(INVALID_DIR);
        struct dirent *e;
        int cases = 0;
        char path[512], err[256];

        assert_non_null(d);
        while ((e = readdir(d)) != NULL) {
                if (e->d_name[0] == '.')
                        continue;
                size_t n_value, n_key = 0, n_cfg, n_err, n_hdr = 0;
                sc_decode_spec_t s = spec_of(SC_DECODE_JSON, 4);
                snprintf(path, sizeof(path), INVALID_DIR "/%s/config.json", e->d_name);
                char *cfg = slurp(path, &n_cfg);
                if (cfg)
                        apply_config(&s, cfg, path);
                free(cfg);
                if (sc_decode_spec_check(&s, err, sizeof(err)) != SC_OK)
                        fail_msg("%s: spec: %s", e->d_name, err);
                snprintf(path, sizeof(path), INVALID_DIR "/%s/record", e->d_name);
                char *value = slurp(path, &n_value);
                if (!value)
                        fail_msg("%s: no record file", e->d_name);
                snprintf(path, sizeof(path), INVALID_DIR "/%s/key", e->d_name);
                char *key = slurp(path, &n_key);
                snprintf(path, sizeof(path), INVALID_DIR "/%s/header.%s", e->d_name,
                         s.label_header);
                char *hval = slurp(path, &n_hdr);
                snprintf(path, sizeof(path), INVALID_DIR "/%s/error", e->d_name);
                char *want = slurp(path, &n_err);
                if (!want)
                        fail_msg("%s: no error file", e->d_name);
                char *nl = strchr(want, '\n');
                char *sub = NULL;
                if (nl) {
                        *nl = '\0';
                        sub = nl + 1;
                        char *nl2 = strchr(sub, '\n');
                        if (nl2)
                                *nl2 = '\0';
                        if (!*sub)
                                sub = NULL;
                }
                sc_decode_fault_t wf = sc_decode_fault_parse(want);
                if (wf == SC_DECODE_FAULT__END)
                        fail_msg("%s: unknown fault %s", e->d_name, want);

                sc_decode_header_t h = {s.label_header, hval, n_hdr};
                sc_record_t r = {.key = key,
                                 .key_size = n_key,
                                 .value = n_value ? value : NULL,
                                 .value_size = n_value,
                                 .headers = hval ? &h : NULL,
                                 .n_headers = hval ? 1 : 0};
                float *x = malloc(s.numel * sizeof(float));
                int32_t label;
                err[0] = '\0';
                sc_decode_fault_t got = sc_decode_record(&s, &r, x, &label, err, sizeof(err));
                if (got != wf)
                        fail_msg("%s: expected %s, got %s (%s)", e->d_name, want,
                                 sc_decode_fault_name(got), err);
                if (!err[0])
                        fail_msg("%s: no message", e->d_name);
                if (sub && !strstr(err, sub))
                        fail_msg("%s: message \"%s\" lacks \"%s\"", e->d_name, err, sub);
                cases++;
                free(x);
                free(value);
                free(key);
                free(hval);
                free(want);
        }
        closedir(d);
        assert_true(cases >= 40);
}

/* ---- random bytes ---- */

static void random_bytes_never_crash(void **state)
{
        sc_rng_t rng;
        static const char *const seeds[] = {
            "{\"features\": [1, 2, 3, 4], \"label\": 3}",
            "3,1,2,3,4\n",
            "[[1,2],[3,4]]",
            "{\"features\": [[1, 2], [3, 4.5e-3]], \"label\": 1.0}",
        };
        unsigned char buf[96];
        float x[4];
        int32_t label;
        char err[160];
        int ok = 0, faults[SC_DECODE_FAULT__END] = {0};

        sc_rng_seed(&rng, 1234);
        for (int it = 0; it < 60000; it++) {
                sc_decode_format_t f = (sc_decode_format_t)(it % 3);
                sc_decode_spec_t s = spec_of(f, 4);
                if (f == SC_DECODE_RAW) {
                        int v = it / 3 % 4;
                        s.dtype = v & 1 ? SC_DECODE_F32 : SC_DECODE_U8;
                        if (v & 2) {
                                s.label_source = SC_DECODE_LABEL_OFFSET;
                                s.label_offset = 0;
                                s.data_offset = 1;
                        }
                }
                size_t n = sc_rng_below(&rng, sizeof(buf));
                if (it % 2 && f != SC_DECODE_RAW) {
                        /* Mutate a valid-looking record. */
                        const char *src = seeds[sc_rng_below(&rng, 4)];
                        n = strlen(src);
                        memcpy(buf, src, n);
                        for (int m = (int)sc_rng_below(&rng, 4); m >= 0 && n > 0; m--)
                                buf[sc_rng_below(&rng, (uint32_t)n)] =
                                    (unsigned char)sc_rng_u64(&rng);
                        n = sc_rng_below(&rng, (uint32_t)n + 1);
                } else {
                        for (size_t i = 0; i < n; i++)
                                buf[i] = (unsigned char)sc_rng_u64(&rng);
                        if (f == SC_DECODE_RAW && it % 5 == 0)
                                n = s.dtype == SC_DECODE_F32 ? 16 + (s.data_offset)
                                                             : 4 + s.data_offset;
                }
                unsigned char key[3];
                size_t kn = sc_rng_below(&rng, 4);
                for (size_t i = 0; i < kn; i++)
                        key[i] = (unsigned char)('0' + sc_rng_below(&rng, 12));
                sc_record_t r = {
                    .key = kn ? key : NULL, .key_size = kn, .value = buf, .value_size = n};
                err[0] = '\0';
                sc_decode_fault_t got = sc_decode_record(&s, &r, x, &label, err, sizeof(err));
                assert_true(got >= SC_DECODE_OK && got < SC_DECODE_FAULT__END);
                assert_int_not_equal(got, SC_DECODE_BAD_SPEC);
                if (got == SC_DECODE_OK) {
                        ok++;
                        assert_true(label >= 0 && label < 10);
                        for (int i = 0; i < 4; i++)
                                assert_true(isfinite(x[i]));
                } else {
                        assert_true(err[0] != '\0');
                }
                faults[got]++;
        }
        /* The mix exercised both success and several fault kinds. */
        assert_true(ok > 100);
        assert_true(faults[SC_DECODE_BAD_JSON] > 100);
        assert_true(faults[SC_DECODE_WRONG_LENGTH] > 100);
        assert_true(faults[SC_DECODE_BAD_KEY] > 100);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(raw_u8_key_ascii_and_normalization),
            cmocka_unit_test(raw_labels_from_byte_key_header_and_offset),
            cmocka_unit_test(too_many_headers_are_refused),
            cmocka_unit_test(raw_float32_little_endian),
            cmocka_unit_test(json_paths_nested_arrays_and_labels),
            cmocka_unit_test(json_syntax_details),
            cmocka_unit_test(json_duplicate_keys),
            cmocka_unit_test(json_validity_matches_jansson),
            cmocka_unit_test(numbers_match_strtod),
            cmocka_unit_test(csv_columns_delimiters_and_line_ends),
            cmocka_unit_test(unlabelled_layouts),
            cmocka_unit_test(spec_checks_name_fields),
            cmocka_unit_test(stats_report_first_of_each_kind),
            cmocka_unit_test(invalid_cases),
            cmocka_unit_test(random_bytes_never_crash),
        };
        return cmocka_run_group_tests_name("decode", tests, NULL, NULL);
}
