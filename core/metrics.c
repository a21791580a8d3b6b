/* metrics.c — accuracy, loss, per-class accuracy and confusion matrix of a
 * stream of scored samples, since start and over a sliding window
 * (sc_metrics.h). */
#include "sc_metrics.h"

#include "sc_alloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct sc_metrics_s {
        int classes;
        size_t window;
        /* ring of the last `window` samples: hit (0/1) and loss */
        uint8_t *ring_hit;
        double *ring_loss;
        size_t ring_len, ring_head;
        uint64_t window_hits;
        double window_loss;
        uint64_t n, hits;
        double loss_sum;
        uint64_t *confusion; /* (classes, classes), row = true class */
};

sc_err_t sc_metrics_new(sc_metrics_t **mp, int n_classes, size_t window, char *errstr,
                        size_t errstr_size)
{
        *mp = NULL;
        if (n_classes < 1 || n_classes > 1 << 16 || window < 1)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "metrics: classes must be in [1, 65536] and the window >= 1 "
                               "(got %d, %zu)",
                               n_classes, window);
        sc_metrics_t *m = sc_calloc(1, sizeof(*m));
        if (!m)
                goto nomem;
        m->classes = n_classes;
        m->window = window;
        m->ring_hit = sc_calloc(window, 1);
        m->ring_loss = sc_calloc(window, sizeof(double));
        m->confusion = sc_calloc((size_t)n_classes * (size_t)n_classes, sizeof(uint64_t));
        if (!m->ring_hit || !m->ring_loss || !m->confusion)
                goto nomem;
        *mp = m;
        return SC_OK;
nomem:
        sc_metrics_destroy(m);
        return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "metrics: out of memory");
}

void sc_metrics_destroy(sc_metrics_t *m)
{
        if (!m)
                return;
        sc_free(m->ring_hit);
        sc_free(m->ring_loss);
        sc_free(m->confusion);
        sc_free(m);
}

void sc_metrics_reset(sc_metrics_t *m)
{
        m->ring_len = m->ring_head = 0;
        m->window_hits = 0;
        m->window_loss = 0;
        m->n = m->hits = 0;
        m->loss_sum = 0;
        memset(m->confusion, 0, (size_t)m->classes * (size_t)m->classes * sizeof(uint64_t));
}

void sc_metrics_add(sc_metrics_t *m, int32_t label, int32_t pred, double loss)
{
        if (label < 0 || label >= m->classes)
                return;
        int hit = pred == label;
        if (pred >= 0 && pred < m->classes)
                m->confusion[(size_t)label * (size_t)m->classes + (size_t)pred]++;
        m->n++;
        m->hits += (uint64_t)hit;
        m->loss_sum += loss;
        if (m->ring_len == m->window) {
                m->window_hits -= m->ring_hit[m->ring_head];
                m->window_loss -= m->ring_loss[m->ring_head];
        } else {
                m->ring_len++;
        }
        m->ring_hit[m->ring_head] = (uint8_t)hit;
        m->ring_loss[m->ring_head] = loss;
        m->window_hits += (uint64_t)hit;
        m->window_loss += loss;
        m->ring_head = (m->ring_head + 1) % m->window;
        /* Re-add the window's losses once per pass around the ring, so the
         * running sum carries no rounding drift from subtractions. */
        if (m->ring_head == 0) {
                double s = 0;
                for (size_t i = 0; i < m->ring_len; i++)
                        s += m->ring_loss[i];
                m->window_loss = s;
        }
}

void sc_metrics_add_logits(sc_metrics_t *m, const float *logits, const int32_t *labels, int B)
{
        size_t C = (size_t)m->classes;
        for (int b = 0; b < B; b++) {
                const float *z = logits + (size_t)b * C;
                int32_t best = 0;
                for (size_t k = 1; k < C; k++)
                        if (z[k] > z[best])
                                best = (int32_t)k;
                double mx = z[best], s = 0;
                for (size_t k = 0; k < C; k++)
                        s += exp((double)z[k] - mx);
                int32_t y = labels[b];
                double loss = (y >= 0 && (size_t)y < C) ? mx + log(s) - (double)z[y] : 0;
                sc_metrics_add(m, y, best, loss);
        }
}

#define SC_METRICS_EVAL_BATCH 500

sc_err_t sc_metrics_eval(sc_metrics_t *m, sc_model_t *model, const float *x, const int32_t *y,
                         size_t n)
{
        size_t numel = sc_shape_numel(sc_model_spec(model)->input);
        float *out = sc_malloc((size_t)SC_METRICS_EVAL_BATCH * (size_t)m->classes * sizeof(float));
        if (!out)
                return SC_ERR_NOMEM;
        sc_err_t err = SC_OK;
        for (size_t i = 0; i < n && !err; i += SC_METRICS_EVAL_BATCH) {
                int b = (int)(n - i < SC_METRICS_EVAL_BATCH ? n - i : SC_METRICS_EVAL_BATCH);
                /* no labels: the loss is the metrics' own; NaN = the pass failed */
                if (isnan(sc_model_eval_batch(model, x + i * numel, NULL, NULL, b, NULL, out)))
                        err = SC_ERR_NOMEM;
                else
                        sc_metrics_add_logits(m, out, y + i, b);
        }
        sc_free(out);
        return err;
}

void sc_metrics_summary(const sc_metrics_t *m, sc_metrics_summary_t *s)
{
        memset(s, 0, sizeof(*s));
        s->n = m->n;
        s->hits = m->hits;
        s->window_n = m->ring_len;
        s->window_hits = m->window_hits;
        if (m->n) {
                s->accuracy = (double)m->hits / (double)m->n;
                s->loss = m->loss_sum / (double)m->n;
        }
        if (m->ring_len) {
                s->window_accuracy = (double)m->window_hits / (double)m->ring_len;
                s->window_loss = m->window_loss / (double)m->ring_len;
        }
}

int sc_metrics_classes(const sc_metrics_t *m)
{
        return m->classes;
}

uint64_t sc_metrics_confusion(const sc_metrics_t *m, int t, int p)
{
        if (t < 0 || t >= m->classes || p < 0 || p >= m->classes)
                return 0;
        return m->confusion[(size_t)t * (size_t)m->classes + (size_t)p];
}

json_t *sc_metrics_json(const sc_metrics_t *m)
{
        sc_metrics_summary_t s;
        sc_metrics_summary(m, &s);
        json_t *j = json_pack("{s:I, s:f, s:f, s:I, s:I, s:f, s:f}", "samples", (json_int_t)s.n,
                              "accuracy", s.accuracy, "loss", s.loss, "window",
                              (json_int_t)m->window, "window_samples", (json_int_t)s.window_n,
                              "window_accuracy", s.window_accuracy, "window_loss", s.window_loss);
        json_t *pc = json_array(), *cm = json_array();
        if (!j || !pc || !cm)
                goto nomem;
        for (int t = 0; t < m->classes; t++) {
                json_t *row = json_array();
                uint64_t total = 0;
                if (!row)
                        goto nomem;
                for (int p = 0; p < m->classes; p++) {
                        uint64_t c = sc_metrics_confusion(m, t, p);
                        total += c;
                        json_array_append_new(row, json_integer((json_int_t)c));
                }
                json_array_append_new(cm, row);
                json_array_append_new(
                    pc, total ? json_real((double)sc_metrics_confusion(m, t, t) / (double)total)
                              : json_null());
        }
        json_object_set_new(j, "per_class_accuracy", pc);
        json_object_set_new(j, "confusion", cm);
        return j;
nomem:
        json_decref(j);
        json_decref(pc);
        json_decref(cm);
        return NULL;
}

json_t *sc_metrics_state(const sc_metrics_t *m)
{
        size_t cc = (size_t)m->classes * (size_t)m->classes;
        json_t *cm = json_array(), *wl = json_array();
        char *wh = sc_malloc(m->ring_len + 1);
        json_t *j = NULL;
        if (!cm || !wl || !wh)
                goto out;
        for (size_t i = 0; i < cc; i++)
                if (json_array_append_new(cm, json_integer((json_int_t)m->confusion[i])))
                        goto out;
        /* oldest first: the ring starts at its head once it is full */
        size_t first = m->ring_len == m->window ? m->ring_head : 0;
        for (size_t k = 0; k < m->ring_len; k++) {
                size_t i = (first + k) % m->window;
                wh[k] = m->ring_hit[i] ? '1' : '0';
                if (json_array_append_new(wl, json_real(m->ring_loss[i])))
                        goto out;
        }
        wh[m->ring_len] = '\0';
        j = json_pack("{s:I, s:I, s:f, s:O, s:s, s:O}", "samples", (json_int_t)m->n, "hits",
                      (json_int_t)m->hits, "loss_sum", m->loss_sum, "confusion", cm, "window_hits",
                      wh, "window_loss", wl);
out:
        json_decref(cm);
        json_decref(wl);
        sc_free(wh);
        return j;
}

/* A non-negative integer member of o, or -1. */
static json_int_t sc_metrics_count(const json_t *o, const char *name)
{
        const json_t *v = json_object_get(o, name);
        return json_is_integer(v) && json_integer_value(v) >= 0 ? json_integer_value(v) : -1;
}

sc_err_t sc_metrics_restore(sc_metrics_t *m, const json_t *state, char *errstr, size_t errstr_size)
{
        size_t cc = (size_t)m->classes * (size_t)m->classes;
        json_int_t n = sc_metrics_count(state, "samples"), hits = sc_metrics_count(state, "hits");
        const json_t *ls = json_object_get(state, "loss_sum");
        const json_t *cm = json_object_get(state, "confusion");
        const json_t *wh = json_object_get(state, "window_hits");
        const json_t *wl = json_object_get(state, "window_loss");
        if (!json_is_object(state))
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size, "$: expected an object");
        if (n < 0 || hits < 0 || hits > n)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "$.samples, $.hits: expected counts, hits at most samples");
        if (!json_is_number(ls) || !(json_number_value(ls) >= 0) ||
            !isfinite(json_number_value(ls)))
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "$.loss_sum: expected a finite number >= 0");
        if (!json_is_array(cm) || json_array_size(cm) != cc)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "$.confusion: expected %zu counts (%d classes)", cc, m->classes);
        uint64_t diag = 0, sum = 0;
        for (size_t i = 0; i < cc; i++) {
                const json_t *c = json_array_get(cm, i);
                if (!json_is_integer(c) || json_integer_value(c) < 0)
                        return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                                       "$.confusion[%zu]: expected a count", i);
                sum += (uint64_t)json_integer_value(c);
                if (i / (size_t)m->classes == i % (size_t)m->classes)
                        diag += (uint64_t)json_integer_value(c);
        }
        if (diag != (uint64_t)hits || sum > (uint64_t)n)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "$.confusion: its diagonal (%llu) is not the hits (%lld) or it "
                               "counts more than the samples",
                               (unsigned long long)diag, (long long)hits);
        size_t len = json_is_string(wh) ? json_string_length(wh) : 0;
        if (!json_is_string(wh) || !json_is_array(wl) || json_array_size(wl) != len ||
            len > (size_t)n || strspn(json_string_value(wh), "01") != len)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "$.window_hits, $.window_loss: expected a string of 0 and 1 and "
                               "as many losses, at most samples");
        for (size_t k = 0; k < len; k++) {
                const json_t *v = json_array_get(wl, k);
                if (!json_is_number(v) || !(json_number_value(v) >= 0) ||
                    !isfinite(json_number_value(v)))
                        return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                                       "$.window_loss[%zu]: expected a finite number >= 0", k);
        }
        sc_metrics_reset(m);
        for (size_t i = 0; i < cc; i++)
                m->confusion[i] = (uint64_t)json_integer_value(json_array_get(cm, i));
        m->n = (uint64_t)n;
        m->hits = (uint64_t)hits;
        m->loss_sum = json_number_value(ls);
        size_t skip = len > m->window ? len - m->window : 0; /* keep the newest */
        const char *h = json_string_value(wh);
        for (size_t k = skip; k < len; k++) {
                size_t i = m->ring_len++;
                m->ring_hit[i] = (uint8_t)(h[k] == '1');
                m->ring_loss[i] = json_number_value(json_array_get(wl, k));
                m->window_hits += m->ring_hit[i];
                m->window_loss += m->ring_loss[i];
        }
        m->ring_head = m->ring_len % m->window;
        return SC_OK;
}
