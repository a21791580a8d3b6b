/* main.c — the scadles command: dispatches to subcommands. */
#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

#include "cmd.h"
#include "sc_conf.h"
#include "sc_mem.h"
#include "sc_nn.h"

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
    {"keygen", sc_cmd_keygen, "make a job key (authenticated jobs, docs/SECURITY.md)"},
};
#define SC_NCMDS (sizeof(sc_cmds) / sizeof(sc_cmds[0]))

/* The value of the first "KEY : value" line of /proc/cpuinfo, or "?". */
static void sc_cpuinfo(const char *key, char *out, size_t n)
{
        snprintf(out, n, "?");
        FILE *f = fopen("/proc/cpuinfo", "r");
        if (!f)
                return;
        char line[512];
        size_t kl = strlen(key);
        while (fgets(line, sizeof(line), f)) {
                /* KEY, blanks, then ':' ("model" is not "model name"). */
                if (strncmp(line, key, kl))
                        continue;
                char *v = line + kl + strspn(line + kl, " \t");
                if (*v != ':')
                        continue;
                v += 1 + strspn(v + 1, " \t");
                v[strcspn(v, "\n")] = '\0';
                snprintf(out, n, "%s", v);
                break;
        }
        fclose(f);
}

/* `scadles --version [--verbose]`: the version; with --verbose also what the
 * floating point runs on (the processor, OpenBLAS's kernel family, the nn
 * kernels' SIMD width: results differ in their last digits between
 * processors) and the libraries' versions. The "platform:" line is what the
 * reproduction scripts record next to the version. */
static int sc_version(int verbose)
{
        printf("scadles %s\n", SC_VERSION_STR);
        if (!verbose)
                return 0;
        char model[160], family[32], mnum[32];
        struct utsname u;
        sc_cpuinfo("model name", model, sizeof(model));
        sc_cpuinfo("cpu family", family, sizeof(family));
        sc_cpuinfo("model", mnum, sizeof(mnum));
        const char *arch = uname(&u) == 0 ? u.machine : "?";
        printf("platform: %s %s (family %s, model %s), OpenBLAS core %s, nn kernels %s\n", arch,
               model, family, mnum, sc_nn_blas_core(), sc_nn_kernels());
        printf("OpenBLAS: %s\n", sc_nn_blas_config());
        printf("librdkafka: %s\n", rd_kafka_version_str());
        printf("jansson: %s\n", JANSSON_VERSION);
        return 0;
}

static void sc_usage(FILE *out)
{
        fprintf(out, "usage: scadles <command> [options]\n\n"
                     "Online distributed training on Kafka streams.\n\ncommands:\n");
        for (size_t i = 0; i < SC_NCMDS; i++)
                fprintf(out, "  %-12s %s\n", sc_cmds[i].name, sc_cmds[i].summary);
        fprintf(out,
                "\n`scadles <command> --help` describes a command's options.\n"
                "`scadles --version` prints the version; `scadles --version --verbose`\n"
                "also the processor, OpenBLAS core and nn kernels results were computed on.\n");
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
        if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
                int verbose = argc > 2 && (!strcmp(argv[2], "--verbose") || !strcmp(argv[2], "-v"));
                if (argc > 2 + verbose) {
                        fprintf(stderr, "scadles: --version takes only --verbose\n");
                        return 2;
                }
                return sc_version(verbose);
        }
        /* workers and aggregators run for months: a heap that does not
         * fragment (sc_mem.h; predict then sets a threshold of its own) */
        sc_mem_tune();
        for (size_t i = 0; i < SC_NCMDS; i++)
                if (!strcmp(argv[1], sc_cmds[i].name))
                        return sc_cmds[i].fn(argc - 1, argv + 1);
        fprintf(stderr, "scadles: unknown command '%s'\n\n", argv[1]);
        sc_usage(stderr);
        return 2;
}
