/* test_prom.c — the Prometheus text writer against exact expected text
 * (families, label and HELP escaping, histograms), value formatting, name
 * validation, and every allocation failure of a long exposition. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SC_ALLOC_HOOK
#include "sc_alloc.h"
#include "sc_prom.h"

/* The value text of a one-sample family holding v, into out. */
static void value_text(double v, char *out, size_t n)
{
        sc_prom_t p;
        sc_prom_init(&p);
        sc_prom_one(&p, "v", "gauge", "", v);
        assert_false(p.oom);
        assert_false(p.bad);
        const char *line = strstr(p.buf, "\nv ");
        assert_non_null(line);
        line += 3;
        size_t len = strcspn(line, "\n");
        assert_true(len < n);
        memcpy(out, line, len);
        out[len] = 0;
        assert_string_equal(line + len, "\n");
        sc_prom_free(&p);
}

/* The fewest significant digits (%.*g) that read back as v. */
static int shortest_digits(double v)
{
        char s[40];
        for (int d = 1; d <= 17; d++) {
                snprintf(s, sizeof(s), "%.*g", d, v);
                if (strtod(s, NULL) == v)
                        return d;
        }
        return 17;
}

/* Significant digits in a %g-style string. */
static int digits_in(const char *s)
{
        int n = 0, lead = 1;
        for (; *s && *s != 'e' && *s != 'E'; s++) {
                if (*s < '0' || *s > '9')
                        continue;
                if (lead && *s == '0')
                        continue;
                lead = 0;
                n++;
        }
        return n;
}

static void test_exposition(void **state)
{
        (void)state;
        sc_prom_t p;
        sc_prom_init(&p);
        assert_null(p.buf);
        sc_prom_family(&p, "scadles_train_samples_total", "counter", "Samples trained.");
        sc_prom_sample(&p, NULL, NULL, 1234);
        const char *lbl[] = {"topic", "a\\b\"c\nd", "partition", "3", NULL};
        sc_prom_family(&p, "scadles_consumer_lag_records", "gauge",
                       "Records \\ behind.\nSecond \"line\".");
        sc_prom_sample(&p, NULL, lbl, 17);
        sc_prom_sample(&p, "", lbl, 18);
        const char *want =
            "# HELP scadles_train_samples_total Samples trained.\n"
            "# TYPE scadles_train_samples_total counter\n"
            "scadles_train_samples_total 1234\n"
            "# HELP scadles_consumer_lag_records Records \\\\ behind.\\nSecond \"line\".\n"
            "# TYPE scadles_consumer_lag_records gauge\n"
            "scadles_consumer_lag_records{topic=\"a\\\\b\\\"c\\nd\",partition=\"3\"} 17\n"
            "scadles_consumer_lag_records{topic=\"a\\\\b\\\"c\\nd\",partition=\"3\"} 18\n";
        assert_string_equal(p.buf, want);
        assert_int_equal(p.len, strlen(want));
        assert_true(p.cap > p.len);
        assert_false(p.oom);
        assert_false(p.bad);
        sc_prom_free(&p);
        assert_null(p.buf);
        assert_int_equal(p.len, 0);

        /* sc_prom_one, a NULL help, a metric name with a colon. */
        sc_prom_init(&p);
        sc_prom_one(&p, "job:up", "untyped", NULL, 1);
        assert_string_equal(p.buf, "# HELP job:up \n# TYPE job:up untyped\njob:up 1\n");
        assert_false(p.bad);
        sc_prom_free(&p);
}

static void test_values(void **state)
{
        (void)state;
        char s[64];
        static const struct {
                double v;
                const char *text;
        } exact[] = {
            {0, "0"},
            {42, "42"},
            {-3, "-3"},
            {9007199254740992.0, "9007199254740992"},   /* 2^53 */
            {-9007199254740992.0, "-9007199254740992"}, /* -2^53 */
            {9007199254740991.0, "9007199254740991"},   /* 2^53 - 1 */
            {1e6, "1000000"},
            {0.1, "0.1"},
            {-2.5, "-2.5"},
            {1e-7, "1e-07"},
        };
        for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++) {
                value_text(exact[i].v, s, sizeof(s));
                assert_string_equal(s, exact[i].text);
        }
        value_text(NAN, s, sizeof(s));
        assert_string_equal(s, "NaN");
        value_text(INFINITY, s, sizeof(s));
        assert_string_equal(s, "+Inf");
        value_text(-INFINITY, s, sizeof(s));
        assert_string_equal(s, "-Inf");

        /* Doubles read back exactly, normal ones in the fewest digits
         * (a subnormal may take more: 5e-324 comes out in 15). */
        static const double rt[] = {
            1.0 / 3, 2.0 / 3, 0.1 + 0.2,          1e300,           -1e-300, 5e-324, DBL_MAX,
            1.5e17,  123.456, 0.7999999999999999, 3.14159265358979};
        for (size_t i = 0; i < sizeof(rt) / sizeof(rt[0]); i++) {
                value_text(rt[i], s, sizeof(s));
                char *end;
                assert_true(strtod(s, &end) == rt[i]);
                assert_true(*end == 0);
                assert_true(digits_in(s) <= 17);
                if (isnormal(rt[i]))
                        assert_int_equal(digits_in(s), shortest_digits(rt[i]));
        }
        value_text(1.0 / 3, s, sizeof(s));
        assert_string_equal(s, "0.3333333333333333");
        value_text(0.1 + 0.2, s, sizeof(s));
        assert_string_equal(s, "0.30000000000000004");
}

static void test_names(void **state)
{
        (void)state;
        static const char *const metric_ok[] = {"a", "_x", "A_b:c", "a1", ":a", "__x"};
        static const char *const metric_bad[] = {"", "1abc", "a-b", "a b", "a.b", "é"};
        static const char *const label_ok[] = {"a", "_x", "a_1", "Topic"};
        static const char *const label_bad[] = {"", "1x", "a-b", "__name", "__", "a:b"};
        for (size_t i = 0; i < sizeof(metric_ok) / sizeof(metric_ok[0]); i++)
                assert_true(sc_prom_name_ok(metric_ok[i], 0));
        for (size_t i = 0; i < sizeof(metric_bad) / sizeof(metric_bad[0]); i++)
                assert_false(sc_prom_name_ok(metric_bad[i], 0));
        for (size_t i = 0; i < sizeof(label_ok) / sizeof(label_ok[0]); i++)
                assert_true(sc_prom_name_ok(label_ok[i], 1));
        for (size_t i = 0; i < sizeof(label_bad) / sizeof(label_bad[0]); i++)
                assert_false(sc_prom_name_ok(label_bad[i], 1));
        assert_false(sc_prom_name_ok(NULL, 0));
        assert_false(sc_prom_name_ok(NULL, 1));

        /* A bad family name writes nothing; its samples have no family. */
        sc_prom_t p;
        sc_prom_init(&p);
        sc_prom_family(&p, "1abc", "gauge", "x");
        assert_true(p.bad);
        assert_int_equal(p.len, 0);
        sc_prom_sample(&p, NULL, NULL, 1);
        assert_int_equal(p.len, 0);
        sc_prom_free(&p);

        sc_prom_init(&p);
        sc_prom_family(&p, "a-b", "gauge", "x");
        assert_true(p.bad);
        assert_int_equal(p.len, 0);
        sc_prom_free(&p);

        /* A name longer than the family buffer is refused. */
        char longname[200];
        memset(longname, 'a', sizeof(longname) - 1);
        longname[sizeof(longname) - 1] = 0;
        sc_prom_init(&p);
        sc_prom_family(&p, longname, "gauge", "x");
        assert_true(p.bad);
        assert_int_equal(p.len, 0);
        longname[sizeof(p.fam) - 1] = 0; /* 127 characters fit */
        sc_prom_clear(&p);
        sc_prom_one(&p, longname, "gauge", "x", 1);
        assert_false(p.bad);
        assert_true(p.len > 0);
        sc_prom_free(&p);

        /* A sample before any family. */
        sc_prom_init(&p);
        sc_prom_sample(&p, NULL, NULL, 1);
        assert_true(p.bad);
        assert_int_equal(p.len, 0);
        sc_prom_free(&p);

        /* A bad label name sets bad; the good labels are still written. */
        const char *lbl[] = {"__name", "x", "ok", "y", NULL};
        sc_prom_init(&p);
        sc_prom_family(&p, "m", "gauge", "h");
        assert_false(p.bad);
        sc_prom_sample(&p, NULL, lbl, 2);
        assert_true(p.bad);
        assert_non_null(strstr(p.buf, "m{ok=\"y\"} 2\n"));
        assert_null(strstr(p.buf, "__name"));
        sc_prom_free(&p);

        const char *lbl2[] = {"1x", "x", NULL};
        sc_prom_init(&p);
        sc_prom_family(&p, "m", "gauge", "h");
        sc_prom_sample(&p, NULL, lbl2, 2);
        assert_true(p.bad);
        sc_prom_free(&p);

        const char *lbl3[] = {"a-b", "x", NULL};
        sc_prom_init(&p);
        sc_prom_family(&p, "m", "gauge", "h");
        sc_prom_sample(&p, NULL, lbl3, 2);
        assert_true(p.bad);
        sc_prom_free(&p);
}

static void test_hist(void **state)
{
        (void)state;
        static const double bounds[] = {0.25, 1, 10};
        sc_prom_hist_t h;
        sc_prom_hist_init(&h, bounds, 3);
        assert_int_equal(h.nb, 3);
        /* Dyadic values: the sum is exact. 0.25 is on a bound (le is <=). */
        const double obs[] = {0.125, 0.25, 0.5, 4, 100, NAN};
        for (size_t i = 0; i < sizeof(obs) / sizeof(obs[0]); i++)
                sc_prom_hist_add(&h, obs[i]);
        assert_int_equal(h.n, 5);
        assert_int_equal(h.count[0], 2);
        assert_int_equal(h.count[1], 1);
        assert_int_equal(h.count[2], 1);
        assert_true(h.sum == 104.875);

        sc_prom_t p;
        sc_prom_init(&p);
        const char *lbl[] = {"op", "x", NULL};
        sc_prom_family(&p, "lat_seconds", "histogram", "Latency.");
        sc_prom_hist_write(&p, &h, lbl);
        sc_prom_family(&p, "bare", "histogram", "No labels.");
        sc_prom_hist_write(&p, &h, NULL);
        assert_false(p.bad);
        assert_false(p.oom);
        assert_string_equal(p.buf, "# HELP lat_seconds Latency.\n"
                                   "# TYPE lat_seconds histogram\n"
                                   "lat_seconds_bucket{op=\"x\",le=\"0.25\"} 2\n"
                                   "lat_seconds_bucket{op=\"x\",le=\"1\"} 3\n"
                                   "lat_seconds_bucket{op=\"x\",le=\"10\"} 4\n"
                                   "lat_seconds_bucket{op=\"x\",le=\"+Inf\"} 5\n"
                                   "lat_seconds_sum{op=\"x\"} 104.875\n"
                                   "lat_seconds_count{op=\"x\"} 5\n"
                                   "# HELP bare No labels.\n"
                                   "# TYPE bare histogram\n"
                                   "bare_bucket{le=\"0.25\"} 2\n"
                                   "bare_bucket{le=\"1\"} 3\n"
                                   "bare_bucket{le=\"10\"} 4\n"
                                   "bare_bucket{le=\"+Inf\"} 5\n"
                                   "bare_sum 104.875\n"
                                   "bare_count 5\n");
        sc_prom_free(&p);

        /* An empty histogram: zeros, and +Inf as the only bucket without bounds. */
        sc_prom_hist_init(&h, bounds, 0);
        sc_prom_init(&p);
        sc_prom_family(&p, "e", "histogram", "");
        sc_prom_hist_write(&p, &h, NULL);
        assert_string_equal(p.buf, "# HELP e \n# TYPE e histogram\n"
                                   "e_bucket{le=\"+Inf\"} 0\ne_sum 0\ne_count 0\n");
        sc_prom_free(&p);

        /* Written without a family: bad, nothing written. */
        sc_prom_init(&p);
        sc_prom_hist_write(&p, &h, NULL);
        assert_true(p.bad);
        assert_int_equal(p.len, 0);
        sc_prom_free(&p);

        /* More bounds than fit: the first SC_PROM_HIST_MAX are kept and what
         * lies above the last kept one is only in +Inf. */
        double many[SC_PROM_HIST_MAX + 4];
        for (size_t i = 0; i < sizeof(many) / sizeof(many[0]); i++)
                many[i] = (double)(i + 1);
        sc_prom_hist_init(&h, many, sizeof(many) / sizeof(many[0]));
        assert_int_equal(h.nb, SC_PROM_HIST_MAX);
        sc_prom_hist_add(&h, SC_PROM_HIST_MAX + 2);
        sc_prom_hist_add(&h, INFINITY);
        sc_prom_hist_add(&h, 1);
        assert_int_equal(h.n, 3);
        uint64_t in_buckets = 0;
        for (size_t i = 0; i < SC_PROM_HIST_MAX; i++)
                in_buckets += h.count[i];
        assert_int_equal(in_buckets, 1);
        sc_prom_init(&p);
        sc_prom_family(&p, "m", "histogram", "");
        sc_prom_hist_write(&p, &h, NULL);
        char line[64];
        snprintf(line, sizeof(line), "m_bucket{le=\"%d\"} 1\nm_bucket{le=\"+Inf\"} 3\n",
                 SC_PROM_HIST_MAX);
        assert_non_null(strstr(p.buf, line));
        assert_non_null(strstr(p.buf, "m_sum +Inf\n"));
        sc_prom_free(&p);
}

static void test_clear(void **state)
{
        (void)state;
        sc_prom_t p;
        sc_prom_init(&p);
        sc_prom_one(&p, "a", "gauge", "x", 1);
        sc_prom_family(&p, "1bad", "gauge", "x");
        assert_true(p.bad);
        char *buf = p.buf;
        size_t cap = p.cap;
        sc_prom_clear(&p);
        assert_ptr_equal(p.buf, buf);
        assert_int_equal(p.cap, cap);
        assert_int_equal(p.len, 0);
        assert_string_equal(p.buf, "");
        assert_false(p.bad);
        assert_false(p.oom);
        /* The current family is gone too. */
        sc_prom_sample(&p, NULL, NULL, 1);
        assert_true(p.bad);
        assert_int_equal(p.len, 0);
        sc_prom_clear(&p);
        sc_prom_one(&p, "b", "counter", "y", 2);
        assert_string_equal(p.buf, "# HELP b y\n# TYPE b counter\nb 2\n");
        assert_ptr_equal(p.buf, buf);
        sc_prom_free(&p);

        /* Clearing before the first write. */
        sc_prom_init(&p);
        sc_prom_clear(&p);
        assert_null(p.buf);
        assert_int_equal(p.len, 0);
        sc_prom_free(&p);
}

/* An exposition long enough for several reallocations (the buffer starts
 * at 4 KiB and doubles). */
static void write_long(sc_prom_t *p)
{
        static const double bounds[] = {0.001, 0.01, 0.1, 1};
        sc_prom_hist_t h;
        sc_prom_hist_init(&h, bounds, 4);
        for (int i = 0; i < 50; i++)
                sc_prom_hist_add(&h, i * 0.003);
        char name[64], val[32];
        for (int i = 0; i < 200; i++) {
                snprintf(name, sizeof(name), "scadles_family_%03d_total", i);
                snprintf(val, sizeof(val), "topic-\"%d\"\\", i);
                const char *lbl[] = {"topic", val, "partition", "0", NULL};
                sc_prom_family(p, name, i % 3 ? "counter" : "histogram", "Some help.\nMore.");
                if (i % 3)
                        sc_prom_sample(p, NULL, lbl, i * 1.5);
                else
                        sc_prom_hist_write(p, &h, lbl);
        }
}

/* For n = 1, 2, ...: the n-th allocation fails. The writer sets oom, keeps
 * a prefix of the full text, and never crashes, until a run needs fewer
 * than n allocations and writes everything. */
static void test_oom(void **state)
{
        (void)state;
        sc_prom_t ref;
        sc_prom_init(&ref);
        write_long(&ref);
        assert_false(ref.oom);
        assert_false(ref.bad);
        assert_true(ref.len > 4 * 4096);

        uint64_t n;
        for (n = 1; n < 100; n++) {
                sc_prom_t p;
                sc_prom_init(&p);
                sc_alloc_fail_after(n);
                write_long(&p);
                int failed = sc_alloc_failed();
                sc_alloc_fail_after(0);
                if (!failed) {
                        assert_false(p.oom);
                        assert_int_equal(p.len, ref.len);
                        assert_string_equal(p.buf, ref.buf);
                        sc_prom_free(&p);
                        break;
                }
                assert_true(p.oom);
                assert_false(p.bad);
                assert_true(p.len < ref.len);
                if (p.buf) {
                        assert_int_equal(strlen(p.buf), p.len);
                        assert_memory_equal(p.buf, ref.buf, p.len);
                } else {
                        assert_int_equal(p.len, 0);
                }
                /* Once cleared, the writer works again. */
                sc_prom_clear(&p);
                assert_false(p.oom);
                write_long(&p);
                assert_false(p.oom);
                assert_string_equal(p.buf, ref.buf);
                sc_prom_free(&p);
        }
        /* Several allocations were failed before a run went through. */
        assert_true(n > 2 && n < 100);
        sc_prom_free(&ref);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_exposition), cmocka_unit_test(test_values),
            cmocka_unit_test(test_names),      cmocka_unit_test(test_hist),
            cmocka_unit_test(test_clear),      cmocka_unit_test(test_oom),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
