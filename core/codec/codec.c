/* codec.c — the codec interface: registry by name, per-worker encoder state,
 * the payload header, and decoding dispatch on the body format. */
#include "codec_impl.h"

#include "sc_alloc.h"

#include <math.h>
#include <stdlib.h>

static const sc_codec_ops_t *const sc_codec_registry[SC_CODEC__END] = {
    [SC_CODEC_NONE] = &sc_codec_none_ops,         [SC_CODEC_TOPK] = &sc_codec_topk_ops,
    [SC_CODEC_RANDK] = &sc_codec_randk_ops,       [SC_CODEC_ADACOMP] = &sc_codec_adacomp_ops,
    [SC_CODEC_ADAPTIVE] = &sc_codec_adaptive_ops, [SC_CODEC_Q8] = &sc_codec_q8_ops,
    [SC_CODEC_FP16] = &sc_codec_fp16_ops,
};

static const sc_codec_ops_t *sc_codec_ops(unsigned id)
{
        return id < SC_CODEC__END ? sc_codec_registry[id] : NULL;
}

const char *sc_codec_name(sc_codec_id_t id)
{
        const sc_codec_ops_t *ops = sc_codec_ops((unsigned)id);
        return ops ? ops->name : "?";
}

sc_err_t sc_codec_id_from_name(const char *name, sc_codec_id_t *idp, char *errstr,
                               size_t errstr_size)
{
        for (unsigned i = 0; name && i < SC_CODEC__END; i++) {
                if (!strcmp(name, sc_codec_registry[i]->name)) {
                        *idp = (sc_codec_id_t)i;
                        return SC_OK;
                }
        }
        return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                       "unknown codec \"%s\" (expected none, topk, randk, adacomp, adaptive, q8 "
                       "or fp16)",
                       name ? name : "(null)");
}

void sc_codec_params_default(sc_codec_params_t *p, sc_codec_id_t id)
{
        memset(p, 0, sizeof(*p));
        p->ratio = id == SC_CODEC_ADAPTIVE ? 0.1 : 0.01;
        p->round = SC_CODEC_K_FLOOR;
        p->error_feedback = id == SC_CODEC_ADAPTIVE;
        p->delta = 0.3;
}

size_t sc_codec_k(double ratio, sc_codec_round_t round, size_t numel)
{
        double x = ratio * (double)numel, r = nearbyint(x), k;

        if (fabs(x - r) <= 1e-6 * (x > 1.0 ? x : 1.0))
                k = r;
        else
                k = round == SC_CODEC_K_CEIL ? ceil(x) : floor(x);
        if (k < 1.0)
                k = 1.0;
        if (k > (double)numel)
                k = (double)numel;
        return (size_t)k;
}

static sc_err_t sc_codec_check_params(const sc_codec_params_t *p, sc_codec_id_t id, char *errstr,
                                      size_t errstr_size)
{
        if (!(p->ratio > 0.0 && p->ratio <= 1.0))
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "codec %s: ratio %g is not in (0, 1]", sc_codec_name(id), p->ratio);
        if (p->round != SC_CODEC_K_FLOOR && p->round != SC_CODEC_K_CEIL)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size, "codec %s: bad k rounding %d",
                               sc_codec_name(id), (int)p->round);
        if (!(p->delta >= 0.0) || !isfinite(p->delta))
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "codec %s: delta %g must be finite and >= 0", sc_codec_name(id),
                               p->delta);
        if (!(p->ema >= 0.0 && p->ema <= 1.0))
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "codec %s: ema %g is not in [0, 1]", sc_codec_name(id), p->ema);
        if (p->half_values && p->log8_values)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "codec %s: half_values and log8_values are exclusive",
                               sc_codec_name(id));
        return SC_OK;
}

/* Builds the segment list: the views plus the gaps between them. */
static sc_err_t sc_codec_build_segs(sc_codec_t *c, const sc_tensor_view_t *views, int nviews,
                                    char *errstr, size_t errstr_size)
{
        size_t pos = 0;
        int ns = 0;

        c->segs = sc_calloc((size_t)(2 * (nviews > 0 ? nviews : 0) + 1), sizeof(*c->segs));
        if (!c->segs)
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "codec: out of memory");
        for (int i = 0; i < nviews; i++) {
                const sc_tensor_view_t *v = &views[i];
                if (v->offset < pos || v->offset > c->n || v->numel > c->n - v->offset)
                        return sc_errf(SC_ERR_SHAPE, errstr, errstr_size,
                                       "codec: tensor view %d (%s: offset %zu, numel %zu) is "
                                       "out of order, overlapping or outside the %zu floats",
                                       i, v->name, v->offset, v->numel, c->n);
                if (v->offset > pos)
                        c->segs[ns++] = (sc_codec_seg_t){pos, v->offset - pos, 0};
                if (v->numel > 0)
                        c->segs[ns++] = (sc_codec_seg_t){v->offset, v->numel, 0};
                pos = v->offset + v->numel;
        }
        if (pos < c->n)
                c->segs[ns++] = (sc_codec_seg_t){pos, c->n - pos, 0};
        c->nsegs = ns;
        for (int i = 0; i < ns; i++) {
                c->segs[i].k = sc_codec_k(c->params.ratio, c->params.round, c->segs[i].numel);
                c->ksum += c->segs[i].k;
                if (c->segs[i].numel > c->max_numel)
                        c->max_numel = c->segs[i].numel;
        }
        return SC_OK;
}

sc_err_t sc_codec_new(sc_codec_t **codecp, sc_codec_id_t id, const sc_codec_params_t *params,
                      size_t n, const sc_tensor_view_t *views, int nviews, char *errstr,
                      size_t errstr_size)
{
        const sc_codec_ops_t *ops = sc_codec_ops((unsigned)id);
        sc_codec_t *c;
        sc_err_t err;

        *codecp = NULL;
        if (!ops)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size, "codec: unknown id %d", (int)id);
        if (n == 0 || n > UINT32_MAX)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "codec %s: buffer of %zu floats (must be 1 .. 2^32-1)", ops->name,
                               n);
        if (nviews < 0 || (nviews > 0 && !views))
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size, "codec %s: bad view list",
                               ops->name);
        c = sc_calloc(1, sizeof(*c));
        if (!c)
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "codec: out of memory");
        c->ops = ops;
        c->n = n;
        c->decision = -1;
        if (params)
                c->params = *params;
        else
                sc_codec_params_default(&c->params, id);
        if (id == SC_CODEC_ADACOMP)
                c->params.error_feedback = 0;
        if (id == SC_CODEC_NONE)
                c->params.error_feedback = 0;
        if ((err = sc_codec_check_params(&c->params, id, errstr, errstr_size)))
                goto out_destroy;
        if ((err = sc_codec_build_segs(c, views, nviews, errstr, errstr_size)))
                goto out_destroy;
        if (c->params.error_feedback) {
                c->residual = sc_calloc(n, sizeof(float));
                if (!c->residual)
                        goto out_nomem;
        }
        if (ops->init && (err = ops->init(c, errstr, errstr_size)))
                goto out_destroy;
        *codecp = c;
        return SC_OK;

out_nomem:
        err = sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "codec %s: out of memory for %zu floats",
                      ops->name, n);
out_destroy:
        sc_codec_destroy(c);
        return err;
}

int sc_codec_clip_views(const sc_tensor_view_t *views, int nviews, size_t begin, size_t end,
                        sc_tensor_view_t *out)
{
        int n = 0;

        for (int i = 0; i < nviews; i++) {
                size_t lo = views[i].offset, hi = views[i].offset + views[i].numel;
                lo = lo > begin ? lo : begin;
                hi = hi < end ? hi : end;
                if (lo >= hi)
                        continue;
                out[n] = views[i];
                out[n].offset = lo - begin;
                out[n].numel = hi - lo;
                n++;
        }
        return n;
}

void sc_codec_destroy(sc_codec_t *c)
{
        if (!c)
                return;
        sc_topk_scratch_free(&c->topk);
        sc_free(c->bitmap);
        sc_free(c->segmax);
        sc_free(c->selval);
        sc_free(c->sel);
        sc_free(c->residual);
        sc_free(c->segs);
        sc_free(c);
}

sc_codec_id_t sc_codec_id(const sc_codec_t *c)
{
        return c->ops->id;
}

size_t sc_codec_n(const sc_codec_t *c)
{
        return c->n;
}

const sc_codec_params_t *sc_codec_params(const sc_codec_t *c)
{
        return &c->params;
}

const float *sc_codec_residual(const sc_codec_t *c)
{
        return c->residual;
}

void sc_codec_reset_residual(sc_codec_t *c)
{
        if (c->residual)
                memset(c->residual, 0, c->n * sizeof(float));
}

void sc_codec_stats(const sc_codec_t *c, sc_codec_stats_t *st)
{
        double s = 0.0;

        *st = c->stats;
        for (size_t i = 0; c->residual && i < c->n; i++)
                s += (double)c->residual[i] * c->residual[i];
        st->residual_norm = sqrt(s);
}

sc_err_t sc_codec_encode(sc_codec_t *c, const float *grads, sc_rng_t *rng, sc_buf_t *out,
                         char *errstr, size_t errstr_size)
{
        size_t start;
        sc_err_t err;

        if (!c || !grads || !out)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "codec encode: NULL codec, gradient or output buffer");
        start = out->len;
        err = c->ops->encode(c, grads, rng, out, errstr, errstr_size);
        if (err) {
                out->len = start;
                return err;
        }
        c->stats.steps++;
        c->stats.last_bytes = out->len - start;
        c->stats.bytes += c->stats.last_bytes;
        return SC_OK;
}

int sc_codec_adaptive_vote(const sc_codec_t *c)
{
        return c->ops->id == SC_CODEC_ADAPTIVE && c->stats.steps > 0 && c->mean <= c->params.delta;
}

int sc_codec_adaptive_majority(const int *votes, int nvotes)
{
        int yes = 0;

        for (int i = 0; i < nvotes; i++)
                yes += votes[i] != 0;
        return 2 * yes > nvotes;
}

sc_err_t sc_codec_adaptive_set_decision(sc_codec_t *c, int compress)
{
        if (c->ops->id != SC_CODEC_ADAPTIVE)
                return SC_ERR_INVAL;
        c->decision = compress != 0;
        return SC_OK;
}

void sc_codec_put_hdr(uint8_t *p, sc_codec_id_t id, sc_codec_format_t fmt, unsigned flags, size_t n)
{
        p[0] = (uint8_t)id;
        p[1] = (uint8_t)fmt;
        sc_le_put16(p + 2, (uint16_t)flags);
        sc_le_put32(p + 4, (uint32_t)n);
}

void sc_codec_ef_commit_sparse(sc_codec_t *c, const float *grads, int sent_exact)
{
        float *r = c->residual;

        for (size_t i = 0; i < c->n; i++)
                r[i] += grads[i];
        if (sent_exact && !c->rounded) {
                for (size_t j = 0; j < c->ksum; j++)
                        r[c->sel[j]] = 0.0f;
        } else {
                for (size_t j = 0; j < c->ksum; j++)
                        r[c->sel[j]] -= c->selval[j];
        }
}

sc_err_t sc_codec_payload_info(const void *payload, size_t len, sc_codec_info_t *info, char *errstr,
                               size_t errstr_size)
{
        const uint8_t *p = payload;
        const sc_codec_ops_t *ops;
        uint32_t k;
        uint64_t need;
        sc_err_t err;

        memset(info, 0, sizeof(*info));
        if (!p || len < SC_CODEC_HDR_SIZE)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "codec payload: %zu bytes, shorter than its %d-byte header", len,
                               SC_CODEC_HDR_SIZE);
        ops = sc_codec_ops(p[0]);
        if (!ops)
                return sc_errf(SC_ERR_DECODE, errstr, errstr_size,
                               "codec payload: unknown codec id %u", p[0]);
        if (p[1] >= SC_CODEC_FMT__END || !(ops->formats & (1u << p[1])))
                return sc_errf(SC_ERR_DECODE, errstr, errstr_size,
                               "codec payload: codec %s does not use body format %u", ops->name,
                               p[1]);
        info->codec = ops->id;
        info->format = (sc_codec_format_t)p[1];
        info->flags = sc_le_get16(p + 2);
        info->n = sc_le_get32(p + 4);
        info->nnz = info->n;
        if (info->n == 0)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "codec payload: zero-length buffer");
        len -= SC_CODEC_HDR_SIZE;
        p += SC_CODEC_HDR_SIZE;
        switch (info->format) {
        case SC_CODEC_FMT_DENSE:
        case SC_CODEC_FMT_FP16:
                need = (uint64_t)info->n * (info->format == SC_CODEC_FMT_DENSE ? 4 : 2);
                if (need != len)
                        return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                                       "codec payload: %s body of %zu bytes, expected %llu",
                                       info->format == SC_CODEC_FMT_DENSE ? "dense" : "fp16", len,
                                       (unsigned long long)need);
                return SC_OK;
        case SC_CODEC_FMT_SPARSE:
                err = sc_codec_sparse_check(p, len, info->n, info->flags, &k, errstr, errstr_size);
                info->nnz = k;
                return err;
        case SC_CODEC_FMT_Q8:
                return sc_codec_q8_check(p, len, info->n, errstr, errstr_size);
        default:
                return SC_ERR_DECODE;
        }
}

sc_err_t sc_codec_decode_add(const void *payload, size_t len, float *acc, size_t n, float scale,
                             char *errstr, size_t errstr_size)
{
        const uint8_t *body = (const uint8_t *)payload + SC_CODEC_HDR_SIZE;
        sc_codec_info_t info;
        sc_err_t err = sc_codec_payload_info(payload, len, &info, errstr, errstr_size);

        if (err)
                return err;
        if (!acc)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size, "codec decode: NULL accumulator");
        if (info.n != n)
                return sc_errf(SC_ERR_SHAPE, errstr, errstr_size,
                               "codec payload: carries %u floats, accumulator has %zu", info.n, n);
        len -= SC_CODEC_HDR_SIZE;
        switch (info.format) {
        case SC_CODEC_FMT_DENSE:
                return sc_codec_dense_decode_add(body, len, info.n, acc, scale, errstr,
                                                 errstr_size);
        case SC_CODEC_FMT_SPARSE:
                return sc_codec_sparse_decode_add(body, len, info.n, info.flags, acc, scale, errstr,
                                                  errstr_size);
        case SC_CODEC_FMT_FP16:
                return sc_codec_fp16_decode_add(body, len, info.n, acc, scale, errstr, errstr_size);
        case SC_CODEC_FMT_Q8:
                return sc_codec_q8_decode_add(body, len, info.n, acc, scale, errstr, errstr_size);
        default:
                return SC_ERR_DECODE;
        }
}

sc_err_t sc_codec_decode_sparse(const void *payload, size_t len, uint32_t *idx, float *val,
                                size_t cap, size_t *nnzp, char *errstr, size_t errstr_size)
{
        const uint8_t *body = (const uint8_t *)payload + SC_CODEC_HDR_SIZE;
        sc_codec_info_t info;
        sc_err_t err = sc_codec_payload_info(payload, len, &info, errstr, errstr_size);

        *nnzp = 0;
        if (err)
                return err;
        if (!idx || !val)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size, "codec decode: NULL output");
        if (info.nnz > cap)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "codec payload: %u coordinates, room for %zu", info.nnz, cap);
        len -= SC_CODEC_HDR_SIZE;
        switch (info.format) {
        case SC_CODEC_FMT_DENSE:
                err = sc_codec_dense_decode_list(body, len, info.n, idx, val, errstr, errstr_size);
                break;
        case SC_CODEC_FMT_SPARSE:
                err = sc_codec_sparse_decode_list(body, len, info.n, info.flags, idx, val, errstr,
                                                  errstr_size);
                break;
        case SC_CODEC_FMT_FP16:
                err = sc_codec_fp16_decode_list(body, len, info.n, idx, val, errstr, errstr_size);
                break;
        case SC_CODEC_FMT_Q8:
                err = sc_codec_q8_decode_list(body, len, info.n, idx, val, errstr, errstr_size);
                break;
        default:
                err = SC_ERR_DECODE;
        }
        if (!err)
                *nnzp = info.nnz;
        return err;
}
