/* cmd.h — the scadles command's subcommands and their shared helpers. */
#ifndef SC_CMD_H
#define SC_CMD_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <jansson.h>

#include "cli_opts.h"
#include "sc_ckpt.h"
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
int sc_cmd_predict(int argc, char **argv);
int sc_cmd_model(int argc, char **argv);
int sc_cmd_keygen(int argc, char **argv);
/* Makes a job key (cmd_keygen.c) and writes it to stdout (out NULL) or to a
 * new file out of mode 0600 (force: replace one); 0 or -1 with errstr. */
int sc_cli_keygen(const char *out, int force, char *errstr, size_t errstr_size);

/* cli_run.c. Set by SIGINT/SIGTERM once sc_cli_signals() was called; long-running
 * commands poll it and stop cleanly (flushing, committing, saving). */
extern volatile sig_atomic_t sc_cli_stop;
void sc_cli_signals(void);

/* cli_child.c: a child process running `scadles <command>`. */
typedef struct sc_cli_child {
        pid_t pid;
        char name[32];
        char out[600], err[600]; /* its stdout and stderr */
        int status, done;
} sc_cli_child_t;

/* Starts this executable with argv as child ch named name, its stdout and
 * stderr in out_dir/name.out and .err, in a process group of its own (a
 * Ctrl-C reaches the parent only); returns its pid, or -1. */
pid_t sc_cli_child_spawn(sc_cli_child_t *ch, const char *out_dir, const char *name,
                         char *const argv[]);
/* Signals the child and waits up to secs for it; SIGKILL after that.
 * Nothing for a child not started or already reaped. */
void sc_cli_child_stop(sc_cli_child_t *ch, int sig, double secs);
/* The last "summary: {JSON}" line of a child's stdout; NULL if none. The
 * caller owns the reference. */
json_t *sc_cli_child_summary(const sc_cli_child_t *ch);

/* cli_model.c. Each prints its own error as "scadles <cmd>: ..." and returns
 * an exit code (0 ok, 1 runtime failure, 2 usage or configuration error). */
/* Loads the checkpoint ckpt into model (and sgd, meta: may be NULL),
 * warning when the model has batchnorm and the checkpoint no statistics. */
int sc_cli_ckpt_load(const char *cmd, const char *ckpt, sc_model_t *model, sc_sgd_t *sgd,
                     sc_ckpt_meta_t *meta);
/* Builds conf's model and loads the checkpoint ckpt into it (parameters and
 * batchnorm statistics; a warning when the checkpoint has none). *modelp is
 * the caller's on 0, NULL otherwise. */
int sc_cli_model_load(const char *cmd, sc_conf_t *conf, const char *ckpt, sc_model_t **modelp);
/* Writes path as CSV: a header "label,predicted,p0,...,p<K-1>", then per
 * sample of x (n, input numel) its label y, the model's argmax and the
 * softmax probabilities of its K outputs (%.9g: float round trip). */
int sc_cli_write_predictions(const char *cmd, sc_model_t *model, const float *x, const int32_t *y,
                             size_t n, const char *path);

/* cli_run.c: librdkafka's own log lines (from its threads) for `scadles <opaque>`
 * (opaque: the command's name): warnings and worse, or notices too unless
 * sc_cli_quiet; warnings about properties a client ignores (CONFWARN: the
 * kafka object serves consumers and producers alike) are left out. */
extern volatile int sc_cli_quiet;
/* A library log line (opaque: the command's name): up to informational
 * (6), or warnings and worse (4) when sc_cli_quiet. */
void sc_cli_log(void *opaque, int level, const char *msg);
void sc_cli_kafka_log(void *opaque, int level, const char *fac, const char *name, const char *msg);

#endif
