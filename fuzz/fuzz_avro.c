/* fuzz_avro.c — libFuzzer target: Schema Registry framed Avro records read
 * by named fields, on any value bytes. Two writer schemas are compiled once
 * into one cache (id 1: strings, an enum, nullable doubles and floats, a
 * nested record, an array, a map, a fixed; id 2: the fields reordered and
 * retyped, a union of three branches); id 3 is refused; any other id is
 * unknown. Input: byte 0 picks the label from the field or none (bit 0);
 * the rest is the value (a frame's id bytes included, so mutations reach
 * every id). Checked: the outcome is a fault kind, an accepted record's
 * label is a class, every feature is finite and one-hot spans hold at most
 * one 1. */
#include "fuzz_fields.h"
#include "sc_avro.h"

static sc_fields_t *sc_fa_fields;
static sc_vocab_t *sc_fa_labels;
static sc_avro_cache_t *sc_fa_cache[2]; /* labelled, unlabelled */

static const char *const sc_fa_schema[2] = {
    "{\"type\":\"record\",\"name\":\"M\",\"fields\":["
    "{\"name\":\"device\",\"type\":\"string\"},"
    "{\"name\":\"kind\",\"type\":{\"type\":\"enum\",\"name\":\"K\",\"symbols\":[\"pump\",\"fan\","
    "\"mixer\"]}},"
    "{\"name\":\"temp\",\"type\":[\"null\",\"double\"]},"
    "{\"name\":\"s\",\"type\":{\"type\":\"record\",\"name\":\"S\",\"fields\":["
    "{\"name\":\"xs\",\"type\":{\"type\":\"array\",\"items\":\"long\"}},"
    "{\"name\":\"vib\",\"type\":[\"null\",\"float\"]}]}},"
    "{\"name\":\"on\",\"type\":\"boolean\"},"
    "{\"name\":\"tags\",\"type\":{\"type\":\"map\",\"values\":[\"null\",\"string\"]}},"
    "{\"name\":\"blob\",\"type\":{\"type\":\"fixed\",\"name\":\"B\",\"size\":3}},"
    "{\"name\":\"status\",\"type\":\"string\"}]}",
    "{\"type\":\"record\",\"name\":\"M\",\"fields\":["
    "{\"name\":\"status\",\"type\":[\"null\",\"long\",\"string\"]},"
    "{\"name\":\"s\",\"type\":{\"type\":\"record\",\"name\":\"S\",\"fields\":["
    "{\"name\":\"vib\",\"type\":\"bytes\"}]}},"
    "{\"name\":\"temp\",\"type\":\"int\"},"
    "{\"name\":\"kind\",\"type\":[\"string\",\"boolean\",\"double\"]},"
    "{\"name\":\"device\",\"type\":{\"type\":\"array\",\"items\":\"string\"}},"
    "{\"name\":\"on\",\"type\":[\"null\",\"boolean\"]}]}",
};

static void sc_fa_spec(sc_decode_spec_t *spec, int unlabelled)
{
        sc_decode_spec_defaults(spec, SC_DECODE_AVRO);
        spec->fields = sc_fa_fields;
        spec->labels = sc_fa_labels;
        spec->numel = sc_fa_fields->width;
        spec->n_classes = 3;
        snprintf(spec->label_path, sizeof(spec->label_path), "$.status");
        if (unlabelled)
                sc_decode_spec_unlabelled(spec);
}

static void sc_fa_init(void)
{
        static const char *const kinds[] = {"pump", "fan", "1.5", "true", NULL};
        char why[256];
        if (sc_fa_fields)
                return;
        sc_fa_fields = sc_fields_new();
        SC_FUZZ_ASSERT(sc_fa_fields);
        sc_fuzz_add_field(sc_fa_fields, "temp", -1, SC_FIELD_NUMERIC, SC_MISSING_MEAN, 1, NULL);
        sc_fuzz_add_field(sc_fa_fields, "$.s.vib", -1, SC_FIELD_NUMERIC, SC_MISSING_CONSTANT, 0,
                          NULL);
        sc_fuzz_add_field(sc_fa_fields, "kind", -1, SC_FIELD_CATEGORICAL, SC_MISSING_ZERO, 0,
                          kinds);
        sc_fuzz_add_field(sc_fa_fields, "device", -1, SC_FIELD_HASHED, SC_MISSING_ZERO, 0, NULL);
        sc_fuzz_add_field(sc_fa_fields, "on", -1, SC_FIELD_BOOLEAN, SC_MISSING_ERROR, 1, NULL);
        sc_fa_labels = sc_vocab_new();
        SC_FUZZ_ASSERT(sc_fa_labels);
        SC_FUZZ_ASSERT(sc_vocab_add(sc_fa_labels, "ok", 2) >= 0);
        SC_FUZZ_ASSERT(sc_vocab_add(sc_fa_labels, "overheat", 8) >= 0);
        SC_FUZZ_ASSERT(sc_vocab_add(sc_fa_labels, "leak", 4) >= 0);
        for (int u = 0; u < 2; u++) {
                sc_decode_spec_t spec;
                sc_fa_spec(&spec, u);
                sc_fa_cache[u] = sc_avro_cache_new(&spec);
                SC_FUZZ_ASSERT(sc_fa_cache[u]);
                for (int i = 0; i < 2; i++)
                        SC_FUZZ_ASSERT_OK(sc_avro_cache_put(sc_fa_cache[u], i + 1, sc_fa_schema[i],
                                                            strlen(sc_fa_schema[i]), why,
                                                            sizeof(why)),
                                          "fuzz_avro: schema", why);
                SC_FUZZ_ASSERT(sc_avro_cache_refuse(sc_fa_cache[u], 3, "refused") == SC_OK);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        sc_decode_spec_t spec;
        char why[256];
        int32_t label = -2;

        if (size < 1)
                return 0;
        sc_fa_init();
        int unlabelled = data[0] & 1;
        sc_fa_spec(&spec, unlabelled);
        spec.avro = sc_fa_cache[unlabelled];
        if (sc_decode_spec_check(&spec, why, sizeof(why))) {
                fprintf(stderr, "fuzz_avro: spec: %s\n", why);
                abort();
        }
        size_t vlen = size - 1;
        uint8_t *val = sc_fuzz_copy(data + 1, vlen);
        float *x = malloc(spec.numel * sizeof(float));
        if (val && x) {
                sc_record_t rec = {.value = vlen ? val : NULL, .value_size = vlen};
                sc_decode_fault_t f = sc_decode_record(&spec, &rec, x, &label, why, sizeof(why));
                sc_fuzz_check_decoded(&spec, f, x, label);
        }
        free(val);
        free(x);
        return 0;
}

/* ---- seeds: valid bodies of both schemas, written from the Avro
 * specification's binary encoding ---- */

typedef struct sc_fa_buf {
        uint8_t b[512];
        size_t n;
} sc_fa_buf_t;

static void sc_fa_byte(sc_fa_buf_t *b, uint8_t v)
{
        if (b->n < sizeof(b->b))
                b->b[b->n++] = v;
}

static void sc_fa_long(sc_fa_buf_t *b, int64_t v)
{
        uint64_t u = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
        while (u >= 0x80) {
                sc_fa_byte(b, (uint8_t)(u | 0x80));
                u >>= 7;
        }
        sc_fa_byte(b, (uint8_t)u);
}

static void sc_fa_str(sc_fa_buf_t *b, const char *s)
{
        sc_fa_long(b, (int64_t)strlen(s));
        for (; *s; s++)
                sc_fa_byte(b, (uint8_t)*s);
}

static void sc_fa_raw(sc_fa_buf_t *b, const void *p, size_t n)
{
        for (size_t i = 0; i < n; i++)
                sc_fa_byte(b, ((const uint8_t *)p)[i]);
}

static void sc_fa_frame(sc_fa_buf_t *b, uint8_t flags, uint8_t id)
{
        b->n = 0;
        sc_fa_byte(b, flags);
        sc_fa_byte(b, 0);
        sc_fa_byte(b, 0);
        sc_fa_byte(b, 0);
        sc_fa_byte(b, 0);
        sc_fa_byte(b, id);
}

static void sc_fuzz_write_seeds(const char *dir)
{
        sc_fa_buf_t b;
        double t = 71.25;
        float v = 2.5f;
        for (int flags = 0; flags < 2; flags++) {
                sc_fa_frame(&b, (uint8_t)flags, 1);
                sc_fa_str(&b, "m-0088");
                sc_fa_long(&b, 1);
                sc_fa_long(&b, 1);
                sc_fa_raw(&b, &t, 8);
                sc_fa_long(&b, -2); /* xs: a block of 2 longs with its size */
                sc_fa_long(&b, 2);
                sc_fa_long(&b, 5);
                sc_fa_long(&b, -5);
                sc_fa_long(&b, 1); /* then a block of 1 */
                sc_fa_long(&b, 64);
                sc_fa_long(&b, 0);
                sc_fa_long(&b, 1);
                sc_fa_raw(&b, &v, 4);
                sc_fa_byte(&b, 1);
                sc_fa_long(&b, 2); /* tags: fw = "1.2", loc = null */
                sc_fa_str(&b, "fw");
                sc_fa_long(&b, 1);
                sc_fa_str(&b, "1.2");
                sc_fa_str(&b, "loc");
                sc_fa_long(&b, 0);
                sc_fa_long(&b, 0);
                sc_fa_raw(&b, "abc", 3);
                sc_fa_str(&b, "overheat");
                sc_fuzz_seed(dir, flags ? "v1-unlabelled" : "v1", b.b, b.n);

                sc_fa_frame(&b, (uint8_t)flags, 2);
                sc_fa_long(&b, 2);
                sc_fa_str(&b, "leak");
                sc_fa_str(&b, "0.75");
                sc_fa_long(&b, 64);
                sc_fa_long(&b, 2);
                sc_fa_raw(&b, &t, 8);
                sc_fa_long(&b, 1);
                sc_fa_str(&b, "m-1");
                sc_fa_long(&b, 0);
                sc_fa_long(&b, 1);
                sc_fa_byte(&b, 0);
                sc_fuzz_seed(dir, flags ? "v2-unlabelled" : "v2", b.b, b.n);
        }
        sc_fa_frame(&b, 0, 3);
        sc_fa_str(&b, "refused");
        sc_fuzz_seed(dir, "refused-id", b.b, b.n);
}
