/* main.c — the scadles command: dispatches to subcommands. */
#include <stdio.h>
#include <string.h>

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
