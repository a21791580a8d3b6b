/* fuzz_fields.c — libFuzzer target: the json and csv decoders with named
 * fields and class names on any value bytes. Two fixed field lists (built
 * once, as from configuration): json paths (root members, a nested member,
 * an array element) and csv columns, of every field type and missing rule.
 * Input: byte 0 picks json or csv (bit 0), the label from the field or the
 * key (bit 1), a scoring spec without the label (bit 2); byte 1 is the key
 * length; the rest is the key then the value. Checked: the outcome is a
 * fault kind, an accepted record's label is a class, and every feature is
 * finite and one-hot spans hold at most one 1. */
#include "fuzz_fields.h"

static sc_fields_t *sc_ff_json, *sc_ff_csv;
static sc_vocab_t *sc_ff_labels;

/* The same field types on both lists: json paths, csv columns 1.. */
static sc_fields_t *sc_ff_build(int csv)
{
        static const char *const kinds[] = {"pump", "fan", "7", "true", NULL};
        sc_fields_t *fs = sc_fields_new();
        SC_FUZZ_ASSERT(fs);
        sc_fuzz_add_field(fs, csv ? "" : "temp", csv ? 1 : -1, SC_FIELD_NUMERIC, SC_MISSING_MEAN, 1,
                          NULL);
        sc_fuzz_add_field(fs, csv ? "" : "$.s.vib", csv ? 2 : -1, SC_FIELD_NUMERIC,
                          SC_MISSING_CONSTANT, 0, NULL);
        sc_fuzz_add_field(fs, csv ? "" : "kind", csv ? 3 : -1, SC_FIELD_CATEGORICAL,
                          SC_MISSING_ZERO, 0, kinds);
        sc_fuzz_add_field(fs, csv ? "" : "device", csv ? 4 : -1, SC_FIELD_HASHED, SC_MISSING_ZERO,
                          0, NULL);
        sc_fuzz_add_field(fs, csv ? "" : "$.a[2]", csv ? 6 : -1, SC_FIELD_BOOLEAN, SC_MISSING_ERROR,
                          1, NULL);
        return fs;
}

/* The field lists and class names, once (they stay for the process). */
static void sc_ff_init(void)
{
        static const char *const names[] = {"ok", "overheat", "leak", "9"};
        if (sc_ff_json)
                return;
        sc_ff_json = sc_ff_build(0);
        sc_ff_csv = sc_ff_build(1);
        sc_ff_labels = sc_vocab_new();
        SC_FUZZ_ASSERT(sc_ff_labels);
        for (size_t i = 0; i < 4; i++)
                SC_FUZZ_ASSERT(sc_vocab_add(sc_ff_labels, names[i], strlen(names[i])) >= 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        sc_decode_spec_t spec;
        char why[256];
        int32_t label = -2;

        if (size < 2)
                return 0;
        sc_ff_init();
        int csv = data[0] & 1;
        sc_decode_spec_defaults(&spec, csv ? SC_DECODE_CSV : SC_DECODE_JSON);
        spec.fields = csv ? sc_ff_csv : sc_ff_json;
        spec.labels = sc_ff_labels;
        spec.numel = spec.fields->width;
        spec.n_classes = 4;
        snprintf(spec.label_path, sizeof(spec.label_path), "$.status");
        if (data[0] & 2)
                spec.label_source = SC_DECODE_LABEL_KEY;
        if (data[0] & 4)
                sc_decode_spec_unlabelled(&spec);
        if (sc_decode_spec_check(&spec, why, sizeof(why))) {
                fprintf(stderr, "fuzz_fields: spec: %s\n", why);
                abort();
        }

        size_t klen = data[1], rlen = size - 2;
        if (klen > rlen)
                klen = rlen;
        uint8_t *key = sc_fuzz_copy(data + 2, klen),
                *val = sc_fuzz_copy(data + 2 + klen, rlen - klen);
        float *x = malloc(spec.numel * sizeof(float));
        if (key && val && x) {
                sc_record_t rec = {.key = klen ? key : NULL,
                                   .key_size = klen,
                                   .value = rlen - klen ? val : NULL,
                                   .value_size = rlen - klen};
                sc_decode_fault_t f = sc_decode_record(&spec, &rec, x, &label, why, sizeof(why));
                sc_fuzz_check_decoded(&spec, f, x, label);
        }
        free(key);
        free(val);
        free(x);
        return 0;
}

/* ---- seeds: valid records of both formats ---- */

static void sc_ff_seed(const char *dir, const char *name, uint8_t b0, const char *key,
                       const char *value)
{
        size_t klen = strlen(key), vlen = strlen(value);
        uint8_t *p = malloc(2 + klen + vlen);
        if (!p)
                exit(1);
        p[0] = b0;
        p[1] = (uint8_t)klen;
        memcpy(p + 2, key, klen);
        memcpy(p + 2 + klen, value, vlen);
        sc_fuzz_seed(dir, name, p, 2 + klen + vlen);
        free(p);
}

static void sc_fuzz_write_seeds(const char *dir)
{
        sc_ff_seed(dir, "json-full", 0, "",
                   "{\"device\":\"m-0088\",\"kind\":\"pump\",\"temp\":71.2,\"s\":{\"vib\":null},"
                   "\"a\":[0,1,true],\"status\":\"overheat\"}");
        sc_ff_seed(dir, "json-index-label", 0, "",
                   "{\"kind\":7,\"temp\":\"66.5\",\"a\":[null,\"x\",false],\"status\":2,"
                   "\"device\":\"m\\u002d1\"}");
        sc_ff_seed(dir, "json-key-label", 2, "leak",
                   "{\"kind\":true,\"a\":[1,2,1],\"device\":12,\"extra\":{\"deep\":[[1]]}}");
        sc_ff_seed(dir, "json-unlabelled", 4, "", "{\"a\":[0,0,true],\"kind\":\"valve\"}");
        sc_ff_seed(dir, "csv-full", 1, "", "overheat,71.2,,pump,m-0088,x,true\r\n");
        sc_ff_seed(dir, "csv-index-label", 1, "", " 2 ,66, 3.5 ,7,m-1,,0");
        sc_ff_seed(dir, "csv-key-label", 3, "ok", "x,1,2,fan,d,,1,extra");
        sc_ff_seed(dir, "csv-unlabelled", 5, "", "1,2,true,d,,false");
}
