/* cmd_train.c — `scadles train` (data and model for the offline trainer,
 * connectors/trainer.c, and its report) and `scadles eval` (test accuracy
 * of a checkpoint). */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "sc_ckpt.h"
#include "sc_conf.h"
#include "sc_data.h"
#include "sc_eval_set.h"
#include "sc_file.h"
#include "sc_metrics.h"
#include "sc_idx.h"
#include "sc_nn.h"
#include "sc_optim.h"
#include "sc_rng.h"
#include "sc_trainer.h"

typedef struct sc_run {
        const char *cmd; /* "train" / "eval", for messages */
        sc_conf_t conf;
        int have_conf;
        sc_dataset_t train, test;
        sc_model_t *model;
} sc_run_t;

static void sc_run_free(sc_run_t *run)
{
        sc_model_destroy(run->model);
        sc_dataset_free(&run->train);
        sc_dataset_free(&run->test);
        if (run->have_conf)
                sc_conf_free(&run->conf);
}

/* Loads the configuration, applies overrides and the bootstrap address;
 * returns an exit code. */
static int sc_run_conf(sc_run_t *run, const sc_cli_conf_opts_t *co)
{
        int rc = sc_cli_conf_load(run->cmd, &run->conf, co);
        run->have_conf = rc == 0;
        return rc;
}

/* Makes the data set fit the model input: same element count, any shape. */
static int sc_run_fit_shape(sc_run_t *run, sc_dataset_t *ds, const char *which)
{
        const sc_model_spec_t *spec = &run->conf.model;
        if (!ds->x)
                return 0;
        if (sc_shape_numel(ds->shape) != sc_shape_numel(spec->input)) {
                fprintf(stderr,
                        "scadles %s: %s: $.model.input: (%d, %d, %d) does not fit the %s "
                        "samples of shape (%d, %d, %d)\n",
                        run->cmd, run->conf.origin, spec->input.c, spec->input.h, spec->input.w,
                        which, ds->shape.c, ds->shape.h, ds->shape.w);
                return 2;
        }
        ds->shape = spec->input;
        return 0;
}

/* Loads (or generates) the data named by the configuration; want_train = 0
 * skips the training half. Returns an exit code. */
static int sc_run_data(sc_run_t *run, int want_train)
{
        char err[1024];
        sc_conf_data_t *d = &run->conf.data;
        int rc;

        if (!want_train && sc_eval_set_configured(&run->conf))
                return 0; /* sc_run_eval_set loads the test set */

        if (!strcmp(d->source, "synthetic")) {
                sc_rng_t root, r;
                sc_synth_spec_t spec = {.shape = run->conf.model.input,
                                        .n_classes = d->synth_classes,
                                        .noise = (float)d->synth_noise,
                                        .proto_seed = run->conf.train.seed};
                sc_rng_seed(&root, run->conf.train.seed);
                sc_rng_split(&root, &r, SC_STREAM_SYNTH_TRAIN);
                spec.n = (size_t)d->synth_train;
                if (want_train && sc_synth_make(&run->train, &spec, &r, err, sizeof(err)))
                        goto out_synth_err;
                sc_rng_seed(&root, run->conf.train.seed);
                sc_rng_split(&root, &r, SC_STREAM_SYNTH_TEST);
                spec.n = (size_t)d->synth_test;
                if (sc_synth_make(&run->test, &spec, &r, err, sizeof(err)))
                        goto out_synth_err;
                return 0;
        out_synth_err:
                fprintf(stderr, "scadles %s: %s: $.data: %s\n", run->cmd, run->conf.origin, err);
                return 2;
        }
        if (strcmp(d->source, "fashion-mnist")) {
                fprintf(stderr, "scadles %s: %s: $.data.source: unknown source \"%s\"\n", run->cmd,
                        run->conf.origin, d->source);
                return 2;
        }
        if (sc_fmnist_load(d->dir, want_train ? &run->train : NULL, &run->test, err, sizeof(err))) {
                fprintf(stderr, "scadles %s: Fashion-MNIST: %s\n", run->cmd, err);
                if (!d->dir[0] || !strcmp(d->dir, SC_FMNIST_DIR))
                        fprintf(stderr, "(install Debian's dataset-fashion-mnist package or set "
                                        "data.dir)\n");
                return 1;
        }
        if ((want_train &&
             sc_dataset_normalize(&run->train, (float)d->mean, (float)d->std, err, sizeof(err))) ||
            sc_dataset_normalize(&run->test, (float)d->mean, (float)d->std, err, sizeof(err))) {
                fprintf(stderr, "scadles %s: %s: $.data.std: %s\n", run->cmd, run->conf.origin,
                        err);
                return 2;
        }
        if ((rc = sc_run_fit_shape(run, &run->train, "training")) ||
            (rc = sc_run_fit_shape(run, &run->test, "test")))
                return rc;
        return 0;
}

/* Builds the model and checks it against the data; returns an exit code. */
static int sc_run_model(sc_run_t *run)
{
        char err[1024];
        if (sc_model_new(&run->model, &run->conf.model, err, sizeof(err))) {
                sc_conf_model_error(&run->conf, err, sizeof(err));
                fprintf(stderr, "scadles %s: %s\n", run->cmd, err);
                return 2;
        }
        if (run->conf.model.loss != SC_LOSS_SOFTMAX_XENT) {
                fprintf(stderr,
                        "scadles %s: %s: $.model.loss: classification data needs the softmax "
                        "cross-entropy loss\n",
                        run->cmd, run->conf.origin);
                return 2;
        }
        size_t out = sc_shape_numel(sc_model_output_shape(run->model));
        if (run->test.n_classes && out != (size_t)run->test.n_classes) {
                fprintf(stderr,
                        "scadles %s: %s: $.model.layers: the model has %zu outputs but the "
                        "data "
                        "set has %d classes\n",
                        run->cmd, run->conf.origin, out, run->test.n_classes);
                return 2;
        }
        if (run->conf.train.threads > 0)
                sc_nn_set_threads(run->conf.train.threads);
        return 0;
}

/* With an eval section, the held-out set comes from it (decoded like a
 * stream's records) in place of data.source's test half. Returns an exit
 * code. */
static int sc_run_eval_set(sc_run_t *run)
{
        char err[1024];
        if (!sc_eval_set_configured(&run->conf))
                return 0;
        sc_dataset_free(&run->test);
        int classes = (int)sc_shape_numel(sc_model_output_shape(run->model));
        sc_err_t e = sc_eval_set_load(&run->conf, classes, &run->test, err, sizeof(err));
        if (e) {
                fprintf(stderr, "scadles %s: %s\n", run->cmd, err);
                return e == SC_ERR_CONFIG ? 2 : 1;
        }
        return 0;
}

/* Test-set accuracy (and mean loss) in batches; returns -1 on failure. */
static int sc_run_evaluate(sc_run_t *run, size_t *correct, double *loss)
{
        const sc_dataset_t *ds = &run->test;
        return sc_model_eval_set(run->model, ds->x, ds->y, ds->n, SC_TRAINER_EVAL_BATCH, loss,
                                 correct)
                   ? -1
                   : 0;
}

static int sc_run_print_accuracy(sc_run_t *run)
{
        size_t correct;
        double loss;
        if (sc_run_evaluate(run, &correct, &loss)) {
                fprintf(stderr, "scadles %s: evaluation failed (out of memory)\n", run->cmd);
                return 1;
        }
        printf("test accuracy: %.4f (%zu/%zu)\n", (double)correct / (double)run->test.n, correct,
               run->test.n);
        fflush(stdout);
        return 0;
}

/* `eval`'s per-class figures on stderr: "metrics: {JSON}" (sc_metrics_json:
 * accuracy, loss, per_class_accuracy, confusion; classes: the held-out
 * decoder's class names, when it has them). */
static void sc_run_print_metrics(sc_run_t *run)
{
        char err[256];
        sc_metrics_t *m = NULL;
        if (sc_metrics_new(&m, run->test.n_classes, 1, err, sizeof(err)) ||
            sc_metrics_eval(m, run->model, run->test.x, run->test.y, run->test.n)) {
                sc_metrics_destroy(m);
                return;
        }
        json_t *j = sc_metrics_json(m);
        json_object_del(j, "window");
        json_object_del(j, "window_samples");
        json_object_del(j, "window_accuracy");
        json_object_del(j, "window_loss");
        if (j && sc_eval_set_configured(&run->conf)) {
                sc_decode_spec_t ds;
                sc_eval_set_decoder(&run->conf, sc_shape_numel(run->conf.model.input),
                                    run->test.n_classes, &ds);
                json_t *cls = ds.labels ? json_array() : NULL;
                for (size_t k = 0; cls && k < sc_vocab_size(ds.labels); k++)
                        json_array_append_new(cls, json_string(sc_vocab_name(ds.labels, k)));
                if (cls)
                        json_object_set_new(j, "classes", cls);
        }
        char *text = j ? json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(10)) : NULL;
        if (text)
                fprintf(stderr, "metrics: %s\n", text);
        free(text);
        json_decref(j);
        sc_metrics_destroy(m);
}

static void sc_train_usage(FILE *out)
{
        fprintf(out, "usage: scadles train -c CONFIG [--set KEY=VALUE ...] [--epochs N] "
                     "[--resume CKPT]\n"
                     "\n"
                     "Trains the configured model offline on data.source (fashion-mnist from\n"
                     "data.dir, or synthetic) with SGD and the configured schedule, "
                     "shuffling\n"
                     "every epoch from train.seed. Progress (epoch, step, loss, train "
                     "accuracy,\n"
                     "samples/s, lr) goes to stderr every train.progress_interval seconds; "
                     "each\n"
                     "epoch's test accuracy and the final line \"test accuracy: A "
                     "(hits/total)\"\n"
                     "go to stdout (the test set: the eval section's, else data.source's).\n"
                     "The checkpoint (train.checkpoint, if set) is saved after\n"
                     "every epoch and when the run ends; Ctrl-C (SIGINT/SIGTERM) saves it "
                     "and\n"
                     "stops.\n"
                     "\n"
                     "options:\n"
                     "  -c, --config FILE    JSON configuration (see `scadles config`)\n"
                     "  -s, --set KEY=VALUE  override one property, e.g. --set optim.lr=0.05\n"
                     "                       (repeatable, applied in order)\n"
                     "  -e, --epochs N       train until N epochs in total (train.epochs)\n"
                     "  -r, --resume CKPT    continue from a checkpoint: parameters, "
                     "optimizer\n"
                     "                       velocity, epoch and step (same model required)\n"
                     "  -b, --bootstrap ADDR Kafka bootstrap servers (an eval.topic's broker)\n"
                     "  -B, --bootstrap-file F  read the bootstrap address from F\n"
                     "  -h, --help           this text\n"
                     "\n"
                     "exit status: 0 done, 1 runtime error (data, checkpoint, divergence),\n"
                     "2 usage or configuration error, 130 interrupted (checkpoint saved).\n");
}

static void sc_eval_usage(FILE *out)
{
        fprintf(out,
                "usage: scadles eval -c CONFIG --checkpoint CKPT [--set KEY=VALUE ...]\n"
                "                    [-b ADDR | -B FILE] [--predictions FILE]\n"
                "\n"
                "Loads the checkpoint into the configured model and prints its test-set\n"
                "accuracy as \"test accuracy: A (hits/total)\" on stdout. The test set is\n"
                "the eval section's (eval.file: CSV, JSON Lines or IDX; eval.topic: read to\n"
                "its end), decoded like the streams, else data.source's test half. Per-class\n"
                "accuracy and the confusion matrix follow on stderr as \"metrics: {JSON}\".\n"
                "\n"
                "options:\n"
                "  -c, --config FILE      JSON configuration of the model and data\n"
                "  -k, --checkpoint CKPT  checkpoint of `scadles train`, `worker`, `aggregator`,\n"
                "                         `model pull` or the plugin (docs/MODEL.md)\n"
                "  -s, --set KEY=VALUE    override one property (repeatable)\n"
                "  -b, --bootstrap ADDR   Kafka bootstrap servers (an eval.topic's broker)\n"
                "  -B, --bootstrap-file F read the bootstrap address from F\n"
                "  -p, --predictions FILE also write each test sample's label, predicted\n"
                "                         class and class probabilities as CSV\n"
                "                         (label,predicted,p0,...; one line per sample)\n"
                "  -h, --help             this text\n"
                "\n"
                "exit status: 0 done, 1 runtime error, 2 usage or configuration "
                "error.\n");
}

typedef struct sc_train_opts {
        sc_cli_conf_opts_t co;
        const char *resume, *checkpoint, *predictions;
        int epochs; /* 0 = from the configuration */
} sc_train_opts_t;

/* Parses train/eval options; returns -1 to go on, else an exit code. */
static int sc_train_args(int argc, char **argv, sc_train_opts_t *o, int eval)
{
        static const struct option longopts[] = {
            {"config", required_argument, NULL, 'c'},
            {"set", required_argument, NULL, 's'},
            {"epochs", required_argument, NULL, 'e'},
            {"resume", required_argument, NULL, 'r'},
            {"checkpoint", required_argument, NULL, 'k'},
            {"predictions", required_argument, NULL, 'p'},
            {"bootstrap", required_argument, NULL, 'b'},
            {"bootstrap-file", required_argument, NULL, 'B'},
            {"help", no_argument, NULL, 'h'},
            {NULL, 0, NULL, 0},
        };
        const char *name = eval ? "eval" : "train";
        void (*usage)(FILE *) = eval ? sc_eval_usage : sc_train_usage;
        int c;
        long long v;

        memset(o, 0, sizeof(*o));
        optind = 1;
        opterr = 0;
        while ((c = getopt_long(argc, argv, eval ? ":c:s:k:p:b:B:h" : ":c:s:e:r:b:B:h", longopts,
                                NULL)) != -1) {
                int taken = sc_cli_conf_opt(name, &o->co, c, optarg);
                if (taken < 0)
                        return 2;
                if (taken)
                        continue;
                switch (c) {
                case 'e':
                        if (eval)
                                goto bad_option;
                        if (sc_cli_integer(name, "--epochs", optarg, 1, 1000000, &v))
                                return 2;
                        o->epochs = (int)v;
                        break;
                case 'r':
                        if (eval)
                                goto bad_option;
                        o->resume = optarg;
                        break;
                case 'k':
                        if (!eval)
                                goto bad_option;
                        o->checkpoint = optarg;
                        break;
                case 'p':
                        if (!eval)
                                goto bad_option;
                        o->predictions = optarg;
                        break;
                default:
                        return sc_cli_opt_other(name, c, argv, usage);
                }
                continue;
        bad_option: /* an option of the other command (train / eval) */
                for (const struct option *lo = longopts; lo->name; lo++)
                        if (lo->val == c)
                                fprintf(stderr, "scadles %s: --%s is not an option of %s\n\n", name,
                                        lo->name, name);
                usage(stderr);
                return 2;
        }
        if (sc_cli_no_operands(name, argc, argv, usage))
                return 2;
        if (!o->co.config || (eval && !o->checkpoint)) {
                fprintf(stderr, "scadles %s: %s is required\n\n", name,
                        !o->co.config ? "-c CONFIG" : "--checkpoint CKPT");
                usage(stderr);
                return 2;
        }
        return -1;
}

/* An epoch's line on stdout. */
static void sc_train_on_epoch(void *opaque, const sc_trainer_epoch_t *e)
{
        printf("epoch %llu/%d: train loss %.4f acc %.4f, test loss %.4f accuracy %.4f "
               "(%zu/%zu), %.1f s\n",
               (unsigned long long)e->epoch, e->epochs, e->train_loss, e->train_acc, e->test_loss,
               (double)e->test_correct / (double)e->test_n, e->test_correct, e->test_n, e->seconds);
        fflush(stdout);
}

/* Progress lines on stderr as they are. */
static void sc_train_log(void *opaque, int level, const char *line)
{
        fprintf(stderr, "%s\n", line);
}

/* The training loop (connectors/trainer.c) from where meta stands; returns
 * an exit code: 130 when interrupted (the checkpoint saved), 1 on an
 * error. */
static int sc_train_loop(sc_run_t *run, sc_sgd_t *sgd, const sc_sched_spec_t *sched,
                         sc_ckpt_meta_t *meta, long steps_per_epoch)
{
        char err[1024];
        sc_trainer_spec_t ts = {.conf = &run->conf,
                                .model = run->model,
                                .sgd = sgd,
                                .sched = sched,
                                .train = &run->train,
                                .test = &run->test,
                                .stop = &sc_cli_stop,
                                .log = sc_train_log,
                                .on_epoch = sc_train_on_epoch};
        sc_err_t e = sc_trainer_run(&ts, meta, steps_per_epoch, err, sizeof(err));
        if (e)
                fprintf(stderr, "scadles train: %s\n", err);
        return e == SC_ERR_AGAIN ? 130 : e ? 1 : 0;
}

int sc_cmd_train(int argc, char **argv)
{
        char err[1024];
        sc_train_opts_t o;
        sc_run_t run;
        sc_sgd_t sgd;
        sc_sched_spec_t sched;
        sc_ckpt_meta_t meta;
        int rc;

        memset(&run, 0, sizeof(run));
        memset(&sgd, 0, sizeof(sgd));
        run.cmd = "train";
        if ((rc = sc_train_args(argc, argv, &o, 0)) >= 0)
                return rc;
        sc_cli_signals();
        if ((rc = sc_run_conf(&run, &o.co)))
                goto out;
        sc_conf_t *conf = &run.conf;
        if (o.epochs)
                conf->train.epochs = o.epochs;
        if ((rc = sc_run_data(&run, 1)) || (rc = sc_run_model(&run)) ||
            (rc = sc_run_eval_set(&run)))
                goto out;

        long steps_per_epoch =
            (long)((run.train.n + (size_t)conf->train.batch - 1) / (size_t)conf->train.batch);
        if (sc_conf_sched_steps(conf, steps_per_epoch, &sched, err, sizeof(err))) {
                fprintf(stderr, "scadles train: %s\n", err);
                rc = 2;
                goto out;
        }
        sc_sgd_spec_t sspec = {.momentum = conf->optim.momentum,
                               .nesterov = conf->optim.nesterov,
                               .weight_decay = conf->optim.weight_decay};
        if (sc_sgd_init(&sgd, &sspec, sc_model_nparams(run.model))) {
                fprintf(stderr, "scadles train: %s: $.optim: invalid optimizer settings\n",
                        conf->origin);
                rc = 2;
                goto out;
        }
        sc_rng_t root, init;
        sc_rng_seed(&root, conf->train.seed);
        sc_rng_split(&root, &init, SC_STREAM_INIT);
        sc_model_init(run.model, &init);

        memset(&meta, 0, sizeof(meta));
        if (o.resume) {
                if ((rc = sc_cli_ckpt_load("train --resume", o.resume, run.model, &sgd, &meta)))
                        goto out;
                if (meta.epoch_step &&
                    (meta.seed != conf->train.seed || meta.batch != (uint32_t)conf->train.batch ||
                     meta.epoch_step >= (uint64_t)steps_per_epoch)) {
                        fprintf(stderr,
                                "scadles train: %s was saved %llu steps into epoch %llu with "
                                "another seed or batch; that epoch restarts\n",
                                o.resume, (unsigned long long)meta.epoch_step,
                                (unsigned long long)meta.epoch + 1);
                        meta.epoch_step = 0;
                }
                fprintf(stderr, "scadles train: resuming from %s at epoch %llu, step %llu\n",
                        o.resume, (unsigned long long)meta.epoch + 1,
                        (unsigned long long)meta.step);
        }
        meta.seed = conf->train.seed;
        meta.batch = (uint32_t)conf->train.batch;
        fprintf(stderr,
                "scadles train: %zu parameters, %zu training and %zu test samples, "
                "%d epochs of "
                "%ld steps (batch %d)\n",
                sc_model_nparams(run.model), run.train.n, run.test.n, conf->train.epochs,
                steps_per_epoch, conf->train.batch);

        uint64_t first_step = meta.step;
        if ((rc = sc_train_loop(&run, &sgd, &sched, &meta, steps_per_epoch)))
                goto out;
        if ((rc = sc_run_print_accuracy(&run)))
                goto out;
        if (meta.step != first_step && conf->train.checkpoint[0])
                fprintf(stderr, "scadles train: checkpoint saved to %s\n", conf->train.checkpoint);
out:
        sc_sgd_free(&sgd);
        sc_run_free(&run);
        return rc;
}

int sc_cmd_eval(int argc, char **argv)
{
        sc_train_opts_t o;
        sc_run_t run;
        sc_ckpt_meta_t meta;
        int rc;

        memset(&run, 0, sizeof(run));
        run.cmd = "eval";
        if ((rc = sc_train_args(argc, argv, &o, 1)) >= 0)
                return rc;
        if ((rc = sc_run_conf(&run, &o.co)) || (rc = sc_run_data(&run, 0)) ||
            (rc = sc_run_model(&run)) || (rc = sc_run_eval_set(&run)))
                goto out;
        if ((rc = sc_cli_ckpt_load("eval", o.checkpoint, run.model, NULL, &meta)))
                goto out;
        fprintf(stderr, "scadles eval: %s: epoch %llu, step %llu\n", o.checkpoint,
                (unsigned long long)meta.epoch, (unsigned long long)meta.step);
        rc = sc_run_print_accuracy(&run);
        if (!rc && o.predictions)
                rc = sc_cli_write_predictions("eval", run.model, run.test.x, run.test.y, run.test.n,
                                              o.predictions);
        if (rc == 0)
                sc_run_print_metrics(&run);
out:
        sc_run_free(&run);
        return rc;
}
