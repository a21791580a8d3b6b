/* test_mix.c — proportional allocation, the shuffle buffer, the label
 * mix of batches drawn from two streams with disjoint labels and from one
 * stream that sends labels in bursts, and the injection pool's balanced and
 * pooled draws. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sc_batch.h"
#include "sc_mix.h"

#define NUMEL 1

static void allocate_proportional_capped_and_fallback(void **state)
{
        size_t out[3];
        double w[3] = {3, 1, 0};
        size_t avail[3] = {1000, 1000, 1000};

        assert_int_equal(sc_mix_allocate(w, avail, 3, 100, out), 100);
        assert_int_equal(out[0], 75);
        assert_int_equal(out[1], 25);
        assert_int_equal(out[2], 0);
        /* A capped source's share goes to the others in proportion. */
        double w2[3] = {1, 1, 2};
        size_t a2[3] = {5, 1000, 1000};
        assert_int_equal(sc_mix_allocate(w2, a2, 3, 100, out), 100);
        assert_int_equal(out[0], 5);
        assert_true(out[1] == 32 || out[1] == 31);
        assert_int_equal(out[1] + out[2], 95);
        assert_true(out[2] >= 63);
        /* No rates yet: split by what is available. */
        double w0[3] = {0, 0, 0};
        size_t a3[3] = {10, 30, 0};
        assert_int_equal(sc_mix_allocate(w0, a3, 3, 20, out), 20);
        assert_int_equal(out[0], 5);
        assert_int_equal(out[1], 15);
        assert_int_equal(out[2], 0);
        /* More asked than there is. */
        assert_int_equal(sc_mix_allocate(w, a3, 3, 500, out), 40);
        assert_int_equal(out[0], 10);
        assert_int_equal(out[1], 30);
        /* Only a zero-weight source has samples. */
        double w4[2] = {5, 0};
        size_t a4[2] = {0, 7};
        assert_int_equal(sc_mix_allocate(w4, a4, 2, 4, out), 4);
        assert_int_equal(out[1], 4);
        /* Rounding: three equal sources, 10 samples. */
        double w5[3] = {1, 1, 1};
        assert_int_equal(sc_mix_allocate(w5, avail, 3, 10, out), 10);
        assert_int_equal(out[0], 4);
        assert_int_equal(out[1], 3);
        assert_int_equal(out[2], 3);
        assert_int_equal(sc_mix_allocate(w5, avail, 0, 10, out), 0);
}

static void pool_draw_is_a_permutation(void **state)
{
        sc_stream_spec_t sp;
        sc_stream_t *s;
        sc_mix_pool_t *pool;
        sc_rng_t rng;
        float x[64];
        int32_t labels[64];
        sc_stream_ref_t refs[64];
        int streams[64], seen[64] = {0}, moved = 0;

        sc_stream_spec_defaults(&sp);
        sp.cap = 64;
        assert_int_equal(sc_stream_new(&s, &sp, NUMEL, NULL, 0), SC_OK);
        for (int i = 0; i < 64; i++) {
                float v = (float)i;
                assert_int_equal(sc_stream_push(s, &v, i, 0, i, 0, NULL, 0), SC_OK);
        }
        assert_int_equal(sc_mix_pool_new(&pool, 48, NUMEL), SC_OK);
        assert_int_equal(sc_mix_pool_fill(pool, s, 3, 64, 0), 0); /* nothing reserved */
        assert_int_equal(sc_stream_reserve(s, 48, NULL, 0), SC_OK);
        assert_int_equal(sc_mix_pool_fill(pool, s, 3, 64, 0), 48); /* bounded by room */
        assert_int_equal(sc_mix_pool_count(pool), 48);
        assert_int_equal(sc_stream_count(s), 16);
        sc_rng_seed(&rng, 8);
        sc_mix_pool_draw(pool, &rng, 48, x, labels, refs, streams);
        assert_int_equal(sc_mix_pool_count(pool), 0);
        for (int i = 0; i < 48; i++) {
                assert_int_equal((int)x[i], labels[i]);
                assert_int_equal(refs[i].offset, labels[i]);
                assert_int_equal(streams[i], 3);
                seen[labels[i]]++;
                moved += labels[i] != i;
        }
        for (int i = 0; i < 48; i++)
                assert_int_equal(seen[i], 1);
        assert_true(moved > 40);
        for (int i = 0; i < 48; i++)
                assert_int_equal(sc_stream_done(s, &refs[i], NULL, 0), SC_OK);
        char err[200];
        assert_int_equal(sc_stream_check(s, err, sizeof(err)), SC_OK);
        sc_mix_pool_destroy(pool);
        sc_mix_pool_destroy(NULL);
        sc_stream_destroy(s);
}

/* A revocation while samples of the partition sit in the shuffle buffer:
 * they leave it untrained (the new owner reads them again) and count as
 * revoked, not orphaned; the other partition's samples stay. */
static void pool_drops_revoked_partitions(void **state)
{
        sc_stream_spec_t sp;
        sc_stream_t *s;
        sc_mix_pool_t *pool;
        sc_rng_t rng;
        float x[32];
        int32_t labels[32];
        sc_stream_ref_t refs[32];
        int streams[32];
        char err[200];

        sc_stream_spec_defaults(&sp);
        sp.cap = 64;
        assert_int_equal(sc_stream_new(&s, &sp, NUMEL, NULL, 0), SC_OK);
        for (int i = 0; i < 40; i++) {
                float v = (float)i;
                assert_int_equal(sc_stream_push(s, &v, i % 10, i % 2, i, 0, NULL, 0), SC_OK);
        }
        assert_int_equal(sc_stream_reserve(s, 32, NULL, 0), SC_OK);
        assert_int_equal(sc_mix_pool_new(&pool, 32, NUMEL), SC_OK);
        assert_int_equal(sc_mix_pool_fill(pool, s, 0, 32, 0), 32); /* 16 of each partition */
        assert_int_equal(sc_mix_pool_drop_revoked(pool), 0);       /* nothing revoked yet */
        assert_int_equal(sc_stream_revoke(s, 0), 4);               /* the 4 still buffered */
        assert_int_equal(sc_stream_stats(s)->orphaned, 16);
        assert_int_equal(sc_mix_pool_drop_revoked(pool), 16);
        assert_int_equal(sc_mix_pool_count(pool), 16);
        const sc_stream_stats_t *st = sc_stream_stats(s);
        assert_int_equal(st->orphaned, 0);
        assert_int_equal(st->revoked, 20);
        assert_int_equal(st->inflight, 16);
        assert_int_equal(sc_stream_check(s, err, sizeof(err)), SC_OK);
        sc_rng_seed(&rng, 3);
        sc_mix_pool_draw(pool, &rng, 16, x, labels, refs, streams);
        for (int i = 0; i < 16; i++) {
                assert_int_equal(refs[i].partition, 1);
                assert_int_equal((int)x[i], (int)refs[i].offset);
                assert_int_equal(sc_stream_done(s, &refs[i], NULL, 0), SC_OK);
        }
        assert_int_equal(sc_stream_stats(s)->trained, 16);
        assert_int_equal(sc_stream_check(s, err, sizeof(err)), SC_OK);
        sc_mix_pool_destroy(pool);
        sc_stream_destroy(s);
}

static sc_stream_t *mk_stream(size_t cap)
{
        sc_stream_spec_t sp;
        sc_stream_t *s;
        sc_stream_spec_defaults(&sp);
        sp.cap = cap;
        sp.high_watermark = 1.0;
        assert_int_equal(sc_stream_new(&s, &sp, NUMEL, NULL, 0), SC_OK);
        return s;
}

/* Longest run of consecutive samples from one stream in a batch. */
static int longest_run(const sc_batch_t *b)
{
        int best = 1, run = 1;
        for (int i = 1; i < b->n; i++) {
                run = b->streams[i] == b->streams[i - 1] ? run + 1 : 1;
                if (run > best)
                        best = run;
        }
        return best;
}

/* Stream A carries labels 0..4 at 200/s, stream B labels 5..9 at 100/s;
 * a fixed-b trainer slower than the streams always finds both backlogged. */
static void two_streams_disjoint_labels_mix_by_rate(void **state)
{
        sc_stream_t *s[2] = {mk_stream(8192), mk_stream(8192)};
        sc_batch_spec_t bs;
        sc_batcher_t *bt;
        sc_batch_t *b;
        char err[160];
        int64_t off[2] = {0, 0};
        double frac_sum = 0, t = 0;
        int batches = 0, worst_run = 0, min_a = 1 << 30, max_a = 0;
        long label_hist[10] = {0};

        sc_batch_spec_defaults(&bs);
        bs.mode = SC_BATCH_FIXED;
        bs.b = 60;
        bs.shuffle = 120;
        assert_int_equal(sc_batcher_new(&bt, &bs, s, 2, 2024, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_batch_new(&b, 60, NUMEL), SC_OK);
        for (int step = 0; step < 100; step++) {
                /* 0.5 s of arrivals per training step of 60 (150 arrive). */
                for (int i = 0; i < 100; i++, off[0]++) {
                        float v = 0;
                        assert_int_equal(sc_stream_push(s[0], &v, (int32_t)(off[0] % 5), 0, off[0],
                                                        t + i * 0.005, NULL, 0),
                                         SC_OK);
                }
                for (int i = 0; i < 50; i++, off[1]++) {
                        float v = 0;
                        assert_int_equal(sc_stream_push(s[1], &v, 5 + (int32_t)(off[1] % 5), 0,
                                                        off[1], t + i * 0.01, NULL, 0),
                                         SC_OK);
                }
                t += 0.5;
                if (!sc_batcher_ready(bt, t, NULL)) {
                        assert_int_equal(step, 0); /* the shuffle buffer fills first */
                        continue;
                }
                assert_int_equal(sc_batcher_take(bt, t, b, err, sizeof(err)), SC_OK);
                int from_a = 0;
                for (int i = 0; i < b->n; i++) {
                        assert_int_equal(b->labels[i] < 5, b->streams[i] == 0);
                        from_a += b->streams[i] == 0;
                        label_hist[b->labels[i]]++;
                }
                if (step >= 5) { /* after the rate estimates settle */
                        frac_sum += (double)from_a / b->n;
                        batches++;
                        if (from_a < min_a)
                                min_a = from_a;
                        if (from_a > max_a)
                                max_a = from_a;
                        if (longest_run(b) > worst_run)
                                worst_run = longest_run(b);
                }
                assert_int_equal(sc_batcher_ack(bt, b->id, err, sizeof(err)), SC_OK);
                assert_int_equal(sc_batcher_check(bt, err, sizeof(err)), SC_OK);
        }
        double frac = frac_sum / batches;
        print_message("two streams: share of stream A per batch %.3f (min %d, max %d of 60), "
                      "longest same-stream run %d\n",
                      frac, min_a, max_a, worst_run);
        print_message("label histogram:");
        for (int l = 0; l < 10; l++)
                print_message(" %ld", label_hist[l]);
        print_message("\n");
        assert_true(fabs(frac - 2.0 / 3.0) < 0.05);
        assert_true(min_a >= 25 && max_a <= 55); /* never one topic only */
        assert_true(worst_run < 30);             /* unmixed, a batch is one run of 40 */
        for (int l = 0; l < 10; l++)
                assert_true(label_hist[l] > 300);
        sc_batch_destroy(b);
        sc_batcher_destroy(bt);
        sc_stream_destroy(s[0]);
        sc_stream_destroy(s[1]);
}

/* One stream sends its labels in bursts of 100; returns the mean number of
 * distinct labels per batch of 32. */
static double distinct_labels_per_batch(int shuffle)
{
        sc_stream_t *s = mk_stream(4096);
        sc_batch_spec_t bs;
        sc_batcher_t *bt;
        sc_batch_t *b;
        char err[160];
        double sum = 0;
        int batches = 0;
        int64_t off = 0;

        sc_batch_spec_defaults(&bs);
        bs.mode = SC_BATCH_FIXED;
        bs.b = 32;
        bs.shuffle = shuffle;
        assert_int_equal(sc_batcher_new(&bt, &bs, &s, 1, 7, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_batch_new(&b, 32, NUMEL), SC_OK);
        for (int step = 0; step < 400; step++) {
                for (int i = 0; i < 32; i++, off++) {
                        float v = 0;
                        assert_int_equal(sc_stream_push(s, &v, (int32_t)(off / 100 % 10), 0, off,
                                                        off * 0.001, NULL, 0),
                                         SC_OK);
                }
                if (sc_batcher_ready(bt, off * 0.001, NULL)) {
                        assert_int_equal(sc_batcher_take(bt, off * 0.001, b, err, sizeof(err)),
                                         SC_OK);
                        int seen[10] = {0}, distinct = 0;
                        for (int i = 0; i < b->n; i++)
                                distinct += !seen[b->labels[i]]++;
                        sum += distinct;
                        batches++;
                        assert_int_equal(sc_batcher_ack(bt, b->id, err, sizeof(err)), SC_OK);
                }
        }
        sc_batch_destroy(b);
        sc_batcher_destroy(bt);
        sc_stream_destroy(s);
        return sum / batches;
}

static void shuffle_buffer_breaks_label_bursts(void **state)
{
        double plain = distinct_labels_per_batch(0);
        double mixed = distinct_labels_per_batch(1024);
        print_message("label bursts of 100: %.2f distinct labels per batch of 32 without a "
                      "shuffle buffer, %.2f with 1024\n",
                      plain, mixed);
        assert_true(plain < 1.5);
        assert_true(mixed > 4.0);
}

static void same_seed_same_batches(void **state)
{
        assert_true(distinct_labels_per_batch(256) == distinct_labels_per_batch(256));
}

/* Ten one-label sources sharing in proportion to skewed rates (source s
 * shares 10 * (s + 1) items, item = 1000 * label + k): a balanced draw's
 * source and label histogram is even in every draw, a pooled draw's follows
 * the rates. */
#define INJ_SOURCES 10
static sc_mix_inject_t *inject_skewed_pool(void)
{
        sc_mix_inject_t *p;
        assert_int_equal(sc_mix_inject_new(&p, INJ_SOURCES, 1000), SC_OK);
        for (int s = 0; s < INJ_SOURCES; s++)
                for (int k = 0; k < 10 * (s + 1); k++)
                        sc_mix_inject_put(p, s, (uint32_t)(1000 * s + k));
        assert_int_equal(sc_mix_inject_count(p, -1), 550);
        assert_int_equal(sc_mix_inject_count(p, 9), 100);
        return p;
}

static void inject_balanced_draw_is_even_across_sources(void **state)
{
        sc_mix_inject_t *p = inject_skewed_pool();
        sc_rng_t rng;
        uint32_t items[64];
        int src[64];
        long total[INJ_SOURCES] = {0};

        (void)state;
        sc_rng_seed(&rng, 7);
        /* 27 draws for device 0: exactly 3 from each of the 9 others. */
        assert_int_equal(sc_mix_inject_draw(p, &rng, SC_MIX_DRAW_BALANCED, 0, 27, items, src), 27);
        int h[INJ_SOURCES] = {0};
        for (int k = 0; k < 27; k++) {
                assert_int_equal((int)items[k] / 1000, src[k]); /* label = source */
                h[items[k] / 1000]++;
        }
        assert_int_equal(h[0], 0);
        for (int s = 1; s < INJ_SOURCES; s++)
                assert_int_equal(h[s], 3);
        /* 40 for device 5: 4 or 5 each, never its own. */
        assert_int_equal(sc_mix_inject_draw(p, &rng, SC_MIX_DRAW_BALANCED, 5, 40, items, NULL), 40);
        memset(h, 0, sizeof(h));
        for (int k = 0; k < 40; k++)
                h[items[k] / 1000]++;
        for (int s = 0; s < INJ_SOURCES; s++)
                if (s == 5)
                        assert_int_equal(h[s], 0);
                else
                        assert_true(h[s] == 4 || h[s] == 5);
        /* Draws smaller than the number of sources: the extra ones rotate at
         * random, so over many draws every source gets ~1/9 (the rates run
         * 1:10, a pooled draw would give source 9 ten times source 1). */
        for (int r = 0; r < 9000; r++) {
                assert_int_equal(
                    sc_mix_inject_draw(p, &rng, SC_MIX_DRAW_BALANCED, 0, 4, items, src), 4);
                for (int k = 0; k < 4; k++) {
                        assert_int_not_equal(src[k], 0);
                        total[src[k]]++;
                }
        }
        for (int s = 1; s < INJ_SOURCES; s++)
                assert_true(total[s] > 3600 && total[s] < 4400); /* 4000 expected */
        sc_mix_inject_destroy(p);
}

static void inject_pooled_draw_follows_shares(void **state)
{
        sc_mix_inject_t *p = inject_skewed_pool();
        sc_rng_t rng;
        uint32_t items[50];
        long h[INJ_SOURCES] = {0};

        (void)state;
        sc_rng_seed(&rng, 8);
        for (int r = 0; r < 2000; r++) {
                assert_int_equal(
                    sc_mix_inject_draw(p, &rng, SC_MIX_DRAW_POOLED, 0, 50, items, NULL), 50);
                for (int k = 0; k < 50; k++)
                        h[items[k] / 1000]++;
        }
        assert_int_equal(h[0], 0);
        /* Source s holds 10 (s + 1) of the 540 foreign items: 100,000 draws. */
        for (int s = 1; s < INJ_SOURCES; s++) {
                double want = 100000.0 * 10 * (s + 1) / 540;
                assert_true(fabs((double)h[s] - want) < 0.1 * want);
        }
        sc_mix_inject_destroy(p);
}

static void inject_rings_and_edges(void **state)
{
        sc_mix_inject_t *p;
        sc_rng_t rng;
        uint32_t items[16];

        (void)state;
        sc_rng_seed(&rng, 9);
        assert_int_equal(sc_mix_inject_new(&p, 0, 4), SC_ERR_INVAL);
        assert_null(p);
        assert_int_equal(sc_mix_inject_new(&p, 3, 0), SC_ERR_INVAL);
        assert_int_equal(sc_mix_inject_new(&p, 3, 4), SC_OK);
        /* Nothing pooled, or only the drawer's own items: no draw. */
        assert_int_equal(sc_mix_inject_draw(p, &rng, SC_MIX_DRAW_BALANCED, 0, 8, items, NULL), 0);
        sc_mix_inject_put(p, 0, 1);
        sc_mix_inject_put(p, 3, 1);  /* out of range: ignored */
        sc_mix_inject_put(p, -1, 1); /* ignored */
        assert_int_equal(sc_mix_inject_count(p, -1), 1);
        assert_int_equal(sc_mix_inject_count(p, 7), 0);
        assert_int_equal(sc_mix_inject_draw(p, &rng, SC_MIX_DRAW_BALANCED, 0, 8, items, NULL), 0);
        assert_int_equal(sc_mix_inject_draw(p, &rng, SC_MIX_DRAW_POOLED, 0, 8, items, NULL), 0);
        /* A full ring keeps the newest cap items of its source. */
        for (uint32_t k = 0; k < 10; k++)
                sc_mix_inject_put(p, 1, 100 + k);
        assert_int_equal(sc_mix_inject_count(p, 1), 4);
        assert_int_equal(sc_mix_inject_count(p, -1), 5);
        for (int how = 0; how < 2; how++) {
                assert_int_equal(
                    sc_mix_inject_draw(p, &rng, (sc_mix_draw_t)how, 0, 16, items, NULL), 16);
                for (int k = 0; k < 16; k++)
                        assert_true(items[k] >= 106 && items[k] <= 109);
        }
        /* Device 2 draws from 0 and 1 alike although 1 holds four times more. */
        int src[16], h[3] = {0};
        assert_int_equal(sc_mix_inject_draw(p, &rng, SC_MIX_DRAW_BALANCED, 2, 16, items, src), 16);
        for (int k = 0; k < 16; k++)
                h[src[k]]++;
        assert_int_equal(h[0], 8);
        assert_int_equal(h[1], 8);
        sc_mix_inject_destroy(p);
        sc_mix_inject_destroy(NULL);
}

/* The shared-sample pool (the distributed worker's J.inject): the samples
 * come back as they were put, balanced across the sources whatever their
 * rates, never the drawing worker's own, the oldest of a full ring gone. */
static void shared_samples_balanced_rings_and_edges(void **state)
{
        enum { SRC = 4, CAP = 8, NE = 3 };
        sc_mix_shared_t *p;
        sc_rng_t rng;
        float x[32 * NE];
        int32_t y[32];
        int src[32];

        (void)state;
        assert_int_equal(sc_mix_shared_new(&p, 0, CAP, NE, 32), SC_ERR_INVAL);
        assert_int_equal(sc_mix_shared_new(&p, SRC, 0, NE, 32), SC_ERR_INVAL);
        assert_int_equal(sc_mix_shared_new(&p, SRC, CAP, 0, 32), SC_ERR_INVAL);
        assert_int_equal(sc_mix_shared_new(&p, SRC, CAP, NE, 0), SC_ERR_INVAL);
        assert_null(p);
        assert_int_equal(sc_mix_shared_new(&p, SRC, CAP, NE, 32), SC_OK);
        sc_rng_seed(&rng, 11);
        /* Nothing foreign yet: nothing drawn. */
        assert_int_equal(sc_mix_shared_draw(p, &rng, SC_MIX_DRAW_BALANCED, 0, 8, x, y, src), 0);
        /* Source 1 shares 100 samples (label 1), source 2 shares 3 (label
         * 2), source 3 one (label 3); x = (source, put index, label). */
        int counts[SRC] = {0, 100, 3, 1};
        for (int s = 0; s < SRC; s++)
                for (int k = 0; k < counts[s]; k++) {
                        float *v = sc_mix_shared_put(p, s, s);
                        assert_non_null(v);
                        v[0] = (float)s, v[1] = (float)k, v[2] = (float)s;
                }
        float *v = sc_mix_shared_put(p, 0, 0); /* the drawing worker's own */
        v[0] = 0, v[1] = 0, v[2] = 0;
        assert_null(sc_mix_shared_put(p, SRC, 1));
        assert_null(sc_mix_shared_put(p, -1, 1));
        assert_int_equal(sc_mix_shared_count(p, 1), CAP); /* the ring keeps 8 */
        assert_int_equal(sc_mix_shared_count(p, 2), 3);
        assert_int_equal(sc_mix_shared_count(p, -1), CAP + 3 + 1 + 1);

        long h[SRC] = {0};
        for (int r = 0; r < 300; r++) {
                /* 12 for worker 0: 4 from each of 1, 2, 3 despite rates 100:3:1 */
                assert_int_equal(
                    sc_mix_shared_draw(p, &rng, SC_MIX_DRAW_BALANCED, 0, 12, x, y, src), 12);
                int per[SRC] = {0};
                for (int i = 0; i < 12; i++) {
                        assert_int_not_equal(src[i], 0);
                        assert_int_equal(y[i], src[i]);
                        assert_true(x[i * NE] == (float)src[i]);
                        assert_true(x[i * NE + 2] == (float)y[i]);
                        if (src[i] == 1) /* only the newest 8 of source 1 remain */
                                assert_true(x[i * NE + 1] >= 92.0f && x[i * NE + 1] < 100.0f);
                        per[src[i]]++;
                        h[src[i]]++;
                }
                assert_true(per[1] == 4 && per[2] == 4 && per[3] == 4);
        }
        assert_true(h[1] == h[2] && h[2] == h[3]);
        /* Worker 2 draws from 0, 1, 3 only; a draw is capped at max_draw. */
        assert_int_equal(sc_mix_shared_draw(p, &rng, SC_MIX_DRAW_BALANCED, 2, 40, x, y, src), 32);
        for (int i = 0; i < 32; i++)
                assert_int_not_equal(src[i], 2);
        /* Pooled draws follow the shares (8 : 3 : 1 for worker 0). */
        long pooled[SRC] = {0};
        for (int r = 0; r < 1000; r++) {
                assert_int_equal(sc_mix_shared_draw(p, &rng, SC_MIX_DRAW_POOLED, 0, 12, x, y, src),
                                 12);
                for (int i = 0; i < 12; i++)
                        pooled[src[i]]++;
        }
        assert_int_equal(pooled[0], 0);
        assert_true(pooled[1] > 7400 && pooled[1] < 8600); /* 8000 expected */
        assert_true(pooled[3] > 800 && pooled[3] < 1200);  /* 1000 expected */
        sc_mix_shared_destroy(p);
        sc_mix_shared_destroy(NULL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(allocate_proportional_capped_and_fallback),
            cmocka_unit_test(pool_draw_is_a_permutation),
            cmocka_unit_test(pool_drops_revoked_partitions),
            cmocka_unit_test(two_streams_disjoint_labels_mix_by_rate),
            cmocka_unit_test(shuffle_buffer_breaks_label_bursts),
            cmocka_unit_test(same_seed_same_batches),
            cmocka_unit_test(inject_balanced_draw_is_even_across_sources),
            cmocka_unit_test(inject_pooled_draw_follows_shares),
            cmocka_unit_test(inject_rings_and_edges),
            cmocka_unit_test(shared_samples_balanced_rings_and_edges),
        };
        return cmocka_run_group_tests_name("mix", tests, NULL, NULL);
}
