/* cli_conf.c — what the commands share around their options: loading the
 * configuration (the file, --set overrides, the bootstrap address from an
 * option or a file) and getopt's help / error cases. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"

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

int sc_cli_conf_load(const char *cmd, sc_conf_t *conf, const sc_cli_conf_opts_t *co)
{
        char err[1024], line[1200], buf[1024];
        const char *bootstrap = co->bootstrap;
        if (sc_conf_load(conf, co->config, err, sizeof(err))) {
                fprintf(stderr, "scadles %s: %s\n", cmd, err);
                return 2;
        }
        for (int i = 0; i < co->n_sets; i++)
                if (sc_conf_set(conf, co->sets[i], err, sizeof(err)))
                        goto bad_set;
        if (co->bootstrap_file) {
                FILE *f = fopen(co->bootstrap_file, "r");
                if (!f || !fgets(buf, sizeof(buf), f)) {
                        fprintf(stderr, "scadles %s: --bootstrap-file %s: %s\n", cmd,
                                co->bootstrap_file, f ? "empty" : strerror(errno));
                        if (f)
                                fclose(f);
                        sc_conf_free(conf);
                        return 2;
                }
                fclose(f);
                buf[strcspn(buf, "\r\n")] = '\0';
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
