/* prom.c — the Prometheus text exposition format written into a buffer
 * (sc_prom.h). */
#include "sc_prom.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sc_alloc.h"

void sc_prom_init(sc_prom_t *p)
{
        memset(p, 0, sizeof(*p));
}

void sc_prom_free(sc_prom_t *p)
{
        sc_free(p->buf);
        sc_prom_init(p);
}

void sc_prom_clear(sc_prom_t *p)
{
        p->len = 0;
        p->oom = p->bad = 0;
        p->fam[0] = 0;
        if (p->buf)
                p->buf[0] = 0;
}

/* Room for n more bytes and the NUL. */
static int sc_prom_room(sc_prom_t *p, size_t n)
{
        if (p->oom)
                return 0;
        if (p->len + n + 1 <= p->cap)
                return 1;
        size_t cap = p->cap ? p->cap : 4096;
        while (cap < p->len + n + 1)
                cap *= 2;
        char *b = sc_realloc(p->buf, cap);
        if (!b) {
                p->oom = 1;
                return 0;
        }
        p->buf = b;
        p->cap = cap;
        return 1;
}

static void sc_prom_put(sc_prom_t *p, const char *s, size_t n)
{
        if (!sc_prom_room(p, n))
                return;
        memcpy(p->buf + p->len, s, n);
        p->len += n;
        p->buf[p->len] = 0;
}

static void sc_prom_puts(sc_prom_t *p, const char *s)
{
        sc_prom_put(p, s, strlen(s));
}

/* s with backslash and newline escaped, and the double quote when quote. */
static void sc_prom_escaped(sc_prom_t *p, const char *s, int quote)
{
        for (; *s; s++) {
                if (*s == '\\')
                        sc_prom_put(p, "\\\\", 2);
                else if (*s == '\n')
                        sc_prom_put(p, "\\n", 2);
                else if (quote && *s == '"')
                        sc_prom_put(p, "\\\"", 2);
                else
                        sc_prom_put(p, s, 1);
        }
}

int sc_prom_name_ok(const char *name, int label)
{
        if (!name || !*name || (label && name[0] == '_' && name[1] == '_'))
                return 0;
        for (const char *c = name; *c; c++) {
                int alpha = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || *c == '_' ||
                            (!label && *c == ':');
                if (!alpha && (c == name || *c < '0' || *c > '9'))
                        return 0;
        }
        return 1;
}

void sc_prom_family(sc_prom_t *p, const char *name, const char *type, const char *help)
{
        if (!sc_prom_name_ok(name, 0) || strlen(name) >= sizeof(p->fam)) {
                p->bad = 1;
                p->fam[0] = 0;
                return;
        }
        strcpy(p->fam, name);
        sc_prom_puts(p, "# HELP ");
        sc_prom_puts(p, name);
        sc_prom_puts(p, " ");
        sc_prom_escaped(p, help ? help : "", 0);
        sc_prom_puts(p, "\n# TYPE ");
        sc_prom_puts(p, name);
        sc_prom_puts(p, " ");
        sc_prom_puts(p, type);
        sc_prom_puts(p, "\n");
}

/* Formats v as the exposition format wants it. */
static void sc_prom_value(char *out, size_t n, double v)
{
        if (isnan(v))
                snprintf(out, n, "NaN");
        else if (isinf(v))
                snprintf(out, n, v > 0 ? "+Inf" : "-Inf");
        else if (v == floor(v) && fabs(v) < 9007199254740992.0)
                snprintf(out, n, "%.0f", v);
        else {
                snprintf(out, n, "%.15g", v); /* the shortest that reads back, mostly */
                if (strtod(out, NULL) != v)
                        snprintf(out, n, "%.16g", v);
                if (strtod(out, NULL) != v)
                        snprintf(out, n, "%.17g", v);
        }
}

/* "{a=\"x\",b=\"y\"" with extra (name, value) appended; closes with "}". */
static void sc_prom_labels(sc_prom_t *p, const char *const *labels, const char *xname,
                           const char *xval)
{
        int any = 0;
        for (size_t i = 0; labels && labels[i] && labels[i + 1]; i += 2) {
                if (!sc_prom_name_ok(labels[i], 1)) {
                        p->bad = 1;
                        continue;
                }
                sc_prom_puts(p, any ? "," : "{");
                sc_prom_puts(p, labels[i]);
                sc_prom_puts(p, "=\"");
                sc_prom_escaped(p, labels[i + 1], 1);
                sc_prom_puts(p, "\"");
                any = 1;
        }
        if (xname) {
                sc_prom_puts(p, any ? "," : "{");
                sc_prom_puts(p, xname);
                sc_prom_puts(p, "=\"");
                sc_prom_puts(p, xval);
                sc_prom_puts(p, "\"");
                any = 1;
        }
        if (any)
                sc_prom_puts(p, "}");
}

static void sc_prom_line(sc_prom_t *p, const char *suffix, const char *const *labels,
                         const char *xname, const char *xval, double v)
{
        char num[40];
        if (!p->fam[0]) {
                p->bad = 1;
                return;
        }
        sc_prom_puts(p, p->fam);
        if (suffix)
                sc_prom_puts(p, suffix);
        sc_prom_labels(p, labels, xname, xval);
        sc_prom_value(num, sizeof(num), v);
        sc_prom_puts(p, " ");
        sc_prom_puts(p, num);
        sc_prom_puts(p, "\n");
}

void sc_prom_sample(sc_prom_t *p, const char *suffix, const char *const *labels, double v)
{
        sc_prom_line(p, suffix, labels, NULL, NULL, v);
}

void sc_prom_one(sc_prom_t *p, const char *name, const char *type, const char *help, double v)
{
        sc_prom_family(p, name, type, help);
        sc_prom_sample(p, NULL, NULL, v);
}

void sc_prom_pair(sc_prom_t *p, const char *name, const char *type, const char *help,
                  const char *label, const char *a1, double v1, const char *a2, double v2)
{
        const char *l1[] = {label, a1, NULL}, *l2[] = {label, a2, NULL};
        sc_prom_family(p, name, type, help);
        sc_prom_sample(p, NULL, l1, v1);
        sc_prom_sample(p, NULL, l2, v2);
}

void sc_prom_hist_init(sc_prom_hist_t *h, const double *bounds, size_t nb)
{
        memset(h, 0, sizeof(*h));
        h->bounds = bounds;
        h->nb = nb < SC_PROM_HIST_MAX ? nb : SC_PROM_HIST_MAX;
}

void sc_prom_hist_add(sc_prom_hist_t *h, double v)
{
        if (isnan(v))
                return;
        h->n++;
        h->sum += v;
        for (size_t i = 0; i < h->nb; i++)
                if (v <= h->bounds[i]) {
                        h->count[i]++;
                        break;
                }
}

void sc_prom_hist_write(sc_prom_t *p, const sc_prom_hist_t *h, const char *const *labels)
{
        uint64_t cum = 0;
        char le[40];
        for (size_t i = 0; i < h->nb; i++) {
                cum += h->count[i];
                sc_prom_value(le, sizeof(le), h->bounds[i]);
                sc_prom_line(p, "_bucket", labels, "le", le, (double)cum);
        }
        sc_prom_line(p, "_bucket", labels, "le", "+Inf", (double)h->n);
        sc_prom_line(p, "_sum", labels, NULL, NULL, h->sum);
        sc_prom_line(p, "_count", labels, NULL, NULL, (double)h->n);
}
