/* mix.c — proportional allocation across streams, the shuffle buffer and the
 * injection pools (items, and the samples themselves). */
#include "sc_mix.h"

#include "sc_alloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Source i's weight: its availability, or its weight when finite and > 0
 * (else 0). */
static double sc_mix_w(const double *weights, const size_t *avail, int use_avail, int i)
{
        if (use_avail)
                return (double)avail[i];
        return weights[i] > 0 && isfinite(weights[i]) ? weights[i] : 0;
}

/* Gives left to the open sources in proportion to their weights (none of
 * whose shares exceeds its room): the whole part of each share, then one
 * more to the largest remainders, then any rounding left to sources with
 * room. */
static void sc_mix_remainder(const double *weights, const size_t *avail, int use_avail, int k,
                             size_t left, double wsum, size_t *out)
{
        size_t given = 0;
        double frac[SC_MIX_MAX_SOURCES];
        size_t base[SC_MIX_MAX_SOURCES];
        for (int i = 0; i < k; i++) {
                frac[i] = -1;
                base[i] = 0;
                if (out[i] >= avail[i])
                        continue;
                double share = (double)left * sc_mix_w(weights, avail, use_avail, i) / wsum;
                base[i] = (size_t)floor(share);
                frac[i] = share - floor(share);
                given += base[i];
        }
        if (given > left) /* rounding guard */
                given = left;
        size_t rest = left - given;
        for (int i = 0; i < k; i++)
                out[i] += base[i];
        while (rest > 0) {
                int best = -1;
                for (int i = 0; i < k; i++)
                        if (out[i] < avail[i] && frac[i] >= 0 && (best < 0 || frac[i] > frac[best]))
                                best = i;
                if (best < 0)
                        break;
                out[best]++;
                frac[best] = -1;
                rest--;
        }
        /* Anything left (rounding) goes to sources with room. */
        for (int i = 0; i < k && rest > 0; i++) {
                size_t room = avail[i] - out[i];
                size_t give = room < rest ? room : rest;
                out[i] += give;
                rest -= give;
        }
}

size_t sc_mix_allocate(const double *weights, const size_t *avail, int k, size_t total, size_t *out)
{
        size_t sum_avail = 0, left;
        int use_avail = 1;

        if (k <= 0 || k > SC_MIX_MAX_SOURCES) {
                for (int i = 0; i < k; i++)
                        out[i] = 0;
                return 0;
        }

        for (int i = 0; i < k; i++) {
                out[i] = 0;
                sum_avail += avail[i];
                if (avail[i] > 0 && weights[i] > 0 && isfinite(weights[i]))
                        use_avail = 0;
        }
        if (total > sum_avail)
                total = sum_avail;
        left = total;
        /* Each pass either fills every open source whose share exceeds what
         * it has, or distributes the rest by largest remainder and stops. */
        while (left > 0) {
                double wsum = 0;
                int capped = 0;
                for (int i = 0; i < k; i++)
                        if (out[i] < avail[i])
                                wsum += sc_mix_w(weights, avail, use_avail, i);
                if (wsum <= 0) {
                        /* Only zero-weight sources have room: fill them in order. */
                        for (int i = 0; i < k && left > 0; i++) {
                                size_t room = avail[i] - out[i];
                                size_t give = room < left ? room : left;
                                out[i] += give;
                                left -= give;
                        }
                        break;
                }
                for (int i = 0; i < k; i++) {
                        if (out[i] >= avail[i])
                                continue;
                        double share = (double)left * sc_mix_w(weights, avail, use_avail, i) / wsum;
                        if (share >= (double)(avail[i] - out[i])) {
                                left -= avail[i] - out[i];
                                out[i] = avail[i];
                                capped = 1;
                        }
                }
                if (capped)
                        continue;
                sc_mix_remainder(weights, avail, use_avail, k, left, wsum, out);
                left = 0;
        }
        size_t sum = 0;
        for (int i = 0; i < k; i++)
                sum += out[i];
        return sum;
}

/* The pool holds samples by reference: each entry a slot lent by its stream
 * (sc_stream_lend), read once, when drawn, into the batch. */
struct sc_mix_pool_s {
        size_t cap, count, numel;
        sc_stream_t **src;     /* (cap) the stream that lent the slot */
        uint32_t *slots;       /* (cap) */
        int32_t *labels;       /* (cap) */
        sc_stream_ref_t *refs; /* (cap) */
        int *streams;          /* (cap) the caller's stream index */
};

sc_err_t sc_mix_pool_new(sc_mix_pool_t **poolp, size_t cap, size_t numel)
{
        sc_mix_pool_t *p;

        *poolp = NULL;
        if (cap == 0 || numel == 0 || cap > UINT32_MAX)
                return SC_ERR_INVAL;
        p = sc_calloc(1, sizeof(*p));
        if (!p)
                return SC_ERR_NOMEM;
        p->cap = cap;
        p->numel = numel;
        p->src = sc_malloc(cap * sizeof(*p->src));
        p->slots = sc_malloc(cap * sizeof(*p->slots));
        p->labels = sc_malloc(cap * sizeof(*p->labels));
        p->refs = sc_malloc(cap * sizeof(*p->refs));
        p->streams = sc_malloc(cap * sizeof(*p->streams));
        if (!p->src || !p->slots || !p->labels || !p->refs || !p->streams) {
                sc_mix_pool_destroy(p);
                return SC_ERR_NOMEM;
        }
        *poolp = p;
        return SC_OK;
}

void sc_mix_pool_destroy(sc_mix_pool_t *pool)
{
        if (!pool)
                return;
        sc_free(pool->src);
        sc_free(pool->slots);
        sc_free(pool->labels);
        sc_free(pool->refs);
        sc_free(pool->streams);
        sc_free(pool);
}

size_t sc_mix_pool_count(const sc_mix_pool_t *pool)
{
        return pool->count;
}

size_t sc_mix_pool_cap(const sc_mix_pool_t *pool)
{
        return pool->cap;
}

size_t sc_mix_pool_fill(sc_mix_pool_t *pool, sc_stream_t *stream, int index, size_t n, double t)
{
        size_t room = pool->cap - pool->count, c = pool->count;
        if (n > room)
                n = room;
        n = sc_stream_lend(stream, n, pool->slots + c, pool->labels + c, pool->refs + c, t);
        for (size_t i = 0; i < n; i++) {
                pool->src[c + i] = stream;
                pool->streams[c + i] = index;
        }
        pool->count += n;
        return n;
}

size_t sc_mix_pool_drop_revoked(sc_mix_pool_t *pool)
{
        size_t kept = 0, dropped = 0;
        for (size_t j = 0; j < pool->count; j++) {
                if (sc_stream_ref_revoked(pool->src[j], &pool->refs[j])) {
                        sc_stream_unlend(pool->src[j], pool->slots[j], &pool->refs[j]);
                        dropped++;
                        continue;
                }
                pool->src[kept] = pool->src[j];
                pool->slots[kept] = pool->slots[j];
                pool->labels[kept] = pool->labels[j];
                pool->refs[kept] = pool->refs[j];
                pool->streams[kept] = pool->streams[j];
                kept++;
        }
        pool->count = kept;
        return dropped;
}

void sc_mix_pool_draw(sc_mix_pool_t *pool, sc_rng_t *rng, size_t n, float *x, int32_t *labels,
                      sc_stream_ref_t *refs, int *streams)
{
        const size_t numel = pool->numel;
        if (n > pool->count)
                n = pool->count;
        for (size_t k = 0; k < n; k++) {
                size_t j = sc_rng_below(rng, (uint32_t)pool->count);
                size_t last = pool->count - 1;
                memcpy(x + k * numel, sc_stream_row(pool->src[j], pool->slots[j]),
                       numel * sizeof(float));
                sc_stream_release(pool->src[j], pool->slots[j]);
                labels[k] = pool->labels[j];
                refs[k] = pool->refs[j];
                streams[k] = pool->streams[j];
                if (j != last) {
                        pool->src[j] = pool->src[last];
                        pool->slots[j] = pool->slots[last];
                        pool->labels[j] = pool->labels[last];
                        pool->refs[j] = pool->refs[last];
                        pool->streams[j] = pool->streams[last];
                }
                pool->count--;
        }
}

/* ---- injection pool ---- */

struct sc_mix_inject_s {
        int sources;
        size_t cap;      /* per source */
        uint32_t *items; /* (sources, cap) rings */
        size_t *head, *n;
        int *elig; /* (sources) scratch of the draw */
        size_t total;
};

sc_err_t sc_mix_inject_new(sc_mix_inject_t **poolp, int sources, size_t cap_per_source)
{
        sc_mix_inject_t *p;

        *poolp = NULL;
        if (sources <= 0 || sources > SC_MIX_INJECT_MAX_SOURCES || cap_per_source == 0 ||
            cap_per_source > SIZE_MAX / sizeof(uint32_t) / (size_t)sources)
                return SC_ERR_INVAL;
        p = sc_calloc(1, sizeof(*p));
        if (!p)
                return SC_ERR_NOMEM;
        p->sources = sources;
        p->cap = cap_per_source;
        p->items = sc_malloc((size_t)sources * cap_per_source * sizeof(*p->items));
        p->head = sc_calloc((size_t)sources, sizeof(*p->head));
        p->n = sc_calloc((size_t)sources, sizeof(*p->n));
        p->elig = sc_calloc((size_t)sources, sizeof(*p->elig));
        if (!p->items || !p->head || !p->n || !p->elig) {
                sc_mix_inject_destroy(p);
                return SC_ERR_NOMEM;
        }
        *poolp = p;
        return SC_OK;
}

void sc_mix_inject_destroy(sc_mix_inject_t *pool)
{
        if (!pool)
                return;
        sc_free(pool->items);
        sc_free(pool->head);
        sc_free(pool->n);
        sc_free(pool->elig);
        sc_free(pool);
}

void sc_mix_inject_put(sc_mix_inject_t *pool, int source, uint32_t item)
{
        if (source < 0 || source >= pool->sources)
                return;
        size_t s = (size_t)source, at;
        if (pool->n[s] == pool->cap) { /* full: replace the oldest */
                at = pool->head[s];
                pool->head[s] = (pool->head[s] + 1) % pool->cap;
        } else {
                at = (pool->head[s] + pool->n[s]) % pool->cap;
                pool->n[s]++;
                pool->total++;
        }
        pool->items[s * pool->cap + at] = item;
}

size_t sc_mix_inject_count(const sc_mix_inject_t *pool, int source)
{
        if (source == -1)
                return pool->total;
        if (source < 0 || source >= pool->sources)
                return 0;
        return pool->n[source];
}

/* A uniformly chosen item of source s (n[s] > 0). */
static uint32_t sc_mix_inject_pick(sc_mix_inject_t *pool, sc_rng_t *rng, int s)
{
        size_t k = sc_rng_below(rng, (uint32_t)pool->n[s]);
        return pool->items[(size_t)s * pool->cap + (pool->head[s] + k) % pool->cap];
}

size_t sc_mix_inject_draw(sc_mix_inject_t *pool, sc_rng_t *rng, sc_mix_draw_t how, int not_from,
                          size_t n, uint32_t *items, int *sources)
{
        int *elig = pool->elig, k = 0;
        size_t foreign = 0, got = 0;

        for (int s = 0; s < pool->sources; s++)
                if (s != not_from && pool->n[s] > 0) {
                        elig[k++] = s;
                        foreign += pool->n[s];
                }
        if (k == 0 || n == 0)
                return 0;
        if (how == SC_MIX_DRAW_POOLED) {
                for (; got < n; got++) {
                        size_t r = sc_rng_below(rng, (uint32_t)foreign);
                        int j = 0;
                        while (r >= pool->n[elig[j]])
                                r -= pool->n[elig[j++]];
                        items[got] = pool->items[(size_t)elig[j] * pool->cap +
                                                 (pool->head[elig[j]] + r) % pool->cap];
                        if (sources)
                                sources[got] = elig[j];
                }
                return got;
        }
        /* Balanced: n / k from every source, the remainder from n % k sources
         * chosen at random (a partial Fisher-Yates shuffle puts them first). */
        size_t q = n / (size_t)k, rem = n % (size_t)k;
        for (size_t i = 0; i < rem; i++) {
                size_t j = i + sc_rng_below(rng, (uint32_t)((size_t)k - i));
                int t = elig[i];
                elig[i] = elig[j];
                elig[j] = t;
        }
        for (int i = 0; i < k; i++) {
                size_t c = q + ((size_t)i < rem ? 1 : 0);
                for (size_t m = 0; m < c; m++, got++) {
                        items[got] = sc_mix_inject_pick(pool, rng, elig[i]);
                        if (sources)
                                sources[got] = elig[i];
                }
        }
        return got;
}

struct sc_mix_shared_s {
        sc_mix_inject_t *inject; /* items are slots of x / labels */
        size_t cap, numel, max_draw;
        size_t *next; /* (sources) puts so far */
        float *x;     /* (sources * cap, numel) */
        int32_t *labels;
        uint32_t *items; /* (max_draw) scratch of the draw */
};

sc_err_t sc_mix_shared_new(sc_mix_shared_t **poolp, int sources, size_t cap_per_source,
                           size_t numel, size_t max_draw)
{
        sc_mix_shared_t *p;
        sc_err_t err;

        *poolp = NULL;
        if (sources <= 0 || sources > SC_MIX_INJECT_MAX_SOURCES || cap_per_source == 0 ||
            numel == 0 || max_draw == 0 || cap_per_source > UINT32_MAX / (size_t)sources ||
            (size_t)sources * cap_per_source > SIZE_MAX / sizeof(float) / numel)
                return SC_ERR_INVAL;
        p = sc_calloc(1, sizeof(*p));
        if (!p)
                return SC_ERR_NOMEM;
        p->cap = cap_per_source;
        p->numel = numel;
        p->max_draw = max_draw;
        size_t slots = (size_t)sources * cap_per_source;
        if ((err = sc_mix_inject_new(&p->inject, sources, cap_per_source))) {
                sc_free(p);
                return err;
        }
        p->next = sc_calloc((size_t)sources, sizeof(*p->next));
        p->x = sc_malloc(slots * numel * sizeof(float));
        p->labels = sc_malloc(slots * sizeof(int32_t));
        p->items = sc_malloc(max_draw * sizeof(uint32_t));
        if (!p->next || !p->x || !p->labels || !p->items) {
                sc_mix_shared_destroy(p);
                return SC_ERR_NOMEM;
        }
        *poolp = p;
        return SC_OK;
}

void sc_mix_shared_destroy(sc_mix_shared_t *pool)
{
        if (!pool)
                return;
        sc_mix_inject_destroy(pool->inject);
        sc_free(pool->next);
        sc_free(pool->x);
        sc_free(pool->labels);
        sc_free(pool->items);
        sc_free(pool);
}

float *sc_mix_shared_put(sc_mix_shared_t *pool, int source, int32_t label)
{
        if (source < 0 || source >= pool->inject->sources)
                return NULL;
        /* The slots of a source are written in turn, so a full ring's oldest
         * item (the one sc_mix_inject_put replaces) is the slot rewritten. */
        size_t s = (size_t)source, slot = s * pool->cap + pool->next[s]++ % pool->cap;
        sc_mix_inject_put(pool->inject, source, (uint32_t)slot);
        pool->labels[slot] = label;
        return pool->x + slot * pool->numel;
}

size_t sc_mix_shared_count(const sc_mix_shared_t *pool, int source)
{
        return sc_mix_inject_count(pool->inject, source);
}

size_t sc_mix_shared_draw(sc_mix_shared_t *pool, sc_rng_t *rng, sc_mix_draw_t how, int not_from,
                          size_t n, float *x, int32_t *labels, int *sources)
{
        if (n > pool->max_draw)
                n = pool->max_draw;
        size_t got = sc_mix_inject_draw(pool->inject, rng, how, not_from, n, pool->items, sources);
        for (size_t i = 0; i < got; i++) {
                size_t slot = pool->items[i];
                memcpy(x + i * pool->numel, pool->x + slot * pool->numel,
                       pool->numel * sizeof(float));
                labels[i] = pool->labels[slot];
        }
        return got;
}
