/* fuzz_decode.c — libFuzzer target: the record decoders (json, csv, raw) on
 * any (key, header, value) bytes. Input: byte 0 picks the format (bits 0-1,
 * mod 3), the label source (bits 2-3: 0 the format's default, else key,
 * header, offset) and its encoding (bit 4); byte 1 the
 * feature count, raw dtype and offsets; byte 2 the key length (the key and a
 * "label" header share those bytes); the rest is the value. */
#include "fuzz_common.h"

#include "sc_decode.h"

static const size_t sc_fuzz_numel[4] = {1, 4, 12, 784};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        sc_decode_spec_t spec;
        char why[256];
        int32_t label;

        if (size < 3)
                return 0;
        sc_decode_format_t format = (sc_decode_format_t)((data[0] & 3) % SC_DECODE_FORMAT__END);
        sc_decode_spec_defaults(&spec, format);
        spec.numel = sc_fuzz_numel[data[1] & 3];
        if (data[0] & 0x0c)
                spec.label_source = (sc_decode_label_source_t)((data[0] >> 2) & 3);
        spec.label_encoding = (data[0] & 0x10) ? SC_DECODE_ENC_BYTE : SC_DECODE_ENC_ASCII;
        spec.dtype = (data[1] & 4) ? SC_DECODE_F32 : SC_DECODE_U8;
        spec.data_offset = (data[1] >> 3) & 3;
        spec.label_offset = spec.label_source == SC_DECODE_LABEL_OFFSET && spec.data_offset
                                ? 0
                                : (size_t)(spec.numel * (spec.dtype == SC_DECODE_F32 ? 4 : 1));
        if (data[1] & 0x20) {
                spec.scale = 1.0f / 255.0f;
                spec.mean = 0.5f;
                spec.std = 0.25f;
        }
        if (data[1] & 0x40)
                spec.delimiter = ';';
        if (data[1] & 0x80)
                snprintf(spec.features_path, sizeof(spec.features_path), "$.x[1].pixels");
        if (sc_decode_spec_check(&spec, why, sizeof(why)))
                return 0;

        size_t klen = data[2];
        const uint8_t *rest = data + 3;
        size_t rlen = size - 3;
        if (klen > rlen)
                klen = rlen;
        /* Private exact-size copies: ASan sees any read outside them. */
        uint8_t *key = sc_fuzz_copy(rest, klen), *val = sc_fuzz_copy(rest + klen, rlen - klen);
        float *x = malloc(spec.numel * sizeof(float));
        if (key && val && x) {
                sc_decode_header_t h = {.name = "label", .value = klen ? key : NULL, .size = klen};
                sc_record_t rec = {.key = klen ? key : NULL,
                                   .key_size = klen,
                                   .value = rlen - klen ? val : NULL,
                                   .value_size = rlen - klen,
                                   .headers = &h,
                                   .n_headers = 1};
                sc_decode_fault_t f = sc_decode_record(&spec, &rec, x, &label, why, sizeof(why));
                SC_FUZZ_ASSERT(f >= SC_DECODE_OK && f < SC_DECODE_FAULT__END);
                if (f == SC_DECODE_OK && spec.label_source != SC_DECODE_LABEL_OFFSET)
                        SC_FUZZ_ASSERT(label >= 0 && label < spec.n_classes);
        }
        free(key);
        free(val);
        free(x);
        return 0;
}

/* ---- seeds: valid records of each format, one per selector ---- */

static void sc_fuzz_seed_rec(const char *dir, const char *name, uint8_t b0, uint8_t b1,
                             const char *key, const void *value, size_t vlen)
{
        size_t klen = strlen(key);
        uint8_t *p = malloc(3 + klen + vlen);
        if (!p)
                exit(1);
        p[0] = b0;
        p[1] = b1;
        p[2] = (uint8_t)klen;
        memcpy(p + 3, key, klen);
        memcpy(p + 3 + klen, value, vlen);
        sc_fuzz_seed(dir, name, p, 3 + klen + vlen);
        free(p);
}

static void sc_fuzz_write_seeds(const char *dir)
{
        char text[16384], name[64];
        size_t at;

        for (int ni = 0; ni < 4; ni++) {
                size_t n = sc_fuzz_numel[ni];
                /* json: label in the object, then from the key. */
                at = (size_t)snprintf(text, sizeof(text),
                                      "{\"id\": \"r\\u00e9%d\", \"features\": [", ni);
                for (size_t i = 0; i < n; i++)
                        at += (size_t)snprintf(text + at, sizeof(text) - at, "%s%g", i ? "," : "",
                                               (double)((i * 37) % 256) / (ni == 3 ? 1.0 : 7.0));
                at += (size_t)snprintf(text + at, sizeof(text) - at,
                                       "], \"label\": %d, \"meta\": {\"ok\": true, \"n\": null}}",
                                       ni + 1);
                snprintf(name, sizeof(name), "json-%zu", n);
                sc_fuzz_seed_rec(dir, name, 0x00, (uint8_t)(ni | (ni == 3 ? 0x20 : 0)), "", text,
                                 at);
                snprintf(name, sizeof(name), "json-key-%zu", n);
                sc_fuzz_seed_rec(dir, name, 0x04, (uint8_t)ni, "7", text, at);
                /* csv: label, then the features; ';' on one of them. */
                at = (size_t)snprintf(text, sizeof(text), "%d", ni + 2);
                for (size_t i = 0; i < n; i++)
                        at += (size_t)snprintf(text + at, sizeof(text) - at, "%c%g",
                                               ni == 2 ? ';' : ',', (double)i * 0.25 - 1.0);
                at += (size_t)snprintf(text + at, sizeof(text) - at, "\r\n");
                snprintf(name, sizeof(name), "csv-%zu", n);
                sc_fuzz_seed_rec(dir, name, 0x01, (uint8_t)(ni | (ni == 2 ? 0x40 : 0)), "", text,
                                 at);
                /* raw: u8 and f32 tensors, label from the key, a header or a byte. */
                uint8_t raw[4 * 784 + 8];
                for (size_t i = 0; i < sizeof(raw); i++)
                        raw[i] = (uint8_t)(i * 13);
                for (size_t i = 0; i < n; i++) {
                        float f = (float)i * 0.5f;
                        memcpy(raw + 4 * i, &f, 4);
                }
                snprintf(name, sizeof(name), "raw-f32-%zu", n);
                sc_fuzz_seed_rec(dir, name, 0x12, (uint8_t)(ni | 0x04), "\x03", raw, 4 * n);
                snprintf(name, sizeof(name), "raw-u8-hdr-%zu", n);
                sc_fuzz_seed_rec(dir, name, 0x0a, (uint8_t)ni, "5", raw, n);
                raw[n + 1] = 4;
                snprintf(name, sizeof(name), "raw-u8-off-%zu", n);
                sc_fuzz_seed_rec(dir, name, 0x0e, (uint8_t)(ni | 0x08), "", raw, n + 2);
        }
        at = (size_t)snprintf(text, sizeof(text),
                              "{\"x\": [0, {\"pixels\": [[1, 2], [3, 4]]}], \"label\": 9}");
        sc_fuzz_seed_rec(dir, "json-nested", 0x00, 0x81, "", text, at);
}
