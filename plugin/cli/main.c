/* main.c — the scadles command: dispatches to subcommands. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd.h"
#include "sc_conf.h"

static const sc_cmd_t sc_cmds[] = {
    {"train", sc_cmd_train, "train a model offline on a data set (Fashion-MNIST, synthetic)"},
    {"eval", sc_cmd_eval, "test-set accuracy of a checkpoint"},
    {"broker", sc_cmd_broker, "run the embedded Kafka cluster (librdkafka mock) on 127.0.0.1"},
    {"feed", sc_cmd_feed, "publish Fashion-MNIST or synthetic samples to topics at set rates"},
    {"worker", sc_cmd_worker,
     "train online on Kafka topics (standalone, or a worker of a distributed job)"},
    {"aggregator", sc_cmd_aggregator,
     "apply a distributed job's updates to its model shards (J.grad -> J.model)"},
    {"demo", sc_cmd_demo,
     "run a whole distributed job here (broker, feed, workers, aggregators) and plot accuracy"},
    {"predict", sc_cmd_predict,
     "score records of Kafka topics with a model and produce the predictions to a topic"},
    {"sim", sc_cmd_sim, "simulate edge devices and a sync policy on a virtual clock"},
    {"export", sc_cmd_export, "write a checkpoint as an ONNX model (input normalization included)"},
    {"model", sc_cmd_model, "model pull: assemble a distributed job's model into a checkpoint"},
    {"config", sc_cmd_config, "list configuration properties, or check a config file"},
};
#define SC_NCMDS (sizeof(sc_cmds) / sizeof(sc_cmds[0]))

volatile sig_atomic_t sc_cli_stop;

static void sc_cli_on_signal(int sig)
{
        (void)sig;
        sc_cli_stop = 1;
}

void sc_cli_signals(void)
{
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = sc_cli_on_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
}

double sc_cli_now(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int sc_cli_number(const char *cmd, const char *opt, const char *s, double *out)
{
        char *end;
        errno = 0;
        double v = strtod(s, &end);
        if (errno || end == s || *end || !isfinite(v) || v < 0) {
                fprintf(stderr, "scadles %s: %s %s: expected a number >= 0\n", cmd, opt, s);
                return -1;
        }
        *out = v;
        return 0;
}

volatile int sc_cli_quiet;

void sc_cli_log(void *opaque, int level, const char *msg)
{
        if (level > 6 || (level > 4 && sc_cli_quiet))
                return;
        fprintf(stderr, "scadles %s: %s\n", (const char *)opaque, msg);
}

void sc_cli_kafka_log(void *opaque, int level, const char *fac, const char *name, const char *msg)
{
        if (level > 5 || (level > 4 && sc_cli_quiet) || !strcmp(fac, "CONFWARN"))
                return;
        fprintf(stderr, "scadles %s: kafka: %s: %s: %s\n", (const char *)opaque, name, fac, msg);
}

static void sc_usage(FILE *out)
{
        fprintf(out, "usage: scadles <command> [options]\n\n"
                     "Online distributed training on Kafka streams.\n\ncommands:\n");
        for (size_t i = 0; i < SC_NCMDS; i++)
                fprintf(out, "  %-12s %s\n", sc_cmds[i].name, sc_cmds[i].summary);
        fprintf(out, "\n`scadles <command> --help` describes a command's options.\n"
                     "`scadles --version` prints the version.\n");
}

int main(int argc, char **argv)
{
        if (argc < 2) {
                sc_usage(stderr);
                return 2;
        }
        if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
                sc_usage(stdout);
                return 0;
        }
        if (!strcmp(argv[1], "--version")) {
                printf("scadles %s\n", SC_VERSION_STR);
                return 0;
        }
        for (size_t i = 0; i < SC_NCMDS; i++)
                if (!strcmp(argv[1], sc_cmds[i].name))
                        return sc_cmds[i].fn(argc - 1, argv + 1);
        fprintf(stderr, "scadles: unknown command '%s'\n\n", argv[1]);
        sc_usage(stderr);
        return 2;
}
