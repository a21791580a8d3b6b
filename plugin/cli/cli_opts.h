/* cli_opts.h — the options the commands share: configuration file, --set
 * overrides and the bootstrap address; numbers; getopt's help and error
 * cases. Every function prints its own error as "scadles <cmd>: ..." naming
 * the option and its value. */
#ifndef SC_CLI_OPTS_H
#define SC_CLI_OPTS_H

#include <stddef.h>
#include <stdio.h>

#include "sc_conf.h"

#define SC_CLI_MAX_SETS 64

/* The configuration options: -c/--config FILE, -s/--set KEY=VALUE
 * (repeatable, applied in order), and for the commands that reach a broker
 * -b/--bootstrap ADDR and -B/--bootstrap-file FILE. */
typedef struct sc_cli_conf_opts {
        const char *config, *bootstrap, *bootstrap_file;
        char *sets[SC_CLI_MAX_SETS];
        int n_sets;
} sc_cli_conf_opts_t;

/* Takes getopt's option c and its value arg when c is one of 'c', 's', 'b',
 * 'B': returns 1 (taken), 0 (another option), -1 after printing
 * "scadles <cmd>: more than 64 --set options". */
int sc_cli_conf_opt(const char *cmd, sc_cli_conf_opts_t *co, int c, char *arg);

/* Loads co->config into conf (the defaults when NULL), then
 * sc_cli_conf_apply. Prints "scadles <cmd>: <error>" and returns 2 on error
 * (conf freed; a second sc_conf_free is harmless), else 0. */
int sc_cli_conf_load(const char *cmd, sc_conf_t *conf, const sc_cli_conf_opts_t *co);
/* Applies the --set overrides of co to conf in order, then
 * kafka.bootstrap.servers from --bootstrap or from the first line of the
 * --bootstrap-file. Errors as sc_cli_conf_load. */
int sc_cli_conf_apply(const char *cmd, sc_conf_t *conf, const sc_cli_conf_opts_t *co);

/* Reads the bootstrap address from the first line of path (as `scadles
 * broker --bootstrap-file` writes it) into buf; on error prints "scadles
 * <cmd>: --bootstrap-file <path>: <why>" (why: the system's error, or
 * "empty") and returns -1. */
int sc_cli_bootstrap_read(const char *cmd, const char *path, char *buf, size_t size);

/* Parses option opt's value s as a finite number in [lo, hi] into *out; on
 * error prints "scadles <cmd>: <opt> <s>: expected a number >= <lo>" (hi
 * infinite) or "... expected a number in [<lo>, <hi>]" and returns -1. */
int sc_cli_number_in(const char *cmd, const char *opt, const char *s, double lo, double hi,
                     double *out);
/* sc_cli_number_in with [0, infinity). */
int sc_cli_number(const char *cmd, const char *opt, const char *s, double *out);
/* Parses option opt's value s as a decimal integer in [lo, hi] into *out;
 * on error prints "scadles <cmd>: <opt> <s>: expected an integer in
 * <lo>..<hi>" and returns -1. */
int sc_cli_integer(const char *cmd, const char *opt, const char *s, long long lo, long long hi,
                   long long *out);

/* getopt's remaining cases after a command's own options ('h' or ':' /
 * '?' for an option it does not know): prints usage (stdout for 'h') or
 * "scadles <cmd>: ..." and the usage on stderr; returns 0 for 'h', else 2.
 * The command's optstring starts with ':' and opterr is 0. */
int sc_cli_opt_other(const char *cmd, int c, char **argv, void (*usage)(FILE *));
/* 0 when getopt consumed every argument, else prints "unexpected argument"
 * and the usage on stderr and returns 2. */
int sc_cli_no_operands(const char *cmd, int argc, char **argv, void (*usage)(FILE *));

#endif
