/* test_mserver.c — the metrics endpoint over real HTTP on loopback: the
 * served text and its content type, /healthz before, during and after
 * publications (unhealthy, stale), other methods and paths, addresses that
 * do not parse or bind, IPv6, and scrapes racing publications. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "sc_clock.h"
#include "http_get.h"
#include "sc_mserver.h"

#define PROM_TYPE "text/plain; version=0.0.4; charset=utf-8"

#define AGE_FAMILY                                                                                 \
        "# HELP scadles_snapshot_age_seconds Seconds since the process's loop took the snapshot "  \
        "served.\n# TYPE scadles_snapshot_age_seconds gauge\nscadles_snapshot_age_seconds "

/* The body of a /metrics response after a publication: the text, then the
 * age of the snapshot; the age (>= 0) is returned. */
static double served(const resp_t *r, const char *text)
{
        size_t n = strlen(text), na = strlen(AGE_FAMILY);
        assert_true(r->blen > n + na);
        assert_memory_equal(r->body, text, n);
        assert_memory_equal(r->body + n, AGE_FAMILY, na);
        char *end = NULL;
        double age = strtod(r->body + n + na, &end);
        assert_true(end && end[0] == '\n' && end[1] == 0 && age >= 0);
        return age;
}

static sc_mserver_t *start(const char *listen, double stale_s)
{
        sc_mserver_t *s = NULL;
        char err[256] = "";
        int rc = sc_mserver_new(&s, listen, stale_s, err, sizeof(err));
        if (rc)
                print_message("sc_mserver_new(%s): %d %s\n", listen, rc, err);
        assert_int_equal(rc, 0);
        assert_non_null(s);
        assert_true(sc_mserver_port(s) > 0 && sc_mserver_port(s) < 65536);
        return s;
}

static void sleep_s(double s)
{
        struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (time_t)s) * 1e9)};
        while (nanosleep(&ts, &ts) && errno == EINTR)
                ;
}

static void test_serve(void **state)
{
        (void)state;
        sc_mserver_t *s = start("127.0.0.1:0", 30);
        int port = sc_mserver_port(s);
        resp_t r;

        /* Before the first publication. */
        get(port, "/healthz", &r);
        assert_int_equal(r.code, 503);
        assert_string_equal(r.body, "starting\n");
        resp_free(&r);
        get(port, "/metrics", &r);
        assert_int_equal(r.code, 200);
        assert_string_equal(r.ctype, PROM_TYPE);
        assert_int_equal(r.blen, 0);
        resp_free(&r);

        const char *text = "# HELP a_total A.\n# TYPE a_total counter\na_total 7\n";
        sc_mserver_publish(s, text, strlen(text), 1, "ignored when healthy");
        get(port, "/metrics", &r);
        assert_int_equal(r.code, 200);
        assert_string_equal(r.ctype, PROM_TYPE);
        served(&r, text);
        resp_free(&r);
        get(port, "/healthz", &r);
        assert_int_equal(r.code, 200);
        assert_string_equal(r.body, "ok\n");
        resp_free(&r);

        /* HTTP/1.1 with a query string. */
        assert_int_equal(http_raw(0, port,
                                  "GET /metrics?x=1 HTTP/1.1\r\nHost: localhost\r\n"
                                  "Connection: close\r\n\r\n",
                                  &r),
                         0);
        assert_int_equal(r.code, 200);
        served(&r, text);
        resp_free(&r);

        /* HEAD: the status without a body. */
        assert_int_equal(http_raw(0, port, "HEAD /healthz HTTP/1.0\r\n\r\n", &r), 0);
        assert_int_equal(r.code, 200);
        assert_int_equal(r.blen, 0);
        resp_free(&r);

        /* Unhealthy with a reason: 503 and the reason; the text is replaced. */
        const char *text2 = "b 1\n";
        sc_mserver_publish(s, text2, strlen(text2), 0, "consumer lost its broker");
        get(port, "/healthz", &r);
        assert_int_equal(r.code, 503);
        assert_string_equal(r.body, "consumer lost its broker\n");
        resp_free(&r);
        get(port, "/metrics", &r);
        assert_int_equal(r.code, 200);
        served(&r, text2);
        resp_free(&r);

        /* Healthy again; only len bytes of the text are served. */
        sc_mserver_publish(s, "c 2\nnot this", 4, 1, NULL);
        get(port, "/healthz", &r);
        assert_int_equal(r.code, 200);
        assert_string_equal(r.body, "ok\n");
        resp_free(&r);
        get(port, "/metrics", &r);
        served(&r, "c 2\n");
        resp_free(&r);

        /* Other paths. */
        get(port, "/other", &r);
        assert_int_equal(r.code, 404);
        resp_free(&r);
        get(port, "/", &r);
        assert_int_equal(r.code, 404);
        resp_free(&r);
        get(port, "/metrics/x", &r);
        assert_int_equal(r.code, 404);
        resp_free(&r);

        /* GET or HEAD: 5 /metrics, 5 /healthz, 3 others. */
        sc_mserver_stats_t st;
        sc_mserver_stats(s, &st);
        assert_int_equal(st.metrics, 5);
        assert_int_equal(st.healthz, 5);
        assert_int_equal(st.other, 3);

        /* Other methods, with and without a body. */
        assert_int_equal(http_raw(0, port, "POST /metrics HTTP/1.0\r\n\r\n", &r), 0);
        assert_int_equal(r.code, 405);
        resp_free(&r);
        assert_int_equal(
            http_raw(0, port, "POST /healthz HTTP/1.0\r\nContent-Length: 5\r\n\r\nhello", &r), 0);
        assert_int_equal(r.code, 405);
        resp_free(&r);
        assert_int_equal(http_raw(0, port, "DELETE /other HTTP/1.0\r\n\r\n", &r), 0);
        assert_int_equal(r.code, 405);
        resp_free(&r);

        /* The server still serves after those. */
        get(port, "/metrics", &r);
        assert_int_equal(r.code, 200);
        served(&r, "c 2\n");
        resp_free(&r);
        sc_mserver_stats(s, &st);
        assert_int_equal(st.metrics, 6);

        sc_mserver_destroy(s);
}

static void test_stale(void **state)
{
        (void)state;
        /* Stale after 2 s: a loaded machine may stall a publish-get pair. */
        sc_mserver_t *s = start("127.0.0.1:0", 2.0);
        int port = sc_mserver_port(s);
        resp_t r;
        sc_mserver_publish(s, "a 1\n", 4, 1, NULL);
        get(port, "/healthz", &r);
        assert_int_equal(r.code, 200);
        resp_free(&r);

        sleep_s(2.5);
        get(port, "/healthz", &r);
        assert_int_equal(r.code, 503);
        assert_non_null(strstr(r.body, "no report"));
        assert_non_null(strstr(r.body, " s\n"));
        resp_free(&r);
        /* The last text is still served. */
        get(port, "/metrics", &r);
        assert_int_equal(r.code, 200);
        assert_true(served(&r, "a 1\n") > 2.0); /* the age shows the stall */
        resp_free(&r);

        /* Stale outranks an unhealthy reason too. */
        sc_mserver_publish(s, "a 2\n", 4, 0, "broken");
        get(port, "/healthz", &r);
        assert_int_equal(r.code, 503);
        assert_string_equal(r.body, "broken\n");
        resp_free(&r);
        sleep_s(2.5);
        get(port, "/healthz", &r);
        assert_int_equal(r.code, 503);
        assert_non_null(strstr(r.body, "no report"));
        resp_free(&r);

        /* A publication makes it fresh again. */
        sc_mserver_publish(s, "a 3\n", 4, 1, NULL);
        get(port, "/healthz", &r);
        assert_int_equal(r.code, 200);
        assert_string_equal(r.body, "ok\n");
        resp_free(&r);
        sc_mserver_destroy(s);
}

static void test_bad_address(void **state)
{
        (void)state;
        static const char *const bad[] = {
            "nohostport",   "127.0.0.1:99999", "127.0.0.1:", "a:b:c:1", "127.0.0.1:-1",
            "127.0.0.1:8x", "[::1]0",          "[::1",       "::1:0",   "",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                sc_mserver_t *s = (sc_mserver_t *)&s;
                char err[256] = "";
                int rc = sc_mserver_new(&s, bad[i], 30, err, sizeof(err));
                if (rc != SC_MSERVER_EADDR)
                        print_message("\"%s\": %d %s\n", bad[i], rc, err);
                assert_int_equal(rc, SC_MSERVER_EADDR);
                assert_null(s);
                assert_true(err[0] != 0);
                if (bad[i][0])
                        assert_non_null(strstr(err, bad[i]));
        }
        /* errstr_size 0 is allowed. */
        sc_mserver_t *s = NULL;
        assert_int_equal(sc_mserver_new(&s, "nohostport", 30, NULL, 0), SC_MSERVER_EADDR);
        assert_null(s);
}

static void test_bind_in_use(void **state)
{
        (void)state;
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        assert_true(fd >= 0);
        struct sockaddr_in a = {.sin_family = AF_INET};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
        assert_int_equal(listen(fd, 4), 0);
        socklen_t al = sizeof(a);
        assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &al), 0);
        char listen_at[64];
        snprintf(listen_at, sizeof(listen_at), "127.0.0.1:%d", ntohs(a.sin_port));

        sc_mserver_t *s = (sc_mserver_t *)&s;
        char err[256] = "";
        assert_int_equal(sc_mserver_new(&s, listen_at, 30, err, sizeof(err)), SC_MSERVER_EBIND);
        assert_null(s);
        assert_non_null(strstr(err, listen_at));
        close(fd);

        /* Not an address of this host (TEST-NET-1). */
        err[0] = 0;
        assert_int_equal(sc_mserver_new(&s, "192.0.2.1:0", 30, err, sizeof(err)), SC_MSERVER_EBIND);
        assert_null(s);
        assert_true(err[0] != 0);
}

static void test_ipv6(void **state)
{
        (void)state;
        int fd = socket(AF_INET6, SOCK_STREAM, 0);
        struct sockaddr_in6 a = {.sin6_family = AF_INET6};
        a.sin6_addr = in6addr_loopback;
        int have = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
        if (fd >= 0)
                close(fd);
        if (!have) {
                print_message("no IPv6 loopback: skipped\n");
                skip();
        }
        sc_mserver_t *s = start("[::1]:0", 30);
        int port = sc_mserver_port(s);
        resp_t r;
        assert_int_equal(http_raw(1, port, "GET /healthz HTTP/1.0\r\n\r\n", &r), 0);
        assert_int_equal(r.code, 503);
        assert_string_equal(r.body, "starting\n");
        resp_free(&r);
        sc_mserver_publish(s, "v6 1\n", 5, 1, NULL);
        assert_int_equal(http_raw(1, port, "GET /metrics HTTP/1.0\r\n\r\n", &r), 0);
        assert_int_equal(r.code, 200);
        served(&r, "v6 1\n");
        resp_free(&r);
        sc_mserver_destroy(s);
}

/* Texts of different lengths, each line naming its text, so that a body
 * mixing two of them cannot equal either. */
#define NTEXT 4
static char *texts[NTEXT];

typedef struct hammer {
        int port;
        int n;
        atomic_int done;
        int torn, failed;
} hammer_t;

static void *hammer_run(void *arg)
{
        hammer_t *h = arg;
        for (int i = 0; i < h->n; i++) {
                resp_t r;
                if (http_raw(0, h->port, "GET /metrics HTTP/1.0\r\n\r\n", &r) || r.code != 200) {
                        h->failed++;
                        resp_free(&r);
                        continue;
                }
                int match = 0;
                for (int t = 0; t < NTEXT; t++)
                        match |=
                            r.blen > strlen(texts[t]) &&
                            !memcmp(r.body, texts[t], strlen(texts[t])) &&
                            !strncmp(r.body + strlen(texts[t]), AGE_FAMILY, strlen(AGE_FAMILY));
                h->torn += !match;
                resp_free(&r);
        }
        atomic_store(&h->done, 1);
        return NULL;
}

static void test_no_torn_body(void **state)
{
        (void)state;
        for (int t = 0; t < NTEXT; t++) {
                size_t lines = 50 + 400 * (size_t)t, cap = lines * 64, len = 0;
                texts[t] = malloc(cap);
                for (size_t i = 0; i < lines; i++)
                        len += (size_t)snprintf(texts[t] + len, cap - len,
                                                "scadles_text_%d_line{i=\"%zu\"} %zu\n", t, i, i);
        }
        sc_mserver_t *s = start("127.0.0.1:0", 30);
        sc_mserver_publish(s, texts[0], strlen(texts[0]), 1, NULL);
        hammer_t h = {.port = sc_mserver_port(s), .n = 200};
        atomic_init(&h.done, 0);
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, hammer_run, &h), 0);
        unsigned long pubs = 0;
        double worst = 0;
        while (!atomic_load(&h.done)) {
                const char *t = texts[pubs % NTEXT];
                double t0 = sc_clock_mono();
                sc_mserver_publish(s, t, strlen(t), 1, NULL);
                double dt = sc_clock_mono() - t0;
                worst = dt > worst ? dt : worst;
                pubs++;
                if (pubs % 64 == 0)
                        sleep_s(0.0001);
        }
        pthread_join(th, NULL);
        print_message("%lu publications during 200 scrapes; slowest %.6f s\n", pubs, worst);
        assert_int_equal(h.failed, 0);
        assert_int_equal(h.torn, 0);
        assert_true(pubs > NTEXT);
        /* Publishing only swaps a pointer under the lock a scrape holds for a
         * copy: never near a scrape's duration. Loose for loaded machines. */
        assert_true(worst < 1.0);
        sc_mserver_stats_t st;
        sc_mserver_stats(s, &st);
        assert_int_equal(st.metrics, 200);
        sc_mserver_destroy(s);
        for (int t = 0; t < NTEXT; t++)
                free(texts[t]);
}

/* A final verdict stays: 503 and its reason however old the text is, and
 * /metrics keeps serving the last text. */
static void test_final(void **state)
{
        (void)state;
        resp_t r;
        sc_mserver_t *s = start("127.0.0.1:0", 0.2);
        int port = sc_mserver_port(s);
        sc_mserver_publish(s, "f 1\n", 4, 1, NULL);
        sc_mserver_final(s, "stopped (duration)");
        sleep_s(0.4);
        get(port, "/healthz", &r);
        assert_int_equal(r.code, 503);
        assert_string_equal(r.body, "stopped (duration)\n");
        resp_free(&r);
        get(port, "/metrics", &r);
        assert_int_equal(r.code, 200);
        served(&r, "f 1\n");
        resp_free(&r);
        sc_mserver_destroy(s);
}

static void test_destroy_null(void **state)
{
        (void)state;
        sc_mserver_destroy(NULL);
        /* Destroyed right after start, with nothing published or served. */
        sc_mserver_destroy(start("127.0.0.1:0", 30));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_serve),       cmocka_unit_test(test_stale),
            cmocka_unit_test(test_bad_address), cmocka_unit_test(test_bind_in_use),
            cmocka_unit_test(test_ipv6),        cmocka_unit_test(test_no_torn_body),
            cmocka_unit_test(test_final),       cmocka_unit_test(test_destroy_null),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
