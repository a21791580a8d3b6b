/* fuzz_server.h — the shard server the wire and snapshot targets drive: one
 * input byte picks the policy, worker count and optimizer, so every policy's
 * apply and restore paths are reached from the same corpus. */
#ifndef SC_FUZZ_SERVER_H
#define SC_FUZZ_SERVER_H

#include <string.h>

#include "sc_server.h"

#define SC_FUZZ_SHARD 48 /* shard length in floats */

/* sel: bits 0-2 policy (mod SC_SYNC__END), bits 3-4 workers - 1, bit 5
 * momentum. bits 6-7 are the target's own. */
static inline sc_server_t *sc_fuzz_server_new(uint8_t sel)
{
        sc_server_spec_t spec;
        sc_server_t *srv = NULL;

        memset(&spec, 0, sizeof(spec));
        sc_sync_spec_defaults(&spec.sync, (sc_sync_kind_t)((sel & 7) % SC_SYNC__END),
                              1 + ((sel >> 3) & 3));
        spec.sgd.momentum = (sel & 0x20) ? 0.9 : 0.0;
        spec.sched.kind = SC_SCHED_CONSTANT;
        spec.sched.lr = 0.1;
        spec.shard = 0;
        spec.begin = 0;
        spec.end = SC_FUZZ_SHARD;
        if (sc_server_new(&srv, &spec, NULL, NULL, 0))
                return NULL;
        return srv;
}

#endif
