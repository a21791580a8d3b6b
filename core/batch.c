/* batch.c — fixed and rate-proportional batch assembly across streams, with
 * waiting-time accounting and acknowledgement of delivered batches. */
#include "sc_batch.h"

#include "sc_alloc.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A taken batch whose update is not acknowledged yet. */
typedef struct sc_batch_pending {
        uint64_t id;
        size_t n;
        sc_stream_ref_t *refs; /* (n) */
        int *streams;          /* (n) */
} sc_batch_pending_t;

struct sc_batcher_s {
        sc_batch_spec_t spec;
        sc_stream_t *streams[SC_BATCH_MAX_STREAMS];
        int n_streams;
        size_t numel;
        sc_mix_pool_t *pool; /* shuffle + largest batch */
        sc_rng_t rng;
        int started;         /* first window began */
        double window_start; /* time of the last take (or first query) */
        int draining;        /* hold nothing back in the shuffle buffer */
        int flushing;        /* a stop: the pool only, any size, no window */
        size_t last_n;       /* the size of the last batch taken before a flush */
        int waiting;         /* a query since the last take started the wait clock */
        double wait_since;
        uint64_t next_id;
        /* [0, n_pending) pending; [n_pending, cap_pending) free slots whose
         * buffers (sized for the largest batch) are reused by the next take. */
        sc_batch_pending_t *pending;
        size_t n_pending, cap_pending;
        sc_batcher_stats_t stats;
};

void sc_batch_spec_defaults(sc_batch_spec_t *spec)
{
        memset(spec, 0, sizeof(*spec));
        spec->mode = SC_BATCH_DEF_MODE;
        spec->b = SC_BATCH_DEF_B;
        spec->b_min = SC_BATCH_DEF_B_MIN;
        spec->b_max = SC_BATCH_DEF_B_MAX;
        spec->window = SC_BATCH_DEF_WINDOW;
        spec->shuffle = SC_BATCH_DEF_SHUFFLE;
}

sc_err_t sc_batch_spec_check(const sc_batch_spec_t *spec, char *errstr, size_t errstr_size)
{
        if ((int)spec->mode < 0 || spec->mode >= SC_BATCH_MODE__END)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "batch.mode: expected rate or fixed");
        if (spec->b < 1 || spec->b > SC_BATCH_MAX)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "batch.b: expected 1..%d, got %d", SC_BATCH_MAX, spec->b);
        if (spec->b_max < 1 || spec->b_max > SC_BATCH_MAX)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "batch.b_max: expected 1..%d, got %d", SC_BATCH_MAX, spec->b_max);
        if (spec->b_min < 1 || spec->b_min > spec->b_max)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "batch.b_min: expected 1..b_max (%d), got %d", spec->b_max,
                               spec->b_min);
        if (!(spec->window > 0 && spec->window <= 1e6))
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "batch.window: expected seconds in (0, 1e6], got %g", spec->window);
        if (spec->shuffle < 0 || spec->shuffle > (1 << 20))
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "batch.shuffle: expected 0..%d samples, got %d", 1 << 20,
                               spec->shuffle);
        return SC_OK;
}

int sc_batch_spec_max(const sc_batch_spec_t *spec)
{
        return spec->mode == SC_BATCH_FIXED ? spec->b : spec->b_max;
}

/* A batch of cap samples over x and labels, or over rows of its own where
 * they are NULL. */
static sc_err_t sc_batch_make(sc_batch_t **batchp, int cap, size_t numel, float *x, int32_t *labels)
{
        sc_batch_t *b;

        *batchp = NULL;
        if (cap < 1 || cap > SC_BATCH_MAX || numel == 0 ||
            numel > SIZE_MAX / sizeof(float) / (size_t)cap)
                return SC_ERR_INVAL;
        b = sc_calloc(1, sizeof(*b));
        if (!b)
                return SC_ERR_NOMEM;
        b->cap = cap;
        b->numel = numel;
        b->borrowed = x != NULL;
        b->x = x ? x : sc_malloc((size_t)cap * numel * sizeof(float));
        b->labels = x ? labels : sc_malloc((size_t)cap * sizeof(*b->labels));
        b->refs = sc_malloc((size_t)cap * sizeof(*b->refs));
        b->streams = sc_malloc((size_t)cap * sizeof(*b->streams));
        if (!b->x || !b->labels || !b->refs || !b->streams) {
                sc_batch_destroy(b);
                return SC_ERR_NOMEM;
        }
        *batchp = b;
        return SC_OK;
}

sc_err_t sc_batch_new(sc_batch_t **batchp, int cap, size_t numel)
{
        return sc_batch_make(batchp, cap, numel, NULL, NULL);
}

sc_err_t sc_batch_wrap(sc_batch_t **batchp, int cap, size_t numel, float *x, int32_t *labels)
{
        if (!x || !labels) {
                *batchp = NULL;
                return SC_ERR_INVAL;
        }
        return sc_batch_make(batchp, cap, numel, x, labels);
}

void sc_batch_destroy(sc_batch_t *batch)
{
        if (!batch)
                return;
        if (!batch->borrowed) {
                sc_free(batch->x);
                sc_free(batch->labels);
        }
        sc_free(batch->refs);
        sc_free(batch->streams);
        sc_free(batch);
}

/* Doubles the pending slots if none is free (0), or fails (-1) keeping
 * the slots it could make for the next try. */
static int sc_batcher_grow(sc_batcher_t *bt)
{
        if (bt->n_pending < bt->cap_pending)
                return 0;
        size_t nc = bt->cap_pending ? 2 * bt->cap_pending : 2;
        size_t bmax = (size_t)sc_batch_spec_max(&bt->spec);
        sc_batch_pending_t *np = sc_realloc(bt->pending, nc * sizeof(*np));
        if (!np)
                return -1;
        bt->pending = np;
        while (bt->cap_pending < nc) {
                sc_batch_pending_t *pd = &np[bt->cap_pending];
                memset(pd, 0, sizeof(*pd));
                pd->refs = sc_malloc(bmax * sizeof(*pd->refs));
                pd->streams = sc_malloc(bmax * sizeof(*pd->streams));
                if (!pd->refs || !pd->streams) {
                        sc_free(pd->refs);
                        sc_free(pd->streams);
                        return -1;
                }
                bt->cap_pending++;
        }
        return 0;
}

sc_err_t sc_batcher_new(sc_batcher_t **batcherp, const sc_batch_spec_t *spec,
                        sc_stream_t *const *streams, int n_streams, uint64_t seed, char *errstr,
                        size_t errstr_size)
{
        sc_batcher_t *bt;
        sc_err_t err;
        size_t room = 0, need;

        *batcherp = NULL;
        err = sc_batch_spec_check(spec, errstr, errstr_size);
        if (err)
                return err;
        if (!streams || n_streams < 1 || n_streams > SC_BATCH_MAX_STREAMS)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "batch: expected 1..%d streams, got %d", SC_BATCH_MAX_STREAMS,
                               n_streams);
        for (int i = 0; i < n_streams; i++) {
                if (!streams[i] || sc_stream_numel(streams[i]) != sc_stream_numel(streams[0]))
                        return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                                       "batch: stream %d is missing or has another sample size", i);
                const sc_stream_spec_t *ss = sc_stream_spec(streams[i]);
                room += ss->policy == SC_STREAM_TRUNCATE ? ss->keep_min : ss->cap;
        }
        need = (size_t)(spec->mode == SC_BATCH_FIXED ? spec->b : spec->b_min);
        if (room < need)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "batch.%s: %zu samples can never be buffered at once by the "
                               "streams (their caps, or keep_min of truncate streams, sum to "
                               "%zu)",
                               spec->mode == SC_BATCH_FIXED ? "b" : "b_min", need, room);
        bt = sc_calloc(1, sizeof(*bt));
        if (!bt)
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "batch: out of memory");
        bt->spec = *spec;
        bt->n_streams = n_streams;
        memcpy(bt->streams, streams, (size_t)n_streams * sizeof(streams[0]));
        bt->numel = sc_stream_numel(streams[0]);
        sc_rng_seed(&bt->rng, seed);
        bt->next_id = 1;
        err = sc_mix_pool_new(&bt->pool, (size_t)spec->shuffle + (size_t)sc_batch_spec_max(spec),
                              bt->numel);
        if (err) {
                sc_free(bt);
                return sc_errf(err, errstr, errstr_size,
                               "batch: no memory for a shuffle buffer of %d samples",
                               spec->shuffle);
        }
        if (sc_batcher_grow(bt)) {
                sc_batcher_destroy(bt);
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "batch: out of memory");
        }
        /* The pool holds the streams' samples by reference: each stream
         * keeps room for all of it lent out. */
        for (int i = 0; i < n_streams; i++) {
                if ((err = sc_stream_reserve(streams[i], sc_mix_pool_cap(bt->pool), errstr,
                                             errstr_size))) {
                        sc_batcher_destroy(bt);
                        return err;
                }
        }
        *batcherp = bt;
        return SC_OK;
}

void sc_batcher_destroy(sc_batcher_t *batcher)
{
        if (!batcher)
                return;
        for (size_t i = 0; i < batcher->cap_pending; i++) {
                sc_free(batcher->pending[i].refs);
                sc_free(batcher->pending[i].streams);
        }
        sc_free(batcher->pending);
        sc_mix_pool_destroy(batcher->pool);
        sc_free(batcher);
}

sc_err_t sc_batcher_add_stream(sc_batcher_t *batcher, sc_stream_t *stream, char *errstr,
                               size_t errstr_size)
{
        if (!stream || batcher->n_streams >= SC_BATCH_MAX_STREAMS ||
            sc_stream_numel(stream) != batcher->numel)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "batch: cannot add a stream (%d of at most %d, or another "
                               "sample size)",
                               batcher->n_streams, SC_BATCH_MAX_STREAMS);
        sc_err_t err =
            sc_stream_reserve(stream, sc_mix_pool_cap(batcher->pool), errstr, errstr_size);
        if (err)
                return err;
        batcher->streams[batcher->n_streams++] = stream;
        return SC_OK;
}

/* Samples in the streams (not the pool). */
static size_t sc_batcher_buffered(const sc_batcher_t *bt)
{
        size_t n = 0;
        for (int i = 0; i < bt->n_streams; i++)
                n += sc_stream_count(bt->streams[i]);
        return n;
}

/* Batch size if taken now, 0 if none is ready; *wake as sc_batcher_ready. */
static size_t sc_batcher_size(sc_batcher_t *bt, double t, double *wake)
{
        size_t pooled = sc_mix_pool_count(bt->pool);
        size_t avail = sc_batcher_buffered(bt) + pooled;
        const sc_batch_spec_t *sp = &bt->spec;

        if (bt->flushing) {
                /* Rate mode: the size of the last batch, not one batch of the
                 * whole pool (with the LR scaled linearly by batch size that
                 * would be one step several times the size of the ones
                 * before it). */
                size_t cap = (size_t)(sp->mode == SC_BATCH_FIXED ? sp->b : sp->b_max);
                if (sp->mode != SC_BATCH_FIXED && bt->last_n > 0 && bt->last_n < cap)
                        cap = bt->last_n;
                *wake = INFINITY;
                return pooled < cap ? pooled : cap;
        }
        /* The shuffle buffer holds `shuffle` samples back (unless draining). */
        size_t hold = bt->draining ? 0 : (size_t)sp->shuffle;
        avail = avail > hold ? avail - hold : 0;
        *wake = INFINITY;
        if (sp->mode == SC_BATCH_FIXED)
                return avail >= (size_t)sp->b ? (size_t)sp->b : 0;
        double end = bt->window_start + sp->window;
        if (t < end) {
                *wake = end;
                return 0;
        }
        if (avail < (size_t)sp->b_min)
                return 0;
        return avail < (size_t)sp->b_max ? avail : (size_t)sp->b_max;
}

void sc_batcher_drain(sc_batcher_t *batcher, int on)
{
        batcher->draining = on != 0;
}

void sc_batcher_flush(sc_batcher_t *batcher)
{
        batcher->flushing = 1;
}

int sc_batcher_ready(sc_batcher_t *batcher, double t, double *wake_at)
{
        sc_batcher_t *bt = batcher;
        double wake;

        if (wake_at)
                *wake_at = INFINITY;
        if (!isfinite(t))
                return 0;
        if (!bt->started) {
                bt->started = 1;
                bt->window_start = t;
        }
        if (!bt->waiting) {
                bt->waiting = 1;
                bt->wait_since = t;
        }
        for (int i = 0; i < bt->n_streams; i++) {
                sc_stream_rate(bt->streams[i], t);
                sc_stream_truncate(bt->streams[i], t);
        }
        size_t n = sc_batcher_size(bt, t, &wake);
        if (n > 0)
                wake = t;
        if (wake_at)
                *wake_at = wake;
        return n > 0;
}

sc_err_t sc_batcher_take(sc_batcher_t *batcher, double t, sc_batch_t *batch, char *errstr,
                         size_t errstr_size)
{
        sc_batcher_t *bt = batcher;
        double weights[SC_BATCH_MAX_STREAMS], wake;
        size_t avail[SC_BATCH_MAX_STREAMS], draw[SC_BATCH_MAX_STREAMS];
        sc_batch_pending_t *pd;
        int waited = bt->waiting;

        if (!batch || batch->numel != bt->numel || batch->cap < sc_batch_spec_max(&bt->spec))
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "batch: the batch holds %d samples of %zu floats, expected %d of "
                               "%zu",
                               batch ? batch->cap : 0, batch ? batch->numel : 0,
                               sc_batch_spec_max(&bt->spec), bt->numel);
        if (!sc_batcher_ready(bt, t, NULL))
                return sc_errf(SC_ERR_AGAIN, errstr, errstr_size, "batch: none ready");
        size_t n = sc_batcher_size(bt, t, &wake);
        if (sc_batcher_grow(bt))
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "batch: out of memory");
        pd = &bt->pending[bt->n_pending];

        /* Top the pool up to n + shuffle from the streams, in proportion to
         * their rates, then draw n at random. */
        size_t pooled = sc_mix_pool_count(bt->pool);
        size_t fill = n + (size_t)bt->spec.shuffle;
        fill = fill > pooled && !bt->flushing ? fill - pooled : 0;
        for (int i = 0; i < bt->n_streams; i++) {
                weights[i] = sc_stream_rate(bt->streams[i], t);
                avail[i] = sc_stream_count(bt->streams[i]);
        }
        sc_mix_allocate(weights, avail, bt->n_streams, fill, draw);
        for (int i = 0; i < bt->n_streams; i++)
                sc_mix_pool_fill(bt->pool, bt->streams[i], i, draw[i], t);
        sc_mix_pool_draw(bt->pool, &bt->rng, n, batch->x, batch->labels, batch->refs,
                         batch->streams);

        pd->id = bt->next_id++;
        pd->n = n;
        memcpy(pd->refs, batch->refs, n * sizeof(*pd->refs));
        memcpy(pd->streams, batch->streams, n * sizeof(*pd->streams));
        bt->n_pending++;

        if (!bt->flushing)
                bt->last_n = n;
        batch->id = pd->id;
        batch->n = (int)n;
        batch->t = t;
        batch->waited = waited && t > bt->wait_since ? t - bt->wait_since : 0.0;
        bt->waiting = 0;
        bt->window_start = t;
        bt->stats.batches++;
        bt->stats.samples += n;
        bt->stats.wait_sum += batch->waited;
        bt->stats.last_wait = batch->waited;
        if (batch->waited > bt->stats.wait_max)
                bt->stats.wait_max = batch->waited;
        return SC_OK;
}

sc_err_t sc_batcher_ack(sc_batcher_t *batcher, uint64_t id, char *errstr, size_t errstr_size)
{
        sc_batcher_t *bt = batcher;
        sc_err_t first = SC_OK;
        size_t i;

        for (i = 0; i < bt->n_pending; i++)
                if (bt->pending[i].id == id)
                        break;
        if (i == bt->n_pending)
                return sc_errf(SC_ERR_STATE, errstr, errstr_size,
                               "batch: %" PRIu64 " is not a pending batch", id);
        sc_batch_pending_t pd = bt->pending[i];
        memmove(&bt->pending[i], &bt->pending[i + 1],
                (bt->n_pending - i - 1) * sizeof(bt->pending[0]));
        bt->n_pending--;
        bt->pending[bt->n_pending] = pd; /* a free slot again, buffers kept */
        for (size_t k = 0; k < pd.n; k++) {
                sc_err_t err = sc_stream_done(bt->streams[pd.streams[k]], &pd.refs[k],
                                              first ? NULL : errstr, first ? 0 : errstr_size);
                if (err && !first)
                        first = err;
        }
        bt->stats.acked++;
        return first;
}

double sc_batcher_rate(sc_batcher_t *batcher, double t)
{
        double s = 0;
        for (int i = 0; i < batcher->n_streams; i++)
                s += sc_stream_rate(batcher->streams[i], t);
        return s;
}

void sc_batcher_set_window(sc_batcher_t *batcher, double window)
{
        if (window > 0 && window <= 1e6) /* not NaN */
                batcher->spec.window = window;
}

double sc_batcher_window(const sc_batcher_t *batcher)
{
        return batcher->spec.window;
}

int sc_batcher_target(sc_batcher_t *batcher, double t)
{
        const sc_batch_spec_t *sp = &batcher->spec;

        if (sp->mode == SC_BATCH_FIXED)
                return sp->b;
        double b = round(sc_batcher_rate(batcher, t) * sp->window);
        if (!(b >= sp->b_min))
                return sp->b_min;
        if (b > sp->b_max)
                return sp->b_max;
        return (int)b;
}

size_t sc_batcher_pending(const sc_batcher_t *batcher)
{
        return batcher->n_pending;
}

size_t sc_batcher_drop_revoked(sc_batcher_t *batcher)
{
        return batcher->pool ? sc_mix_pool_drop_revoked(batcher->pool) : 0;
}

size_t sc_batcher_pooled(const sc_batcher_t *batcher)
{
        return sc_mix_pool_count(batcher->pool);
}

const sc_batcher_stats_t *sc_batcher_stats(const sc_batcher_t *batcher)
{
        return &batcher->stats;
}

sc_err_t sc_batcher_check(const sc_batcher_t *batcher, char *errstr, size_t errstr_size)
{
        uint64_t inflight = 0, held = sc_mix_pool_count(batcher->pool);

        for (int i = 0; i < batcher->n_streams; i++) {
                sc_err_t err = sc_stream_check(batcher->streams[i], errstr, errstr_size);
                if (err)
                        return err;
                inflight += sc_stream_stats(batcher->streams[i])->inflight;
        }
        for (size_t i = 0; i < batcher->n_pending; i++)
                held += batcher->pending[i].n;
        if (inflight != held)
                return sc_errf(SC_ERR_STATE, errstr, errstr_size,
                               "batch accounting: streams have %" PRIu64
                               " inflight, the shuffle buffer and pending batches hold %" PRIu64,
                               inflight, held);
        return SC_OK;
}
