/* cmd_model.c — `scadles model pull`: the view of every shard of a
 * distributed job on its model broadcast (J.bcast) assembled into a
 * checkpoint (batchnorm statistics recomputed from the held-out set). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "sc_ckpt.h"
#include "sc_eval_set.h"
#include "sc_file.h"
#include "sc_model_out.h"
#include "sc_nn.h"

static void sc_model_usage(FILE *out)
{
        fprintf(out,
                "usage: scadles model pull -c JOB.json (-B FILE | -b ADDR) -o CKPT\n"
                "                          [--set KEY=VALUE ...] [--timeout S]\n"
                "\n"
                "Reads every shard of the job's model broadcast (<job.name>.bcast:\n"
                "the newest keyframe and the deltas after it), assembles the shards\n"
                "into the model of the configuration and writes it atomically to CKPT,\n"
                "a checkpoint that `scadles eval` (and train --resume) reads\n"
                "(docs/MODEL.md). A model with\n"
                "batchnorm gets its running statistics recomputed from the held-out set\n"
                "(the eval section, else Fashion-MNIST's test set): J.bcast carries\n"
                "parameters only.\n"
                "\n"
                "options:\n"
                "  -c, --config FILE        the job's configuration (sections job, model,\n"
                "                           train.seed, kafka, eval)\n"
                "  -b, --bootstrap ADDR     Kafka bootstrap servers (kafka.bootstrap.servers)\n"
                "  -B, --bootstrap-file F   read the bootstrap address from F\n"
                "  -o, --output CKPT        checkpoint to write\n"
                "  -s, --set KEY=VALUE      override one property (repeatable)\n"
                "  -t, --timeout S          wait at most S seconds for the records (default 30)\n"
                "  -h, --help               this text\n"
                "\n"
                "Prints \"model pull: ...\" (shards, versions, file) on stderr.\n"
                "Exit status: 0 written, 1 runtime failure (broker, a shard never published),\n"
                "2 usage or configuration error.\n");
}

typedef struct sc_pull_opts {
        sc_cli_conf_opts_t co;
        const char *output;
        double timeout;
} sc_pull_opts_t;

static int sc_pull_args(int argc, char **argv, sc_pull_opts_t *o)
{
        static const struct option longopts[] = {
            {"config", required_argument, NULL, 'c'},
            {"bootstrap", required_argument, NULL, 'b'},
            {"bootstrap-file", required_argument, NULL, 'B'},
            {"output", required_argument, NULL, 'o'},
            {"set", required_argument, NULL, 's'},
            {"timeout", required_argument, NULL, 't'},
            {"help", no_argument, NULL, 'h'},
            {NULL, 0, NULL, 0},
        };
        int c;
        memset(o, 0, sizeof(*o));
        o->timeout = 30;
        optind = 1;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":c:b:B:o:s:t:h", longopts, NULL)) != -1) {
                int taken = sc_cli_conf_opt("model pull", &o->co, c, optarg);
                if (taken < 0)
                        return 2;
                if (taken)
                        continue;
                switch (c) {
                case 'o':
                        o->output = optarg;
                        break;
                case 't':
                        if (sc_cli_number("model pull", "--timeout", optarg, &o->timeout))
                                return 2;
                        break;
                default:
                        return sc_cli_opt_other("model pull", c, argv, sc_model_usage);
                }
        }
        if (sc_cli_no_operands("model pull", argc, argv, sc_model_usage))
                return 2;
        if (!o->co.config || !o->output || (!o->co.bootstrap && !o->co.bootstrap_file)) {
                fprintf(stderr, "scadles model pull: -c, -o and one of -b / -B are required\n\n");
                sc_model_usage(stderr);
                return 2;
        }
        return -1;
}

static int sc_model_pull(int argc, char **argv)
{
        char err[1024];
        sc_pull_opts_t o;
        sc_conf_t conf;
        sc_model_t *model = NULL;
        sc_dataset_t calib = {0};
        sc_model_out_info_t info;
        int rc;
        if ((rc = sc_pull_args(argc, argv, &o)) >= 0)
                return rc;
        sc_conf_defaults(&conf);
        if ((rc = sc_cli_conf_load("model pull", &conf, &o.co)))
                return rc;
        rc = 2;
        if (sc_model_new(&model, &conf.model, err, sizeof(err))) {
                sc_conf_model_error(&conf, err, sizeof(err));
                fprintf(stderr, "scadles model pull: %s\n", err);
                goto out;
        }
        rc = 1;
        if (sc_model_out_pull(&conf, model, (int)(o.timeout * 1000), &info, err, sizeof(err))) {
                fprintf(stderr, "scadles model pull: %s\n", err);
                goto out;
        }
        if (info.unpublished) {
                fprintf(stderr,
                        "scadles model pull: %s.model: %d of %d shards have no model record "
                        "(has the job run?)\n",
                        conf.job.name, info.unpublished, info.shards);
                goto out;
        }
        if (sc_model_nstate(model)) {
                sc_err_t e =
                    sc_eval_set_load(&conf, (int)sc_shape_numel(sc_model_output_shape(model)),
                                     &calib, err, sizeof(err));
                if (e || sc_model_out_recalibrate(model, &calib, err, sizeof(err))) {
                        fprintf(stderr, "scadles model pull: batchnorm statistics: %s\n", err);
                        rc = e == SC_ERR_CONFIG ? 2 : 1;
                        goto out;
                }
        }
        sc_ckpt_meta_t meta = {.step = info.min_version, .seed = conf.train.seed};
        if (sc_ckpt_save(o.output, model, NULL, &meta, err, sizeof(err))) {
                fprintf(stderr, "scadles model pull: %s\n", err);
                goto out;
        }
        fprintf(stderr,
                "model pull: %s.model: %d shards, versions %llu..%llu, %zu parameters%s -> %s\n",
                conf.job.name, info.shards, (unsigned long long)info.min_version,
                (unsigned long long)info.max_version, sc_model_nparams(model),
                sc_model_nstate(model) ? " (batchnorm statistics recomputed)" : "", o.output);
        rc = 0;
out:
        sc_dataset_free(&calib);
        sc_model_destroy(model);
        sc_conf_free(&conf);
        return rc;
}

int sc_cmd_model(int argc, char **argv)
{
        if (argc >= 2 && !strcmp(argv[1], "pull"))
                return sc_model_pull(argc - 1, argv + 1);
        if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
                sc_model_usage(stdout);
                return 0;
        }
        fprintf(stderr, "scadles model: expected a subcommand: pull\n\n");
        sc_model_usage(stderr);
        return 2;
}
