/* test_fields.c — named-field features: vocabularies, field lists, the
 * json and csv decoders with fields and class names, spec checks, and
 * streams.fields / streams.labels in the configuration (parse, dump,
 * overrides, per-topic inheritance, references). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "sc_conf.h"
#include "sc_decode.h"
#include "sc_kafka_source.h"

static sc_record_t rec_of(const char *value)
{
        sc_record_t r = {0};
        r.value = value;
        r.value_size = strlen(value);
        return r;
}

static void vocab_finds_by_content(void **state)
{
        sc_vocab_t *v = sc_vocab_new();
        char name[16];
        assert_non_null(v);
        for (int i = 0; i < 1000; i++) {
                snprintf(name, sizeof(name), "c%d", i);
                assert_int_equal(sc_vocab_add(v, name, strlen(name)), i);
        }
        assert_int_equal(sc_vocab_add(v, "c7", 2), -1); /* listed twice */
        assert_int_equal(sc_vocab_add(v, "", 0), -1);
        assert_int_equal(sc_vocab_add(v, "a\0b", 3), -1);
        for (int i = 0; i < 1000; i++) {
                snprintf(name, sizeof(name), "c%d", i);
                assert_int_equal(sc_vocab_find(v, name, strlen(name)), i);
                assert_string_equal(sc_vocab_name(v, (size_t)i), name);
        }
        assert_int_equal(sc_vocab_find(v, "c1000", 5), -1);
        assert_int_equal(sc_vocab_find(v, "c1", 1), -1);
        assert_int_equal(sc_vocab_size(v), 1000);
        assert_null(sc_vocab_name(v, 1000));
        sc_vocab_unref(v);
}

/* temp (numeric, mean 70, std 2), vib (numeric, indicator, mean 1), kind
 * (categorical pump/fan), device (hashed, 4 buckets), on (boolean): 11
 * features. */
static sc_fields_t *machine_fields(int csv)
{
        sc_fields_t *fs = sc_fields_new();
        sc_field_t f;
        char err[128];
        assert_non_null(fs);

        sc_field_defaults(&f);
        snprintf(f.path, sizeof(f.path), "temp");
        f.column = csv ? 3 : -1;
        f.mean = 70;
        f.std = 2;
        assert_int_equal(sc_fields_add(fs, &f, err, sizeof(err)), 0);
        assert_string_equal(fs->field[0].path, "$.temp");

        sc_field_defaults(&f);
        snprintf(f.path, sizeof(f.path), "$.sensors.vib");
        f.column = csv ? 4 : -1;
        f.indicator = 1;
        f.mean = 1;
        assert_int_equal(sc_fields_add(fs, &f, err, sizeof(err)), 0);

        sc_field_defaults(&f);
        snprintf(f.path, sizeof(f.path), "kind");
        f.column = csv ? 2 : -1;
        f.kind = SC_FIELD_CATEGORICAL;
        f.missing = SC_MISSING_ZERO;
        f.vocab = sc_vocab_new();
        assert_int_equal(sc_vocab_add(f.vocab, "pump", 4), 0);
        assert_int_equal(sc_vocab_add(f.vocab, "fan", 3), 1);
        assert_int_equal(sc_fields_add(fs, &f, err, sizeof(err)), 0);
        assert_null(f.vocab); /* moved into the list */

        sc_field_defaults(&f);
        snprintf(f.path, sizeof(f.path), "device");
        f.column = csv ? 1 : -1;
        f.kind = SC_FIELD_HASHED;
        f.missing = SC_MISSING_ZERO;
        f.buckets = 4;
        assert_int_equal(sc_fields_add(fs, &f, err, sizeof(err)), 0);

        sc_field_defaults(&f);
        snprintf(f.path, sizeof(f.path), "on");
        f.column = csv ? 5 : -1;
        f.kind = SC_FIELD_BOOLEAN;
        f.missing = SC_MISSING_ERROR;
        assert_int_equal(sc_fields_add(fs, &f, err, sizeof(err)), 0);
        assert_int_equal(fs->width, 11);
        assert_int_equal(fs->field[2].offset, 3);
        assert_int_equal(fs->field[2].width, 3);
        if (csv)
                for (size_t i = 0; i < fs->n; i++)
                        fs->field[i].path[0] = '\0';
        return fs;
}

static sc_vocab_t *status_names(void)
{
        sc_vocab_t *v = sc_vocab_new();
        assert_int_equal(sc_vocab_add(v, "ok", 2), 0);
        assert_int_equal(sc_vocab_add(v, "overheat", 8), 1);
        assert_int_equal(sc_vocab_add(v, "leak", 4), 2);
        return v;
}

static sc_decode_spec_t spec_with(sc_decode_format_t format, const sc_fields_t *fs,
                                  const sc_vocab_t *labels)
{
        sc_decode_spec_t s;
        char err[256];
        sc_decode_spec_defaults(&s, format);
        s.numel = fs->width;
        s.n_classes = 3;
        s.fields = fs;
        s.labels = labels;
        s.label_path[0] = '\0';
        snprintf(s.label_path, sizeof(s.label_path), "$.status");
        s.label_column = 0;
        s.first_feature_column = 1;
        assert_int_equal(sc_decode_spec_check(&s, err, sizeof(err)), SC_OK);
        return s;
}

static void expect_machine(const float *x, float temp, float vib, float vib_missing, int kind,
                           int on, const char *device)
{
        assert_float_equal(x[0], temp, 1e-5);
        assert_float_equal(x[1], vib, 1e-5);
        assert_float_equal(x[2], vib_missing, 0);
        for (int k = 0; k < 3; k++)
                assert_float_equal(x[3 + k], k == kind ? 1.0f : 0.0f, 0);
        int hot = device ? (int)(sc_fnv1a(device, strlen(device)) % 4) : -1;
        for (int k = 0; k < 4; k++)
                assert_float_equal(x[6 + k], k == hot ? 1.0f : 0.0f, 0);
        assert_float_equal(x[10], (float)on, 0);
}

static void json_named_fields(void **state)
{
        sc_fields_t *fs = machine_fields(0);
        sc_vocab_t *names = status_names();
        sc_decode_spec_t s = spec_with(SC_DECODE_JSON, fs, names);
        float x[11];
        int32_t label = -1;
        char err[256];

        sc_record_t r = rec_of("{\"device\":\"p-17\",\"kind\":\"pump\",\"temp\":71.2,"
                               "\"sensors\":{\"vib\":null,\"rpm\":3},\"status\":\"overheat\","
                               "\"on\":true,\"extra\":[1,{\"a\":2}]}");
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)), SC_DECODE_OK);
        assert_int_equal(label, 1);
        expect_machine(x, 0.6f, 0.0f, 1.0f, 0, 1, "p-17");

        /* absent vib, an unknown kind (out of vocabulary), a label by index,
         * a numeric string, escapes in a hashed string */
        r = rec_of("{\"on\":false,\"kind\":\"valve\",\"temp\":\"66\",\"status\":2,"
                   "\"device\":\"p\\u002d17\",\"sensors\":{}}");
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)), SC_DECODE_OK);
        assert_int_equal(label, 2);
        expect_machine(x, -2.0f, 0.0f, 1.0f, 2, 0, "p-17");

        /* vib present, kind null (no slot), device a number (its text), on 1 */
        r = rec_of("{\"on\":1,\"kind\":null,\"temp\":70,\"status\":\"ok\",\"device\":17,"
                   "\"sensors\":{\"vib\":3.5}}");
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)), SC_DECODE_OK);
        assert_int_equal(label, 0);
        float cat_none[11];
        memcpy(cat_none, x, sizeof(x));
        assert_float_equal(x[1], 2.5f, 1e-6);
        assert_float_equal(x[2], 0.0f, 0);
        for (int k = 3; k < 6; k++)
                assert_float_equal(x[k], 0.0f, 0);
        assert_float_equal(x[6 + (int)(sc_fnv1a("17", 2) % 4)], 1.0f, 0);
        sc_fields_unref(fs);
        sc_vocab_unref(names);
}

static void json_field_faults(void **state)
{
        sc_fields_t *fs = machine_fields(0);
        sc_vocab_t *names = status_names();
        sc_decode_spec_t s = spec_with(SC_DECODE_JSON, fs, names);
        float x[11];
        int32_t label;
        char err[256];
        struct {
                const char *value;
                sc_decode_fault_t fault;
                const char *msg;
        } cases[] = {
            {"{\"temp\":1,\"status\":\"ok\"}", SC_DECODE_MISSING_FIELD, "$.on: missing"},
            {"{\"temp\":1,\"on\":null,\"status\":\"ok\"}", SC_DECODE_MISSING_FIELD, "$.on: null"},
            {"{\"temp\":\"hot\",\"on\":true,\"status\":\"ok\"}", SC_DECODE_NOT_NUMERIC,
             "$.temp: expected a number, got a string that is not one"},
            {"{\"temp\":true,\"on\":true,\"status\":\"ok\"}", SC_DECODE_WRONG_TYPE,
             "$.temp: expected a number, got a boolean"},
            {"{\"temp\":1,\"on\":\"yes\",\"status\":\"ok\"}", SC_DECODE_NOT_NUMERIC,
             "$.on: expected true, false or a number"},
            {"{\"temp\":1,\"on\":true,\"kind\":[1],\"status\":\"ok\"}", SC_DECODE_WRONG_TYPE,
             "$.kind: expected a string, number or boolean"},
            {"{\"temp\":1e400,\"on\":true,\"status\":\"ok\"}", SC_DECODE_NOT_FINITE,
             "$.temp: not finite"},
            {"{\"temp\":1,\"on\":true,\"status\":\"boiling\"}", SC_DECODE_LABEL_RANGE,
             "$.status: label \"boiling\" is not a class name"},
            {"{\"temp\":1,\"on\":true,\"status\":7}", SC_DECODE_LABEL_RANGE, "outside [0, 3)"},
            {"{\"temp\":1,\"on\":true}", SC_DECODE_MISSING_FIELD, "$.status: missing"},
            {"{\"temp\":1,\"on\":true,\"status\":\"ok\",\"temp\":2}", SC_DECODE_BAD_JSON,
             "duplicate member name"},
            {"{\"temp\":1,\"on\":true,\"status\":\"ok\"", SC_DECODE_BAD_JSON, "json:"},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                sc_record_t r = rec_of(cases[i].value);
                err[0] = '\0';
                sc_decode_fault_t f = sc_decode_record(&s, &r, x, &label, err, sizeof(err));
                if (f != cases[i].fault || !strstr(err, cases[i].msg))
                        fail_msg("case %zu %s: got %s \"%s\", expected %s \"%s\"", i,
                                 cases[i].value, sc_decode_fault_name(f), err,
                                 sc_decode_fault_name(cases[i].fault), cases[i].msg);
        }
        assert_string_equal(sc_decode_fault_name(SC_DECODE_WRONG_TYPE), "wrong_type");
        sc_fields_unref(fs);
        sc_vocab_unref(names);
}

static void csv_named_columns(void **state)
{
        sc_fields_t *fs = machine_fields(1);
        sc_vocab_t *names = status_names();
        sc_decode_spec_t s = spec_with(SC_DECODE_CSV, fs, names);
        float x[11];
        int32_t label = -1;
        char err[256];

        /* status,device,kind,temp,vib,on[,extra columns ignored] */
        sc_record_t r = rec_of("overheat,p-17,pump,71.2,,true,whatever\r\n");
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)), SC_DECODE_OK);
        assert_int_equal(label, 1);
        expect_machine(x, 0.6f, 0.0f, 1.0f, 0, 1, "p-17");

        r = rec_of(" 2 ,p-17, valve ,66, 3.5 ,0");
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)), SC_DECODE_OK);
        assert_int_equal(label, 2);
        assert_float_equal(x[0], -2.0f, 1e-6);
        assert_float_equal(x[1], 2.5f, 1e-6);
        assert_float_equal(x[5], 1.0f, 0); /* out of vocabulary */

        r = rec_of("ok,p-17,pump,71.2,");
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)), SC_DECODE_BAD_CSV);
        assert_non_null(strstr(err, "expected at least 6 columns, got 5"));
        r = rec_of("ok,p-17,pump,x,,true");
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)),
                         SC_DECODE_NOT_NUMERIC);
        assert_non_null(strstr(err, "csv column 3"));
        r = rec_of("ok,p-17,pump,1,,");
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)),
                         SC_DECODE_MISSING_FIELD);
        assert_non_null(strstr(err, "csv column 5: null"));

        /* without the label column (scoring): the field columns after it move down */
        sc_decode_spec_unlabelled(&s);
        assert_int_equal(sc_decode_spec_check(&s, err, sizeof(err)), SC_OK);
        r = rec_of("p-17,pump,71.2,,true");
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)), SC_DECODE_OK);
        assert_int_equal(label, -1);
        expect_machine(x, 0.6f, 0.0f, 1.0f, 0, 1, "p-17");

        /* exact columns when given */
        s = spec_with(SC_DECODE_CSV, fs, names);
        s.columns = 6;
        assert_int_equal(sc_decode_spec_check(&s, err, sizeof(err)), SC_OK);
        r = rec_of("ok,p-17,pump,1,,true,extra");
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)), SC_DECODE_BAD_CSV);
        sc_fields_unref(fs);
        sc_vocab_unref(names);
}

static void spec_checks_fields(void **state)
{
        sc_fields_t *fs = machine_fields(0);
        sc_vocab_t *names = status_names();
        sc_decode_spec_t s = spec_with(SC_DECODE_JSON, fs, names);
        char err[256];

        s.numel = 10;
        assert_int_equal(sc_decode_spec_check(&s, err, sizeof(err)), SC_ERR_CONFIG);
        assert_non_null(strstr(err, "they encode 11 features, the model's input takes 10"));
        s.numel = 11;
        s.n_classes = 4;
        assert_int_equal(sc_decode_spec_check(&s, err, sizeof(err)), SC_ERR_CONFIG);
        assert_non_null(strstr(err, "decode.labels: 3 class names, the model has 4 classes"));
        s.n_classes = 3;
        s.scale = 2;
        assert_int_equal(sc_decode_spec_check(&s, err, sizeof(err)), SC_ERR_CONFIG);
        s.scale = 1;
        snprintf(s.label_path, sizeof(s.label_path), "$.sensors");
        assert_int_equal(sc_decode_spec_check(&s, err, sizeof(err)), SC_ERR_CONFIG);
        assert_non_null(strstr(err, "overlaps the label path"));
        s.format = SC_DECODE_CSV; /* no columns */
        assert_int_equal(sc_decode_spec_check(&s, err, sizeof(err)), SC_ERR_CONFIG);
        assert_non_null(strstr(err, "decode.fields[0].column"));
        s.format = SC_DECODE_RAW;
        assert_int_equal(sc_decode_spec_check(&s, err, sizeof(err)), SC_ERR_CONFIG);

        /* overlapping field paths; invalid fields */
        sc_fields_t *two = sc_fields_new();
        sc_field_t f;
        sc_field_defaults(&f);
        snprintf(f.path, sizeof(f.path), "$.a");
        assert_int_equal(sc_fields_add(two, &f, err, sizeof(err)), 0);
        snprintf(f.path, sizeof(f.path), "$.a.b");
        assert_int_equal(sc_fields_add(two, &f, err, sizeof(err)), 0);
        s = spec_with(SC_DECODE_JSON, fs, NULL);
        s.fields = two;
        s.numel = 2;
        assert_int_equal(sc_decode_spec_check(&s, err, sizeof(err)), SC_ERR_CONFIG);
        assert_non_null(strstr(err, "fields[1].path: $.a.b overlaps fields[0]'s $.a"));
        snprintf(f.path, sizeof(f.path), "$.c[");
        assert_int_equal(sc_fields_add(two, &f, err, sizeof(err)), -1);
        assert_non_null(strstr(err, "path:"));
        sc_field_defaults(&f);
        snprintf(f.path, sizeof(f.path), "c");
        f.std = 0;
        assert_int_equal(sc_fields_add(two, &f, err, sizeof(err)), -1);
        sc_field_defaults(&f);
        snprintf(f.path, sizeof(f.path), "c");
        f.kind = SC_FIELD_CATEGORICAL;
        assert_int_equal(sc_fields_add(two, &f, err, sizeof(err)), -1);
        assert_non_null(strstr(err, "vocab"));
        f.kind = SC_FIELD_HASHED;
        f.missing = SC_MISSING_ZERO;
        assert_int_equal(sc_fields_add(two, &f, err, sizeof(err)), -1);
        assert_non_null(strstr(err, "buckets"));
        f.buckets = 8;
        f.missing = SC_MISSING_MEAN;
        assert_int_equal(sc_fields_add(two, &f, err, sizeof(err)), -1);
        assert_non_null(strstr(err, "missing"));
        sc_fields_unref(two);
        sc_fields_unref(fs);
        sc_vocab_unref(names);
}

static const char *machine_conf =
    "{\"model\":{\"input\":[7],\"layers\":[{\"type\":\"dense\",\"units\":3}]},"
    "\"streams\":{\"labels\":[\"ok\",\"overheat\",\"leak\"],\"label_path\":\"$.status\","
    "\"fields\":[{\"path\":\"temp\",\"mean\":70,\"std\":2,\"indicator\":true},"
    "{\"path\":\"kind\",\"type\":\"categorical\",\"vocab\":[\"pump\",\"fan\"]},"
    "{\"path\":\"$.on\",\"type\":\"boolean\",\"missing\":\"constant\",\"fill\":0.5},"
    "{\"path\":\"device\",\"type\":\"hashed\",\"buckets\":1}]},"
    "\"source\":{\"topics\":[{\"topic\":\"a\"},{\"topic\":\"b\",\"fields\":[],\"labels\":[]}]}}";

static void conf_fields_and_labels(void **state)
{
        sc_conf_t conf, copy;
        sc_decode_spec_t ds;
        char err[512];
        float x[7];
        int32_t label;

        assert_int_equal(sc_conf_parse(&conf, machine_conf, "t", err, sizeof(err)), SC_OK);
        assert_non_null(conf.streams.decode.fields);
        assert_int_equal(conf.streams.decode.fields->width, 7);
        /* topic a inherits; topic b has none */
        assert_ptr_equal(conf.source.topics[0].decode.fields, conf.streams.decode.fields);
        assert_null(conf.source.topics[1].decode.fields);
        assert_null(conf.source.topics[1].decode.labels);
        sc_ks_decode_spec(&conf, "a", 7, 3, &ds);
        assert_int_equal(sc_decode_spec_check(&ds, err, sizeof(err)), SC_OK);
        sc_record_t r = rec_of("{\"temp\":72,\"kind\":\"fan\",\"status\":\"leak\"}");
        assert_int_equal(sc_decode_record(&ds, &r, x, &label, err, sizeof(err)), SC_DECODE_OK);
        assert_int_equal(label, 2);
        float want[7] = {1, 0, 0, 1, 0, 0.5f, 0};
        for (int i = 0; i < 7; i++)
                assert_float_equal(x[i], want[i], 1e-6);

        /* the dump parses back to the same values */
        char *dump = sc_conf_dump(&conf);
        assert_non_null(dump);
        sc_conf_t back;
        assert_int_equal(sc_conf_parse(&back, dump, "dump", err, sizeof(err)), SC_OK);
        char *dump2 = sc_conf_dump(&back);
        assert_string_equal(dump, dump2);
        free(dump);
        free(dump2);
        sc_conf_free(&back);

        /* a struct copy with its own references; overrides replace values */
        copy = conf;
        sc_conf_ref_values(&copy);
        assert_int_equal(sc_conf_set(&copy, "streams.labels=[\"a\",\"b\",\"c\"]", err, sizeof(err)),
                         SC_OK);
        assert_string_equal(sc_vocab_name(copy.streams.decode.labels, 0), "a");
        assert_string_equal(sc_vocab_name(copy.source.topics[0].decode.labels, 0), "a");
        assert_string_equal(sc_vocab_name(conf.streams.decode.labels, 0), "ok");
        assert_int_equal(sc_conf_set(&copy, "source.topics=[{\"topic\":\"c\"}]", err, sizeof(err)),
                         SC_OK);
        assert_int_equal(copy.source.n_topics, 1);
        assert_ptr_equal(copy.source.topics[0].decode.fields, copy.streams.decode.fields);
        assert_int_equal(sc_conf_set(&copy, "streams.fields=[]", err, sizeof(err)), SC_OK);
        assert_null(copy.streams.decode.fields);
        sc_conf_free(&copy);
        assert_int_equal(conf.streams.decode.fields->width, 7); /* still held by conf */
        sc_conf_free(&conf);
}

static void conf_field_errors(void **state)
{
        struct {
                const char *fields;
                const char *msg;
        } cases[] = {
            {"[{\"path\":\"a\",\"colour\":1}]", "$.streams.fields[0].colour: unknown key"},
            {"[{\"path\":\"a\",\"type\":\"text\"}]", "$.streams.fields[0].type: expected"},
            {"[{\"path\":\"a\",\"fill\":1}]", "$.streams.fields[0].fill: fill is the value of"},
            {"[{\"path\":\"a\",\"type\":\"categorical\",\"vocab\":[\"x\",\"x\"]}]",
             "$.streams.fields[0].vocab[1]: \"x\" is listed twice"},
            {"[{\"path\":\"a\",\"type\":\"categorical\",\"vocab\":[[1]]}]",
             "$.streams.fields[0].vocab[0]: expected a string, an integer or a boolean"},
            {"[{\"path\":\"a\",\"type\":\"hashed\"}]",
             "$.streams.fields[0].buckets: a hashed field needs"},
            {"[{\"path\":\"a\",\"vocab\":[\"x\"]}]", "only a categorical field takes a vocab"},
            {"[{\"path\":\"a\",\"std\":0}]", "$.streams.fields[0]: std: expected"},
            {"[{\"type\":\"numeric\"}]", "$.streams.fields[0]: path/column"},
            {"[{\"path\":\"a[\"}]", "$.streams.fields[0]: path: expected"},
            {"{\"path\":\"a\"}", "$.streams.fields: expected a list"},
            {"[{\"path\":\"a\",\"type\":\"categorical\",\"vocab\":[\"x\"],\"missing\":\"mean\"}]",
             "missing: a categorical field takes"},
        };
        char text[1024], err[512];
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                sc_conf_t conf;
                snprintf(text, sizeof(text), "{\"streams\":{\"fields\":%s}}", cases[i].fields);
                err[0] = '\0';
                sc_err_t e = sc_conf_parse(&conf, text, "t", err, sizeof(err));
                if (e != SC_ERR_CONFIG || !strstr(err, cases[i].msg))
                        fail_msg("case %zu %s: got %d \"%s\", expected \"%s\"", i, cases[i].fields,
                                 (int)e, err, cases[i].msg);
                sc_conf_free(&conf);
        }
        sc_conf_t conf;
        assert_int_equal(
            sc_conf_parse(&conf, "{\"streams\":{\"labels\":[\"a\",1]}}", "t", err, sizeof(err)),
            SC_ERR_CONFIG);
        assert_non_null(strstr(err, "$.streams.labels[1]: expected a string"));
        sc_conf_free(&conf);
}

/* Findings of a review: an unchecked spec whose fields do not fit numel,
 * an unlabelled csv spec with fixed columns, the columns messages name,
 * key labels with class names, a number outside float's range. */
static void review_cases(void **state)
{
        sc_fields_t *fs = machine_fields(1);
        sc_vocab_t *names = status_names();
        sc_decode_spec_t s = spec_with(SC_DECODE_CSV, fs, names);
        float x[16];
        int32_t label = -1;
        char err[256];
        sc_record_t r;

        s.numel = 4; /* unchecked: the fields take 11 */
        r = rec_of("ok,p-17,pump,71.2,,true");
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)), SC_DECODE_BAD_SPEC);

        s = spec_with(SC_DECODE_CSV, fs, names);
        s.columns = 6;
        sc_decode_spec_unlabelled(&s);
        assert_int_equal(s.columns, 5);
        assert_int_equal(sc_decode_spec_check(&s, err, sizeof(err)), SC_OK);
        r = rec_of("p-17,pump,71.2,,true");
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)), SC_DECODE_OK);
        r = rec_of("p-17,pump,hot,,true");
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)),
                         SC_DECODE_NOT_NUMERIC);
        assert_non_null(strstr(err, "csv column 2:")); /* the column in these records */

        s = spec_with(SC_DECODE_CSV, fs, names);
        s.label_source = SC_DECODE_LABEL_KEY;
        s.label_column = 0;
        assert_int_equal(sc_decode_spec_check(&s, err, sizeof(err)), SC_OK);
        const char *keys[] = {"leak", "2", " 1", "1e0", "0x1", "+1", "7"};
        const sc_decode_fault_t want[] = {
            SC_DECODE_OK,          SC_DECODE_OK, SC_DECODE_LABEL_RANGE, SC_DECODE_LABEL_RANGE,
            SC_DECODE_LABEL_RANGE, SC_DECODE_OK, SC_DECODE_LABEL_RANGE};
        const int32_t want_label[] = {2, 2, -1, -1, -1, 1, -1};
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
                r = rec_of("x,p-17,pump,71.2,,true");
                r.key = keys[i];
                r.key_size = strlen(keys[i]);
                label = -1;
                sc_decode_fault_t f = sc_decode_record(&s, &r, x, &label, err, sizeof(err));
                if (f != want[i] || (f == SC_DECODE_OK && label != want_label[i]))
                        fail_msg("key \"%s\": %s label %d (%s)", keys[i], sc_decode_fault_name(f),
                                 (int)label, err);
        }

        sc_fields_t *js = machine_fields(0);
        s = spec_with(SC_DECODE_JSON, js, names);
        r = rec_of("{\"temp\":1e39,\"on\":true,\"status\":\"ok\"}");
        assert_int_equal(sc_decode_record(&s, &r, x, &label, err, sizeof(err)),
                         SC_DECODE_NOT_FINITE);
        assert_non_null(strstr(err, "$.temp: outside the range of a float"));
        sc_fields_unref(js);
        sc_fields_unref(fs);
        sc_vocab_unref(names);

        /* a whole topic given again by an override lets go of its inherited values */
        sc_conf_t conf;
        assert_int_equal(sc_conf_parse(&conf, machine_conf, "t", err, sizeof(err)), SC_OK);
        assert_int_equal(sc_conf_set(&conf, "source.topics[0]={\"topic\":\"z\"}", err, sizeof(err)),
                         SC_OK);
        assert_ptr_equal(conf.source.topics[0].decode.fields, conf.streams.decode.fields);
        assert_int_equal(
            sc_conf_set(&conf, "source.topics[1]={\"topic\":\"y\",\"bad\":1}", err, sizeof(err)),
            SC_ERR_CONFIG);
        sc_conf_free(&conf);
}

/* csv columns by name: streams.header names them, a field's "column" may be
 * a name; the dump keeps the name; a name outside the header is refused. */
static void csv_columns_by_name(void **state)
{
        static const char *conf_text =
            "{\"model\":{\"input\":[4],\"layers\":[{\"type\":\"dense\",\"units\":3}]},"
            "\"streams\":{\"format\":\"csv\",\"label_column\":0,"
            "\"header\":[\"status\",\"device\",\"kind\",\"temp\"],"
            "\"labels\":[\"ok\",\"overheat\",\"leak\"],"
            "\"fields\":[{\"column\":\"temp\",\"mean\":70,\"std\":2},"
            "{\"column\":\"kind\",\"type\":\"categorical\",\"vocab\":[\"pump\",\"fan\"]}]}}";
        sc_conf_t conf;
        sc_decode_spec_t ds;
        char err[512];
        float x[4];
        int32_t label;
        assert_int_equal(sc_conf_parse(&conf, conf_text, "t", err, sizeof(err)), SC_OK);
        sc_ks_decode_spec(&conf, "any", 4, 3, &ds);
        assert_int_equal(sc_decode_spec_check(&ds, err, sizeof(err)), SC_OK);
        sc_record_t r = rec_of("overheat,p-17,fan,72");
        assert_int_equal(sc_decode_record(&ds, &r, x, &label, err, sizeof(err)), SC_DECODE_OK);
        assert_int_equal(label, 1);
        float want[4] = {1, 0, 1, 0};
        for (int i = 0; i < 4; i++)
                assert_float_equal(x[i], want[i], 1e-6);
        r = rec_of("ok,p-17,fan,hot");
        assert_int_equal(sc_decode_record(&ds, &r, x, &label, err, sizeof(err)),
                         SC_DECODE_NOT_NUMERIC);
        assert_non_null(strstr(err, "csv column \"temp\": expected a number"));
        char *dump = sc_conf_dump(&conf);
        assert_non_null(strstr(dump, "\"column\": \"temp\""));
        free(dump);
        assert_int_equal(
            sc_conf_set(&conf, "streams.header=[\"status\",\"device\"]", err, sizeof(err)),
            SC_ERR_CONFIG);
        assert_non_null(strstr(err, "$.streams.fields[0].column: \"temp\" is not a column of "
                                    "the header"));
        sc_conf_free(&conf);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(vocab_finds_by_content), cmocka_unit_test(json_named_fields),
            cmocka_unit_test(json_field_faults),      cmocka_unit_test(csv_named_columns),
            cmocka_unit_test(spec_checks_fields),     cmocka_unit_test(conf_fields_and_labels),
            cmocka_unit_test(conf_field_errors),      cmocka_unit_test(review_cases),
            cmocka_unit_test(csv_columns_by_name),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
