/* kafka_source.c — the Kafka source's record path: one stream per topic,
 * backpressure, rebalances, dead letters, loss counting and commits of
 * finished offsets only. */
#include "kafka_source_impl.h"
#include "sc_clock.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Dead-letter counters from the delivery reports served so far. */
void sc_ks_dlq_stats(sc_kafka_source_t *src)
{
        src->stats.ks_dead_letter = (uint64_t)src->dlq_dv.dv_delivered;
        src->stats.ks_dead_letter_failed = src->dlq_refused + (uint64_t)src->dlq_dv.dv_failed;
}

/* ---- streams and partitions ---- */

const sc_conf_decode_t *sc_ks_topic_decode(const sc_conf_t *conf, const char *topic)
{
        const sc_conf_decode_t *d = &conf->streams.decode;
        for (int i = 0; i < conf->source.n_topics; i++)
                if (!strcmp(conf->source.topics[i].topic, topic))
                        d = &conf->source.topics[i].decode;
        return d;
}

/* The decoder of topic: its source.topics element, else streams.*. */
void sc_ks_decode_spec(const sc_conf_t *conf, const char *topic, size_t numel, int n_classes,
                       sc_decode_spec_t *ds)
{
        sc_conf_decode_spec(sc_ks_topic_decode(conf, topic), numel, n_classes, ds);
}

sc_ks_stream_t *sc_ks_find(sc_kafka_source_t *src, const char *topic)
{
        for (int i = 0; i < src->n_streams; i++)
                if (!strcmp(src->streams[i].topic, topic))
                        return &src->streams[i];
        return NULL;
}

/* The decoder of a topic of the source (sc_ingest_decoder_fn). */
static void sc_ks_decoder(void *opaque, const char *topic, sc_decode_spec_t *ds)
{
        sc_kafka_source_t *src = opaque;
        sc_ks_decode_spec(src->conf, topic, src->numel, src->n_classes, ds);
        if (src->conf->source.unlabelled)
                sc_decode_spec_unlabelled(ds);
}

/* The ingest path of the source's own, for a caller that gave none
 * (sc_kafka_source_feed); made on the first record. */
static sc_ingest_t *sc_ks_ingest(sc_kafka_source_t *src, char *errstr, size_t errstr_size)
{
        if (src->ingest)
                return src->ingest;
        sc_ingest_spec_t is = {.numel = src->numel,
                               .stream = src->sspec,
                               .batch = src->bspec,
                               .seed = src->seed,
                               .decoder = sc_ks_decoder,
                               .decoder_opaque = src};
        if (sc_ingest_new(&src->ingest, &is, errstr, errstr_size))
                src->ingest = NULL;
        src->own_ingest = src->ingest != NULL;
        return src->ingest;
}

sc_err_t sc_kafka_source_feed(sc_kafka_source_t *src, sc_ingest_t *ingest, char *errstr,
                              size_t errstr_size)
{
        if (src->ingest || src->n_streams)
                return sc_errf(SC_ERR_STATE, errstr, errstr_size,
                               "the source already feeds an ingest path");
        src->ingest = ingest;
        src->own_ingest = 0;
        return SC_OK;
}

/* The stream of topic, made by the ingest path (and added to its batcher)
 * on first use. NULL (logged) if it cannot be. */
static sc_ks_stream_t *sc_ks_stream_get(sc_kafka_source_t *src, const char *topic)
{
        char why[512];
        sc_err_t err;
        int i;
        sc_ks_stream_t *ks = sc_ks_find(src, topic);
        if (ks)
                return ks;
        if (!src->ingest && sc_ks_ingest(src, why, sizeof(why)) == NULL) {
                sc_ks_logf(src, 3, "topic %s: %s", topic, why);
                return NULL;
        }
        if ((err = sc_ingest_stream(src->ingest, topic, &i, why, sizeof(why)))) {
                if (err != SC_ERR_INVAL)
                        sc_ks_logf(src, 3, "%s", why);
                else if (!src->logged_full++)
                        sc_ks_logf(src, 3, "%s; its partitions are left unconsumed", why);
                return NULL;
        }
        const sc_ingest_stream_t *is = sc_ingest_at(src->ingest, i);
        ks = &src->streams[i];
        memset(ks, 0, sizeof(*ks));
        ks->topic = is->topic;
        ks->stream = is->stream;
        src->n_streams = i + 1;
        if (is->dspec.format == SC_DECODE_AVRO) {
                /* Without a registry (or memory) every record is refused as
                 * unknown_schema, with the reason. */
                if (!src->registry)
                        sc_ks_logf(src, 3,
                                   "topic %s: avro records need "
                                   "source.schema_registry.url",
                                   topic);
                else if (!(ks->avro = sc_avro_cache_new(&is->dspec)))
                        sc_ks_logf(src, 3, "topic %s: out of memory for its schemas", topic);
                sc_ingest_stream_avro(src->ingest, i, ks->avro);
        }
        sc_ks_logf(src, 6, "topic %s: stream %d, %s records", topic, i,
                   sc_decode_format_name(is->dspec.format));
        return ks;
}

static sc_ks_part_t *sc_ks_part(sc_ks_stream_t *ks, int32_t partition, int create)
{
        for (size_t i = 0; i < ks->n_parts; i++)
                if (ks->parts[i].partition == partition)
                        return &ks->parts[i];
        if (!create)
                return NULL;
        if (ks->n_parts == ks->cap_parts) {
                size_t nc = ks->cap_parts ? 2 * ks->cap_parts : 8;
                sc_ks_part_t *np = realloc(ks->parts, nc * sizeof(*np));
                if (!np)
                        return NULL;
                ks->parts = np;
                ks->cap_parts = nc;
        }
        sc_ks_part_t *p = &ks->parts[ks->n_parts++];
        memset(p, 0, sizeof(*p));
        p->partition = partition;
        p->start = p->committed = p->received = p->ts_ms = -1;
        p->durable = p->durable_sent = -1;
        sc_kafka_gap_init(&p->gap, -1);
        return p;
}

/* Pauses the stream's partitions that should be (all of them while the
 * stream is paused for backpressure, else those ahead in time) and resumes
 * the others. */
static void sc_ks_flow_apply(sc_kafka_source_t *src, sc_ks_stream_t *ks)
{
        for (int pause = 1; pause >= 0; pause--) {
                rd_kafka_topic_partition_list_t *l =
                    rd_kafka_topic_partition_list_new((int)ks->n_parts);
                if (!l)
                        return;
                for (size_t i = 0; i < ks->n_parts; i++) {
                        sc_ks_part_t *p = &ks->parts[i];
                        int want = ks->flow_paused || p->ahead;
                        if (p->assigned && p->paused != want && want == pause)
                                rd_kafka_topic_partition_list_add(l, ks->topic, p->partition);
                }
                if (l->cnt > 0) {
                        rd_kafka_resp_err_t e = pause ? rd_kafka_pause_partitions(src->rk, l)
                                                      : rd_kafka_resume_partitions(src->rk, l);
                        for (int i = 0; i < l->cnt; i++) {
                                sc_ks_part_t *p = sc_ks_part(ks, l->elems[i].partition, 0);
                                if (e || l->elems[i].err || !p)
                                        continue;
                                p->paused = pause;
                                if (!pause)
                                        p->rx_at = src->t_now; /* time to deliver again */
                                src->stats.ks_paused_partitions += pause ? 1 : -1;
                                if (pause)
                                        src->stats.ks_pauses++;
                                else
                                        src->stats.ks_resumes++;
                                if (pause && !ks->flow_paused)
                                        src->stats.ks_align_pauses++;
                        }
                        if (e)
                                sc_ks_logf(src, 4, "topic %s: %s failed: %s", ks->topic,
                                           pause ? "pause" : "resume", rd_kafka_err2str(e));
                }
                rd_kafka_topic_partition_list_destroy(l);
        }
}

/* Marks the partitions that run ahead in time (source.align). The floor is
 * the oldest last-read timestamp among the partitions that still have
 * records to read (their end from the consumer's last fetch response): a
 * partition more than align seconds past it is ahead, and stays so until it
 * is within half of that. With no such partition nothing is ahead. A
 * partition holds no one back when the consumer reported its end
 * (PARTITION_EOF) since its last record, or when it runs and was given no
 * record for 10 s (since it was read, assigned or resumed). A floor
 * partition paused for backpressure goes on as soon as the trainer takes
 * from its full stream. Decided again at a partition's first timestamp, and
 * after 50 ms (at the next poll) or 256 records, whichever comes first. */
static void sc_ks_align(sc_kafka_source_t *src)
{
        double align = src->conf->source.align;
        if (align <= 0 || (src->align_at > 0 && src->t_now - src->align_at < 0.05 &&
                           src->stats.ks_received - src->align_rx < 256))
                return;
        src->align_at = src->t_now;
        src->align_rx = src->stats.ks_received;
        int64_t floor = INT64_MAX;
        src->align_stream = -1;
        for (int i = 0; i < src->n_streams; i++) {
                sc_ks_stream_t *ks = &src->streams[i];
                for (size_t j = 0; j < ks->n_parts; j++) {
                        sc_ks_part_t *p = &ks->parts[j];
                        int64_t lo, hi;
                        /* At its end (the broker's, past a transaction's
                         * commit marker that is never read), or running and
                         * given nothing for 10 s (the same without
                         * enable.partition.eof, or a broker that does not
                         * answer): not a floor to wait for. */
                        if (!p->assigned || p->ts_ms < 0 || p->ts_ms >= floor || p->at_end ||
                            (!p->paused && src->t_now - p->rx_at > 10.0) ||
                            rd_kafka_get_watermark_offsets(src->rk, ks->topic, p->partition, &lo,
                                                           &hi) ||
                            hi <= p->received)
                                continue;
                        floor = p->ts_ms;
                        src->align_stream = i;
                        src->align_part = p->partition;
                }
        }
        src->align_floor = floor;
        int64_t run = (int64_t)(align * 1000.0), rest = run / 2;
        for (int i = 0; i < src->n_streams; i++) {
                sc_ks_stream_t *ks = &src->streams[i];
                for (size_t j = 0; j < ks->n_parts; j++) {
                        sc_ks_part_t *p = &ks->parts[j];
                        if (!p->assigned || p->ts_ms < 0 || floor == INT64_MAX)
                                p->ahead = 0;
                        else
                                p->ahead = p->ts_ms - floor > (p->ahead ? rest : run);
                }
        }
}

/* Applies each stream's backpressure. A stream above its high watermark
 * keeps taking records until it is full; then they are held, and only when
 * hold_max are held are its partitions paused, until the held backlog is
 * down to half of that. Pausing is costly in librdkafka: it discards what was
 * prefetched and the partition is fetched again from the first record not
 * handed over, about half a second after it resumes; the held backlog and the
 * full buffer keep the trainer supplied meanwhile. Partitions ahead in time
 * (sc_ks_align) are paused too. */
static void sc_ks_flow(sc_kafka_source_t *src)
{
        sc_ks_align(src);
        for (int i = 0; i < src->n_streams; i++) {
                sc_ks_stream_t *ks = &src->streams[i];
                sc_stream_flow(ks->stream); /* consume the signal; the state decides */
                int want =
                    ks->flow_paused ? ks->n_held > src->hold_max / 2 : ks->n_held >= src->hold_max;
                if (src->hold_max == 0)
                        want = sc_stream_paused(ks->stream) || ks->n_held > 0;
                ks->flow_paused = want;
                for (size_t j = 0; j < ks->n_parts; j++) {
                        const sc_ks_part_t *p = &ks->parts[j];
                        if (p->assigned && p->paused != (want || p->ahead)) {
                                sc_ks_flow_apply(src, ks);
                                break;
                        }
                }
        }
}

/* ---- commits ---- */

/* ---- finished offsets in commit metadata (shared-model mode) ----
 *
 * "scadles-done/1" then, for each run of finished offsets above the
 * committed one, " D+L": offsets next + D .. next + D + L - 1 (D >= 1,
 * runs increasing and apart). At most SC_KS_META_MAX bytes (Kafka refuses
 * metadata over offset.metadata.max.bytes, 4096 by default): runs that do
 * not fit are left out, and their records are read and trained again. */

/* The metadata for partition committed at next, malloc'd (*lenp bytes;
 * librdkafka frees it with the list), or NULL when nothing above next is
 * finished (or out of memory: the commit goes without it). */
void *sc_ks_meta_encode(const sc_offsets_t *o, int32_t partition, int64_t next, size_t *lenp)
{
        *lenp = 0;
        size_t nf = sc_offsets_finished(o, partition, NULL, 0);
        if (!nf)
                return NULL;
        int64_t *f = malloc(nf * sizeof(int64_t));
        char *m = f ? malloc(SC_KS_META_MAX) : NULL;
        if (!m) {
                free(f);
                return NULL;
        }
        sc_offsets_finished(o, partition, f, nf);
        size_t len = (size_t)snprintf(m, SC_KS_META_MAX, "%s", SC_KS_META_PREFIX);
        for (size_t i = 0; i < nf;) {
                size_t j = i + 1;
                while (j < nf && f[j] == f[j - 1] + 1)
                        j++;
                char run[48];
                int k = snprintf(run, sizeof(run), " %" PRId64 "+%zu", f[i] - next, j - i);
                if (f[i] <= next || k <= 0 || len + (size_t)k > SC_KS_META_MAX)
                        break;
                memcpy(m + len, run, (size_t)k);
                len += (size_t)k;
                i = j;
        }
        free(f);
        *lenp = len;
        return m;
}

/* Reads one decimal integer >= 1 at *p (below 2^62); 0 when there is none. */
static int sc_ks_meta_int(const char **p, const char *end, int64_t *v)
{
        int64_t x = 0;
        const char *q = *p;
        while (q < end && *q >= '0' && *q <= '9' && x < ((int64_t)1 << 58))
                x = x * 10 + (*q++ - '0');
        if (q == *p || x < 1 || (q < end && *q >= '0' && *q <= '9'))
                return 0;
        *p = q;
        *v = x;
        return 1;
}

/* The finished offsets a commit at next names (*donep malloc'd, *ndonep of
 * them; none for metadata that is empty or not ours; donep NULL: only
 * counted). Metadata is what any member of the group wrote: SC_ERR_CORRUPT
 * with why filled for a malformed one (the caller ignores it: those records
 * are read again). */
sc_err_t sc_ks_meta_decode(const char *meta, size_t len, int64_t next, int64_t **donep,
                           size_t *ndonep, char *why, size_t why_size)
{
        size_t pl = strlen(SC_KS_META_PREFIX);
        int64_t total = 0, prev_end = next + 1;
        if (donep)
                *donep = NULL;
        *ndonep = 0;
        if (!meta || len < pl || memcmp(meta, SC_KS_META_PREFIX, pl))
                return SC_OK;
        const char *p = meta + pl, *end = meta + len;
        /* first pass: check and count */
        while (p < end) {
                int64_t d, l;
                if (*p++ != ' ' || !sc_ks_meta_int(&p, end, &d) || p >= end || *p++ != '+' ||
                    !sc_ks_meta_int(&p, end, &l))
                        return sc_errf(SC_ERR_CORRUPT, why, why_size, "malformed at byte %zu",
                                       (size_t)(p - meta));
                if (next + d < prev_end || l > SC_KS_META_OFFSETS_MAX - total)
                        return sc_errf(SC_ERR_CORRUPT, why, why_size,
                                       "runs overlap, go backwards or name more than %" PRId64
                                       " offsets",
                                       SC_KS_META_OFFSETS_MAX);
                prev_end = next + d + l + 1;
                total += l;
        }
        if (!total || !donep) {
                *ndonep = (size_t)total;
                return SC_OK;
        }
        int64_t *done = malloc((size_t)total * sizeof(int64_t));
        if (!done)
                return sc_errf(SC_ERR_NOMEM, why, why_size, "out of memory");
        size_t k = 0;
        for (p = meta + pl; p < end;) {
                int64_t d = 0, l = 0;
                p++;
                sc_ks_meta_int(&p, end, &d);
                p++;
                sc_ks_meta_int(&p, end, &l);
                for (int64_t x = 0; x < l; x++)
                        done[k++] = next + d + x;
        }
        *donep = done;
        *ndonep = k;
        return SC_OK;
}

/* Notes the offsets of l the broker accepted. */
static void sc_ks_committed(sc_kafka_source_t *src, const rd_kafka_topic_partition_list_t *l)
{
        for (int i = 0; l && i < l->cnt; i++) {
                const rd_kafka_topic_partition_t *tp = &l->elems[i];
                sc_ks_stream_t *ks = tp->err ? NULL : sc_ks_find(src, tp->topic);
                sc_ks_part_t *p = ks ? sc_ks_part(ks, tp->partition, 0) : NULL;
                if (!p || tp->offset < p->committed)
                        continue;
                p->committed = tp->offset;
                size_t named = 0;
                char why[8];
                if (src->commit_covers &&
                    !sc_ks_meta_decode(tp->metadata, tp->metadata_size, tp->offset, NULL, &named,
                                       why, sizeof(why)))
                        p->named = named;
                else
                        p->named = 0;
        }
}

void sc_ks_on_commit(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                     rd_kafka_topic_partition_list_t *offsets, void *opaque)
{
        sc_kafka_source_t *src = opaque;
        (void)rk;
        if (err == RD_KAFKA_RESP_ERR__NO_OFFSET)
                return;
        if (err == RD_KAFKA_RESP_ERR_NO_ERROR)
                sc_ks_committed(src, offsets);
        int bad = err != RD_KAFKA_RESP_ERR_NO_ERROR;
        for (int i = 0; !bad && offsets && i < offsets->cnt; i++)
                bad = offsets->elems[i].err != RD_KAFKA_RESP_ERR_NO_ERROR;
        if (bad) {
                if (!src->stats.ks_commit_errors++)
                        sc_ks_logf(src, 4,
                                   "offset commit failed: %s (retried with the next "
                                   "commit)",
                                   rd_kafka_err2str(err ? err : offsets->elems[0].err));
        }
}

/* Adds a partition at offset to a commit list, with the metadata of its
 * finished offsets in shared-model mode. */
static void sc_ks_commit_add(sc_ks_stream_t *ks, rd_kafka_topic_partition_list_t *l,
                             int32_t partition, int64_t offset, int covers)
{
        rd_kafka_topic_partition_t *tp = rd_kafka_topic_partition_list_add(l, ks->topic, partition);
        tp->offset = offset;
        if (covers)
                tp->metadata = sc_ks_meta_encode(sc_stream_offsets(ks->stream), partition, offset,
                                                 &tp->metadata_size);
}

/* Adds what ks can commit to l: every changed position (all = 0), or every
 * assigned partition's position (all = 1); durable: the positions the last
 * checkpoint covers instead (sc_kafka_source_durable); covers: with the
 * finished offsets above each (sc_kafka_source_commit_covers). */

static void sc_ks_commit_list(sc_ks_stream_t *ks, rd_kafka_topic_partition_list_t *l, int all,
                              int durable, int covers)
{
        sc_offsets_commit_t c[SC_KS_COMMIT_BATCH];
        size_t n;
        /* Durable: only what the last checkpoint's model holds. */
        for (size_t i = 0; durable && i < ks->n_parts; i++) {
                sc_ks_part_t *p = &ks->parts[i];
                if (!p->assigned || p->durable < 0 || (!all && p->durable == p->durable_sent))
                        continue;
                rd_kafka_topic_partition_list_add(l, ks->topic, p->partition)->offset = p->durable;
                p->durable_sent = p->durable;
        }
        if (durable)
                return;
        do {
                n = sc_stream_commits(ks->stream, c, SC_KS_COMMIT_BATCH);
                for (size_t i = 0; !all && i < n; i++)
                        sc_ks_commit_add(ks, l, c[i].partition, c[i].offset, covers);
        } while (n == SC_KS_COMMIT_BATCH);
        for (size_t i = 0; all && i < ks->n_parts; i++) {
                int64_t next;
                if (!ks->parts[i].assigned ||
                    sc_offsets_position(sc_stream_offsets(ks->stream), ks->parts[i].partition,
                                        &next) != SC_OK)
                        continue;
                sc_ks_commit_add(ks, l, ks->parts[i].partition, next, covers);
        }
}

sc_err_t sc_ks_commit(sc_kafka_source_t *src, int sync, int all, char *errstr, size_t errstr_size)
{
        rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(16);
        if (!l)
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "commit: out of memory");
        for (int i = 0; i < src->n_streams; i++)
                sc_ks_commit_list(&src->streams[i], l, all, src->keep_covers, src->commit_covers);
        sc_err_t err = SC_OK;
        if (l->cnt > 0) {
                rd_kafka_resp_err_t e = rd_kafka_commit(src->rk, l, !sync);
                src->last_commit_err = e;
                src->stats.ks_commits++;
                if (sync && !e)
                        sc_ks_committed(src, l);
                if (e) {
                        src->stats.ks_commit_errors++;
                        err = sc_errf(SC_ERR_IO, errstr, errstr_size, "offset commit: %s",
                                      rd_kafka_err2str(e));
                }
        }
        rd_kafka_topic_partition_list_destroy(l);
        return err;
}

void sc_kafka_source_durable_at(sc_kafka_source_t *src, const char *topic, int32_t partition,
                                int64_t next)
{
        sc_ks_stream_t *ks = sc_ks_find(src, topic);
        sc_ks_part_t *p = ks ? sc_ks_part(ks, partition, 0) : NULL;
        if (p)
                p->durable = next;
}

sc_err_t sc_kafka_source_commit(sc_kafka_source_t *src, int sync, char *errstr, size_t errstr_size)
{
        return sc_ks_commit(src, sync, 0, errstr, errstr_size);
}

/* ---- rebalance ---- */

/* Shared-model mode: the finished offsets the group's commit of partition
 * at start names become its cover (replacing an older one), so this owner
 * skips those records: the job's model holds them. */
static void sc_ks_meta_cover(sc_kafka_source_t *src, sc_ks_part_t *p, const char *topic,
                             int32_t partition, int64_t start, const void *meta, size_t len)
{
        char why[256];
        int64_t *done = NULL, at;
        size_t ndone = 0;
        p->resumed = 1; /* never a checkpoint's cover: no seek to it */
        p->named = 0;
        if (sc_ks_meta_decode(meta, len, start, &done, &ndone, why, sizeof(why))) {
                sc_ks_logf(src, 4,
                           "rebalance: %s [%" PRId32 "]: the committed offset's metadata is "
                           "ignored (%s): the records above offset %" PRId64
                           " are read and trained again",
                           topic, partition, why, start);
                return;
        }
        /* A cover of an earlier assignment is replaced, by none if need be. */
        if (!ndone && !sc_ingest_cover_next(src->ingest, topic, partition, &at))
                return;
        if (sc_ingest_cover_set(src->ingest, topic, partition, start, done, ndone, why,
                                sizeof(why))) {
                sc_ks_logf(src, 4, "rebalance: %s", why);
        } else if (ndone) {
                p->named = ndone;
                sc_ks_logf(src, 6,
                           "rebalance: %s [%" PRId32 "]: %zu record(s) above the committed "
                           "offset %" PRId64 " are finished (the job's model holds them): "
                           "skipped when read",
                           topic, partition, ndone, start);
        }
        free(done);
}

static void sc_ks_assign(sc_kafka_source_t *src, rd_kafka_topic_partition_list_t *parts)
{
        /* Where each partition starts: its committed offset (so a jump past
         * it is counted lost), else wherever auto.offset.reset puts it. */
        rd_kafka_topic_partition_list_t *c = rd_kafka_topic_partition_list_copy(parts);
        if (c && rd_kafka_committed(src->rk, c, 10000) != RD_KAFKA_RESP_ERR_NO_ERROR) {
                rd_kafka_topic_partition_list_destroy(c);
                c = NULL;
        }
        for (int i = 0; i < parts->cnt; i++) {
                const rd_kafka_topic_partition_t *tp = &parts->elems[i];
                sc_ks_stream_t *ks = sc_ks_stream_get(src, tp->topic);
                sc_ks_part_t *p = ks ? sc_ks_part(ks, tp->partition, 1) : NULL;
                if (!p)
                        continue;
                p->assigned = 1;
                p->paused = 0;
                int64_t start = -1, at;
                if (c && c->elems[i].err == RD_KAFKA_RESP_ERR_NO_ERROR && c->elems[i].offset >= 0)
                        start = c->elems[i].offset;
                /* The first assignment after a resume starts where the
                 * checkpoint's model stops: what was trained after it died
                 * with the process and is read again. */
                if (!p->resumed &&
                    sc_ingest_cover_next(src->ingest, tp->topic, tp->partition, &at)) {
                        p->resumed = 1;
                        parts->elems[i].offset = at;
                        if (start > at)
                                sc_ks_logf(src, 5,
                                           "resume: %s [%" PRId32 "] from offset %" PRId64
                                           " (the checkpoint's); the group had committed %" PRId64
                                           ": %" PRId64 " record(s) trained after the checkpoint "
                                           "are read again",
                                           tp->topic, tp->partition, at, start, start - at);
                        else
                                sc_ks_logf(src, 6,
                                           "resume: %s [%" PRId32 "] from offset %" PRId64
                                           " (the checkpoint's)",
                                           tp->topic, tp->partition, at);
                        start = at;
                }
                p->named = 0; /* sc_ks_meta_cover sets it */
                if (src->commit_covers && c && start >= 0 && start == c->elems[i].offset)
                        sc_ks_meta_cover(src, p, tp->topic, tp->partition, start,
                                         c->elems[i].metadata, c->elems[i].metadata_size);
                sc_kafka_gap_init(&p->gap, start);
                p->start = start;
                p->committed = start;
                p->received = p->ts_ms = -1;
                p->rx_at = src->t_now;
                p->ahead = p->at_end = 0;
                src->stats.ks_partitions++;
        }
        if (c)
                rd_kafka_topic_partition_list_destroy(c);
        src->stats.ks_assigns++;
        src->stats.ks_awaiting = 0;
}

static void sc_ks_revoke(sc_kafka_source_t *src, rd_kafka_topic_partition_list_t *parts)
{
        char why[512];
        /* What was finished is committed before the partitions go (in
         * shared-model mode every partition, with what finished above its
         * position). */
        if (sc_ks_commit(src, 1, src->commit_covers, why, sizeof(why)))
                sc_ks_logf(src, 4, "rebalance: %s", why);
        for (int i = 0; i < parts->cnt; i++) {
                const rd_kafka_topic_partition_t *tp = &parts->elems[i];
                sc_ks_stream_t *ks = sc_ks_find(src, tp->topic);
                sc_ks_part_t *p = ks ? sc_ks_part(ks, tp->partition, 0) : NULL;
                if (!p || !p->assigned)
                        continue;
                /* Held messages of the partition go back unconsumed. */
                size_t kept = 0;
                for (size_t j = 0; j < ks->n_held; j++) {
                        if (ks->held[j]->partition == tp->partition) {
                                rd_kafka_message_destroy(ks->held[j]);
                                src->stats.ks_held--;
                                src->stats.ks_held_returned++;
                        } else {
                                ks->held[kept++] = ks->held[j];
                        }
                }
                ks->n_held = kept;
                /* Finished records at or after the last committed offset are
                 * read again by the next owner: consumed since then, less those
                 * still outstanding (buffered: returned; inflight: orphaned). */
                int64_t consumed = p->committed >= 0 && p->gap.gp_next > p->committed
                                       ? p->gap.gp_next - p->committed
                                       : 0;
                int64_t again = consumed - (int64_t)sc_offsets_outstanding(
                                               sc_stream_offsets(ks->stream), tp->partition);
                /* In shared-model mode the last commit that went through named
                 * some of them: the next owner skips those. */
                if (src->commit_covers)
                        again -= (int64_t)p->named;
                if (again > 0) {
                        src->stats.ks_redelivered += (uint64_t)again;
                        sc_ks_logf(src, 4,
                                   "rebalance: %s [%" PRId32 "]: %" PRId64
                                   " finished record(s) from offset %" PRId64
                                   " on were not committed before the revocation; the next "
                                   "owner reads them again",
                                   tp->topic, tp->partition, again, p->committed);
                }
                /* A worker that checkpoints what its model holds keeps it
                 * known: read again (by this member, after a rebalance), it
                 * is skipped, and the next checkpoint still reports it. */
                if (src->keep_covers && sc_ingest_remember(src->ingest, (int)(ks - src->streams),
                                                           tp->partition, why, sizeof(why)))
                        sc_ks_logf(src, 3, "rebalance: %s", why);
                uint64_t inflight = sc_stream_stats(ks->stream)->orphaned;
                size_t returned = sc_stream_revoke(ks->stream, tp->partition);
                src->stats.ks_orphaned += sc_stream_stats(ks->stream)->orphaned - inflight;
                if (returned)
                        sc_ks_logf(src, 6,
                                   "rebalance: %s [%" PRId32 "] revoked, %zu buffered "
                                   "sample(s) returned",
                                   tp->topic, tp->partition, returned);
                if (p->paused)
                        src->stats.ks_paused_partitions--;
                p->assigned = 0;
                p->paused = 0;
                src->stats.ks_partitions--;
        }
        /* Samples of the revoked partitions drawn into the shuffle buffer are
         * not trained here: the next owner reads them again. */
        sc_batcher_t *bt = src->ingest ? sc_ingest_batcher(src->ingest) : NULL;
        size_t pooled = bt ? sc_batcher_drop_revoked(bt) : 0;
        if (pooled) {
                src->stats.ks_orphaned -=
                    pooled < src->stats.ks_orphaned ? pooled : src->stats.ks_orphaned;
                sc_ks_logf(src, 6,
                           "rebalance: %zu sample(s) of the revoked partitions left the shuffle "
                           "buffer untrained (the next owner reads them again)",
                           pooled);
        }
        /* A topic left with no partition gives its buffer's memory back. */
        for (int i = 0; i < src->n_streams; i++) {
                sc_ks_stream_t *ks = &src->streams[i];
                size_t held = 0;
                for (size_t k = 0; k < ks->n_parts; k++)
                        held += ks->parts[k].assigned != 0;
                if (!held)
                        sc_stream_shrink(ks->stream);
        }
        src->stats.ks_revokes++;
        src->stats.ks_awaiting = src->stats.ks_partitions == 0;
}

void sc_ks_on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                        rd_kafka_topic_partition_list_t *parts, void *opaque)
{
        sc_kafka_source_t *src = opaque;
        int coop = sc_kafka_cooperative(rk);
        rd_kafka_error_t *error = NULL;
        rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR_NO_ERROR;

        if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
                sc_ks_assign(src, parts);
                if (coop)
                        error = rd_kafka_incremental_assign(rk, parts);
                else
                        e = rd_kafka_assign(rk, parts);
                /* A partition paused before a revocation stays paused in
                 * librdkafka when assigned again: start every one running. */
                rd_kafka_resume_partitions(rk, parts);
        } else {
                sc_ks_revoke(src, parts);
                if (coop)
                        error = rd_kafka_incremental_unassign(rk, parts);
                else
                        e = rd_kafka_assign(rk, NULL);
        }
        if (error) {
                sc_ks_logf(src, 3, "rebalance: %s", rd_kafka_error_string(error));
                rd_kafka_error_destroy(error);
        } else if (e) {
                sc_ks_logf(src, 3, "rebalance: %s", rd_kafka_err2str(e));
        }
        sc_ks_logf(src, 6, "rebalance: %s %d partition(s); %d assigned now",
                   err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS ? "assigned" : "revoked", parts->cnt,
                   src->stats.ks_partitions);
}

/* ---- records ---- */

/* Produces a malformed record to the dead-letter topic: its key, value and
 * headers, plus headers naming the fault and where it came from. */
static void sc_ks_dead_letter(sc_kafka_source_t *src, const rd_kafka_message_t *m,
                              sc_decode_fault_t fault, const char *reason)
{
        char part[16], off[24];
        rd_kafka_headers_t *in = NULL, *h;
        if (!src->dlq)
                return;
        if (rd_kafka_message_headers(m, &in) == RD_KAFKA_RESP_ERR_NO_ERROR && in)
                h = rd_kafka_headers_copy(in);
        else
                h = rd_kafka_headers_new(4);
        const char *topic = rd_kafka_topic_name(m->rkt);
        snprintf(part, sizeof(part), "%" PRId32, m->partition);
        snprintf(off, sizeof(off), "%" PRId64, m->offset);
        rd_kafka_header_add(h, "scadles.error", -1, sc_decode_fault_name(fault), -1);
        rd_kafka_header_add(h, "scadles.topic", -1, topic, -1);
        rd_kafka_header_add(h, "scadles.partition", -1, part, -1);
        rd_kafka_header_add(h, "scadles.offset", -1, off, -1);
        if (reason && reason[0]) /* last: the headers before it keep their order */
                rd_kafka_header_add(h, "scadles.reason", -1, reason, -1);
        rd_kafka_resp_err_t e = rd_kafka_producev(
            src->dlq, RD_KAFKA_V_TOPIC(src->conf->source.dead_letter),
            RD_KAFKA_V_KEY(m->key, m->key_len), RD_KAFKA_V_VALUE(m->payload, m->len),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_HEADERS(h),
            RD_KAFKA_V_OPAQUE(&src->dlq_dv), RD_KAFKA_V_END);
        if (e) {
                rd_kafka_headers_destroy(h); /* not taken on failure */
                src->dlq_refused++;
                sc_ks_dlq_stats(src);
                if (!src->logged_dlq++)
                        sc_ks_logf(src, 3, "dead-letter topic %s: %s",
                                   src->conf->source.dead_letter, rd_kafka_err2str(e));
                return;
        }
        src->dlq_dv.dv_pending++;
        src->dlq_enqueued++;
}

/* An avro record's schema: fetched from the registry the first time its id
 * is seen, compiled into the stream's cache (or refused there, with the
 * registry's reason: its records are then dead-lettered). Returns 0 while
 * the registry cannot be reached (the record is held and tried again), 1
 * when the record can go on to be decoded. */
static int sc_ks_schema(sc_kafka_source_t *src, sc_ks_stream_t *ks, const rd_kafka_message_t *m,
                        double t)
{
        char why[512], err2[512];
        const char *text;
        size_t len;
        int32_t id;
        if (!sc_avro_cache_need(ks->avro, m->payload, m->payload ? m->len : 0, &id))
                return 1;
        int was_down = sc_registry_stats(src->registry)->unavailable;
        double since = sc_registry_stats(src->registry)->outage_since;
        uint64_t reqs = sc_registry_stats(src->registry)->requests;
        sc_registry_result_t r =
            sc_registry_get(src->registry, id, t, &text, &len, why, sizeof(why));
        if (r == SC_REGISTRY_UNAVAILABLE) {
                if (!(ks->n_held && ks->held[0] == m)) /* not one held already */
                        src->registry_held++;
                if (sc_registry_stats(src->registry)->requests != reqs &&
                    sc_registry_stats(src->registry)->unavailable)
                        sc_ks_logf(src, was_down ? 6 : 4,
                                   "schema registry: %s; %s's records are held (its partitions "
                                   "paused when %zu are) and schema id %d is asked for again in "
                                   "%.1f s",
                                   why, ks->topic, src->hold_max, id,
                                   sc_registry_retry_in(src->registry, t));
                else if (sc_registry_stats(src->registry)->requests != reqs)
                        sc_ks_logf(src, 6, "schema registry: %s; %s's records are held meanwhile",
                                   why, ks->topic);
                return 0;
        }
        if (was_down && !sc_registry_stats(src->registry)->unavailable)
                sc_ks_logf(src, 4, "schema registry: reachable again after %.1f s", t - since);
        sc_err_t e = r == SC_REGISTRY_OK
                         ? sc_avro_cache_put(ks->avro, id, text, len, err2, sizeof(err2))
                         : sc_avro_cache_refuse(ks->avro, id, why);
        if (e == SC_ERR_NOMEM) {
                if (!src->stats.ks_nomem++)
                        sc_ks_logf(src, 3, "%s: schema id %d: out of memory (held, tried again)",
                                   ks->topic, id);
                return 0;
        }
        if (e == SC_ERR_DECODE || (r == SC_REGISTRY_NOT_FOUND && !e)) {
                sc_ks_logf(src, 6,
                           "%s [%" PRId32 "] offset %" PRId64 ": %s; its records are "
                           "refused as unknown_schema",
                           ks->topic, m->partition, m->offset, e ? err2 : why);
        } else if (e) {
                if (!ks->logged_full++)
                        sc_ks_logf(src, 3,
                                   "%s: schema id %d: %s; records of ids not compiled "
                                   "yet are refused as unknown_schema",
                                   ks->topic, id, r == SC_REGISTRY_OK ? err2 : sc_err2str(e));
        } else {
                char absent[512];
                size_t n = sc_avro_cache_absent(ks->avro, id, absent, sizeof(absent));
                sc_ks_logf(src, 6, "%s: schema id %d: %zu bytes from the registry", ks->topic, id,
                           len);
                if (n)
                        sc_ks_logf(src, 4,
                                   "%s: schema id %d has no %s: %s (each field's missing rule "
                                   "applies; is the path right?)",
                                   ks->topic, id, n > 1 ? "fields" : "field", absent);
        }
        return 1;
}

/* Hands one message to its stream through the ingest path. Returns 1 if
 * taken (the caller destroys the message), 0 if the stream is full or no
 * memory could be had for its row (the caller holds it and tries again). */
static int sc_ks_record(sc_kafka_source_t *src, sc_ks_stream_t *ks, const rd_kafka_message_t *m,
                        double t)
{
        sc_decode_header_t hdrs[SC_DECODE_MAX_HEADERS + 1];
        sc_ingest_result_t res;
        char why[512];

        if (ks->avro && !sc_ks_schema(src, ks, m, t))
                return 0;
        size_t nh = sc_kafka_headers(m, hdrs);
        sc_record_t rec = {
            m->key, m->key ? m->key_len : 0, m->payload, m->payload ? m->len : 0, hdrs, nh};
        sc_err_t err = sc_ingest_record(src->ingest, (int)(ks - src->streams), m->partition,
                                        m->offset, &rec, t, &res, why, sizeof(why));
        if (err == SC_ERR_AGAIN)
                return 0;
        if (err == SC_ERR_NOMEM) {
                if (!src->stats.ks_nomem++)
                        sc_ks_logf(src, 3, "%s (held, tried again)", why);
                return 0;
        }
        sc_ks_part_t *p = sc_ks_part(ks, m->partition, 1);
        if (err == SC_ERR_STATE) {
                /* An offset at or below one already consumed (a re-delivery). */
                if (!src->stats.ks_duplicates++)
                        sc_ks_logf(src, 4, "%s (skipped)", why);
                return 1;
        }
        if (err) {
                sc_ks_logf(src, 3, "%s", why);
                return 1;
        }
        if (p && p->committed < 0)
                p->committed = m->offset; /* where a next owner would start too */
        if (p) {
                int64_t lost = sc_kafka_gap_observe(&p->gap, m->offset);
                if (lost > 0) {
                        src->stats.ks_lost += (uint64_t)lost;
                        src->stats.ks_lost_events++;
                        sc_ks_logf(src, 4,
                                   "%s [%" PRId32 "]: %" PRId64 " record(s) lost before offset "
                                   "%" PRId64 " (removed by retention before being read)",
                                   ks->topic, m->partition, lost, m->offset);
                }
        }
        if (res.fault != SC_DECODE_OK) {
                if (res.first)
                        sc_ks_logf(src, 4, "%s", res.msg);
                sc_ks_dead_letter(src, m, res.fault, res.reason);
        } else if (src->on_record && !res.skipped) {
                src->on_record(src->on_record_opaque, (int)(ks - src->streams), m);
        }
        return 1;
}

void sc_kafka_source_on_record(sc_kafka_source_t *src, sc_kafka_record_fn cb, void *opaque)
{
        src->on_record = cb;
        src->on_record_opaque = opaque;
}

static int sc_ks_hold(sc_ks_stream_t *ks, rd_kafka_message_t *m)
{
        if (ks->n_held == ks->cap_held) {
                size_t nc = ks->cap_held ? 2 * ks->cap_held : 64;
                rd_kafka_message_t **nh = realloc(ks->held, nc * sizeof(*nh));
                if (!nh)
                        return -1;
                ks->held = nh;
                ks->cap_held = nc;
        }
        ks->held[ks->n_held++] = m;
        return 0;
}

/* Moves held messages into streams with room again, oldest first. */
static void sc_ks_unhold(sc_kafka_source_t *src, double t)
{
        for (int i = 0; i < src->n_streams; i++) {
                sc_ks_stream_t *ks = &src->streams[i];
                size_t done = 0;
                while (done < ks->n_held && sc_ks_record(src, ks, ks->held[done], t)) {
                        rd_kafka_message_destroy(ks->held[done]);
                        done++;
                }
                if (done) {
                        memmove(ks->held, ks->held + done, (ks->n_held - done) * sizeof(*ks->held));
                        ks->n_held -= done;
                        src->stats.ks_held -= done;
                }
        }
}

/* Wakes the consumer's fetchers when the consumer queue ran dry. librdkafka
 * (before 2.1) stops fetching while its queue is above
 * queued.max.messages.kbytes and looks again only when its broker thread
 * wakes up, up to a second later: a consumer slower than the network waits
 * most of that second with an empty queue. A ListOffsets request for the
 * running partitions wakes each leader's thread (which then fetches again)
 * and tells whether there is a backlog: with one, the next wake-up may follow
 * in 5 ms; without, the interval doubles up to a second. The interval is at
 * least ten times the request's round trip, so a distant broker costs the
 * caller's thread at most a tenth of its time. */
static void sc_ks_kick(sc_kafka_source_t *src, double t)
{
        if (src->stats.ks_wakeups > 0 && t - src->kick_at < src->kick_every)
                return;
        rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(8);
        if (!l)
                return;
        for (int i = 0; i < src->n_streams; i++) {
                sc_ks_stream_t *ks = &src->streams[i];
                for (size_t j = 0; j < ks->n_parts; j++)
                        if (ks->parts[j].assigned && !ks->parts[j].paused)
                                rd_kafka_topic_partition_list_add(l, ks->topic,
                                                                  ks->parts[j].partition)
                                    ->offset = RD_KAFKA_OFFSET_END;
        }
        int backlog = 0;
        double rtt = 0;
        if (l->cnt > 0) {
                src->kick_at = t;
                src->stats.ks_wakeups++;
                double a = sc_clock_mono();
                rd_kafka_resp_err_t e = rd_kafka_offsets_for_times(src->rk, l, 100);
                rtt = sc_clock_mono() - a;
                if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
                        for (int i = 0; i < l->cnt; i++) {
                                const rd_kafka_topic_partition_t *tp = &l->elems[i];
                                sc_ks_stream_t *ks = sc_ks_find(src, tp->topic);
                                sc_ks_part_t *p = ks ? sc_ks_part(ks, tp->partition, 0) : NULL;
                                if (p && !tp->err && tp->offset > p->received)
                                        backlog = 1;
                        }
                }
        }
        rd_kafka_topic_partition_list_destroy(l);
        src->kick_every = backlog ? 0.005 : fmin(1.0, fmax(0.01, 2 * src->kick_every));
        src->kick_every = fmax(src->kick_every, 10 * rtt);
}

sc_err_t sc_kafka_source_poll(sc_kafka_source_t *src, double t, int timeout_ms, size_t max,
                              size_t *n, char *errstr, size_t errstr_size)
{
        size_t got = 0;
        if (t > src->t_now)
                src->t_now = t;
        if (n)
                *n = 0;
        sc_ks_unhold(src, t);
        sc_ks_flow(src);
        while (got < max) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(src->rk, got ? 0 : timeout_ms);
                if (!m) {
                        sc_ks_kick(src, t);
                        break;
                }
                if (m->err) {
                        rd_kafka_resp_err_t e = m->err;
                        if (e == RD_KAFKA_RESP_ERR__PARTITION_EOF && m->rkt) {
                                sc_ks_stream_t *eks = sc_ks_find(src, rd_kafka_topic_name(m->rkt));
                                sc_ks_part_t *ep = eks ? sc_ks_part(eks, m->partition, 0) : NULL;
                                if (ep && ep->assigned)
                                        ep->at_end = 1;
                        }
                        if (e != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                                if (src->stats.ks_consumer_errors++ < 10)
                                        sc_ks_logf(src, 4, "consumer: %s%s%s",
                                                   m->rkt ? rd_kafka_topic_name(m->rkt) : "",
                                                   m->rkt ? ": " : "", rd_kafka_message_errstr(m));
                        }
                        rd_kafka_message_destroy(m);
                        char fatal[512];
                        if (e == RD_KAFKA_RESP_ERR__FATAL &&
                            rd_kafka_fatal_error(src->rk, fatal, sizeof(fatal)))
                                return sc_errf(SC_ERR_IO, errstr, errstr_size,
                                               "consumer: fatal error: %s", fatal);
                        continue;
                }
                got++;
                src->stats.ks_received++;
                sc_ks_stream_t *ks = sc_ks_stream_get(src, rd_kafka_topic_name(m->rkt));
                if (!ks) {
                        rd_kafka_message_destroy(m);
                        continue;
                }
                sc_ks_part_t *p = sc_ks_part(ks, m->partition, 1);
                if (p && m->offset >= p->received) {
                        p->received = m->offset + 1;
                        p->rx_at = t;
                        p->at_end = 0;
                        int64_t ts = rd_kafka_message_timestamp(m, NULL);
                        if (ts >= 0 && p->ts_ms < 0)
                                src->align_at = 0; /* a first timestamp: decide now */
                        if (ts >= 0)
                                p->ts_ms = ts;
                        /* Past the floor already: paused now (sc_ks_flow
                         * below), not at the next decision. The floor's own
                         * partition past it raises the floor, or is behind
                         * another one now: decided again right away. */
                        if (src->conf->source.align > 0 && src->align_stream >= 0 &&
                            p->ts_ms - src->align_floor >
                                (int64_t)(src->conf->source.align * 1000.0)) {
                                if (src->align_stream == (int)(ks - src->streams) &&
                                    src->align_part == p->partition)
                                        src->align_at = 0;
                                else
                                        p->ahead = 1;
                        }
                }
                if (ks->n_held == 0 && sc_ks_record(src, ks, m, t)) {
                        rd_kafka_message_destroy(m);
                } else if (sc_ks_hold(ks, m) == 0) {
                        src->stats.ks_held++;
                } else {
                        rd_kafka_message_destroy(m);
                        return sc_errf(SC_ERR_NOMEM, errstr, errstr_size,
                                       "out of memory holding a record of %s", ks->topic);
                }
                sc_ks_flow(src);
        }
        if (src->dlq) {
                rd_kafka_poll(src->dlq, 0);
                sc_ks_dlq_stats(src);
        }
        sc_ks_flow(src);
        if (n)
                *n = got;
        return SC_OK;
}
