/* adsp_tuner.c — ADSP's online search of the commit rate DeltaC: each
 * candidate runs for one check period Gamma, the loss curve is fitted with
 * l(t) = 1/(a^2 t + b) + c0 and the rate grows while the candidate is at least
 * as fast as the best so far; the search restarts when the loss rises by a set
 * fraction between checks, and periodically. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sc_sync.h"

#define SC_LOSSFIT_GRID 64
#define SC_LOSSFIT_REFINE 80

/* Linear least squares of y = a2 t + b with y = 1/(l - c0); returns the
 * squared error of the fitted curve in loss space (INFINITY if unusable). */
static double sc_lossfit_at(const double *t, const double *l, size_t n, double c0,
                            sc_lossfit_t *fit)
{
        double st = 0, sy = 0, stt = 0, sty = 0, den, sse = 0;

        for (size_t k = 0; k < n; k++) {
                double y = 1.0 / (l[k] - c0);
                st += t[k];
                sy += y;
                stt += t[k] * t[k];
                sty += t[k] * y;
        }
        den = (double)n * stt - st * st;
        if (!(fabs(den) > 0))
                return INFINITY;
        fit->a2 = ((double)n * sty - st * sy) / den;
        fit->b = (sy - fit->a2 * st) / (double)n;
        fit->c0 = c0;
        for (size_t k = 0; k < n; k++) {
                double q = fit->a2 * t[k] + fit->b;
                if (!(q > 0))
                        return INFINITY;
                sse += (1.0 / q + c0 - l[k]) * (1.0 / q + c0 - l[k]);
        }
        fit->sse = sse;
        return isfinite(sse) ? sse : INFINITY;
}

/* The asymptote c0 with the least sse(c0, ctx) below the smallest loss lmin:
 * a grid from 0 (or, for negative losses, below lmin by the losses' range + 1),
 * refined by golden section around the best grid point. Returns 0 if no grid
 * point gives a finite error. */
static int sc_lossfit_c0(double lmin, double lmax, double (*sse)(double c0, const void *ctx),
                         const void *ctx, double *c0p)
{
        double lo = lmin > 0 ? 0.0 : lmin - (lmax - lmin) - 1.0;
        double step = (lmin - lo) / SC_LOSSFIT_GRID, best = INFINITY, c0 = 0, a, b;

        if (!(step > 0))
                return 0;
        for (int g = 0; g < SC_LOSSFIT_GRID; g++) {
                double e = sse(lo + step * g, ctx);
                if (e < best) {
                        best = e;
                        c0 = lo + step * g;
                }
        }
        if (!isfinite(best))
                return 0;
        a = c0 - step > lo ? c0 - step : lo;
        b = c0 + step < lmin ? c0 + step : lmin - step * 1e-6;
        for (int it = 0; it < SC_LOSSFIT_REFINE; it++) {
                double m1 = b - (b - a) * 0.6180339887498949;
                double m2 = a + (b - a) * 0.6180339887498949;
                if (sse(m1, ctx) <= sse(m2, ctx))
                        b = m2;
                else
                        a = m1;
        }
        if (sse(0.5 * (a + b), ctx) < best)
                c0 = 0.5 * (a + b);
        *c0p = c0;
        return 1;
}

typedef struct {
        const double *t, *l;
        size_t n;
} sc_lossfit_pts_t;

static double sc_lossfit_pts_sse(double c0, const void *ctx)
{
        const sc_lossfit_pts_t *p = ctx;
        sc_lossfit_t tmp;
        return sc_lossfit_at(p->t, p->l, p->n, c0, &tmp);
}

sc_err_t sc_lossfit_fit(const double *t, const double *loss, size_t n, sc_lossfit_t *fit)
{
        double lmin = INFINITY, lmax = -INFINITY, c0;
        sc_lossfit_pts_t pts = {t, loss, n};

        if (n < 3)
                return SC_ERR_INVAL;
        for (size_t k = 0; k < n; k++) {
                if (!isfinite(t[k]) || !isfinite(loss[k]))
                        return SC_ERR_INVAL;
                lmin = loss[k] < lmin ? loss[k] : lmin;
                lmax = loss[k] > lmax ? loss[k] : lmax;
        }
        if (!sc_lossfit_c0(lmin, lmax, sc_lossfit_pts_sse, &pts, &c0))
                return SC_ERR_INVAL;
        sc_lossfit_at(t, loss, n, c0, fit);
        return SC_OK;
}

double sc_lossfit_eval(const sc_lossfit_t *fit, double t)
{
        return 1.0 / (fit->a2 * t + fit->b) + fit->c0;
}

double sc_lossfit_time_to(const sc_lossfit_t *fit, double target)
{
        if (!(target > fit->c0) || !(fit->a2 > 0))
                return INFINITY;
        return (1.0 / (target - fit->c0) - fit->b) / fit->a2;
}

/* ---- the tuner ---------------------------------------------------------- */

/* Candidates are compared by a2, the speed of the fitted curve
 * l(t) = 1/(a2 t + b) + c0, with one asymptote c0 shared by all candidates of
 * a search: under the curve model a2 is what a commit rate changes, and it does
 * not depend on where on the curve a period started, so a later candidate (at
 * a lower loss) is not penalized for the natural slowdown, the first one is
 * not favoured by the steep start, and the ranking needs no target below c0
 * (time from any common loss to a target and the descent rate at a common loss
 * both order as a2 does). The first warmup seconds are not judged; the first
 * quarter of each period (the devices moving to the new rate) is left out of
 * its fit; each period's losses are averaged into SC_ADSP_BINS time bins. */
#define SC_ADSP_BINS 8
#define SC_ADSP_SETTLE 0.25
#define SC_ADSP_MAX_PERIODS 64

struct sc_adsp_tuner_s {
        sc_adsp_tuner_spec_t spec;
        int searching, warm; /* warm: the first period is a warm-up */
        double c, best_c, last_reward;
        int best_g; /* the best candidate's period in this search; < 0 = none */
        double period_start, last_search;
        double sum, prev_mean; /* loss sum of this period; mean of the previous (< 0 = none) */
        size_t cnt;
        double bin_t[SC_ADSP_BINS], bin_l[SC_ADSP_BINS]; /* this period's sums per bin */
        size_t bin_n[SC_ADSP_BINS];
        /* This search's binned points: time, mean loss, period; the periods' rates. */
        double pt[SC_ADSP_MAX_PERIODS * SC_ADSP_BINS], pl[SC_ADSP_MAX_PERIODS * SC_ADSP_BINS];
        int pg[SC_ADSP_MAX_PERIODS * SC_ADSP_BINS];
        size_t np;
        int nper;
};

sc_err_t sc_adsp_tuner_new(sc_adsp_tuner_t **tp, const sc_adsp_tuner_spec_t *spec, double now,
                           char *errstr, size_t errstr_size)
{
        sc_adsp_tuner_t *tu;

        *tp = NULL;
        if (!(spec->gamma > 0) || !(spec->c_init > 0) || !(spec->c_step > 0) ||
            spec->c_max < spec->c_init || spec->rise < 0 || spec->warmup < 0 ||
            spec->research_every < 0)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "adsp tuner: need gamma > 0, 0 < c_init <= c_max, c_step > 0, "
                               "rise, warmup, research_every >= 0");
        if (!(tu = calloc(1, sizeof(*tu))))
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "adsp tuner: out of memory");
        tu->spec = *spec;
        tu->searching = 1;
        tu->warm = spec->warmup > 0;
        tu->c = spec->c_init;
        tu->best_c = spec->c_init;
        tu->best_g = -1;
        tu->period_start = now;
        tu->last_search = now;
        tu->prev_mean = -1;
        *tp = tu;
        return SC_OK;
}

void sc_adsp_tuner_destroy(sc_adsp_tuner_t *tu)
{
        free(tu);
}

void sc_adsp_tuner_observe(sc_adsp_tuner_t *tu, double t, double loss)
{
        double len = tu->warm ? tu->spec.warmup : tu->spec.gamma;
        double from = tu->period_start + SC_ADSP_SETTLE * len;
        double x;
        int k;

        if (!isfinite(t) || !isfinite(loss))
                return;
        tu->sum += loss;
        tu->cnt++;
        if (t < from)
                return;
        /* Clamped before the conversion: an observation long after the
         * period's end (no tick in between) falls in the last bin. */
        x = (t - from) / ((1.0 - SC_ADSP_SETTLE) * len) * SC_ADSP_BINS;
        k = x < SC_ADSP_BINS - 1 ? (int)x : SC_ADSP_BINS - 1;
        tu->bin_t[k] += t;
        tu->bin_l[k] += loss;
        tu->bin_n[k]++;
}

/* Line y = a2 t + b through the points of period g with y = 1/(l - c0)
 * (a2 = b = 0 if fewer than 2; *np: how many); returns its squared error in
 * loss space (INFINITY where the curve is not defined). */
static double sc_adsp_tuner_line(const sc_adsp_tuner_t *tu, int g, double c0, double *a2, double *b,
                                 double *se, int *np)
{
        double st = 0, sy = 0, stt = 0, sty = 0, n = 0, den, sse = 0, ry = 0;

        *a2 = *b = *se = 0;
        *np = 0;
        for (size_t k = 0; k < tu->np; k++) {
                double y;
                if (tu->pg[k] != g)
                        continue;
                y = 1.0 / (tu->pl[k] - c0);
                st += tu->pt[k];
                sy += y;
                stt += tu->pt[k] * tu->pt[k];
                sty += tu->pt[k] * y;
                n++;
        }
        den = n * stt - st * st;
        if (n < 2 || !(fabs(den) > 0))
                return 0;
        *np = (int)n;
        *a2 = (n * sty - st * sy) / den;
        *b = (sy - *a2 * st) / n;
        for (size_t k = 0; k < tu->np; k++) {
                double q = *a2 * tu->pt[k] + *b;
                if (tu->pg[k] != g)
                        continue;
                if (!(q > 0))
                        return INFINITY;
                sse += (1.0 / q + c0 - tu->pl[k]) * (1.0 / q + c0 - tu->pl[k]);
                ry += (1.0 / (tu->pl[k] - c0) - q) * (1.0 / (tu->pl[k] - c0) - q);
        }
        if (n > 2) /* standard error of the slope */
                *se = sqrt(ry / (n - 2) / (stt - st * st / n));
        return sse;
}

/* Squared error of the search's points with one asymptote c0 and a line per
 * period. */
static double sc_adsp_tuner_sse(const sc_adsp_tuner_t *tu, double c0)
{
        double sse = 0, a2, b, se;
        int n;
        for (int g = 0; g < tu->nper; g++)
                sse += sc_adsp_tuner_line(tu, g, c0, &a2, &b, &se, &n);
        return isfinite(sse) ? sse : INFINITY;
}

static double sc_adsp_tuner_sse_cb(double c0, const void *ctx)
{
        return sc_adsp_tuner_sse(ctx, c0);
}

/* The shared asymptote of the search's binned points (sc_lossfit_c0).
 * Returns 0 if there are not enough points. */
static int sc_adsp_tuner_c0(const sc_adsp_tuner_t *tu, double *c0p)
{
        double lmin = INFINITY, lmax = -INFINITY;

        if (tu->np < 3)
                return 0;
        for (size_t k = 0; k < tu->np; k++) {
                lmin = tu->pl[k] < lmin ? tu->pl[k] : lmin;
                lmax = tu->pl[k] > lmax ? tu->pl[k] : lmax;
        }
        return sc_lossfit_c0(lmin, lmax, sc_adsp_tuner_sse_cb, tu, c0p);
}

/* Judges the period that just ended (its rate tu->c): settles on the best
 * so far if the candidate is slower by more than one standard error of the
 * difference of their fitted speeds, else moves on to the next candidate (a
 * difference within the noise is a tie: the best stays the faster of the
 * two); after c_max it settles on the best. A period with fewer than two
 * binned points has no fitted speed: it is a tie too (the search moves on),
 * and it becomes the best only if the best has none either. */
static void sc_adsp_tuner_judge(sc_adsp_tuner_t *tu)
{
        sc_lossfit_t fit = {0};
        int g = tu->nper, faster = 1;

        for (int k = 0; k < SC_ADSP_BINS; k++)
                if (tu->bin_n[k]) {
                        tu->pt[tu->np] = tu->bin_t[k] / (double)tu->bin_n[k];
                        tu->pl[tu->np] = tu->bin_l[k] / (double)tu->bin_n[k];
                        tu->pg[tu->np++] = g;
                }
        tu->nper++;
        tu->last_reward = 0;
        /* Too few points judge nothing: a tie. */
        if (tu->best_g >= 0 && sc_adsp_tuner_c0(tu, &fit.c0)) {
                double level = tu->pl[tu->np - 1], a2, best_a2, b, se, best_se;
                int n, best_n;
                sc_adsp_tuner_line(tu, g, fit.c0, &a2, &b, &se, &n);
                sc_adsp_tuner_line(tu, tu->best_g, fit.c0, &best_a2, &b, &best_se, &best_n);
                if (n < 2 || best_n < 2) {
                        if (n >= 2) {
                                tu->best_g = g;
                                tu->best_c = tu->c;
                        }
                        goto next;
                }
                fit.a2 = a2;
                fit.b = 1.0 / (level - fit.c0); /* the curve from now: level > c0 */
                double tt = sc_lossfit_time_to(&fit, tu->spec.target_loss);
                tu->last_reward = isfinite(tt) && tt > 0 ? 1.0 / tt : 0;
                if (a2 + sqrt(se * se + best_se * best_se) < best_a2) {
                        tu->c = tu->best_c;
                        tu->searching = 0;
                        return;
                }
                faster = a2 >= best_a2;
        }
        if (faster) {
                tu->best_g = g;
                tu->best_c = tu->c;
        }
next:
        if (tu->c + tu->spec.c_step <= tu->spec.c_max * (1 + 1e-12) &&
            tu->nper < SC_ADSP_MAX_PERIODS) {
                tu->c += tu->spec.c_step;
        } else {
                tu->c = tu->best_c;
                tu->searching = 0;
        }
}

/* A new search from one step below the rate in use, so it can move either way. */
static void sc_adsp_tuner_restart(sc_adsp_tuner_t *tu, double now)
{
        double c = tu->best_c - tu->spec.c_step;
        tu->searching = 1;
        tu->c = c > tu->spec.c_init ? c : tu->spec.c_init;
        tu->best_g = -1;
        tu->np = 0;
        tu->nper = 0;
        tu->last_search = now;
}

double sc_adsp_tuner_tick(sc_adsp_tuner_t *tu, double now)
{
        double mean, len = tu->warm ? tu->spec.warmup : tu->spec.gamma;

        if (now - tu->period_start < len)
                return tu->c;
        mean = tu->cnt ? tu->sum / (double)tu->cnt : -1;
        if (tu->warm) {
                tu->warm = 0;
        } else if (tu->searching) {
                sc_adsp_tuner_judge(tu);
                if (!tu->searching) {
                        tu->np = 0;
                        tu->nper = 0;
                        tu->last_search = now;
                }
        } else if ((tu->prev_mean > 0 && mean >= 0 &&
                    mean >= tu->prev_mean * (1.0 + tu->spec.rise)) ||
                   (tu->spec.research_every > 0 &&
                    now - tu->last_search >= tu->spec.research_every)) {
                sc_adsp_tuner_restart(tu, now);
        }
        tu->prev_mean = mean;
        tu->sum = 0;
        tu->cnt = 0;
        memset(tu->bin_t, 0, sizeof(tu->bin_t));
        memset(tu->bin_l, 0, sizeof(tu->bin_l));
        memset(tu->bin_n, 0, sizeof(tu->bin_n));
        tu->period_start = now;
        return tu->c;
}

int sc_adsp_tuner_searching(const sc_adsp_tuner_t *tu)
{
        return tu->searching;
}

double sc_adsp_tuner_last_reward(const sc_adsp_tuner_t *tu)
{
        return tu->last_reward;
}
