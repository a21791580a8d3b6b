/* sc_trainer.h — offline training: epochs of shuffled mini-batches over an
 * in-memory data set with SGD, the configured schedule and linear LR
 * scaling, the held-out set evaluated and the checkpoint saved at every
 * epoch's end; resumable mid-epoch from a checkpoint's position. The
 * runtime behind `scadles train`. */
#ifndef SC_TRAINER_H
#define SC_TRAINER_H

#include <signal.h>
#include <stddef.h>

#include "sc_ckpt.h"
#include "sc_conf.h"
#include "sc_data.h"
#include "sc_err.h"
#include "sc_log.h"
#include "sc_nn.h"
#include "sc_optim.h"

/* rng streams split from the run seed: per epoch (shuffle) and per step
 * (dropout), so a run resumed mid-epoch continues exactly as it would have */
#define SC_STREAM_INIT 1
#define SC_STREAM_SYNTH_TRAIN 2
#define SC_STREAM_SYNTH_TEST 3
#define SC_STREAM_SHUFFLE(epoch) (((uint64_t)1 << 62) + (epoch))
#define SC_STREAM_DROPOUT(step) (((uint64_t)2 << 62) + (step))

/* Passes of the held-out evaluation. */
#define SC_TRAINER_EVAL_BATCH 500

/* One epoch's figures, given to the epoch callback. */
typedef struct sc_trainer_epoch {
        uint64_t epoch; /* 1-based, the one that ended */
        int epochs;
        double train_loss, train_acc;
        double test_loss;
        size_t test_correct, test_n;
        double seconds;
} sc_trainer_epoch_t;

typedef struct sc_trainer_spec {
        const sc_conf_t *conf; /* train.*, optim.base_batch */
        sc_model_t *model;     /* trained in place */
        sc_sgd_t *sgd;
        const sc_sched_spec_t *sched; /* in steps */
        const sc_dataset_t *train, *test;
        volatile sig_atomic_t *stop; /* interrupts (checkpoint saved) when set; may be NULL */
        sc_log_fn log;               /* progress lines (level 6); may be NULL */
        void *log_opaque;
        void (*on_epoch)(void *opaque, const sc_trainer_epoch_t *e); /* may be NULL */
        void *epoch_opaque;
} sc_trainer_spec_t;

/* Trains from where meta stands (epoch, step, epoch_step) to
 * train.epochs, steps_per_epoch steps of train.batch each. SC_OK;
 * SC_ERR_AGAIN when *stop interrupted it (meta and the checkpoint hold
 * where it stands; errstr says so); SC_ERR_DIVERGED for a loss that is not
 * finite; SC_ERR_IO if a checkpoint cannot be saved; SC_ERR_NOMEM. */
sc_err_t sc_trainer_run(const sc_trainer_spec_t *spec, sc_ckpt_meta_t *meta, long steps_per_epoch,
                        char *errstr, size_t errstr_size);

#endif
