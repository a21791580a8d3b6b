/* sc_metrics.h — classification metrics of a stream of scored samples:
 * accuracy and mean cross-entropy loss since start and over a sliding
 * window of the last samples, per-class accuracy and the confusion matrix.
 *
 * Prequential evaluation (test-then-train, the River/MOA convention) feeds
 * it each batch as scored by the current model before that batch trains;
 * held-out evaluation feeds it a test set. Sans-I/O, single-threaded. */
#ifndef SC_METRICS_H
#define SC_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "sc_err.h"
#include "sc_nn.h"

typedef struct sc_metrics_s sc_metrics_t;

/* n_classes >= 1; window = samples of the sliding window (>= 1). */
sc_err_t sc_metrics_new(sc_metrics_t **mp, int n_classes, size_t window, char *errstr,
                        size_t errstr_size);
/* Accepts NULL. */
void sc_metrics_destroy(sc_metrics_t *m);
/* Forgets every sample (counters, window, confusion matrix). */
void sc_metrics_reset(sc_metrics_t *m);

/* Scores one sample: true label (in [0, n_classes); others are ignored),
 * predicted class and its loss. */
void sc_metrics_add(sc_metrics_t *m, int32_t label, int32_t pred, double loss);

/* Scores B samples from the model's output: logits is (B, n_classes) raw
 * scores, labels (B). The prediction is the first largest logit, the loss
 * the softmax cross-entropy log(sum_k exp z_k) - z_label. */
void sc_metrics_add_logits(sc_metrics_t *m, const float *logits, const int32_t *labels, int B);

/* Scores n samples x (n, input numel of model), labels y (n) with model
 * in inference mode (batches of 500) into m. SC_ERR_NOMEM. */
sc_err_t sc_metrics_eval(sc_metrics_t *m, sc_model_t *model, const float *x, const int32_t *y,
                         size_t n);

typedef struct sc_metrics_summary {
        uint64_t n;        /* samples since start */
        uint64_t hits;     /* ... predicted right */
        double accuracy;   /* hits / n (0 when n = 0) */
        double loss;       /* mean loss since start */
        uint64_t window_n; /* samples in the window (<= window) */
        uint64_t window_hits;
        double window_accuracy;
        double window_loss;
} sc_metrics_summary_t;

void sc_metrics_summary(const sc_metrics_t *m, sc_metrics_summary_t *s);

int sc_metrics_classes(const sc_metrics_t *m);
/* Count of samples of true class t predicted as p (both in range). */
uint64_t sc_metrics_confusion(const sc_metrics_t *m, int t, int p);

/* {"samples", "accuracy", "loss", "window", "window_samples",
 *  "window_accuracy", "window_loss", "per_class_accuracy": [C] (null for a
 *  class never seen), "confusion": [[C] x C] (rows = true class, columns =
 *  predicted)}. New reference; NULL if out of memory. */
json_t *sc_metrics_json(const sc_metrics_t *m);

/* What a restart carries on (a checkpoint's resume section):
 * {"samples", "hits", "loss_sum", "confusion": [C * C] (row-major, rows =
 *  true class), "window_hits": "0110..." and "window_loss": [...] (the
 *  window's samples, oldest first)}. New reference; NULL if out of
 * memory. */
json_t *sc_metrics_state(const sc_metrics_t *m);

/* Replaces m's counters with a state of sc_metrics_state() for as many
 * classes. A window longer than m's keeps its newest samples. SC_ERR_CORRUPT
 * (errstr names the field as "$.<field>") when a field is missing, of the
 * wrong type or size, or the counts disagree (hits above samples, the
 * confusion matrix's diagonal not the hits, a loss negative or not finite);
 * m is then unchanged. */
sc_err_t sc_metrics_restore(sc_metrics_t *m, const json_t *state, char *errstr, size_t errstr_size);

#endif
