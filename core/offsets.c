/* offsets.c — per-partition commit positions under out-of-order completion. */
#include "sc_offsets.h"

#include "sc_alloc.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* One partition: a ring of outstanding-or-finished offsets in increasing
 * order, from the oldest unfinished one on. */
typedef struct sc_offsets_part {
        int32_t partition;
        uint32_t epoch;
        int64_t *off;        /* (cap) ring */
        uint8_t *done;       /* (cap) ring, 1 = finished */
        size_t cap, head, n; /* cap is 0 or a power of two */
        size_t outstanding;  /* entries not finished */
        int64_t last;        /* last tracked offset, -1 = none */
        int64_t reported;    /* last position reported by changed(); starts at the
                                first tracked offset, which needs no commit */
} sc_offsets_part_t;

struct sc_offsets_s {
        sc_offsets_part_t *parts; /* sorted by partition */
        size_t n_parts, cap_parts;
        uint32_t next_epoch;
};

sc_err_t sc_offsets_new(sc_offsets_t **offsetsp)
{
        *offsetsp = sc_calloc(1, sizeof(**offsetsp));
        if (!*offsetsp)
                return SC_ERR_NOMEM;
        (*offsetsp)->next_epoch = 1;
        return SC_OK;
}

void sc_offsets_destroy(sc_offsets_t *offsets)
{
        if (!offsets)
                return;
        for (size_t i = 0; i < offsets->n_parts; i++) {
                sc_free(offsets->parts[i].off);
                sc_free(offsets->parts[i].done);
        }
        sc_free(offsets->parts);
        sc_free(offsets);
}

/* Index of the first part with partition >= p. */
static size_t sc_offsets_lower(const sc_offsets_t *o, int32_t p)
{
        size_t lo = 0, hi = o->n_parts;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (o->parts[mid].partition < p)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

static sc_offsets_part_t *sc_offsets_find(const sc_offsets_t *o, int32_t p)
{
        size_t i = sc_offsets_lower(o, p);
        return i < o->n_parts && o->parts[i].partition == p ? &o->parts[i] : NULL;
}

static sc_offsets_part_t *sc_offsets_get(sc_offsets_t *o, int32_t p)
{
        size_t i = sc_offsets_lower(o, p);
        if (i < o->n_parts && o->parts[i].partition == p)
                return &o->parts[i];
        if (o->n_parts == o->cap_parts) {
                size_t nc = o->cap_parts ? 2 * o->cap_parts : 8;
                sc_offsets_part_t *np = sc_realloc(o->parts, nc * sizeof(*np));
                if (!np)
                        return NULL;
                o->parts = np;
                o->cap_parts = nc;
        }
        memmove(&o->parts[i + 1], &o->parts[i], (o->n_parts - i) * sizeof(o->parts[0]));
        o->n_parts++;
        memset(&o->parts[i], 0, sizeof(o->parts[i]));
        o->parts[i].partition = p;
        o->parts[i].epoch = o->next_epoch++;
        o->parts[i].last = -1;
        o->parts[i].reported = -1;
        return &o->parts[i];
}

/* The ring spans the offsets from the oldest unfinished one on, so it grows
 * with the longest a sample waits (in the shuffle buffer, drawn at random):
 * 1024 entries (9 KB) at first keep the steady state from doubling it. */
static int sc_offsets_grow(sc_offsets_part_t *pt)
{
        size_t nc = pt->cap ? 2 * pt->cap : 1024;
        int64_t *no = sc_malloc(nc * sizeof(*no));
        uint8_t *nd = sc_malloc(nc);
        if (!no || !nd) {
                sc_free(no);
                sc_free(nd);
                return -1;
        }
        for (size_t i = 0; i < pt->n; i++) {
                size_t j = (pt->head + i) & (pt->cap - 1);
                no[i] = pt->off[j];
                nd[i] = pt->done[j];
        }
        sc_free(pt->off);
        sc_free(pt->done);
        pt->off = no;
        pt->done = nd;
        pt->cap = nc;
        pt->head = 0;
        return 0;
}

sc_err_t sc_offsets_track(sc_offsets_t *offsets, int32_t partition, int64_t offset, uint32_t *epoch,
                          char *errstr, size_t errstr_size)
{
        sc_offsets_part_t *pt;

        if (partition < 0 || offset < 0)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "offsets: partition %" PRId32 " offset %" PRId64
                               ": expected both >= 0",
                               partition, offset);
        pt = sc_offsets_get(offsets, partition);
        if (!pt)
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "offsets: out of memory");
        if (offset <= pt->last)
                return sc_errf(SC_ERR_STATE, errstr, errstr_size,
                               "offsets: partition %" PRId32 " offset %" PRId64
                               " is not after the last consumed offset %" PRId64,
                               partition, offset, pt->last);
        if (pt->n == pt->cap && sc_offsets_grow(pt) < 0)
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "offsets: out of memory");
        size_t j = (pt->head + pt->n) & (pt->cap - 1);
        pt->off[j] = offset;
        pt->done[j] = 0;
        if (pt->last < 0)
                pt->reported = offset;
        pt->n++;
        pt->outstanding++;
        pt->last = offset;
        if (epoch)
                *epoch = pt->epoch;
        return SC_OK;
}

sc_err_t sc_offsets_done(sc_offsets_t *offsets, int32_t partition, int64_t offset, uint32_t epoch,
                         char *errstr, size_t errstr_size)
{
        sc_offsets_part_t *pt = sc_offsets_find(offsets, partition);
        size_t lo = 0, hi;

        if (!pt || pt->epoch != epoch)
                return sc_errf(SC_ERR_STATE, errstr, errstr_size,
                               "offsets: partition %" PRId32 " offset %" PRId64
                               " is not tracked (partition forgotten)",
                               partition, offset);
        hi = pt->n;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (pt->off[(pt->head + mid) & (pt->cap - 1)] < offset)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        size_t j = (pt->head + lo) & (pt->cap - 1);
        if (lo == pt->n || pt->off[j] != offset || pt->done[j])
                return sc_errf(SC_ERR_STATE, errstr, errstr_size,
                               "offsets: partition %" PRId32 " offset %" PRId64
                               " is not outstanding",
                               partition, offset);
        pt->done[j] = 1;
        pt->outstanding--;
        while (pt->n > 0 && pt->done[pt->head]) {
                pt->head = (pt->head + 1) & (pt->cap - 1);
                pt->n--;
        }
        return SC_OK;
}

static int64_t sc_offsets_pos(const sc_offsets_part_t *pt)
{
        if (pt->n > 0)
                return pt->off[pt->head];
        return pt->last + 1;
}

sc_err_t sc_offsets_position(const sc_offsets_t *offsets, int32_t partition, int64_t *next)
{
        const sc_offsets_part_t *pt = sc_offsets_find(offsets, partition);
        if (!pt || pt->last < 0)
                return SC_ERR_AGAIN;
        *next = sc_offsets_pos(pt);
        return SC_OK;
}

size_t sc_offsets_changed(sc_offsets_t *offsets, sc_offsets_commit_t *out, size_t max)
{
        size_t k = 0;
        for (size_t i = 0; i < offsets->n_parts && k < max; i++) {
                sc_offsets_part_t *pt = &offsets->parts[i];
                if (pt->last < 0)
                        continue;
                int64_t pos = sc_offsets_pos(pt);
                if (pos == pt->reported)
                        continue;
                pt->reported = pos;
                out[k].partition = pt->partition;
                out[k].offset = pos;
                k++;
        }
        return k;
}

size_t sc_offsets_outstanding(const sc_offsets_t *offsets, int32_t partition)
{
        size_t total = 0;
        if (partition >= 0) {
                const sc_offsets_part_t *pt = sc_offsets_find(offsets, partition);
                return pt ? pt->outstanding : 0;
        }
        for (size_t i = 0; i < offsets->n_parts; i++)
                total += offsets->parts[i].outstanding;
        return total;
}

uint32_t sc_offsets_epoch(const sc_offsets_t *offsets, int32_t partition)
{
        const sc_offsets_part_t *pt = sc_offsets_find(offsets, partition);
        return pt ? pt->epoch : 0;
}

size_t sc_offsets_forget(sc_offsets_t *offsets, int32_t partition)
{
        size_t i = sc_offsets_lower(offsets, partition), n;
        if (i == offsets->n_parts || offsets->parts[i].partition != partition)
                return 0;
        n = offsets->parts[i].outstanding;
        sc_free(offsets->parts[i].off);
        sc_free(offsets->parts[i].done);
        memmove(&offsets->parts[i], &offsets->parts[i + 1],
                (offsets->n_parts - i - 1) * sizeof(offsets->parts[0]));
        offsets->n_parts--;
        return n;
}

size_t sc_offsets_partitions(const sc_offsets_t *offsets, int32_t *out, size_t max)
{
        size_t k = 0;
        for (size_t i = 0; i < offsets->n_parts; i++)
                if (offsets->parts[i].last >= 0) {
                        if (k < max)
                                out[k] = offsets->parts[i].partition;
                        k++;
                }
        return k;
}

size_t sc_offsets_finished(const sc_offsets_t *offsets, int32_t partition, int64_t *out, size_t max)
{
        const sc_offsets_part_t *pt = sc_offsets_find(offsets, partition);
        size_t k = 0;
        if (!pt)
                return 0;
        for (size_t i = 0; i < pt->n; i++) {
                size_t j = (pt->head + i) & (pt->cap - 1);
                if (!pt->done[j])
                        continue;
                if (k < max)
                        out[k] = pt->off[j];
                k++;
        }
        return k;
}

int64_t sc_offsets_last(const sc_offsets_t *offsets, int32_t partition)
{
        const sc_offsets_part_t *pt = sc_offsets_find(offsets, partition);
        return pt ? pt->last : -1;
}
