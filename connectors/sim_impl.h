/* sim_impl.h — the simulator's parts: the virtual-clock event queue, the
 * in-memory bus links, and the device model (stream arrivals, buffer policy,
 * data partition, data injection). Internal to connectors/sim_*.c. */
#ifndef SC_SIM_IMPL_H
#define SC_SIM_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "sc_rng.h"
#include "sc_sim.h"

/* ---- event queue: a binary heap ordered by (time, insertion number) ---- */

typedef struct sc_sim_event {
        double t;
        uint64_t seq; /* ties at equal t run in insertion order: deterministic */
        int type;
        int dev;
        void *ptr; /* owned by the event until it is popped */
} sc_sim_event_t;

typedef struct sc_sim_queue {
        sc_sim_event_t *ev;
        size_t n, cap;
        uint64_t next_seq;
} sc_sim_queue_t;

sc_err_t sc_sim_queue_push(sc_sim_queue_t *q, double t, int type, int dev, void *ptr);
/* Pops the earliest event into *ev; returns 0 when empty. */
int sc_sim_queue_pop(sc_sim_queue_t *q, sc_sim_event_t *ev);
/* Frees the heap; ptrs still queued are released with free_ptr (may be NULL). */
void sc_sim_queue_free(sc_sim_queue_t *q, void (*free_ptr)(int type, void *ptr));

/* ---- a one-way link: FIFO transmission at bps, then latency ---- */

typedef struct sc_sim_link {
        double bps;
        double latency;
        double free_at; /* the link is busy transmitting until then */
        uint64_t bytes;
} sc_sim_link_t;

/* Sends bytes at time now; returns the arrival time at the other end. */
double sc_sim_link_send(sc_sim_link_t *link, double now, size_t bytes);

/* ---- data injection pool: samples shared by devices ---- */

typedef struct sc_sim_inject {
        uint32_t *idx; /* dataset indices */
        int *from;     /* sharing device */
        size_t cap, n, head;
} sc_sim_inject_t;

sc_err_t sc_sim_inject_init(sc_sim_inject_t *pool, size_t cap);
void sc_sim_inject_free(sc_sim_inject_t *pool);
void sc_sim_inject_put(sc_sim_inject_t *pool, uint32_t idx, int from);
/* A random pooled sample not shared by device `not_from`; returns 0 if none
 * was found in a few draws. */
int sc_sim_inject_draw(sc_sim_inject_t *pool, sc_rng_t *rng, int not_from, uint32_t *idx);

/* ---- device stream and buffer ---- */

typedef struct sc_sim_stream {
        double rate;       /* samples/s, constant */
        double last_t;     /* arrivals are counted up to here */
        uint64_t buffered; /* samples waiting to be trained on */
        uint64_t arrived;  /* all arrivals */
        uint64_t dropped;  /* truncation drops */
        uint64_t peak;     /* largest buffered */
        int truncation;
        double window;        /* truncation keeps ceil(rate * window) */
        const uint32_t *pool; /* dataset indices this device's stream draws from */
        size_t pool_n;
} sc_sim_stream_t;

/* Counts the arrivals up to t and applies the buffer policy. */
void sc_sim_stream_advance(sc_sim_stream_t *s, double t);
/* Earliest time >= now at which `want` samples are buffered (now if already). */
double sc_sim_stream_ready_at(const sc_sim_stream_t *s, double now, uint64_t want);
/* Takes n buffered samples (n <= buffered), drawing their dataset indices. */
void sc_sim_stream_take(sc_sim_stream_t *s, sc_rng_t *rng, size_t n, uint32_t *idx);

/* Device i's stream rate under spec (draws from rng for the S sets). */
double sc_sim_draw_rate(const sc_sim_spec_t *spec, int i, sc_rng_t *rng);

#endif
