/* cmd.h — the scadles command's subcommands and their shared helpers. */
#ifndef SC_CMD_H
#define SC_CMD_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "sc_conf.h"
#include "sc_nn.h"

/* Each subcommand: argv[0] is the subcommand's name; returns the exit code
 * (0 ok, 1 runtime failure, 2 usage or configuration error). */
typedef int (*sc_cmd_fn)(int argc, char **argv);

typedef struct sc_cmd {
        const char *name;
        sc_cmd_fn fn;
        const char *summary;
} sc_cmd_t;

int sc_cmd_config(int argc, char **argv);
int sc_cmd_train(int argc, char **argv);
int sc_cmd_eval(int argc, char **argv);
int sc_cmd_broker(int argc, char **argv);
int sc_cmd_feed(int argc, char **argv);
int sc_cmd_worker(int argc, char **argv);
int sc_cmd_sim(int argc, char **argv);
int sc_cmd_aggregator(int argc, char **argv);
int sc_cmd_demo(int argc, char **argv);
int sc_cmd_export(int argc, char **argv);

/* Set by SIGINT/SIGTERM once sc_cli_signals() was called; long-running
 * commands poll it and stop cleanly (flushing, committing, saving). */
extern volatile sig_atomic_t sc_cli_stop;
void sc_cli_signals(void);
/* Monotonic seconds. */
double sc_cli_now(void);
/* Parses option opt's value s as a finite number >= 0 into *out; on error
 * prints "scadles <cmd>: <opt> <s>: expected a number >= 0" and returns -1. */
int sc_cli_number(const char *cmd, const char *opt, const char *s, double *out);

/* cli_model.c. Each prints its own error as "scadles <cmd>: ..." and returns
 * an exit code (0 ok, 1 runtime failure, 2 usage or configuration error). */
/* Loads path into conf and applies the --set overrides; conf needs
 * sc_conf_free() only after a 0 return. */
int sc_cli_conf_load(const char *cmd, sc_conf_t *conf, const char *path, char **sets, int n_sets);
/* Builds conf's model and loads the checkpoint ckpt into it (parameters and
 * batchnorm statistics; a warning when the checkpoint has none). *modelp is
 * the caller's on 0, NULL otherwise. */
int sc_cli_model_load(const char *cmd, sc_conf_t *conf, const char *ckpt, sc_model_t **modelp);
/* Writes path as CSV: a header "label,predicted,p0,...,p<K-1>", then per
 * sample of x (n, input numel) its label y, the model's argmax and the
 * softmax probabilities of its K outputs (%.9g: float round trip). */
int sc_cli_write_predictions(const char *cmd, sc_model_t *model, const float *x, const int32_t *y,
                             size_t n, const char *path);

#endif
