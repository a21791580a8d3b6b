/* sc_sim.h — the simulator: N edge devices with heterogeneous compute speed,
 * stream rate, bandwidth and latency train a real model through the sync
 * policies and the shard server, on a virtual clock and an in-memory bus.
 * Deterministic: the same configuration and seed give byte-identical metrics.
 *
 * Units: seconds of virtual time, samples/s, bytes/s, bytes. */
#ifndef SC_SIM_H
#define SC_SIM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sc_codec.h"
#include "sc_conf.h"
#include "sc_data.h"
#include "sc_err.h"
#include "sc_sim_spec.h"
#include "sc_sync.h"

/* Parses a "sim" object alone (a json_t *, borrowed) into spec: the sim.*
 * rows of the property table, defaults first; errors name
 * "<origin>: $.sim.<key>"; unknown keys are errors. */
sc_err_t sc_sim_spec_parse(sc_sim_spec_t *spec, void *json_sim, const char *origin, char *errstr,
                           size_t errstr_size);

typedef struct sc_sim_s sc_sim_t;

/* Builds the simulation. conf (model, optim) and the data sets are borrowed
 * and must outlive the simulation. */
sc_err_t sc_sim_new(sc_sim_t **simp, const sc_sim_spec_t *spec, const sc_conf_t *conf,
                    const sc_dataset_t *train, const sc_dataset_t *test, char *errstr,
                    size_t errstr_size);
void sc_sim_destroy(sc_sim_t *sim);

/* Runs to a stop condition, writing one JSON object per line to out: metric
 * lines {"t", "step", "updates", "loss", "test_loss", "test_acc", "bytes_up",
 * "bytes_down", "buffered", "dropped", "wait_s", "staleness", ...} every
 * eval_every seconds, then one {"event":"end", ...} summary line. */
sc_err_t sc_sim_run(sc_sim_t *sim, FILE *out, char *errstr, size_t errstr_size);

#endif
