/* fuzz_codec.c — libFuzzer target: codec payloads as a server decodes them
 * (header, then the dense accumulate and the sparse listing), and bare
 * sparse index blocks. Input: one mode byte, then the bytes. Mode bit 0
 * clear: a payload; set: an index block preceded by u32 k and u32 n, decoded
 * with validation only (no output array, so any k and n are tried). */
#include "fuzz_common.h"

#include "sc_codec.h"
#include "sc_rng.h"

#define SC_FUZZ_CODEC_NMAX (1u << 16) /* payloads decoded into buffers up to this n */

static void sc_fuzz_payload(const uint8_t *p, size_t len)
{
        sc_codec_info_t info;
        char why[256];
        size_t nnz = 0;

        if (sc_codec_payload_info(p, len, &info, why, sizeof(why)) || info.n > SC_FUZZ_CODEC_NMAX)
                return;
        float *acc = calloc((size_t)info.n + 1, sizeof(float));
        uint32_t *idx = malloc(((size_t)info.n + 1) * sizeof(uint32_t));
        float *val = malloc(((size_t)info.n + 1) * sizeof(float));
        if (acc && idx && val) {
                sc_err_t a = sc_codec_decode_add(p, len, acc, info.n, 0.5f, why, sizeof(why));
                sc_err_t s =
                    sc_codec_decode_sparse(p, len, idx, val, info.n, &nnz, why, sizeof(why));
                /* Both decoders validate the same bytes: they agree. */
                SC_FUZZ_ASSERT((a == SC_OK) == (s == SC_OK));
                if (s == SC_OK) {
                        SC_FUZZ_ASSERT(nnz <= info.n);
                        for (size_t i = 0; i < nnz; i++) {
                                SC_FUZZ_ASSERT(idx[i] < info.n);
                                SC_FUZZ_ASSERT(i == 0 || idx[i] > idx[i - 1]);
                        }
                }
        }
        free(acc);
        free(idx);
        free(val);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char why[256];
        size_t used;

        if (size < 1)
                return 0;
        uint8_t *p = sc_fuzz_copy(data + 1, size - 1);
        if (!p)
                return 0;
        if (!(data[0] & 1)) {
                sc_fuzz_payload(p, size - 1);
        } else if (size >= 9) {
                uint32_t k = sc_le_get32(p), n = sc_le_get32(p + 4);
                sc_codec_index_decode(p + 8, size - 9, k, n, NULL, &used, why, sizeof(why));
        }
        free(p);
        return 0;
}

/* ---- seeds: every codec and value coding on two shapes, and index blocks
 * of each method ---- */

static void sc_fuzz_seed_payload(const char *dir, const char *name, uint8_t mode, const uint8_t *b,
                                 size_t n)
{
        uint8_t *p = malloc(n + 1);
        if (!p)
                exit(1);
        p[0] = mode;
        memcpy(p + 1, b, n);
        sc_fuzz_seed(dir, name, p, n + 1);
        free(p);
}

static void sc_fuzz_write_seeds(const char *dir)
{
        static const size_t ns[2] = {48, 1000};
        sc_tensor_view_t views[2] = {{.name = "w", .offset = 0}, {.name = "b"}};
        char name[96];
        sc_rng_t rng;

        sc_rng_seed(&rng, 11);
        for (int s = 0; s < 2; s++) {
                size_t n = ns[s];
                float *g = malloc(n * sizeof(float));
                if (!g)
                        exit(1);
                for (size_t i = 0; i < n; i++)
                        g[i] = sc_rng_normal(&rng) * (i % 7 ? 0.01f : 1.0f);
                views[0].numel = n - 8;
                views[1].offset = n - 8;
                views[1].numel = 8;
                for (int c = 0; c < SC_CODEC__END; c++) {
                        for (int coding = 0; coding < 4; coding++) {
                                sc_codec_params_t cp;
                                sc_codec_t *codec = NULL;
                                sc_buf_t b;
                                sc_buf_init(&b);
                                sc_codec_params_default(&cp, (sc_codec_id_t)c);
                                cp.ratio = s ? 0.05 : 0.3;
                                cp.half_values = coding == 1;
                                cp.log8_values = coding == 2;
                                cp.rice_index = coding == 3;
                                if (sc_codec_new(&codec, (sc_codec_id_t)c, &cp, n, views, 2, NULL,
                                                 0) == SC_OK &&
                                    sc_codec_encode(codec, g, &rng, &b, NULL, 0) == SC_OK) {
                                        snprintf(name, sizeof(name), "payload-%s-%zu-%d",
                                                 sc_codec_name((sc_codec_id_t)c), n, coding);
                                        sc_fuzz_seed_payload(dir, name, 0, b.data, b.len);
                                }
                                sc_codec_destroy(codec);
                                sc_buf_free(&b);
                        }
                }
                /* Index blocks: every 3rd / a dense run / a sparse spread. */
                uint32_t *idx = malloc(n * sizeof(uint32_t));
                if (!idx)
                        exit(1);
                for (int pat = 0; pat < 3; pat++) {
                        size_t k = 0;
                        for (size_t i = 0; i < n; i++)
                                if ((pat == 0 && i % 3 == 0) ||
                                    (pat == 1 && i >= n / 4 && i < n / 2) ||
                                    (pat == 2 && i % 97 == 5))
                                        idx[k++] = (uint32_t)i;
                        for (int m = SC_CODEC_INDEX_VARINT; m <= SC_CODEC_INDEX_RICE; m++) {
                                sc_buf_t b;
                                uint8_t kn[8];
                                sc_buf_init(&b);
                                sc_le_put32(kn, (uint32_t)k);
                                sc_le_put32(kn + 4, (uint32_t)n);
                                if (sc_buf_append(&b, kn, 8) ||
                                    sc_codec_index_encode(idx, k, (uint32_t)n, m, &b))
                                        exit(1);
                                snprintf(name, sizeof(name), "index-%zu-%d-%d", n, pat, m);
                                sc_fuzz_seed_payload(dir, name, 1, b.data, b.len);
                                sc_buf_free(&b);
                        }
                }
                free(idx);
                free(g);
        }
}
