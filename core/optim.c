/* optim.c — SGD with momentum, Nesterov and L2 weight decay over one flat
 * buffer; learning-rate schedules with linear warmup; linear LR scaling. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sc_alloc.h"
#include "sc_optim.h"

/* The update loop is memory-bound; AVX2 / AVX-512 clones are picked at load time. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(SC_NN_NO_CLONES)
#define SC_OPTIM_SIMD __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define SC_OPTIM_SIMD
#endif

sc_err_t sc_sgd_init(sc_sgd_t *sgd, const sc_sgd_spec_t *spec, size_t n)
{
        if (!sgd || !spec)
                return SC_ERR_INVAL;
        memset(sgd, 0, sizeof(*sgd));
        if (!(spec->momentum >= 0.0 && spec->momentum < 1.0) || !(spec->weight_decay >= 0.0) ||
            (spec->nesterov && spec->momentum <= 0.0))
                return SC_ERR_INVAL;
        sgd->velocity = sc_calloc(n ? n : 1, sizeof(float));
        if (!sgd->velocity)
                return SC_ERR_NOMEM;
        sgd->spec = *spec;
        sgd->n = n;
        return SC_OK;
}

void sc_sgd_free(sc_sgd_t *sgd)
{
        if (!sgd)
                return;
        sc_free(sgd->velocity);
        sgd->velocity = NULL;
        sgd->n = 0;
}

SC_OPTIM_SIMD static void sgd_update(float *restrict params, const float *restrict grads,
                                     float *restrict v, size_t n, float lr, float mu, float wd,
                                     int nesterov)
{
        if (mu == 0.0f) {
                for (size_t i = 0; i < n; i++)
                        params[i] -= lr * (grads[i] + wd * params[i]);
        } else if (nesterov) {
                for (size_t i = 0; i < n; i++) {
                        float g = grads[i] + wd * params[i];
                        v[i] = mu * v[i] + g;
                        params[i] -= lr * (g + mu * v[i]);
                }
        } else {
                for (size_t i = 0; i < n; i++) {
                        float g = grads[i] + wd * params[i];
                        v[i] = mu * v[i] + g;
                        params[i] -= lr * v[i];
                }
        }
}

void sc_sgd_step(sc_sgd_t *sgd, float *params, const float *grads, float lr)
{
        sgd_update(params, grads, sgd->velocity, sgd->n, lr, (float)sgd->spec.momentum,
                   (float)sgd->spec.weight_decay, sgd->spec.nesterov);
}

double sc_sched_lr(const sc_sched_spec_t *sched, long step)
{
        const double lr = sched->lr;
        const long warm = sched->warmup_steps > 0 ? sched->warmup_steps : 0;

        if (step < 0)
                step = 0;
        if (step < warm)
                return lr * (double)(step + 1) / (double)warm;
        switch (sched->kind) {
        case SC_SCHED_MULTISTEP: {
                double f = 1.0;
                for (int i = 0; i < sched->n_milestones && i < SC_SCHED_MAX_MILESTONES; i++)
                        if (step >= sched->milestones[i])
                                f *= sched->gamma;
                return lr * f;
        }
        case SC_SCHED_COSINE: {
                if (sched->total_steps <= 0)
                        return lr;
                double t = (double)(step - warm) / (double)sched->total_steps;
                if (t > 1.0)
                        t = 1.0;
                return sched->min_lr + 0.5 * (lr - sched->min_lr) * (1.0 + cos(M_PI * t));
        }
        case SC_SCHED_CONSTANT:
        default:
                return lr;
        }
}

double sc_lr_scale_linear(double lr, double batch, double base_batch)
{
        if (!(base_batch > 0.0))
                return lr;
        return lr * batch / base_batch;
}

double sc_step_lr(const sc_sched_spec_t *sched, long step, int batch, double base_batch)
{
        return sc_lr_scale_linear(sc_sched_lr(sched, step), batch, base_batch);
}
