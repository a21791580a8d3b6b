/* cmd_broker.c — `scadles broker`: runs the embedded Kafka cluster as a
 * standalone process, or probes a broker for readiness. */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "sc_broker.h"
#include "sc_kafka_util.h"

#define SC_BROKER_MAX_TOPICS 256

static void sc_broker_usage(FILE *out)
{
        fprintf(out,
                "usage: scadles broker [--brokers N] [--topic NAME[:PARTITIONS] ...]\n"
                "                      [--bootstrap-file FILE]\n"
                "       scadles broker --probe ADDR [--timeout-ms MS]\n\n"
                "Runs librdkafka's in-process mock Kafka cluster on 127.0.0.1 until SIGINT or\n"
                "SIGTERM, printing \"bootstrap: 127.0.0.1:PORT\" on stdout once it serves.\n"
                "Unknown topics are created on first use with %d partitions.\n\n"
                "  --brokers N            brokers in the cluster (1..16, default 1)\n"
                "  --topic NAME[:P]       create NAME with P partitions (default %d) at start;\n"
                "                         may be repeated\n"
                "  --bootstrap-file FILE  also write the bootstrap address to FILE (removed\n"
                "                         on exit)\n"
                "  --probe ADDR           ask ADDR for cluster metadata and exit 0 if it answers\n"
                "  --timeout-ms MS        probe timeout (default 2000)\n\n"
                "Limits of the embedded cluster: docs/BROKERS.md.\n",
                SC_BROKER_AUTO_PARTITIONS, SC_BROKER_AUTO_PARTITIONS);
}

static int sc_broker_probe_main(const char *addr, int timeout_ms)
{
        char errstr[512];
        int brokers = 0, topics = 0;
        if (sc_kafka_probe(addr, timeout_ms, &brokers, &topics, errstr, sizeof(errstr))) {
                fprintf(stderr, "scadles broker: probe: %s\n", errstr);
                return 1;
        }
        printf("probe: %s answers: %d broker(s), %d topic(s)\n", addr, brokers, topics);
        return 0;
}

int sc_cmd_broker(int argc, char **argv)
{
        static const struct option opts[] = {
            {"brokers", required_argument, NULL, 'b'},
            {"topic", required_argument, NULL, 't'},
            {"bootstrap-file", required_argument, NULL, 'f'},
            {"probe", required_argument, NULL, 'p'},
            {"timeout-ms", required_argument, NULL, 'T'},
            {"help", no_argument, NULL, 'h'},
            {NULL, 0, NULL, 0},
        };
        const char *topics[SC_BROKER_MAX_TOPICS];
        int n_topics = 0, n_brokers = 1, timeout_ms = 2000, c;
        const char *bootstrap_file = NULL, *probe = NULL;
        char errstr[512];
        long long v;

        optind = 1;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":b:t:f:p:T:h", opts, NULL)) != -1) {
                switch (c) {
                case 'b':
                        if (sc_cli_integer("broker", "--brokers", optarg, 1, 16, &v))
                                return 2;
                        n_brokers = (int)v;
                        break;
                case 't':
                        if (n_topics == SC_BROKER_MAX_TOPICS) {
                                fprintf(stderr, "scadles broker: more than %d --topic options\n",
                                        SC_BROKER_MAX_TOPICS);
                                return 2;
                        }
                        topics[n_topics++] = optarg;
                        break;
                case 'f':
                        bootstrap_file = optarg;
                        break;
                case 'p':
                        probe = optarg;
                        break;
                case 'T':
                        if (sc_cli_integer("broker", "--timeout-ms", optarg, 1, INT_MAX, &v))
                                return 2;
                        timeout_ms = (int)v;
                        break;
                default:
                        return sc_cli_opt_other("broker", c, argv, sc_broker_usage);
                }
        }
        if (sc_cli_no_operands("broker", argc, argv, sc_broker_usage))
                return 2;
        if (probe)
                return sc_broker_probe_main(probe, timeout_ms);

        /* Validate every topic before starting anything. */
        char names[SC_BROKER_MAX_TOPICS][256];
        int parts[SC_BROKER_MAX_TOPICS];
        for (int i = 0; i < n_topics; i++) {
                if (sc_broker_topic_parse(topics[i], names[i], sizeof(names[i]), &parts[i], errstr,
                                          sizeof(errstr))) {
                        fprintf(stderr, "scadles broker: %s\n", errstr);
                        return 2;
                }
        }

        sc_cli_signals();
        sc_broker_t *broker = NULL;
        if (sc_broker_new(&broker, n_brokers, errstr, sizeof(errstr))) {
                fprintf(stderr, "scadles broker: %s\n", errstr);
                return 1;
        }
        int rc = 0;
        for (int i = 0; i < n_topics; i++) {
                if (sc_broker_topic_create(broker, names[i], parts[i], errstr, sizeof(errstr))) {
                        fprintf(stderr, "scadles broker: %s\n", errstr);
                        rc = 1;
                        goto out;
                }
                fprintf(stderr, "scadles broker: topic %s (%d partitions)\n", names[i], parts[i]);
        }
        if (bootstrap_file &&
            sc_broker_write_bootstrap(broker, bootstrap_file, errstr, sizeof(errstr))) {
                fprintf(stderr, "scadles broker: --bootstrap-file %s\n", errstr);
                rc = 1;
                goto out;
        }
        printf("bootstrap: %s\n", sc_broker_bootstraps(broker));
        fflush(stdout);
        while (!sc_cli_stop)
                usleep(50 * 1000);
        fprintf(stderr, "scadles broker: stopping\n");
        if (bootstrap_file)
                unlink(bootstrap_file);
out:
        sc_broker_destroy(broker);
        return rc;
}
