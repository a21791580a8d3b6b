/* test_monitor.c — what every process's endpoint shares (sc_monitor.h):
 * off without metrics.listen, the address logged, the schedule of
 * snapshots, the families every process has, and the /healthz verdicts (a
 * model that is not finite, a broker unreachable for longer than
 * metrics.broker_down, a final stop) over real HTTP. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_get.h"
#include "sc_conf.h"
#include "sc_mem.h"
#include "sc_monitor.h"

static int logged_port;

static void on_log(void *opaque, int level, const char *line)
{
        const char *at = strstr(line, "metrics on http://");
        const char *colon = at ? strchr(at + 18, ':') : NULL;
        (void)opaque;
        (void)level;
        if (colon)
                logged_port = atoi(colon + 1);
}

static sc_monitor_t *start(sc_conf_t *conf, const char *listen)
{
        char err[512];
        sc_monitor_t *m = NULL;
        sc_conf_defaults(conf);
        snprintf(conf->metrics.listen, sizeof(conf->metrics.listen), "%s", listen);
        conf->metrics.interval = 1;
        conf->metrics.broker_down = 10;
        logged_port = 0;
        assert_int_equal(sc_monitor_new(&m, conf, "worker", on_log, NULL, err, sizeof(err)), SC_OK);
        return m;
}

static void off_without_listen(void **state)
{
        (void)state;
        sc_conf_t conf;
        char err[256];
        sc_monitor_t *m = (sc_monitor_t *)1;
        sc_conf_defaults(&conf);
        assert_int_equal(sc_monitor_new(&m, &conf, "worker", NULL, NULL, err, sizeof(err)), SC_OK);
        assert_null(m);
        assert_false(sc_monitor_due(NULL, 100));
        sc_monitor_final(NULL, "nothing");
        sc_monitor_destroy(NULL);
}

static void snapshots_and_verdicts(void **state)
{
        (void)state;
        sc_conf_t conf;
        resp_t r;
        sc_monitor_t *m = start(&conf, "127.0.0.1:0");
        assert_true(logged_port > 0);
        int port = logged_port;
        /* Due at once, then after metrics.interval. */
        assert_true(sc_monitor_due(m, 100.0));
        sc_prom_t *p = sc_monitor_begin(m, 100.0);
        sc_prom_one(p, "scadles_test_total", "counter", "A test counter.", 3);
        sc_monitor_reach(m, 100.0, 1);
        sc_monitor_publish(m, 100.0, 1);
        assert_false(sc_monitor_due(m, 100.5));
        assert_true(sc_monitor_due(m, 101.0));
        get(port, "/metrics", &r);
        assert_int_equal(r.code, 200);
        assert_non_null(strstr(r.body, "scadles_info{role=\"worker\",version=\""));
        assert_non_null(strstr(r.body, "\nprocess_resident_memory_bytes "));
        assert_non_null(strstr(r.body, "\nprocess_start_time_seconds "));
        /* The heap's gauges where the allocator says (glibc's own). */
        uint64_t in_use, free_bytes;
        if (!sc_mem_heap(&in_use, &free_bytes)) {
                assert_non_null(strstr(r.body, "\nscadles_heap_bytes{state=\"in_use\"} "));
                assert_non_null(strstr(r.body, "\nscadles_heap_bytes{state=\"free\"} "));
        } else {
                assert_null(strstr(r.body, "scadles_heap_bytes"));
        }
        assert_non_null(strstr(r.body, "\nscadles_broker_reachable 1\n"));
        assert_non_null(strstr(r.body, "\nscadles_test_total 3\n"));
        resp_free(&r);
        get(port, "/healthz", &r);
        assert_int_equal(r.code, 200);
        resp_free(&r);

        /* A model that is not finite. */
        sc_monitor_begin(m, 101.0);
        sc_monitor_reach(m, 101.0, 1);
        sc_monitor_publish(m, 101.0, 0);
        get(port, "/healthz", &r);
        assert_int_equal(r.code, 503);
        assert_string_equal(r.body, "the model holds a value that is not finite\n");
        resp_free(&r);

        /* No broker from 102: still healthy at 110 (8 s), 503 at 113 (11 s
         * > broker_down 10), healthy again once one is reachable. */
        const double t[] = {102, 110, 113, 114};
        const int reach[] = {0, 0, 0, 1}, code[] = {200, 200, 503, 200};
        for (int i = 0; i < 4; i++) {
                sc_monitor_begin(m, t[i]);
                sc_monitor_reach(m, t[i], reach[i]);
                sc_monitor_publish(m, t[i], 1);
                get(port, "/healthz", &r);
                assert_int_equal(r.code, code[i]);
                if (code[i] == 503)
                        assert_non_null(strstr(r.body, "no broker reachable for 11 s"));
                resp_free(&r);
        }
        get(port, "/metrics", &r);
        assert_non_null(strstr(r.body, "\nscadles_broker_reachable 1\n"));
        resp_free(&r);

        /* A final verdict stays. */
        sc_monitor_final(m, "the worker stopped (duration)");
        sc_monitor_begin(m, 115.0);
        sc_monitor_publish(m, 115.0, 1);
        get(port, "/healthz", &r);
        assert_int_equal(r.code, 503);
        assert_string_equal(r.body, "the worker stopped (duration)\n");
        resp_free(&r);
        sc_monitor_destroy(m);
}

static void bad_addresses(void **state)
{
        (void)state;
        sc_conf_t conf;
        char err[512];
        sc_monitor_t *m = NULL;
        sc_conf_defaults(&conf);
        snprintf(conf.metrics.listen, sizeof(conf.metrics.listen), "no-such-host.invalid:0");
        assert_int_equal(sc_monitor_new(&m, &conf, "worker", NULL, NULL, err, sizeof(err)),
                         SC_ERR_CONFIG);
        assert_non_null(strstr(err, "metrics.listen"));
        assert_null(m);
        /* The port of a running endpoint is taken. */
        sc_monitor_t *first = start(&conf, "127.0.0.1:0");
        snprintf(conf.metrics.listen, sizeof(conf.metrics.listen), "127.0.0.1:%d", logged_port);
        assert_int_equal(sc_monitor_new(&m, &conf, "worker", NULL, NULL, err, sizeof(err)),
                         SC_ERR_IO);
        assert_non_null(strstr(err, "cannot listen"));
        sc_monitor_destroy(first);
}

static void finite_values(void **state)
{
        (void)state;
        float v[5] = {0, 1, -2, 3e38f, -1e-30f};
        assert_true(sc_monitor_finite(v, 5));
        assert_true(sc_monitor_finite(v, 0));
        v[3] = NAN;
        assert_false(sc_monitor_finite(v, 5));
        v[3] = INFINITY;
        assert_false(sc_monitor_finite(v, 5));
        v[3] = -INFINITY;
        assert_false(sc_monitor_finite(v, 5));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(off_without_listen),
            cmocka_unit_test(snapshots_and_verdicts),
            cmocka_unit_test(bad_addresses),
            cmocka_unit_test(finite_values),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
