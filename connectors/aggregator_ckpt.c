/* aggregator_ckpt.c — train.checkpoint of an aggregator: the job's whole
 * model, assembled from the newest J.model record of every shard (the
 * other aggregators' shards) with this aggregator's own shards as it holds
 * them, written atomically every train.checkpoint_interval seconds and
 * once more when it stops (after its final publications), with the test
 * accuracy on the eval section's held-out set logged. */
#include "agg_state.h"

#include <stdlib.h>
#include <string.h>

#include "sc_ckpt.h"
#include "sc_eval_set.h"
#include "sc_file.h"
#include "sc_job.h"
#include "sc_kafka_model.h"
#include "sc_metrics.h"
#include "sc_model_out.h"

#define SC_AGG_CKPT_PULL_MS 10000

struct sc_agg_ckpt {
        sc_model_t *model;
        sc_dataset_t test; /* eval set: batchnorm statistics and the logged accuracy */
        int test_loaded;
        double t_last;
        uint64_t written;
};

/* The held-out set, once: needed for a model with batchnorm (else only the
 * accuracy line is skipped when it cannot be loaded). */
static sc_err_t sc_agg_ckpt_test(sc_aggregator_t *agg, char *why, size_t why_size)
{
        struct sc_agg_ckpt *c = agg->ckpt;
        if (c->test_loaded)
                return SC_OK;
        c->test_loaded = 1;
        if (!sc_eval_set_configured(agg->conf) && !sc_model_nstate(c->model))
                return SC_OK;
        int classes = (int)sc_shape_numel(sc_model_output_shape(c->model));
        return sc_eval_set_load(agg->conf, classes, &c->test, why, why_size);
}

static void sc_agg_ckpt_write(sc_aggregator_t *agg, int final)
{
        char why[1024];
        const sc_conf_t *conf = agg->conf;
        sc_model_out_info_t info;
        if (!agg->ckpt) {
                struct sc_agg_ckpt *c = calloc(1, sizeof(*c));
                if (!c || sc_model_new(&c->model, &conf->model, why, sizeof(why))) {
                        free(c);
                        sc_agg_log(agg, 3, "checkpoint: out of memory");
                        return;
                }
                agg->ckpt = c;
        }
        struct sc_agg_ckpt *c = agg->ckpt;
        if (sc_model_out_pull(conf, c->model, SC_AGG_CKPT_PULL_MS, &info, why, sizeof(why))) {
                sc_agg_log(agg, 3, "checkpoint: %s", why);
                return;
        }
        if (info.unpublished) { /* as `model pull`: no file that mixes in initial values */
                sc_agg_log(agg, 4, "checkpoint %s not written: %d shard(s) never published",
                           conf->train.checkpoint, info.unpublished);
                return;
        }
        /* While running, the shards held here are newer than their last publication. */
        float *params = sc_model_params(c->model);
        for (int p = 0; !final && p < agg->nshards; p++) {
                if (!agg->shards[p].held)
                        continue;
                size_t b, e;
                sc_job_shard_range(agg->n, agg->nshards, p, &b, &e);
                memcpy(params + b, sc_server_params(agg->shards[p].srv), (e - b) * sizeof(float));
        }
        if (sc_agg_ckpt_test(agg, why, sizeof(why)))
                sc_agg_log(agg, 4, "checkpoint: held-out set: %s", why);
        if (sc_model_nstate(c->model) &&
            sc_model_out_recalibrate(c->model, &c->test, why, sizeof(why))) {
                sc_agg_log(agg, 3, "checkpoint: %s", why);
                return;
        }
        sc_ckpt_meta_t meta = {.step = info.min_version, .seed = conf->train.seed};
        if (sc_ckpt_save(conf->train.checkpoint, c->model, NULL, &meta, why, sizeof(why))) {
                sc_agg_log(agg, 3, "checkpoint: %s", why);
                return;
        }
        c->written++;
        char acc[128] = "";
        sc_metrics_t *m = NULL;
        if (c->test.n && !sc_metrics_new(&m, c->test.n_classes, 1, why, sizeof(why)) &&
            !sc_metrics_eval(m, c->model, c->test.x, c->test.y, c->test.n)) {
                sc_metrics_summary_t s;
                sc_metrics_summary(m, &s);
                snprintf(acc, sizeof(acc), "; test accuracy: %.4f (%llu/%llu)", s.accuracy,
                         (unsigned long long)s.hits, (unsigned long long)s.n);
        }
        sc_metrics_destroy(m);
        sc_agg_log(agg, final ? 5 : 6, "checkpoint %s: J.model shard versions %llu..%llu%s%s",
                   conf->train.checkpoint, (unsigned long long)info.min_version,
                   (unsigned long long)info.max_version, final ? " (final)" : "", acc);
}

void sc_agg_ckpt_tick(sc_aggregator_t *agg, double now)
{
        const sc_conf_train_t *t = &agg->conf->train;
        if (!t->checkpoint[0] || t->checkpoint_interval <= 0 || agg->applied == 0)
                return;
        double last = agg->ckpt ? agg->ckpt->t_last : agg->t0;
        if (now - last < t->checkpoint_interval)
                return;
        sc_agg_ckpt_write(agg, 0);
        if (agg->ckpt)
                agg->ckpt->t_last = now;
}

void sc_agg_ckpt_final(sc_aggregator_t *agg)
{
        if (!agg->conf->train.checkpoint[0])
                return;
        rd_kafka_flush(agg->producer, 10000); /* the final publications are on J.model */
        sc_agg_ckpt_write(agg, 1);
}

void sc_agg_ckpt_free(sc_aggregator_t *agg)
{
        struct sc_agg_ckpt *c = agg->ckpt;
        if (!c)
                return;
        sc_model_destroy(c->model);
        sc_dataset_free(&c->test);
        free(c);
        agg->ckpt = NULL;
}
