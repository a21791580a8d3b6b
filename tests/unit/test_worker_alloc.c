/* test_worker_alloc.c — the standalone push-fed worker's steady state
 * allocates nothing, and an allocation failing anywhere in its creation or
 * its first steps is a clean error (the allocator hook of sc_alloc.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#define SC_ALLOC_HOOK
#include "sc_alloc.h"
#include "sc_conf.h"
#include "sc_worker.h"

static const char conf_text[] =
    "{\"model\": {\"input\": [1, 4, 4], \"layers\": [{\"type\": \"flatten\"},"
    " {\"type\": \"dense\", \"units\": 16}, {\"type\": \"relu\"},"
    " {\"type\": \"dense\", \"units\": 3}]},"
    " \"optim\": {\"lr\": 0.05, \"momentum\": 0.9}, \"train\": {\"seed\": 5},"
    " \"source\": {\"topics\": [{\"topic\": \"t\"}]},"
    " \"streams\": {\"format\": \"raw\", \"label\": \"key\", \"scale\": 0.0039, \"cap\": 64},"
    " \"worker\": {\"batch\": \"fixed\", \"b\": 8, \"shuffle\": 0, \"eval\": false,"
    "  \"progress_interval\": 0}}";

#define BATCH 8

typedef struct {
        sc_worker_t *w;
        int64_t offset; /* next offset of each of two partitions, interleaved */
        double t;
} feed_t;

static void on_commit(void *opaque, const char *topic, int32_t partition, int64_t next)
{
        (void)topic;
        *(int64_t *)opaque += next > 0 && partition >= 0;
}

/* One step: a batch of records pushed over two partitions, one poll (which
 * trains and acknowledges it), the finished offsets collected. Returns the
 * first error. */
static sc_err_t step(feed_t *f, char *err, size_t err_size)
{
        uint8_t px[16];
        char key[2] = {0};
        sc_err_t rc;
        for (int i = 0; i < BATCH; i++, f->offset++) {
                for (int k = 0; k < 16; k++)
                        px[k] = (uint8_t)(f->offset * 7 + k);
                key[0] = (char)('0' + f->offset % 3);
                if ((rc = sc_worker_push(f->w, "t", (int32_t)(f->offset % 2), f->offset / 2, key, 1,
                                         px, sizeof(px), NULL, 0, 0, err, err_size)))
                        return rc;
        }
        f->t += 0.01;
        if ((rc = sc_worker_poll(f->w, f->t, 0, err, err_size)))
                return rc;
        int64_t commits = 0;
        sc_worker_commits(f->w, on_commit, &commits);
        return SC_OK;
}

static sc_err_t new_worker(sc_worker_t **wp, const sc_conf_t *conf, char *err, size_t err_size)
{
        sc_worker_spec_t spec;
        sc_worker_spec_defaults(&spec);
        spec.conf = conf;
        spec.input = SC_WORKER_INPUT_PUSH;
        return sc_worker_new(wp, &spec, err, err_size);
}

static void steady_state_allocates_nothing(void **state)
{
        (void)state;
        char err[512];
        sc_conf_t conf;
        feed_t f = {.t = 1.0};
        memset(&conf, 0, sizeof(conf));
        assert_int_equal(sc_conf_parse(&conf, conf_text, "test", err, sizeof(err)), SC_OK);
        assert_int_equal(new_worker(&f.w, &conf, err, sizeof(err)), SC_OK);
        for (int i = 0; i < 10; i++)
                assert_int_equal(step(&f, err, sizeof(err)), SC_OK);
        sc_worker_counters_t before, after;
        sc_worker_counters(f.w, &before);
        uint64_t n0 = sc_alloc_count();
        for (int i = 0; i < 1000; i++)
                assert_int_equal(step(&f, err, sizeof(err)), SC_OK);
        uint64_t allocs = sc_alloc_count() - n0;
        sc_worker_counters(f.w, &after);
        /* Every step trained a batch. */
        assert_int_equal(after.steps - before.steps, 1000);
        assert_int_equal(after.samples - before.samples, 1000 * BATCH);
        if (allocs)
                print_message("%llu allocations in 1000 steady-state steps\n",
                              (unsigned long long)allocs);
        assert_int_equal(allocs, 0);
        assert_int_equal(sc_worker_finish(f.w, 100, err, sizeof(err)), SC_OK);
        sc_worker_destroy(f.w);
        sc_conf_free(&conf);
}

/* For n = 1, 2, ...: the n-th allocation from the worker's creation on
 * fails. Each run ends in SC_ERR_NOMEM (from sc_worker_new or a step) with
 * nothing leaked (ASan's leak check), until a run no longer reaches n
 * allocations and succeeds. */
static void every_allocation_failure_is_clean(void **state)
{
        (void)state;
        char err[512];
        sc_conf_t conf;
        memset(&conf, 0, sizeof(conf));
        assert_int_equal(sc_conf_parse(&conf, conf_text, "test", err, sizeof(err)), SC_OK);
        uint64_t n;
        for (n = 1; n < 10000; n++) {
                feed_t f = {.t = 1.0};
                sc_err_t rc;
                err[0] = 0;
                sc_alloc_fail_after(n);
                rc = new_worker(&f.w, &conf, err, sizeof(err));
                if (rc == SC_OK) {
                        assert_non_null(f.w);
                        for (int i = 0; i < 4 && rc == SC_OK; i++)
                                rc = step(&f, err, sizeof(err));
                } else {
                        assert_null(f.w);
                }
                int failed = sc_alloc_failed();
                sc_alloc_fail_after(0);
                if (!failed) {
                        assert_int_equal(rc, SC_OK);
                        sc_worker_destroy(f.w);
                        break;
                }
                if (rc != SC_ERR_NOMEM)
                        print_message("allocation %llu failed: %s (%s)\n", (unsigned long long)n,
                                      sc_err2str(rc), err);
                assert_int_equal(rc, SC_ERR_NOMEM);
                assert_true(err[0] != 0);
                sc_worker_destroy(f.w);
        }
        /* The runs covered allocations until one ran through. */
        assert_true(n > 10 && n < 10000);
        sc_conf_free(&conf);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(steady_state_allocates_nothing),
            cmocka_unit_test(every_allocation_failure_is_clean),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
