/* cli_opts.c — the options the commands share: loading the configuration
 * (the file, --set overrides, the bootstrap address from an option or a
 * file), option values as numbers, and getopt's help / error cases. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_opts.h"
#include "sc_file.h"

int sc_cli_conf_opt(const char *cmd, sc_cli_conf_opts_t *co, int c, char *arg)
{
        switch (c) {
        case 'c':
                co->config = arg;
                return 1;
        case 's':
                if (co->n_sets == SC_CLI_MAX_SETS) {
                        fprintf(stderr, "scadles %s: more than %d --set options\n", cmd,
                                SC_CLI_MAX_SETS);
                        return -1;
                }
                co->sets[co->n_sets++] = arg;
                return 1;
        case 'b':
                co->bootstrap = arg;
                return 1;
        case 'B':
                co->bootstrap_file = arg;
                return 1;
        default:
                return 0;
        }
}

int sc_cli_bootstrap_read(const char *cmd, const char *path, char *buf, size_t size)
{
        FILE *f = fopen(path, "r");
        if (!f) {
                fprintf(stderr, "scadles %s: --bootstrap-file %s: %s\n", cmd, path,
                        strerror(errno));
                return -1;
        }
        int ok = fgets(buf, (int)size, f) != NULL;
        fclose(f);
        buf[ok ? strcspn(buf, "\r\n") : 0] = '\0';
        if (!buf[0]) {
                fprintf(stderr, "scadles %s: --bootstrap-file %s: empty\n", cmd, path);
                return -1;
        }
        return 0;
}

int sc_cli_conf_apply(const char *cmd, sc_conf_t *conf, const sc_cli_conf_opts_t *co)
{
        char err[1024], line[1200], buf[1024];
        const char *bootstrap = co->bootstrap;
        if (co->n_sets > 0 &&
            sc_conf_set_all(conf, (const char *const *)co->sets, co->n_sets, err, sizeof(err)))
                goto bad_set;
        if (co->bootstrap_file) {
                if (sc_cli_bootstrap_read(cmd, co->bootstrap_file, buf, sizeof(buf))) {
                        sc_conf_free(conf);
                        return 2;
                }
                bootstrap = buf;
        }
        if (bootstrap) {
                snprintf(line, sizeof(line), "kafka.bootstrap.servers=%s", bootstrap);
                if (sc_conf_set(conf, line, err, sizeof(err)))
                        goto bad_set;
        }
        return 0;
bad_set:
        fprintf(stderr, "scadles %s: %s\n", cmd, err);
        sc_conf_free(conf);
        return 2;
}

int sc_cli_conf_load(const char *cmd, sc_conf_t *conf, const sc_cli_conf_opts_t *co)
{
        char err[1024];
        if (!co->config) {
                sc_conf_defaults(conf);
        } else if (sc_conf_load(conf, co->config, err, sizeof(err))) {
                fprintf(stderr, "scadles %s: %s\n", cmd, err);
                return 2;
        }
        return sc_cli_conf_apply(cmd, conf, co);
}

int sc_cli_number_in(const char *cmd, const char *opt, const char *s, double lo, double hi,
                     double *out)
{
        char *end;
        errno = 0;
        double v = strtod(s, &end);
        if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi) {
                if (isinf(hi))
                        fprintf(stderr, "scadles %s: %s %s: expected a number >= %g\n", cmd, opt, s,
                                lo);
                else
                        fprintf(stderr, "scadles %s: %s %s: expected a number in [%g, %g]\n", cmd,
                                opt, s, lo, hi);
                return -1;
        }
        *out = v;
        return 0;
}

int sc_cli_number(const char *cmd, const char *opt, const char *s, double *out)
{
        return sc_cli_number_in(cmd, opt, s, 0, INFINITY, out);
}

int sc_cli_integer(const char *cmd, const char *opt, const char *s, long long lo, long long hi,
                   long long *out)
{
        char *end;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (errno || end == s || *end || v < lo || v > hi) {
                fprintf(stderr, "scadles %s: %s %s: expected an integer in %lld..%lld\n", cmd, opt,
                        s, lo, hi);
                return -1;
        }
        *out = v;
        return 0;
}

int sc_cli_opt_other(const char *cmd, int c, char **argv, void (*usage)(FILE *))
{
        if (c == 'h') {
                usage(stdout);
                return 0;
        }
        if (c == ':')
                fprintf(stderr, "scadles %s: option %s needs a value\n\n", cmd, argv[optind - 1]);
        else
                fprintf(stderr, "scadles %s: unknown option '%s'\n\n", cmd, argv[optind - 1]);
        usage(stderr);
        return 2;
}

int sc_cli_no_operands(const char *cmd, int argc, char **argv, void (*usage)(FILE *))
{
        if (optind >= argc)
                return 0;
        fprintf(stderr, "scadles %s: unexpected argument '%s'\n\n", cmd, argv[optind]);
        usage(stderr);
        return 2;
}
