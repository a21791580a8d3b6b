/* ingest.c — one record into its topic's stream: the stream made on first
 * use, the record decoded into the ring slot, buffered or rejected. */
#include "sc_ingest.h"

#include "sc_alloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* A partition a resumed checkpoint covers: every offset below next and
 * those in done (increasing) are in the model already. */
typedef struct sc_ingest_cover {
        char *topic;
        int stream; /* its stream's index, -1 until the stream is made */
        int32_t partition;
        int64_t next, limit; /* limit: past it nothing is skipped */
        int64_t *done;
        size_t ndone;
        int active; /* records at or below limit may still come */
} sc_ingest_cover_t;

/* A rate a resumed checkpoint measured for a topic (sc_ingest_rate_seed). */
typedef struct sc_ingest_seed {
        char *topic;
        double rate;
} sc_ingest_seed_t;

struct sc_ingest_s {
        sc_ingest_spec_t spec;
        sc_ingest_stream_t streams[SC_BATCH_MAX_STREAMS];
        int n_streams;
        sc_batcher_t *batcher;
        sc_ingest_cover_t *covers;
        size_t n_covers, n_active;
        sc_ingest_seed_t *seeds;
        size_t n_seeds;
};

sc_err_t sc_ingest_new(sc_ingest_t **ingestp, const sc_ingest_spec_t *spec, char *errstr,
                       size_t errstr_size)
{
        sc_err_t err;
        *ingestp = NULL;
        if (!spec->decoder || spec->numel == 0)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "ingest: a decoder and a sample size are needed");
        if ((err = sc_stream_spec_check(&spec->stream, errstr, errstr_size)) ||
            (err = sc_batch_spec_check(&spec->batch, errstr, errstr_size)))
                return err;
        sc_ingest_t *in = sc_calloc(1, sizeof(*in));
        if (!in)
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "ingest: out of memory");
        in->spec = *spec;
        *ingestp = in;
        return SC_OK;
}

void sc_ingest_destroy(sc_ingest_t *ingest)
{
        if (!ingest)
                return;
        sc_batcher_destroy(ingest->batcher);
        for (int i = 0; i < ingest->n_streams; i++) {
                sc_stream_destroy(ingest->streams[i].stream);
                sc_free(ingest->streams[i].topic);
        }
        for (size_t i = 0; i < ingest->n_covers; i++) {
                sc_free(ingest->covers[i].topic);
                sc_free(ingest->covers[i].done);
        }
        sc_free(ingest->covers);
        for (size_t i = 0; i < ingest->n_seeds; i++)
                sc_free(ingest->seeds[i].topic);
        sc_free(ingest->seeds);
        sc_free(ingest);
}

int sc_ingest_find(const sc_ingest_t *ingest, const char *topic)
{
        for (int i = 0; i < ingest->n_streams; i++)
                if (!strcmp(ingest->streams[i].topic, topic))
                        return i;
        return -1;
}

sc_err_t sc_ingest_stream(sc_ingest_t *ingest, const char *topic, int *index, char *errstr,
                          size_t errstr_size)
{
        char why[512];
        sc_err_t err;
        int i = sc_ingest_find(ingest, topic);
        if (i >= 0) {
                *index = i;
                return SC_OK;
        }
        if (ingest->n_streams == SC_BATCH_MAX_STREAMS)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size, "topic %s: more than %d topics",
                               topic, SC_BATCH_MAX_STREAMS);
        sc_ingest_stream_t *is = &ingest->streams[ingest->n_streams];
        memset(is, 0, sizeof(*is));
        ingest->spec.decoder(ingest->spec.decoder_opaque, topic, &is->dspec);
        if ((err = sc_decode_spec_check(&is->dspec, why, sizeof(why))))
                goto out_why;
        if ((err = sc_stream_new(&is->stream, &ingest->spec.stream, ingest->spec.numel, why,
                                 sizeof(why))))
                goto out_why;
        if (!(is->topic = sc_strdup(topic))) {
                err = sc_errf(SC_ERR_NOMEM, why, sizeof(why), "out of memory");
                goto out_free_stream;
        }
        err = ingest->batcher ? sc_batcher_add_stream(ingest->batcher, is->stream, why, sizeof(why))
                              : sc_batcher_new(&ingest->batcher, &ingest->spec.batch, &is->stream,
                                               1, ingest->spec.seed, why, sizeof(why));
        if (err)
                goto out_free_topic;
        for (size_t k = 0; k < ingest->n_seeds; k++)
                if (!strcmp(ingest->seeds[k].topic, topic))
                        sc_stream_seed_rate(is->stream, ingest->seeds[k].rate);
        *index = ingest->n_streams++;
        return SC_OK;
out_free_topic:
        sc_free(is->topic);
out_free_stream:
        sc_stream_destroy(is->stream);
out_why:
        memset(is, 0, sizeof(*is));
        return sc_errf(err, errstr, errstr_size, "topic %s: %s", topic, why);
}

int sc_ingest_count(const sc_ingest_t *ingest)
{
        return ingest->n_streams;
}

const sc_ingest_stream_t *sc_ingest_at(const sc_ingest_t *ingest, int index)
{
        return index >= 0 && index < ingest->n_streams ? &ingest->streams[index] : NULL;
}

void sc_ingest_stream_avro(sc_ingest_t *ingest, int index, const struct sc_avro_cache *cache)
{
        if (index >= 0 && index < ingest->n_streams)
                ingest->streams[index].dspec.avro = cache;
}

sc_batcher_t *sc_ingest_batcher(const sc_ingest_t *ingest)
{
        return ingest->batcher;
}

void sc_ingest_totals(const sc_ingest_t *ingest, sc_stream_stats_t *sum)
{
        memset(sum, 0, sizeof(*sum));
        for (int i = 0; ingest && i < ingest->n_streams; i++) {
                const sc_stream_stats_t *s = sc_stream_stats(ingest->streams[i].stream);
                sum->consumed += s->consumed;
                sum->rejected += s->rejected;
                sum->dropped += s->dropped;
                sum->revoked += s->revoked;
                sum->buffered += s->buffered;
                sum->inflight += s->inflight;
                sum->trained += s->trained;
                sum->orphaned += s->orphaned;
                sum->peak_buffered += s->peak_buffered;
                sum->pauses += s->pauses;
                sum->latency_sum += s->latency_sum;
                sum->taken += s->taken;
                sum->skipped += s->skipped;
                sum->chunks_freed += s->chunks_freed;
                if (s->latency_max > sum->latency_max)
                        sum->latency_max = s->latency_max;
                for (int k = 0; k < SC_DECODE_FAULT__END; k++)
                        sum->faults.count[k] += s->faults.count[k];
                sum->faults.rejected += s->faults.rejected;
        }
}

/* ---- resuming from a checkpoint ---- */

static sc_ingest_cover_t *sc_ingest_cover_find(sc_ingest_t *ingest, const char *topic,
                                               int32_t partition)
{
        for (size_t i = 0; i < ingest->n_covers; i++)
                if (ingest->covers[i].partition == partition &&
                    !strcmp(ingest->covers[i].topic, topic))
                        return &ingest->covers[i];
        return NULL;
}

static sc_err_t sc_ingest_cover_check(const char *topic, int32_t partition, int64_t next,
                                      const int64_t *done, size_t ndone, char *errstr,
                                      size_t errstr_size)
{
        if (partition < 0 || next < 0)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "%s [%" PRId32 "]: next offset %" PRId64 ": expected >= 0", topic,
                               partition, next);
        for (size_t k = 0; k < ndone; k++)
                if (done[k] <= next || (k > 0 && done[k] <= done[k - 1]))
                        return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                                       "%s [%" PRId32 "]: finished offsets must increase above "
                                       "the next offset %" PRId64 " (got %" PRId64 ")",
                                       topic, partition, next, done[k]);
        return SC_OK;
}

sc_err_t sc_ingest_cover_set(sc_ingest_t *ingest, const char *topic, int32_t partition,
                             int64_t next, const int64_t *done, size_t ndone, char *errstr,
                             size_t errstr_size)
{
        sc_ingest_cover_t *c = sc_ingest_cover_find(ingest, topic, partition);
        if (!c)
                return sc_ingest_cover_add(ingest, topic, partition, next, done, ndone, errstr,
                                           errstr_size);
        sc_err_t err =
            sc_ingest_cover_check(topic, partition, next, done, ndone, errstr, errstr_size);
        if (err)
                return err;
        int64_t *d = ndone ? sc_malloc(ndone * sizeof(int64_t)) : NULL;
        if (ndone && !d)
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "ingest: out of memory");
        if (ndone)
                memcpy(d, done, ndone * sizeof(int64_t));
        sc_free(c->done);
        c->done = d;
        c->ndone = ndone;
        c->next = next;
        c->limit = ndone ? done[ndone - 1] : next - 1;
        if (!c->active)
                ingest->n_active++;
        c->active = 1;
        return SC_OK;
}

sc_err_t sc_ingest_cover_add(sc_ingest_t *ingest, const char *topic, int32_t partition,
                             int64_t next, const int64_t *done, size_t ndone, char *errstr,
                             size_t errstr_size)
{
        sc_err_t err =
            sc_ingest_cover_check(topic, partition, next, done, ndone, errstr, errstr_size);
        if (err)
                return err;
        if (sc_ingest_cover_find(ingest, topic, partition))
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size, "%s [%" PRId32 "]: covered twice",
                               topic, partition);
        sc_ingest_cover_t *nc =
            sc_realloc(ingest->covers, (ingest->n_covers + 1) * sizeof(*ingest->covers));
        if (!nc)
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "ingest: out of memory");
        ingest->covers = nc;
        sc_ingest_cover_t *c = &nc[ingest->n_covers];
        memset(c, 0, sizeof(*c));
        c->topic = sc_strdup(topic);
        c->done = ndone ? sc_malloc(ndone * sizeof(int64_t)) : NULL;
        if (!c->topic || (ndone && !c->done)) {
                sc_free(c->topic);
                sc_free(c->done);
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "ingest: out of memory");
        }
        if (ndone)
                memcpy(c->done, done, ndone * sizeof(int64_t));
        c->ndone = ndone;
        c->partition = partition;
        c->next = next;
        c->limit = ndone ? done[ndone - 1] : next - 1;
        c->stream = sc_ingest_find(ingest, topic);
        c->active = 1;
        ingest->n_covers++;
        ingest->n_active++;
        return SC_OK;
}

int sc_ingest_cover_next(const sc_ingest_t *ingest, const char *topic, int32_t partition,
                         int64_t *next)
{
        const sc_ingest_cover_t *c = sc_ingest_cover_find((sc_ingest_t *)ingest, topic, partition);
        if (!c)
                return 0;
        *next = c->next;
        return 1;
}

/* 1 if the record at (index, partition, offset) is covered by a resumed
 * checkpoint. A cover is retired once its partition's commit position is
 * past its last offset: no record it holds can come again (a revocation
 * and a re-read start at the commit position). */
static int sc_ingest_covered(sc_ingest_t *ingest, int index, int32_t partition, int64_t offset)
{
        for (size_t i = 0; i < ingest->n_covers; i++) {
                sc_ingest_cover_t *c = &ingest->covers[i];
                if (!c->active || c->partition != partition)
                        continue;
                if (c->stream < 0 && !strcmp(c->topic, ingest->streams[index].topic))
                        c->stream = index;
                if (c->stream != index)
                        continue;
                if (offset > c->limit) {
                        int64_t pos;
                        if (!sc_offsets_position(sc_stream_offsets(ingest->streams[index].stream),
                                                 partition, &pos) &&
                            pos > c->limit) {
                                c->active = 0;
                                ingest->n_active--;
                        }
                        return 0;
                }
                if (offset < c->next)
                        return 1;
                size_t lo = 0, hi = c->ndone;
                while (lo < hi) {
                        size_t mid = lo + (hi - lo) / 2;
                        if (c->done[mid] < offset)
                                lo = mid + 1;
                        else
                                hi = mid;
                }
                return lo < c->ndone && c->done[lo] == offset;
        }
        return 0;
}

/* Offsets between consumed ones that a cover spans are listed one by one;
 * past this many a cover keeps only its next offset (those records would
 * be trained again after a restart, never lost). */
#define SC_INGEST_COVER_SPAN_MAX ((int64_t)1 << 20)

/* A partition's cover now: what its stream consumed and finished, merged
 * with the resumed cover of the partition (c, or NULL): offsets the resumed
 * model holds that were not read again since. *donep is the caller's to
 * free. */
static sc_err_t sc_ingest_cover_now(const sc_offsets_t *o, int32_t partition,
                                    const sc_ingest_cover_t *c, int64_t *nextp, int64_t **donep,
                                    size_t *ndonep)
{
        int64_t pos, last = sc_offsets_last(o, partition);
        *donep = NULL;
        *ndonep = 0;
        if (sc_offsets_position(o, partition, &pos) || last < 0) {
                *nextp = c ? c->next : 0;
                if (c && c->ndone && !(*donep = sc_malloc(c->ndone * sizeof(int64_t))))
                        return SC_ERR_NOMEM;
                if (c && c->ndone)
                        memcpy(*donep, c->done, c->ndone * sizeof(int64_t));
                *ndonep = c ? c->ndone : 0;
                return SC_OK;
        }
        size_t nf = sc_offsets_finished(o, partition, NULL, 0), nc = 0, k = 0;
        int64_t span = 0;
        if (c) {
                for (size_t i = 0; i < c->ndone; i++)
                        nc += c->done[i] > last;
                if (c->next > last + 1 && pos <= last)
                        span = c->next - (last + 1);
                if (span > SC_INGEST_COVER_SPAN_MAX)
                        span = 0;
        }
        if (c && c->next > last + 1 && pos == last + 1) {
                /* everything read is finished, and the resumed model holds
                 * what lies between: the resumed cover still says it all */
                pos = c->next;
                nf = 0;
                span = 0;
        }
        size_t n = nf + (size_t)span + nc;
        int64_t *done = n ? sc_malloc(n * sizeof(int64_t)) : NULL;
        if (n && !done)
                return SC_ERR_NOMEM;
        if (nf)
                sc_offsets_finished(o, partition, done, nf);
        k = nf;
        for (int64_t x = 0; x < span; x++)
                done[k++] = last + 1 + x;
        for (size_t i = 0; c && i < c->ndone; i++)
                if (c->done[i] > last && c->done[i] > pos)
                        done[k++] = c->done[i];
        *nextp = pos;
        *donep = done;
        *ndonep = k;
        return SC_OK;
}

sc_err_t sc_ingest_cover(const sc_ingest_t *ingest, sc_ingest_cover_fn fn, void *opaque,
                         char *errstr, size_t errstr_size)
{
        for (int i = 0; i < ingest->n_streams; i++) {
                const sc_offsets_t *o = sc_stream_offsets(ingest->streams[i].stream);
                size_t np = sc_offsets_partitions(o, NULL, 0);
                int32_t *parts = np ? sc_malloc(np * sizeof(int32_t)) : NULL;
                if (np && !parts)
                        return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "ingest: out of memory");
                sc_offsets_partitions(o, parts, np);
                for (size_t k = 0; k < np; k++) {
                        int64_t next, *done;
                        size_t nd;
                        const sc_ingest_cover_t *c = sc_ingest_cover_find(
                            (sc_ingest_t *)ingest, ingest->streams[i].topic, parts[k]);
                        if (sc_ingest_cover_now(o, parts[k], c, &next, &done, &nd)) {
                                sc_free(parts);
                                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size,
                                               "ingest: out of memory");
                        }
                        fn(opaque, ingest->streams[i].topic, parts[k], next, done, nd);
                        sc_free(done);
                }
                sc_free(parts);
        }
        for (size_t i = 0; i < ingest->n_covers; i++) {
                const sc_ingest_cover_t *c = &ingest->covers[i];
                int64_t next;
                int idx = sc_ingest_find(ingest, c->topic);
                if (idx >= 0 && !sc_offsets_position(sc_stream_offsets(ingest->streams[idx].stream),
                                                     c->partition, &next))
                        continue;
                fn(opaque, c->topic, c->partition, c->next, c->done, c->ndone);
        }
        return SC_OK;
}

sc_err_t sc_ingest_remember(sc_ingest_t *ingest, int index, int32_t partition, char *errstr,
                            size_t errstr_size)
{
        if (index < 0 || index >= ingest->n_streams)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size, "ingest: no stream %d", index);
        const char *topic = ingest->streams[index].topic;
        const sc_offsets_t *o = sc_stream_offsets(ingest->streams[index].stream);
        int64_t pos, next, *done;
        size_t nd;
        if (sc_offsets_position(o, partition, &pos))
                return SC_OK; /* nothing read: a cover, if any, stays as it is */
        sc_ingest_cover_t *c = sc_ingest_cover_find(ingest, topic, partition);
        if (sc_ingest_cover_now(o, partition, c, &next, &done, &nd))
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "ingest: out of memory");
        if (!c) {
                sc_err_t err = sc_ingest_cover_add(ingest, topic, partition, next, done, nd, errstr,
                                                   errstr_size);
                sc_free(done);
                return err;
        }
        sc_free(c->done);
        c->done = done;
        c->ndone = nd;
        c->next = next;
        c->limit = nd ? done[nd - 1] : next - 1;
        c->stream = index;
        if (!c->active)
                ingest->n_active++;
        c->active = 1;
        return SC_OK;
}

sc_err_t sc_ingest_record(sc_ingest_t *ingest, int index, int32_t partition, int64_t offset,
                          const sc_record_t *rec, double t, sc_ingest_result_t *res, char *errstr,
                          size_t errstr_size)
{
        char why[512];
        int32_t label = 0;
        sc_err_t err;
        res->fault = SC_DECODE_OK;
        res->first = 0;
        res->msg[0] = 0;
        res->reason[0] = 0;
        if (index < 0 || index >= ingest->n_streams)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "ingest: no stream %d for offset %" PRId64, index, offset);
        const sc_ingest_stream_t *is = &ingest->streams[index];
        res->skipped = 0;
        if (ingest->n_active && sc_ingest_covered(ingest, index, partition, offset)) {
                char e2[256];
                if ((err = sc_stream_skip(is->stream, partition, offset, e2, sizeof(e2))))
                        return sc_errf(err, errstr, errstr_size,
                                       "%s [%" PRId32 "] offset %" PRId64 ": %s", is->topic,
                                       partition, offset, e2);
                res->skipped = 1;
                return SC_OK;
        }
        float *x = sc_stream_slot(is->stream);
        if (!x && !sc_stream_full(is->stream))
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size,
                               "%s [%" PRId32 "] offset %" PRId64 ": out of memory for its row",
                               is->topic, partition, offset);
        if (!x)
                return sc_errf(SC_ERR_AGAIN, errstr, errstr_size,
                               "%s [%" PRId32 "] offset %" PRId64 ": stream full", is->topic,
                               partition, offset);
        sc_decode_fault_t f = sc_decode_record(&is->dspec, rec, x, &label, why, sizeof(why));
        char e2[256];
        if (f == SC_DECODE_OK)
                err = sc_stream_push_slot(is->stream, label, partition, offset, t, e2, sizeof(e2));
        else
                err = sc_stream_reject(is->stream, partition, offset, f, t, &res->first, e2,
                                       sizeof(e2));
        if (err)
                return sc_errf(err, errstr, errstr_size, "%s [%" PRId32 "] offset %" PRId64 ": %s",
                               is->topic, partition, offset, e2);
        res->fault = f;
        if (f != SC_DECODE_OK)
                snprintf(res->reason, sizeof(res->reason), "%s", why);
        if (res->first)
                snprintf(res->msg, sizeof(res->msg),
                         "%s [%" PRId32 "] offset %" PRId64 ": malformed record (%s): %s; "
                         "further %s records are only counted",
                         is->topic, partition, offset, sc_decode_fault_name(f), why,
                         sc_decode_fault_name(f));
        return SC_OK;
}

/* ---- resuming: rates ---- */

sc_err_t sc_ingest_rate_seed(sc_ingest_t *ingest, const char *topic, double rate, char *errstr,
                             size_t errstr_size)
{
        int i = sc_ingest_find(ingest, topic);
        if (i >= 0) {
                sc_stream_seed_rate(ingest->streams[i].stream, rate);
                return SC_OK;
        }
        for (size_t k = 0; k < ingest->n_seeds; k++)
                if (!strcmp(ingest->seeds[k].topic, topic)) {
                        ingest->seeds[k].rate = rate;
                        return SC_OK;
                }
        sc_ingest_seed_t *ns = sc_realloc(ingest->seeds, (ingest->n_seeds + 1) * sizeof(*ns));
        if (ns)
                ingest->seeds = ns;
        char *t = ns ? sc_strdup(topic) : NULL;
        if (!t)
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size,
                               "topic %s: out of memory for its resumed rate", topic);
        ingest->seeds[ingest->n_seeds++] = (sc_ingest_seed_t){t, rate};
        return SC_OK;
}

void sc_ingest_rates(sc_ingest_t *ingest, double t, sc_ingest_rate_fn fn, void *opaque)
{
        for (int i = 0; i < ingest->n_streams; i++)
                fn(opaque, ingest->streams[i].topic, sc_stream_rate(ingest->streams[i].stream, t));
        for (size_t k = 0; k < ingest->n_seeds; k++)
                if (sc_ingest_find(ingest, ingest->seeds[k].topic) < 0)
                        fn(opaque, ingest->seeds[k].topic, ingest->seeds[k].rate);
}
