/* cmd_aggregator.c — `scadles aggregator`: runs an aggregator of a
 * distributed job (the runtime is connectors/aggregator.c). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "sc_aggregator.h"
#include "sc_conf.h"
#include "sc_kafka_util.h"

typedef struct sc_agg_opts {
        sc_cli_conf_opts_t co;
        int quiet, no_create;
        double duration, idle_exit;
} sc_agg_opts_t;

static void sc_agg_usage(FILE *out)
{
        fprintf(out,
                "usage: scadles aggregator -c CONFIG [--set KEY=VALUE ...] [options]\n"
                "\n"
                "Aggregates a distributed job's updates: joins the consumer group\n"
                "<job.name>.aggregators on <job>.grad, owns the shards of its partitions,\n"
                "restores them from <job>.model, applies each (worker, seq) exactly once\n"
                "and publishes shard versions to <job>.model (docs/DISTRIBUTED.md).\n"
                "\n"
                "options:\n"
                "  -c, --config FILE        job configuration (JSON; sections job, model,\n"
                "                           optim, train.seed, kafka)\n"
                "  -s, --set KEY=VALUE      override one property (repeatable)\n"
                "  -b, --bootstrap ADDR     Kafka bootstrap servers (kafka.bootstrap.servers)\n"
                "  -B, --bootstrap-file F   read the bootstrap address from F\n"
                "  -d, --duration S         stop after S seconds\n"
                "  -i, --idle-exit S        stop after S seconds without an update record (time\n"
                "                           without a reachable broker does not count)\n"
                "      --no-create          do not create the job's topics (only use them)\n"
                "  -q, --quiet              no progress lines\n"
                "  -h, --help               this text\n"
                "\n"
                "With train.checkpoint, the job's whole model (every shard's newest J.model\n"
                "record) is saved there every train.checkpoint_interval seconds and at stop\n"
                "(docs/MODEL.md).\n"
                "\n"
                "With metrics.listen (e.g. --set metrics.listen=127.0.0.1:9470) it serves\n"
                "Prometheus metrics on /metrics and its health on /healthz\n"
                "(docs/OPERATIONS.md).\n"
                "\n"
                "Output: progress lines on stderr, then `summary: {json}` on stdout.\n"
                "Exit status: 0 ok, 1 runtime failure, 2 usage or configuration error.\n");
}

static void sc_agg_print(void *opaque, int level, const char *line)
{
        (void)opaque;
        (void)level;
        fprintf(stderr, "aggregator: %s\n", line);
}

static int sc_agg_parse(int argc, char **argv, sc_agg_opts_t *o)
{
        static const struct option longopts[] = {{"config", required_argument, NULL, 'c'},
                                                 {"set", required_argument, NULL, 's'},
                                                 {"bootstrap", required_argument, NULL, 'b'},
                                                 {"bootstrap-file", required_argument, NULL, 'B'},
                                                 {"duration", required_argument, NULL, 'd'},
                                                 {"idle-exit", required_argument, NULL, 'i'},
                                                 {"no-create", no_argument, NULL, 'N'},
                                                 {"quiet", no_argument, NULL, 'q'},
                                                 {"help", no_argument, NULL, 'h'},
                                                 {NULL, 0, NULL, 0}};
        int c;

        memset(o, 0, sizeof(*o));
        optind = 1;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":c:s:b:B:d:i:qh", longopts, NULL)) != -1) {
                int taken = sc_cli_conf_opt("aggregator", &o->co, c, optarg);
                if (taken < 0)
                        return 2;
                if (taken)
                        continue;
                switch (c) {
                case 'd':
                        if (sc_cli_number("aggregator", "--duration", optarg, &o->duration))
                                return 2;
                        break;
                case 'i':
                        if (sc_cli_number("aggregator", "--idle-exit", optarg, &o->idle_exit))
                                return 2;
                        break;
                case 'N':
                        o->no_create = 1;
                        break;
                case 'q':
                        o->quiet = 1;
                        break;
                default:
                        return sc_cli_opt_other("aggregator", c, argv, sc_agg_usage);
                }
        }
        if (sc_cli_no_operands("aggregator", argc, argv, sc_agg_usage))
                return 2;
        if (!o->co.config) {
                fprintf(stderr, "scadles aggregator: -c CONFIG is required\n\n");
                sc_agg_usage(stderr);
                return 2;
        }
        return -1;
}

int sc_cmd_aggregator(int argc, char **argv)
{
        sc_agg_opts_t o;
        sc_conf_t conf;
        sc_aggregator_t *agg = NULL;
        char err[1024];
        int rc;

        if ((rc = sc_agg_parse(argc, argv, &o)) >= 0)
                return rc;
        sc_conf_defaults(&conf);
        if ((rc = sc_cli_conf_load("aggregator", &conf, &o.co)))
                goto out;
        sc_cli_quiet = o.quiet;
        sc_kafka_log_set_sink(sc_cli_kafka_log, "aggregator");
        sc_cli_signals();
        sc_aggregator_spec_t spec = {.conf = &conf,
                                     .duration = o.duration,
                                     .idle_exit = o.idle_exit,
                                     .create_topics = !o.no_create,
                                     .log = o.quiet ? NULL : sc_agg_print};
        sc_err_t e = sc_aggregator_new(&agg, &spec, err, sizeof(err));
        if (e) {
                fprintf(stderr, "scadles aggregator: %s\n", err);
                rc = e == SC_ERR_CONFIG ? 2 : 1;
                goto out;
        }
        rc = 0;
        if (sc_aggregator_run(agg, &sc_cli_stop, err, sizeof(err))) {
                fprintf(stderr, "scadles aggregator: %s\n", err);
                rc = 1;
        }
        char *sum = sc_aggregator_summary(agg);
        if (sum) {
                printf("summary: %s\n", sum);
                free(sum);
        }
out:
        fflush(stdout);
        sc_aggregator_destroy(agg);
        sc_kafka_log_set_sink(NULL, NULL);
        sc_conf_free(&conf);
        return rc;
}
