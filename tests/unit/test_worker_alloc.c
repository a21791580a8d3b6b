/* test_worker_alloc.c — the standalone push-fed worker's steady state
 * allocates nothing, nor does the Kafka source's record path from the
 * ingest path to an encoded update (driven without a broker), and an
 * allocation failing anywhere in the worker's creation or its first steps is
 * a clean error (the allocator hook of sc_alloc.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#define SC_ALLOC_HOOK
#include "sc_alloc.h"
#include "sc_buf.h"
#include "sc_codec.h"
#include "sc_conf.h"
#include "sc_ingest.h"
#include "sc_kafka_source.h"
#include "sc_nn.h"
#include "sc_optim.h"
#include "sc_wire.h"
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

/* What the Kafka source and a distributed worker's send hold, without the
 * clients: the ingest path, a model, its optimizer, a top-k codec with error
 * feedback, the payload and message buffers. */
typedef struct {
        const sc_conf_t *conf;
        sc_ingest_t *in;
        sc_batch_t *batch;
        sc_model_t *model;
        sc_sgd_t sgd;
        sc_codec_t *codec;
        sc_buf_t payload, msg;
        sc_rng_t rng;
        int64_t offset;
        uint64_t seq;
        double t;
} kpath_t;

static void kpath_decoder(void *opaque, const char *topic, sc_decode_spec_t *ds)
{
        const sc_conf_t *conf = opaque;
        sc_ks_decode_spec(conf, topic, 16, 3, ds);
}

/* One step as the Kafka source and the worker make it: each record (key,
 * value, a header, topic/partition/offset) found its stream and handed to
 * the ingest path as sc_ks_record does; the batch taken, trained and
 * stepped; the update encoded (top-k payload, wire message) as sc_wj_send
 * does; acknowledged (its delivery report) and the offsets collected. */
static sc_err_t kpath_step(kpath_t *k, char *err, size_t err_size)
{
        uint8_t px[16];
        char key[2] = {0};
        sc_decode_header_t h = {"trace", "x", 1};
        sc_ingest_result_t res;
        sc_offsets_commit_t c[8];
        sc_err_t rc;
        int idx, correct;
        for (int i = 0; i < BATCH; i++, k->offset++) {
                for (int j = 0; j < 16; j++)
                        px[j] = (uint8_t)(k->offset * 7 + j);
                key[0] = (char)('0' + k->offset % 3);
                sc_record_t rec = {key, 1, px, sizeof(px), &h, 1};
                if ((rc = sc_ingest_stream(k->in, "t", &idx, err, err_size)) ||
                    (rc = sc_ingest_record(k->in, idx, (int32_t)(k->offset % 2), k->offset / 2,
                                           &rec, k->t, &res, err, err_size)))
                        return rc;
        }
        k->t += 0.01;
        sc_batcher_t *bt = sc_ingest_batcher(k->in);
        if (!sc_batcher_ready(bt, k->t, NULL))
                return SC_ERR_AGAIN;
        if ((rc = sc_batcher_take(bt, k->t, k->batch, err, err_size)))
                return rc;
        float loss = sc_model_train_batch_out(k->model, k->batch->x, k->batch->labels, NULL,
                                              k->batch->n, &k->rng, &correct, NULL);
        if (loss != loss)
                return SC_ERR_DIVERGED;
        sc_sgd_step(&k->sgd, sc_model_params(k->model), sc_model_grads(k->model), 0.05f);
        k->payload.len = 0;
        if ((rc = sc_codec_encode(k->codec, sc_model_grads(k->model), &k->rng, &k->payload, err,
                                  err_size)))
                return rc;
        sc_wire_update_t u = {.worker = 0,
                              .seq = ++k->seq,
                              .samples = (uint32_t)k->batch->n,
                              .kind = SC_WIRE_GRAD,
                              .codec = SC_CODEC_TOPK,
                              .payload = k->payload.data,
                              .payload_len = k->payload.len};
        k->msg.len = 0;
        if ((rc = sc_wire_encode_update(&k->msg, &u, err, err_size)) ||
            (rc = sc_batcher_ack(bt, k->batch->id, err, err_size)))
                return rc;
        while (sc_stream_commits(sc_ingest_at(k->in, idx)->stream, c, 8) == 8)
                ;
        return SC_OK;
}

static void kafka_path_steady_state_allocates_nothing(void **state)
{
        (void)state;
        char err[512];
        sc_conf_t conf;
        kpath_t k = {.t = 1.0};
        memset(&conf, 0, sizeof(conf));
        assert_int_equal(sc_conf_parse(&conf, conf_text, "test", err, sizeof(err)), SC_OK);
        sc_ingest_spec_t is = {
            .numel = 16, .seed = 5, .decoder = kpath_decoder, .decoder_opaque = &conf};
        sc_stream_spec_defaults(&is.stream);
        is.stream.cap = 64;
        sc_batch_spec_defaults(&is.batch);
        is.batch.mode = SC_BATCH_FIXED;
        is.batch.b = BATCH;
        is.batch.shuffle = 16;
        sc_sgd_spec_t ss = {.momentum = 0.9};
        sc_codec_params_t cp;
        sc_codec_params_default(&cp, SC_CODEC_TOPK);
        sc_rng_seed(&k.rng, 5);
        assert_int_equal(sc_ingest_new(&k.in, &is, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_batch_new(&k.batch, BATCH, 16), SC_OK);
        assert_int_equal(sc_model_new(&k.model, &conf.model, err, sizeof(err)), SC_OK);
        sc_model_init(k.model, &k.rng);
        assert_int_equal(sc_model_reserve(k.model, BATCH), SC_OK);
        assert_int_equal(sc_sgd_init(&k.sgd, &ss, sc_model_nparams(k.model)), SC_OK);
        assert_int_equal(sc_codec_new(&k.codec, SC_CODEC_TOPK, &cp, sc_model_nparams(k.model), NULL,
                                      0, err, sizeof(err)),
                         SC_OK);
        /* Warm-up: the shuffle buffer fills, buffers reach their sizes. */
        for (int i = 0; i < 10; i++)
                kpath_step(&k, err, sizeof(err));
        uint64_t n0 = sc_alloc_count(), seq0 = k.seq;
        for (int i = 0; i < 1000; i++)
                assert_int_equal(kpath_step(&k, err, sizeof(err)), SC_OK);
        uint64_t allocs = sc_alloc_count() - n0;
        assert_int_equal(k.seq - seq0, 1000); /* every step sent an update */
        assert_true(k.msg.len > SC_WIRE_UPDATE_OVERHEAD);
        if (allocs)
                print_message("%llu allocations in 1000 steady-state steps\n",
                              (unsigned long long)allocs);
        assert_int_equal(allocs, 0);
        assert_int_equal(sc_batcher_check(sc_ingest_batcher(k.in), err, sizeof(err)), SC_OK);
        sc_buf_free(&k.payload);
        sc_buf_free(&k.msg);
        sc_codec_destroy(k.codec);
        sc_sgd_free(&k.sgd);
        sc_model_destroy(k.model);
        sc_batch_destroy(k.batch);
        sc_ingest_destroy(k.in);
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
            cmocka_unit_test(kafka_path_steady_state_allocates_nothing),
            cmocka_unit_test(every_allocation_failure_is_clean),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
