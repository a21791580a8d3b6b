/* test_offsets.c — commit positions under out-of-order completion, gaps,
 * several partitions, epochs, and a random comparison with a plain model. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "sc_offsets.h"
#include "sc_rng.h"

static int64_t pos(sc_offsets_t *o, int32_t p)
{
        int64_t v = -7;
        assert_int_equal(sc_offsets_position(o, p, &v), SC_OK);
        return v;
}

static void out_of_order_completion(void **state)
{
        sc_offsets_t *o;
        uint32_t ep;
        sc_offsets_commit_t c[4];
        int64_t v;

        assert_int_equal(sc_offsets_new(&o), SC_OK);
        assert_int_equal(sc_offsets_position(o, 0, &v), SC_ERR_AGAIN);
        for (int64_t off = 0; off < 5; off++)
                assert_int_equal(sc_offsets_track(o, 0, off, &ep, NULL, 0), SC_OK);
        assert_int_equal(pos(o, 0), 0);
        assert_int_equal(sc_offsets_changed(o, c, 4), 0); /* nothing finished yet */
        assert_int_equal(sc_offsets_done(o, 0, 2, ep, NULL, 0), SC_OK);
        assert_int_equal(sc_offsets_done(o, 0, 3, ep, NULL, 0), SC_OK);
        assert_int_equal(pos(o, 0), 0);
        assert_int_equal(sc_offsets_changed(o, c, 4), 0);
        assert_int_equal(sc_offsets_done(o, 0, 0, ep, NULL, 0), SC_OK);
        assert_int_equal(pos(o, 0), 1);
        assert_int_equal(sc_offsets_changed(o, c, 4), 1);
        assert_int_equal(c[0].partition, 0);
        assert_int_equal(c[0].offset, 1);
        assert_int_equal(sc_offsets_changed(o, c, 4), 0); /* reported once */
        assert_int_equal(sc_offsets_done(o, 0, 1, ep, NULL, 0), SC_OK);
        assert_int_equal(pos(o, 0), 4);
        assert_int_equal(sc_offsets_outstanding(o, 0), 1);
        assert_int_equal(sc_offsets_done(o, 0, 4, ep, NULL, 0), SC_OK);
        assert_int_equal(pos(o, 0), 5);
        assert_int_equal(sc_offsets_outstanding(o, -1), 0);
        assert_int_equal(sc_offsets_changed(o, c, 4), 1);
        assert_int_equal(c[0].offset, 5);
        sc_offsets_destroy(o);
}

static void gaps_partitions_and_errors(void **state)
{
        sc_offsets_t *o;
        uint32_t e3, e1;
        sc_offsets_commit_t c[2];
        char err[128];

        assert_int_equal(sc_offsets_new(&o), SC_OK);
        assert_int_equal(sc_offsets_track(o, 3, 5, &e3, NULL, 0), SC_OK);
        assert_int_equal(sc_offsets_track(o, 3, 7, &e3, NULL, 0), SC_OK);
        assert_int_equal(sc_offsets_track(o, 3, 10, &e3, NULL, 0), SC_OK);
        assert_int_equal(sc_offsets_track(o, 1, 100, &e1, NULL, 0), SC_OK);
        assert_int_not_equal(e1, e3);
        assert_int_equal(sc_offsets_track(o, 3, 10, NULL, err, sizeof(err)), SC_ERR_STATE);
        assert_non_null(strstr(err, "partition 3 offset 10"));
        assert_int_equal(sc_offsets_track(o, 3, 9, NULL, NULL, 0), SC_ERR_STATE);
        assert_int_equal(sc_offsets_track(o, -1, 9, NULL, NULL, 0), SC_ERR_INVAL);
        assert_int_equal(sc_offsets_done(o, 3, 6, e3, NULL, 0), SC_ERR_STATE); /* a gap */
        assert_int_equal(sc_offsets_done(o, 3, 7, e3, NULL, 0), SC_OK);
        assert_int_equal(sc_offsets_done(o, 3, 7, e3, NULL, 0), SC_ERR_STATE); /* twice */
        assert_int_equal(sc_offsets_done(o, 3, 5, e1, NULL, 0), SC_ERR_STATE); /* epoch */
        assert_int_equal(sc_offsets_done(o, 9, 5, e3, NULL, 0), SC_ERR_STATE); /* unknown */
        assert_int_equal(pos(o, 3), 5);
        assert_int_equal(sc_offsets_done(o, 3, 5, e3, NULL, 0), SC_OK);
        assert_int_equal(pos(o, 3), 10);
        assert_int_equal(sc_offsets_done(o, 1, 100, e1, NULL, 0), SC_OK);
        assert_int_equal(sc_offsets_done(o, 3, 10, e3, NULL, 0), SC_OK);
        /* Reported in partition order, max at a time. */
        assert_int_equal(sc_offsets_changed(o, c, 1), 1);
        assert_int_equal(c[0].partition, 1);
        assert_int_equal(c[0].offset, 101);
        assert_int_equal(sc_offsets_changed(o, c, 2), 1);
        assert_int_equal(c[0].partition, 3);
        assert_int_equal(c[0].offset, 11);

        /* Forget: outstanding dropped, stale epoch refused even once re-tracked. */
        assert_int_equal(sc_offsets_track(o, 3, 11, NULL, NULL, 0), SC_OK);
        assert_int_equal(sc_offsets_forget(o, 3), 1);
        assert_int_equal(sc_offsets_epoch(o, 3), 0);
        uint32_t e3b;
        assert_int_equal(sc_offsets_track(o, 3, 11, &e3b, NULL, 0), SC_OK);
        assert_int_not_equal(e3b, e3);
        assert_int_equal(sc_offsets_done(o, 3, 11, e3, NULL, 0), SC_ERR_STATE);
        assert_int_equal(sc_offsets_done(o, 3, 11, e3b, NULL, 0), SC_OK);
        sc_offsets_destroy(o);
        sc_offsets_destroy(NULL);
}

#define NP 3
#define NOFF 3000

/* Random track/done against a model that keeps one flag per offset. */
static void random_against_model(void **state)
{
        static uint8_t tracked[NP][NOFF], done[NP][NOFF];
        int64_t next[NP] = {0}, last[NP];
        uint32_t ep[NP];
        sc_offsets_t *o;
        sc_rng_t rng;

        memset(tracked, 0, sizeof(tracked));
        memset(done, 0, sizeof(done));
        for (int p = 0; p < NP; p++)
                last[p] = -1;
        sc_rng_seed(&rng, 99);
        assert_int_equal(sc_offsets_new(&o), SC_OK);
        for (int it = 0; it < 20000; it++) {
                int p = (int)sc_rng_below(&rng, NP);
                if (sc_rng_below(&rng, 2) == 0 && next[p] < NOFF - 3) {
                        next[p] += 1 + sc_rng_below(&rng, 3); /* gaps */
                        int64_t off = next[p] - 1;
                        assert_int_equal(sc_offsets_track(o, p, off, &ep[p], NULL, 0), SC_OK);
                        tracked[p][off] = 1;
                        last[p] = off;
                } else if (last[p] >= 0) {
                        /* Finish a random outstanding offset, if any. */
                        int64_t start = (int64_t)sc_rng_below(&rng, (uint32_t)last[p] + 1);
                        for (int64_t k = 0; k <= last[p]; k++) {
                                int64_t off = (start + k) % (last[p] + 1);
                                if (tracked[p][off] && !done[p][off]) {
                                        assert_int_equal(sc_offsets_done(o, p, off, ep[p], NULL, 0),
                                                         SC_OK);
                                        done[p][off] = 1;
                                        break;
                                }
                        }
                }
                if (last[p] < 0)
                        continue;
                int64_t want = last[p] + 1;
                size_t outstanding = 0;
                for (int64_t off = 0; off <= last[p]; off++)
                        if (tracked[p][off] && !done[p][off]) {
                                if (want == last[p] + 1)
                                        want = off;
                                outstanding++;
                        }
                assert_int_equal(pos(o, p), want);
                assert_int_equal(sc_offsets_outstanding(o, p), outstanding);
        }
        sc_offsets_destroy(o);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(out_of_order_completion),
            cmocka_unit_test(gaps_partitions_and_errors),
            cmocka_unit_test(random_against_model),
        };
        return cmocka_run_group_tests_name("offsets", tests, NULL, NULL);
}
