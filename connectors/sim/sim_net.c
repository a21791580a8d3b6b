/* sim_net.c — the simulator's virtual clock (an event heap), its in-memory
 * links and the device streams with their buffer policies. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim_impl.h"

/* ---- event queue ---- */

static int sc_sim_ev_before(const sc_sim_event_t *a, const sc_sim_event_t *b)
{
        return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

sc_err_t sc_sim_queue_push(sc_sim_queue_t *q, double t, int type, int dev, void *ptr)
{
        size_t i;

        if (q->n == q->cap) {
                size_t cap = q->cap ? 2 * q->cap : 64;
                sc_sim_event_t *ev = realloc(q->ev, cap * sizeof(*ev));
                if (!ev)
                        return SC_ERR_NOMEM;
                q->ev = ev;
                q->cap = cap;
        }
        i = q->n++;
        q->ev[i] =
            (sc_sim_event_t){.t = t, .seq = q->next_seq++, .type = type, .dev = dev, .ptr = ptr};
        while (i > 0 && sc_sim_ev_before(&q->ev[i], &q->ev[(i - 1) / 2])) {
                sc_sim_event_t tmp = q->ev[i];
                q->ev[i] = q->ev[(i - 1) / 2];
                q->ev[(i - 1) / 2] = tmp;
                i = (i - 1) / 2;
        }
        return SC_OK;
}

int sc_sim_queue_pop(sc_sim_queue_t *q, sc_sim_event_t *ev)
{
        size_t i = 0;

        if (q->n == 0)
                return 0;
        *ev = q->ev[0];
        q->ev[0] = q->ev[--q->n];
        for (;;) {
                size_t l = 2 * i + 1, r = l + 1, m = i;
                if (l < q->n && sc_sim_ev_before(&q->ev[l], &q->ev[m]))
                        m = l;
                if (r < q->n && sc_sim_ev_before(&q->ev[r], &q->ev[m]))
                        m = r;
                if (m == i)
                        break;
                sc_sim_event_t tmp = q->ev[i];
                q->ev[i] = q->ev[m];
                q->ev[m] = tmp;
                i = m;
        }
        return 1;
}

void sc_sim_queue_free(sc_sim_queue_t *q, void (*free_ptr)(int type, void *ptr))
{
        for (size_t i = 0; i < q->n; i++)
                if (free_ptr && q->ev[i].ptr)
                        free_ptr(q->ev[i].type, q->ev[i].ptr);
        free(q->ev);
        memset(q, 0, sizeof(*q));
}

/* ---- links ---- */

double sc_sim_link_send(sc_sim_link_t *link, double now, size_t bytes)
{
        double start = link->free_at > now ? link->free_at : now;
        link->free_at = start + (double)bytes / link->bps;
        link->bytes += bytes;
        return link->free_at + link->latency;
}

/* A value in [lo, hi]: log-uniform (bandwidths span orders of magnitude),
 * or lo when hi is not above it. */
static double sc_sim_draw_log(sc_rng_t *rng, double lo, double hi)
{
        if (!(hi > lo))
                return lo;
        return lo * exp(log(hi / lo) * (double)sc_rng_uniform(rng));
}

void sc_sim_links_draw(const sc_sim_spec_t *spec, sc_rng_t *rng, sc_sim_link_t *up,
                       sc_sim_link_t *down)
{
        double lat = spec->latency;
        if (spec->latency_max > spec->latency)
                lat += (spec->latency_max - spec->latency) * (double)sc_rng_uniform(rng);
        *up = (sc_sim_link_t){.bps = sc_sim_draw_log(rng, spec->up_bps, spec->up_bps_max),
                              .latency = lat};
        *down = (sc_sim_link_t){.bps = sc_sim_draw_log(rng, spec->down_bps, spec->down_bps_max),
                                .latency = lat};
}

/* ---- streams ---- */

/* Arrivals of a constant-rate stream by time t: floor(rate * t). */
static uint64_t sc_sim_arrivals(double rate, double t)
{
        return (uint64_t)floor(rate * t + 1e-9);
}

void sc_sim_stream_advance(sc_sim_stream_t *s, double t)
{
        uint64_t a;

        if (t <= s->last_t)
                return;
        a = sc_sim_arrivals(s->rate, t) - sc_sim_arrivals(s->rate, s->last_t);
        s->last_t = t;
        s->arrived += a;
        s->buffered += a;
        if (s->truncation) {
                uint64_t keep = (uint64_t)ceil(s->rate * s->window);
                /* A window smaller than the batch would drop the samples the
                 * device waits for and stall it forever (a slow stream under
                 * b_min): keep at least one batch. */
                if (keep < s->min_keep)
                        keep = s->min_keep;
                if (keep < 1)
                        keep = 1;
                if (s->buffered > keep) {
                        s->dropped += s->buffered - keep;
                        s->buffered = keep;
                }
        }
        if (s->buffered > s->peak)
                s->peak = s->buffered;
}

double sc_sim_stream_ready_at(const sc_sim_stream_t *s, double now, uint64_t want)
{
        uint64_t need, target;
        double t;

        if (s->buffered >= want)
                return now;
        need = want - s->buffered;
        target = sc_sim_arrivals(s->rate, s->last_t) + need;
        t = (double)target / s->rate;
        /* Make sure floor(rate * t) really reaches target. */
        while (sc_sim_arrivals(s->rate, t) < target)
                t = nextafter(t, INFINITY) + 1e-12;
        return t > now ? t : now;
}

void sc_sim_stream_take(sc_sim_stream_t *s, sc_rng_t *rng, size_t n, uint32_t *idx)
{
        for (size_t k = 0; k < n; k++)
                idx[k] = s->pool[sc_rng_below(rng, (uint32_t)s->pool_n)];
        s->buffered -= n;
}

/* One draw of the rate distribution of spec->rates (uniform for S1 / S2,
 * normal for S10 / S20), unbounded below. */
static double sc_sim_draw_rate_once(const sc_sim_spec_t *spec, int i, sc_rng_t *rng)
{
        double r;
        switch (spec->rates) {
        case SC_SIM_RATES_LIST:
                r = spec->rate_list[i % spec->n_rates];
                break;
        case SC_SIM_RATES_S1: /* uniform with mean m, sd s: m +- s sqrt(3) */
                r = 38 + 24 * sqrt(3.0) * (2 * sc_rng_uniform(rng) - 1);
                break;
        case SC_SIM_RATES_S2:
                r = 300 + 112 * sqrt(3.0) * (2 * sc_rng_uniform(rng) - 1);
                break;
        case SC_SIM_RATES_S10:
                r = 64 + 24 * sc_rng_normal(rng);
                break;
        case SC_SIM_RATES_S20:
                r = 256 + 28 * sc_rng_normal(rng);
                break;
        case SC_SIM_RATES_CONSTANT:
        default:
                r = spec->rate;
                break;
        }
        return r;
}

/* The S sets are redrawn while below min_rate (the distribution truncated
 * at min_rate, not a point mass of streams at min_rate); configured rates
 * and the last of SC_SIM_RATE_DRAWS draws are clamped. */
#define SC_SIM_RATE_DRAWS 1000

double sc_sim_draw_rate(const sc_sim_spec_t *spec, int i, sc_rng_t *rng)
{
        int drawn = spec->rates == SC_SIM_RATES_S1 || spec->rates == SC_SIM_RATES_S2 ||
                    spec->rates == SC_SIM_RATES_S10 || spec->rates == SC_SIM_RATES_S20;
        double r = sc_sim_draw_rate_once(spec, i, rng);
        for (int k = 1; drawn && r < spec->min_rate && k < SC_SIM_RATE_DRAWS; k++)
                r = sc_sim_draw_rate_once(spec, i, rng);
        return r < spec->min_rate ? spec->min_rate : r;
}
