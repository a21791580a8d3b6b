/* cmd_aggregator.c — `scadles aggregator`: runs an aggregator of a
 * distributed job; its hidden --selftest-produce and --selftest-check modes
 * stand in for workers in tests (synthetic updates from fake workers, and
 * the exact expected shards to compare J.model against). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <librdkafka/rdkafka.h>

#include "cmd.h"
#include "sc_aggregator.h"
#include "sc_codec.h"
#include "sc_conf.h"
#include "sc_job_auth.h"
#include "sc_kafka_admin.h"
#include "sc_kafka_model.h"
#include "sc_kafka_util.h"
#include "sc_rng.h"
#include "sc_server.h"
#include "sc_wire.h"

typedef struct sc_agg_opts {
        sc_cli_conf_opts_t co;
        int quiet, produce, check, bad_model, no_create;
        double duration, idle_exit, rate;
        long seq_from, seq_to, corrupt_every, dup_every;
        int skip_worker, ctl_worker;
        const char *ctl_kind;
} sc_agg_opts_t;

static void sc_agg_usage(FILE *out)
{
        fprintf(out,
                "usage: scadles aggregator -c CONFIG [--set KEY=VALUE ...] [options]\n"
                "\n"
                "Aggregates a distributed job's updates: joins the consumer group\n"
                "<job.name>.aggregators on <job>.grad, owns the shards of its partitions,\n"
                "restores them from <job>.model, applies each (worker, seq) exactly once\n"
                "and publishes shard versions to <job>.model (docs/DISTRIBUTED.md).\n"
                "\n"
                "options:\n"
                "  -c, --config FILE        job configuration (JSON; sections job, model,\n"
                "                           optim, train.seed, kafka)\n"
                "  -s, --set KEY=VALUE      override one property (repeatable)\n"
                "  -b, --bootstrap ADDR     Kafka bootstrap servers (kafka.bootstrap.servers)\n"
                "  -B, --bootstrap-file F   read the bootstrap address from F\n"
                "  -d, --duration S         stop after S seconds\n"
                "  -i, --idle-exit S        stop after S seconds without an update record\n"
                "      --no-create          do not create the job's topics (only use them)\n"
                "  -q, --quiet              no progress lines\n"
                "  -h, --help               this text\n"
                "\n"
                "With train.checkpoint, the job's whole model (every shard's newest J.model\n"
                "record) is saved there every train.checkpoint_interval seconds and at stop\n"
                "(docs/MODEL.md).\n"
                "\n"
                "Output: progress lines on stderr, then `summary: {json}` on stdout.\n"
                "Exit status: 0 ok, 1 runtime failure, 2 usage or configuration error.\n");
}

static void sc_agg_print(void *opaque, int level, const char *line)
{
        (void)opaque;
        (void)level;
        fprintf(stderr, "aggregator: %s\n", line);
}

static int sc_agg_parse(int argc, char **argv, sc_agg_opts_t *o)
{
        static const struct option longopts[] = {{"config", required_argument, NULL, 'c'},
                                                 {"set", required_argument, NULL, 's'},
                                                 {"bootstrap", required_argument, NULL, 'b'},
                                                 {"bootstrap-file", required_argument, NULL, 'B'},
                                                 {"duration", required_argument, NULL, 'd'},
                                                 {"idle-exit", required_argument, NULL, 'i'},
                                                 {"no-create", no_argument, NULL, 'N'},
                                                 {"quiet", no_argument, NULL, 'q'},
                                                 {"help", no_argument, NULL, 'h'},
                                                 {"selftest-produce", no_argument, NULL, 'P'},
                                                 {"selftest-check", no_argument, NULL, 'C'},
                                                 {"selftest-bad-model", no_argument, NULL, 'M'},
                                                 {"selftest-ctl", required_argument, NULL, 'K'},
                                                 {"worker", required_argument, NULL, 'W'},
                                                 {"skip-worker", required_argument, NULL, 'S'},
                                                 {"seq-from", required_argument, NULL, 'f'},
                                                 {"seq-to", required_argument, NULL, 't'},
                                                 {"rate", required_argument, NULL, 'r'},
                                                 {"corrupt-every", required_argument, NULL, 'x'},
                                                 {"dup-every", required_argument, NULL, 'u'},
                                                 {NULL, 0, NULL, 0}};
        int c;

        memset(o, 0, sizeof(*o));
        o->seq_from = 1;
        o->seq_to = 10;
        o->skip_worker = -1;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":c:s:b:B:d:i:qh", longopts, NULL)) != -1) {
                int taken = sc_cli_conf_opt("aggregator", &o->co, c, optarg);
                if (taken < 0)
                        return 2;
                if (taken)
                        continue;
                switch (c) {
                case 'd':
                        if (sc_cli_number("aggregator", "--duration", optarg, &o->duration))
                                return 2;
                        break;
                case 'i':
                        if (sc_cli_number("aggregator", "--idle-exit", optarg, &o->idle_exit))
                                return 2;
                        break;
                case 'N':
                        o->no_create = 1;
                        break;
                case 'q':
                        o->quiet = 1;
                        break;
                case 'P':
                        o->produce = 1;
                        break;
                case 'C':
                        o->check = 1;
                        break;
                case 'M':
                        o->bad_model = 1;
                        break;
                case 'K':
                        o->ctl_kind = optarg;
                        break;
                case 'W':
                        o->ctl_worker = atoi(optarg);
                        break;
                case 'S':
                        o->skip_worker = atoi(optarg);
                        break;
                case 'f':
                        o->seq_from = atol(optarg);
                        break;
                case 't':
                        o->seq_to = atol(optarg);
                        break;
                case 'r':
                        if (sc_cli_number("aggregator", "--rate", optarg, &o->rate))
                                return 2;
                        break;
                case 'x':
                        o->corrupt_every = atol(optarg);
                        break;
                case 'u':
                        o->dup_every = atol(optarg);
                        break;
                default:
                        return sc_cli_opt_other("aggregator", c, argv, sc_agg_usage);
                }
        }
        if (sc_cli_no_operands("aggregator", argc, argv, sc_agg_usage))
                return 2;
        if (!o->co.config || o->seq_from < 1 || o->seq_to < o->seq_from - 1) {
                fprintf(stderr, "scadles aggregator: %s\n\n",
                        !o->co.config ? "-c CONFIG is required" : "bad --from/--to");
                sc_agg_usage(stderr);
                return 2;
        }
        return -1;
}

/* ---- self-test: fake workers and the expected result ---------------------- */

typedef struct sc_fake {
        const sc_conf_t *conf;
        sc_model_t *model;
        size_t n;
        int shards, workers;
        sc_codec_t **codecs; /* [worker * shards + shard] */
        sc_rng_t *rngs;      /* same index: randk / stochastic rounding */
        float *g;
        sc_buf_t payload;
        uint32_t *idx;
        float *val, *dense;
        sc_auth_t auth; /* authenticated job: records signed as their worker */
} sc_fake_t;

static void sc_fake_free(sc_fake_t *f)
{
        for (int i = 0; f->codecs && i < f->workers * f->shards; i++)
                sc_codec_destroy(f->codecs[i]);
        free(f->codecs);
        free(f->rngs);
        free(f->g);
        free(f->idx);
        free(f->val);
        free(f->dense);
        sc_buf_free(&f->payload);
        sc_model_destroy(f->model);
        sc_auth_free(&f->auth);
}

static int sc_fake_init(sc_fake_t *f, const sc_conf_t *conf, char *err, size_t errsz)
{
        sc_codec_params_t pp;
        memset(f, 0, sizeof(*f));
        f->conf = conf;
        f->shards = conf->job.shards;
        f->workers = conf->job.sync.n_workers;
        if (sc_kafka_model_initial(conf, &f->model, err, errsz) ||
            sc_job_auth_load(&f->auth, conf, err, errsz))
                return -1;
        f->n = sc_model_nparams(f->model);
        size_t cnt = (size_t)f->workers * (size_t)f->shards;
        if (!(f->codecs = calloc(cnt, sizeof(*f->codecs))) ||
            !(f->rngs = calloc(cnt, sizeof(*f->rngs))) || !(f->g = malloc(f->n * sizeof(float))) ||
            !(f->idx = malloc(f->n * sizeof(uint32_t))) ||
            !(f->val = malloc(f->n * sizeof(float))) || !(f->dense = malloc(f->n * sizeof(float))))
                return snprintf(err, errsz, "out of memory"), -1;
        sc_codec_params_default(&pp, (sc_codec_id_t)conf->job.codec);
        if (conf->job.codec_ratio > 0)
                pp.ratio = conf->job.codec_ratio;
        if (conf->job.codec_error_feedback >= 0)
                pp.error_feedback = conf->job.codec_error_feedback;
        if (conf->job.codec_delta > 0)
                pp.delta = conf->job.codec_delta;
        for (int w = 0; w < f->workers; w++)
                for (int s = 0; s < f->shards; s++) {
                        size_t b, e, i = (size_t)w * (size_t)f->shards + (size_t)s;
                        sc_kafka_model_shard_range(f->n, f->shards, s, &b, &e);
                        if (sc_codec_new(&f->codecs[i], (sc_codec_id_t)conf->job.codec, &pp, e - b,
                                         NULL, 0, err, errsz))
                                return -1;
                        sc_rng_seed(&f->rngs[i],
                                    conf->train.seed ^ (0x9e3779b97f4a7c15ull * (i + 1)));
                }
        return 0;
}

/* Appends to out the update message of (worker, shard, seq); the payload is
 * encoded with the worker's codec (its residual advances). */
static int sc_fake_update(sc_fake_t *f, int w, int s, long seq, sc_buf_t *out, char *err,
                          size_t errsz)
{
        const sc_conf_t *conf = f->conf;
        size_t b, e, i = (size_t)w * (size_t)f->shards + (size_t)s;
        sc_rng_t root, r;
        sc_kafka_model_shard_range(f->n, f->shards, s, &b, &e);
        sc_rng_seed(&root, conf->train.seed + 0x51f7);
        sc_rng_split(&root, &r, ((uint64_t)w << 44) | ((uint64_t)s << 28) | (uint64_t)seq);
        for (size_t k = 0; k < e - b; k++)
                f->g[k] = (sc_rng_uniform(&r) * 2.0f - 1.0f) * 0.01f;
        f->payload.len = 0;
        if (sc_codec_encode(f->codecs[i], f->g, &f->rngs[i], &f->payload, err, errsz))
                return -1;
        sc_sync_kind_t kind = conf->job.sync.kind;
        sc_wire_update_t m = {.worker = (uint32_t)w,
                              .shard = (uint32_t)s,
                              .seq = (uint64_t)seq,
                              .t_read = sc_sync_is_round_based(kind)
                                            ? (uint64_t)(seq - 1)
                                            : (uint64_t)(seq - 1) * (uint64_t)f->workers,
                              .samples = (uint32_t)(1 + (w * 7 + seq) % 32),
                              .kind = sc_sync_sends_gradients(kind) ? SC_WIRE_GRAD
                                      : conf->job.sync.send_models  ? SC_WIRE_FULL_MODEL
                                                                    : SC_WIRE_DELTA,
                              .codec = (uint8_t)conf->job.codec,
                              .payload = f->payload.data,
                              .payload_len = f->payload.len};
        size_t start = out->len;
        return sc_wire_encode_update(out, &m, err, errsz) ||
                       sc_auth_sign(&f->auth, out, start, (uint32_t)w, err, errsz)
                   ? -1
                   : 0;
}

/* One of six kinds of bad record for partition s (every one is rejected). */
static int sc_fake_bad(sc_fake_t *f, long k, int s, sc_buf_t *out, char *err, size_t errsz)
{
        switch (k % 6) {
        case 0: /* a bit flip: CRC mismatch */
        case 5: /* truncated */
                if (sc_fake_update(f, 0, s, 1, out, err, errsz))
                        return -1;
                if (k % 6 == 0)
                        out->data[out->len / 2] ^= 0x10;
                else
                        out->len -= 3;
                return 0;
        case 1: /* not a wire message at all */
                return sc_buf_append(out, "{\"json\": \"from another producer\"}", 34) ? -1 : 0;
        case 2: { /* a control message on the update topic */
                sc_wire_control_t c = {.kind = SC_WIRE_CTL_HEARTBEAT, .worker = 0};
                return sc_wire_encode_control(out, &c, err, errsz) ? -1 : 0;
        }
        case 3: /* an update for another shard */
                return sc_fake_update(f, 0, (s + 1) % (f->shards + 1), 1, out, err, errsz);
        default: { /* an unknown worker id */
                sc_wire_update_t m = {.worker = (uint32_t)f->workers + 5,
                                      .shard = (uint32_t)s,
                                      .seq = 1,
                                      .samples = 1,
                                      .kind = SC_WIRE_GRAD,
                                      .codec = SC_CODEC_NONE};
                size_t b, e;
                sc_kafka_model_shard_range(f->n, f->shards, s, &b, &e);
                sc_codec_t *c = NULL;
                f->payload.len = 0;
                memset(f->g, 0, (e - b) * sizeof(float));
                if (sc_codec_new(&c, SC_CODEC_NONE, NULL, e - b, NULL, 0, err, errsz) ||
                    sc_codec_encode(c, f->g, NULL, &f->payload, err, errsz)) {
                        sc_codec_destroy(c);
                        return -1;
                }
                sc_codec_destroy(c);
                m.payload = f->payload.data;
                m.payload_len = f->payload.len;
                return sc_wire_encode_update(out, &m, err, errsz) ? -1 : 0;
        }
        }
}

static double sc_agg_wall(void)
{
        return sc_cli_now();
}

static int sc_agg_produce(const sc_conf_t *conf, const sc_agg_opts_t *o)
{
        sc_kafka_topic_spec_t topics[SC_JOB__NTOPICS];
        sc_kafka_delivery_t dv;
        rd_kafka_conf_t *kc;
        rd_kafka_t *rk = NULL;
        sc_buf_t msg = {0};
        sc_fake_t f;
        char err[1024];
        long produced = 0, bad = 0, dups = 0;
        double t0 = sc_agg_wall();
        int rc = 1;

        if (sc_fake_init(&f, conf, err, sizeof(err)) ||
            sc_kafka_admin_job_topics(conf->job.name, conf->job.shards, conf->job.replication,
                                      topics, err, sizeof(err)) ||
            sc_kafka_conf_from_json(&kc, (const json_t *)conf->kafka, "$.kafka", err, sizeof(err)))
                goto out;
        sc_kafka_conf_log_bridge(kc);
        sc_kafka_conf_set(kc, "enable.idempotence", "true", "selftest", err, sizeof(err));
        sc_kafka_conf_set(kc, "linger.ms", "5", "selftest", err, sizeof(err));
        sc_kafka_conf_delivery(kc);
        if (!(rk = rd_kafka_new(RD_KAFKA_PRODUCER, kc, err, sizeof(err)))) {
                rd_kafka_conf_destroy(kc);
                goto out;
        }
        if (!o->no_create &&
            sc_kafka_admin_ensure(rk, topics, SC_JOB__NTOPICS, 10000, NULL, err, sizeof(err)))
                goto out;
        sc_kafka_delivery_init(&dv);
        if (o->ctl_kind) {
                sc_wire_control_t c = {.worker = (uint32_t)o->ctl_worker,
                                       .timestamp = (int64_t)(sc_agg_wall() * 1e6)};
                c.kind = !strcmp(o->ctl_kind, "join")        ? SC_WIRE_CTL_JOIN
                         : !strcmp(o->ctl_kind, "heartbeat") ? SC_WIRE_CTL_HEARTBEAT
                                                             : SC_WIRE_CTL_LEAVE;
                msg.len = 0;
                if (sc_wire_encode_control(&msg, &c, err, sizeof(err)) ||
                    sc_auth_sign(&f.auth, &msg, 0, c.worker, err, sizeof(err)) ||
                    sc_kafka_produce(rk, topics[SC_JOB_CTL].name, RD_KAFKA_PARTITION_UA, NULL, 0,
                                     msg.data, msg.len, NULL, NULL, 0, 0, &dv, 10000, err,
                                     sizeof(err)))
                        goto out;
        }
        for (int p = 0; o->bad_model && p < f.shards; p++) {
                /* garbage, then a model message of another shard in this partition */
                static const char junk[] = "not a model shard";
                sc_wire_model_t m = {.shard = (uint32_t)(p + 1), .count = 1, .params = f.g};
                msg.len = 0;
                f.g[0] = 1.0f;
                if (sc_kafka_produce(rk, topics[SC_JOB_MODEL].name, p, NULL, 0, junk,
                                     sizeof(junk) - 1, NULL, NULL, 0, 0, &dv, 10000, err,
                                     sizeof(err)) ||
                    sc_wire_encode_model(&msg, &m, err, sizeof(err)) ||
                    sc_kafka_produce(rk, topics[SC_JOB_MODEL].name, p, NULL, 0, msg.data, msg.len,
                                     NULL, NULL, 0, 0, &dv, 10000, err, sizeof(err)))
                        goto out;
                bad += 2;
        }
        for (long seq = 1; seq <= o->seq_to && !o->bad_model && !o->ctl_kind && !sc_cli_stop; seq++)
                for (int w = 0; w < f.workers; w++)
                        for (int s = 0; s < f.shards; s++) {
                                char key[16];
                                int klen = snprintf(key, sizeof(key), "%d", s);
                                msg.len = 0;
                                if (sc_fake_update(&f, w, s, seq, &msg, err, sizeof(err)))
                                        goto out;
                                if (seq < o->seq_from || w == o->skip_worker)
                                        continue; /* advances the codec state only */
                                if (sc_kafka_produce(rk, topics[SC_JOB_GRAD].name, s, key,
                                                     (size_t)klen, msg.data, msg.len, NULL, NULL, 0,
                                                     0, &dv, 10000, err, sizeof(err)))
                                        goto out;
                                produced++;
                                if (o->dup_every > 0 && produced % o->dup_every == 0) {
                                        if (sc_kafka_produce(rk, topics[SC_JOB_GRAD].name, s, key,
                                                             (size_t)klen, msg.data, msg.len, NULL,
                                                             NULL, 0, 0, &dv, 10000, err,
                                                             sizeof(err)))
                                                goto out;
                                        dups++;
                                }
                                if (o->corrupt_every > 0 && produced % o->corrupt_every == 0) {
                                        msg.len = 0;
                                        if (sc_fake_bad(&f, bad, s, &msg, err, sizeof(err)) ||
                                            sc_kafka_produce(rk, topics[SC_JOB_GRAD].name, s, key,
                                                             (size_t)klen, msg.data, msg.len, NULL,
                                                             NULL, 0, 0, &dv, 10000, err,
                                                             sizeof(err)))
                                                goto out;
                                        bad++;
                                }
                                if (o->rate > 0) {
                                        double due = t0 + (double)produced / o->rate;
                                        while (sc_agg_wall() < due)
                                                rd_kafka_poll(rk, 1);
                                } else {
                                        rd_kafka_poll(rk, 0);
                                }
                        }
        if (sc_kafka_delivery_wait(rk, &dv, 30000, err, sizeof(err)))
                goto out;
        printf("produced: {\"updates\":%ld,\"duplicates\":%ld,\"bad\":%ld,\"seconds\":%.3f}\n",
               produced, dups, bad, sc_agg_wall() - t0);
        rc = 0;
out:
        if (rc)
                fprintf(stderr, "scadles aggregator --selftest-produce: %s\n", err);
        if (rk)
                rd_kafka_destroy(rk);
        sc_buf_free(&msg);
        sc_fake_free(&f);
        return rc;
}

/* Applies one encoded update message to srv the way the aggregator does. */
static int sc_agg_ref_apply(sc_fake_t *f, sc_server_t *srv, const sc_buf_t *msg, char *err,
                            size_t errsz)
{
        sc_wire_msg_t wm;
        sc_update_t u;
        if (sc_auth_decode(&f->auth, msg->data, msg->len, &wm, NULL, err, errsz) ||
            sc_server_update_decode(&wm.u.update, sc_server_len(srv), f->idx, f->val, f->dense, &u,
                                    err, errsz))
                return -1;
        return sc_server_apply(srv, &u, NULL, err, errsz) ? -1 : 0;
}

static int sc_agg_check(const sc_conf_t *conf, const sc_agg_opts_t *o)
{
        sc_kafka_topic_spec_t topics[SC_JOB__NTOPICS];
        sc_server_t **ref = NULL;
        rd_kafka_conf_t *kc;
        rd_kafka_t *rk = NULL;
        sc_buf_t msg = {0};
        sc_fake_t f;
        char err[1024];
        int rc = 1, bad_shards = 0;

        if (sc_fake_init(&f, conf, err, sizeof(err)) ||
            sc_kafka_admin_job_topics(conf->job.name, conf->job.shards, conf->job.replication,
                                      topics, err, sizeof(err)))
                goto out;
        if (!(ref = calloc((size_t)f.shards, sizeof(*ref))))
                goto out;
        for (int s = 0; s < f.shards; s++) {
                sc_server_spec_t spec;
                if (sc_kafka_model_server_spec(conf, f.n, s, &spec, err, sizeof(err)) ||
                    sc_server_new(&ref[s], &spec, sc_model_params(f.model) + spec.begin, err,
                                  sizeof(err)))
                        goto out;
        }
        for (long seq = 1; seq <= o->seq_to; seq++)
                for (int w = 0; w < f.workers; w++)
                        for (int s = 0; s < f.shards; s++) {
                                msg.len = 0;
                                if (sc_fake_update(&f, w, s, seq, &msg, err, sizeof(err)) ||
                                    sc_agg_ref_apply(&f, ref[s], &msg, err, sizeof(err)))
                                        goto out;
                        }
        if (sc_kafka_conf_from_json(&kc, (const json_t *)conf->kafka, "$.kafka", err, sizeof(err)))
                goto out;
        sc_kafka_conf_log_bridge(kc);
        sc_kafka_conf_set(kc, "enable.partition.eof", "true", "check", err, sizeof(err));
        sc_kafka_conf_set(kc, "group.id", "scadles.selftest-check", "check", err, sizeof(err));
        if (!(rk = rd_kafka_new(RD_KAFKA_CONSUMER, kc, err, sizeof(err)))) {
                rd_kafka_conf_destroy(kc);
                goto out;
        }
        for (int s = 0; s < f.shards; s++) {
                sc_kafka_model_rec_t rec;
                int found = 0, same = 0, applied_ok = 1;
                if (sc_kafka_model_read_latest(rk, topics[SC_JOB_MODEL].name, s, 10000, &f.auth,
                                               NULL, NULL, NULL, &rec, &found, err, sizeof(err)))
                        goto out;
                const sc_wire_model_view_t *m = &rec.mr_model;
                size_t len = sc_server_len(ref[s]);
                sc_server_t *got_srv = NULL;
                if (found && m->count == len && m->params_in_state) {
                        /* the parameters are in the server state */
                        sc_server_spec_t spec;
                        if (sc_kafka_model_server_spec(conf, f.n, s, &spec, err, sizeof(err)) ||
                            sc_server_new(&got_srv, &spec, sc_model_params(f.model) + spec.begin,
                                          err, sizeof(err)) ||
                            sc_server_restore(got_srv, m->state, m->state_len, err, sizeof(err))) {
                                fprintf(stderr, "shard %d: state: %s\n", s, err);
                                sc_server_destroy(got_srv);
                                got_srv = NULL;
                                found = 0;
                        }
                }
                if (found && m->count == len) {
                        float *got = malloc(len * sizeof(float));
                        if (got) {
                                if (got_srv)
                                        memcpy(got, sc_server_params(got_srv), len * sizeof(float));
                                else
                                        sc_wire_get_f32s(got, m->params, len);
                                same = !memcmp(got, sc_server_params(ref[s]), len * sizeof(float));
                                double maxdiff = 0;
                                for (size_t k = 0; k < len; k++) {
                                        double d = got[k] - sc_server_params(ref[s])[k];
                                        maxdiff = d > maxdiff ? d : -d > maxdiff ? -d : maxdiff;
                                }
                                if (!same)
                                        fprintf(stderr, "shard %d: max |diff| %g\n", s, maxdiff);
                                free(got);
                        }
                        for (uint32_t i = 0; i < m->napplied; i++) {
                                sc_wire_applied_t a;
                                sc_wire_get_applied(m, i, &a);
                                if (a.seq != (uint64_t)o->seq_to)
                                        applied_ok = 0;
                        }
                        if (m->napplied != (uint32_t)f.workers && o->seq_to > 0)
                                applied_ok = 0;
                }
                sc_server_destroy(got_srv);
                int ok = found && same && applied_ok && m->version == sc_server_version(ref[s]);
                printf("check: {\"shard\":%d,\"found\":%s,\"version\":%llu,\"expected_version\":"
                       "%llu,\"grad_offset\":%lld,\"params_equal\":%s,\"applied_ok\":%s,"
                       "\"ok\":%s}\n",
                       s, found ? "true" : "false", found ? (unsigned long long)m->version : 0ULL,
                       (unsigned long long)sc_server_version(ref[s]),
                       found ? (long long)m->grad_offset : -1LL, same ? "true" : "false",
                       applied_ok ? "true" : "false", ok ? "true" : "false");
                bad_shards += !ok;
                sc_kafka_model_rec_free(&rec);
        }
        rc = bad_shards ? 1 : 0;
        err[0] = 0;
out:
        if (rc && err[0])
                fprintf(stderr, "scadles aggregator --selftest-check: %s\n", err);
        if (rk)
                rd_kafka_destroy(rk);
        for (int s = 0; ref && s < f.shards; s++)
                sc_server_destroy(ref[s]);
        free(ref);
        sc_buf_free(&msg);
        sc_fake_free(&f);
        return rc;
}

int sc_cmd_aggregator(int argc, char **argv)
{
        sc_agg_opts_t o;
        sc_conf_t conf;
        sc_aggregator_t *agg = NULL;
        char err[1024];
        int rc;

        if ((rc = sc_agg_parse(argc, argv, &o)) >= 0)
                return rc;
        sc_conf_defaults(&conf);
        if ((rc = sc_cli_conf_load("aggregator", &conf, &o.co)))
                goto out;
        sc_cli_quiet = o.quiet;
        sc_kafka_log_set_sink(sc_cli_kafka_log, "aggregator");
        sc_cli_signals();
        if (o.produce || o.bad_model || o.ctl_kind) {
                rc = sc_agg_produce(&conf, &o);
                goto out;
        }
        if (o.check) {
                rc = sc_agg_check(&conf, &o);
                goto out;
        }
        sc_aggregator_spec_t spec = {.conf = &conf,
                                     .duration = o.duration,
                                     .idle_exit = o.idle_exit,
                                     .create_topics = !o.no_create,
                                     .log = o.quiet ? NULL : sc_agg_print};
        sc_err_t e = sc_aggregator_new(&agg, &spec, err, sizeof(err));
        if (e) {
                fprintf(stderr, "scadles aggregator: %s\n", err);
                rc = e == SC_ERR_CONFIG ? 2 : 1;
                goto out;
        }
        rc = 0;
        if (sc_aggregator_run(agg, &sc_cli_stop, err, sizeof(err))) {
                fprintf(stderr, "scadles aggregator: %s\n", err);
                rc = 1;
        }
        char *sum = sc_aggregator_summary(agg);
        if (sum) {
                printf("summary: %s\n", sum);
                free(sum);
        }
out:
        fflush(stdout);
        sc_aggregator_destroy(agg);
        sc_kafka_log_set_sink(NULL, NULL);
        sc_conf_free(&conf);
        return rc;
}
