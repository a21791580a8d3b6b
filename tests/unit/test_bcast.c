/* test_bcast.c — the model broadcast: the workers' copy equals the
 * publisher's view bit for bit after any number of deltas, the view tracks
 * the parameters (error feedback), a reader starting at a keyframe ends
 * where one that read every delta does, a reader far behind skips to the
 * newest keyframe, and malformed messages are refused with a clear error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sc_bcast.h"
#include "sc_crc32c.h"
#include "sc_rng.h"
#include "sc_wire.h"

#define N 1000
#define MAXREC 256

static char errbuf[512];

/* Rewrites the CRC after the test changed bytes, so the body checks run. */
static void fix_crc(uint8_t *m, size_t len)
{
        uint32_t crc = sc_crc32c(sc_crc32c(0, m, 12), m + 16, len - 16);
        for (int i = 0; i < 4; i++)
                m[12 + i] = (uint8_t)(crc >> (8 * i));
}

/* A partition of broadcast records: rec[i] is at offset i. */
typedef struct log {
        sc_buf_t rec[MAXREC];
        int n;
} log_t;

static void log_free(log_t *l)
{
        for (int i = 0; i < l->n; i++)
                sc_buf_free(&l->rec[i]);
}

static void spec_of(sc_bcast_spec_t *sp, sc_codec_id_t id, double ratio, uint32_t interval)
{
        memset(sp, 0, sizeof(*sp));
        sp->codec = id;
        sc_codec_params_default(&sp->params, id);
        if (ratio > 0)
                sp->params.ratio = ratio;
        sp->keyframe_interval = interval;
}

/* Publishes versions first..last of a random walk of params into l,
 * learning each keyframe's offset as a delivery report would give it. */
static void publish_from(sc_bcast_pub_t *pub, float *params, int first, int last, uint64_t seed,
                         log_t *l)
{
        sc_rng_t rng;
        sc_rng_seed(&rng, seed);
        for (int v = first; v <= last; v++) {
                for (int i = 0; i < N; i++)
                        params[i] += 0.01f * (float)sc_rng_normal(&rng) * (i % 7 == 0 ? 10 : 1);
                sc_wire_applied_t ap = {.worker = 1, .seq = (uint64_t)v};
                sc_wire_bcast_kind_t kind;
                assert_true(l->n < MAXREC);
                assert_int_equal(sc_bcast_pub_encode(pub, params, (uint64_t)v, &ap, 1, &rng,
                                                     &l->rec[l->n], &kind, errbuf, sizeof(errbuf)),
                                 SC_OK);
                if (kind == SC_WIRE_BCAST_KEY)
                        sc_bcast_pub_keyed(pub, l->n);
                l->n++;
        }
}

static void publish(sc_bcast_pub_t *pub, float *params, int nver, uint64_t seed, log_t *l)
{
        publish_from(pub, params, 1, nver, seed, l);
}

/* Reads l from offset `from` as a Kafka reader would (following seeks)
 * into view with end offset l->n; returns the records read. */
static int follow(sc_bcast_sub_t *sub, float *view, const log_t *l, int64_t from)
{
        int reads = 0;
        for (int64_t off = from; off < l->n;) {
                sc_wire_msg_t msg;
                sc_bcast_action_t act;
                int64_t seek;
                assert_true(reads < 10 * MAXREC);
                reads++;
                assert_int_equal(
                    sc_wire_decode(l->rec[off].data, l->rec[off].len, &msg, errbuf, sizeof(errbuf)),
                    SC_OK);
                assert_int_equal(msg.type, SC_WIRE_BCAST);
                assert_int_equal(sc_bcast_sub_take(sub, view, N, &msg.u.bcast, off, l->n, &act,
                                                   &seek, errbuf, sizeof(errbuf)),
                                 SC_OK);
                off = act == SC_BCAST_SEEK ? seek : off + 1;
        }
        return reads;
}

static double rel_err(const float *a, const float *b)
{
        double d = 0, s = 0;
        for (int i = 0; i < N; i++) {
                d += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
                s += (double)b[i] * b[i];
        }
        return sqrt(d / s);
}

static void view_equal_codec(sc_codec_id_t id, double ratio)
{
        sc_bcast_spec_t sp;
        sc_bcast_pub_t *pub;
        sc_bcast_sub_t sub;
        log_t l = {0};
        float params[N], view[N];
        for (int i = 0; i < N; i++)
                params[i] = (float)i / N - 0.5f;
        spec_of(&sp, id, ratio, 25);
        assert_int_equal(sc_bcast_pub_new(&pub, &sp, 2, 500, N, NULL, 0, errbuf, sizeof(errbuf)),
                         SC_OK);
        publish(pub, params, 120, 7, &l);
        sc_bcast_sub_init(&sub, 1000); /* never skips: reads every delta */
        follow(&sub, view, &l, 0);
        assert_int_equal(sub.version, 120);
        assert_int_equal(sub.deltas + sub.keyframes, 120);
        assert_int_equal(sub.keyframes, 5); /* versions 1, 26, 51, 76, 101 */
        assert_memory_equal(view, sc_bcast_pub_view(pub), sizeof(view));
        /* error feedback: the view stays close to the parameters */
        double e = rel_err(view, params);
        print_message("codec %s: relative error of the view %.2e\n", sc_codec_name(id), e);
        assert_true(e < (id == SC_CODEC_TOPK ? 0.05 : 0.01));
        sc_bcast_pub_destroy(pub);
        log_free(&l);
}

static void test_view_equal_after_deltas(void **state)
{
        (void)state;
        view_equal_codec(SC_CODEC_TOPK, 0.1);
        view_equal_codec(SC_CODEC_Q8, 0);
        view_equal_codec(SC_CODEC_FP16, 0);
        view_equal_codec(SC_CODEC_NONE, 0);
}

/* Error feedback keeps the view from drifting: with parameters that stop
 * moving, deltas bring the view to them. */
static void test_view_converges(void **state)
{
        (void)state;
        sc_bcast_spec_t sp;
        sc_bcast_pub_t *pub;
        log_t l = {0};
        float params[N];
        for (int i = 0; i < N; i++)
                params[i] = 0;
        spec_of(&sp, SC_CODEC_TOPK, 0.05, 1000);
        assert_int_equal(sc_bcast_pub_new(&pub, &sp, 0, 0, N, NULL, 0, errbuf, sizeof(errbuf)),
                         SC_OK);
        publish(pub, params, 30, 3, &l); /* keyframe at 1, then deltas */
        for (int v = 31; v <= 60; v++) { /* frozen: 30 deltas of 5% */
                sc_buf_t b = {0};
                assert_int_equal(sc_bcast_pub_encode(pub, params, (uint64_t)v, NULL, 0, NULL, &b,
                                                     NULL, errbuf, sizeof(errbuf)),
                                 SC_OK);
                sc_buf_free(&b);
        }
        assert_memory_equal(sc_bcast_pub_view(pub), params, sizeof(params));
        sc_bcast_pub_destroy(pub);
        log_free(&l);
}

static void test_keyframe_catch_up(void **state)
{
        (void)state;
        sc_bcast_spec_t sp;
        sc_bcast_pub_t *pub;
        sc_bcast_sub_t all, late, behind;
        log_t l = {0};
        float params[N], v_all[N], v_late[N], v_behind[N];
        for (int i = 0; i < N; i++)
                params[i] = 1.0f;
        spec_of(&sp, SC_CODEC_Q8, 0, 10);
        assert_int_equal(sc_bcast_pub_new(&pub, &sp, 0, 0, N, NULL, 0, errbuf, sizeof(errbuf)),
                         SC_OK);
        publish(pub, params, 95, 11, &l); /* keyframes at offsets 0, 11, 22, ..., 88 */
        sc_bcast_sub_init(&all, 1000);
        follow(&all, v_all, &l, 0);
        /* a new reader starts at the newest record: on to its keyframe */
        sc_bcast_sub_init(&late, 10);
        int reads = follow(&late, v_late, &l, l.n - 1);
        assert_int_equal(late.keyframes, 1);
        assert_int_equal(reads, 1 + (l.n - 88));
        assert_int_equal(late.version, all.version);
        assert_memory_equal(v_late, v_all, sizeof(v_all));
        /* a reader at offset 5 of 95 jumps to the newest keyframe */
        sc_bcast_sub_init(&behind, 10);
        follow(&behind, v_behind, &l, 0); /* reads 0 (keyframe), then seeks */
        assert_true(behind.keyframes <= 3);
        assert_true(behind.deltas < 20);
        assert_memory_equal(v_behind, v_all, sizeof(v_all));
        /* a reader behind but on the newest chain reads on (no ping-pong) */
        sc_bcast_sub_t near;
        float v_near[N];
        sc_bcast_sub_init(&near, 3);
        reads = follow(&near, v_near, &l, 88);
        assert_true(reads <= l.n - 88 + 3);
        assert_memory_equal(v_near, v_all, sizeof(v_all));
        /* a reader that missed deltas of its chain waits for the next keyframe */
        sc_bcast_sub_t hole;
        float v_hole[N];
        sc_bcast_sub_init(&hole, 1000);
        follow(&hole, v_hole, &l, 0);
        sc_bcast_sub_init(&hole, 1000);
        for (int64_t off = 0; off < l.n; off++) {
                sc_wire_msg_t msg;
                sc_bcast_action_t act;
                int64_t seek;
                if (off == 3)
                        continue; /* a delta never read */
                assert_int_equal(
                    sc_wire_decode(l.rec[off].data, l.rec[off].len, &msg, errbuf, sizeof(errbuf)),
                    SC_OK);
                assert_int_equal(sc_bcast_sub_take(&hole, v_hole, N, &msg.u.bcast, off, -1, &act,
                                                   &seek, errbuf, sizeof(errbuf)),
                                 SC_OK);
                assert_int_not_equal(act, SC_BCAST_SEEK);
                if (off == 10)
                        assert_int_equal(hole.version, 3); /* stopped before the hole */
        }
        assert_true(hole.gaps >= 1);
        assert_memory_equal(v_hole, v_all, sizeof(v_all));
        sc_bcast_pub_destroy(pub);
        log_free(&l);
}

static void test_pub_rules(void **state)
{
        (void)state;
        sc_bcast_spec_t sp;
        sc_bcast_pub_t *pub;
        sc_buf_t b = {0};
        float params[N] = {0};
        sc_wire_bcast_kind_t kind;
        spec_of(&sp, SC_CODEC_FP16, 0, 2);
        assert_int_equal(sc_bcast_pub_new(&pub, &sp, 0, 0, N, NULL, 0, errbuf, sizeof(errbuf)),
                         SC_OK);
        assert_true(sc_bcast_pub_key_due(pub));
        assert_int_equal(
            sc_bcast_pub_encode(pub, params, 4, NULL, 0, NULL, &b, &kind, errbuf, sizeof(errbuf)),
            SC_OK);
        assert_int_equal(kind, SC_WIRE_BCAST_KEY);
        assert_true(sc_bcast_pub_current(pub, 4));
        /* no delta before the keyframe's offset is known */
        assert_false(sc_bcast_pub_delta_ready(pub));
        assert_int_equal(
            sc_bcast_pub_encode(pub, params, 5, NULL, 0, NULL, &b, &kind, errbuf, sizeof(errbuf)),
            SC_ERR_STATE);
        assert_non_null(strstr(errbuf, "offset is not known"));
        sc_bcast_pub_keyed(pub, 40);
        assert_int_equal(
            sc_bcast_pub_encode(pub, params, 5, NULL, 0, NULL, &b, &kind, errbuf, sizeof(errbuf)),
            SC_OK);
        assert_int_equal(kind, SC_WIRE_BCAST_DELTA);
        assert_int_equal(
            sc_bcast_pub_encode(pub, params, 5, NULL, 0, NULL, &b, &kind, errbuf, sizeof(errbuf)),
            SC_ERR_STATE);
        assert_int_equal(
            sc_bcast_pub_encode(pub, params, 6, NULL, 0, NULL, &b, &kind, errbuf, sizeof(errbuf)),
            SC_OK);
        assert_true(sc_bcast_pub_key_due(pub)); /* interval 2 */
        sc_bcast_pub_keyed(pub, 42);
        sc_bcast_pub_reset(pub);
        assert_false(sc_bcast_pub_delta_ready(pub));
        assert_int_equal(
            sc_bcast_pub_encode(pub, params, 7, NULL, 0, NULL, &b, &kind, errbuf, sizeof(errbuf)),
            SC_OK);
        assert_int_equal(kind, SC_WIRE_BCAST_KEY);
        sc_bcast_pub_destroy(pub);
        sc_buf_free(&b);
        spec_of(&sp, SC_CODEC_FP16, 0, 0);
        assert_int_equal(sc_bcast_pub_new(&pub, &sp, 0, 0, N, NULL, 0, errbuf, sizeof(errbuf)),
                         SC_ERR_INVAL);
        assert_null(pub);
}

/* Encodes a broadcast with the given fields around a payload. */
static sc_err_t encode_raw(sc_buf_t *b, sc_wire_bcast_kind_t kind, uint64_t version, uint64_t base,
                           int64_t key, uint32_t count, const sc_buf_t *payload)
{
        sc_wire_bcast_t m = {.shard = 1,
                             .kind = kind,
                             .version = version,
                             .base = base,
                             .key_offset = key,
                             .begin = 0,
                             .count = count,
                             .payload = payload->data,
                             .payload_len = payload->len};
        b->len = 0;
        return sc_wire_encode_bcast(b, &m, errbuf, sizeof(errbuf));
}

static void test_malformed(void **state)
{
        (void)state;
        sc_codec_t *dense, *q8;
        sc_buf_t pd = {0}, pq = {0}, b = {0};
        float x[N], view[N];
        sc_wire_msg_t msg;
        sc_bcast_sub_t sub;
        sc_bcast_action_t act;
        int64_t seek;
        for (int i = 0; i < N; i++)
                x[i] = (float)i;
        assert_int_equal(
            sc_codec_new(&dense, SC_CODEC_NONE, NULL, N, NULL, 0, errbuf, sizeof(errbuf)), SC_OK);
        assert_int_equal(sc_codec_new(&q8, SC_CODEC_Q8, NULL, N, NULL, 0, errbuf, sizeof(errbuf)),
                         SC_OK);
        assert_int_equal(sc_codec_encode(dense, x, NULL, &pd, errbuf, sizeof(errbuf)), SC_OK);
        assert_int_equal(sc_codec_encode(q8, x, NULL, &pq, errbuf, sizeof(errbuf)), SC_OK);

        /* the encoder refuses what the decoder would */
        assert_int_equal(encode_raw(&b, SC_WIRE_BCAST_KEY, 5, 0, -1, N, &pq), SC_ERR_INVAL);
        assert_non_null(strstr(errbuf, "keyframe must be dense"));
        assert_int_equal(encode_raw(&b, SC_WIRE_BCAST_DELTA, 5, 5, 0, N, &pq), SC_ERR_INVAL);
        assert_non_null(strstr(errbuf, "base below its version"));
        assert_int_equal(encode_raw(&b, SC_WIRE_BCAST_DELTA, 5, 4, -1, N, &pq), SC_ERR_INVAL);
        assert_int_equal(encode_raw(&b, SC_WIRE_BCAST_DELTA, 5, 4, 0, N - 1, &pq), SC_ERR_INVAL);
        assert_non_null(strstr(errbuf, "payload of 1000 floats for a shard of 999"));

        /* decoder: a keyframe rewritten as q8 (kind byte and codec byte) */
        assert_int_equal(encode_raw(&b, SC_WIRE_BCAST_DELTA, 5, 4, 0, N, &pq), SC_OK);
        b.data[16 + 4] = SC_WIRE_BCAST_KEY;
        fix_crc(b.data, b.len);
        assert_int_equal(sc_wire_decode(b.data, b.len, &msg, errbuf, sizeof(errbuf)),
                         SC_ERR_DECODE);
        assert_non_null(strstr(errbuf, "keyframe"));
        /* every truncation is refused */
        assert_int_equal(encode_raw(&b, SC_WIRE_BCAST_DELTA, 5, 4, 0, N, &pq), SC_OK);
        for (size_t len = 0; len < b.len; len += 7)
                assert_int_not_equal(sc_wire_decode(b.data, len, &msg, errbuf, sizeof(errbuf)),
                                     SC_OK);
        assert_int_equal(sc_wire_decode(b.data, b.len, &msg, errbuf, sizeof(errbuf)), SC_OK);
        assert_int_equal(msg.u.bcast.version, 5);
        assert_int_equal(msg.u.bcast.base, 4);
        assert_int_equal(msg.u.bcast.key_offset, 0);
        assert_int_equal(msg.u.bcast.count, N);

        /* subscriber: a delta naming a keyframe at or after its own offset */
        sc_bcast_sub_init(&sub, 10);
        memset(view, 0, sizeof(view));
        assert_int_equal(sc_bcast_sub_take(&sub, view, N, &msg.u.bcast, 0, 1, &act, &seek, errbuf,
                                           sizeof(errbuf)),
                         SC_ERR_DECODE);
        assert_non_null(strstr(errbuf, "not before its own"));
        /* a shard of another length */
        assert_int_equal(sc_bcast_sub_take(&sub, view, N - 1, &msg.u.bcast, 3, 4, &act, &seek,
                                           errbuf, sizeof(errbuf)),
                         SC_ERR_DECODE);
        assert_non_null(strstr(errbuf, "the shard has 999"));
        for (int i = 0; i < N; i++)
                assert_true(view[i] == 0.0f);
        assert_false(sub.has);

        /* a keyframe of the wrong codec, forged past the wire checks */
        sc_wire_bcast_t forged = {.shard = 1,
                                  .kind = SC_WIRE_BCAST_KEY,
                                  .version = 9,
                                  .key_offset = -1,
                                  .count = N,
                                  .payload = pq.data,
                                  .payload_len = pq.len};
        assert_int_equal(
            sc_bcast_sub_take(&sub, view, N, &forged, 3, 4, &act, &seek, errbuf, sizeof(errbuf)),
            SC_ERR_DECODE);
        assert_non_null(strstr(errbuf, "keyframe payload"));
        assert_false(sub.has);

        /* signed like the other messages: decodes with the key only */
        static const uint8_t key[32] = {1, 2, 3};
        assert_int_equal(encode_raw(&b, SC_WIRE_BCAST_DELTA, 5, 4, 0, N, &pq), SC_OK);
        assert_int_equal(sc_wire_sign(&b, 0, key, sizeof(key), errbuf, sizeof(errbuf)), SC_OK);
        assert_int_equal(sc_wire_decode(b.data, b.len, &msg, errbuf, sizeof(errbuf)),
                         SC_ERR_UNSUPPORTED);
        assert_int_equal(
            sc_wire_decode_auth(b.data, b.len, key, sizeof(key), &msg, errbuf, sizeof(errbuf)),
            SC_OK);
        assert_int_equal(msg.type, SC_WIRE_BCAST);
        assert_int_equal(msg.u.bcast.payload_len, pq.len);
        b.data[40] ^= 1;
        assert_int_equal(
            sc_wire_decode_auth(b.data, b.len, key, sizeof(key), &msg, errbuf, sizeof(errbuf)),
            SC_ERR_CORRUPT); /* the CRC first */

        sc_codec_destroy(dense);
        sc_codec_destroy(q8);
        sc_buf_free(&pd);
        sc_buf_free(&pq);
        sc_buf_free(&b);
}

/* Appends a copy of record i of l (a replay: same bytes, new offset). */
static void replay(log_t *l, int i)
{
        assert_true(l->n < MAXREC);
        sc_buf_t *b = &l->rec[l->n++];
        b->len = 0;
        assert_int_equal(sc_buf_append(b, l->rec[i].data, l->rec[i].len), SC_OK);
}

/* A broadcast cannot be rolled back: states are ordered by (generation,
 * version). A replayed genuine keyframe is refused and counted; a new owner
 * (higher generation) is followed even from a lower version; the deposed
 * owner's later keyframes and deltas are refused or skipped; a reader that
 * starts at a replayed record ends on the new owner's view too. */
static void test_generations(void **state)
{
        (void)state;
        sc_bcast_spec_t sp;
        sc_bcast_pub_t *a, *b;
        sc_bcast_sub_t sub, fresh;
        log_t l = {0};
        float pa[N], pb[N], view[N], view2[N];
        for (int i = 0; i < N; i++)
                pa[i] = (float)i / N;
        spec_of(&sp, SC_CODEC_Q8, 0, 10);
        assert_int_equal(sc_bcast_pub_new(&a, &sp, 1, 0, N, NULL, 0, errbuf, sizeof(errbuf)),
                         SC_OK);
        assert_int_equal(sc_bcast_pub_new(&b, &sp, 1, 0, N, NULL, 0, errbuf, sizeof(errbuf)),
                         SC_OK);
        publish(a, pa, 30, 3, &l); /* generation 0: keyframes at v1, v12, v23 */
        sc_bcast_sub_init(&sub, 1000);
        follow(&sub, view, &l, 0);
        assert_int_equal(sub.version, 30);

        /* the genuine v1 keyframe replayed: refused, the view stays */
        int at = l.n;
        replay(&l, 0);
        follow(&sub, view, &l, at);
        assert_int_equal(sub.rollbacks, 1);
        assert_int_equal(sub.version, 30);
        assert_memory_equal(view, sc_bcast_pub_view(a), sizeof(view));

        /* a new owner restored version 25 (older than the view) at
         * generation = the end offset when it took over */
        memcpy(pb, pa, sizeof(pb));
        for (int i = 0; i < N; i++)
                pb[i] -= 0.5f;
        sc_bcast_pub_generation(b, (uint64_t)l.n);
        at = l.n;
        publish_from(b, pb, 25, 28, 5, &l);
        follow(&sub, view, &l, at);
        assert_int_equal(sub.version, 28);
        assert_int_equal(sub.generation, (uint64_t)at);
        assert_memory_equal(view, sc_bcast_pub_view(b), sizeof(view));

        /* the deposed owner goes on: deltas, its keyframe at v34, deltas */
        at = l.n;
        publish_from(a, pa, 31, 40, 6, &l);
        follow(&sub, view, &l, at);
        assert_int_equal(sub.rollbacks, 2);
        assert_int_equal(sub.version, 28);
        assert_memory_equal(view, sc_bcast_pub_view(b), sizeof(view));
        /* the new owner's next deltas still apply */
        at = l.n;
        publish_from(b, pb, 29, 30, 7, &l);
        follow(&sub, view, &l, at);
        assert_int_equal(sub.version, 30);
        assert_memory_equal(view, sc_bcast_pub_view(b), sizeof(view));

        /* a reader that starts at the replayed v1 keyframe: installed (no
         * view yet), then the new owner's chain takes over */
        sc_bcast_sub_init(&fresh, 1000);
        follow(&fresh, view2, &l, 30); /* the replay's offset */
        assert_int_equal(fresh.version, 30);
        assert_memory_equal(view2, sc_bcast_pub_view(b), sizeof(view2));

        /* the generation travels on the wire: set, flagged, never 0 */
        sc_wire_msg_t msg;
        assert_int_equal(
            sc_wire_decode(l.rec[at].data, l.rec[at].len, &msg, errbuf, sizeof(errbuf)), SC_OK);
        assert_int_equal(msg.u.bcast.generation, 31);
        assert_int_equal(sc_wire_decode(l.rec[0].data, l.rec[0].len, &msg, errbuf, sizeof(errbuf)),
                         SC_OK);
        assert_int_equal(msg.u.bcast.generation, 0);
        sc_buf_t *r = &l.rec[at];
        memset(r->data + 16 + 56, 0, 8); /* flag set, generation 0 */
        fix_crc(r->data, r->len);
        assert_int_equal(sc_wire_decode(r->data, r->len, &msg, errbuf, sizeof(errbuf)),
                         SC_ERR_DECODE);
        assert_non_null(strstr(errbuf, "generation 0"));
        r->data[16 + 6] = 4; /* an unknown flag */
        fix_crc(r->data, r->len);
        assert_int_equal(sc_wire_decode(r->data, r->len, &msg, errbuf, sizeof(errbuf)),
                         SC_ERR_DECODE);
        assert_non_null(strstr(errbuf, "reserved"));

        sc_bcast_pub_destroy(a);
        sc_bcast_pub_destroy(b);
        log_free(&l);
}

/* The rate sum for the auto window: carried by every message once set
 * (after any generation), taken by the follower with the message; a value
 * outside (0, SC_WIRE_RATE_MAX] is not sent, and one on the wire refused. */
static void test_rate_sum(void **state)
{
        (void)state;
        sc_bcast_spec_t sp;
        sc_bcast_pub_t *pub;
        sc_bcast_sub_t sub;
        sc_wire_msg_t msg;
        log_t l = {0};
        float p[N], view[N];
        for (int i = 0; i < N; i++)
                p[i] = (float)i / N;
        spec_of(&sp, SC_CODEC_Q8, 0, 4);
        assert_int_equal(sc_bcast_pub_new(&pub, &sp, 0, 0, N, NULL, 0, errbuf, sizeof(errbuf)),
                         SC_OK);
        publish(pub, p, 2, 1, &l); /* no sum yet */
        sc_bcast_pub_rate_sum(pub, 1234.5);
        publish_from(pub, p, 3, 6, 2, &l);
        sc_bcast_pub_generation(pub, 77); /* with a generation too */
        publish_from(pub, p, 7, 8, 3, &l);
        sc_bcast_pub_rate_sum(pub, 5e9); /* sent as the wire's limit */
        publish_from(pub, p, 9, 9, 4, &l);
        sc_bcast_pub_rate_sum(pub, NAN); /* not sent */
        publish_from(pub, p, 10, 10, 5, &l);
        sc_bcast_sub_init(&sub, 1000);
        follow(&sub, view, &l, 0);
        assert_int_equal(sub.version, 10); /* the sum changes nothing a follower does */
        double want[] = {0, 0, 1234.5, 1234.5, 1234.5, 1234.5, 1234.5, 1234.5, SC_WIRE_RATE_MAX, 0};
        uint64_t gen[] = {0, 0, 0, 0, 0, 0, 77, 77, 77, 77};
        assert_int_equal(l.n, 10);
        for (int i = 0; i < l.n; i++) {
                assert_int_equal(
                    sc_wire_decode(l.rec[i].data, l.rec[i].len, &msg, errbuf, sizeof(errbuf)),
                    SC_OK);
                assert_true(msg.u.bcast.rate_sum == want[i]);
                assert_int_equal(msg.u.bcast.generation, gen[i]);
        }
        /* on the wire: the sum sits after the generation (16 + 56 + 8) */
        sc_buf_t *r = &l.rec[7];
        double bad[] = {0.0, -1.0, NAN, 2e9};
        for (int i = 0; i < 4; i++) {
                memcpy(r->data + 16 + 64, &bad[i], 8);
                fix_crc(r->data, r->len);
                assert_int_equal(sc_wire_decode(r->data, r->len, &msg, errbuf, sizeof(errbuf)),
                                 SC_ERR_DECODE);
                assert_non_null(strstr(errbuf, "rate sum"));
        }
        /* a sum the encoder cannot send */
        sc_wire_bcast_t m;
        assert_int_equal(sc_wire_decode(l.rec[2].data, l.rec[2].len, &msg, errbuf, sizeof(errbuf)),
                         SC_OK);
        m = msg.u.bcast;
        m.napplied = 0;
        m.rate_sum = -5;
        sc_buf_t out = {0};
        assert_int_equal(sc_wire_encode_bcast(&out, &m, errbuf, sizeof(errbuf)), SC_ERR_INVAL);
        assert_non_null(strstr(errbuf, "rate sum"));
        sc_buf_free(&out);
        l.n = 10;
        sc_bcast_pub_destroy(pub);
        log_free(&l);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_view_equal_after_deltas),
            cmocka_unit_test(test_view_converges),
            cmocka_unit_test(test_keyframe_catch_up),
            cmocka_unit_test(test_pub_rules),
            cmocka_unit_test(test_malformed),
            cmocka_unit_test(test_generations),
            cmocka_unit_test(test_rate_sum),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
