/* ingest.c — one record into its topic's stream: the stream made on first
 * use, the record decoded into the ring slot, buffered or rejected. */
#include "sc_ingest.h"

#include "sc_alloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

struct sc_ingest_s {
        sc_ingest_spec_t spec;
        sc_ingest_stream_t streams[SC_BATCH_MAX_STREAMS];
        int n_streams;
        sc_batcher_t *batcher;
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
                if (s->latency_max > sum->latency_max)
                        sum->latency_max = s->latency_max;
                for (int k = 0; k < SC_DECODE_FAULT__END; k++)
                        sum->faults.count[k] += s->faults.count[k];
                sum->faults.rejected += s->faults.rejected;
        }
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
        if (index < 0 || index >= ingest->n_streams)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "ingest: no stream %d for offset %" PRId64, index, offset);
        const sc_ingest_stream_t *is = &ingest->streams[index];
        float *x = sc_stream_slot(is->stream);
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
        if (res->first)
                snprintf(res->msg, sizeof(res->msg),
                         "%s [%" PRId32 "] offset %" PRId64 ": malformed record (%s): %s; "
                         "further %s records are only counted",
                         is->topic, partition, offset, sc_decode_fault_name(f), why,
                         sc_decode_fault_name(f));
        return SC_OK;
}
