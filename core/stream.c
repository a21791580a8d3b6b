/* stream.c — per-stream sample ring, rate estimator, buffer policies,
 * backpressure and record accounting. */
#include "sc_stream.h"

#include "sc_alloc.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SC_STREAM_CAP_MAX ((size_t)1 << 24)
/* A seeded rate's history, in time constants (exp(-40) ~ 4e-18). */
#define SC_RATE_SEED_TAUS 40.0

/* ---- rate ---- */

void sc_rate_init(sc_rate_t *rate, double tau)
{
        memset(rate, 0, sizeof(*rate));
        rate->tau = tau > 0 ? tau : 1.0;
}

void sc_rate_observe(sc_rate_t *rate, double t, double n)
{
        if (!isfinite(t))
                return;
        if (!rate->started) {
                rate->started = 1;
                rate->t0 = rate->t_last = t;
                if (rate->prior > 0) {
                        /* A history long enough that the start correction is
                         * nil, whose decayed count reads prior. */
                        rate->t0 = t - SC_RATE_SEED_TAUS * rate->tau;
                        rate->acc = rate->prior * rate->tau;
                }
        }
        if (t > rate->t_last) {
                rate->acc *= exp(-(t - rate->t_last) / rate->tau);
                rate->t_last = t;
        }
        rate->acc += n;
}

void sc_rate_seed(sc_rate_t *rate, double r)
{
        if (!rate->started && isfinite(r) && r > 0)
                rate->prior = r;
}

double sc_rate_get(const sc_rate_t *rate, double t)
{
        if (!rate->started || !isfinite(t))
                return 0.0;
        if (t < rate->t_last)
                t = rate->t_last;
        double e = t - rate->t0;
        if (e <= 0)
                return 0.0;
        double acc = rate->acc * exp(-(t - rate->t_last) / rate->tau);
        /* -expm1(-x) = 1 - exp(-x), accurate for small x. */
        return acc / (rate->tau * -expm1(-e / rate->tau));
}

/* ---- stream ---- */

/* Slots per chunk of rows (for 784 floats, 784 KiB). */
#define SC_STREAM_CHUNK 256u
/* Seconds of stream time over which the peak of the slots held is kept. */
#define SC_STREAM_PEAK_S 10.0

/* Samples live in slots; the FIFO of buffered samples is a ring of slot
 * indices. A sample taken into a shuffle buffer keeps its slot (lent:
 * sc_stream_lend) until its row is gathered into a batch (sc_stream_release);
 * there are cap + 1 + lend_max slots, so a lent slot is never overwritten,
 * truncated or moved.
 *
 * The rows of SC_STREAM_CHUNK slots at a time are one allocation (a chunk),
 * made when its first slot is taken. The free slots are a min-heap, so the
 * lowest free slot is taken first and the samples held sit in the lowest
 * chunks. The highest chunk is freed when it is empty and the most slots
 * held over the last one to two SC_STREAM_PEAK_S windows of the stream's
 * time lie half a chunk or more below it: a backlog's rows are given back
 * once it has drained, not kept for the stream's life, while a buffer that
 * fills and drains at every batch keeps what its batches need (no chunk
 * made and freed at every step). Rows never move. */
struct sc_stream_s {
        sc_stream_spec_t spec;
        size_t numel;
        size_t nslots;        /* slots: cap + 1 + lend_max (0: given back) */
        size_t head;          /* ring position of the oldest sample */
        size_t count;         /* buffered samples */
        size_t high, low;     /* watermarks in samples */
        uint32_t *ring;       /* (cap) slot of each buffered sample, oldest at head */
        uint32_t *free_slots; /* (nslots) min-heap of free slots; [0] is the next slot */
        size_t n_free;
        size_t lent, lend_max;  /* slots lent out now, at most */
        float **chunks;         /* (nchunks) rows of SC_STREAM_CHUNK slots; NULL: not made */
        uint32_t *chunk_used;   /* (nchunks) slots of each chunk buffered or lent */
        size_t nchunks, made;   /* chunk pointers; chunks made, below which are all made */
        size_t peak, peak_prev; /* most slots held in this window and the one before */
        double peak_t;          /* this window's start */
        int32_t *labels;        /* (nslots) */
        sc_stream_ref_t *refs;  /* (nslots) */
        sc_rate_t rate;
        double t_now; /* latest time seen */
        int have_t;
        int paused, told_paused;
        sc_offsets_t *offsets;
        uint32_t *revoked_epochs; /* epochs whose inflight samples are orphaned */
        size_t n_revoked, cap_revoked;
        sc_stream_stats_t stats;
};

void sc_stream_spec_defaults(sc_stream_spec_t *spec)
{
        memset(spec, 0, sizeof(*spec));
        spec->policy = SC_STREAM_DEF_POLICY;
        spec->cap = SC_STREAM_DEF_CAP;
        spec->high_watermark = SC_STREAM_DEF_HIGH_WATERMARK;
        spec->low_watermark = SC_STREAM_DEF_LOW_WATERMARK;
        spec->window = SC_STREAM_DEF_WINDOW;
        spec->keep_min = SC_STREAM_DEF_KEEP_MIN;
        spec->rate_tau = SC_STREAM_DEF_RATE_TAU;
}

sc_err_t sc_stream_spec_check(const sc_stream_spec_t *spec, char *errstr, size_t errstr_size)
{
        if ((int)spec->policy < 0 || spec->policy >= SC_STREAM_POLICY__END)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "stream.policy: expected persist or truncate");
        if (spec->cap < 1 || spec->cap > SC_STREAM_CAP_MAX)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "stream.cap: expected 1..%zu samples, got %zu", SC_STREAM_CAP_MAX,
                               spec->cap);
        if (!(spec->high_watermark > 0 && spec->high_watermark <= 1))
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "stream.high_watermark: expected a fraction in (0, 1], got %g",
                               spec->high_watermark);
        if (!(spec->low_watermark >= 0 && spec->low_watermark < spec->high_watermark))
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "stream.low_watermark: expected a fraction in [0, "
                               "high_watermark), got %g",
                               spec->low_watermark);
        if (!(spec->window > 0 && spec->window <= 1e6))
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "stream.window: expected seconds in (0, 1e6], got %g", spec->window);
        if (spec->keep_min > spec->cap)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "stream.keep_min: expected <= cap (%zu), got %zu", spec->cap,
                               spec->keep_min);
        if (!(spec->rate_tau > 0 && spec->rate_tau <= 1e6))
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "stream.rate_tau: expected seconds in (0, 1e6], got %g",
                               spec->rate_tau);
        return SC_OK;
}

/* ---- slots: a min-heap of the free ones, rows in chunks ---- */

static void sc_slot_heap_push(sc_stream_t *s, uint32_t slot)
{
        size_t i = s->n_free++;
        while (i > 0) {
                size_t up = (i - 1) / 2;
                if (s->free_slots[up] <= slot)
                        break;
                s->free_slots[i] = s->free_slots[up];
                i = up;
        }
        s->free_slots[i] = slot;
}

static uint32_t sc_slot_heap_pop(sc_stream_t *s)
{
        uint32_t top = s->free_slots[0], last = s->free_slots[--s->n_free];
        size_t i = 0, n = s->n_free;
        for (;;) {
                size_t c = 2 * i + 1;
                if (c >= n)
                        break;
                if (c + 1 < n && s->free_slots[c + 1] < s->free_slots[c])
                        c++;
                if (last <= s->free_slots[c])
                        break;
                s->free_slots[i] = s->free_slots[c];
                i = c;
        }
        if (n)
                s->free_slots[i] = last;
        return top;
}

/* Frees the highest chunks while they are empty and the slots held at the
 * peak of this window and the last lie half a chunk or more below them;
 * chunk 0 stays. */
static void sc_stream_trim(sc_stream_t *s)
{
        size_t held = s->nslots - s->n_free;
        if (s->t_now - s->peak_t >= SC_STREAM_PEAK_S) {
                /* After two windows or more with no look, no peak is left. */
                s->peak_prev = s->t_now - s->peak_t >= 2 * SC_STREAM_PEAK_S ? held : s->peak;
                s->peak = held;
                s->peak_t = s->t_now;
        }
        size_t need = s->peak > s->peak_prev ? s->peak : s->peak_prev;
        while (s->made > 1 && s->chunk_used[s->made - 1] == 0 &&
               need + SC_STREAM_CHUNK / 2 <= (s->made - 1) * SC_STREAM_CHUNK) {
                s->made--;
                sc_free(s->chunks[s->made]);
                s->chunks[s->made] = NULL;
                s->stats.chunks_freed++;
        }
}

/* Takes the lowest free slot (its chunk made by sc_stream_slot). */
static uint32_t sc_stream_take_slot(sc_stream_t *s)
{
        uint32_t slot = sc_slot_heap_pop(s);
        s->chunk_used[slot / SC_STREAM_CHUNK]++;
        if (s->nslots - s->n_free > s->peak)
                s->peak = s->nslots - s->n_free;
        return slot;
}

/* Gives a slot back; its chunk is freed if it is the highest and empty. */
static void sc_stream_free_slot(sc_stream_t *s, uint32_t slot)
{
        sc_slot_heap_push(s, slot);
        s->chunk_used[slot / SC_STREAM_CHUNK]--;
        sc_stream_trim(s);
}

/* Rows of chunk k when there are nslots slots (the last one may be short). */
static size_t sc_stream_chunk_rows(size_t k, size_t nslots)
{
        size_t rows = nslots - k * SC_STREAM_CHUNK;
        return rows < SC_STREAM_CHUNK ? rows : SC_STREAM_CHUNK;
}

static float *sc_stream_row_ptr(const sc_stream_t *s, uint32_t slot)
{
        return s->chunks[slot / SC_STREAM_CHUNK] + (size_t)(slot % SC_STREAM_CHUNK) * s->numel;
}

/* Grows the slots to nslots (existing slots keep their index and contents;
 * the new ones are free, their rows made when taken). -1 if out of memory,
 * nothing changed but what could be grown. */
static int sc_stream_slab(sc_stream_t *s, size_t nslots)
{
        if (nslots <= s->nslots)
                return 0;
        size_t nchunks = (nslots + SC_STREAM_CHUNK - 1) / SC_STREAM_CHUNK;
        if (nchunks > s->nchunks) {
                float **c = sc_realloc(s->chunks, nchunks * sizeof(*c));
                if (!c)
                        return -1;
                s->chunks = c;
                uint32_t *u = sc_realloc(s->chunk_used, nchunks * sizeof(*u));
                if (!u)
                        return -1;
                s->chunk_used = u;
                for (size_t k = s->nchunks; k < nchunks; k++) {
                        s->chunks[k] = NULL;
                        s->chunk_used[k] = 0;
                }
                s->nchunks = nchunks;
        }
        /* A short last chunk already made gets the rows of its new slots. */
        if (s->made && sc_stream_chunk_rows(s->made - 1, nslots) >
                           sc_stream_chunk_rows(s->made - 1, s->nslots)) {
                size_t rows = sc_stream_chunk_rows(s->made - 1, nslots);
                float *c = sc_realloc(s->chunks[s->made - 1], rows * s->numel * sizeof(float));
                if (!c)
                        return -1;
                s->chunks[s->made - 1] = c;
        }
        int32_t *labels = sc_realloc(s->labels, nslots * sizeof(*labels));
        if (!labels)
                return -1;
        s->labels = labels;
        sc_stream_ref_t *refs = sc_realloc(s->refs, nslots * sizeof(*refs));
        if (!refs)
                return -1;
        s->refs = refs;
        uint32_t *fs = sc_realloc(s->free_slots, nslots * sizeof(*fs));
        if (!fs)
                return -1;
        s->free_slots = fs;
        /* Every new slot is above every free one: appended, the heap holds. */
        for (size_t i = s->nslots; i < nslots; i++)
                s->free_slots[s->n_free++] = (uint32_t)i;
        s->nslots = nslots;
        return 0;
}

sc_err_t sc_stream_new(sc_stream_t **streamp, const sc_stream_spec_t *spec, size_t numel,
                       char *errstr, size_t errstr_size)
{
        sc_stream_t *s;
        sc_err_t err;

        *streamp = NULL;
        err = sc_stream_spec_check(spec, errstr, errstr_size);
        if (err)
                return err;
        if (numel == 0 || numel > ((size_t)1 << 28) ||
            (spec->cap + 1) > SIZE_MAX / sizeof(float) / numel)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "stream: %zu features per sample is out of range", numel);
        s = sc_calloc(1, sizeof(*s));
        if (!s)
                goto out_nomem;
        s->spec = *spec;
        s->numel = numel;
        s->high = (size_t)ceil(spec->high_watermark * (double)spec->cap);
        s->low = (size_t)ceil(spec->low_watermark * (double)spec->cap);
        if (s->high < 1)
                s->high = 1;
        s->ring = sc_malloc(spec->cap * sizeof(*s->ring));
        if (!s->ring || sc_stream_slab(s, spec->cap + 1) || sc_offsets_new(&s->offsets) != SC_OK)
                goto out_free;
        sc_rate_init(&s->rate, spec->rate_tau);
        *streamp = s;
        return SC_OK;

out_free:
        sc_stream_destroy(s);
out_nomem:
        return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "stream: out of memory for %zu samples",
                       spec->cap);
}

void sc_stream_destroy(sc_stream_t *stream)
{
        if (!stream)
                return;
        sc_offsets_destroy(stream->offsets);
        sc_free(stream->revoked_epochs);
        sc_free(stream->ring);
        sc_free(stream->free_slots);
        for (size_t k = 0; k < stream->made; k++)
                sc_free(stream->chunks[k]);
        sc_free(stream->chunks);
        sc_free(stream->chunk_used);
        sc_free(stream->labels);
        sc_free(stream->refs);
        sc_free(stream);
}

const sc_stream_spec_t *sc_stream_spec(const sc_stream_t *stream)
{
        return &stream->spec;
}

size_t sc_stream_numel(const sc_stream_t *stream)
{
        return stream->numel;
}

/* The ring position of the i-th oldest buffered sample. */
static size_t sc_stream_idx(const sc_stream_t *s, size_t i)
{
        size_t j = s->head + i;
        return j >= s->spec.cap ? j - s->spec.cap : j;
}

static void sc_stream_update_flow(sc_stream_t *s)
{
        if (s->spec.policy != SC_STREAM_PERSIST)
                return;
        if (!s->paused && s->count >= s->high) {
                s->paused = 1;
                s->stats.pauses++;
        } else if (s->paused && s->count < s->low) {
                s->paused = 0;
        }
}

/* Drops the n oldest samples (truncation): their offsets finish. */
static void sc_stream_drop_oldest(sc_stream_t *s, size_t n)
{
        for (size_t i = 0; i < n && s->count > 0; i++) {
                uint32_t slot = s->ring[s->head];
                const sc_stream_ref_t *r = &s->refs[slot];
                /* Cannot fail: every buffered sample is outstanding. */
                (void)sc_offsets_done(s->offsets, r->partition, r->offset, r->epoch, NULL, 0);
                sc_stream_free_slot(s, slot);
                s->head = sc_stream_idx(s, 1);
                s->count--;
                s->stats.buffered--;
                s->stats.dropped++;
        }
}

static double sc_stream_time(sc_stream_t *s, double t)
{
        if (!s->have_t || t > s->t_now)
                s->t_now = t;
        s->have_t = 1;
        return s->t_now;
}

void sc_stream_shrink(sc_stream_t *stream)
{
        sc_stream_t *s = stream;
        if (s->count || s->lent || !s->nslots)
                return;
        s->stats.chunks_freed += s->made;
        for (size_t k = 0; k < s->made; k++)
                sc_free(s->chunks[k]);
        sc_free(s->chunks);
        sc_free(s->chunk_used);
        sc_free(s->labels);
        sc_free(s->refs);
        sc_free(s->free_slots);
        s->chunks = NULL;
        s->chunk_used = NULL;
        s->labels = NULL;
        s->refs = NULL;
        s->free_slots = NULL;
        s->nslots = s->nchunks = s->made = 0;
        s->n_free = 0;
        s->peak = s->peak_prev = 0;
}

float *sc_stream_slot(sc_stream_t *stream)
{
        /* A shrunk slab is made again for the next sample (out of memory:
         * the caller holds the record and retries). */
        if (!stream->nslots && sc_stream_slab(stream, stream->spec.cap + 1 + stream->lend_max) != 0)
                return NULL;
        if ((stream->spec.policy == SC_STREAM_PERSIST && stream->count >= stream->spec.cap) ||
            stream->n_free == 0)
                return NULL;
        /* The lowest free slot lies in a made chunk or in the next one. */
        uint32_t slot = stream->free_slots[0];
        size_t k = slot / SC_STREAM_CHUNK;
        if (k >= stream->made) {
                size_t rows = sc_stream_chunk_rows(k, stream->nslots);
                if (!(stream->chunks[k] = sc_malloc(rows * stream->numel * sizeof(float))))
                        return NULL;
                stream->made = k + 1;
        }
        return sc_stream_row_ptr(stream, slot);
}

int sc_stream_full(const sc_stream_t *stream)
{
        return (stream->spec.policy == SC_STREAM_PERSIST && stream->count >= stream->spec.cap) ||
               (stream->nslots && stream->n_free == 0);
}

size_t sc_stream_row_bytes(const sc_stream_t *stream)
{
        size_t rows = 0;
        for (size_t k = 0; k < stream->made; k++)
                rows += sc_stream_chunk_rows(k, stream->nslots);
        return rows * stream->numel * sizeof(float);
}

size_t sc_stream_truncate(sc_stream_t *stream, double t)
{
        if (stream->spec.policy != SC_STREAM_TRUNCATE || !isfinite(t))
                return 0;
        double want =
            ceil(sc_rate_get(&stream->rate, sc_stream_time(stream, t)) * stream->spec.window);
        size_t limit = stream->spec.cap;
        if (want < (double)limit)
                limit = (size_t)want;
        if (limit < stream->spec.keep_min)
                limit = stream->spec.keep_min;
        if (stream->count <= limit)
                return 0;
        size_t n = stream->count - limit;
        sc_stream_drop_oldest(stream, n);
        return n;
}

sc_err_t sc_stream_push_slot(sc_stream_t *stream, int32_t label, int32_t partition, int64_t offset,
                             double t, char *errstr, size_t errstr_size)
{
        sc_stream_t *s = stream;
        uint32_t epoch;
        sc_err_t err;

        if (!isfinite(t))
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size, "stream: time is not finite");
        if (s->spec.policy == SC_STREAM_PERSIST && s->count >= s->spec.cap)
                return sc_errf(SC_ERR_AGAIN, errstr, errstr_size,
                               "stream: full at %zu samples (partition should be paused)",
                               s->spec.cap);
        if (s->n_free == 0)
                return sc_errf(SC_ERR_AGAIN, errstr, errstr_size,
                               "stream: no free slot (%zu samples lent out)", s->lent);
        if (s->free_slots[0] / SC_STREAM_CHUNK >= s->made)
                return sc_errf(SC_ERR_STATE, errstr, errstr_size,
                               "stream: push_slot without a row from sc_stream_slot");
        err = sc_offsets_track(s->offsets, partition, offset, &epoch, errstr, errstr_size);
        if (err)
                return err;
        t = sc_stream_time(s, t);
        /* The slot sc_stream_slot gave (the lowest free one) is taken
         * before truncation frees the oldest one. */
        uint32_t j = sc_stream_take_slot(s);
        if (s->count == s->spec.cap)
                sc_stream_drop_oldest(s, 1);
        s->ring[sc_stream_idx(s, s->count)] = j;
        s->labels[j] = label;
        s->refs[j].partition = partition;
        s->refs[j].epoch = epoch;
        s->refs[j].offset = offset;
        s->refs[j].t = t;
        s->count++;
        s->stats.consumed++;
        s->stats.buffered++;
        s->stats.faults.count[SC_DECODE_OK]++;
        sc_rate_observe(&s->rate, t, 1.0);
        sc_stream_truncate(s, t);
        if (s->stats.buffered > s->stats.peak_buffered)
                s->stats.peak_buffered = s->stats.buffered;
        sc_stream_update_flow(s);
        return SC_OK;
}

sc_err_t sc_stream_push(sc_stream_t *stream, const float *x, int32_t label, int32_t partition,
                        int64_t offset, double t, char *errstr, size_t errstr_size)
{
        float *slot = sc_stream_slot(stream);
        if (!slot && !sc_stream_full(stream))
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size,
                               "stream: out of memory for a row of %zu floats", stream->numel);
        if (!slot)
                return sc_errf(SC_ERR_AGAIN, errstr, errstr_size,
                               "stream: full at %zu samples (partition should be paused)",
                               stream->spec.cap);
        memcpy(slot, x, stream->numel * sizeof(float));
        return sc_stream_push_slot(stream, label, partition, offset, t, errstr, errstr_size);
}

sc_err_t sc_stream_reject(sc_stream_t *stream, int32_t partition, int64_t offset,
                          sc_decode_fault_t fault, double t, int *first_seen, char *errstr,
                          size_t errstr_size)
{
        uint32_t epoch;
        sc_err_t err;

        if (first_seen)
                *first_seen = 0;
        if (!isfinite(t))
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size, "stream: time is not finite");
        if (fault == SC_DECODE_OK || (int)fault < 0 || fault >= SC_DECODE_FAULT__END)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "stream: reject needs a fault kind");
        err = sc_offsets_track(stream->offsets, partition, offset, &epoch, errstr, errstr_size);
        if (err)
                return err;
        (void)sc_offsets_done(stream->offsets, partition, offset, epoch, NULL, 0);
        sc_stream_time(stream, t);
        stream->stats.consumed++;
        stream->stats.rejected++;
        int first = sc_decode_stats_add(&stream->stats.faults, fault);
        if (first_seen)
                *first_seen = first;
        return SC_OK;
}

sc_err_t sc_stream_skip(sc_stream_t *stream, int32_t partition, int64_t offset, char *errstr,
                        size_t errstr_size)
{
        uint32_t epoch;
        sc_err_t err =
            sc_offsets_track(stream->offsets, partition, offset, &epoch, errstr, errstr_size);
        if (err)
                return err;
        (void)sc_offsets_done(stream->offsets, partition, offset, epoch, NULL, 0);
        stream->stats.skipped++;
        return SC_OK;
}

size_t sc_stream_count(const sc_stream_t *stream)
{
        return stream->count;
}

double sc_stream_rate(sc_stream_t *stream, double t)
{
        if (!isfinite(t))
                return 0.0;
        t = sc_stream_time(stream, t);
        if (!stream->rate.started)
                sc_rate_observe(&stream->rate, t, 0.0);
        /* Asked at every poll: chunks of a stream gone quiet after a backlog
         * are given back too, not only at a sample's release. */
        if (stream->made > 1)
                sc_stream_trim(stream);
        return sc_rate_get(&stream->rate, t);
}

void sc_stream_seed_rate(sc_stream_t *stream, double rate)
{
        sc_rate_seed(&stream->rate, rate);
}

sc_err_t sc_stream_reserve(sc_stream_t *stream, size_t lend_max, char *errstr, size_t errstr_size)
{
        if (lend_max <= stream->lend_max)
                return SC_OK;
        if (lend_max > SC_STREAM_CAP_MAX ||
            stream->spec.cap + 1 + lend_max > SIZE_MAX / sizeof(float) / stream->numel)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "stream: %zu samples to lend is out of range", lend_max);
        if (sc_stream_slab(stream, stream->spec.cap + 1 + lend_max))
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size,
                               "stream: out of memory for %zu more samples", lend_max);
        stream->lend_max = lend_max;
        return SC_OK;
}

/* Moves the n oldest buffered samples (n <= count) out of the ring: their
 * slots, labels and refs to the arrays; they become inflight, their slots
 * lent. */
static void sc_stream_pop(sc_stream_t *s, size_t n, uint32_t *slots, int32_t *labels,
                          sc_stream_ref_t *refs, double t)
{
        if (isfinite(t))
                t = sc_stream_time(s, t);
        else
                t = s->t_now;
        for (size_t i = 0; i < n; i++) {
                uint32_t slot = s->ring[s->head];
                slots[i] = slot;
                labels[i] = s->labels[slot];
                refs[i] = s->refs[slot];
                double lat = t - s->refs[slot].t;
                if (lat < 0)
                        lat = 0;
                s->stats.latency_sum += lat;
                if (lat > s->stats.latency_max)
                        s->stats.latency_max = lat;
                s->head = sc_stream_idx(s, 1);
        }
        s->count -= n;
        s->lent += n;
        s->stats.buffered -= n;
        s->stats.inflight += n;
        s->stats.taken += n;
        sc_stream_update_flow(s);
}

size_t sc_stream_lend(sc_stream_t *stream, size_t n, uint32_t *slots, int32_t *labels,
                      sc_stream_ref_t *refs, double t)
{
        if (n > stream->count)
                n = stream->count;
        if (n > stream->lend_max - stream->lent)
                n = stream->lend_max - stream->lent;
        sc_stream_pop(stream, n, slots, labels, refs, t);
        return n;
}

const float *sc_stream_row(const sc_stream_t *stream, uint32_t slot)
{
        return sc_stream_row_ptr(stream, slot);
}

void sc_stream_release(sc_stream_t *stream, uint32_t slot)
{
        stream->lent--;
        sc_stream_free_slot(stream, slot);
}

size_t sc_stream_take(sc_stream_t *stream, size_t n, float *x, int32_t *labels,
                      sc_stream_ref_t *refs, double t)
{
        uint32_t slots[256];
        size_t done = 0;
        if (n > stream->count)
                n = stream->count;
        /* In chunks: each row copied out and its slot freed at once. */
        while (done < n) {
                size_t k = n - done < 256 ? n - done : 256;
                sc_stream_pop(stream, k, slots, labels + done, refs + done, t);
                for (size_t i = 0; i < k; i++) {
                        memcpy(x + (done + i) * stream->numel, sc_stream_row(stream, slots[i]),
                               stream->numel * sizeof(float));
                        sc_stream_release(stream, slots[i]);
                }
                done += k;
        }
        return n;
}

static int sc_stream_epoch_revoked(const sc_stream_t *s, uint32_t epoch)
{
        for (size_t i = 0; i < s->n_revoked; i++)
                if (s->revoked_epochs[i] == epoch)
                        return 1;
        return 0;
}

int sc_stream_ref_revoked(const sc_stream_t *stream, const sc_stream_ref_t *ref)
{
        return stream->stats.orphaned > 0 && sc_stream_epoch_revoked(stream, ref->epoch);
}

void sc_stream_unlend(sc_stream_t *stream, uint32_t slot, const sc_stream_ref_t *ref)
{
        sc_stream_t *s = stream;
        if (!sc_stream_ref_revoked(s, ref))
                return;
        sc_stream_release(s, slot);
        if (--s->stats.orphaned == 0)
                s->n_revoked = 0; /* no sample of a revoked epoch is left */
        s->stats.inflight--;
        s->stats.revoked++;
}

sc_err_t sc_stream_done(sc_stream_t *stream, const sc_stream_ref_t *ref, char *errstr,
                        size_t errstr_size)
{
        sc_stream_t *s = stream;
        if (s->stats.inflight == 0)
                return sc_errf(SC_ERR_STATE, errstr, errstr_size,
                               "stream: partition %" PRId32 " offset %" PRId64
                               " acknowledged but nothing is inflight",
                               ref->partition, ref->offset);
        if (s->stats.orphaned > 0 && sc_stream_epoch_revoked(s, ref->epoch)) {
                if (--s->stats.orphaned == 0)
                        s->n_revoked = 0; /* no sample of a revoked epoch is left */
        } else {
                sc_err_t err = sc_offsets_done(s->offsets, ref->partition, ref->offset, ref->epoch,
                                               errstr, errstr_size);
                if (err)
                        return err;
        }
        s->stats.inflight--;
        s->stats.trained++;
        return SC_OK;
}

sc_stream_flow_t sc_stream_flow(sc_stream_t *stream)
{
        if (stream->paused == stream->told_paused)
                return SC_STREAM_FLOW_NONE;
        stream->told_paused = stream->paused;
        return stream->paused ? SC_STREAM_FLOW_PAUSE : SC_STREAM_FLOW_RESUME;
}

int sc_stream_paused(const sc_stream_t *stream)
{
        return stream->paused;
}

size_t sc_stream_commits(sc_stream_t *stream, sc_offsets_commit_t *out, size_t max)
{
        return sc_offsets_changed(stream->offsets, out, max);
}

const sc_offsets_t *sc_stream_offsets(const sc_stream_t *stream)
{
        return stream->offsets;
}

size_t sc_stream_revoke(sc_stream_t *stream, int32_t partition)
{
        sc_stream_t *s = stream;
        size_t kept = 0, removed = 0;
        uint32_t epoch = sc_offsets_epoch(s->offsets, partition);

        if (epoch == 0)
                return 0;
        if (s->n_revoked == s->cap_revoked) {
                size_t nc = s->cap_revoked ? 2 * s->cap_revoked : 8;
                uint32_t *ne = sc_realloc(s->revoked_epochs, nc * sizeof(*ne));
                if (!ne)
                        return 0; /* nothing changed; the caller may retry */
                s->revoked_epochs = ne;
                s->cap_revoked = nc;
        }
        /* Compact the ring in place, keeping other partitions in order; the
         * revoked samples' slots are freed (no row moves). */
        for (size_t i = 0; i < s->count; i++) {
                uint32_t slot = s->ring[sc_stream_idx(s, i)];
                if (s->refs[slot].partition == partition) {
                        sc_slot_heap_push(s, slot);
                        s->chunk_used[slot / SC_STREAM_CHUNK]--;
                        removed++;
                        continue;
                }
                s->ring[sc_stream_idx(s, kept++)] = slot;
        }
        size_t outstanding = sc_offsets_forget(s->offsets, partition);
        if (outstanding > removed)
                s->revoked_epochs[s->n_revoked++] = epoch;
        s->count = kept;
        sc_stream_trim(s);
        s->stats.buffered -= removed;
        s->stats.revoked += removed;
        s->stats.orphaned += outstanding - removed;
        sc_stream_update_flow(s);
        return removed;
}

const sc_stream_stats_t *sc_stream_stats(const sc_stream_t *stream)
{
        return &stream->stats;
}

sc_err_t sc_stream_check(const sc_stream_t *stream, char *errstr, size_t errstr_size)
{
        const sc_stream_stats_t *st = &stream->stats;
        uint64_t sum =
            st->rejected + st->dropped + st->revoked + st->buffered + st->inflight + st->trained;
        size_t outstanding = sc_offsets_outstanding(stream->offsets, -1);

        if (st->consumed != sum)
                return sc_errf(SC_ERR_STATE, errstr, errstr_size,
                               "stream accounting: consumed %" PRIu64 " != rejected %" PRIu64
                               " + dropped %" PRIu64 " + revoked %" PRIu64 " + buffered %" PRIu64
                               " + inflight %" PRIu64 " + trained %" PRIu64,
                               st->consumed, st->rejected, st->dropped, st->revoked, st->buffered,
                               st->inflight, st->trained);
        if (st->buffered != stream->count)
                return sc_errf(SC_ERR_STATE, errstr, errstr_size,
                               "stream accounting: buffered %" PRIu64 " but %zu in the buffer",
                               st->buffered, stream->count);
        if (stream->count + stream->lent + stream->n_free != stream->nslots ||
            stream->lent > st->inflight)
                return sc_errf(SC_ERR_STATE, errstr, errstr_size,
                               "stream slots: %zu buffered + %zu lent + %zu free != %zu "
                               "(inflight %" PRIu64 ")",
                               stream->count, stream->lent, stream->n_free, stream->nslots,
                               st->inflight);
        size_t used = 0;
        for (size_t k = 0; k < stream->nchunks; k++) {
                used += stream->chunk_used[k];
                if ((stream->chunks[k] != NULL) != (k < stream->made) ||
                    (k >= stream->made && stream->chunk_used[k]))
                        return sc_errf(SC_ERR_STATE, errstr, errstr_size,
                                       "stream chunk %zu: %s, %u slot(s) used, %zu made", k,
                                       stream->chunks[k] ? "allocated" : "not allocated",
                                       stream->chunk_used[k], stream->made);
        }
        if (used != stream->nslots - stream->n_free)
                return sc_errf(SC_ERR_STATE, errstr, errstr_size,
                               "stream chunks: %zu slots used, %zu not free", used,
                               stream->nslots - stream->n_free);
        if (st->orphaned > st->inflight ||
            outstanding != st->buffered + st->inflight - st->orphaned)
                return sc_errf(SC_ERR_STATE, errstr, errstr_size,
                               "stream accounting: %zu offsets outstanding, expected buffered "
                               "%" PRIu64 " + inflight %" PRIu64 " - orphaned %" PRIu64,
                               outstanding, st->buffered, st->inflight, st->orphaned);
        if (st->faults.rejected != st->rejected)
                return sc_errf(SC_ERR_STATE, errstr, errstr_size,
                               "stream accounting: %" PRIu64 " rejected but %" PRIu64
                               " faults counted",
                               st->rejected, st->faults.rejected);
        return SC_OK;
}
