/* server_limits.c — what one update may do to a shard: its samples (scadles
 * weight) at most b_max and at most limits.samples_factor times the median of
 * its worker's last claims (bounded), its L2 norm at most limits.max_norm (refused or
 * clipped) and at most limits.norm_factor times the median norm of the last
 * updates (clipped), every step leaving the shard and its optimizer state finite
 * (the step is undone otherwise), and the robust aggregation of a round
 * (coordinate-wise trimmed mean or median). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sc_le.h"
#include "sync/sync_impl.h"

/* 1 if none of x's n floats is infinite or NaN: an exponent field of all
 * ones, tested on the bits (branch-free, so the loop vectorizes). */
static inline uint32_t sc_f32_bad(float x)
{
        return (uint32_t)((sc_f32_bits(x) & 0x7f800000u) == 0x7f800000u);
}

/* max |x[i]|, from the bits (NaN and infinity compare above every finite
 * magnitude, so a non-finite x gives a non-finite result). */
static double sc_max_abs(const float *x, size_t n)
{
        uint32_t m = 0;
        for (size_t i = 0; i < n; i++) {
                uint32_t b = sc_f32_bits(x[i]) & 0x7fffffffu;
                m = b > m ? b : m;
        }
        return (double)sc_f32_from_bits(m);
}

static int sc_all_finite(const float *x, size_t n)
{
        uint32_t bad = 0;
        for (size_t i = 0; i < n; i++)
                bad |= sc_f32_bad(x[i]);
        return !bad;
}

/* L2 norm of u's values; a full model's of its difference to the shard. */
static double sc_server_update_norm(const sc_server_t *srv, const sc_update_t *u)
{
        double s = 0;
        size_t cnt = u->indices ? u->count : srv->n;
        for (size_t k = 0; k < cnt; k++) {
                double v = u->values[k];
                if (u->kind == SC_UPDATE_MODEL)
                        v -= srv->params[u->indices ? u->indices[k] : k];
                s += v * v;
        }
        return sqrt(s);
}

static int sc_cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return (x > y) - (x < y);
}

/* limits.norm_factor x the median of the last norms passed; infinite when
 * off or before the warm-up. */
static double sc_server_norm_bound(const sc_server_t *srv)
{
        double v[SC_NORM_WINDOW];
        uint32_t n = srv->n_norms;
        if (!(srv->spec.limits.norm_factor > 0) || n < SC_NORM_WARMUP)
                return INFINITY;
        memcpy(v, srv->norms, n * sizeof(double));
        qsort(v, n, sizeof(double), sc_cmp_double);
        double med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
        return med > 0 ? srv->spec.limits.norm_factor * med : INFINITY;
}

static void sc_server_norm_push(sc_server_t *srv, double norm)
{
        srv->norms[srv->norm_next] = norm;
        srv->norm_next = (srv->norm_next + 1) % SC_NORM_WINDOW;
        if (srv->n_norms < SC_NORM_WINDOW)
                srv->n_norms++;
}

/* A scadles worker's batch is its measured stream rate x the window, so its
 * claims follow its rate: one over samples_factor x the median of its last
 * SC_CLAIM_WINDOW claims is bounded to that (after SC_CLAIM_WARMUP), and
 * counts at its bound, so a rate that grows is followed a factor at a time.
 * Returns the samples to weigh the update by. */
static uint32_t sc_server_claim(sc_server_t *srv, uint32_t worker, uint32_t samples)
{
        sc_claims_t *c = &srv->claims[worker];
        uint32_t v[SC_CLAIM_WINDOW], n = c->n;
        if (n >= SC_CLAIM_WARMUP) {
                memcpy(v, c->v, n * sizeof(uint32_t));
                for (uint32_t i = 1; i < n; i++) { /* n is small: insertion sort */
                        uint32_t x = v[i], j = i;
                        for (; j > 0 && v[j - 1] > x; j--)
                                v[j] = v[j - 1];
                        v[j] = x;
                }
                /* a factor below 1 would shrink honest claims round after round */
                double bound = fmax(1.0, srv->spec.limits.samples_factor) * v[n / 2];
                if (samples > bound)
                        samples = bound >= 1 ? (uint32_t)bound : 1;
        }
        c->v[c->next] = samples;
        c->next = (c->next + 1) % SC_CLAIM_WINDOW;
        if (c->n < SC_CLAIM_WINDOW)
                c->n++;
        return samples;
}

sc_err_t sc_server_limit(sc_server_t *srv, const sc_update_t *u, sc_update_t *out, int *clipped,
                         char *errstr, size_t errstr_size)
{
        const sc_server_limits_t *lim = &srv->spec.limits;
        double norm, scale;
        size_t cnt = u->indices ? u->count : srv->n;

        *out = *u;
        *clipped = 0;
        /* one pass: finiteness, and for an SGD step the magnitude bound too */
        if (sc_server_plain_sgd(srv) ? !isfinite(srv->umax = sc_max_abs(u->values, cnt))
                                     : !sc_all_finite(u->values, cnt))
                for (size_t k = 0; k < cnt; k++)
                        if (!isfinite(u->values[k]))
                                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                                               "shard %u: worker %u seq %llu: value %zu is not "
                                               "finite",
                                               srv->spec.shard, u->worker,
                                               (unsigned long long)u->seq, k);
        if (srv->pol->kind == SC_SYNC_SCADLES && u->samples > (uint32_t)srv->spec.sync.b_max)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "shard %u: worker %u seq %llu claims %u samples, more than b_max "
                               "%d",
                               srv->spec.shard, u->worker, (unsigned long long)u->seq, u->samples,
                               srv->spec.sync.b_max);
        if (srv->claims && u->worker < (uint32_t)srv->spec.sync.n_workers) {
                out->samples = sc_server_claim(srv, u->worker, u->samples);
                *clipped = out->samples < u->samples;
        }
        if (!(lim->max_norm > 0) && !(lim->norm_factor > 0))
                return SC_OK;
        norm = sc_server_update_norm(srv, u);
        if (lim->max_norm > 0 && norm > lim->max_norm && (!lim->clip || !isfinite(norm)))
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "shard %u: worker %u seq %llu has norm %.3g, over max_norm %g",
                               srv->spec.shard, u->worker, (unsigned long long)u->seq, norm,
                               lim->max_norm);
        if (!isfinite(norm)) /* finite values whose squares overflow */
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "shard %u: worker %u seq %llu: its norm overflows", srv->spec.shard,
                               u->worker, (unsigned long long)u->seq);
        double bound = lim->max_norm > 0 ? lim->max_norm : INFINITY;
        double automatic = sc_server_norm_bound(srv);
        bound = automatic < bound ? automatic : bound;
        scale = norm > bound ? bound / norm : 1.0;
        sc_server_norm_push(srv, norm > bound ? bound : norm);
        if (scale >= 1.0)
                return SC_OK;
        for (size_t k = 0; k < cnt; k++) {
                if (u->kind == SC_UPDATE_MODEL) {
                        float p = srv->params[u->indices ? u->indices[k] : k];
                        srv->clipped[k] = p + (float)(scale * ((double)u->values[k] - p));
                } else {
                        srv->clipped[k] = (float)(scale * u->values[k]);
                }
        }
        out->values = srv->clipped;
        *clipped = 1;
        return SC_OK;
}

void sc_server_save(sc_server_t *srv)
{
        size_t n = srv->n;
        memcpy(srv->backup, srv->params, n * sizeof(float));
        if (srv->sgd.velocity)
                memcpy(srv->backup + n, srv->sgd.velocity, n * sizeof(float));
        if (srv->mom)
                memcpy(srv->backup + 2 * n, srv->mom, n * sizeof(float));
}

void sc_server_rollback(sc_server_t *srv)
{
        size_t n = srv->n;
        memcpy(srv->params, srv->backup, n * sizeof(float));
        if (srv->sgd.velocity)
                memcpy(srv->sgd.velocity, srv->backup + n, n * sizeof(float));
        if (srv->mom)
                memcpy(srv->mom, srv->backup + 2 * n, n * sizeof(float));
}

/* Magnitudes below this stay finite through an SGD step's float rounding. */
#define SC_SGD_BOUND 1e37

/* The largest |parameter| a step may leave: limits.max_abs, or (0, off)
 * the largest finite float. */
static double sc_server_pbound(const sc_server_t *srv)
{
        double m = srv->spec.limits.max_abs;
        return m > 0 && m < FLT_MAX ? m : FLT_MAX;
}

/* The float bits of the bound, rounded toward zero: a float within it is
 * within the double the workers compare with. */
static uint32_t sc_server_pbits(const sc_server_t *srv)
{
        double m = sc_server_pbound(srv);
        float f = (float)m;
        if ((double)f > m)
                f = nextafterf(f, 0.0f);
        return sc_f32_bits(f);
}

/* 1 if x, replacing the parameter value was, is not finite, or is beyond
 * the bound whose float bits are bbits and larger in magnitude than was (a parameter already beyond
 * it, restored from before the bound or under a lowered one, may shrink towards it). The bits of a
 * non-negative float order as its magnitude, inf and NaN above every finite
 * one: branch-free. */
static inline uint32_t sc_f32_over(float x, float was, uint32_t bbits)
{
        uint32_t a = sc_f32_bits(x) & 0x7fffffffu, b = sc_f32_bits(was) & 0x7fffffffu;
        return (uint32_t)(a > bbits) & ((uint32_t)(a > b) | (uint32_t)(a >= 0x7f800000u));
}

int sc_server_bounded_step_ok(const sc_server_t *srv, const sc_update_t *u, float lr)
{
        uint32_t bad = 0, bb = sc_server_pbits(srv);
        if (u->indices) {
                for (size_t k = 0; k < u->count; k++) {
                        float p = srv->params[u->indices[k]];
                        bad |= sc_f32_over(p - lr * u->values[k], p, bb);
                }
        } else {
                for (size_t i = 0; i < srv->n; i++)
                        bad |= sc_f32_over(srv->params[i] - lr * u->values[i], srv->params[i], bb);
        }
        return !bad;
}

int sc_server_floats_finite(const float *x, size_t n)
{
        return sc_all_finite(x, n);
}

int sc_server_state_ok(const sc_server_t *srv)
{
        uint32_t bad = 0, bb = sc_server_pbits(srv);
        for (size_t i = 0; i < srv->n; i++) /* backup: the parameters before the step */
                bad |= sc_f32_over(srv->params[i], srv->backup[i], bb);
        return !bad && sc_all_finite(srv->sgd.velocity, sc_server_vel_len(srv)) &&
               (!srv->mom || sc_all_finite(srv->mom, srv->n));
}

int sc_server_is_finite(const sc_server_t *srv)
{
        return sc_all_finite(srv->params, srv->n) &&
               sc_all_finite(srv->sgd.velocity, sc_server_vel_len(srv)) &&
               (!srv->mom || sc_all_finite(srv->mom, srv->n));
}

int sc_server_round_add_ok(const sc_server_t *srv, const sc_update_t *u, float wgt)
{
        uint32_t bad = 0;
        if (!isfinite(wgt))
                return 0;
        if (u->indices) {
                for (size_t k = 0; k < u->count; k++)
                        if (!isfinite(srv->acc[u->indices[k]] + wgt * u->values[k]))
                                return 0;
                return 1;
        }
        for (size_t i = 0; i < srv->n; i++) /* dense: branch-free, vectorized */
                bad |= sc_f32_bad(srv->acc[i] + wgt * u->values[i]);
        return !bad;
}

void sc_server_robust_add(sc_server_t *srv, const sc_update_t *u, double wgt)
{
        float *row = srv->rows + (size_t)u->worker * srv->n;
        srv->row_w[u->worker] = wgt;
        if (u->indices) {
                memset(row, 0, srv->n * sizeof(float));
                for (size_t k = 0; k < u->count; k++)
                        row[u->indices[k]] += u->values[k];
        } else {
                memcpy(row, u->values, srv->n * sizeof(float));
        }
}

/* Sorts x (k small: at most n_workers) ascending. */
static void sc_robust_sort(float *x, int k)
{
        for (int i = 1; i < k; i++) {
                float v = x[i];
                int j = i - 1;
                for (; j >= 0 && x[j] > v; j--)
                        x[j + 1] = x[j];
                x[j + 1] = v;
        }
}

/* The median, or the mean without the t lowest and t highest, of x's k
 * values (x is sorted in place). */
static double sc_robust_stat(float *x, int k, int robust, int t)
{
        double m = 0;
        sc_robust_sort(x, k);
        if (robust == SC_ROBUST_MEDIAN)
                return k % 2 ? x[k / 2] : 0.5 * ((double)x[k / 2 - 1] + x[k / 2]);
        for (int j = t; j < k - t; j++)
                m += x[j];
        return m / (double)(k - 2 * t);
}

void sc_server_robust_acc(sc_server_t *srv)
{
        const sc_server_limits_t *lim = &srv->spec.limits;
        int nw = srv->spec.sync.n_workers, k = 0, t;

        for (int w = 0; w < nw; w++)
                if (srv->got[w] == SC_GOT_CONTRIBUTED)
                        srv->col[k++] = (float)srv->row_w[w];
        if (k == 0)
                return;
        t = (int)(lim->trim * k);
        if (2 * t >= k)
                t = (k - 1) / 2;
        srv->acc_weight = k * sc_robust_stat(srv->col, k, lim->robust, t);
        for (size_t i = 0; i < srv->n; i++) {
                int j = 0;
                for (int w = 0; w < nw; w++)
                        if (srv->got[w] == SC_GOT_CONTRIBUTED)
                                srv->col[j++] = srv->rows[(size_t)w * srv->n + i];
                srv->acc[i] =
                    (float)(sc_robust_stat(srv->col, k, lim->robust, t) * srv->acc_weight);
        }
}

/* Bounds on max |params| and max |velocity| after an SGD step of
 * max |grad| g (sgd_update: g' = grad + wd p, v' = mu v + g',
 * p' = p - lr (v' or g' + mu v')). 1 if the first stays below the
 * parameter bound and the second below SC_SGD_BOUND. */
static int sc_sgd_bound(const sc_server_t *srv, double g, double lr, double *pmax, double *vmax)
{
        double mu = srv->sgd.spec.momentum, wd = srv->sgd.spec.weight_decay;
        double a = g + wd * srv->pmax, b = mu > 0 ? mu * srv->vmax + a : 0;
        *pmax = srv->pmax + lr * (a + b);
        *vmax = mu > 0 ? b : srv->vmax;
        /* slack for the step's float rounding, which the bound leaves out */
        return *pmax < fmin(sc_server_pbound(srv) * (1 - 8 * FLT_EPSILON), SC_SGD_BOUND) &&
               *vmax < SC_SGD_BOUND;
}

int sc_server_sgd_step_bounded(sc_server_t *srv, const sc_update_t *u, float lr)
{
        double g = srv->umax, p, v; /* u passed sc_server_limit(): clipping only shrinks it */
        (void)u;
        if (!(g < SC_SGD_BOUND) || !(lr >= 0))
                return 0;
        if (srv->bounds_ok && sc_sgd_bound(srv, g, lr, &p, &v))
                goto ok;
        /* (re)start from the exact magnitudes */
        srv->pmax = sc_max_abs(srv->params, srv->n);
        srv->vmax = sc_max_abs(srv->sgd.velocity, sc_server_vel_len(srv));
        srv->bounds_ok = srv->pmax < SC_SGD_BOUND && srv->vmax < SC_SGD_BOUND;
        if (!srv->bounds_ok || !sc_sgd_bound(srv, g, lr, &p, &v))
                return 0;
ok:
        srv->pmax = p;
        srv->vmax = v;
        return 1;
}
