/* test_stream.c — rate estimator, ring order and wrap, persistence
 * backpressure with hysteresis, truncation with committable drops, rejects,
 * revocation, and exact accounting after random operation sequences. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sc_rng.h"
#define SC_ALLOC_HOOK
#include "sc_alloc.h"
#include "sc_stream.h"

#define NUMEL 3

static sc_stream_t *mk(sc_stream_policy_t policy, size_t cap)
{
        sc_stream_spec_t sp;
        sc_stream_t *s;
        char err[128];
        sc_stream_spec_defaults(&sp);
        sp.policy = policy;
        sp.cap = cap;
        sp.keep_min = cap < 8 ? cap : 8;
        if (sc_stream_new(&s, &sp, NUMEL, err, sizeof(err)) != SC_OK)
                fail_msg("%s", err);
        return s;
}

static void push_n(sc_stream_t *s, int32_t part, int64_t *off, int n, double t0, double dt)
{
        for (int i = 0; i < n; i++) {
                float x[NUMEL] = {(float)*off, (float)part, 1};
                assert_int_equal(
                    sc_stream_push(s, x, (int32_t)(*off % 10), part, *off, t0 + i * dt, NULL, 0),
                    SC_OK);
                (*off)++;
        }
}

static void check(const sc_stream_t *s)
{
        char err[256];
        if (sc_stream_check(s, err, sizeof(err)) != SC_OK)
                fail_msg("%s", err);
}

static void rate_tracks_steady_and_changing_streams(void **state)
{
        sc_rate_t r;
        sc_rate_init(&r, 1.0);
        assert_true(sc_rate_get(&r, 0) == 0);
        /* 100/s for 5 s. */
        for (int i = 0; i < 500; i++)
                sc_rate_observe(&r, i * 0.01, 1);
        assert_float_equal(sc_rate_get(&r, 5.0), 100, 5);
        /* Early reading is unbiased: 10 arrivals in the first 0.1 s. */
        sc_rate_t e;
        sc_rate_init(&e, 1.0);
        for (int i = 0; i < 10; i++)
                sc_rate_observe(&e, 0.01 * (i + 1), 1);
        sc_rate_observe(&e, 0, 0);
        assert_float_equal(sc_rate_get(&e, 0.1), 100, 15);
        /* Drops to 10/s: after 5 time constants the estimate follows
         * (read between arrivals; the old rate leaves 100 * e^-5). */
        for (int i = 1; i <= 50; i++)
                sc_rate_observe(&r, 5.0 + i * 0.1, 1);
        assert_float_equal(sc_rate_get(&r, 10.05), 10, 1);
        /* Silence decays it. */
        assert_true(sc_rate_get(&r, 20.0) < 0.01);
        /* Time going backwards counts as now. */
        sc_rate_observe(&r, 1.0, 1);
        assert_true(isfinite(sc_rate_get(&r, 0.5)));
}

/* A resumed rate reads from the first arrival on and gives way to the
 * stream's own with the time constant; a started estimator ignores a seed. */
static void rate_seeded_from_a_checkpoint(void **state)
{
        sc_rate_t r;
        sc_rate_init(&r, 1.0);
        sc_rate_seed(&r, 200);
        assert_true(sc_rate_get(&r, 3.0) == 0); /* nothing observed yet */
        sc_rate_observe(&r, 3.0, 0);
        assert_float_equal(sc_rate_get(&r, 3.0), 200, 1e-6);
        assert_float_equal(sc_rate_get(&r, 3.5), 200 * exp(-0.5), 1e-3); /* no arrivals */
        /* 20/s from then on: after 5 time constants the seed is spent */
        for (int i = 1; i <= 100; i++)
                sc_rate_observe(&r, 3.0 + i * 0.05, 1);
        assert_float_equal(sc_rate_get(&r, 8.025), 20, 2);
        sc_rate_seed(&r, 1000);
        assert_float_equal(sc_rate_get(&r, 8.025), 20, 2);
        /* Not finite or not positive: no seed (an unseeded estimator reads 0
         * until time has passed). */
        sc_rate_t z;
        sc_rate_init(&z, 1.0);
        sc_rate_seed(&z, NAN);
        sc_rate_seed(&z, -5);
        sc_rate_observe(&z, 1.0, 0);
        assert_true(sc_rate_get(&z, 1.0) == 0);
        /* Through a stream: the seed is the stream's rate at its first reading. */
        sc_stream_t *s = mk(SC_STREAM_TRUNCATE, 64);
        sc_stream_seed_rate(s, 50);
        assert_float_equal(sc_stream_rate(s, 10.0), 50, 1e-6);
        sc_stream_destroy(s);
}

static void fifo_order_across_wrap(void **state)
{
        sc_stream_t *s = mk(SC_STREAM_PERSIST, 5);
        float x[5 * NUMEL];
        int32_t labels[5];
        sc_stream_ref_t refs[5];
        int64_t off = 0;

        for (int round = 0; round < 7; round++) {
                push_n(s, 2, &off, 3, round, 0.01);
                assert_int_equal(sc_stream_take(s, 3, x, labels, refs, round + 0.5), 3);
                for (int i = 0; i < 3; i++) {
                        assert_int_equal(refs[i].offset, off - 3 + i);
                        assert_float_equal(x[i * NUMEL], (float)(off - 3 + i), 0);
                        assert_int_equal(labels[i], (off - 3 + i) % 10);
                        assert_int_equal(refs[i].partition, 2);
                        assert_int_equal(sc_stream_done(s, &refs[i], NULL, 0), SC_OK);
                }
                check(s);
        }
        const sc_stream_stats_t *st = sc_stream_stats(s);
        assert_int_equal(st->trained, 21);
        assert_float_equal(st->latency_max, 0.5, 1e-9);
        sc_offsets_commit_t c[2];
        assert_int_equal(sc_stream_commits(s, c, 2), 1);
        assert_int_equal(c[0].offset, 21);
        sc_stream_destroy(s);
}

static void persist_pauses_with_hysteresis_and_never_drops(void **state)
{
        sc_stream_t *s = mk(SC_STREAM_PERSIST, 100); /* high 80, low 50 */
        float x[100 * NUMEL];
        int32_t labels[100];
        sc_stream_ref_t refs[100];
        int64_t off = 0;

        push_n(s, 0, &off, 79, 0, 0.001);
        assert_int_equal(sc_stream_flow(s), SC_STREAM_FLOW_NONE);
        push_n(s, 0, &off, 1, 1, 0);
        assert_int_equal(sc_stream_paused(s), 1);
        assert_int_equal(sc_stream_flow(s), SC_STREAM_FLOW_PAUSE);
        assert_int_equal(sc_stream_flow(s), SC_STREAM_FLOW_NONE);
        /* In-flight records still arrive after the pause, up to cap. */
        push_n(s, 0, &off, 20, 1, 0.001);
        assert_null(sc_stream_slot(s));
        float y[NUMEL] = {0};
        assert_int_equal(sc_stream_push(s, y, 1, 0, off, 2, NULL, 0), SC_ERR_AGAIN);
        assert_int_equal(sc_stream_push_slot(s, 1, 0, off, 2, NULL, 0), SC_ERR_AGAIN);
        check(s);
        /* Drain to exactly 50: still paused (resume below 50). */
        assert_int_equal(sc_stream_take(s, 50, x, labels, refs, 3), 50);
        assert_int_equal(sc_stream_flow(s), SC_STREAM_FLOW_NONE);
        assert_int_equal(sc_stream_take(s, 1, x, labels, refs + 50, 3), 1);
        assert_int_equal(sc_stream_flow(s), SC_STREAM_FLOW_RESUME);
        assert_int_equal(sc_stream_paused(s), 0);
        const sc_stream_stats_t *st = sc_stream_stats(s);
        assert_int_equal(st->dropped, 0);
        assert_int_equal(st->pauses, 1);
        assert_int_equal(st->consumed, 100);
        assert_int_equal(st->peak_buffered, 100);
        check(s);
        sc_stream_destroy(s);
}

static void truncate_keeps_newest_window_and_commits_drops(void **state)
{
        sc_stream_t *s = mk(SC_STREAM_TRUNCATE, 1000);
        int64_t off = 0;
        /* 200/s for 3 s into a 1 s window. */
        push_n(s, 1, &off, 600, 0.005, 0.005);
        const sc_stream_stats_t *st = sc_stream_stats(s);
        size_t n = sc_stream_count(s);
        assert_true(n >= 180 && n <= 230);
        assert_int_equal(st->dropped + n, 600);
        /* The newest are kept. */
        float x[1000 * NUMEL];
        int32_t labels[1000];
        sc_stream_ref_t refs[1000];
        assert_int_equal(sc_stream_take(s, 1, x, labels, refs, 3.0), 1);
        assert_int_equal(refs[0].offset, (int64_t)(600 - n));
        /* Dropped offsets are committable: the position is the oldest kept. */
        sc_offsets_commit_t c[1];
        assert_int_equal(sc_stream_commits(s, c, 1), 1);
        assert_int_equal(c[0].offset, (int64_t)(600 - n));
        /* Once the stream goes quiet, truncation keeps only keep_min. */
        sc_stream_truncate(s, 20.0);
        assert_int_equal(sc_stream_count(s), 8);
        assert_int_equal(sc_stream_paused(s), 0);
        check(s);
        sc_stream_destroy(s);

        /* At cap, a truncate stream drops the oldest to make room. */
        s = mk(SC_STREAM_TRUNCATE, 4);
        off = 0;
        push_n(s, 0, &off, 10, 0, 0); /* all at one instant: rate 0, limit keep_min */
        assert_int_equal(sc_stream_count(s), 4);
        assert_int_equal(sc_stream_take(s, 4, x, labels, refs, 0), 4);
        assert_int_equal(refs[0].offset, 6);
        assert_int_equal(refs[3].offset, 9);
        check(s);
        sc_stream_destroy(s);
}

static void rejects_count_and_commit(void **state)
{
        sc_stream_t *s = mk(SC_STREAM_PERSIST, 16);
        int first = -1;
        int64_t off = 0;
        char err[128];

        assert_int_equal(sc_stream_reject(s, 0, off++, SC_DECODE_BAD_JSON, 0, &first, NULL, 0),
                         SC_OK);
        assert_int_equal(first, 1);
        assert_int_equal(sc_stream_reject(s, 0, off++, SC_DECODE_BAD_JSON, 0, &first, NULL, 0),
                         SC_OK);
        assert_int_equal(first, 0);
        assert_int_equal(sc_stream_reject(s, 0, off++, SC_DECODE_LABEL_RANGE, 0, &first, NULL, 0),
                         SC_OK);
        assert_int_equal(first, 1);
        /* A repeated offset is refused and not counted. */
        assert_int_equal(sc_stream_reject(s, 0, 1, SC_DECODE_BAD_JSON, 0, &first, err, sizeof(err)),
                         SC_ERR_STATE);
        assert_int_equal(sc_stream_reject(s, 0, 9, SC_DECODE_OK, 0, &first, NULL, 0), SC_ERR_INVAL);
        float y[NUMEL] = {0};
        assert_int_equal(sc_stream_push(s, y, 0, 0, 2, 0, err, sizeof(err)), SC_ERR_STATE);
        assert_int_equal(sc_stream_push(s, y, 0, 0, 7, NAN, err, sizeof(err)), SC_ERR_INVAL);
        const sc_stream_stats_t *st = sc_stream_stats(s);
        assert_int_equal(st->consumed, 3);
        assert_int_equal(st->rejected, 3);
        assert_int_equal(st->faults.count[SC_DECODE_BAD_JSON], 2);
        sc_offsets_commit_t c[1];
        assert_int_equal(sc_stream_commits(s, c, 1), 1);
        assert_int_equal(c[0].offset, 3);
        check(s);
        sc_stream_destroy(s);
}

static void revoke_discards_partition_and_orphans_inflight(void **state)
{
        sc_stream_t *s = mk(SC_STREAM_PERSIST, 32);
        int64_t o0 = 0, o1 = 100;
        float x[32 * NUMEL];
        int32_t labels[32];
        sc_stream_ref_t refs[32];

        push_n(s, 0, &o0, 4, 0, 0.01);
        push_n(s, 1, &o1, 4, 0.1, 0.01);
        push_n(s, 0, &o0, 2, 0.2, 0.01);
        assert_int_equal(sc_stream_take(s, 3, x, labels, refs, 1), 3); /* p0: 0,1,2 */
        assert_int_equal(sc_stream_revoke(s, 0), 3);                   /* p0: 3,4,5 */
        assert_int_equal(sc_stream_count(s), 4);
        check(s);
        /* The rest stays in order. */
        assert_int_equal(sc_stream_take(s, 4, x + 3 * NUMEL, labels + 3, refs + 3, 1), 4);
        assert_int_equal(refs[3].offset, 100);
        assert_int_equal(refs[6].offset, 103);
        assert_float_equal(x[6 * NUMEL], 103.0f, 0);
        /* Re-assigned and re-read from offset 0: the stale acks commit nothing. */
        int64_t again = 0;
        push_n(s, 0, &again, 2, 2, 0.01);
        for (int i = 0; i < 7; i++)
                assert_int_equal(sc_stream_done(s, &refs[i], NULL, 0), SC_OK);
        const sc_stream_stats_t *st = sc_stream_stats(s);
        assert_int_equal(st->revoked, 3);
        assert_int_equal(st->orphaned, 0);
        assert_int_equal(sc_offsets_outstanding(sc_stream_offsets(s), 0), 2);
        int64_t p0;
        assert_int_equal(sc_offsets_position(sc_stream_offsets(s), 0, &p0), SC_OK);
        assert_int_equal(p0, 0);
        check(s);
        /* Acknowledging something that is not inflight fails. */
        sc_stream_ref_t bogus = refs[3];
        assert_int_equal(sc_stream_done(s, &bogus, NULL, 0), SC_ERR_STATE);
        sc_stream_destroy(s);
}

/* A stream with nothing buffered or lent gives its slab back and makes it
 * again for the next sample; one still holding samples keeps it. */
static void shrink_gives_the_slab_back(void **state)
{
        sc_stream_t *s = mk(SC_STREAM_PERSIST, 32);
        int64_t off = 0;
        float x[4 * NUMEL];
        int32_t labels[4];
        sc_stream_ref_t refs[4];
        push_n(s, 0, &off, 3, 0, 0.01);
        sc_stream_shrink(s); /* holds 3: kept */
        assert_int_equal(sc_stream_count(s), 3);
        assert_int_equal(sc_stream_take(s, 3, x, labels, refs, 1), 3);
        assert_float_equal(x[2 * NUMEL], 2.0f, 0);
        check(s);
        sc_stream_shrink(s); /* empty (the 3 are inflight, copied out) */
        check(s);
        push_n(s, 0, &off, 4, 2, 0.01); /* made again */
        assert_int_equal(sc_stream_count(s), 4);
        for (int i = 0; i < 3; i++)
                assert_int_equal(sc_stream_done(s, &refs[i], NULL, 0), SC_OK);
        assert_int_equal(sc_stream_take(s, 4, x, labels, refs, 3), 4);
        assert_float_equal(x[3 * NUMEL], 6.0f, 0);
        assert_int_equal(refs[3].offset, 6);
        check(s);
        sc_stream_destroy(s);
        /* Lent samples keep it too; a reserve after a shrink makes it whole. */
        s = mk(SC_STREAM_TRUNCATE, 8);
        uint32_t slots[4];
        assert_int_equal(sc_stream_reserve(s, 4, NULL, 0), SC_OK);
        off = 0;
        push_n(s, 1, &off, 2, 0, 0.01);
        assert_int_equal(sc_stream_lend(s, 2, slots, labels, refs, 1), 2);
        sc_stream_shrink(s);
        assert_float_equal(sc_stream_row(s, slots[1])[0], 1.0f, 0);
        sc_stream_release(s, slots[0]);
        sc_stream_release(s, slots[1]);
        sc_stream_shrink(s);
        check(s);
        assert_int_equal(sc_stream_reserve(s, 6, NULL, 0), SC_OK);
        push_n(s, 1, &off, 9, 2, 0.01); /* truncate keeps the newest */
        check(s);
        sc_stream_destroy(s);
}

/* Rows come in chunks of 256 slots, made as the buffer grows and given back
 * once a backlog has drained: when the most slots held over the last one to
 * two 10-s windows of stream time lie half a chunk below a chunk. A lent
 * sample keeps its chunk and its row in place. */
static void rows_follow_the_backlog(void **state)
{
        const size_t chunk = 256 * NUMEL * sizeof(float);
        sc_stream_t *s = mk(SC_STREAM_PERSIST, 4096);
        int64_t off = 0;
        float x[1000 * NUMEL];
        int32_t labels[1000];
        sc_stream_ref_t refs[1000];
        uint32_t slots[4];
        assert_int_equal(sc_stream_reserve(s, 4, NULL, 0), SC_OK);
        assert_int_equal(sc_stream_row_bytes(s), 0); /* nothing held: nothing made */
        push_n(s, 0, &off, 10, 0, 0.001);
        assert_int_equal(sc_stream_row_bytes(s), chunk);
        push_n(s, 0, &off, 990, 1, 0.001); /* a backlog of 1,000: 4 chunks */
        assert_int_equal(sc_stream_row_bytes(s), 4 * chunk);
        check(s);
        /* Drained to 300 (slots 700..999), then one lent (700) and 298
         * taken, then the last buffered one (999): within the window of the
         * backlog's peak, every chunk stays. */
        assert_int_equal(sc_stream_take(s, 700, x, labels, refs, 2), 700);
        for (int i = 0; i < 700; i++)
                assert_int_equal(sc_stream_done(s, &refs[i], NULL, 0), SC_OK);
        assert_int_equal(sc_stream_lend(s, 1, slots, labels, refs, 3), 1);
        assert_float_equal(sc_stream_row(s, slots[0])[0], 700.0f, 0);
        assert_int_equal(sc_stream_take(s, 298, x, labels, refs, 3), 298);
        assert_float_equal(x[297 * NUMEL], 998.0f, 0);
        for (int i = 0; i < 298; i++)
                assert_int_equal(sc_stream_done(s, &refs[i], NULL, 0), SC_OK);
        assert_int_equal(sc_stream_take(s, 1, x, labels, refs, 4), 1);
        assert_float_equal(x[0], 999.0f, 0);
        assert_int_equal(sc_stream_row_bytes(s), 4 * chunk);
        check(s);
        /* New samples take the lowest slots (chunk 0's). At 15 s a window
         * ends, but the one before held the backlog: all stay. */
        push_n(s, 1, &off, 5, 15, 0.001);
        assert_int_equal(sc_stream_take(s, 1, x, labels, refs, 15), 1);
        assert_float_equal(x[0], 1000.0f, 0);
        assert_int_equal(sc_stream_row_bytes(s), 4 * chunk);
        /* At 26 s the backlog's window is gone: chunk 3 is freed, chunk 2
         * stays under the lent sample, whose row is still in place. */
        assert_int_equal(sc_stream_take(s, 1, x, labels, refs, 26), 1);
        assert_int_equal(sc_stream_row_bytes(s), 3 * chunk);
        assert_float_equal(sc_stream_row(s, slots[0])[0], 700.0f, 0);
        check(s);
        sc_stream_release(s, slots[0]); /* chunks 2 and 1 go with it */
        assert_int_equal(sc_stream_row_bytes(s), chunk);
        assert_int_equal(sc_stream_take(s, 3, x, labels, refs, 27), 3);
        assert_float_equal(x[2 * NUMEL], 1004.0f, 0);
        check(s);
        /* A backlog after which the stream goes quiet (no sample released
         * again): the poll's rate query gives the chunks back, once two
         * windows have passed. */
        push_n(s, 0, &off, 600, 30, 0.001);
        assert_int_equal(sc_stream_take(s, 600, x, labels, refs, 31), 600);
        assert_int_equal(sc_stream_row_bytes(s), 3 * chunk);
        (void)sc_stream_rate(s, 35);
        assert_int_equal(sc_stream_row_bytes(s), 3 * chunk);
        uint64_t freed = sc_stream_stats(s)->chunks_freed;
        (void)sc_stream_rate(s, 60);
        assert_int_equal(sc_stream_row_bytes(s), chunk);
        assert_int_equal(sc_stream_stats(s)->chunks_freed, freed + 2);
        check(s);
        sc_stream_shrink(s); /* the topic left: its last chunk is counted too */
        assert_int_equal(sc_stream_row_bytes(s), 0);
        assert_int_equal(sc_stream_stats(s)->chunks_freed, freed + 3);
        sc_stream_destroy(s);
}

/* A buffer that fills by 300 and drains at every batch (10 batches a
 * second) keeps the chunks its batches need: nothing is allocated after the
 * first batch. When its batches shrink to 20, the chunk above is given back
 * within two windows. */
static void rows_do_not_churn_at_every_batch(void **state)
{
        const size_t chunk = 256 * NUMEL * sizeof(float);
        sc_stream_t *s = mk(SC_STREAM_PERSIST, 4096);
        int64_t off = 0;
        static float x[300 * NUMEL];
        int32_t labels[300];
        sc_stream_ref_t refs[300];
        double t = 0;
        uint64_t n0 = 0;
        for (int step = 0; step < 600; step++, t += 0.1) {
                push_n(s, 0, &off, 300, t, 0.0001);
                assert_int_equal(sc_stream_take(s, 300, x, labels, refs, t + 0.05), 300);
                for (int i = 0; i < 300; i++)
                        assert_int_equal(sc_stream_done(s, &refs[i], NULL, 0), SC_OK);
                if (step == 0)
                        n0 = sc_alloc_count();
        }
        assert_int_equal(sc_alloc_count(), n0);
        assert_int_equal(sc_stream_row_bytes(s), 2 * chunk);
        for (int step = 0; step < 250; step++, t += 0.1) {
                push_n(s, 0, &off, 20, t, 0.0001);
                assert_int_equal(sc_stream_take(s, 20, x, labels, refs, t + 0.05), 20);
                for (int i = 0; i < 20; i++)
                        assert_int_equal(sc_stream_done(s, &refs[i], NULL, 0), SC_OK);
        }
        assert_int_equal(sc_stream_row_bytes(s), chunk);
        check(s);
        sc_stream_destroy(s);
}

static void spec_errors_name_fields(void **state)
{
        sc_stream_spec_t sp;
        sc_stream_t *s;
        char err[128];
        sc_stream_spec_defaults(&sp);
        sp.low_watermark = 0.9;
        assert_int_equal(sc_stream_new(&s, &sp, 4, err, sizeof(err)), SC_ERR_CONFIG);
        assert_null(s);
        assert_non_null(strstr(err, "stream.low_watermark"));
        sc_stream_spec_defaults(&sp);
        sp.cap = 0;
        assert_int_equal(sc_stream_spec_check(&sp, err, sizeof(err)), SC_ERR_CONFIG);
        assert_non_null(strstr(err, "stream.cap"));
        sc_stream_spec_defaults(&sp);
        sp.keep_min = sp.cap + 1;
        assert_int_equal(sc_stream_spec_check(&sp, err, sizeof(err)), SC_ERR_CONFIG);
        sc_stream_spec_defaults(&sp);
        sp.window = 0;
        assert_int_equal(sc_stream_spec_check(&sp, err, sizeof(err)), SC_ERR_CONFIG);
        sc_stream_spec_defaults(&sp);
        assert_int_equal(sc_stream_new(&s, &sp, 0, err, sizeof(err)), SC_ERR_INVAL);
        sc_stream_destroy(NULL);
}

/* Random pushes, rejects, takes, acks, revokes and truncations; after every
 * step the identity holds exactly and matches counts kept here. */
static void random_operations_keep_exact_accounting(void **state)
{
        for (int policy = 0; policy < 2; policy++) {
                sc_stream_t *s = mk((sc_stream_policy_t)policy, 64);
                sc_rng_t rng;
                int64_t next[3] = {0, 0, 0};
                sc_stream_ref_t *held = malloc(100000 * sizeof(*held));
                float x[16 * NUMEL];
                int32_t labels[16];
                size_t n_held = 0;
                uint64_t pushed = 0, rejected = 0, trained = 0, refused = 0;
                double t = 0;

                sc_rng_seed(&rng, 5 + (uint64_t)policy);
                for (int it = 0; it < 20000; it++) {
                        uint32_t op = sc_rng_below(&rng, 100);
                        int32_t p = (int32_t)sc_rng_below(&rng, 3);
                        t += sc_rng_uniform(&rng) * 0.01;
                        if (op < 50) {
                                float v[NUMEL] = {1, 2, 3};
                                next[p] += 1 + sc_rng_below(&rng, 2);
                                sc_err_t e = sc_stream_push(s, v, 1, p, next[p], t, NULL, 0);
                                if (e == SC_OK)
                                        pushed++;
                                else if (e == SC_ERR_AGAIN)
                                        refused++, next[p]--;
                                else
                                        fail_msg("push: %d", e);
                        } else if (op < 58) {
                                next[p]++;
                                assert_int_equal(sc_stream_reject(s, p, next[p],
                                                                  SC_DECODE_NOT_FINITE, t, NULL,
                                                                  NULL, 0),
                                                 SC_OK);
                                rejected++;
                        } else if (op < 80) {
                                /* Alternate filling and draining phases. */
                                size_t want = sc_rng_below(&rng, (it / 2000) % 2 ? 17 : 3);
                                size_t got = sc_stream_take(s, want, x, labels, held + n_held, t);
                                assert_true(got <= want);
                                n_held += got;
                        } else if (op < 97) {
                                /* Acknowledge a random held sample (out of order). */
                                if (n_held > 0) {
                                        size_t k = sc_rng_below(&rng, (uint32_t)n_held);
                                        assert_int_equal(sc_stream_done(s, &held[k], NULL, 0),
                                                         SC_OK);
                                        held[k] = held[--n_held];
                                        trained++;
                                }
                        } else if (op < 99) {
                                sc_stream_truncate(s, t + sc_rng_uniform(&rng));
                        } else {
                                sc_stream_revoke(s, p);
                                next[p] = 0; /* the partition is read again from 0 */
                        }
                        check(s);
                        const sc_stream_stats_t *st = sc_stream_stats(s);
                        assert_int_equal(st->consumed, pushed + rejected);
                        assert_int_equal(st->rejected, rejected);
                        assert_int_equal(st->inflight, n_held);
                        assert_int_equal(st->trained, trained);
                        assert_int_equal(st->consumed, st->trained + st->dropped + st->buffered +
                                                           st->rejected + st->inflight +
                                                           st->revoked);
                        assert_true(st->buffered <= 64);
                        if (policy == SC_STREAM_PERSIST)
                                assert_int_equal(st->dropped, 0);
                }
                const sc_stream_stats_t *st = sc_stream_stats(s);
                assert_true(st->trained > 1000);
                assert_true(st->revoked > 0);
                if (policy == SC_STREAM_TRUNCATE)
                        assert_true(st->dropped > 0);
                else
                        assert_true(refused > 0 && st->pauses > 0);
                free(held);
                sc_stream_destroy(s);
        }
}

/* Samples lent out (sc_stream_lend, as a shuffle buffer holds them) keep
 * their rows through pushes, truncation, takes and revocations until
 * released: each row still holds its own (offset, partition) when read. */
static void lent_slots_are_never_overwritten(void **state)
{
        (void)state;
        for (int policy = 0; policy < 2; policy++) {
                sc_stream_t *s = mk((sc_stream_policy_t)policy, 16);
                sc_rng_t rng;
                int64_t next[2] = {0, 0};
                uint32_t slots[24];
                sc_stream_ref_t refs[24], taken[64];
                int32_t labels[24];
                float x[64 * NUMEL];
                size_t n_lent = 0, lent_total = 0;
                char err[256];

                assert_int_equal(sc_stream_reserve(s, 24, err, sizeof(err)), SC_OK);
                sc_rng_seed(&rng, 11 + (uint64_t)policy);
                for (int it = 0; it < 20000; it++) {
                        uint32_t op = sc_rng_below(&rng, 100);
                        int32_t p = (int32_t)sc_rng_below(&rng, 2);
                        double t = it * 0.001;
                        if (op < 55) {
                                float v[NUMEL] = {(float)next[p], (float)p, 1};
                                if (sc_stream_push(s, v, 0, p, next[p], t, NULL, 0) == SC_OK)
                                        next[p]++;
                        } else if (op < 75) {
                                size_t got =
                                    sc_stream_lend(s, sc_rng_below(&rng, 6), slots + n_lent,
                                                   labels + n_lent, refs + n_lent, t);
                                assert_true(n_lent + got <= 24);
                                n_lent += got;
                                lent_total += got;
                        } else if (op < 93) {
                                if (n_lent > 0) {
                                        size_t k = sc_rng_below(&rng, (uint32_t)n_lent);
                                        const float *row = sc_stream_row(s, slots[k]);
                                        assert_int_equal((int64_t)row[0], refs[k].offset);
                                        assert_int_equal((int32_t)row[1], refs[k].partition);
                                        sc_stream_release(s, slots[k]);
                                        assert_int_equal(sc_stream_done(s, &refs[k], NULL, 0),
                                                         SC_OK);
                                        n_lent--;
                                        slots[k] = slots[n_lent];
                                        refs[k] = refs[n_lent];
                                }
                        } else if (op < 97) {
                                size_t got = sc_stream_take(s, 3, x, labels, taken, t);
                                for (size_t i = 0; i < got; i++) {
                                        assert_int_equal((int64_t)x[i * NUMEL], taken[i].offset);
                                        assert_int_equal(sc_stream_done(s, &taken[i], NULL, 0),
                                                         SC_OK);
                                }
                        } else if (op < 99) {
                                sc_stream_truncate(s, t + 5);
                        } else {
                                sc_stream_revoke(s, p);
                                next[p] = 0;
                        }
                        check(s);
                }
                /* Every lend was capped by the reserve, and lending ran. */
                assert_true(lent_total > 1000);
                assert_true(sc_stream_stats(s)->revoked > 0);
                sc_stream_destroy(s);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(rate_tracks_steady_and_changing_streams),
            cmocka_unit_test(rate_seeded_from_a_checkpoint),
            cmocka_unit_test(shrink_gives_the_slab_back),
            cmocka_unit_test(fifo_order_across_wrap),
            cmocka_unit_test(persist_pauses_with_hysteresis_and_never_drops),
            cmocka_unit_test(truncate_keeps_newest_window_and_commits_drops),
            cmocka_unit_test(rejects_count_and_commit),
            cmocka_unit_test(revoke_discards_partition_and_orphans_inflight),
            cmocka_unit_test(rows_follow_the_backlog),
            cmocka_unit_test(rows_do_not_churn_at_every_batch),
            cmocka_unit_test(spec_errors_name_fields),
            cmocka_unit_test(random_operations_keep_exact_accounting),
            cmocka_unit_test(lent_slots_are_never_overwritten),
        };
        return cmocka_run_group_tests_name("stream", tests, NULL, NULL);
}
