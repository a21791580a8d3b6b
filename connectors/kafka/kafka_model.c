/* kafka_model.c — shard records on J.model: publishing one and finding the
 * newest usable record of a shard (their encoding, the layout and the
 * initial model they follow are core/job.c's). */
#include "sc_kafka_model.h"
#include "sc_kafka_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SC_MODEL_WINDOW 4 /* records read per backward step */
/* The newest records ranked by what they cover before any is taken (a
 * replayed older snapshot is not the newest by what it covers). */
#define SC_MODEL_RANK 16

sc_err_t sc_kafka_model_publish(rd_kafka_t *rk, const char *topic, uint32_t shard, const void *msg,
                                size_t len, sc_kafka_delivery_t *dv, char *errstr,
                                size_t errstr_size)
{
        char key[16];
        int klen = snprintf(key, sizeof(key), "%u", shard);
        return sc_kafka_produce(rk, topic, (int32_t)shard, key, (size_t)klen, msg, len, NULL, NULL,
                                0, 0, dv, 10000, errstr, errstr_size);
}

void sc_kafka_model_rec_free(sc_kafka_model_rec_t *rec)
{
        if (!rec)
                return;
        free(rec->mr_data);
        memset(rec, 0, sizeof(*rec));
}

/* Copies a message that decodes as a model record of shard into rec;
 * otherwise reports it and returns non-zero. */
static int sc_kafka_model_take(const rd_kafka_message_t *msg, const char *topic, int32_t shard,
                               const sc_auth_t *auth, sc_kafka_model_reject_fn reject, void *opaque,
                               sc_kafka_model_rec_t *rec)
{
        char why[256];
        sc_wire_msg_t wm;
        sc_err_t err;

        memset(rec, 0, sizeof(*rec));
        if (!msg->payload || !msg->len) {
                if (reject)
                        reject(opaque, topic, shard, msg->offset, SC_ERR_CORRUPT, "empty record");
                return 1;
        }
        if (!(rec->mr_data = malloc(msg->len)))
                return 1;
        memcpy(rec->mr_data, msg->payload, msg->len);
        rec->mr_len = msg->len;
        rec->mr_offset = msg->offset;
        err = sc_auth_decode(auth, rec->mr_data, rec->mr_len, &wm, NULL, why, sizeof(why));
        if (!err && wm.type != SC_WIRE_MODEL) {
                err = SC_ERR_DECODE;
                snprintf(why, sizeof(why), "a %s message, not a model shard",
                         sc_wire_type_name(wm.type));
        }
        if (!err && wm.u.model.shard != (uint32_t)shard) {
                err = SC_ERR_DECODE;
                snprintf(why, sizeof(why), "shard %u record in partition %d", wm.u.model.shard,
                         (int)shard);
        }
        if (err) {
                if (reject)
                        reject(opaque, topic, shard, msg->offset, err, why);
                sc_kafka_model_rec_free(rec);
                return 1;
        }
        rec->mr_model = wm.u.model;
        return 0;
}

/* A window of J.model records read by sc_kafka_read_range: the newest
 * SC_MODEL_WINDOW that decode (and verify). */
typedef struct sc_kafka_model_window {
        sc_kafka_model_rec_t cand[SC_MODEL_WINDOW];
        int nc;
        const char *topic;
        int32_t shard;
        const sc_auth_t *auth;
        sc_kafka_model_reject_fn reject;
        void *opaque;
} sc_kafka_model_window_t;

static int sc_kafka_model_collect(void *opaque, const rd_kafka_message_t *msg)
{
        sc_kafka_model_window_t *w = opaque;
        if (w->nc == SC_MODEL_WINDOW) { /* keep the newest ones */
                sc_kafka_model_rec_free(&w->cand[0]);
                memmove(&w->cand[0], &w->cand[1], (SC_MODEL_WINDOW - 1) * sizeof(w->cand[0]));
                w->nc--;
        }
        if (!sc_kafka_model_take(msg, w->topic, w->shard, w->auth, w->reject, w->opaque,
                                 &w->cand[w->nc]))
                w->nc++;
        return 0;
}

/* What a usable record of the newest SC_MODEL_RANK covers, for ranking. */
typedef struct sc_kafka_model_meta {
        int64_t offset, grad_offset;
        uint64_t version;
} sc_kafka_model_meta_t;

typedef struct sc_kafka_model_rank {
        sc_kafka_model_meta_t m[SC_MODEL_RANK];
        int n;
        sc_kafka_model_window_t *w; /* decoding: topic, shard, auth, reject */
} sc_kafka_model_rank_t;

static int sc_kafka_model_note(void *opaque, const rd_kafka_message_t *msg)
{
        sc_kafka_model_rank_t *r = opaque;
        sc_kafka_model_rec_t rec;
        if (r->n == SC_MODEL_RANK || sc_kafka_model_take(msg, r->w->topic, r->w->shard, r->w->auth,
                                                         r->w->reject, r->w->opaque, &rec))
                return 0;
        r->m[r->n++] = (sc_kafka_model_meta_t){.offset = rec.mr_offset,
                                               .grad_offset = rec.mr_model.grad_offset,
                                               .version = rec.mr_model.version};
        sc_kafka_model_rec_free(&rec);
        return 0;
}

/* Descending: J.grad offset covered, then version, then log offset. */
static int sc_kafka_model_meta_cmp(const void *a, const void *b)
{
        const sc_kafka_model_meta_t *x = a, *y = b;
        if (x->grad_offset != y->grad_offset)
                return x->grad_offset > y->grad_offset ? -1 : 1;
        if (x->version != y->version)
                return x->version > y->version ? -1 : 1;
        return x->offset > y->offset ? -1 : x->offset < y->offset;
}

/* Offers the records of [start, end) to accept in the order of w's
 * candidates (newest last), newest first; the first taken goes to rec. */
static void sc_kafka_model_offer(sc_kafka_model_window_t *w, sc_kafka_model_accept_fn accept,
                                 sc_kafka_model_reject_fn reject, void *opaque,
                                 sc_kafka_model_rec_t *rec, int *found)
{
        char why[256];
        for (int i = w->nc - 1; i >= 0; i--) {
                if (!*found &&
                    (!accept || !accept(opaque, &w->cand[i].mr_model, why, sizeof(why)))) {
                        *rec = w->cand[i];
                        *found = 1;
                        continue;
                }
                if (!*found && reject)
                        reject(opaque, w->topic, w->shard, w->cand[i].mr_offset, SC_ERR_INVAL, why);
                sc_kafka_model_rec_free(&w->cand[i]);
        }
        w->nc = 0;
}

sc_err_t sc_kafka_model_read_latest(rd_kafka_t *rk, const char *topic, int32_t shard,
                                    int timeout_ms, const sc_auth_t *auth,
                                    sc_kafka_model_accept_fn accept,
                                    sc_kafka_model_reject_fn reject, void *opaque,
                                    sc_kafka_model_rec_t *rec, int *found, char *errstr,
                                    size_t errstr_size)
{
        sc_kafka_model_window_t w = {
            .topic = topic, .shard = shard, .auth = auth, .reject = reject, .opaque = opaque};
        int64_t lo = 0, hi = 0, end, start;
        sc_err_t err = SC_OK;

        memset(rec, 0, sizeof(*rec));
        *found = 0;
        if ((err =
                 sc_kafka_end_offsets(rk, topic, shard, timeout_ms, &lo, &hi, errstr, errstr_size)))
                return err;
        /* The newest SC_MODEL_RANK records first, by what they cover: a
         * replayed older snapshot (a genuine, verified record published
         * again) covers less than the record it follows. Each is read again
         * when its turn comes, so only one is held at a time. */
        sc_kafka_model_rank_t rank = {.w = &w};
        start = hi - SC_MODEL_RANK > lo ? hi - SC_MODEL_RANK : lo;
        if (hi > lo)
                err = sc_kafka_read_range(rk, topic, shard, start, hi, timeout_ms,
                                          sc_kafka_model_note, &rank, errstr, errstr_size);
        /* Out of order: covering less than a record before it in the log
         * (genuine snapshots only ever cover more): offered only after the
         * others, newest first, in case accept refuses every other one (a
         * record of an earlier job on the same topic, say), and reported
         * when passed over. */
        sc_kafka_model_meta_t drop[SC_MODEL_RANK];
        int64_t above[SC_MODEL_RANK]; /* the offset of the record covering more */
        int kept = 0, nd = 0;
        for (int i = 0, top = -1; i < rank.n; i++) {
                /* (records come in log order: ties in coverage sort the
                 * later first, so > 0 is covering strictly less) */
                if (top >= 0 && sc_kafka_model_meta_cmp(&rank.m[i], &rank.m[top]) > 0) {
                        above[nd] = rank.m[top].offset;
                        drop[nd++] = rank.m[i];
                        continue;
                }
                rank.m[kept] = rank.m[i];
                top = kept++;
        }
        rank.n = kept;
        qsort(rank.m, (size_t)rank.n, sizeof(rank.m[0]), sc_kafka_model_meta_cmp);
        w.reject = NULL; /* reported by the ranking read */
        int from_ranked = 0;
        for (int i = 0; i < rank.n + nd && !*found && !err; i++) {
                const sc_kafka_model_meta_t *m =
                    i < rank.n ? &rank.m[i] : &drop[nd - 1 - (i - rank.n)];
                err = sc_kafka_read_range(rk, topic, shard, m->offset, m->offset + 1, timeout_ms,
                                          sc_kafka_model_collect, &w, errstr, errstr_size);
                if (!err)
                        sc_kafka_model_offer(&w, accept, reject, opaque, rec, found);
                from_ranked = *found && i < rank.n;
        }
        for (int i = 0; from_ranked && reject && i < nd; i++) {
                char why[160];
                snprintf(why, sizeof(why),
                         "passed over: covers J.grad below offset %lld, less than the record at "
                         "offset %lld before it (a replayed or a deposed owner's snapshot)",
                         (long long)drop[i].grad_offset, (long long)above[i]);
                reject(opaque, topic, shard, drop[i].offset, SC_ERR_INVAL, why);
        }
        w.reject = reject;
        /* Then windows from there backwards, until one holds a model accept
         * takes. */
        for (end = start; end > lo && !*found && !err; end = start) {
                start = end - SC_MODEL_WINDOW > lo ? end - SC_MODEL_WINDOW : lo;
                w.nc = 0;
                err = sc_kafka_read_range(rk, topic, shard, start, end, timeout_ms,
                                          sc_kafka_model_collect, &w, errstr, errstr_size);
                if (!err)
                        sc_kafka_model_offer(&w, accept, reject, opaque, rec, found);
        }
        for (int i = 0; i < w.nc; i++)
                sc_kafka_model_rec_free(&w.cand[i]);
        if (err)
                sc_kafka_model_rec_free(rec), *found = 0;
        return err;
}
