/* fuzz_ckpt.c — libFuzzer target: checkpoint parsing and loading as
 * sc_ckpt_load does it after reading the file. Input: one byte (bit 0 set
 * keeps the stored CRC trailer instead of fixing it), then the checkpoint.
 * An accepted checkpoint is decoded into buffers of its own sizes, encoded
 * again, and the result must parse. */
#include "fuzz_common.h"

#include "sc_ckpt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        sc_ckpt_view_t view;
        sc_ckpt_meta_t meta;
        char why[256];
        int has_vel = 0, has_state = 0;

        if (size < 1)
                return 0;
        size_t len = size - 1;
        uint8_t *p = sc_fuzz_copy(data + 1, len);
        if (!p)
                return 0;
        if (!(data[0] & 1))
                sc_fuzz_fix_trailer(p, len);
        if (sc_ckpt_parse(&view, p, len, why, sizeof(why)) == SC_OK) {
                size_t n = view.nparams, ns = view.nstate;
                float *params = malloc((n + 1) * sizeof(float));
                float *vel = malloc((n + 1) * sizeof(float));
                float *state = malloc((ns + 1) * sizeof(float));
                if (params && vel && state) {
                        sc_err_t err =
                            sc_ckpt_decode(p, len, &view.spec, &meta, params, vel, n, &has_vel,
                                           state, ns, &has_state, why, sizeof(why));
                        SC_FUZZ_ASSERT_OK(err, "parsed but does not decode", why);
                        uint8_t *again = NULL;
                        size_t alen = 0;
                        if (sc_ckpt_encode(&view.spec, &meta, params, has_vel ? vel : NULL, n,
                                           has_state ? state : NULL, has_state ? ns : 0, &again,
                                           &alen, why, sizeof(why)) == SC_OK) {
                                sc_ckpt_view_t v2;
                                err = sc_ckpt_parse(&v2, again, alen, why, sizeof(why));
                                SC_FUZZ_ASSERT_OK(err, "re-encoded checkpoint", why);
                                SC_FUZZ_ASSERT(v2.nparams == n);
                        }
                        free(again);
                }
                free(params);
                free(vel);
                free(state);
        }
        free(p);
        return 0;
}

/* ---- seeds: small models (dense, conv + batchnorm) with and without
 * velocity and state ---- */

static void sc_fuzz_write_seeds(const char *dir)
{
        sc_model_spec_t specs[2] = {
            {.input = {6, 1, 1},
             .n_layers = 3,
             .layers = {{.kind = SC_LAYER_DENSE, .units = 4},
                        {.kind = SC_LAYER_RELU},
                        {.kind = SC_LAYER_DENSE, .units = 3}},
             .loss = SC_LOSS_SOFTMAX_XENT},
            {.input = {1, 6, 6},
             .n_layers = 5,
             .layers = {{.kind = SC_LAYER_CONV2D, .filters = 2, .kernel = 3, .padding = 1},
                        {.kind = SC_LAYER_BATCHNORM},
                        {.kind = SC_LAYER_MAXPOOL2D, .kernel = 2},
                        {.kind = SC_LAYER_FLATTEN},
                        {.kind = SC_LAYER_DENSE, .units = 3}},
             .loss = SC_LOSS_SOFTMAX_XENT},
        };
        char name[32];

        for (int s = 0; s < 2; s++) {
                sc_model_t *model = NULL;
                char why[256];
                if (sc_model_new(&model, &specs[s], why, sizeof(why))) {
                        fprintf(stderr, "fuzz seeds: ckpt: %s\n", why);
                        exit(1);
                }
                size_t n = sc_model_nparams(model), ns = sc_model_nstate(model);
                float *vel = calloc(n, sizeof(float));
                float *params = sc_model_params(model);
                if (!vel)
                        exit(1);
                for (size_t i = 0; i < n; i++) {
                        params[i] = 0.01f * (float)(i % 17) - 0.08f;
                        vel[i] = 0.001f * (float)(i % 5);
                }
                for (int variant = 0; variant < 2; variant++) {
                        sc_ckpt_meta_t meta = {
                            .step = 40, .epoch = 1, .epoch_step = 8, .seed = 5, .batch = 32};
                        uint8_t *buf = NULL, *p;
                        size_t len = 0;
                        if (sc_ckpt_encode(&specs[s], &meta, params, variant ? vel : NULL, n,
                                           variant ? sc_model_state(model) : NULL, variant ? ns : 0,
                                           &buf, &len, NULL, 0) ||
                            !(p = malloc(len + 1)))
                                exit(1);
                        p[0] = 0;
                        memcpy(p + 1, buf, len);
                        snprintf(name, sizeof(name), "ckpt-%d-%d", s, variant);
                        sc_fuzz_seed(dir, name, p, len + 1);
                        free(p);
                        free(buf);
                }
                free(vel);
                sc_model_destroy(model);
        }
}
