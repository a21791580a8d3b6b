/* sc_sim_spec.h — the simulator's parameters: the "sim" section of a
 * configuration (rows "sim.*" of the property table, core/conf_table.c),
 * embedded in sc_conf_t. The simulator itself is connectors/sim/.
 *
 * Units: seconds of virtual time, samples/s, bytes/s, bytes. */
#ifndef SC_SIM_SPEC_H
#define SC_SIM_SPEC_H

#include <stdint.h>

#include "sc_codec.h"
#include "sc_sync.h"

#define SC_SIM_MAX_DEVICES 1024
#define SC_SIM_MAX_LIST 64
#define SC_SIM_MAX_CHURN 64

/* A device going offline at leave_at (its in-flight messages are lost, the
 * servers mark it not live) and back at rejoin_at (it gets the current model);
 * rejoin_at <= leave_at: never. */
typedef struct sc_sim_churn {
        int device;
        double leave_at, rejoin_at;
} sc_sim_churn_t;

typedef enum sc_sim_rates {
        SC_SIM_RATES_CONSTANT, /* every device: rate */
        SC_SIM_RATES_LIST,     /* device i: rate_list[i % n] */
        SC_SIM_RATES_S1,       /* uniform, mean 38, sd 24 (ScaDLES S1) */
        SC_SIM_RATES_S2,       /* uniform, mean 300, sd 112 */
        SC_SIM_RATES_S10,      /* normal, mean 64, sd 24 */
        SC_SIM_RATES_S20,      /* normal, mean 256, sd 28 */
} sc_sim_rates_t;

typedef struct sc_sim_spec {
        int devices;
        int shards;              /* model shards, each with its own server (1) */
        uint64_t seed;           /* 0 = train.seed of the main configuration */
        sc_sync_spec_t sync;     /* sync.policy and its parameters */
        int tune;                /* adsp: search the commit rate online */
        double target_loss;      /* adsp tuner target (training loss) */
        double research_every;   /* adsp tuner: seconds from one search's end to the next */
        double adacomm_interval; /* localsgd: ADACOMM's interval T0 in seconds; 0 = fixed tau */
        double local_lr;         /* adsp / localsgd local steps; 0 = optim.lr */
        double local_mu;         /* their momentum (sim.local_momentum); 0 = plain SGD */
        sc_codec_id_t codec;     /* gradient / delta codec */
        double codec_ratio;      /* 0 = the codec's default */
        double codec_delta;      /* adaptive: 0 = default (0.3) */
        int codec_vote;          /* adaptive: all devices follow the majority vote */
        int codec_half;          /* sparse codecs: values as IEEE half (2 bytes) */
        int codec_log8;          /* sparse codecs: values as 8-bit log codes (1 byte) */
        int codec_rice;          /* sparse codecs: Rice-coded index gaps when smallest */
        int downlink_bcast;      /* models go to the devices as the model broadcast
                                    (core/bcast.c: job.downlink deltas of the view,
                                    keyframes every job.keyframe_interval); 0 = whole shards */
        int async_pull;          /* asp / adacomp: after a send, wait for the server's reply
                                    and compute the next batch on it (pull - compute - push) */
        sc_sim_rates_t rates;    /* stream rates */
        double rate;             /* constant rate, samples/s */
        double rate_list[SC_SIM_MAX_LIST];
        int n_rates;
        double min_rate;         /* S sets redraw below this, others clamp (1) */
        int truncation;          /* buffer policy: 1 = keep one window, drop the rest */
        int scadles_drain;       /* scadles: take everything buffered at each window end (reference
                                    code) instead of b_i = S_i * window */
        double buffer_window;    /* truncation window, seconds (1) */
        int labels_per_device;   /* 0 = IID; k = non-IID with k labels per device */
        double inject_alpha;     /* data injection: fraction of devices sharing per step */
        double inject_beta;      /* fraction of a batch shared / mixed in */
        int inject_draw;         /* sc_mix_draw_t: how mixed-in samples are drawn */
        double per_sample;       /* compute seconds per sample of the fastest device */
        double heterogeneity;    /* slowest device is this many times slower (>= 1) */
        double step_overhead;    /* seconds per step besides the samples */
        double up_bps, down_bps; /* per-device uplink / downlink bytes/s */
        double latency;          /* one-way seconds */
        /* Edge links and the server's costs (0 = off): each device's up and
         * downlink drawn log-uniformly in [up_bps, up_bps_max] and
         * [down_bps, down_bps_max], its latency uniformly in [latency,
         * latency_max]; every update crosses the server's ingress link
         * (server_ingress_bps, FIFO) and waits for the server to decode and
         * apply it (apply_rate coordinates/s, one at a time); a device's
         * encoder takes encode_rate gradient coordinates/s. */
        double up_bps_max, down_bps_max, latency_max;
        double server_ingress_bps, apply_rate, encode_rate;
        double max_time;                        /* stop at this virtual time */
        long max_steps;                         /* stop at this server version; 0 = no limit */
        double target_acc;                      /* stop when test accuracy reaches it; 0 = never */
        sc_sim_churn_t churn[SC_SIM_MAX_CHURN]; /* devices leaving / rejoining */
        int n_churn;
        double eval_every; /* seconds between metric lines */
        int eval_samples;  /* test samples per evaluation; 0 = all */
} sc_sim_spec_t;

#endif
