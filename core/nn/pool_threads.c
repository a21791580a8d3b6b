/* pool_threads.c — the compute threads of core/nn: a small pool per model
 * that runs the parts of one operation (the row or column blocks of a gemm)
 * on the calling thread and threads - 1 workers.
 *
 * A job is n parts with a function and its argument. The caller publishes
 * it and claims parts like any worker, so a worker that is slow to wake (a
 * loaded machine) only means the caller runs more parts itself; the caller
 * then waits for the parts other threads claimed. Every part writes its own
 * outputs and is computed the same way whoever runs it, so results do not
 * depend on which thread ran what.
 *
 * Hand-off: the job word `next` packs (generation, parts, next part); a
 * part is claimed by a compare-and-swap on it, so a worker never runs a
 * part of a job that has finished. Workers spin on `seq` for a short while
 * after each job (steps call gemms back to back) and then sleep on a
 * condition variable; the caller signals it only when someone sleeps.
 *
 * On a busy machine a worker is often not on a core when a job comes, and
 * a runnable worker halves the CPU share the scheduler gives the caller:
 * after a window of jobs the workers mostly missed, the pool runs jobs on
 * the caller alone for a while (workers asleep) and then tries again. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "nn_impl.h"
#include "sc_alloc.h"

/* Pause iterations a worker spins for the next job before sleeping, and
 * the caller spins for claimed parts before yielding its time slice (about
 * 0.2 ms and 50 us at the ~26 ns a pause takes on a Xeon of 2023). */
#define SC_POOL_SPIN_WORKER 8000
#define SC_POOL_SPIN_CALLER 2000

/* Busy machine: jobs are judged in windows of SC_POOL_WINDOW; when workers
 * took no part in more than SC_POOL_MISSES of them (they were not on a
 * core), the next `backoff` jobs run on the caller alone (the workers go to
 * sleep and stop taking the process's CPU share), backoff doubling up to
 * SC_POOL_BACKOFF_MAX while the machine stays busy. */
#define SC_POOL_WINDOW 16
#ifndef SC_POOL_MISSES
#define SC_POOL_MISSES 4
#endif
#define SC_POOL_BACKOFF_MIN 64
#define SC_POOL_BACKOFF_MAX 4096

struct sc_nn_pool {
        int threads; /* including the caller */
        int started; /* workers running */
        pthread_t tid[SC_NN_POOL_MAX - 1];
        /* The current job: written by the caller before `next` publishes it,
         * read by a worker after it claimed a part of it. */
        sc_nn_task_fn fn;
        void *ctx;
        uint32_t gen;
        _Atomic uint64_t next; /* gen << 32 | parts << 16 | next part */
        _Atomic int done;      /* parts finished by workers */
        _Atomic uint32_t seq;  /* generation the workers wait on */
        _Atomic int sleepers;
        _Atomic int stop;
        _Atomic long worker_parts; /* parts run by workers, ever */
        int window, misses;        /* jobs published in this window, unhelped */
        int serial_left, backoff;  /* jobs still to run alone, next backoff */
        long serial_jobs;          /* jobs run alone by that rule, ever */
        pthread_mutex_t mu;
        pthread_cond_t cv;
};

static _Atomic int sc_pool_live; /* worker threads alive, process-wide */
static _Thread_local sc_nn_pool_t *sc_pool_cur;

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
}

/* Claims the next part of the job published in `next`; -1 when none is left. */
static int claim(sc_nn_pool_t *p)
{
        uint64_t v = atomic_load_explicit(&p->next, memory_order_acquire);

        for (;;) {
                int parts = (int)((v >> 16) & 0xffff), i = (int)(v & 0xffff);
                if (i >= parts)
                        return -1;
                if (atomic_compare_exchange_weak_explicit(&p->next, &v, v + 1, memory_order_acq_rel,
                                                          memory_order_acquire))
                        return i;
        }
}

static void *worker(void *arg)
{
        sc_nn_pool_t *p = arg;
        uint32_t seen = 0; /* workers start before the first job is published */

        for (;;) {
                int spins = 0;
                while (atomic_load_explicit(&p->seq, memory_order_acquire) == seen &&
                       spins++ < SC_POOL_SPIN_WORKER)
                        cpu_relax();
                if (atomic_load_explicit(&p->seq, memory_order_acquire) == seen) {
                        pthread_mutex_lock(&p->mu);
                        atomic_fetch_add(&p->sleepers, 1);
                        while (atomic_load(&p->seq) == seen && !atomic_load(&p->stop))
                                pthread_cond_wait(&p->cv, &p->mu);
                        atomic_fetch_sub(&p->sleepers, 1);
                        pthread_mutex_unlock(&p->mu);
                }
                if (atomic_load(&p->stop))
                        break;
                seen = atomic_load_explicit(&p->seq, memory_order_acquire);
                int i;
                while ((i = claim(p)) >= 0) {
                        p->fn(p->ctx, i);
                        atomic_fetch_add_explicit(&p->worker_parts, 1, memory_order_relaxed);
                        atomic_fetch_add_explicit(&p->done, 1, memory_order_release);
                }
        }
        return NULL;
}

sc_nn_pool_t *sc_nn_pool_new(int threads)
{
        if (threads < 2)
                return NULL;
        if (threads > SC_NN_POOL_MAX)
                threads = SC_NN_POOL_MAX;
        sc_nn_pool_t *p = sc_calloc(1, sizeof(*p));
        if (!p)
                return NULL;
        p->threads = threads;
        if (pthread_mutex_init(&p->mu, NULL)) {
                sc_free(p);
                return NULL;
        }
        if (pthread_cond_init(&p->cv, NULL)) {
                pthread_mutex_destroy(&p->mu);
                sc_free(p);
                return NULL;
        }
        return p;
}

/* Starts the workers on first use; 0 if none could be started. */
static int pool_start(sc_nn_pool_t *p)
{
        if (p->started)
                return p->started;
        for (int t = 0; t < p->threads - 1; t++) {
                if (pthread_create(&p->tid[t], NULL, worker, p))
                        break;
                p->started++;
                atomic_fetch_add(&sc_pool_live, 1);
        }
        if (!p->started)
                p->threads = 1; /* no worker: run everything on the caller */
        return p->started;
}

void sc_nn_pool_free(sc_nn_pool_t *p)
{
        if (!p)
                return;
        pthread_mutex_lock(&p->mu);
        atomic_store(&p->stop, 1);
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
        for (int t = 0; t < p->started; t++) {
                pthread_join(p->tid[t], NULL);
                atomic_fetch_sub(&sc_pool_live, 1);
        }
        pthread_cond_destroy(&p->cv);
        pthread_mutex_destroy(&p->mu);
        sc_free(p);
}

int sc_nn_pool_threads(const sc_nn_pool_t *p)
{
        return p ? p->threads : 1;
}

long sc_nn_pool_worker_parts(const sc_nn_pool_t *p)
{
        return p ? atomic_load(&p->worker_parts) : 0;
}

int sc_nn_pool_live(void)
{
        return atomic_load(&sc_pool_live);
}

void sc_nn_pool_run(sc_nn_pool_t *p, int n, sc_nn_task_fn fn, void *ctx)
{
        if (n <= 0)
                return;
        if (p && p->serial_left > 0 && n > 1) {
                p->serial_left--;
                p->serial_jobs++;
                p = NULL;
        }
        if (!p || n == 1 || n > 0xffff || p->threads < 2 || !pool_start(p)) {
                for (int i = 0; i < n; i++)
                        fn(ctx, i);
                return;
        }
        p->fn = fn;
        p->ctx = ctx;
        p->gen++;
        atomic_store_explicit(&p->done, 0, memory_order_relaxed);
        atomic_store_explicit(&p->next, (uint64_t)p->gen << 32 | (uint64_t)n << 16,
                              memory_order_release);
        atomic_store(&p->seq, p->gen);
        if (atomic_load(&p->sleepers) > 0) {
                pthread_mutex_lock(&p->mu);
                pthread_cond_broadcast(&p->cv);
                pthread_mutex_unlock(&p->mu);
        }
        int i, mine = 0;
        while ((i = claim(p)) >= 0) {
                fn(ctx, i);
                mine++;
        }
        int spins = 0;
        while (atomic_load_explicit(&p->done, memory_order_acquire) < n - mine) {
                if (spins++ < SC_POOL_SPIN_CALLER)
                        cpu_relax();
                else
                        sched_yield();
        }
        p->misses += mine == n;
        if (++p->window == SC_POOL_WINDOW) {
                if (p->misses > SC_POOL_MISSES) {
                        p->serial_left = p->backoff ? p->backoff : SC_POOL_BACKOFF_MIN;
                        p->backoff = p->serial_left < SC_POOL_BACKOFF_MAX / 2 ? 2 * p->serial_left
                                                                              : SC_POOL_BACKOFF_MAX;
                } else {
                        p->backoff = 0;
                }
                p->window = p->misses = 0;
        }
}

long sc_nn_pool_serial_jobs(const sc_nn_pool_t *p)
{
        return p ? p->serial_jobs : 0;
}

sc_nn_pool_t *sc_nn_pool_enter(sc_nn_pool_t *p)
{
        sc_nn_pool_t *prev = sc_pool_cur;
        sc_pool_cur = p;
        return prev;
}

int sc_nn_parallel_threads(void)
{
        return sc_nn_pool_threads(sc_pool_cur);
}

void sc_nn_parallel(int n, sc_nn_task_fn fn, void *ctx)
{
        sc_nn_pool_t *p = sc_pool_cur;

        /* A part that itself asks for parallel work runs it inline. */
        sc_pool_cur = NULL;
        sc_nn_pool_run(p, n, fn, ctx);
        sc_pool_cur = p;
}
