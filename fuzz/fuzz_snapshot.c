/* fuzz_snapshot.c — libFuzzer target: shard server snapshots as a successor
 * restores them. Input: one selector byte (fuzz_server.h; bit 6 set keeps
 * the stored CRC trailer instead of fixing it), then the snapshot. A restored
 * server's own snapshot must restore into a fresh server and snapshot again
 * to the same bytes. */
#include "fuzz_common.h"
#include "fuzz_server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char why[256];
        if (size < 1)
                return 0;
        uint8_t sel = data[0];
        size_t len = size - 1;
        uint8_t *p = sc_fuzz_copy(data + 1, len);
        sc_server_t *srv = sc_fuzz_server_new(sel), *copy = NULL;
        uint8_t *s1 = NULL, *s2 = NULL;
        size_t n1 = 0, n2 = 0;

        if (!p || !srv)
                goto out;
        if (!(sel & 0x40))
                sc_fuzz_fix_trailer(p, len);
        if (sc_server_restore(srv, p, len, why, sizeof(why)))
                goto out;
        if (sc_server_snapshot(srv, &s1, &n1) || !(copy = sc_fuzz_server_new(sel)))
                goto out;
        sc_err_t err = sc_server_restore(copy, s1, n1, why, sizeof(why));
        SC_FUZZ_ASSERT_OK(err, "restore of a fresh snapshot", why);
        if (sc_server_snapshot(copy, &s2, &n2))
                goto out;
        SC_FUZZ_ASSERT(n1 == n2 && !memcmp(s1, s2, n1));
out:
        free(s1);
        free(s2);
        sc_server_destroy(copy);
        sc_server_destroy(srv);
        free(p);
        return 0;
}

/* ---- seeds: each policy's server, fresh and after a few updates ---- */

static void sc_fuzz_write_seeds(const char *dir)
{
        float g[SC_FUZZ_SHARD];
        uint32_t idx[4] = {1, 5, 9, 40};
        char name[64];

        for (int i = 0; i < SC_FUZZ_SHARD; i++)
                g[i] = 0.05f * (float)((i * 7) % 11) - 0.2f;
        for (int kind = 0; kind < SC_SYNC__END; kind++) {
                for (int steps = 0; steps < 3; steps += 2) {
                        uint8_t sel = (uint8_t)(kind | 0x08 | (steps ? 0x20 : 0));
                        sc_server_t *srv = sc_fuzz_server_new(sel);
                        uint8_t *snap = NULL, *p;
                        size_t len = 0;
                        if (!srv)
                                exit(1);
                        sc_update_kind_t uk = sc_sync_sends_gradients((sc_sync_kind_t)kind)
                                                  ? SC_UPDATE_GRAD
                                                  : SC_UPDATE_DELTA;
                        for (int s = 0; s < steps * 2; s++) {
                                sc_update_t u = {.worker = (uint32_t)(s % 2),
                                                 .seq = (uint64_t)(s / 2 + 1),
                                                 .t_read = sc_server_version(srv),
                                                 .samples = 16,
                                                 .kind = uk,
                                                 .n = SC_FUZZ_SHARD,
                                                 .values = g,
                                                 .indices = s == 1 ? idx : NULL,
                                                 .count = s == 1 ? 4 : 0};
                                sc_server_apply(srv, &u, NULL, NULL, 0);
                        }
                        if (sc_server_snapshot(srv, &snap, &len) || !(p = malloc(len + 1)))
                                exit(1);
                        p[0] = sel;
                        memcpy(p + 1, snap, len);
                        snprintf(name, sizeof(name), "snapshot-%s-%d", sc_sync_kind_name(kind),
                                 steps);
                        sc_fuzz_seed(dir, name, p, len + 1);
                        free(p);
                        free(snap);
                        sc_server_destroy(srv);
                }
        }
}
