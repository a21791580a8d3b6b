/* test_kafka_model.c — shard records (encode, restore round trip) and finding the newest usable
 * record of a J.model partition on the embedded broker, past garbage, other shards' records and
 * records the caller refuses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sc_broker.h"
#include "sc_job.h"
#include "sc_kafka_model.h"

static sc_conf_t *small_conf(int shards)
{
        static sc_conf_t conf;
        char errstr[512], text[512];
        snprintf(text, sizeof(text),
                 "{\"model\": {\"input\": [8], \"layers\": [{\"type\": \"dense\", \"units\": 4}]},"
                 " \"optim\": {\"lr\": 0.1, \"momentum\": 0.9}, \"train\": {\"seed\": 5},"
                 " \"job\": {\"name\": \"km\", \"shards\": %d, \"workers\": 2}}",
                 shards);
        if (sc_conf_parse(&conf, text, "test", errstr, sizeof(errstr)))
                fail_msg("%s", errstr);
        return &conf;
}

static sc_server_t *shard_server(const sc_conf_t *conf, int shard)
{
        sc_job_spec_t spec;
        sc_job_t *job = NULL;
        sc_server_t *srv = NULL;
        char errstr[256];
        sc_job_spec_conf(&spec, conf);
        assert_int_equal(sc_job_new(&job, &spec, conf, errstr, sizeof(errstr)), SC_OK);
        assert_int_equal(sc_job_server_new(job, shard, &srv, errstr, sizeof(errstr)), SC_OK);
        sc_job_destroy(job);
        return srv;
}

static void apply_grad(sc_server_t *srv, uint32_t worker, uint64_t seq, float v)
{
        size_t n = sc_server_len(srv);
        float *g = malloc(n * sizeof(float));
        char errstr[256];
        for (size_t i = 0; i < n; i++)
                g[i] = v * (float)(i + 1);
        sc_update_t u = {.worker = worker,
                         .seq = seq,
                         .samples = 1,
                         .kind = SC_UPDATE_GRAD,
                         .n = n,
                         .values = g};
        assert_int_equal(sc_server_apply(srv, &u, NULL, errstr, sizeof(errstr)), SC_OK);
        free(g);
}

/* srv's J.model record (covering J.grad below grad_offset) onto topic. */
static void publish_record(rd_kafka_t *prod, const char *topic, sc_kafka_delivery_t *dv,
                           sc_buf_t *buf, const sc_server_t *srv, int64_t grad_offset)
{
        char errstr[256];
        buf->len = 0;
        assert_int_equal(sc_job_record_encode(buf, srv, grad_offset, errstr, sizeof(errstr)),
                         SC_OK);
        assert_int_equal(
            sc_kafka_model_publish(prod, topic, 0, buf->data, buf->len, dv, errstr, sizeof(errstr)),
            SC_OK);
}

static void initial_model_and_record_round_trip(void **state)
{
        const sc_conf_t *conf = small_conf(2);
        sc_model_t *m1 = NULL, *m2 = NULL;
        char errstr[512];
        sc_buf_t buf = {0};
        sc_wire_msg_t wm;

        assert_int_equal(sc_job_initial(conf, &m1, errstr, sizeof(errstr)), SC_OK);
        assert_int_equal(sc_job_initial(conf, &m2, errstr, sizeof(errstr)), SC_OK);
        assert_int_equal(sc_model_nparams(m1), 36);
        assert_memory_equal(sc_model_params(m1), sc_model_params(m2), 36 * sizeof(float));

        sc_server_t *a = shard_server(conf, 1), *b = shard_server(conf, 1);
        apply_grad(a, 0, 1, 0.5f);
        apply_grad(a, 1, 1, -0.25f);
        apply_grad(a, 0, 2, 0.125f);
        assert_int_equal(sc_job_record_encode(&buf, a, 77, errstr, sizeof(errstr)), SC_OK);
        assert_int_equal(sc_wire_decode(buf.data, buf.len, &wm, errstr, sizeof(errstr)), SC_OK);
        assert_int_equal(wm.type, SC_WIRE_MODEL);
        assert_int_equal(wm.u.model.shard, 1);
        assert_int_equal(wm.u.model.begin, 18);
        assert_int_equal(wm.u.model.count, 18);
        assert_int_equal(wm.u.model.version, 3);
        assert_int_equal(wm.u.model.grad_offset, 77);
        assert_int_equal(wm.u.model.napplied, 2);
        sc_wire_applied_t ap;
        sc_wire_get_applied(&wm.u.model, 0, &ap);
        assert_int_equal(ap.worker, 0);
        assert_int_equal(ap.seq, 2);
        /* the parameters travel once, inside the server state */
        float params[18];
        assert_true(wm.u.model.params_in_state);
        assert_null(wm.u.model.params);
        /* the opaque state restores everything: momentum continues identically */
        assert_int_equal(
            sc_server_restore(b, wm.u.model.state, wm.u.model.state_len, errstr, sizeof(errstr)),
            SC_OK);
        assert_memory_equal(sc_server_params(b), sc_server_params(a), sizeof(params));
        memcpy(params, sc_server_params(a), sizeof(params));
        apply_grad(a, 1, 2, 1.0f);
        apply_grad(b, 1, 2, 1.0f);
        assert_memory_equal(sc_server_params(a), sc_server_params(b), 18 * sizeof(float));
        sc_apply_result_t res;
        sc_update_t dup = {
            .worker = 0, .seq = 2, .samples = 1, .kind = SC_UPDATE_GRAD, .n = 18, .values = params};
        assert_int_equal(sc_server_apply(b, &dup, &res, errstr, sizeof(errstr)), SC_OK);
        assert_int_equal(res.status, SC_APPLY_DUPLICATE);

        sc_server_destroy(a);
        sc_server_destroy(b);
        sc_buf_free(&buf);
        sc_model_destroy(m1);
        sc_model_destroy(m2);
        sc_conf_free((sc_conf_t *)conf);
}

typedef struct seen {
        int rejects;
        int refuse_version; /* accept() refuses records of this version and newer */
} seen_t;

static void on_reject(void *opaque, const char *topic, int32_t partition, int64_t offset,
                      sc_err_t kind, const char *why)
{
        seen_t *s = opaque;
        assert_true(!strcmp(topic, "km.model") || !strcmp(topic, "kmx.model"));
        assert_int_equal(partition, 0);
        assert_true(offset >= 0 && why[0]);
        s->rejects++;
}

static int accept_fn(void *opaque, const sc_wire_model_view_t *m, char *why, size_t why_size)
{
        seen_t *s = opaque;
        if (!s->refuse_version || (int)m->version < s->refuse_version)
                return 0;
        snprintf(why, why_size, "refused");
        return 1;
}

/* The version of the record read_latest takes (found), refusing refuse and
 * newer (0: none); the record goes to keep when given (else freed). */
static uint64_t latest_version(rd_kafka_t *cons, const char *topic, seen_t *seen, int refuse,
                               sc_kafka_model_rec_t *keep)
{
        sc_kafka_model_rec_t rec;
        char errstr[512];
        int found = -1;
        seen->refuse_version = refuse;
        assert_int_equal(sc_kafka_model_read_latest(cons, topic, 0, 5000, NULL, accept_fn,
                                                    on_reject, seen, &rec, &found, errstr,
                                                    sizeof(errstr)),
                         SC_OK);
        assert_int_equal(found, 1);
        uint64_t v = rec.mr_model.version;
        if (keep)
                *keep = rec;
        else
                sc_kafka_model_rec_free(&rec);
        return v;
}

static void newest_usable_record_is_found(void **state)
{
        const sc_conf_t *conf = small_conf(1);
        sc_broker_t *broker = NULL;
        sc_model_t *model = NULL;
        rd_kafka_t *prod, *cons;
        rd_kafka_conf_t *kc;
        sc_kafka_delivery_t dv;
        sc_kafka_model_rec_t rec, rec2;
        sc_buf_t buf = {0};
        char errstr[512];
        int found = -1;
        seen_t seen = {0};

        assert_int_equal(sc_broker_new(&broker, 1, errstr, sizeof(errstr)), SC_OK);
        assert_int_equal(sc_broker_topic_create(broker, "km.model", 1, errstr, sizeof(errstr)),
                         SC_OK);
        assert_int_equal(sc_broker_topic_create(broker, "kmx.model", 1, errstr, sizeof(errstr)),
                         SC_OK);
        kc = rd_kafka_conf_new();
        rd_kafka_conf_set(kc, "bootstrap.servers", sc_broker_bootstraps(broker), NULL, 0);
        sc_kafka_conf_delivery(kc);
        assert_non_null(prod = rd_kafka_new(RD_KAFKA_PRODUCER, kc, errstr, sizeof(errstr)));
        kc = rd_kafka_conf_new();
        rd_kafka_conf_set(kc, "bootstrap.servers", sc_broker_bootstraps(broker), NULL, 0);
        rd_kafka_conf_set(kc, "group.id", "km.test", NULL, 0);
        rd_kafka_conf_set(kc, "enable.partition.eof", "true", NULL, 0);
        rd_kafka_conf_set(kc, "fetch.wait.max.ms", "10", NULL, 0);
        assert_non_null(cons = rd_kafka_new(RD_KAFKA_CONSUMER, kc, errstr, sizeof(errstr)));

        /* empty partition */
        assert_int_equal(sc_kafka_model_read_latest(cons, "km.model", 0, 5000, NULL, NULL,
                                                    on_reject, &seen, &rec, &found, errstr,
                                                    sizeof(errstr)),
                         SC_OK);
        assert_int_equal(found, 0);

        /* versions 1..20 of shard 0 (J.grad offset 10 v), then garbage and a
         * record of shard 3 */
        assert_int_equal(sc_job_initial(conf, &model, errstr, sizeof(errstr)), SC_OK);
        sc_server_t *srv = shard_server(conf, 0);
        sc_kafka_delivery_init(&dv);
        for (int v = 1; v <= 20; v++) {
                apply_grad(srv, 0, (uint64_t)v, 0.1f);
                publish_record(prod, "km.model", &dv, &buf, srv, 10 * v);
        }
        assert_int_equal(sc_kafka_produce(prod, "km.model", 0, NULL, 0, "junk", 4, NULL, NULL, 0, 0,
                                          &dv, 5000, errstr, sizeof(errstr)),
                         SC_OK);
        sc_wire_model_t other = {.shard = 3, .count = 1, .params = sc_server_params(srv)};
        buf.len = 0;
        assert_int_equal(sc_wire_encode_model(&buf, &other, errstr, sizeof(errstr)), SC_OK);
        assert_int_equal(sc_kafka_produce(prod, "km.model", 0, NULL, 0, buf.data, buf.len, NULL,
                                          NULL, 0, 0, &dv, 5000, errstr, sizeof(errstr)),
                         SC_OK);
        assert_int_equal(sc_kafka_delivery_wait(prod, &dv, 10000, errstr, sizeof(errstr)), SC_OK);

        /* the newest usable is version 20, past the two bad records */
        assert_int_equal(latest_version(cons, "km.model", &seen, 0, &rec), 20);
        assert_int_equal(rec.mr_model.grad_offset, 200);
        assert_int_equal(rec.mr_offset, 19);
        assert_int_equal(seen.rejects, 2);
        sc_kafka_model_rec_free(&rec);

        /* refusing newer ones takes the next older: inside the 16 records
         * ranked (offsets 6..21), then walking back in windows past them */
        for (int refuse = 20; refuse >= 3; refuse -= 3)
                assert_int_equal(latest_version(cons, "km.model", &seen, refuse, NULL), refuse - 1);

        /* A replay: version 2's genuine record published three times more,
         * then a junk record. The newest record by position is the replay;
         * the one covering the most of J.grad is version 20. */
        assert_int_equal(latest_version(cons, "km.model", &seen, 3, &rec2),
                         2); /* to publish again */
        for (int i = 0; i < 3; i++)
                assert_int_equal(sc_kafka_produce(prod, "km.model", 0, "0", 1, rec2.mr_data,
                                                  rec2.mr_len, NULL, NULL, 0, 0, &dv, 5000, errstr,
                                                  sizeof(errstr)),
                                 SC_OK);
        assert_int_equal(sc_kafka_produce(prod, "km.model", 0, NULL, 0, "junk", 4, NULL, NULL, 0, 0,
                                          &dv, 5000, errstr, sizeof(errstr)),
                         SC_OK);
        assert_int_equal(sc_kafka_delivery_wait(prod, &dv, 10000, errstr, sizeof(errstr)), SC_OK);
        sc_kafka_model_rec_free(&rec2);
        seen.rejects = 0;
        assert_int_equal(latest_version(cons, "km.model", &seen, 0, &rec), 20);
        assert_int_equal(rec.mr_offset, 19);
        sc_kafka_model_rec_free(&rec);
        /* two junk records, the other shard's, and the 3 replays passed
         * over (each reported), among the 16 ranked */
        assert_int_equal(seen.rejects, 6);
        /* refusing 12 and newer takes 11, the oldest of the others */
        assert_int_equal(latest_version(cons, "km.model", &seen, 12, NULL), 11);

        /* An earlier job's snapshots on a topic (versions 59 and 60,
         * J.grad offsets 5900 and 6000, refused by accept), then this job's
         * versions 1..3 (10..30): those cover less than the record before
         * them, and are still taken before walking back. */
        sc_server_t *old = shard_server(conf, 0), *cur = shard_server(conf, 0);
        for (int v = 1; v <= 60; v++) {
                apply_grad(old, 0, (uint64_t)v, 0.1f);
                if (v >= 59)
                        publish_record(prod, "kmx.model", &dv, &buf, old, 100 * v);
        }
        for (int v = 1; v <= 3; v++) {
                apply_grad(cur, 0, (uint64_t)v, 0.1f);
                publish_record(prod, "kmx.model", &dv, &buf, cur, 10 * v);
        }
        assert_int_equal(sc_kafka_delivery_wait(prod, &dv, 10000, errstr, sizeof(errstr)), SC_OK);
        assert_int_equal(dv.dv_failed, 0);
        assert_int_equal(latest_version(cons, "kmx.model", &seen, 50, &rec), 3);
        assert_int_equal(rec.mr_model.grad_offset, 30);
        sc_kafka_model_rec_free(&rec);
        sc_server_destroy(old);
        sc_server_destroy(cur);

        sc_server_destroy(srv);
        sc_model_destroy(model);
        sc_buf_free(&buf);
        rd_kafka_destroy(cons);
        rd_kafka_destroy(prod);
        sc_broker_destroy(broker);
        sc_conf_free((sc_conf_t *)conf);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(initial_model_and_record_round_trip),
            cmocka_unit_test(newest_usable_record_is_found),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
