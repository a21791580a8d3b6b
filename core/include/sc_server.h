/* sc_server.h — the aggregation of one model shard: applies updates per sync
 * policy exactly once per (worker, seq), holds the optimizer state, a version
 * counter, membership and per-worker clocks, and snapshots everything to bytes
 * so a successor can restore it and replay the updates after it. Sans-I/O. */
#ifndef SC_SERVER_H
#define SC_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "sc_err.h"
#include "sc_optim.h"

struct sc_wire_update;
#include "sc_sync.h"

/* Aggregation of a round's updates (round policies). */
typedef enum sc_robust_kind {
        SC_ROBUST_NONE = 0,    /* the policy's weighted mean */
        SC_ROBUST_TRIMMED = 1, /* coordinate-wise mean after dropping the trim fraction of
                                  the lowest and of the highest values */
        SC_ROBUST_MEDIAN = 2,  /* coordinate-wise median */
} sc_robust_kind_t;

/* What one update may do to a shard (all zero: no limits). */
typedef struct sc_server_limits {
        uint64_t seq_window;   /* refuse an update this many seqs or more ahead of the worker's
                                  lowest unapplied seq (SC_APPLY_AHEAD); 0 = no window */
        double max_norm;       /* L2 norm limit of one update (a full model: of its difference
                                  to the shard); 0 = none */
        int clip;              /* 1: scale an update over max_norm down to it; 0: refuse it */
        double norm_factor;    /* scale an update whose norm is over this times the median of
                                  the last updates' down to it (after a warm-up); 0 = off */
        double max_abs;        /* a step leaving a parameter larger than this in magnitude is
                                  undone (job.limits.model_max_abs, which workers enforce
                                  on what they install); 0 = only finite */
        double samples_factor; /* scadles: bound a worker's claimed samples to this times
                                  the median of its last claims (after a warm-up); 0 = off */
        int robust;            /* sc_robust_kind_t; round policies only (unweighted; the
                                  scadles LR scales with k x the same statistic of the k
                                  contributors' samples, not their sum) */
        double trim;           /* trimmed: fraction dropped at each end, [0, 0.5) */
} sc_server_limits_t;

typedef struct sc_server_spec {
        sc_sync_spec_t sync;   /* policy (checked and defaulted by sc_server_new) */
        sc_sgd_spec_t sgd;     /* server optimizer for gradient policies */
        sc_sched_spec_t sched; /* LR schedule, stepped by the server's version */
        uint32_t shard;        /* shard id (informational, kept in snapshots) */
        size_t begin, end;     /* the shard's range of the flat parameter buffer */
        sc_server_limits_t limits;
} sc_server_spec_t;

typedef struct sc_server_s sc_server_t;

typedef enum sc_apply_status {
        SC_APPLY_APPLIED,   /* the update changed the shard (or joined its round) */
        SC_APPLY_DUPLICATE, /* (worker, seq) was applied before: ignored */
        SC_APPLY_STALE,     /* round policies: the worker's second update of the round, or
                               one more than sync.late_rounds versions behind; consumed (its
                               seq is marked applied) but not aggregated; errstr says why */
        SC_APPLY_REJECTED,  /* refused by the limits (a non-finite value, samples over b_max,
                               norm over max_norm without clip, a step that would make the
                               shard non-finite):
                               consumed (seq marked; in a round it is the worker's turn,
                               unless it was late) but nothing changed; errstr says why */
        SC_APPLY_AHEAD,     /* seq limits.seq_window or more ahead: refused, not marked,
                               nothing changed; errstr says why */
} sc_apply_status_t;

typedef struct sc_apply_result {
        sc_apply_status_t status;
        int stepped;     /* the version advanced (a round closed / async step) */
        uint64_t gap;    /* seqs of this worker still missing below this one */
        uint64_t lost;   /* seqs given up as lost (more than 64 ahead) */
        int clipped;     /* the update was scaled down to limits.max_norm */
        int rolled_back; /* the round it closed was undone (non-finite step) */
        int late;        /* a round update computed on an older version, added to the
                            current round beside the worker's own update for it */
} sc_apply_result_t;

typedef struct sc_server_stats {
        uint64_t applied;    /* updates aggregated */
        uint64_t duplicates; /* ignored duplicates */
        uint64_t stale;      /* consumed stale updates (round policies: a worker's second
                                update of a round, or more than sync.late_rounds behind) */
        uint64_t gaps;       /* updates that arrived with lower seqs missing */
        uint64_t lost;       /* seqs skipped as lost */
        uint64_t steps;      /* version advances */
        /* not kept in snapshots (counted by this process): */
        uint64_t rejected;    /* SC_APPLY_REJECTED */
        uint64_t ahead;       /* SC_APPLY_AHEAD */
        uint64_t clipped;     /* updates scaled down to max_norm */
        uint64_t rolled_back; /* round steps undone because the shard became non-finite */
} sc_server_stats_t;

/* Creates the server for spec's shard; init (end - begin floats, or NULL for
 * zeros) is copied. All workers start live. */
sc_err_t sc_server_new(sc_server_t **srvp, const sc_server_spec_t *spec, const float *init,
                       char *errstr, size_t errstr_size);
void sc_server_destroy(sc_server_t *srv);

/* Applies u once. Errors (nothing changes): SC_ERR_INVAL for a bad worker id,
 * seq 0, a wrong shard length, out-of-range indices or a kind the policy
 * does not take; SC_ERR_STATE for a round update from the
 * future. SC_OK with res->status SC_APPLY_REJECTED or SC_APPLY_AHEAD (errstr
 * filled) for updates the limits refuse. A step (async update or round) that
 * would leave a parameter or the optimizer state non-finite is undone: an
 * async update is then SC_APPLY_REJECTED, a round closes without changing
 * the parameters (res->rolled_back). An update from a worker marked not live
 * makes it live again. res may be NULL. */
sc_err_t sc_server_apply(sc_server_t *srv, const sc_update_t *u, sc_apply_result_t *res,
                         char *errstr, size_t errstr_size);
/* The update a wire message carries, for a shard of n floats: checks that
 * its codec payload is of n floats, then decodes a sparse payload into idx
 * and val (n entries each) and a dense one into dense (n floats, zeroed
 * first); u's indices/values point into those buffers. SC_ERR_INVAL (errstr
 * filled) for a payload that does not decode or is of another length. */
sc_err_t sc_server_update_decode(const struct sc_wire_update *wu, size_t n, uint32_t *idx,
                                 float *val, float *dense, sc_update_t *u, char *errstr,
                                 size_t errstr_size);
/* Membership: a worker leaving can close a round (res->stepped). */
sc_err_t sc_server_set_live(sc_server_t *srv, uint32_t worker, int live, sc_apply_result_t *res);
/* Round policies: worker sent an update refused before the server saw it
 * (one that does not verify as an update, or refused as ahead: the caller
 * knows it is the worker's): it takes the worker's turn in the open round,
 * unless the worker had its turn, so a worker that sends only refused
 * updates cannot hold rounds. Returns 1 (res->stepped) if that closed the
 * round; 0 and nothing changed for other policies. res may be NULL. */
int sc_server_refused_turn(sc_server_t *srv, uint32_t worker, sc_apply_result_t *res);
/* Turns taken in the open round (0 for other policies). */
int sc_server_round_turns(const sc_server_t *srv);
/* Round policies: closes the open round at once with the turns it has (the
 * caller's round timeout), when at least one was taken and a live worker's
 * is missing; the missing workers go to missing (up to max; *nmissing gets
 * their count). Returns 1 (res->stepped) if it closed one. The workers stay
 * live: the next round waits for them again. */
int sc_server_round_close_now(sc_server_t *srv, uint32_t *missing, int max, int *nmissing,
                              sc_apply_result_t *res);
/* 1 if the rounds wait for worker (set live), 0 if not or not a worker. */
int sc_server_live(const sc_server_t *srv, uint32_t worker);

size_t sc_server_len(const sc_server_t *srv);
const float *sc_server_params(const sc_server_t *srv); /* (end - begin) */
uint64_t sc_server_version(const sc_server_t *srv);
/* Highest seq of worker below which every seq was applied (0 = none). */
uint64_t sc_server_applied_seq(const sc_server_t *srv, uint32_t worker);
/* Slowest live worker's clock (updates applied from it); 0 if none live. */
uint64_t sc_server_min_clock(const sc_server_t *srv);
/* What a model message to worker should carry. */
void sc_server_model_info(const sc_server_t *srv, uint32_t worker, sc_sync_model_info_t *info);
void sc_server_stats(const sc_server_t *srv, sc_server_stats_t *stats);
/* 1 if the parameters and the optimizer state are all finite (always, by
 * sc_server_apply() and sc_server_restore(); checked before publication). */
int sc_server_is_finite(const sc_server_t *srv);
const sc_server_spec_t *sc_server_spec(const sc_server_t *srv);

/* Snapshot: params, optimizer state, round accumulator, version, membership,
 * clocks, applied-seq windows and the AdaComp history, little-endian with a
 * CRC32C trailer. *bufp is malloc'd; the caller frees it. */
sc_err_t sc_server_snapshot(const sc_server_t *srv, uint8_t **bufp, size_t *lenp);
/* Restores a snapshot into a server created with the same spec (policy,
 * shard range, worker count); SC_ERR_CORRUPT / SC_ERR_VERSION / SC_ERR_INVAL
 * with errstr on mismatch, leaving srv unchanged. */
sc_err_t sc_server_restore(sc_server_t *srv, const uint8_t *buf, size_t len, char *errstr,
                           size_t errstr_size);

#endif
