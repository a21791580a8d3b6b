/* test_job.c — the job engine: the shard layout tiles the parameters, two
 * parties building the job from one configuration agree on layout, initial
 * parameters, server specs and codecs; an update encoded on the worker side,
 * decoded and applied on the server side, equals what the codec delivers;
 * bad payloads and shard counts are errors naming their origin; a shard
 * record restores only a server of its range; the broadcast carries the
 * applied seqs; membership follows control messages and the timeout. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sc_job.h"

static void shard_ranges_tile_the_buffer(void **state)
{
        static const size_t ns[] = {1, 7, 596, 101770};
        (void)state;
        for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
                for (int shards = 1; shards <= 9 && (size_t)shards <= ns[i]; shards++) {
                        size_t prev = 0, b, e, lo = ns[i], hi = 0;
                        for (int s = 0; s < shards; s++) {
                                sc_job_shard_range(ns[i], shards, s, &b, &e);
                                assert_int_equal(b, prev);
                                assert_true(e > b);
                                lo = e - b < lo ? e - b : lo;
                                hi = e - b > hi ? e - b : hi;
                                prev = e;
                        }
                        assert_int_equal(prev, ns[i]);
                        assert_true(hi - lo <= 1); /* even split */
                }
}

/* A two-layer model (8 -> 5 -> 3: 63 parameters in four tensors). */
static void conf_of(sc_conf_t *conf, const char *job)
{
        char errstr[512], text[1024];
        snprintf(text, sizeof(text),
                 "{\"model\": {\"input\": [8], \"layers\": [{\"type\": \"dense\", \"units\": 5},"
                 " {\"type\": \"relu\"}, {\"type\": \"dense\", \"units\": 3}]},"
                 " \"optim\": {\"lr\": 0.1, \"momentum\": 0.9}, \"train\": {\"seed\": 11},"
                 " \"job\": {\"name\": \"tj\", \"workers\": 2, %s}}",
                 job);
        if (sc_conf_parse(conf, text, "test", errstr, sizeof(errstr)))
                fail_msg("%s", errstr);
}

static sc_job_t *job_of(const sc_conf_t *conf)
{
        sc_job_spec_t spec;
        sc_job_t *job = NULL;
        char errstr[512];
        sc_job_spec_conf(&spec, conf);
        if (sc_job_new(&job, &spec, conf, errstr, sizeof(errstr)))
                fail_msg("%s", errstr);
        return job;
}

static void both_sides_agree(void **state)
{
        sc_conf_t conf;
        char errstr[512];
        (void)state;
        conf_of(&conf, "\"shards\": 3, \"sync\": {\"policy\": \"asp\"},"
                       " \"codec\": {\"name\": \"topk\", \"ratio\": 0.25, \"error_feedback\": 1}");
        sc_job_t *a = job_of(&conf), *b = job_of(&conf);
        size_t n = sc_job_nparams(a);
        assert_int_equal(n, 63);
        assert_int_equal(sc_job_nparams(b), n);
        assert_int_equal(sc_job_shards(a), 3);
        assert_memory_equal(sc_model_params(sc_job_model(a)), sc_model_params(sc_job_model(b)),
                            n * sizeof(float));
        /* the initial model is train.seed's stream 0, as every party draws it */
        sc_model_t *m = NULL;
        assert_int_equal(sc_job_initial(&conf, &m, errstr, sizeof(errstr)), SC_OK);
        assert_memory_equal(sc_model_params(m), sc_model_params(sc_job_model(a)),
                            n * sizeof(float));
        sc_model_destroy(m);
        for (int s = 0; s < 3; s++) {
                sc_server_spec_t sa, sb;
                size_t b0, e0, b1, e1;
                sc_job_range(a, s, &b0, &e0);
                sc_job_range(b, s, &b1, &e1);
                assert_int_equal(b0, b1);
                assert_int_equal(e0, e1);
                assert_int_equal(b0, n * (size_t)s / 3);
                assert_int_equal(sc_job_begins(a)[s], b0);
                assert_int_equal(sc_job_begins(a)[s + 1], e0);
                assert_int_equal(sc_job_server_spec(a, s, &sa, errstr, sizeof(errstr)), SC_OK);
                assert_int_equal(sc_job_server_spec(b, s, &sb, errstr, sizeof(errstr)), SC_OK);
                assert_int_equal(sa.begin, b0);
                assert_int_equal(sa.end, e0);
                assert_int_equal(sa.shard, s);
                assert_int_equal(sa.sync.kind, SC_SYNC_ASP);
                assert_int_equal(sa.sync.n_workers, 2);
                assert_true(sa.sgd.momentum == 0.9f || sa.sgd.momentum == 0.9);
                assert_true(sa.sched.lr == 0.1);
                assert_int_equal(sa.limits.seq_window, 64); /* job.limits */
                assert_memory_equal(&sa, &sb, sizeof(sa));
                sc_codec_t *ca = NULL, *cb = NULL;
                assert_int_equal(sc_job_codec_new(a, s, &ca, errstr, sizeof(errstr)), SC_OK);
                assert_int_equal(sc_job_codec_new(b, s, &cb, errstr, sizeof(errstr)), SC_OK);
                assert_int_equal(sc_codec_id(ca), SC_CODEC_TOPK);
                assert_int_equal(sc_codec_n(ca), e0 - b0);
                assert_true(sc_codec_params(ca)->ratio == 0.25);
                assert_int_equal(sc_codec_params(ca)->error_feedback, 1);
                assert_memory_equal(sc_codec_params(ca), sc_codec_params(cb),
                                    sizeof(sc_codec_params_t));
                sc_codec_destroy(ca);
                sc_codec_destroy(cb);
        }
        assert_int_equal(sc_job_server_spec(a, 3, &(sc_server_spec_t){0}, errstr, sizeof(errstr)),
                         SC_ERR_INVAL);
        sc_job_destroy(a);
        sc_job_destroy(b);
        sc_conf_free(&conf);
}

/* A driver's own options (the simulator's): another seed, shard count and
 * codec options; the rng left after the initial draw is stream 0's. */
static void spec_overrides(void **state)
{
        sc_conf_t conf;
        sc_job_spec_t spec;
        sc_job_t *a, *job = NULL;
        sc_rng_t root, r, got;
        char errstr[512];
        (void)state;
        conf_of(&conf, "\"shards\": 1");
        a = job_of(&conf);
        sc_job_spec_conf(&spec, &conf);
        spec.seed = 99;
        spec.shards = 2;
        spec.codec = (sc_job_codec_t){.id = SC_CODEC_ADAPTIVE, .error_feedback = -1, .half = 1};
        assert_int_equal(sc_job_new(&job, &spec, &conf, errstr, sizeof(errstr)), SC_OK);
        assert_memory_not_equal(sc_model_params(sc_job_model(a)),
                                sc_model_params(sc_job_model(job)), 63 * sizeof(float));
        sc_model_t *m = NULL;
        sc_rng_seed(&root, 99);
        sc_rng_split(&root, &r, 0);
        assert_int_equal(sc_model_new(&m, &conf.model, errstr, sizeof(errstr)), SC_OK);
        sc_model_init(m, &r);
        sc_job_rng(job, &got);
        assert_int_equal(sc_rng_u64(&got), sc_rng_u64(&r));
        sc_model_destroy(m);
        sc_codec_t *c = NULL;
        assert_int_equal(sc_job_codec_new(job, 1, &c, errstr, sizeof(errstr)), SC_OK);
        assert_int_equal(sc_codec_id(c), SC_CODEC_ADAPTIVE);
        assert_int_equal(sc_codec_params(c)->half_values, 1);
        assert_int_equal(sc_codec_params(c)->error_feedback, 1); /* adaptive's default */
        sc_codec_destroy(c);
        sc_job_destroy(job);
        /* more shards than parameters: the error names the driver's key */
        spec.shards = 64;
        spec.shards_key = "$.sim.shards";
        assert_int_equal(sc_job_new(&job, &spec, &conf, errstr, sizeof(errstr)), SC_ERR_CONFIG);
        assert_null(job);
        assert_non_null(strstr(errstr, "$.sim.shards: 64 shards for 63 parameters"));
        sc_job_destroy(a);
        sc_conf_free(&conf);
}

/* Worker side encodes shard s of g; the server side decodes and applies
 * it. The shard must move exactly as a server applying what the codec
 * delivers (g less the error-feedback residual) directly. */
static void round_trip(const char *codec)
{
        sc_conf_t conf;
        char job_text[256], errstr[512];
        snprintf(job_text, sizeof(job_text),
                 "\"shards\": 2, \"sync\": {\"policy\": \"asp\"}, \"codec\": %s", codec);
        conf_of(&conf, job_text);
        sc_job_t *job = job_of(&conf);
        size_t n = sc_job_nparams(job), b, e;
        float *g = malloc(n * sizeof(float)), *want = malloc(n * sizeof(float));
        sc_rng_t rng;
        sc_buf_t payload = {0}, msg = {0};
        sc_rng_seed(&rng, 3);
        for (size_t i = 0; i < n; i++)
                g[i] = sc_rng_uniform(&rng) - 0.5f;
        for (int s = 0; s < 2; s++) {
                sc_codec_t *c = NULL;
                sc_server_t *srv = NULL, *ref = NULL;
                sc_wire_msg_t wm;
                sc_apply_result_t res;
                sc_job_range(job, s, &b, &e);
                assert_int_equal(sc_job_codec_new(job, s, &c, errstr, sizeof(errstr)), SC_OK);
                assert_int_equal(sc_job_server_new(job, s, &srv, errstr, sizeof(errstr)), SC_OK);
                assert_int_equal(sc_job_server_new(job, s, &ref, errstr, sizeof(errstr)), SC_OK);
                sc_wire_update_t hdr = {.worker = 1,
                                        .shard = (uint32_t)s,
                                        .seq = 1,
                                        .samples = 16,
                                        .kind = SC_WIRE_GRAD};
                msg.len = 0;
                assert_int_equal(sc_job_update_encode(job, c, &hdr, g + b, &rng, &payload, &msg,
                                                      errstr, sizeof(errstr)),
                                 SC_OK);
                assert_int_equal(msg.len, SC_WIRE_UPDATE_OVERHEAD + payload.len);
                assert_int_equal(sc_wire_decode(msg.data, msg.len, &wm, errstr, sizeof(errstr)),
                                 SC_OK);
                assert_int_equal(wm.type, SC_WIRE_UPDATE);
                assert_int_equal(wm.u.update.worker, 1);
                assert_int_equal(wm.u.update.shard, s);
                assert_int_equal(wm.u.update.samples, 16);
                assert_int_equal(wm.u.update.codec, sc_codec_id(c));
                assert_int_equal(sc_job_apply(job, srv, &wm.u.update, &res, errstr, sizeof(errstr)),
                                 SC_OK);
                assert_int_equal(res.status, SC_APPLY_APPLIED);
                assert_int_equal(sc_server_version(srv), 1);
                const float *resid = sc_codec_residual(c);
                for (size_t i = 0; i < e - b; i++)
                        want[i] = resid ? g[b + i] - resid[i] : g[b + i];
                sc_update_t u = {.worker = 1,
                                 .seq = 1,
                                 .samples = 16,
                                 .kind = SC_UPDATE_GRAD,
                                 .n = e - b,
                                 .values = want};
                assert_int_equal(sc_server_apply(ref, &u, NULL, errstr, sizeof(errstr)), SC_OK);
                assert_memory_equal(sc_server_params(srv), sc_server_params(ref),
                                    (e - b) * sizeof(float));
                /* shard 0's update does not fit shard 1 (or the reverse) */
                sc_server_t *other = NULL;
                assert_int_equal(sc_job_server_new(job, 1 - s, &other, errstr, sizeof(errstr)),
                                 SC_OK);
                if (sc_server_len(other) != e - b) {
                        assert_int_equal(
                            sc_job_apply(job, other, &wm.u.update, &res, errstr, sizeof(errstr)),
                            SC_ERR_INVAL);
                        assert_int_equal(sc_server_version(other), 0);
                }
                sc_server_destroy(other);
                sc_server_destroy(srv);
                sc_server_destroy(ref);
                sc_codec_destroy(c);
        }
        sc_buf_free(&payload);
        sc_buf_free(&msg);
        free(g);
        free(want);
        sc_job_destroy(job);
        sc_conf_free(&conf);
}

static void round_trip_none(void **state)
{
        (void)state;
        round_trip("{\"name\": \"none\"}");
}

static void round_trip_topk_error_feedback(void **state)
{
        (void)state;
        round_trip("{\"name\": \"topk\", \"ratio\": 0.2, \"error_feedback\": 1}");
}

static void round_trip_q8(void **state)
{
        (void)state;
        round_trip("{\"name\": \"q8\", \"error_feedback\": 1}");
}

/* A shard's J.model record restores a server of the same shard, not
 * another's; the broadcast carries the applied seqs. */
static void restore_and_broadcast(void **state)
{
        sc_conf_t conf;
        char errstr[512];
        (void)state;
        conf_of(&conf, "\"shards\": 2, \"sync\": {\"policy\": \"asp\"}");
        sc_job_t *job = job_of(&conf);
        sc_server_t *a = NULL, *b = NULL, *other = NULL;
        assert_int_equal(sc_job_server_new(job, 1, &a, errstr, sizeof(errstr)), SC_OK);
        assert_int_equal(sc_job_server_new(job, 1, &b, errstr, sizeof(errstr)), SC_OK);
        assert_int_equal(sc_job_server_new(job, 0, &other, errstr, sizeof(errstr)), SC_OK);
        size_t len = sc_server_len(a);
        float *g = calloc(len, sizeof(float));
        g[3] = 1.0f;
        sc_update_t u = {
            .worker = 1, .seq = 1, .samples = 1, .kind = SC_UPDATE_GRAD, .n = len, .values = g};
        assert_int_equal(sc_server_apply(a, &u, NULL, errstr, sizeof(errstr)), SC_OK);
        const sc_server_spec_t *sp = sc_server_spec(a);
        sc_buf_t rec = {0};
        sc_wire_msg_t rm;
        assert_int_equal(sc_job_record_encode(&rec, a, 7, errstr, sizeof(errstr)), SC_OK);
        assert_int_equal(sc_wire_decode(rec.data, rec.len, &rm, errstr, sizeof(errstr)), SC_OK);
        assert_int_equal(rm.type, SC_WIRE_MODEL);
        sc_wire_model_view_t m = rm.u.model;
        assert_int_equal(m.grad_offset, 7);
        assert_int_equal(m.napplied, 1);
        char why[256];
        assert_int_equal(sc_job_server_restore(job, b, &m, why, sizeof(why)), 0);
        assert_int_equal(sc_server_version(b), 1);
        assert_memory_equal(sc_server_params(a), sc_server_params(b), len * sizeof(float));
        assert_int_not_equal(sc_job_server_restore(job, other, &m, why, sizeof(why)), 0);
        assert_non_null(strstr(why, "differs from this job's"));
        m.grad_offset = -2;
        assert_int_not_equal(sc_job_server_restore(job, b, &m, why, sizeof(why)), 0);
        assert_non_null(strstr(why, "grad_offset -2"));

        sc_bcast_pub_t *pub = NULL;
        sc_buf_t out = {0};
        sc_wire_bcast_kind_t kind;
        sc_wire_msg_t wm;
        assert_int_equal(sc_job_bcast_new(job, 1, &pub, errstr, sizeof(errstr)), SC_OK);
        assert_int_equal(sc_job_bcast_encode(job, pub, a, &out, &kind, errstr, sizeof(errstr)),
                         SC_OK);
        assert_int_equal(kind, SC_WIRE_BCAST_KEY); /* the view starts unknown */
        assert_int_equal(sc_wire_decode(out.data, out.len, &wm, errstr, sizeof(errstr)), SC_OK);
        assert_int_equal(wm.type, SC_WIRE_BCAST);
        assert_int_equal(wm.u.bcast.version, 1);
        assert_int_equal(wm.u.bcast.begin, sp->begin);
        assert_int_equal(wm.u.bcast.napplied, 1); /* worker 1's seq 1 */
        sc_bcast_pub_destroy(pub);
        sc_buf_free(&out);
        sc_buf_free(&rec);
        free(g);
        sc_server_destroy(a);
        sc_server_destroy(b);
        sc_server_destroy(other);
        sc_job_destroy(job);
        sc_conf_free(&conf);
}

/* A job of 2 workers, 1 shard, a 6 s session, its members started at 0. */
static sc_job_t *members_job(sc_conf_t *conf)
{
        conf_of(conf, "\"shards\": 1, \"session_timeout\": 6");
        sc_job_t *job = job_of(conf);
        sc_job_members_start(job, 0);
        return job;
}

static void membership(void **state)
{
        sc_conf_t conf;
        char why[256];
        (void)state;
        conf_of(&conf, "\"shards\": 1, \"session_timeout\": 6");
        sc_job_t *job = job_of(&conf);
        sc_wire_control_t c = {.kind = SC_WIRE_CTL_HEARTBEAT, .worker = 0, .timestamp = 100};
        sc_job_members_start(job, 0);
        assert_true(sc_job_members_live(job, 0, 5) && sc_job_members_live(job, 1, 5));
        assert_false(sc_job_members_live(job, 0, 7)); /* silent past the grace period */
        assert_int_equal(sc_job_members_control(job, &c, 0, 6.5, why, sizeof(why)), 0);
        assert_true(sc_job_members_live(job, 0, 10));
        assert_false(sc_job_members_live(job, 1, 10));
        /* an older heartbeat read late does not move the time back */
        assert_int_equal(sc_job_members_control(job, &c, 0, 1.0, why, sizeof(why)), 0);
        assert_true(sc_job_members_live(job, 0, 12));
        c.kind = SC_WIRE_CTL_LEAVE;
        assert_int_equal(sc_job_members_control(job, &c, 0, 11, why, sizeof(why)), 0);
        assert_false(sc_job_members_live(job, 0, 11));
        sc_job_members_heard(job, 0, 1, 11); /* an update sent after the leave: back */
        assert_true(sc_job_members_live(job, 0, 11));
        c.worker = 2;
        assert_int_equal(sc_job_members_control(job, &c, 0, 11, why, sizeof(why)), 1);
        assert_non_null(strstr(why, "worker 2 outside 0..1"));
        /* signed: only a newer timestamp counts (a replay keeps nobody live) */
        c = (sc_wire_control_t){.kind = SC_WIRE_CTL_JOIN, .worker = 1, .timestamp = 100};
        assert_int_equal(sc_job_members_control(job, &c, 1, 20, why, sizeof(why)), 0);
        assert_true(sc_job_members_live(job, 1, 21));
        assert_int_equal(sc_job_members_control(job, &c, 1, 30, why, sizeof(why)), 1);
        assert_non_null(strstr(why, "a replay"));
        assert_false(sc_job_members_live(job, 1, 30));
        c.timestamp = 101;
        assert_int_equal(sc_job_members_control(job, &c, 1, 30, why, sizeof(why)), 0);
        assert_true(sc_job_members_live(job, 1, 30));
        sc_job_destroy(job);
        sc_conf_free(&conf);
}

/* The rate sum the broadcasts carry: the rates live workers announced in
 * their last join or heartbeat; one out of range counts as none, a worker
 * that left or went silent counts no more. */
static void rate_sum_of_live_workers(void **state)
{
        sc_conf_t conf;
        char why[256];
        (void)state;
        sc_job_t *job = members_job(&conf);
        assert_true(sc_job_members_rate_sum(job, 1) == 0.0);
        sc_wire_control_t c = {
            .kind = SC_WIRE_CTL_JOIN, .worker = 0, .timestamp = 100, .nfields = 1};
        c.fields[0] = (sc_wire_field_t){SC_WIRE_F_RATE, 100};
        assert_int_equal(sc_job_members_control(job, &c, 0, 1, why, sizeof(why)), 0);
        c.kind = SC_WIRE_CTL_HEARTBEAT;
        c.worker = 1;
        double rates[] = {1e12, 250.5, NAN, -3, 400};
        double sums[] = {100, 350.5, 100, 100, 500}; /* out of range: none */
        for (int i = 0; i < 5; i++) {
                c.fields[0].value = rates[i];
                assert_int_equal(sc_job_members_control(job, &c, 0, 1, why, sizeof(why)), 0);
                assert_true(sc_job_members_rate_sum(job, 2) == sums[i]);
        }
        c.kind = SC_WIRE_CTL_LEAVE; /* worker 1 leaves */
        assert_int_equal(sc_job_members_control(job, &c, 0, 4, why, sizeof(why)), 0);
        assert_true(sc_job_members_rate_sum(job, 5) == 100.0);
        /* worker 0, last heard at 1, is silent past the 6 s session */
        assert_true(sc_job_members_rate_sum(job, 7.5) == 0.0);
        sc_job_destroy(job);
        sc_conf_free(&conf);
}

/* A leave names the last seq its worker sent: each shard's rounds wait for
 * the worker until that shard has it (the update is on J.grad, the leave on
 * J.ctl, read in either order), and that update does not bring it back. */
static void leave_waits_for_the_updates_sent_before_it(void **state)
{
        sc_conf_t conf;
        char why[256];
        (void)state;
        sc_job_t *job = members_job(&conf);
        sc_wire_control_t c = {
            .kind = SC_WIRE_CTL_LEAVE, .worker = 0, .timestamp = 1, .nfields = 2};
        c.fields[0] = (sc_wire_field_t){SC_WIRE_F_LOSS, 0.5};
        c.fields[1] = (sc_wire_field_t){SC_WIRE_F_CLOCK, 7};
        assert_int_equal(sc_job_members_control(job, &c, 0, 1, why, sizeof(why)), 0);
        assert_false(sc_job_members_live(job, 0, 1));
        assert_true(sc_job_members_live_on(job, 0, 6, 1));  /* seq 7 not in yet */
        assert_false(sc_job_members_live_on(job, 0, 7, 1)); /* in: the leave holds */
        assert_false(sc_job_members_live_on(job, 0, 6, 8)); /* silent too long */
        sc_job_members_heard(job, 0, 7, 2);                 /* seq 7 arrives late: still left */
        assert_false(sc_job_members_live(job, 0, 2));
        assert_false(sc_job_members_live_on(job, 0, 7, 2));
        sc_job_members_heard(job, 0, 8, 3); /* a newer one: back */
        assert_true(sc_job_members_live(job, 0, 3));
        assert_true(sc_job_members_live_on(job, 0, 8, 3));
        /* a clock that is not a count waits for nothing */
        c.timestamp = 2;
        c.fields[1].value = -1;
        assert_int_equal(sc_job_members_control(job, &c, 0, 4, why, sizeof(why)), 0);
        assert_false(sc_job_members_live_on(job, 0, 0, 4));
        c.fields[1].value = NAN;
        assert_int_equal(sc_job_members_control(job, &c, 0, 4, why, sizeof(why)), 0);
        assert_false(sc_job_members_live_on(job, 0, 0, 4));
        /* a worker that never left is live on every shard */
        assert_true(sc_job_members_live_on(job, 1, 0, 4));
        sc_job_destroy(job);
        sc_conf_free(&conf);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(shard_ranges_tile_the_buffer),
            cmocka_unit_test(both_sides_agree),
            cmocka_unit_test(spec_overrides),
            cmocka_unit_test(round_trip_none),
            cmocka_unit_test(round_trip_topk_error_feedback),
            cmocka_unit_test(round_trip_q8),
            cmocka_unit_test(restore_and_broadcast),
            cmocka_unit_test(membership),
            cmocka_unit_test(rate_sum_of_live_workers),
            cmocka_unit_test(leave_waits_for_the_updates_sent_before_it),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
