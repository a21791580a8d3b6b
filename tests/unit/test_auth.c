/* test_auth.c — authenticated job records: per-signer keys, a reader that
 * requires the tag (unsigned, wrong-worker-key, unknown signer and forged
 * model records refused), and loading the job key from a file or an
 * environment variable without ever printing it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sc_auth.h"
#include "sc_conf.h"
#include "sc_job_auth.h"
#include "sc_wire.h"

static const char job_key[] = "0123456789abcdef-job-key";
static char err[512];

static void encode_update(sc_buf_t *buf, uint32_t worker)
{
        static const uint8_t payload[12] = {0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0x80, 0x3f};
        sc_wire_update_t u = {.worker = worker,
                              .shard = 0,
                              .seq = 7,
                              .samples = 8,
                              .kind = SC_WIRE_GRAD,
                              .codec = 0,
                              .payload = payload,
                              .payload_len = sizeof(payload)};
        buf->len = 0;
        assert_int_equal(sc_wire_encode_update(buf, &u, err, sizeof(err)), SC_OK);
}

static void keys_are_per_signer(void **state)
{
        uint8_t a[32], b[32], c[32], d[32], e[32];
        (void)state;
        sc_auth_derive(job_key, strlen(job_key), "j", 0, a);
        sc_auth_derive(job_key, strlen(job_key), "j", 1, b);
        sc_auth_derive(job_key, strlen(job_key), "j", SC_AUTH_AGGREGATOR, c);
        sc_auth_derive("another-job-key-of-16", 21, "j", 0, d);
        sc_auth_derive(job_key, strlen(job_key), "j2", 0, e);
        assert_memory_not_equal(a, b, 32);
        assert_memory_not_equal(a, c, 32);
        assert_memory_not_equal(b, c, 32);
        assert_memory_not_equal(a, d, 32);
        assert_memory_not_equal(a, e, 32); /* another job, same key */
}

/* The derivation docs/WIRE.md and docs/SECURITY.md give, byte for byte:
 * HMAC-SHA256(job key, label NUL job NUL [u32le(worker)]). */
static void keys_are_derived_as_documented(void **state)
{
        static const uint8_t worker_msg[] = {'s', 'c', 'a', 'd', 'l', 'e', 's', '-',
                                             'w', 'o', 'r', 'k', 'e', 'r', 0,   'j',
                                             'o', 'b', 0,   7,   0,   0,   0};
        static const char agg_msg[] = "scadles-aggregator\0job"; /* + the final NUL */
        uint8_t got[32], want[32];
        (void)state;
        sc_auth_derive(job_key, strlen(job_key), "job", 7, got);
        sc_wire_hmac_sha256(job_key, strlen(job_key), worker_msg, sizeof(worker_msg), NULL, 0,
                            want);
        assert_memory_equal(got, want, 32);
        sc_auth_derive(job_key, strlen(job_key), "job", SC_AUTH_AGGREGATOR, got);
        sc_wire_hmac_sha256(job_key, strlen(job_key), agg_msg, sizeof(agg_msg), NULL, 0, want);
        assert_memory_equal(got, want, 32);
}

static void reader_requires_the_signers_tag(void **state)
{
        sc_auth_t auth = {0}, off = {0};
        sc_buf_t buf;
        sc_wire_msg_t msg;
        uint32_t signer = 99;
        uint8_t k0[32];
        (void)state;
        sc_buf_init(&buf);
        assert_int_equal(sc_auth_init(&auth, job_key, strlen(job_key), "j", 3, err, sizeof(err)),
                         SC_OK);
        /* honest: worker 1 signs its own update */
        encode_update(&buf, 1);
        assert_int_equal(sc_auth_sign(&auth, &buf, 0, 1, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_auth_decode(&auth, buf.data, buf.len, &msg, &signer, err, sizeof(err)),
                         SC_OK);
        assert_int_equal(signer, 1);
        assert_int_equal(msg.u.update.seq, 7);
        /* an unauthenticated reader refuses a signed message */
        assert_int_equal(sc_auth_decode(&off, buf.data, buf.len, &msg, NULL, err, sizeof(err)),
                         SC_ERR_UNSUPPORTED);
        /* forged unsigned update */
        encode_update(&buf, 1);
        assert_int_equal(sc_auth_decode(&auth, buf.data, buf.len, &msg, NULL, err, sizeof(err)),
                         SC_ERR_AUTH);
        assert_non_null(strstr(err, "unsigned"));
        /* worker 0's key speaking for worker 1 */
        encode_update(&buf, 1);
        sc_auth_derive(job_key, strlen(job_key), "j", 0, k0);
        assert_int_equal(sc_wire_sign(&buf, 0, k0, 32, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_auth_decode(&auth, buf.data, buf.len, &msg, NULL, err, sizeof(err)),
                         SC_ERR_AUTH);
        assert_non_null(strstr(err, "HMAC"));
        /* a worker id outside the job */
        encode_update(&buf, 3);
        assert_int_equal(sc_auth_sign(&auth, &buf, 0, 3, err, sizeof(err)), SC_ERR_INVAL);
        assert_int_equal(sc_wire_sign(&buf, 0, k0, 32, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_auth_decode(&auth, buf.data, buf.len, &msg, NULL, err, sizeof(err)),
                         SC_ERR_AUTH);
        /* the aggregators' key on an update that claims their signer id */
        encode_update(&buf, SC_AUTH_AGGREGATOR);
        assert_int_equal(sc_auth_sign(&auth, &buf, 0, SC_AUTH_AGGREGATOR, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_auth_decode(&auth, buf.data, buf.len, &msg, NULL, err, sizeof(err)),
                         SC_ERR_AUTH);
        assert_non_null(strstr(err, "not a worker of the job"));
        assert_non_null(strstr(err, "not a worker"));
        /* a model record signed by a worker is not the aggregators' */
        float p[2] = {1, 2};
        sc_wire_model_t m = {.shard = 0, .version = 1ull << 62, .count = 2, .params = p};
        buf.len = 0;
        assert_int_equal(sc_wire_encode_model(&buf, &m, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_auth_decode(&auth, buf.data, buf.len, &msg, NULL, err, sizeof(err)),
                         SC_ERR_AUTH);
        assert_int_equal(sc_wire_sign(&buf, 0, k0, 32, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_auth_decode(&auth, buf.data, buf.len, &msg, NULL, err, sizeof(err)),
                         SC_ERR_AUTH);
        buf.len = 0;
        assert_int_equal(sc_wire_encode_model(&buf, &m, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_auth_sign(&auth, &buf, 0, SC_AUTH_AGGREGATOR, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_auth_decode(&auth, buf.data, buf.len, &msg, &signer, err, sizeof(err)),
                         SC_OK);
        assert_int_equal(signer, SC_AUTH_AGGREGATOR);
        /* a control message: the signer is its worker field */
        sc_wire_control_t c = {.kind = SC_WIRE_CTL_HEARTBEAT, .worker = 2};
        buf.len = 0;
        assert_int_equal(sc_wire_encode_control(&buf, &c, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_auth_sign(&auth, &buf, 0, 1, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_auth_decode(&auth, buf.data, buf.len, &msg, NULL, err, sizeof(err)),
                         SC_ERR_AUTH);
        sc_buf_free(&buf);
        sc_auth_free(&auth);
        sc_auth_free(&auth); /* twice is fine */
}

static void job_key_from_file_or_env(void **state)
{
        sc_conf_t conf;
        sc_auth_t a = {0}, b = {0}, c = {0};
        char path[] = "/tmp/scadles-test-key-XXXXXX";
        int fd = mkstemp(path);
        (void)state;
        assert_true(fd >= 0);
        assert_int_equal(write(fd, job_key, strlen(job_key)), (ssize_t)strlen(job_key));
        assert_int_equal(write(fd, "\n", 1), 1);
        close(fd);
        sc_conf_defaults(&conf);
        conf.job.sync.n_workers = 2;
        /* no key anywhere: a job does not start, and is told how to make one */
        unsetenv("SCADLES_JOB_KEY");
        assert_int_equal(sc_job_auth_load(&a, &conf, err, sizeof(err)), SC_ERR_CONFIG);
        assert_non_null(strstr(err, "$.job.auth"));
        assert_non_null(strstr(err, "scadles keygen"));
        assert_non_null(strstr(err, "\"none\""));
        assert_int_equal(a.on, 0);
        /* SCADLES_JOB_KEY when the configuration names no key */
        setenv("SCADLES_JOB_KEY", job_key, 1);
        assert_int_equal(sc_job_auth_load(&c, &conf, err, sizeof(err)), SC_OK);
        assert_int_equal(c.on, 1);
        unsetenv("SCADLES_JOB_KEY");
        /* mode none: off, without a key */
        conf.job.auth_none = 1;
        assert_int_equal(sc_job_auth_load(&a, &conf, err, sizeof(err)), SC_OK);
        assert_int_equal(a.on, 0);
        conf.job.auth_none = 0;
        /* file (the trailing newline is not part of the key) and env agree */
        snprintf(conf.job.auth_key_file, sizeof(conf.job.auth_key_file), "%s", path);
        assert_int_equal(sc_job_auth_load(&a, &conf, err, sizeof(err)), SC_OK);
        assert_int_equal(a.on, 1);
        conf.job.auth_key_file[0] = 0;
        snprintf(conf.job.auth_key_env, sizeof(conf.job.auth_key_env), "SC_TEST_JOB_KEY");
        setenv("SC_TEST_JOB_KEY", job_key, 1);
        assert_int_equal(sc_job_auth_load(&b, &conf, err, sizeof(err)), SC_OK);
        assert_memory_equal(a.agg_key, b.agg_key, 32);
        assert_memory_equal(a.worker_keys, b.worker_keys, 64);
        /* the same key from SCADLES_JOB_KEY: the same keys */
        assert_memory_equal(a.agg_key, c.agg_key, 32);
        assert_memory_equal(a.worker_keys, c.worker_keys, 64);
        sc_auth_free(&a);
        sc_auth_free(&b);
        sc_auth_free(&c);
        /* too short, unset, missing file: errors that never show the key */
        setenv("SC_TEST_JOB_KEY", "short-secret", 1);
        assert_int_equal(sc_job_auth_load(&a, &conf, err, sizeof(err)), SC_ERR_CONFIG);
        assert_non_null(strstr(err, "$.job.auth.key_env"));
        assert_null(strstr(err, "short-secret"));
        unsetenv("SC_TEST_JOB_KEY");
        assert_int_equal(sc_job_auth_load(&a, &conf, err, sizeof(err)), SC_ERR_CONFIG);
        assert_non_null(strstr(err, "not set"));
        conf.job.auth_key_env[0] = 0;
        snprintf(conf.job.auth_key_file, sizeof(conf.job.auth_key_file), "%s.missing", path);
        assert_int_equal(sc_job_auth_load(&a, &conf, err, sizeof(err)), SC_ERR_CONFIG);
        assert_non_null(strstr(err, "$.job.auth.key_file"));
        assert_int_equal(a.on, 0);
        unlink(path);
        sc_conf_free(&conf);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(keys_are_per_signer),
            cmocka_unit_test(keys_are_derived_as_documented),
            cmocka_unit_test(reader_requires_the_signers_tag),
            cmocka_unit_test(job_key_from_file_or_env),
        };
        return cmocka_run_group_tests_name("auth", tests, NULL, NULL);
}
