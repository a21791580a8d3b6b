/* adacomp.c — AdaComp's server half: each coordinate i of an update read at
 * t_read steps by lr * g_i / max(1, sigma_i), sigma_i = how many of the
 * updates applied since t_read touched i, kept in bounded memory (a ring of
 * the last W updates' index lists and per-coordinate counts over the ring).
 * The worker half is asynchronous like asp. */
#include <stdlib.h>
#include <string.h>

#include "sc_le.h"
#include "sync_impl.h"

typedef struct sc_ada_slot {
        uint32_t *idx; /* (count) coordinates, unless dense */
        uint32_t count;
        uint32_t cap;
        uint8_t dense; /* touched every coordinate */
} sc_ada_slot_t;

struct sc_adacomp_s {
        size_t n;
        uint32_t window;     /* W */
        uint64_t t;          /* updates recorded */
        uint32_t head;       /* ring index of the oldest slot */
        uint32_t len;        /* slots in use, min(t, W) */
        sc_ada_slot_t *ring; /* (W) */
        uint32_t *cnt;       /* (n) sparse touches of i within the ring */
        uint32_t cnt_dense;  /* dense slots in the ring */
        uint32_t *scratch;   /* (n) zero between calls */
        uint8_t *mark;       /* (n) zero between calls (duplicate check) */
        uint32_t *sigma;     /* (sigma_cap) staleness of the update being applied */
        size_t sigma_cap;
};

sc_err_t sc_adacomp_new(sc_adacomp_t **adap, size_t n, uint32_t window)
{
        sc_adacomp_t *a;

        *adap = NULL;
        if (n == 0 || n > UINT32_MAX || window == 0)
                return SC_ERR_INVAL;
        if (!(a = calloc(1, sizeof(*a))))
                return SC_ERR_NOMEM;
        a->n = n;
        a->window = window;
        a->ring = calloc(window, sizeof(*a->ring));
        a->cnt = calloc(n, sizeof(*a->cnt));
        a->scratch = calloc(n, sizeof(*a->scratch));
        a->mark = calloc(n, 1);
        if (!a->ring || !a->cnt || !a->scratch || !a->mark) {
                sc_adacomp_destroy(a);
                return SC_ERR_NOMEM;
        }
        *adap = a;
        return SC_OK;
}

void sc_adacomp_destroy(sc_adacomp_t *a)
{
        if (!a)
                return;
        if (a->ring)
                for (uint32_t i = 0; i < a->window; i++)
                        free(a->ring[i].idx);
        free(a->ring);
        free(a->cnt);
        free(a->scratch);
        free(a->mark);
        free(a->sigma);
        free(a);
}

uint64_t sc_adacomp_count(const sc_adacomp_t *a)
{
        return a->t;
}

static sc_err_t sc_ada_check(sc_adacomp_t *a, const uint32_t *idx, size_t count)
{
        sc_err_t err = SC_OK;
        size_t k;

        if (!idx)
                return SC_OK;
        if (count > a->n)
                return SC_ERR_INVAL;
        for (k = 0; k < count; k++) {
                if (idx[k] >= a->n || a->mark[idx[k]]) {
                        err = SC_ERR_INVAL;
                        break;
                }
                a->mark[idx[k]] = 1;
        }
        for (size_t j = 0; j < k; j++)
                a->mark[idx[j]] = 0;
        return err;
}

/* Adds (+1) the slots [from, from + nslots) (0 = oldest) into scratch; returns
 * how many of them were dense. */
static uint32_t sc_ada_scan(sc_adacomp_t *a, uint32_t from, uint32_t nslots, uint32_t delta)
{
        uint32_t dense = 0;
        for (uint32_t s = from; s < from + nslots; s++) {
                const sc_ada_slot_t *sl = &a->ring[(a->head + s) % a->window];
                if (sl->dense) {
                        dense++;
                        continue;
                }
                for (uint32_t j = 0; j < sl->count; j++)
                        a->scratch[sl->idx[j]] += delta;
        }
        return dense;
}

sc_err_t sc_adacomp_staleness(sc_adacomp_t *a, uint64_t t_read, const uint32_t *idx, size_t count,
                              uint32_t *sigma)
{
        uint64_t d;
        uint32_t dd, dense, from, nslots;
        int newest;
        sc_err_t err;

        if (t_read > a->t)
                return SC_ERR_INVAL;
        if ((err = sc_ada_check(a, idx, count)))
                return err;
        if (!idx)
                count = a->n;
        d = a->t - t_read;
        dd = d < a->len ? (uint32_t)d : a->len;
        if (dd == 0) {
                memset(sigma, 0, count * sizeof(*sigma));
                return SC_OK;
        }
        /* Count over the newest dd slots directly, or over the whole ring minus
         * the oldest len - dd slots, whichever scans less. */
        newest = dd <= a->len - dd;
        from = newest ? a->len - dd : 0;
        nslots = newest ? dd : a->len - dd;
        dense = sc_ada_scan(a, from, nslots, 1);
        for (size_t k = 0; k < count; k++) {
                uint32_t i = idx ? idx[k] : (uint32_t)k;
                if (newest)
                        sigma[k] = a->scratch[i] + dense;
                else
                        sigma[k] = a->cnt[i] + a->cnt_dense - a->scratch[i] - dense;
        }
        sc_ada_scan(a, from, nslots, (uint32_t)-1); /* scratch back to zero */
        return SC_OK;
}

sc_err_t sc_adacomp_record(sc_adacomp_t *a, const uint32_t *idx, size_t count)
{
        sc_ada_slot_t *sl;
        sc_err_t err;

        if ((err = sc_ada_check(a, idx, count)))
                return err;
        if (a->len == a->window) { /* evict the oldest */
                sl = &a->ring[a->head];
                if (sl->dense)
                        a->cnt_dense--;
                else
                        for (uint32_t j = 0; j < sl->count; j++)
                                a->cnt[sl->idx[j]]--;
                a->head = (a->head + 1) % a->window;
                a->len--;
        }
        sl = &a->ring[(a->head + a->len) % a->window];
        if (idx && count > sl->cap) {
                uint32_t *p = realloc(sl->idx, count * sizeof(*p));
                if (!p)
                        return SC_ERR_NOMEM;
                sl->idx = p;
                sl->cap = (uint32_t)count;
        }
        sl->dense = !idx;
        sl->count = idx ? (uint32_t)count : 0;
        if (idx) {
                if (count) /* a slot without storage yet has sl->idx NULL */
                        memcpy(sl->idx, idx, count * sizeof(*idx));
                for (size_t k = 0; k < count; k++)
                        a->cnt[idx[k]]++;
        } else {
                a->cnt_dense++;
        }
        a->len++;
        a->t++;
        return SC_OK;
}

sc_err_t sc_adacomp_apply(sc_adacomp_t *a, float *params, float lr, uint64_t t_read,
                          const uint32_t *idx, const float *values, size_t count)
{
        size_t m = idx ? count : a->n;
        sc_err_t err;

        if (m > a->sigma_cap) {
                uint32_t *p = realloc(a->sigma, m * sizeof(*p));
                if (!p)
                        return SC_ERR_NOMEM;
                a->sigma = p;
                a->sigma_cap = m;
        }
        if ((err = sc_adacomp_staleness(a, t_read, idx, count, a->sigma)))
                return err;
        for (size_t k = 0; k < m; k++) {
                uint32_t s = a->sigma[k] > 1 ? a->sigma[k] : 1;
                size_t i = idx ? idx[k] : k;
                params[i] -= lr * values[k] / (float)s;
        }
        return sc_adacomp_record(a, idx, count);
}

/* Layout: t u64, len u32, then per slot oldest first: dense u8, count u32,
 * count u32 indices; all little-endian. */
size_t sc_adacomp_save_size(const sc_adacomp_t *a)
{
        size_t sz = 12;
        for (uint32_t s = 0; s < a->len; s++)
                sz += 5 + 4 * (size_t)a->ring[(a->head + s) % a->window].count;
        return sz;
}

void sc_adacomp_save(const sc_adacomp_t *a, uint8_t *out)
{
        sc_le_put64(out, a->t);
        sc_le_put32(out + 8, a->len);
        out += 12;
        for (uint32_t s = 0; s < a->len; s++) {
                const sc_ada_slot_t *sl = &a->ring[(a->head + s) % a->window];
                *out = sl->dense;
                sc_le_put32(out + 1, sl->count);
                out += 5;
                for (uint32_t j = 0; j < sl->count; j++, out += 4)
                        sc_le_put32(out, sl->idx[j]);
        }
}

sc_err_t sc_adacomp_load(sc_adacomp_t *a, const uint8_t *in, size_t len)
{
        uint64_t t;
        uint32_t nslots;
        const uint8_t *p = in + 12, *end = in + len;
        sc_err_t err;

        if (len < 12)
                return SC_ERR_CORRUPT;
        t = sc_le_get64(in);
        nslots = sc_le_get32(in + 8);
        if (nslots > a->window || nslots > t)
                return SC_ERR_CORRUPT;
        /* Validate everything before touching the ring. */
        for (uint32_t s = 0; s < nslots; s++) {
                uint32_t c;
                if (end - p < 5 || p[0] > 1)
                        return SC_ERR_CORRUPT;
                c = sc_le_get32(p + 1);
                if ((p[0] && c) || (size_t)(end - p - 5) / 4 < c)
                        return SC_ERR_CORRUPT;
                for (uint32_t j = 0; j < c; j++)
                        if (sc_le_get32(p + 5 + 4 * (size_t)j) >= a->n)
                                return SC_ERR_CORRUPT;
                p += 5 + 4 * (size_t)c;
        }
        if (p != end)
                return SC_ERR_CORRUPT;
        memset(a->cnt, 0, a->n * sizeof(*a->cnt));
        a->cnt_dense = 0;
        a->head = 0;
        a->len = 0;
        a->t = t - nslots;
        p = in + 12;
        for (uint32_t s = 0; s < nslots; s++) {
                static const uint32_t none[1];
                uint32_t c = sc_le_get32(p + 1), *idx = NULL;
                if (!p[0]) {
                        if (c && !(idx = malloc(c * sizeof(*idx))))
                                return SC_ERR_NOMEM;
                        for (uint32_t j = 0; j < c; j++)
                                idx[j] = sc_le_get32(p + 5 + 4 * (size_t)j);
                }
                err = sc_adacomp_record(a, p[0] ? NULL : (idx ? idx : none), c);
                free(idx);
                if (err)
                        return SC_ERR_CORRUPT; /* duplicate indices within a slot */
                p += 5 + 4 * (size_t)c;
        }
        return SC_OK;
}

static sc_err_t sc_adacomp_server_apply(sc_server_t *srv, const sc_update_t *u, char *errstr,
                                        size_t errstr_size)
{
        sc_err_t err = sc_adacomp_apply(srv->ada, srv->params, (float)sc_server_lr(srv), u->t_read,
                                        u->indices, u->values, u->count);
        if (err == SC_ERR_INVAL)
                return sc_errf(err, errstr, errstr_size,
                               "adacomp update from worker %u seq %llu: t_read %llu is ahead "
                               "of the server (t %llu) or indices repeat",
                               u->worker, (unsigned long long)u->seq, (unsigned long long)u->t_read,
                               (unsigned long long)sc_adacomp_count(srv->ada));
        return err;
}

const sc_sync_policy_t sc_sync_adacomp = {
    .kind = SC_SYNC_ADACOMP,
    .name = "adacomp",
    .sends_gradients = 1,
    .batch = sc_sync_batch_fixed,
    .after_compute = sc_sync_after_compute_send,
    .wait_done = sc_sync_wait_inflight,
    .apply = sc_adacomp_server_apply,
};
