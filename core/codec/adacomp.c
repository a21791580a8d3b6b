/* adacomp.c — the AdaComp (NCA 2017) worker codec: per tensor the
 * max(1, floor(c * numel)) entries of largest |g|, no error feedback; the
 * staleness scaling happens on the server (core/sync). */
#include "codec_impl.h"

static sc_err_t sc_codec_adacomp_encode(sc_codec_t *c, const float *grads, sc_rng_t *rng,
                                        sc_buf_t *out, char *errstr, size_t errstr_size)
{
        sc_err_t err = sc_codec_topk_run(c, grads, NULL);

        if (!err)
                err = sc_codec_sparse_encode(c, 0, out);
        if (err)
                return sc_errf(err, errstr, errstr_size, "codec adacomp: out of memory");
        c->stats.compressed++;
        return SC_OK;
}

const sc_codec_ops_t sc_codec_adacomp_ops = {
    .name = "adacomp",
    .id = SC_CODEC_ADACOMP,
    .formats = 1u << SC_CODEC_FMT_SPARSE,
    .encode = sc_codec_adacomp_encode,
};
