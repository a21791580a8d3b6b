/* test_batch.c — fixed and rate-proportional batch assembly, window timing,
 * waiting time, out-of-order acknowledgement and commits, configuration
 * errors, and exact accounting across streams, shuffle buffer and pending
 * batches after random operation sequences. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sc_batch.h"

#define NUMEL 2

static sc_stream_t *mk_stream_w(sc_stream_policy_t policy, size_t cap, double window)
{
        sc_stream_spec_t sp;
        sc_stream_t *s;
        char err[128];
        sc_stream_spec_defaults(&sp);
        sp.policy = policy;
        sp.cap = cap;
        sp.window = window;
        if (sc_stream_new(&s, &sp, NUMEL, err, sizeof(err)) != SC_OK)
                fail_msg("%s", err);
        return s;
}

static sc_stream_t *mk_stream(sc_stream_policy_t policy, size_t cap)
{
        return mk_stream_w(policy, cap, 1.0);
}

static sc_batcher_t *mk_batcher(const sc_batch_spec_t *bs, sc_stream_t **s, int n)
{
        sc_batcher_t *bt;
        char err[160];
        if (sc_batcher_new(&bt, bs, s, n, 42, err, sizeof(err)) != SC_OK)
                fail_msg("%s", err);
        return bt;
}

static void push(sc_stream_t *s, int32_t part, int64_t off, int32_t label, double t)
{
        float x[NUMEL] = {(float)off, (float)label};
        char err[128];
        if (sc_stream_push(s, x, label, part, off, t, err, sizeof(err)) != SC_OK)
                fail_msg("%s", err);
}

static void check(const sc_batcher_t *bt)
{
        char err[256];
        if (sc_batcher_check(bt, err, sizeof(err)) != SC_OK)
                fail_msg("%s", err);
}

static void fixed_b_waits_for_b_samples(void **state)
{
        sc_stream_t *s = mk_stream(SC_STREAM_PERSIST, 256);
        sc_batch_spec_t bs;
        sc_batch_t *b;
        double wake;
        char err[128];

        sc_batch_spec_defaults(&bs);
        bs.mode = SC_BATCH_FIXED;
        bs.b = 16;
        bs.shuffle = 0;
        sc_batcher_t *bt = mk_batcher(&bs, &s, 1);
        assert_int_equal(sc_batch_new(&b, 16, NUMEL), SC_OK);
        /* The trainer asks at 0.2 s; samples trickle in until 0.7 s. */
        assert_int_equal(sc_batcher_ready(bt, 0.2, &wake), 0);
        assert_true(isinf(wake));
        for (int i = 0; i < 15; i++)
                push(s, 0, i, i % 3, 0.2 + i * 0.5 / 15);
        assert_int_equal(sc_batcher_ready(bt, 0.6, &wake), 0);
        assert_int_equal(sc_batcher_take(bt, 0.6, b, err, sizeof(err)), SC_ERR_AGAIN);
        push(s, 0, 15, 0, 0.7);
        assert_int_equal(sc_batcher_ready(bt, 0.7, &wake), 1);
        assert_float_equal(wake, 0.7, 0);
        assert_int_equal(sc_batcher_take(bt, 0.7, b, err, sizeof(err)), SC_OK);
        assert_int_equal(b->n, 16);
        assert_float_equal(b->waited, 0.5, 1e-12);
        /* Every offset once, in some order. */
        int seen[16] = {0};
        for (int i = 0; i < 16; i++) {
                seen[b->refs[i].offset]++;
                assert_float_equal(b->x[i * NUMEL], (float)b->refs[i].offset, 0);
                assert_int_equal(b->labels[i], (int)b->x[i * NUMEL + 1]);
        }
        for (int i = 0; i < 16; i++)
                assert_int_equal(seen[i], 1);
        assert_int_equal(sc_batcher_pending(bt), 1);
        check(bt);
        sc_offsets_commit_t c[1];
        assert_int_equal(sc_stream_commits(s, c, 1), 0); /* nothing trained yet */
        assert_int_equal(sc_batcher_ack(bt, b->id, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_batcher_ack(bt, b->id, err, sizeof(err)), SC_ERR_STATE);
        assert_int_equal(sc_stream_commits(s, c, 1), 1);
        assert_int_equal(c[0].offset, 16);
        assert_int_equal(sc_stream_stats(s)->trained, 16);
        assert_float_equal(sc_batcher_stats(bt)->wait_sum, 0.5, 1e-12);
        check(bt);
        /* A batch with too little room is refused. */
        sc_batch_t *small;
        assert_int_equal(sc_batch_new(&small, 8, NUMEL), SC_OK);
        assert_int_equal(sc_batcher_take(bt, 1.0, small, err, sizeof(err)), SC_ERR_INVAL);
        sc_batch_destroy(small);
        sc_batch_destroy(b);
        sc_batcher_destroy(bt);
        sc_stream_destroy(s);
}

static void rate_mode_emits_window_worth_clamped(void **state)
{
        sc_stream_t *s = mk_stream(SC_STREAM_PERSIST, 8192);
        sc_batch_spec_t bs;
        sc_batch_t *b;
        double wake;
        char err[128];
        int64_t off = 0;

        sc_batch_spec_defaults(&bs); /* rate, window 1, [8, 1024] */
        bs.shuffle = 0;
        sc_batcher_t *bt = mk_batcher(&bs, &s, 1);
        assert_int_equal(sc_batch_new(&b, 1024, NUMEL), SC_OK);
        assert_int_equal(sc_batcher_ready(bt, 0.0, &wake), 0); /* window 0..1 starts */
        assert_float_equal(wake, 1.0, 0);
        /* 300/s */
        for (; off < 300; off++)
                push(s, 0, off, 1, (double)(off + 1) / 300.0 - 1e-9);
        assert_int_equal(sc_batcher_ready(bt, 0.9, &wake), 0);
        assert_float_equal(wake, 1.0, 0);
        assert_int_equal(sc_batcher_take(bt, 1.0, b, err, sizeof(err)), SC_OK);
        assert_int_equal(b->n, 300);
        assert_float_equal(b->waited, 1.0, 1e-12);
        assert_in_range(sc_batcher_target(bt, 1.0), 285, 315); /* estimated rate */
        /* A slow trainer (3 s per step) at 2000/s: capped at b_max, the rest waits. */
        for (; off < 300 + 6000; off++)
                push(s, 0, off, 1, 1.0 + (double)(off - 299) / 2000.0);
        assert_int_equal(sc_batcher_take(bt, 4.0, b, err, sizeof(err)), SC_OK);
        assert_int_equal(b->n, 1024);
        assert_int_equal(sc_stream_count(s), 6000 - 1024);
        assert_int_equal(sc_batcher_target(bt, 4.0), 1024);
        sc_batcher_destroy(bt);
        sc_stream_destroy(s);

        /* A slow stream: 5 arrivals in the window is below b_min = 8. */
        s = mk_stream(SC_STREAM_PERSIST, 64);
        bt = mk_batcher(&bs, &s, 1);
        assert_int_equal(sc_batcher_ready(bt, 0.0, &wake), 0);
        for (off = 0; off < 5; off++)
                push(s, 0, off, 1, 0.1 + off * 0.2);
        assert_int_equal(sc_batcher_ready(bt, 1.0, &wake), 0);
        assert_true(isinf(wake)); /* window over: waits for samples */
        for (; off < 8; off++)
                push(s, 0, off, 1, 1.0 + off * 0.2);
        assert_int_equal(sc_batcher_ready(bt, 2.5, &wake), 1);
        assert_int_equal(sc_batcher_take(bt, 2.5, b, err, sizeof(err)), SC_OK);
        assert_int_equal(b->n, 8);
        assert_int_equal(sc_batcher_target(bt, 2.5), 8);
        sc_batch_destroy(b);
        sc_batcher_destroy(bt);
        sc_stream_destroy(s);
}

static void out_of_order_acks_commit_lowest_unfinished(void **state)
{
        sc_stream_t *s = mk_stream(SC_STREAM_PERSIST, 64);
        sc_batch_spec_t bs;
        sc_batch_t *b1, *b2;
        char err[128];
        sc_offsets_commit_t c[2];

        sc_batch_spec_defaults(&bs);
        bs.mode = SC_BATCH_FIXED;
        bs.b = 4;
        bs.shuffle = 0;
        sc_batcher_t *bt = mk_batcher(&bs, &s, 1);
        assert_int_equal(sc_batch_new(&b1, 4, NUMEL), SC_OK);
        assert_int_equal(sc_batch_new(&b2, 4, NUMEL), SC_OK);
        for (int i = 0; i < 8; i++)
                push(s, 0, 10 + i, 0, 0.0);
        assert_int_equal(sc_batcher_take(bt, 0.1, b1, err, sizeof(err)), SC_OK); /* 10..13 */
        assert_int_equal(sc_batcher_take(bt, 0.2, b2, err, sizeof(err)), SC_OK); /* 14..17 */
        assert_int_equal(sc_batcher_ack(bt, b2->id, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_stream_commits(s, c, 2), 0);
        assert_int_equal(sc_batcher_ack(bt, b1->id, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_stream_commits(s, c, 2), 1);
        assert_int_equal(c[0].offset, 18);
        check(bt);
        assert_int_equal(sc_batcher_ack(bt, 999, err, sizeof(err)), SC_ERR_STATE);
        sc_batch_destroy(b1);
        sc_batch_destroy(b2);
        sc_batcher_destroy(bt);
        sc_stream_destroy(s);
}

/* Fixed batches of 4 behind a shuffle pool of 10, on one stream s. */
static sc_batcher_t *mk_fixed4_shuffle10(sc_stream_t **s, sc_batch_t **b)
{
        sc_batch_spec_t bs;
        *s = mk_stream(SC_STREAM_PERSIST, 64);
        sc_batch_spec_defaults(&bs);
        bs.mode = SC_BATCH_FIXED;
        bs.b = 4;
        bs.shuffle = 10;
        sc_batcher_t *bt = mk_batcher(&bs, s, 1);
        assert_int_equal(sc_batch_new(b, 4, NUMEL), SC_OK);
        return bt;
}

static void shuffle_holds_back_until_drained(void **state)
{
        sc_stream_t *s;
        sc_batch_t *b;
        char err[128];
        sc_batcher_t *bt = mk_fixed4_shuffle10(&s, &b);
        for (int i = 0; i < 13; i++)
                push(s, 0, i, 0, 0.0);
        assert_int_equal(sc_batcher_ready(bt, 0.1, NULL), 0); /* 13 < 4 + 10 */
        push(s, 0, 13, 0, 0.1);
        assert_int_equal(sc_batcher_take(bt, 0.1, b, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_batcher_pooled(bt), 10);
        assert_int_equal(sc_stream_count(s), 0);
        assert_int_equal(sc_batcher_ready(bt, 0.2, NULL), 0);
        sc_batcher_drain(bt, 1);
        for (int k = 0; k < 2; k++) {
                assert_int_equal(sc_batcher_take(bt, 0.2, b, err, sizeof(err)), SC_OK);
                assert_int_equal(b->n, 4);
        }
        assert_int_equal(sc_batcher_pooled(bt), 2);
        assert_int_equal(sc_batcher_ready(bt, 0.3, NULL), 0); /* 2 < b */
        check(bt);
        sc_batch_destroy(b);
        sc_batcher_destroy(bt);
        sc_stream_destroy(s);
}

/* A batch over the caller's rows (sc_batch_wrap): a take gathers the drawn
 * samples straight into them, each row the sample its ref names, and the
 * pool's samples keep their rows while new records fill the stream. */
static void wrapped_batch_gathers_into_the_callers_rows(void **state)
{
        (void)state;
        sc_stream_t *s;
        sc_batch_t *own, *b;
        char err[128];
        float rows[6 * NUMEL];
        int32_t labels[6];
        sc_batcher_t *bt = mk_fixed4_shuffle10(&s, &own);
        assert_int_equal(sc_batch_wrap(&b, 4, NUMEL, NULL, labels), SC_ERR_INVAL);
        assert_null(b);
        assert_int_equal(sc_batch_wrap(&b, 4, NUMEL, rows, labels), SC_OK);
        int64_t off = 0;
        for (int k = 0; k < 30; k++) {
                for (; off < 14 + 4 * k; off++)
                        push(s, 0, off, (int32_t)(off % 7), 0.1 * k);
                assert_int_equal(sc_batcher_take(bt, 0.1 * k, b, err, sizeof(err)), SC_OK);
                assert_int_equal(b->n, 4);
                assert_ptr_equal(b->x, rows);
                for (int i = 0; i < 4; i++) {
                        assert_int_equal((int64_t)rows[i * NUMEL], b->refs[i].offset);
                        assert_int_equal((int32_t)rows[i * NUMEL + 1], labels[i]);
                }
                assert_int_equal(sc_batcher_ack(bt, b->id, err, sizeof(err)), SC_OK);
                check(bt);
        }
        sc_batch_destroy(b); /* leaves rows and labels */
        sc_batch_destroy(own);
        sc_batcher_destroy(bt);
        sc_stream_destroy(s);
}

/* A flush (graceful stop) takes only the pool, the last batch partial,
 * without waiting for a window, and nothing more from the streams. */
static void flush_trains_the_pool_only(void **state)
{
        sc_stream_t *s;
        sc_batch_t *b;
        char err[128];

        (void)state;
        sc_batcher_t *bt = mk_fixed4_shuffle10(&s, &b);
        for (int i = 0; i < 14; i++)
                push(s, 0, i, 0, 0.0);
        assert_int_equal(sc_batcher_take(bt, 0.1, b, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_batcher_pooled(bt), 10);
        for (int i = 14; i < 20; i++)
                push(s, 0, i, 0, 0.1);
        sc_batcher_flush(bt);
        int sizes[3], k = 0;
        while (sc_batcher_ready(bt, 0.2, NULL)) {
                assert_true(k < 3);
                assert_int_equal(sc_batcher_take(bt, 0.2, b, err, sizeof(err)), SC_OK);
                sizes[k++] = b->n;
        }
        assert_int_equal(k, 3);
        assert_int_equal(sizes[0], 4);
        assert_int_equal(sizes[1], 4);
        assert_int_equal(sizes[2], 2); /* the last partial batch */
        assert_int_equal(sc_batcher_pooled(bt), 0);
        assert_int_equal(sc_stream_count(s), 6); /* not read: returned at the stop */
        check(bt);
        sc_batch_destroy(b);
        sc_batcher_destroy(bt);
        sc_stream_destroy(s);
}

/* In rate mode a flush takes batches of the last batch's size, not the
 * whole pool at once: with the LR scaled by batch size the stop's steps
 * stay the size of the ones before it. */
static void rate_flush_keeps_the_last_batch_size(void **state)
{
        sc_stream_t *s = mk_stream(SC_STREAM_PERSIST, 200);
        sc_batch_spec_t bs;
        sc_batch_t *b;
        char err[128];

        (void)state;
        sc_batch_spec_defaults(&bs);
        bs.mode = SC_BATCH_RATE;
        bs.b_min = 2;
        bs.b_max = 64;
        bs.window = 0.1;
        bs.shuffle = 40;
        sc_batcher_t *bt = mk_batcher(&bs, &s, 1);
        assert_int_equal(sc_batch_new(&b, 64, NUMEL), SC_OK);
        for (int i = 0; i < 60; i++)
                push(s, 0, i, 0, i * 0.01);
        assert_true(sc_batcher_ready(bt, 0.0, NULL) == 0); /* the first window */
        assert_true(sc_batcher_ready(bt, 1.0, NULL));
        assert_int_equal(sc_batcher_take(bt, 1.0, b, err, sizeof(err)), SC_OK);
        assert_int_equal(b->n, 20); /* 60 buffered, 40 held back by the shuffle */
        assert_int_equal(sc_batcher_pooled(bt), 40);
        sc_batcher_flush(bt);
        int sizes[4], k = 0;
        while (sc_batcher_ready(bt, 1.05, NULL)) {
                assert_true(k < 4);
                assert_int_equal(sc_batcher_take(bt, 1.05, b, err, sizeof(err)), SC_OK);
                sizes[k++] = b->n;
        }
        assert_int_equal(k, 2);
        assert_int_equal(sizes[0], 20);
        assert_int_equal(sizes[1], 20);
        assert_int_equal(sc_batcher_pooled(bt), 0);
        check(bt);
        sc_batch_destroy(b);
        sc_batcher_destroy(bt);
        sc_stream_destroy(s);
}

/* The loop a Kafka driver runs: decode each record of 2 partitions (some
 * malformed), push or reject it, pause/resume on backpressure, take batches,
 * acknowledge them late and out of order, commit what becomes committable.
 * At the end every offset is committed and each record is counted once. */
static void driver_loop_commits_every_offset(void **state)
{
        sc_stream_spec_t ss;
        sc_stream_t *s;
        sc_decode_spec_t ds;
        sc_batch_spec_t bs;
        sc_batcher_t *bt;
        sc_batch_t *b;
        sc_rng_t rng;
        char err[200];
        int64_t next[2] = {0, 0}, committed[2] = {-1, -1};
        uint64_t ids[64];
        size_t n_ids = 0;
        int paused = 0, pauses = 0, first_faults = 0;
        long tick = 0;
        double t = 0;
        const int64_t total = 3000;

        sc_stream_spec_defaults(&ss);
        ss.cap = 256;
        assert_int_equal(sc_stream_new(&s, &ss, NUMEL, err, sizeof(err)), SC_OK);
        sc_decode_spec_defaults(&ds, SC_DECODE_RAW);
        ds.numel = NUMEL;
        ds.scale = 1.0f / 255.0f;
        assert_int_equal(sc_decode_spec_check(&ds, err, sizeof(err)), SC_OK);
        sc_batch_spec_defaults(&bs);
        bs.window = 0.05;
        bs.b_max = 64;
        bs.shuffle = 32;
        assert_int_equal(sc_batcher_new(&bt, &bs, &s, 1, 3, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_batch_new(&b, 64, NUMEL), SC_OK);
        sc_rng_seed(&rng, 11);
        while (next[0] < total || next[1] < total || sc_stream_stats(s)->inflight > 0) {
                t += 0.001;
                /* Consume one record from an unpaused partition that has more. */
                int32_t p = (int32_t)sc_rng_below(&rng, 2);
                if (!paused && next[p] < total) {
                        unsigned char v[NUMEL] = {(unsigned char)next[p], 7};
                        char key[2] = {(char)('0' + next[p] % 10), 0};
                        sc_record_t rec = {.key = key,
                                           .key_size = 1,
                                           .value = v,
                                           .value_size = sc_rng_below(&rng, 20) ? NUMEL : 1};
                        int32_t label;
                        float *slot = sc_stream_slot(s);
                        assert_non_null(slot); /* paused before full */
                        sc_decode_fault_t f = sc_decode_record(&ds, &rec, slot, &label, NULL, 0);
                        if (f == SC_DECODE_OK) {
                                assert_int_equal(
                                    sc_stream_push_slot(s, label, p, next[p], t, NULL, 0), SC_OK);
                        } else {
                                int first;
                                assert_int_equal(
                                    sc_stream_reject(s, p, next[p], f, t, &first, NULL, 0), SC_OK);
                                first_faults += first;
                        }
                        next[p]++;
                }
                switch (sc_stream_flow(s)) {
                case SC_STREAM_FLOW_PAUSE:
                        paused = 1;
                        pauses++;
                        break;
                case SC_STREAM_FLOW_RESUME:
                        paused = 0;
                        break;
                default:
                        break;
                }
                if (next[0] == total && next[1] == total)
                        sc_batcher_drain(bt, 1);
                /* A trainer slower than the stream: at most 64 samples per 100 ms. */
                if (++tick % 100 == 0 && sc_batcher_ready(bt, t, NULL)) {
                        assert_int_equal(sc_batcher_take(bt, t, b, err, sizeof(err)), SC_OK);
                        ids[n_ids++] = b->id;
                }
                /* Updates are acknowledged late, in random order. */
                if (n_ids > 0 && (n_ids > 3 || sc_rng_below(&rng, 50) == 0)) {
                        size_t k = sc_rng_below(&rng, (uint32_t)n_ids);
                        assert_int_equal(sc_batcher_ack(bt, ids[k], err, sizeof(err)), SC_OK);
                        ids[k] = ids[--n_ids];
                        sc_offsets_commit_t c[2];
                        size_t nc = sc_stream_commits(s, c, 2);
                        for (size_t i = 0; i < nc; i++) {
                                assert_true(c[i].offset > committed[c[i].partition]);
                                committed[c[i].partition] = c[i].offset;
                        }
                }
                check(bt);
                assert_true(t < 1000);
        }
        sc_offsets_commit_t c[2];
        size_t nc = sc_stream_commits(s, c, 2);
        for (size_t i = 0; i < nc; i++)
                committed[c[i].partition] = c[i].offset;
        assert_int_equal(committed[0], total);
        assert_int_equal(committed[1], total);
        const sc_stream_stats_t *st = sc_stream_stats(s);
        assert_int_equal(st->consumed, 2 * total);
        assert_int_equal(st->trained + st->rejected, 2 * total);
        assert_int_equal(first_faults, 1);
        assert_true(st->rejected > 100);
        assert_true(pauses > 0);
        sc_batch_destroy(b);
        sc_batcher_destroy(bt);
        sc_stream_destroy(s);
}

static void streams_added_later_join_batches(void **state)
{
        sc_stream_t *a = mk_stream(SC_STREAM_PERSIST, 64), *b2 = mk_stream(SC_STREAM_PERSIST, 64);
        sc_stream_t *odd;
        sc_stream_spec_t sp;
        sc_batch_spec_t bs;
        sc_batch_t *b;
        char err[160];

        sc_stream_spec_defaults(&sp);
        assert_int_equal(sc_stream_new(&odd, &sp, NUMEL + 1, err, sizeof(err)), SC_OK);
        sc_batch_spec_defaults(&bs);
        bs.mode = SC_BATCH_FIXED;
        bs.b = 8;
        bs.shuffle = 0;
        sc_batcher_t *bt = mk_batcher(&bs, &a, 1);
        assert_int_equal(sc_batcher_add_stream(bt, odd, err, sizeof(err)), SC_ERR_INVAL);
        assert_int_equal(sc_batcher_add_stream(bt, b2, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_batch_new(&b, 8, NUMEL), SC_OK);
        for (int i = 0; i < 4; i++) {
                push(a, 0, i, 1, 0.1 * i);
                push(b2, 0, i, 2, 0.1 * i);
        }
        assert_int_equal(sc_batcher_take(bt, 0.5, b, err, sizeof(err)), SC_OK);
        int from_b = 0;
        for (int i = 0; i < b->n; i++) {
                from_b += b->streams[i] == 1;
                assert_int_equal(b->labels[i], b->streams[i] + 1);
        }
        assert_int_equal(from_b, 4);
        assert_int_equal(sc_batcher_ack(bt, b->id, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_stream_stats(b2)->trained, 4);
        check(bt);
        sc_batch_destroy(b);
        sc_batcher_destroy(bt);
        sc_stream_destroy(a);
        sc_stream_destroy(b2);
        sc_stream_destroy(odd);
}

static void config_errors(void **state)
{
        sc_batch_spec_t bs;
        sc_batcher_t *bt;
        char err[200];
        sc_stream_spec_t sp;
        sc_stream_t *s;

        sc_batch_spec_defaults(&bs);
        bs.b_min = 2000;
        assert_int_equal(sc_batch_spec_check(&bs, err, sizeof(err)), SC_ERR_CONFIG);
        assert_non_null(strstr(err, "batch.b_min"));
        sc_batch_spec_defaults(&bs);
        bs.window = -1;
        assert_int_equal(sc_batch_spec_check(&bs, err, sizeof(err)), SC_ERR_CONFIG);
        sc_batch_spec_defaults(&bs);
        bs.shuffle = -1;
        assert_int_equal(sc_batch_spec_check(&bs, err, sizeof(err)), SC_ERR_CONFIG);
        /* A fixed b that truncate streams can never hold. */
        sc_stream_spec_defaults(&sp);
        sp.policy = SC_STREAM_TRUNCATE;
        sp.keep_min = 8;
        assert_int_equal(sc_stream_new(&s, &sp, NUMEL, err, sizeof(err)), SC_OK);
        sc_batch_spec_defaults(&bs);
        bs.mode = SC_BATCH_FIXED;
        bs.b = 64;
        assert_int_equal(sc_batcher_new(&bt, &bs, &s, 1, 1, err, sizeof(err)), SC_ERR_CONFIG);
        assert_non_null(strstr(err, "batch.b"));
        assert_int_equal(sc_batcher_new(&bt, &bs, &s, 0, 1, err, sizeof(err)), SC_ERR_INVAL);
        sc_stream_destroy(s);
        sc_batcher_destroy(NULL);
        sc_batch_destroy(NULL);
}

/* Random pushes on 3 streams, rejects, ready/take at random times and
 * out-of-order acks: the per-stream identity and the batcher's inflight
 * bookkeeping hold exactly after every step. */
static void random_operations_keep_exact_accounting(void **state)
{
        for (int mode = 0; mode < 2; mode++) {
                sc_stream_t *s[3];
                s[0] = mk_stream(SC_STREAM_PERSIST, 300);
                s[1] = mk_stream_w(SC_STREAM_TRUNCATE, 300, 0.02);
                s[2] = mk_stream(SC_STREAM_PERSIST, 50);
                sc_batch_spec_t bs;
                sc_batch_spec_defaults(&bs);
                bs.mode = mode ? SC_BATCH_FIXED : SC_BATCH_RATE;
                bs.b = 24;
                bs.b_max = 64;
                bs.window = 0.05;
                bs.shuffle = 40;
                sc_batcher_t *bt = mk_batcher(&bs, s, 3);
                sc_batch_t *b;
                assert_int_equal(sc_batch_new(&b, 64, NUMEL), SC_OK);
                uint64_t ids[4096];
                size_t n_ids = 0;
                int64_t next[3][2] = {{0}};
                sc_rng_t rng;
                double t = 0;
                uint64_t taken = 0, samples = 0;
                char err[256];

                sc_rng_seed(&rng, 77 + (uint64_t)mode);
                for (int it = 0; it < 20000; it++) {
                        uint32_t op = sc_rng_below(&rng, 100);
                        int k = (int)sc_rng_below(&rng, 3);
                        int32_t p = (int32_t)sc_rng_below(&rng, 2);
                        t += sc_rng_uniform(&rng) * 0.002;
                        if (op < 60) {
                                float v[NUMEL] = {0, 0};
                                sc_err_t e =
                                    sc_stream_push(s[k], v, k, p, next[k][p] + 1, t, NULL, 0);
                                if (e == SC_OK)
                                        next[k][p]++;
                                else
                                        assert_int_equal(e, SC_ERR_AGAIN);
                        } else if (op < 65) {
                                next[k][p]++;
                                assert_int_equal(sc_stream_reject(s[k], p, next[k][p],
                                                                  SC_DECODE_BAD_CSV, t, NULL, NULL,
                                                                  0),
                                                 SC_OK);
                        } else if (op < 85) {
                                if (sc_batcher_ready(bt, t, NULL)) {
                                        assert_int_equal(
                                            sc_batcher_take(bt, t, b, err, sizeof(err)), SC_OK);
                                        assert_true(b->n >= (mode ? 24 : 8) &&
                                                    b->n <= (mode ? 24 : 64));
                                        ids[n_ids++] = b->id;
                                        taken++;
                                        samples += (uint64_t)b->n;
                                }
                        } else if (n_ids > 0) {
                                size_t j = sc_rng_below(&rng, (uint32_t)n_ids);
                                assert_int_equal(sc_batcher_ack(bt, ids[j], err, sizeof(err)),
                                                 SC_OK);
                                ids[j] = ids[--n_ids];
                        }
                        check(bt);
                        assert_true(sc_batcher_pooled(bt) <= 40 + 64);
                        assert_int_equal(sc_batcher_pending(bt), n_ids);
                }
                assert_true(taken > 100);
                assert_int_equal(sc_batcher_stats(bt)->samples, samples);
                uint64_t trained = 0;
                for (int k = 0; k < 3; k++)
                        trained += sc_stream_stats(s[k])->trained;
                assert_true(trained > 1000);
                assert_true(sc_stream_stats(s[1])->dropped > 0);
                sc_batch_destroy(b);
                sc_batcher_destroy(bt);
                for (int k = 0; k < 3; k++)
                        sc_stream_destroy(s[k]);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(fixed_b_waits_for_b_samples),
            cmocka_unit_test(rate_mode_emits_window_worth_clamped),
            cmocka_unit_test(out_of_order_acks_commit_lowest_unfinished),
            cmocka_unit_test(shuffle_holds_back_until_drained),
            cmocka_unit_test(wrapped_batch_gathers_into_the_callers_rows),
            cmocka_unit_test(flush_trains_the_pool_only),
            cmocka_unit_test(rate_flush_keeps_the_last_batch_size),
            cmocka_unit_test(driver_loop_commits_every_offset),
            cmocka_unit_test(streams_added_later_join_batches),
            cmocka_unit_test(config_errors),
            cmocka_unit_test(random_operations_keep_exact_accounting),
        };
        return cmocka_run_group_tests_name("batch", tests, NULL, NULL);
}
