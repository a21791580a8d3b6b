/* sc_prom.h — the Prometheus text exposition format (version 0.0.4) written
 * into a growing buffer: metric families with their HELP and TYPE lines,
 * samples with escaped label values, histograms from bucket counts.
 * Sans-I/O: what serves the text over HTTP lives in the runtime
 * (connectors/base/sc_mserver.h); docs/OPERATIONS.md lists the metrics.
 *
 *   sc_prom_t p;
 *   sc_prom_init(&p);
 *   sc_prom_family(&p, "scadles_train_samples_total", "counter", "Samples trained.");
 *   sc_prom_sample(&p, NULL, NULL, 1234);
 *   const char *lbl[] = {"topic", "t1", NULL};
 *   sc_prom_family(&p, "scadles_consumer_lag_records", "gauge", "Records behind.");
 *   sc_prom_sample(&p, NULL, lbl, 17);
 *   ... p.buf holds p.len bytes of text unless p.oom ...
 *   sc_prom_free(&p);
 */
#ifndef SC_PROM_H
#define SC_PROM_H

#include <stddef.h>
#include <stdint.h>

typedef struct sc_prom {
        char *buf;     /* NUL-terminated text; NULL before the first write */
        size_t len;    /* bytes of text */
        size_t cap;    /* bytes allocated */
        int oom;       /* an allocation failed: the text is incomplete */
        int bad;       /* a name or label name was not a valid Prometheus name */
        char fam[128]; /* the current family's name */
} sc_prom_t;

void sc_prom_init(sc_prom_t *p);
/* Frees the buffer; p can be initialized again. */
void sc_prom_free(sc_prom_t *p);
/* Empties the text, keeping the buffer. */
void sc_prom_clear(sc_prom_t *p);

/* 1 when name matches [a-zA-Z_:][a-zA-Z0-9_:]* (a metric name); with
 * label = 1, [a-zA-Z_][a-zA-Z0-9_]* and not starting with "__". */
int sc_prom_name_ok(const char *name, int label);

/* Starts a family: "# HELP name help" (help escaped) and "# TYPE name type";
 * type is counter, gauge, histogram or untyped. The samples that follow
 * belong to it. An invalid name sets p->bad and writes nothing. */
void sc_prom_family(sc_prom_t *p, const char *name, const char *type, const char *help);

/* One sample of the current family: its name followed by suffix (NULL or
 * "" for none; "_bucket", "_sum", "_count" for a histogram's parts), the
 * labels as a NULL-terminated array of name, value pairs (NULL for none;
 * values escaped), and the value (integers exactly up to 2^53; NaN, +Inf
 * and -Inf spelled as the format wants). */
void sc_prom_sample(sc_prom_t *p, const char *suffix, const char *const *labels, double v);

/* A family of one sample without labels. */
void sc_prom_one(sc_prom_t *p, const char *name, const char *type, const char *help, double v);
/* A family of two samples told apart by the label named label: value a1 is
 * v1, a2 is v2. */
void sc_prom_pair(sc_prom_t *p, const char *name, const char *type, const char *help,
                  const char *label, const char *a1, double v1, const char *a2, double v2);

/* A histogram of fixed upper bounds, accumulated where it is measured. */
#define SC_PROM_HIST_MAX 16
typedef struct sc_prom_hist {
        const double *bounds;             /* nb increasing upper bounds (static) */
        size_t nb;                        /* <= SC_PROM_HIST_MAX */
        uint64_t count[SC_PROM_HIST_MAX]; /* observations <= bounds[i] and > bounds[i-1] */
        uint64_t n;                       /* every observation (the +Inf bucket) */
        double sum;
} sc_prom_hist_t;

/* bounds must outlive h; nb above SC_PROM_HIST_MAX keeps the first ones. */
void sc_prom_hist_init(sc_prom_hist_t *h, const double *bounds, size_t nb);
/* Counts one observation (NaN is ignored). */
void sc_prom_hist_add(sc_prom_hist_t *h, double v);
/* Writes the current family's _bucket (cumulative, le="..." added to the
 * labels, the last le="+Inf"), _sum and _count samples. */
void sc_prom_hist_write(sc_prom_t *p, const sc_prom_hist_t *h, const char *const *labels);

#endif
