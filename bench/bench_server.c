/* bench_server.c — throughput of the shard server: dense asynchronous updates,
 * a bsp round, 1% sparse AdaComp updates with their staleness bookkeeping,
 * and snapshot / restore, on a 1M-parameter shard.
 * Usage: bench_server [PARAMS]  (default 1048576). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sc_rng.h"
#include "sc_server.h"

static double now_s(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static sc_server_t *mk(sc_sync_kind_t kind, size_t n, int nw)
{
        sc_server_spec_t spec;
        sc_server_t *srv;
        char err[256];
        memset(&spec, 0, sizeof(spec));
        sc_sync_spec_defaults(&spec.sync, kind, nw);
        spec.sgd.momentum = 0.9;
        spec.sched.lr = 0.01;
        spec.end = n;
        if (sc_server_new(&srv, &spec, NULL, err, sizeof(err))) {
                fprintf(stderr, "bench_server: %s\n", err);
                exit(1);
        }
        return srv;
}

int main(int argc, char **argv)
{
        size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 1048576, k = n / 100;
        const int nw = 16, reps = 64;
        float *g = malloc(n * sizeof(float)), *sv = malloc(k * sizeof(float));
        uint32_t *perm = malloc(n * sizeof(uint32_t));
        sc_rng_t rng;
        double t0, dt;

        if (!g || !sv || !perm || n < 100)
                return 1;
        sc_rng_seed(&rng, 1);
        for (size_t i = 0; i < n; i++) {
                g[i] = sc_rng_normal(&rng) * 1e-3f;
                perm[i] = (uint32_t)i;
        }
        for (size_t i = 0; i < k; i++)
                sv[i] = g[i];

        /* asp: dense gradient + momentum step per update */
        sc_server_t *srv = mk(SC_SYNC_ASP, n, nw);
        t0 = now_s();
        for (int r = 0; r < reps; r++) {
                sc_update_t u = {.worker = (uint32_t)(r % nw),
                                 .seq = (uint64_t)(r / nw) + 1,
                                 .samples = 64,
                                 .kind = SC_UPDATE_GRAD,
                                 .n = n,
                                 .values = g};
                sc_server_apply(srv, &u, NULL, NULL, 0);
        }
        dt = now_s() - t0;
        printf("asp dense      %8zu params  %8.0f updates/s  %6.2f GB/s of gradient\n", n,
               reps / dt, reps * n * 4.0 / dt / 1e9);
        sc_server_destroy(srv);

        /* bsp: one round of nw dense gradients + one step */
        srv = mk(SC_SYNC_BSP, n, nw);
        t0 = now_s();
        for (int r = 0; r < reps / nw * 4; r++)
                for (int w = 0; w < nw; w++) {
                        sc_update_t u = {.worker = (uint32_t)w,
                                         .seq = (uint64_t)r + 1,
                                         .t_read = (uint64_t)r,
                                         .samples = 64,
                                         .kind = SC_UPDATE_GRAD,
                                         .n = n,
                                         .values = g};
                        sc_server_apply(srv, &u, NULL, NULL, 0);
                }
        dt = now_s() - t0;
        printf("bsp dense      %8zu params  %8.0f updates/s  %6.1f rounds/s (%d workers)\n", n,
               reps * 4 / dt, reps / nw * 4 / dt, nw);
        sc_server_destroy(srv);

        /* adacomp: 1% sparse updates, staleness 0..2*nw, window 1024 */
        srv = mk(SC_SYNC_ADACOMP, n, nw);
        int ada_reps = 2000;
        uint64_t seq[16] = {0};
        t0 = now_s();
        for (int r = 0; r < ada_reps; r++) {
                uint32_t w = (uint32_t)(r % nw);
                uint64_t t = sc_server_version(srv);
                uint64_t d = sc_rng_below(&rng, 2 * nw);
                for (size_t i = 0; i < k; i++) { /* partial shuffle: k distinct indices */
                        size_t j = i + sc_rng_below(&rng, (uint32_t)(n - i));
                        uint32_t tmp = perm[i];
                        perm[i] = perm[j];
                        perm[j] = tmp;
                }
                sc_update_t u = {.worker = w,
                                 .seq = ++seq[w],
                                 .t_read = t > d ? t - d : 0,
                                 .samples = 10,
                                 .kind = SC_UPDATE_GRAD,
                                 .n = n,
                                 .values = sv,
                                 .indices = perm,
                                 .count = k};
                sc_server_apply(srv, &u, NULL, NULL, 0);
        }
        dt = now_s() - t0;
        printf("adacomp 1%%     %8zu params  %8.0f updates/s  (k = %zu, includes the index "
               "shuffle)\n",
               n, ada_reps / dt, k);

        /* snapshot / restore of the adacomp shard (params, velocity, history) */
        uint8_t *snap;
        size_t len;
        t0 = now_s();
        sc_server_snapshot(srv, &snap, &len);
        dt = now_s() - t0;
        sc_server_t *b = mk(SC_SYNC_ADACOMP, n, nw);
        double t1 = now_s();
        int rc = sc_server_restore(b, snap, len, NULL, 0);
        double dr = now_s() - t1;
        printf("snapshot       %8zu params  %8.1f MB  write %.1f ms  restore %.1f ms (%s)\n", n,
               len / 1e6, dt * 1e3, dr * 1e3, rc ? "failed" : "ok");
        free(snap);
        sc_server_destroy(b);
        sc_server_destroy(srv);
        free(g);
        free(sv);
        free(perm);
        return 0;
}
