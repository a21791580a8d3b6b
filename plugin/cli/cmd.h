/* cmd.h — the scadles command's subcommands and their shared helpers. */
#ifndef SC_CMD_H
#define SC_CMD_H

#include <signal.h>
#include <stdio.h>

#include "sc_conf.h"

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
int sc_cmd_model(int argc, char **argv);

/* Set by SIGINT/SIGTERM once sc_cli_signals() was called; long-running
 * commands poll it and stop cleanly (flushing, committing, saving). */
extern volatile sig_atomic_t sc_cli_stop;
void sc_cli_signals(void);
/* Monotonic seconds. */
double sc_cli_now(void);
/* Parses option opt's value s as a finite number >= 0 into *out; on error
 * prints "scadles <cmd>: <opt> <s>: expected a number >= 0" and returns -1. */
int sc_cli_number(const char *cmd, const char *opt, const char *s, double *out);

/* Loads path into conf, applies the n_sets "KEY=VALUE" overrides, then
 * kafka.bootstrap.servers from bootstrap_file's first line or bootstrap
 * (either may be NULL). Prints "scadles <cmd>: ..." on error and returns 2
 * (conf freed), else 0. */
int sc_cli_conf_load(const char *cmd, const char *path, char *const *sets, int n_sets,
                     const char *bootstrap, const char *bootstrap_file, sc_conf_t *conf);
/* getopt's remaining cases after a command's own options ('h' or ':' /
 * '?' for an option it does not know): prints usage (stdout for 'h') or
 * "scadles <cmd>: ..." and the usage on stderr; returns 0 for 'h', else 2. */
int sc_cli_opt_other(const char *cmd, int c, char **argv, void (*usage)(FILE *));
/* 0 when getopt consumed every argument, else prints "unexpected argument"
 * and the usage on stderr and returns 2. */
int sc_cli_no_operands(const char *cmd, int argc, char **argv, void (*usage)(FILE *));

#endif
