/* adaptive.c — the ScaDLES adaptive codec: each step computes per-tensor
 * top-k of g (plus the residual with error feedback) and the relative norm
 * loss x = | ||g|| - ||topk(g)|| | / ||g||; it sends top-k while the running
 * mean of x is <= delta and dense otherwise. The decision is the worker's
 * own, or in vote mode the one the sync layer handed over (majority vote). */
#include "codec_impl.h"

#include <math.h>

static sc_err_t sc_codec_adaptive_encode(sc_codec_t *c, const float *grads, sc_rng_t *rng,
                                         sc_buf_t *out, char *errstr, size_t errstr_size)
{
        const float *r = c->residual;
        unsigned flags = r ? SC_CODEC_FLAG_EF : 0;
        double all = 0.0, kept = 0.0, x, mean;
        uint64_t m = c->stats.steps;
        int compress;
        sc_err_t err;

        err = sc_codec_topk_run(c, grads, r);
        if (err)
                return sc_errf(err, errstr, errstr_size, "codec adaptive: out of memory");
        for (size_t i = 0; i < c->n; i++) {
                double v = r ? (double)(grads[i] + r[i]) : (double)grads[i];
                all += v * v;
        }
        for (size_t j = 0; j < c->ksum; j++)
                kept += (double)c->selval[j] * c->selval[j];
        all = sqrt(all);
        kept = sqrt(kept);
        x = all > 0.0 ? fabs(all - kept) / all : 0.0;
        if (m == 0)
                mean = x;
        else if (c->params.ema > 0.0)
                mean = (1.0 - c->params.ema) * c->mean + c->params.ema * x;
        else
                mean = c->mean + (x - c->mean) / (double)(m + 1);
        compress = mean <= c->params.delta;
        if (c->params.vote && c->decision >= 0)
                compress = c->decision;

        if (compress) {
                err = sc_codec_sparse_encode(c, flags, out);
                if (err)
                        return sc_errf(err, errstr, errstr_size, "codec adaptive: out of memory");
                if (r)
                        sc_codec_ef_commit_sparse(c, grads, 1);
                c->stats.compressed++;
        } else {
                size_t need = SC_CODEC_HDR_SIZE + 4 * c->n;
                if (sc_buf_reserve(out, need))
                        return sc_errf(SC_ERR_NOMEM, errstr, errstr_size,
                                       "codec adaptive: out of memory for %zu bytes", need);
                uint8_t *p = out->data + out->len;
                sc_codec_put_hdr(p, SC_CODEC_ADAPTIVE, SC_CODEC_FMT_DENSE, flags, c->n);
                p += SC_CODEC_HDR_SIZE;
                for (size_t i = 0; i < c->n; i++)
                        sc_le_putf32(p + 4 * i, r ? grads[i] + r[i] : grads[i]);
                out->len += need;
                if (r)
                        sc_codec_reset_residual(c);
                c->stats.last_nnz = c->n;
        }
        c->mean = mean;
        c->decision = -1;
        c->stats.last_metric = x;
        c->stats.mean_metric = mean;
        return SC_OK;
}

const sc_codec_ops_t sc_codec_adaptive_ops = {
    .name = "adaptive",
    .id = SC_CODEC_ADAPTIVE,
    .formats = 1u << SC_CODEC_FMT_SPARSE | 1u << SC_CODEC_FMT_DENSE,
    .encode = sc_codec_adaptive_encode,
};
