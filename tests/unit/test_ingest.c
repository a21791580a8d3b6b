/* test_ingest.c — the one ingest path (sc_ingest.h): streams made per topic
 * on first use, records decoded into the ring or rejected, every error
 * naming topic/partition/offset, and an allocation failing anywhere being a
 * clean SC_ERR_NOMEM (the allocator hook of sc_alloc.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#define SC_ALLOC_HOOK
#include "sc_alloc.h"
#include "sc_ingest.h"

#define NUMEL 4

/* Raw u8 records of NUMEL bytes, the label (0..2) in the key as ASCII; a
 * topic named "bad" gets a decoder that fails its check. */
static void decoder(void *opaque, const char *topic, sc_decode_spec_t *ds)
{
        int *calls = opaque;
        (*calls)++;
        sc_decode_spec_defaults(ds, SC_DECODE_RAW);
        ds->numel = NUMEL;
        ds->n_classes = 3;
        ds->label_source = SC_DECODE_LABEL_KEY;
        if (!strcmp(topic, "bad"))
                ds->std = 0;
}

static sc_ingest_t *new_ingest(int *calls, size_t cap)
{
        char err[256];
        sc_ingest_spec_t spec = {.numel = NUMEL, .seed = 1, .decoder = decoder};
        spec.decoder_opaque = calls;
        sc_stream_spec_defaults(&spec.stream);
        spec.stream.cap = cap;
        spec.stream.keep_min = cap < 8 ? cap : 8;
        sc_batch_spec_defaults(&spec.batch);
        spec.batch.mode = SC_BATCH_FIXED;
        spec.batch.b = 2;
        spec.batch.shuffle = 0;
        sc_ingest_t *in = NULL;
        assert_int_equal(sc_ingest_new(&in, &spec, err, sizeof(err)), SC_OK);
        return in;
}

/* One record of topic index i: value of len bytes, label key. */
static sc_err_t put(sc_ingest_t *in, int i, int32_t part, int64_t off, size_t len, const char *key,
                    sc_ingest_result_t *res, char *err, size_t err_size)
{
        uint8_t px[8] = {1, 2, 3, 4, 5, 6, 7, 8};
        sc_record_t rec = {key, key ? strlen(key) : 0, px, len, NULL, 0};
        return sc_ingest_record(in, i, part, off, &rec, 1.0 + (double)off, res, err, err_size);
}

static void streams_are_made_per_topic(void **state)
{
        (void)state;
        char err[256];
        int calls = 0, a, b, again;
        sc_ingest_t *in = new_ingest(&calls, 16);
        assert_null(sc_ingest_batcher(in));
        assert_int_equal(sc_ingest_find(in, "a"), -1);
        assert_int_equal(sc_ingest_stream(in, "a", &a, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_ingest_stream(in, "b", &b, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_ingest_stream(in, "a", &again, err, sizeof(err)), SC_OK);
        assert_int_equal(a, 0);
        assert_int_equal(b, 1);
        assert_int_equal(again, 0);
        assert_int_equal(calls, 2); /* the decoder asked once per topic */
        assert_int_equal(sc_ingest_count(in), 2);
        assert_int_equal(sc_ingest_find(in, "b"), 1);
        assert_string_equal(sc_ingest_at(in, 1)->topic, "b");
        assert_null(sc_ingest_at(in, 2));
        assert_non_null(sc_ingest_batcher(in));
        /* A decoder that fails its check makes no stream; the error names the topic. */
        assert_int_equal(sc_ingest_stream(in, "bad", &again, err, sizeof(err)), SC_ERR_CONFIG);
        assert_non_null(strstr(err, "topic bad: decode.std"));
        assert_int_equal(sc_ingest_count(in), 2);
        /* Up to SC_BATCH_MAX_STREAMS topics. */
        for (int i = 2; i < SC_BATCH_MAX_STREAMS; i++) {
                char name[16];
                snprintf(name, sizeof(name), "t%d", i);
                assert_int_equal(sc_ingest_stream(in, name, &again, err, sizeof(err)), SC_OK);
        }
        assert_int_equal(sc_ingest_stream(in, "one-more", &again, err, sizeof(err)), SC_ERR_INVAL);
        assert_non_null(strstr(err, "topic one-more: more than 64 topics"));
        sc_ingest_destroy(in);
}

static void records_are_buffered_or_rejected(void **state)
{
        (void)state;
        char err[256];
        int calls = 0, i;
        sc_ingest_result_t res;
        sc_ingest_t *in = new_ingest(&calls, 3);
        assert_int_equal(sc_ingest_stream(in, "t", &i, err, sizeof(err)), SC_OK);
        const sc_stream_t *s = sc_ingest_at(in, i)->stream;

        assert_int_equal(put(in, i, 0, 0, NUMEL, "1", &res, err, sizeof(err)), SC_OK);
        assert_int_equal(res.fault, SC_DECODE_OK);
        assert_int_equal(sc_stream_count(s), 1);
        /* Malformed: consumed and rejected; the first of its kind says where. */
        assert_int_equal(put(in, i, 0, 1, 3, "1", &res, err, sizeof(err)), SC_OK);
        assert_int_equal(res.fault, SC_DECODE_WRONG_LENGTH);
        assert_int_equal(res.first, 1);
        assert_non_null(strstr(res.msg, "t [0] offset 1: malformed record (wrong_length)"));
        assert_int_equal(put(in, i, 1, 7, NUMEL, "x", &res, err, sizeof(err)), SC_OK);
        assert_int_equal(res.fault, SC_DECODE_BAD_KEY);
        assert_int_equal(res.first, 1);
        assert_int_equal(put(in, i, 0, 2, 2, "1", &res, err, sizeof(err)), SC_OK);
        assert_int_equal(res.fault, SC_DECODE_WRONG_LENGTH);
        assert_int_equal(res.first, 0);
        assert_string_equal(res.msg, "");
        /* A redelivered offset: unconsumed, named. */
        assert_int_equal(put(in, i, 0, 1, NUMEL, "2", &res, err, sizeof(err)), SC_ERR_STATE);
        assert_non_null(strstr(err, "t [0] offset 1: "));
        assert_int_equal(put(in, i, 0, 3, NUMEL, "2", &res, err, sizeof(err)), SC_OK);
        assert_int_equal(put(in, i, 1, 8, NUMEL, "0", &res, err, sizeof(err)), SC_OK);
        /* A persist stream at its cap takes nothing more. */
        assert_int_equal(put(in, i, 1, 9, NUMEL, "0", &res, err, sizeof(err)), SC_ERR_AGAIN);
        assert_non_null(strstr(err, "t [1] offset 9: stream full"));
        /* An index with no stream is an error, not a crash. */
        assert_int_equal(put(in, 5, 0, 9, NUMEL, "0", &res, err, sizeof(err)), SC_ERR_INVAL);
        const sc_stream_stats_t *st = sc_stream_stats(s);
        assert_int_equal(st->consumed, 6);
        assert_int_equal(st->rejected, 3);
        assert_int_equal(st->buffered, 3);
        sc_stream_stats_t sum;
        sc_ingest_totals(in, &sum);
        assert_int_equal(sum.consumed, 6);
        assert_int_equal(sum.faults.count[SC_DECODE_WRONG_LENGTH], 2);
        assert_int_equal(sc_batcher_check(sc_ingest_batcher(in), err, sizeof(err)), SC_OK);
        sc_ingest_totals(NULL, &sum);
        assert_int_equal(sum.consumed, 0);
        sc_ingest_destroy(in);
}

/* What a cover callback saw, flattened: "topic/partition:next[done,...]". */
static void collect(void *opaque, const char *topic, int32_t partition, int64_t next,
                    const int64_t *done, size_t ndone)
{
        char *out = opaque;
        size_t n = strlen(out);
        n += (size_t)snprintf(out + n, 512 - n, "%s/%d:%lld[", topic, (int)partition,
                              (long long)next);
        for (size_t k = 0; k < ndone; k++)
                n += (size_t)snprintf(out + n, 512 - n, "%s%lld", k ? "," : "", (long long)done[k]);
        snprintf(out + n, 512 - n, "] ");
}

/* Resuming: a cover skips the records its model holds (below next, and
 * the finished offsets above it), finishing them without consuming them;
 * the covers reported are the streams' (records finished out of order
 * listed) and the resumed ones not read since. */
static void covers_skip_what_the_model_holds(void **state)
{
        (void)state;
        char err[256], seen[512] = "";
        int calls = 0, i;
        sc_ingest_result_t res;
        sc_ingest_t *in = new_ingest(&calls, 16);
        const int64_t done[] = {12, 14};
        assert_int_equal(sc_ingest_cover_add(in, "t", 0, 10, done, 2, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_ingest_cover_add(in, "u", 3, 5, NULL, 0, err, sizeof(err)), SC_OK);
        /* malformed covers are refused by name */
        assert_int_equal(sc_ingest_cover_add(in, "t", 0, 10, NULL, 0, err, sizeof(err)),
                         SC_ERR_INVAL);
        assert_non_null(strstr(err, "t [0]: covered twice"));
        const int64_t bad[] = {9};
        assert_int_equal(sc_ingest_cover_add(in, "v", 0, 10, bad, 1, err, sizeof(err)),
                         SC_ERR_INVAL);
        assert_non_null(strstr(err, "v [0]: finished offsets must increase"));
        int64_t next = 0;
        assert_true(sc_ingest_cover_next(in, "t", 0, &next));
        assert_int_equal(next, 10);
        assert_false(sc_ingest_cover_next(in, "t", 1, &next));

        assert_int_equal(sc_ingest_stream(in, "t", &i, err, sizeof(err)), SC_OK);
        int64_t offs[] = {8, 10, 11, 12, 13, 14, 15};
        int skip[] = {1, 0, 0, 1, 0, 1, 0};
        for (size_t k = 0; k < sizeof(offs) / sizeof(offs[0]); k++) {
                assert_int_equal(put(in, i, 0, offs[k], NUMEL, "1", &res, err, sizeof(err)), SC_OK);
                assert_int_equal(res.skipped, skip[k]);
        }
        /* another partition of the topic is not covered */
        assert_int_equal(put(in, i, 1, 12, NUMEL, "1", &res, err, sizeof(err)), SC_OK);
        assert_false(res.skipped);
        const sc_stream_stats_t *st = sc_stream_stats(sc_ingest_at(in, i)->stream);
        assert_int_equal(st->skipped, 3);
        assert_int_equal(st->consumed, 5);
        assert_int_equal(st->buffered, 5);
        sc_stream_stats_t sum;
        sc_ingest_totals(in, &sum);
        assert_int_equal(sum.skipped, 3);
        /* t [0]: 10 is buffered, so next stays 10; 12 and 14 were finished
         * (skipped) out of order; u [3] was not read: reported as resumed. */
        assert_int_equal(sc_ingest_cover(in, collect, seen, err, sizeof(err)), SC_OK);
        assert_string_equal(seen, "t/0:10[12,14] t/1:12[] u/3:5[] ");
        sc_ingest_destroy(in);
}

/* A resumed cover merges with what is read since: offsets it holds above
 * the last record read stay reported; kept through a revocation
 * (sc_ingest_remember), they are still skipped when read again. */
static void covers_merge_and_survive_a_revocation(void **state)
{
        (void)state;
        char err[256], seen[512] = "";
        int calls = 0, i;
        sc_ingest_result_t res;
        sc_ingest_t *in = new_ingest(&calls, 16);
        const int64_t done[] = {103, 104};
        assert_int_equal(sc_ingest_cover_add(in, "t", 0, 100, done, 2, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_ingest_stream(in, "t", &i, err, sizeof(err)), SC_OK);
        /* 100 and 101 finish at once (malformed: rejected) */
        assert_int_equal(put(in, i, 0, 100, 3, "1", &res, err, sizeof(err)), SC_OK);
        assert_int_equal(put(in, i, 0, 101, 3, "1", &res, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_ingest_cover(in, collect, seen, err, sizeof(err)), SC_OK);
        assert_string_equal(seen, "t/0:102[103,104] ");
        /* 102 buffered, 103 skipped; the partition is revoked */
        assert_int_equal(put(in, i, 0, 102, NUMEL, "1", &res, err, sizeof(err)), SC_OK);
        assert_false(res.skipped);
        assert_int_equal(put(in, i, 0, 103, NUMEL, "1", &res, err, sizeof(err)), SC_OK);
        assert_true(res.skipped);
        assert_int_equal(sc_ingest_remember(in, i, 0, err, sizeof(err)), SC_OK);
        sc_stream_revoke(sc_ingest_at(in, i)->stream, 0);
        seen[0] = 0;
        assert_int_equal(sc_ingest_cover(in, collect, seen, err, sizeof(err)), SC_OK);
        assert_string_equal(seen, "t/0:102[103,104] ");
        /* read again from 102: 103 and 104 are still skipped, 105 is not */
        int64_t offs[] = {102, 103, 104, 105};
        int skip[] = {0, 1, 1, 0};
        for (size_t k = 0; k < 4; k++) {
                assert_int_equal(put(in, i, 0, offs[k], NUMEL, "1", &res, err, sizeof(err)), SC_OK);
                assert_int_equal(res.skipped, skip[k]);
        }
        seen[0] = 0;
        assert_int_equal(sc_ingest_cover(in, collect, seen, err, sizeof(err)), SC_OK);
        assert_string_equal(seen, "t/0:102[103,104] ");
        sc_ingest_destroy(in);
}

static void collect_rate(void *opaque, const char *topic, double rate)
{
        char *seen = opaque;
        size_t len = strlen(seen);
        snprintf(seen + len, 256 - len, "%s=%.1f ", topic, rate);
}

/* Resumed rates: a topic seeded before its stream is made starts from the
 * seed when it is made; one made already is seeded at once; a seed of a
 * topic never read is still reported (the next checkpoint keeps it). */
static void resumed_rates_seed_the_streams(void **state)
{
        (void)state;
        char err[256], seen[256] = "";
        int calls = 0, a, b;
        sc_ingest_t *in = new_ingest(&calls, 16);
        assert_int_equal(sc_ingest_rate_seed(in, "a", 40, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_ingest_rate_seed(in, "c", 7, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_ingest_rate_seed(in, "a", 30, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_ingest_stream(in, "a", &a, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_ingest_stream(in, "b", &b, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_ingest_rate_seed(in, "b", 12, err, sizeof(err)), SC_OK);
        sc_ingest_rates(in, 5.0, collect_rate, seen);
        assert_string_equal(seen, "a=30.0 b=12.0 c=7.0 ");
        sc_ingest_destroy(in);
}

/* For n = 1, 2, ...: the n-th allocation fails, from the ingest's creation
 * through two topics and their records; each run ends in SC_ERR_NOMEM with
 * nothing made half (ASan's leak check) until one needs fewer. */
static void every_allocation_failure_is_clean(void **state)
{
        (void)state;
        char err[256];
        uint64_t n;
        for (n = 1; n < 1000; n++) {
                sc_ingest_spec_t spec = {.numel = NUMEL, .seed = 1, .decoder = decoder};
                int calls = 0, idx = -1;
                spec.decoder_opaque = &calls;
                sc_stream_spec_defaults(&spec.stream);
                sc_batch_spec_defaults(&spec.batch);
                sc_ingest_t *in = NULL;
                sc_ingest_result_t res;
                sc_alloc_fail_after(n);
                sc_err_t rc = sc_ingest_new(&in, &spec, err, sizeof(err));
                if (rc == SC_OK)
                        rc = sc_ingest_rate_seed(in, "a", 5, err, sizeof(err));
                if (rc == SC_OK)
                        rc = sc_ingest_rate_seed(in, "z", 5, err, sizeof(err));
                for (int t = 0; t < 2 && rc == SC_OK; t++) {
                        rc = sc_ingest_stream(in, t ? "b" : "a", &idx, err, sizeof(err));
                        for (int64_t off = 0; off < 40 && rc == SC_OK; off++)
                                rc = put(in, idx, (int32_t)(off % 3), off, NUMEL, "1", &res, err,
                                         sizeof(err));
                }
                int failed = sc_alloc_failed();
                sc_alloc_fail_after(0);
                if (!failed) {
                        assert_int_equal(rc, SC_OK);
                        assert_int_equal(sc_ingest_count(in), 2);
                        sc_ingest_destroy(in);
                        break;
                }
                if (rc != SC_ERR_NOMEM)
                        print_message("allocation %llu failed: %s (%s)\n", (unsigned long long)n,
                                      sc_err2str(rc), err);
                assert_int_equal(rc, SC_ERR_NOMEM);
                sc_ingest_destroy(in);
        }
        assert_true(n > 5 && n < 1000);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(streams_are_made_per_topic),
            cmocka_unit_test(records_are_buffered_or_rejected),
            cmocka_unit_test(covers_skip_what_the_model_holds),
            cmocka_unit_test(covers_merge_and_survive_a_revocation),
            cmocka_unit_test(resumed_rates_seed_the_streams),
            cmocka_unit_test(every_allocation_failure_is_clean),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
