/* trainer.c — offline training (sc_trainer.h). */
#include "sc_trainer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sc_clock.h"
#include "sc_file.h"
#include "sc_rng.h"

/* The loop's state: the position (meta), the epoch's sample order, a
 * batch's buffers and the sums of the epoch (ep) and of the current
 * progress interval (iv). */
typedef struct sc_train {
        const sc_trainer_spec_t *sp;
        sc_ckpt_meta_t *meta;
        long steps_per_epoch;
        float *x;
        int32_t *y;
        uint32_t *perm;
        struct {
                double loss;
                size_t seen, hits;
        } ep, iv;
        double t_epoch, t_last, lr;
} sc_train_t;

static sc_err_t sc_train_save(const sc_train_t *t, char *errstr, size_t errstr_size)
{
        const char *path = t->sp->conf->train.checkpoint;
        if (!path[0])
                return SC_OK;
        return sc_ckpt_save(path, t->sp->model, t->sp->sgd, t->meta, errstr, errstr_size);
}

/* The epoch's sample order: a permutation drawn from (seed, epoch), so a
 * resumed run sees the same order. */
static void sc_train_shuffle(sc_train_t *t)
{
        const sc_dataset_t *ds = t->sp->train;
        sc_rng_t root, shuf;
        sc_rng_seed(&root, t->sp->conf->train.seed);
        sc_rng_split(&root, &shuf, SC_STREAM_SHUFFLE(t->meta->epoch));
        for (size_t i = 0; i < ds->n; i++)
                t->perm[i] = (uint32_t)i;
        sc_rng_shuffle_u32(&shuf, t->perm, (uint32_t)ds->n);
}

/* Step s of the epoch: gather its batch, train, step the optimizer at the
 * scheduled (and linearly scaled) rate. */
static sc_err_t sc_train_step(sc_train_t *t, long s, char *errstr, size_t errstr_size)
{
        const sc_conf_t *conf = t->sp->conf;
        const sc_dataset_t *ds = t->sp->train;
        const int batch = conf->train.batch;
        size_t start = (size_t)s * (size_t)batch;
        int b = (int)(ds->n - start < (size_t)batch ? ds->n - start : (size_t)batch);
        int correct = 0;
        sc_rng_t root, drop;

        sc_dataset_gather(ds, t->perm + start, (size_t)b, t->x, t->y);
        sc_rng_seed(&root, conf->train.seed);
        sc_rng_split(&root, &drop, SC_STREAM_DROPOUT(t->meta->step));
        float loss = sc_model_train_batch(t->sp->model, t->x, t->y, NULL, b, &drop, &correct);
        if (!isfinite(loss))
                return sc_errf(SC_ERR_DIVERGED, errstr, errstr_size,
                               "loss is %s at epoch %llu step %llu (diverged: lower optim.lr, or "
                               "out of memory)",
                               isnan(loss) ? "NaN" : "infinite",
                               (unsigned long long)t->meta->epoch + 1,
                               (unsigned long long)t->meta->step);
        t->lr = sc_step_lr(t->sp->sched, (long)t->meta->step, b, conf->optim.base_batch);
        sc_sgd_step(t->sp->sgd, sc_model_params(t->sp->model), sc_model_grads(t->sp->model),
                    (float)t->lr);
        t->meta->step++;
        t->meta->epoch_step++;
        t->ep.loss += (double)loss * b;
        t->iv.loss += (double)loss * b;
        t->ep.seen += (size_t)b;
        t->iv.seen += (size_t)b;
        t->ep.hits += (size_t)correct;
        t->iv.hits += (size_t)correct;
        return SC_OK;
}

/* A progress line every train.progress_interval seconds (s: the step just
 * taken), over the steps since the last one. */
static void sc_train_progress(sc_train_t *t, long s)
{
        const sc_conf_t *conf = t->sp->conf;
        double now = sc_clock_mono();
        if (conf->train.progress_interval <= 0 || now - t->t_last < conf->train.progress_interval)
                return;
        sc_logf(t->sp->log, t->sp->log_opaque, 6,
                "epoch %llu/%d  step %llu (%ld/%ld)  loss %.4f  train acc %.4f  %.0f samples/s  "
                "lr %.5g",
                (unsigned long long)t->meta->epoch + 1, conf->train.epochs,
                (unsigned long long)t->meta->step, s + 1, t->steps_per_epoch,
                t->iv.loss / (double)t->iv.seen, (double)t->iv.hits / (double)t->iv.seen,
                (double)t->iv.seen / (now - t->t_last), t->lr);
        t->t_last = now;
        memset(&t->iv, 0, sizeof(t->iv));
}

/* Stopped: the checkpoint saved where the run stands. */
static sc_err_t sc_train_interrupted(sc_train_t *t, char *errstr, size_t errstr_size)
{
        const sc_conf_t *conf = t->sp->conf;
        sc_err_t err;
        if (t->meta->epoch_step == (uint64_t)t->steps_per_epoch) {
                t->meta->epoch++; /* stopped right at an epoch's end */
                t->meta->epoch_step = 0;
        }
        if ((err = sc_train_save(t, errstr, errstr_size)))
                return err;
        return sc_errf(SC_ERR_AGAIN, errstr, errstr_size, "interrupted at epoch %llu step %llu%s%s",
                       (unsigned long long)t->meta->epoch + 1, (unsigned long long)t->meta->step,
                       conf->train.checkpoint[0] ? "; checkpoint saved to " : "",
                       conf->train.checkpoint);
}

/* An epoch's end: the test set evaluated, the epoch reported and the
 * checkpoint saved. */
static sc_err_t sc_train_epoch_end(sc_train_t *t, char *errstr, size_t errstr_size)
{
        const sc_trainer_spec_t *sp = t->sp;
        const sc_dataset_t *test = sp->test;
        sc_trainer_epoch_t e = {.epochs = sp->conf->train.epochs,
                                .test_n = test->n,
                                .seconds = sc_clock_mono() - t->t_epoch};
        t->meta->epoch++;
        t->meta->epoch_step = 0;
        if (sc_model_eval_set(sp->model, test->x, test->y, test->n, SC_TRAINER_EVAL_BATCH,
                              &e.test_loss, &e.test_correct))
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size,
                               "evaluation failed (out of memory)");
        e.epoch = t->meta->epoch;
        e.train_loss = t->ep.seen ? t->ep.loss / (double)t->ep.seen : 0.0;
        e.train_acc = t->ep.seen ? (double)t->ep.hits / (double)t->ep.seen : 0.0;
        if (sp->on_epoch)
                sp->on_epoch(sp->epoch_opaque, &e);
        return sc_train_save(t, errstr, errstr_size);
}

sc_err_t sc_trainer_run(const sc_trainer_spec_t *spec, sc_ckpt_meta_t *meta, long steps_per_epoch,
                        char *errstr, size_t errstr_size)
{
        const size_t numel = sc_shape_numel(spec->train->shape);
        const int batch = spec->conf->train.batch;
        sc_train_t t = {.sp = spec,
                        .meta = meta,
                        .steps_per_epoch = steps_per_epoch,
                        .x = malloc((size_t)batch * numel * sizeof(float)),
                        .y = malloc((size_t)batch * sizeof(int32_t)),
                        .perm = malloc(spec->train->n * sizeof(uint32_t))};
        sc_err_t err = SC_OK;
        if (!t.x || !t.y || !t.perm)
                err = sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
        while (!err && meta->epoch < (uint64_t)spec->conf->train.epochs) {
                sc_train_shuffle(&t);
                t.t_epoch = t.t_last = sc_clock_mono();
                memset(&t.ep, 0, sizeof(t.ep));
                memset(&t.iv, 0, sizeof(t.iv));
                for (long s = (long)meta->epoch_step; !err && s < steps_per_epoch; s++) {
                        if ((err = sc_train_step(&t, s, errstr, errstr_size)))
                                break;
                        sc_train_progress(&t, s);
                        if (spec->stop && *spec->stop)
                                err = sc_train_interrupted(&t, errstr, errstr_size);
                }
                if (!err)
                        err = sc_train_epoch_end(&t, errstr, errstr_size);
        }
        free(t.x);
        free(t.y);
        free(t.perm);
        return err;
}
