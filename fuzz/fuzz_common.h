/* fuzz_common.h — shared parts of the libFuzzer targets: seed files written
 * by the library's own encoders (SC_FUZZ_SEEDS=DIR makes a target write its
 * seeds there and exit), CRC32C fix-ups so mutations reach the decoders
 * behind a checksum. */
#ifndef SC_FUZZ_COMMON_H
#define SC_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sc_buf.h"
#include "sc_crc32c.h"
#include "sc_err.h"
#include "sc_le.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* A property the target checks failed: abort so libFuzzer keeps the input. */
#define SC_FUZZ_ASSERT(cond)                                                                       \
        do {                                                                                       \
                if (!(cond)) {                                                                     \
                        fprintf(stderr, "%s:%d: fuzz property failed: %s\n", __FILE__, __LINE__,   \
                                #cond);                                                            \
                        abort();                                                                   \
                }                                                                                  \
        } while (0)

/* err must be SC_OK; otherwise print what and why, and abort. */
#define SC_FUZZ_ASSERT_OK(err, what, why)                                                          \
        do {                                                                                       \
                if ((err) != SC_OK)                                                                \
                        fprintf(stderr, "%s: %s\n", (what), (why));                                \
                SC_FUZZ_ASSERT((err) == SC_OK);                                                    \
        } while (0)

/* An exact-size private copy of n bytes (so ASan sees any read past them);
 * NULL if out of memory. */
static inline uint8_t *sc_fuzz_copy(const uint8_t *data, size_t n)
{
        uint8_t *p = malloc(n ? n : 1);
        if (p && n)
                memcpy(p, data, n);
        return p;
}

/* Rewrites the CRC32C trailer (last 4 bytes, over every byte before them). */
static inline void sc_fuzz_fix_trailer(uint8_t *p, size_t len)
{
        if (len >= 4)
                sc_le_put32(p + len - 4, sc_crc32c(0, p, len - 4));
}

/* Writes n bytes to DIR/name; exits on failure (seed generation only). */
static inline void sc_fuzz_seed(const char *dir, const char *name, const void *data, size_t n)
{
        char path[1024];
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(data, 1, n, f) != n || fclose(f)) {
                fprintf(stderr, "fuzz seeds: cannot write %s\n", path);
                exit(1);
        }
}

/* The seed writer a target defines; called with SC_FUZZ_SEEDS's folder. */
static void sc_fuzz_write_seeds(const char *dir);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
        const char *dir = getenv("SC_FUZZ_SEEDS");
        (void)argc;
        (void)argv;
        if (dir && *dir) {
                sc_fuzz_write_seeds(dir);
                exit(0);
        }
        return 0;
}

#endif
