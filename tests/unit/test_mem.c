/* test_mem.c — when sc_mem_give_back trims, that a trim hands fragmented
 * free memory back to the system, what sc_mem_heap counts, and what
 * sc_mem_tune sets (glibc's
 * allocator; not under AddressSanitizer or ThreadSanitizer, whose
 * allocators replace it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "sc_mem.h"

/* glibc's own allocator: not replaced by a sanitizer's (GCC and newer
 * clang define __SANITIZE_*__, older clang only answers __has_feature). */
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SC_TEST_SANITIZER_HEAP 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SC_TEST_SANITIZER_HEAP 1
#endif
#if defined(__GLIBC__) && !defined(SC_TEST_SANITIZER_HEAP)
#define SC_TEST_GLIBC_HEAP 1
#else
#define SC_TEST_GLIBC_HEAP 0
#endif

static void trims_on_freed_rows_and_once_a_minute(void **state)
{
        sc_mem_trim_t m = {0};
        double t = 1000.0;
        assert_true(sc_mem_look_due(&m, t));
        assert_int_equal(sc_mem_give_back(&m, 0, t), 1); /* the first look trims */
        assert_false(sc_mem_look_due(&m, t + 1));
        assert_int_equal(sc_mem_give_back(&m, 3, t + 1), 0);             /* within SC_MEM_LOOK_S */
        assert_int_equal(sc_mem_give_back(&m, 3, t + SC_MEM_LOOK_S), 1); /* rows freed */
        t += SC_MEM_LOOK_S;
        /* Nothing freed: a look every SC_MEM_LOOK_S, a trim only once
         * SC_MEM_TRIM_S passed since the last. */
        int trims = 0;
        for (double u = t + SC_MEM_LOOK_S; u < t + SC_MEM_TRIM_S; u += SC_MEM_LOOK_S)
                trims += sc_mem_give_back(&m, 3, u);
        assert_int_equal(trims, 0);
        assert_int_equal(sc_mem_give_back(&m, 3, t + SC_MEM_TRIM_S), 1);
        assert_int_equal(sc_mem_give_back(&m, 4, t + SC_MEM_TRIM_S + SC_MEM_LOOK_S), 1);
        assert_int_equal(m.trims, 4);
        assert_int_equal(m.freed_seen, 4);
}

/* A clock that starts at 0 (a simulated one) trims once at its start, not
 * at every call until it moves. */
static void a_clock_from_zero(void **state)
{
        sc_mem_trim_t m = {0};
        assert_int_equal(sc_mem_give_back(&m, 0, 0.0), 1);
        assert_int_equal(sc_mem_give_back(&m, 0, 0.0), 0);
        assert_int_equal(sc_mem_give_back(&m, 0, 1e-4), 0);
        assert_int_equal(sc_mem_give_back(&m, 0, SC_MEM_LOOK_S), 0);
        assert_int_equal(sc_mem_give_back(&m, 0, SC_MEM_TRIM_S), 1);
        assert_int_equal(m.trims, 2);
}

#if SC_TEST_GLIBC_HEAP
static long rss_kib(void)
{
        long pages = 0, resident = 0;
        FILE *f = fopen("/proc/self/statm", "r");
        if (!f)
                return -1;
        int ok = fscanf(f, "%ld %ld", &pages, &resident) == 2;
        fclose(f);
        return ok ? resident * (sysconf(_SC_PAGESIZE) / 1024) : -1;
}

/* 64 MiB in 4 KiB blocks, every 64th kept: glibc cannot shrink its heap
 * past the kept blocks, and keeps the free pages between them resident
 * until a trim. */
static void trim_hands_back_fragmented_memory(void **state)
{
        enum { N = 16384, SZ = 4096 };
        char **blocks = calloc(N, sizeof(*blocks));
        assert_non_null(blocks);
        for (int i = 0; i < N; i++) {
                blocks[i] = malloc(SZ);
                assert_non_null(blocks[i]);
                for (int k = 0; k < SZ; k += 512)
                        blocks[i][k] = (char)i; /* resident */
        }
        for (int i = 0; i < N; i++)
                if (i % 64) {
                        free(blocks[i]);
                        blocks[i] = NULL;
                }
        long before = rss_kib();
        sc_mem_trim_t m = {0};
        assert_int_equal(sc_mem_give_back(&m, 1, 1.0), 1);
        long after = rss_kib();
        print_message("resident: %ld KiB before the trim, %ld KiB after\n", before, after);
        assert_true(before > 0 && after > 0);
        assert_true(before - after > 32 * 1024); /* most of the 63 MiB freed */
        for (int i = 0; i < N; i++)
                free(blocks[i]);
        free(blocks);
}

/* sc_mem_heap counts what is handed out and what the arenas hold free:
 * 64 MiB of 4 KiB blocks in use, then 63 of every 64 freed (kept in the
 * arenas: the kept blocks pin them). */
static void heap_counts_in_use_and_free(void **state)
{
        (void)state;
        enum { N = 16384, SZ = 4096 };
        uint64_t use0, free0, use1, free1, use2, free2;
        assert_int_equal(sc_mem_heap(&use0, &free0), 0);
        char **blocks = calloc(N, sizeof(*blocks));
        assert_non_null(blocks);
        for (int i = 0; i < N; i++) {
                blocks[i] = malloc(SZ);
                assert_non_null(blocks[i]);
                blocks[i][0] = (char)i;
        }
        assert_int_equal(sc_mem_heap(&use1, &free1), 0);
        for (int i = 0; i < N; i++)
                if (i % 64) {
                        free(blocks[i]);
                        blocks[i] = NULL;
                }
        assert_int_equal(sc_mem_heap(&use2, &free2), 0);
        print_message("heap in use: %llu KiB, %llu KiB with the blocks, %llu KiB after "
                      "freeing 63/64 (free in the arenas: %llu KiB)\n",
                      (unsigned long long)(use0 / 1024), (unsigned long long)(use1 / 1024),
                      (unsigned long long)(use2 / 1024), (unsigned long long)(free2 / 1024));
        assert_true(use1 >= use0 + (uint64_t)N * SZ);
        assert_true(use1 - use2 >= (uint64_t)N / 64 * 63 * SZ);
        /* (the last freed run borders the top of the heap and may be
         * trimmed with it) */
        assert_true(free2 >= (uint64_t)N / 64 * 62 * SZ);
        for (int i = 0; i < N; i++)
                free(blocks[i]);
        free(blocks);
}
#endif

/* The variables that set glibc's allocator, saved and cleared for a test
 * and restored after it (a caller's own settings stay theirs). */
static const char *const sc_test_alloc_env[] = {"GLIBC_TUNABLES", "MALLOC_ARENA_MAX",
                                                "MALLOC_MMAP_THRESHOLD_"};
enum { SC_TEST_NENV = sizeof(sc_test_alloc_env) / sizeof(sc_test_alloc_env[0]) };

static void env_save(char *saved[SC_TEST_NENV])
{
        for (int i = 0; i < SC_TEST_NENV; i++) {
                const char *v = getenv(sc_test_alloc_env[i]);
                saved[i] = v ? strdup(v) : NULL;
                unsetenv(sc_test_alloc_env[i]);
        }
}

static void env_restore(char *saved[SC_TEST_NENV])
{
        for (int i = 0; i < SC_TEST_NENV; i++) {
                if (saved[i])
                        setenv(sc_test_alloc_env[i], saved[i], 1);
                else
                        unsetenv(sc_test_alloc_env[i]);
                free(saved[i]);
        }
}

/* An allocator the environment sets is left as it is. */
static void tune_leaves_a_set_environment_alone(void **state)
{
        (void)state;
        char *saved[SC_TEST_NENV];
        env_save(saved);
        for (int i = 0; i < SC_TEST_NENV; i++) {
                setenv(sc_test_alloc_env[i], i ? "4" : "glibc.malloc.mmap_threshold=65536", 1);
                assert_int_equal(sc_mem_tune(), 0);
                unsetenv(sc_test_alloc_env[i]);
        }
        env_restore(saved);
}

#if SC_TEST_GLIBC_HEAP && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
/* A large block freed leaves the threshold where it was: the next one is
 * mapped on its own again (glibc's own rule would raise the threshold to
 * the freed block's size and carve the next one from the top of the heap).
 * The block is larger than all the free memory the heaps hold, which would
 * serve it first, and smaller than the highest threshold glibc's rule
 * goes to (32 MiB), so the test tells the two apart. Tunables that are
 * not the allocator's are no setting of it. */
static void tune_keeps_large_blocks_mapped(void **state)
{
        (void)state;
        char *saved[SC_TEST_NENV];
        env_save(saved);
        setenv("GLIBC_TUNABLES", "glibc.rtld.nns=4", 1);
        assert_int_equal(sc_mem_tune(), 1);
        env_restore(saved);
        malloc_trim(0);
        size_t sz = mallinfo2().fordblks + (1u << 20);
        if (sz > (16u << 20))
                sz = 16u << 20; /* (then the heap holds more; asserted below) */
        assert_true(mallinfo2().fordblks < sz);
        char *p = malloc(sz);
        assert_non_null(p);
        memset(p, 1, sz);
        size_t mapped = mallinfo2().hblks;
        free(p);
        assert_int_equal(mallinfo2().hblks, mapped - 1); /* unmapped at once */
        char *q = malloc(sz);
        assert_non_null(q);
        memset(q, 2, sz);
        assert_int_equal(mallinfo2().hblks, mapped); /* mapped again */
        free(q);
}
#endif

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(trims_on_freed_rows_and_once_a_minute),
                cmocka_unit_test(a_clock_from_zero),
#if SC_TEST_GLIBC_HEAP
                cmocka_unit_test(trim_hands_back_fragmented_memory),
                cmocka_unit_test(heap_counts_in_use_and_free),
#endif
                cmocka_unit_test(tune_leaves_a_set_environment_alone),
#if SC_TEST_GLIBC_HEAP && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
                cmocka_unit_test(tune_keeps_large_blocks_mapped),
#endif
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
