/* sync_impl.h — internals shared by the policy files, the policy table and the
 * shard server: the worker and server structs and the per-policy vtable. */
#ifndef SC_SYNC_IMPL_H
#define SC_SYNC_IMPL_H

#include <stdint.h>

#include "sc_optim.h"
#include "sc_server.h"
#include "sc_sync.h"

typedef enum sc_sync_phase {
        SC_PH_COMPUTE,
        SC_PH_SEND,
        SC_PH_WAIT,
} sc_sync_phase_t;

struct sc_sync_worker_s {
        sc_sync_spec_t spec;
        const struct sc_sync_policy *pol;
        uint32_t id;
        sc_sync_phase_t phase;
        uint64_t clock;        /* updates sent */
        uint64_t version;      /* model version held */
        uint64_t applied_seq;  /* from the last model info */
        uint64_t min_clock;    /* from the last model info */
        uint64_t read_version; /* version held when the last COMPUTE was handed out */
        uint64_t sent_t_read;  /* version the last update was computed against */
        int local_steps;       /* since the last sync */
        double rate;           /* scadles: samples/s */
        double rate_sum;       /* scadles window_auto: sum of the workers' rates; 0 = unknown */
        double commit_rate;    /* adsp: DeltaC */
        double next_commit;    /* adsp: time of the next commit; < 0 = not set */
        double send_time;      /* time of the last SEND */
        double overhead;       /* adsp: last measured commit overhead O_i */
        int started;           /* next() was called once */
        int waiting;           /* a WAIT is in progress since wait_since */
        double wait_since;
        double wait_total;
};

/* Per-policy behaviour. Worker hooks decide phases; server hooks apply one
 * deduplicated, validated update to the shard. */
typedef struct sc_sync_policy {
        sc_sync_kind_t kind;
        const char *name;
        int sends_gradients;
        int round_based;
        /* Worker (optional): first call of next(), at now. */
        void (*start)(sc_sync_worker_t *w, double now);
        /* Worker: samples for the next COMPUTE. */
        int (*batch)(const sc_sync_worker_t *w);
        /* Worker: phase after a COMPUTE finished at now. */
        sc_sync_phase_t (*after_compute)(sc_sync_worker_t *w, double now);
        /* Worker: fills act's wait fields; returns 1 if the wait is over. */
        int (*wait_done)(sc_sync_worker_t *w, sc_sync_act_t *act);
        /* Worker (optional): the wait ended at now. */
        void (*resume)(sc_sync_worker_t *w, double now);
        /* Server, asynchronous policies: apply u now. */
        sc_err_t (*apply)(sc_server_t *srv, const sc_update_t *u, char *errstr, size_t errstr_size);
        /* Server, round policies: weight of u in the round sum. */
        double (*round_weight)(const sc_update_t *u);
        /* Server, round policies: close the round (acc = sum w_i x_i). */
        void (*round_finish)(sc_server_t *srv);
} sc_sync_policy_t;

const sc_sync_policy_t *sc_sync_policy(sc_sync_kind_t kind);

extern const sc_sync_policy_t sc_sync_bsp, sc_sync_scadles, sc_sync_asp, sc_sync_ssp,
    sc_sync_adacomp, sc_sync_adsp, sc_sync_localsgd;

/* Applied-sequence window of one worker: every seq < base is applied; bit j
 * of mask says seq base + j is applied (bit 0 is never set after a call). */
typedef struct sc_seqwin {
        uint64_t base;
        uint64_t mask;
} sc_seqwin_t;

/* limits.norm_factor: the norms of this many last updates give the median;
 * the bound applies once SC_NORM_WARMUP are in. */
#define SC_NORM_WINDOW 64
#define SC_NORM_WARMUP 16

/* limits.samples_factor (scadles): a worker's last this many claims give
 * the median; the bound applies once SC_CLAIM_WARMUP are in. */
#define SC_CLAIM_WINDOW 16
#define SC_CLAIM_WARMUP 4

typedef struct sc_claims {
        uint32_t v[SC_CLAIM_WINDOW]; /* samples claimed (bounded ones at their bound) */
        uint32_t n, next;
} sc_claims_t;

struct sc_server_s {
        sc_server_spec_t spec;
        const sc_sync_policy_t *pol;
        size_t n;       /* end - begin */
        float *params;  /* (n) */
        sc_sgd_t sgd;   /* velocity (n) when momentum > 0 */
        float *scratch; /* (n) densified update */
        float *acc;     /* (n) round sum (round policies) */
        float *mom;     /* (n) adsp server momentum (adsp_mu > 0) */
        float *backup;  /* (n x 3) params, velocity, mom before a step (rollback) */
        int bounds_ok;  /* pmax, vmax bound max |params|, max |velocity| */
        double pmax, vmax;
        double umax;    /* max |value| of the update sc_server_limit() last passed */
        float *clipped; /* (n) values of an update scaled down to limits.max_norm */
        /* limits.norm_factor: the norms of the last updates passed (clipped
         * ones at their bound), a ring of SC_NORM_WINDOW */
        double norms[SC_NORM_WINDOW];
        uint32_t n_norms, norm_next;
        float *rows;         /* (n_workers x n) robust rounds: each contributor's update */
        float *col;          /* (n_workers) robust rounds: one coordinate's values */
        double *row_w;       /* (n_workers) robust rounds: each contributor's weight */
        sc_claims_t *claims; /* (n_workers) scadles with limits.samples_factor */
        double acc_weight;   /* round: sum of weights */
        uint32_t n_got;      /* round: contributions */
        uint8_t *got;        /* (n_workers) SC_GOT_* of this round */
        uint8_t *live;       /* (n_workers) */
        sc_seqwin_t *seq;    /* (n_workers) */
        uint64_t *clock;     /* (n_workers) updates applied per worker */
        uint64_t version;
        sc_server_stats_t stats;
        struct sc_adacomp_s *ada; /* adacomp */
};

/* Helpers for policy server halves (server.c). */
/* Scatters u into srv->scratch (dense copy or zero + sparse scatter-add). */
const float *sc_server_densify(sc_server_t *srv, const sc_update_t *u);
/* Scheduled (unscaled) LR at the server's current version. */
double sc_server_lr(const sc_server_t *srv);

/* server_limits.c: the limits of one update and the finite-step guard. */
/* Checks u against the limits (samples, norm, the bound norm_factor x the
 * median of the last norms passed); *out is u or, clipped, a
 * copy whose values are srv->clipped. SC_ERR_INVAL with errstr when refused. */
sc_err_t sc_server_limit(sc_server_t *srv, const sc_update_t *u, sc_update_t *out, int *clipped,
                         char *errstr, size_t errstr_size);
/* Saves the parameters and optimizer state before a step; restores them. */
void sc_server_save(sc_server_t *srv);
void sc_server_rollback(sc_server_t *srv);
/* 1 if moving each of u's coordinates by up to lr x its value stays
 * finite and within limits.max_abs, or no further beyond it than the
 * coordinate was (a step params[i] -= lr * v / s, s >= 1, then does too). */
int sc_server_bounded_step_ok(const sc_server_t *srv, const sc_update_t *u, float lr);
/* 1 if the optimizer state is finite and no parameter is non-finite or
 * was moved beyond limits.max_abs by the step just taken (compared with
 * srv->backup, saved before it): what a step must leave (it is undone
 * otherwise). */
int sc_server_state_ok(const sc_server_t *srv);
/* 1 for the policies whose step is the server's SGD step on the update
 * (asp, ssp). */
static inline int sc_server_plain_sgd(const sc_server_t *srv)
{
        return (srv->pol->kind == SC_SYNC_ASP || srv->pol->kind == SC_SYNC_SSP) && !srv->mom;
}
/* An SGD step of u (asp, ssp) provably leaves the parameters and velocity
 * finite: 1 by upper bounds on their magnitudes (kept from step to step,
 * rescanned only near the float range), with no copy and no scan of the
 * shard; 0 when the bound cannot show it (save, step and check then). */
int sc_server_sgd_step_bounded(sc_server_t *srv, const sc_update_t *u, float lr);
/* (u must have passed sc_server_limit(), which measured its magnitude.) */
/* got[w]: no turn yet in the round, contributed, or its update was refused
 * by the limits (its turn, taken; kept in snapshots). */
enum { SC_GOT_NONE = 0, SC_GOT_CONTRIBUTED = 1, SC_GOT_REFUSED = 2 };
/* Velocity floats: n with momentum, else 0. */
size_t sc_server_vel_len(const sc_server_t *srv);
/* 1 if the n floats of x are all finite. */
int sc_server_floats_finite(const float *x, size_t n);
/* 1 if acc + wgt * u stays finite everywhere. */
int sc_server_round_add_ok(const sc_server_t *srv, const sc_update_t *u, float wgt);
/* Robust rounds: keeps u as its worker's row, of weight wgt; before
 * round_finish, sets acc_weight to k x the same statistic of the k
 * contributors' weights (so one worker's claimed samples cannot scale the
 * LR, in scadles) and acc to acc_weight x the coordinate-wise trimmed mean
 * or median of their rows (so the policy's division gives the estimate). */
void sc_server_robust_add(sc_server_t *srv, const sc_update_t *u, double wgt);
void sc_server_robust_acc(sc_server_t *srv);

/* Shared worker hooks. */
int sc_sync_batch_fixed(const sc_sync_worker_t *w);
sc_sync_phase_t sc_sync_after_compute_send(sc_sync_worker_t *w, double now);
int sc_sync_wait_next_version(sc_sync_worker_t *w, sc_sync_act_t *act);
int sc_sync_wait_none(sc_sync_worker_t *w, sc_sync_act_t *act);
/* Asynchronous gradient policies: done once the model holds all but at
 * most spec.max_inflight of this worker's updates (SC_WAIT_APPLIED; always
 * done when the bound is 0). A worker that outruns its own updates (a
 * backlog read faster than the model comes back) would otherwise compute
 * every gradient on the same old model. */
int sc_sync_wait_inflight(sc_sync_worker_t *w, sc_sync_act_t *act);
/* Shared server halves. */
sc_err_t sc_sync_apply_sgd(sc_server_t *srv, const sc_update_t *u, char *errstr,
                           size_t errstr_size);
double sc_sync_weight_one(const sc_update_t *u);

#endif
