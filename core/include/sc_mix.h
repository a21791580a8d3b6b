/* sc_mix.h — local IID mixing across a worker's streams: proportional
 * allocation of a draw across streams, and a bounded shuffle buffer from
 * which batches are drawn at random (seeded), so a batch is neither a run of
 * one topic nor one burst of a label. Used by the batcher (sc_batch.h). */
#ifndef SC_MIX_H
#define SC_MIX_H

#include <stddef.h>
#include <stdint.h>

#include "sc_err.h"
#include "sc_rng.h"
#include "sc_stream.h"

#define SC_MIX_MAX_SOURCES 256

/* Splits min(total, sum avail) across k sources in proportion to weights
 * (samples/s, >= 0), never giving source i more than avail[i]; what a capped
 * source cannot take goes to the others in proportion. Rounding by largest
 * remainder (ties to the lower index); if no source with samples has a
 * positive weight, the split is in proportion to avail. Writes out[k] and
 * returns the sum. Deterministic. 0 < k <= SC_MIX_MAX_SOURCES (else 0 for all). */
size_t sc_mix_allocate(const double *weights, const size_t *avail, int k, size_t total,
                       size_t *out);

typedef struct sc_mix_pool_s sc_mix_pool_t;

/* A shuffle buffer of up to cap samples of numel floats, each with its
 * label, ref and source stream index. It holds them by reference, as slots
 * lent by their streams (sc_stream_lend): every stream it is filled from
 * must have reserved cap (sc_stream_reserve), and outlive the samples it
 * lent. Allocated once. */
sc_err_t sc_mix_pool_new(sc_mix_pool_t **poolp, size_t cap, size_t numel);
/* Accepts NULL. */
void sc_mix_pool_destroy(sc_mix_pool_t *pool);
size_t sc_mix_pool_count(const sc_mix_pool_t *pool);
size_t sc_mix_pool_cap(const sc_mix_pool_t *pool);

/* Moves up to n of stream's oldest samples into the pool (bounded by free
 * space and the stream's reserve), tagging them with index; returns how
 * many (see sc_stream_lend). No row is copied. */
size_t sc_mix_pool_fill(sc_mix_pool_t *pool, sc_stream_t *stream, int index, size_t n, double t);

/* Gives back, untrained, the samples whose partitions were revoked since
 * they were lent (sc_stream_unlend): the partitions' new owners read them
 * again, so training them here too would train them twice. Returns how
 * many. The others keep their places. */
size_t sc_mix_pool_drop_revoked(sc_mix_pool_t *pool);

/* Moves n samples (n <= count) chosen uniformly at random without replacement
 * out of the pool: x (n, numel) gathered from the streams' slots (which are
 * released), labels (n), refs (n), streams (n). */
void sc_mix_pool_draw(sc_mix_pool_t *pool, sc_rng_t *rng, size_t n, float *x, int32_t *labels,
                      sc_stream_ref_t *refs, int *streams);

/* Injection pool: items (e.g. dataset indices) shared by up to `sources`
 * devices, one ring of cap_per_source items per source (a full ring replaces
 * its oldest). Draws are with replacement and never return an item of the
 * drawing device (not_from):
 *   SC_MIX_DRAW_BALANCED  per-source quotas: the n draws are spread over the
 *                         other sources that hold items as evenly as possible
 *                         (counts differ by at most one; the sources that get
 *                         the extra one are chosen at random), each item
 *                         uniform within its source — so a device's injected
 *                         samples are IID across sources whatever their rates;
 *   SC_MIX_DRAW_POOLED    each draw uniform over all pooled items of the other
 *                         sources — sources appear in proportion to what they
 *                         shared, i.e. to their stream rates. */
typedef enum sc_mix_draw {
        SC_MIX_DRAW_BALANCED = 0,
        SC_MIX_DRAW_POOLED = 1,
} sc_mix_draw_t;

typedef struct sc_mix_inject_s sc_mix_inject_t;

#define SC_MIX_INJECT_MAX_SOURCES 65536

/* 0 < sources <= SC_MIX_INJECT_MAX_SOURCES, cap_per_source > 0. */
sc_err_t sc_mix_inject_new(sc_mix_inject_t **poolp, int sources, size_t cap_per_source);
/* Accepts NULL. */
void sc_mix_inject_destroy(sc_mix_inject_t *pool);
/* Adds one item of `source` (ignored if source is out of range). */
void sc_mix_inject_put(sc_mix_inject_t *pool, int source, uint32_t item);
/* Items held from source (0 if out of range); source -1 = all sources. */
size_t sc_mix_inject_count(const sc_mix_inject_t *pool, int source);
/* Draws up to n items into items[] (and their sources into sources[] unless
 * NULL); returns how many: n, or 0 if no other source holds items. */
size_t sc_mix_inject_draw(sc_mix_inject_t *pool, sc_rng_t *rng, sc_mix_draw_t how, int not_from,
                          size_t n, uint32_t *items, int *sources);

/* Shared-sample pool: the samples themselves (numel floats and a label each)
 * behind an injection pool, for a process that receives other devices'
 * samples (the distributed worker's J.inject). One ring of cap_per_source
 * samples per source (a full ring replaces its oldest); draws as
 * sc_mix_inject_draw: with replacement, never from not_from, balanced or
 * pooled across sources. */
typedef struct sc_mix_shared_s sc_mix_shared_t;

/* 0 < sources <= SC_MIX_INJECT_MAX_SOURCES, cap_per_source, numel and
 * max_draw (the largest n a draw returns) > 0; SC_ERR_INVAL otherwise. */
sc_err_t sc_mix_shared_new(sc_mix_shared_t **poolp, int sources, size_t cap_per_source,
                           size_t numel, size_t max_draw);
/* Accepts NULL. */
void sc_mix_shared_destroy(sc_mix_shared_t *pool);
/* Adds a sample of source with label: returns where its numel floats go
 * (valid until the next put), or NULL if source is out of range. */
float *sc_mix_shared_put(sc_mix_shared_t *pool, int source, int32_t label);
/* Samples held from source; -1 = all sources. */
size_t sc_mix_shared_count(const sc_mix_shared_t *pool, int source);
/* Draws min(n, max_draw) samples into x (n, numel) and labels (n) (sources
 * unless NULL); returns how many: 0 if no other source holds samples. */
size_t sc_mix_shared_draw(sc_mix_shared_t *pool, sc_rng_t *rng, sc_mix_draw_t how, int not_from,
                          size_t n, float *x, int32_t *labels, int *sources);

#endif
