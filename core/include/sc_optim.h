/* sc_optim.h — SGD with momentum / Nesterov / weight decay over one flat
 * buffer, learning-rate schedules, and linear LR scaling. */
#ifndef SC_OPTIM_H
#define SC_OPTIM_H

#include <stddef.h>

#include "sc_err.h"

typedef struct sc_sgd_spec {
        double momentum;     /* 0 = plain SGD */
        int nesterov;        /* needs momentum > 0 */
        double weight_decay; /* L2, added to the gradient: g += wd * w */
} sc_sgd_spec_t;

typedef struct sc_sgd {
        sc_sgd_spec_t spec;
        size_t n;
        float *velocity; /* (n), zero at start; serialized with checkpoints */
} sc_sgd_t;

/* Update rule (PyTorch's, dampening 0): g' = g + wd * w; v = momentum * v +
 * g'; w -= lr * (nesterov ? g' + momentum * v : v). SC_ERR_INVAL unless
 * momentum is in [0, 1), weight_decay >= 0, and nesterov has momentum > 0;
 * SC_ERR_NOMEM if velocity cannot be allocated. sgd is zeroed on failure. */
sc_err_t sc_sgd_init(sc_sgd_t *sgd, const sc_sgd_spec_t *spec, size_t n);
/* Accepts a zeroed or already-freed sgd. */
void sc_sgd_free(sc_sgd_t *sgd);
/* params -= lr * update(grads) over n floats, one flat loop. */
void sc_sgd_step(sc_sgd_t *sgd, float *params, const float *grads, float lr);

typedef enum sc_sched_kind {
        SC_SCHED_CONSTANT,
        SC_SCHED_MULTISTEP, /* lr * gamma^(number of milestones <= step) */
        SC_SCHED_COSINE,    /* lr -> min_lr over total_steps counted from the end
                               of warmup, then min_lr; total_steps <= 0: lr */
} sc_sched_kind_t;

#define SC_SCHED_MAX_MILESTONES 16

/* All times are in optimizer steps. */
typedef struct sc_sched_spec {
        sc_sched_kind_t kind;
        double lr;         /* base (unscaled) learning rate */
        long warmup_steps; /* lr * (step + 1) / warmup_steps below it; 0 = none */
        long total_steps;  /* cosine horizon */
        double min_lr;     /* cosine floor */
        double gamma;      /* multistep factor */
        int n_milestones;
        long milestones[SC_SCHED_MAX_MILESTONES]; /* ascending */
} sc_sched_spec_t;

/* Learning rate at step (0-based). */
double sc_sched_lr(const sc_sched_spec_t *sched, long step);

/* Linear LR scaling (Goyal et al.; ScaDLES): lr * batch / base_batch;
 * lr unchanged when base_batch <= 0. */
double sc_lr_scale_linear(double lr, double batch, double base_batch);
/* The learning rate of a training step: the schedule's at step, scaled
 * linearly by batch / base_batch (base_batch <= 0: unscaled). */
double sc_step_lr(const sc_sched_spec_t *sched, long step, int batch, double base_batch);

#endif
