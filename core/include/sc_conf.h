/* sc_conf.h — JSON configuration -> typed configuration through one property
 * table (name, type, default, min/max, description). Unknown keys and wrong
 * types are errors naming the JSON path ("$.model.layers[2].kernel: expected
 * integer >= 1"). The "kafka" object is kept as JSON and passed to librdkafka
 * untouched. docs/CONFIG.md and `scadles config --list` come from the table. */
#ifndef SC_CONF_H
#define SC_CONF_H

#include <stdint.h>

#include "sc_err.h"
#include "sc_nn.h"
#include "sc_optim.h"

#define SC_CONF_PATH_MAX 512

typedef struct sc_conf_optim {
        double lr;             /* base learning rate */
        double momentum;
        int nesterov;
        double weight_decay;
        sc_sched_spec_t sched; /* kind, warmup, milestones... (lr copied from above) */
        double base_batch;     /* linear LR scaling: lr * batch / base_batch; 0 = off */
} sc_conf_optim_t;

typedef struct sc_conf_train {
        int epochs;
        int batch;
        uint64_t seed;
        int threads;                            /* BLAS threads */
        char checkpoint[SC_CONF_PATH_MAX];      /* "" = do not save */
        double progress_interval;               /* seconds between progress lines */
} sc_conf_train_t;

typedef struct sc_conf_data {
        char source[32];             /* "fashion-mnist" or "synthetic" */
        char dir[SC_CONF_PATH_MAX];  /* IDX folder (default: Debian's package path) */
        double mean, std;            /* normalization after scaling to [0,1]: (x-mean)/std */
        int synth_train, synth_test; /* synthetic: sample counts */
        int synth_classes;
        double synth_noise;
} sc_conf_data_t;

typedef struct sc_conf {
        sc_model_spec_t model;
        sc_conf_optim_t optim;
        sc_conf_train_t train;
        sc_conf_data_t data;
        void *kafka; /* json_t * object, owned (a reference); NULL if absent */
} sc_conf_t;

/* Sets every property to its default (model: no layers). */
void sc_conf_defaults(sc_conf_t *conf);
/* Parses a JSON text / file into conf (which gets defaults first). origin
 * names the input in messages (a file name). Errors name the JSON path. */
sc_err_t sc_conf_parse(sc_conf_t *conf, const char *json_text, const char *origin, char *errstr,
                       size_t errstr_size);
/* Reads the file at path and parses it (connectors/conf_file.c: core does no I/O). */
sc_err_t sc_conf_load(sc_conf_t *conf, const char *path, char *errstr, size_t errstr_size);
/* Applies one "a.b.c=value" override (value parsed as JSON, else a string). */
sc_err_t sc_conf_set(sc_conf_t *conf, const char *assignment, char *errstr, size_t errstr_size);
/* Releases what conf holds (the kafka object). Accepts NULL. */
void sc_conf_free(sc_conf_t *conf);

/* Every property with type, default, range and meaning: plain text
 * (markdown = 0) or the docs/CONFIG.md page (markdown = 1). Caller frees. */
char *sc_conf_describe(int markdown);

#endif
