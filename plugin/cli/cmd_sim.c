/* cmd_sim.c — `scadles sim`: runs the simulator on a configuration file and
 * writes its metrics as JSON lines. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "sc_conf.h"
#include "sc_data.h"
#include "sc_file.h"
#include "sc_idx.h"
#include "sc_sim.h"

/* rng streams of the synthetic data, split from train.seed */
#define SC_SIM_STREAM_TRAIN 2
#define SC_SIM_STREAM_TEST 3

static void sc_sim_usage(FILE *out)
{
        fprintf(out,
                "usage: scadles sim -c CONFIG.json [-o METRICS.jsonl]\n\n"
                "Simulates N edge devices training the configured model with the configured\n"
                "sync policy on a virtual clock (section \"sim\"; model, optim, data and train\n"
                "as for `scadles train`). Writes one JSON object per line: metrics every\n"
                "sim.eval_every virtual seconds and an end summary. Same config, same bytes.\n\n"
                "  -c, --config FILE   configuration (required)\n"
                "  -o, --output FILE   metrics file (default: standard output)\n"
                "  -h, --help          this help\n");
}

static int sc_sim_data(const sc_conf_t *conf, sc_dataset_t *train, sc_dataset_t *test)
{
        const sc_conf_data_t *d = &conf->data;
        char err[1024];

        if (!strcmp(d->source, "synthetic")) {
                sc_rng_t root, r;
                sc_synth_spec_t spec = {.shape = conf->model.input,
                                        .n_classes = d->synth_classes,
                                        .noise = (float)d->synth_noise,
                                        .proto_seed = conf->train.seed};
                sc_rng_seed(&root, conf->train.seed);
                sc_rng_split(&root, &r, SC_SIM_STREAM_TRAIN);
                spec.n = (size_t)d->synth_train;
                if (sc_synth_make(train, &spec, &r, err, sizeof(err)))
                        goto out_err;
                sc_rng_seed(&root, conf->train.seed);
                sc_rng_split(&root, &r, SC_SIM_STREAM_TEST);
                spec.n = (size_t)d->synth_test;
                if (sc_synth_make(test, &spec, &r, err, sizeof(err)))
                        goto out_err;
                return 0;
        out_err:
                fprintf(stderr, "scadles sim: %s: $.data: %s\n", conf->origin, err);
                return 2;
        }
        if (sc_fmnist_load(d->dir, train, test, err, sizeof(err))) {
                fprintf(stderr, "scadles sim: Fashion-MNIST: %s\n", err);
                return 1;
        }
        if (sc_dataset_normalize(train, (float)d->mean, (float)d->std, err, sizeof(err)) ||
            sc_dataset_normalize(test, (float)d->mean, (float)d->std, err, sizeof(err))) {
                fprintf(stderr, "scadles sim: %s: $.data.std: %s\n", conf->origin, err);
                return 2;
        }
        return 0;
}

int sc_cmd_sim(int argc, char **argv)
{
        static const struct option opts[] = {{"config", required_argument, NULL, 'c'},
                                             {"output", required_argument, NULL, 'o'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
        const char *cfg = NULL, *outpath = NULL;
        sc_conf_t conf;
        sc_dataset_t train = {0}, test = {0};
        sc_sim_t *sim = NULL;
        FILE *out = stdout;
        char err[1024];
        int c, rc = 0;

        optind = 1;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":c:o:h", opts, NULL)) != -1) {
                switch (c) {
                case 'c':
                        cfg = optarg;
                        break;
                case 'o':
                        outpath = optarg;
                        break;
                default:
                        return sc_cli_opt_other("sim", c, argv, sc_sim_usage);
                }
        }
        if (sc_cli_no_operands("sim", argc, argv, sc_sim_usage))
                return 2;
        if (!cfg) {
                fprintf(stderr, "scadles sim: -c CONFIG is required\n\n");
                sc_sim_usage(stderr);
                return 2;
        }
        if (sc_conf_load_sim(&conf, cfg, err, sizeof(err))) {
                fprintf(stderr, "scadles sim: %s\n", err);
                return 2;
        }
        if ((rc = sc_sim_data(&conf, &train, &test)))
                goto out;
        if (sc_sim_new(&sim, &conf.sim, &conf, &train, &test, err, sizeof(err))) {
                fprintf(stderr, "scadles sim: %s: %s\n", cfg, err);
                rc = 2;
                goto out;
        }
        if (outpath && !(out = fopen(outpath, "w"))) {
                perror(outpath);
                rc = 1;
                goto out;
        }
        if (sc_sim_run(sim, out, err, sizeof(err))) {
                fprintf(stderr, "scadles sim: %s\n", err);
                rc = 1;
        }
        if (out != stdout && fclose(out)) {
                perror(outpath);
                rc = 1;
        }
out:
        sc_sim_destroy(sim);
        sc_dataset_free(&train);
        sc_dataset_free(&test);
        sc_conf_free(&conf);
        return rc;
}
