/* test_conf.c — the configuration table: defaults, data-driven bad input
 * (tests/data/config/invalid/<case>/{input.json,error}), valid files, round
 * trips through the dump, overrides, schedules in epochs and the docs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sc_conf.h"
#include "sc_kafka_source.h"
#include "sc_file.h"

#define INVALID_DIR "tests/data/config/invalid"
#define VALID_DIR "tests/data/config/valid"

static char *read_text(const char *path)
{
        FILE *f = fopen(path, "rb");
        char *buf = calloc(1, 1 << 16);
        assert_non_null(f);
        assert_non_null(buf);
        size_t n = fread(buf, 1, (1 << 16) - 1, f);
        fclose(f);
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
                buf[--n] = '\0';
        return buf;
}

static void load_ok(sc_conf_t *conf, const char *path)
{
        char err[1024] = "";
        sc_err_t rc = sc_conf_load(conf, path, err, sizeof(err));
        if (rc != SC_OK)
                fail_msg("%s: %s", path, err);
}

static void defaults_are_documented_values(void **state)
{
        sc_conf_t c;
        sc_conf_defaults(&c);
        assert_int_equal(c.model.input.c, 1);
        assert_int_equal(c.model.input.h, 28);
        assert_int_equal(c.model.input.w, 28);
        assert_int_equal(c.model.n_layers, 0);
        assert_int_equal(c.model.loss, SC_LOSS_SOFTMAX_XENT);
        assert_int_equal(c.init, SC_INIT_AUTO);
        assert_true(c.optim.lr == 0.01);
        assert_true(c.optim.momentum == 0.9);
        assert_int_equal(c.optim.nesterov, 0);
        assert_int_equal(c.optim.sched.kind, SC_SCHED_CONSTANT);
        assert_true(c.optim.sched.gamma == 0.1);
        assert_int_equal(c.optim.sched.n_milestones, 0);
        assert_int_equal(c.train.epochs, 10);
        assert_int_equal(c.train.batch, 64);
        assert_int_equal(c.train.seed, 42);
        assert_int_equal(c.train.threads, 1);
        assert_string_equal(c.train.checkpoint, "");
        assert_string_equal(c.data.source, "fashion-mnist");
        assert_string_equal(c.data.dir, "/usr/share/datasets/fashion-mnist");
        assert_true(c.data.std > 0);
        assert_int_equal(c.data.synth_classes, 10);
        assert_null(c.kafka);

        /* "{}" is the defaults too. */
        sc_conf_t d;
        char err[256];
        assert_int_equal(sc_conf_parse(&d, " {}\n", "x.json", err, sizeof(err)), SC_OK);
        char *a = sc_conf_dump(&c), *b = sc_conf_dump(&d);
        assert_string_equal(a, b);
        free(a);
        free(b);
        sc_conf_free(&d);
        sc_conf_free(&c);
        sc_conf_free(NULL);
}

static void invalid_cases_name_the_path(void **state)
{
        DIR *dir = opendir(INVALID_DIR);
        struct dirent *de;
        int cases = 0;

        assert_non_null(dir);
        while ((de = readdir(dir))) {
                char input[512], expect_path[512], err[1024] = "";
                sc_conf_t c;
                if (de->d_name[0] == '.')
                        continue;
                snprintf(input, sizeof(input), INVALID_DIR "/%s/input.json", de->d_name);
                snprintf(expect_path, sizeof(expect_path), INVALID_DIR "/%s/error", de->d_name);
                char *expect = read_text(expect_path);
                assert_true(expect[0] != '\0');
                sc_err_t rc = sc_conf_load(&c, input, err, sizeof(err));
                if (rc != SC_ERR_CONFIG)
                        fail_msg("%s: expected a config error, got %d (%s)", de->d_name, rc, err);
                if (!strstr(err, expect))
                        fail_msg("%s:\n  got      %s\n  expected %s", de->d_name, err, expect);
                /* The origin (file name) leads the message. */
                if (strncmp(err, input, strlen(input)))
                        fail_msg("%s: message does not start with the file name: %s", de->d_name,
                                 err);
                /* On error conf holds the defaults and nothing to free. */
                assert_null(c.kafka);
                assert_int_equal(c.model.n_layers, 0);
                free(expect);
                cases++;
        }
        closedir(dir);
        assert_true(cases >= 15);
}

static void missing_file_is_io_error(void **state)
{
        sc_conf_t c;
        char err[512];
        assert_int_equal(sc_conf_load(&c, "tests/data/config/no-such.json", err, sizeof(err)),
                         SC_ERR_IO);
        assert_non_null(strstr(err, "no-such.json: cannot open"));
}

static void valid_files_round_trip(void **state)
{
        DIR *dir = opendir(VALID_DIR);
        struct dirent *de;
        int files = 0;

        assert_non_null(dir);
        while ((de = readdir(dir))) {
                char path[512], err[1024] = "";
                sc_conf_t a, b;
                size_t len = strlen(de->d_name);
                if (len < 5 || strcmp(de->d_name + len - 5, ".json"))
                        continue;
                snprintf(path, sizeof(path), VALID_DIR "/%s", de->d_name);
                load_ok(&a, path);
                char *text = sc_conf_dump(&a);
                assert_non_null(text);
                if (sc_conf_parse(&b, text, "dump", err, sizeof(err)))
                        fail_msg("%s: dump does not parse back: %s\n%s", de->d_name, err, text);
                char *again = sc_conf_dump(&b);
                assert_string_equal(text, again);
                assert_memory_equal(&a.model, &b.model, sizeof(a.model));
                free(text);
                free(again);
                sc_conf_free(&a);
                sc_conf_free(&b);
                files++;
        }
        closedir(dir);
        assert_true(files >= 3);
}

static void mlp_values(void **state)
{
        sc_conf_t c;
        load_ok(&c, VALID_DIR "/mlp.json");
        assert_int_equal(c.model.input.c, 784);
        assert_int_equal(c.model.input.h, 1);
        assert_int_equal(c.model.input.w, 1);
        assert_int_equal(c.model.n_layers, 4);
        assert_int_equal(c.model.layers[0].kind, SC_LAYER_DENSE);
        assert_int_equal(c.model.layers[0].units, 256);
        assert_int_equal(c.model.layers[0].init, SC_INIT_HE);
        assert_int_equal(c.model.layers[1].kind, SC_LAYER_RELU);
        assert_int_equal(c.model.layers[2].kind, SC_LAYER_DROPOUT);
        assert_true(c.model.layers[2].rate == 0.25f);
        assert_int_equal(c.model.layers[3].units, 10);
        /* No "init" of its own: model.init. */
        assert_int_equal(c.model.layers[3].init, SC_INIT_XAVIER);
        assert_true(c.optim.lr == 0.05);
        assert_true(c.optim.sched.lr == 0.05);
        assert_int_equal(c.optim.nesterov, 1);
        assert_true(c.optim.weight_decay == 0.0005);
        assert_true(c.optim.base_batch == 256);
        assert_int_equal(c.optim.sched.kind, SC_SCHED_MULTISTEP);
        assert_int_equal(c.optim.sched.n_milestones, 2);
        assert_int_equal(c.optim.sched.milestones[0], 1000);
        assert_int_equal(c.optim.sched.milestones[1], 2000);
        assert_true(c.optim.sched.gamma == 0.5);
        assert_int_equal(c.optim.sched.warmup_steps, 100);
        assert_int_equal(c.train.epochs, 3);
        assert_int_equal(c.train.batch, 128);
        assert_int_equal(c.train.seed, 7);
        assert_int_equal(c.train.threads, 2);
        assert_string_equal(c.train.checkpoint, "/tmp/mlp.ckpt");
        assert_true(c.train.progress_interval == 1.5);
        assert_string_equal(c.data.source, "synthetic");
        assert_true(c.data.mean == 0 && c.data.std == 1);
        assert_int_equal(c.data.synth_train, 2000);
        assert_int_equal(c.data.synth_test, 500);
        assert_int_equal(c.data.synth_classes, 4);
        assert_true(c.data.synth_noise == 0.3);
        assert_string_equal(c.origin, VALID_DIR "/mlp.json");
        sc_conf_free(&c);
}

static int collect_kv(const char *key, const char *value, void *opaque)
{
        char *out = opaque;
        size_t len = strlen(out);
        snprintf(out + len, 512 - len, "%s=%s;", key, value);
        return 0;
}

static int stop_at_second(const char *key, const char *value, void *opaque)
{
        return ++*(int *)opaque == 2 ? 7 : 0;
}

static void batchnorm_values(void **state)
{
        sc_conf_t c;
        sc_model_t *m = NULL;
        char err[256];

        load_ok(&c, VALID_DIR "/mlp_bn.json");
        assert_int_equal(c.model.n_layers, 6);
        const sc_layer_spec_t *l = c.model.layers;
        assert_int_equal(l[2].kind, SC_LAYER_BATCHNORM);
        assert_true(l[2].momentum == 0.05f);
        assert_true(l[2].eps == 1e-5f); /* default */
        assert_int_equal(l[5].kind, SC_LAYER_BATCHNORM);
        assert_true(l[5].momentum == 0.1f);
        assert_true(l[5].eps == 1e-3f);
        /* gamma and beta per feature are parameters; running mean and
         * variance per feature are state. */
        assert_int_equal(sc_model_new(&m, &c.model, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_model_nparams(m), 784 * 128 + 128 + 2 * 128 + 128 * 10 + 10 + 2 * 10);
        assert_int_equal(sc_model_nstate(m), 2 * 128 + 2 * 10);
        assert_string_equal(sc_model_tensor(m, 2)->name, "layers.2.weight");
        assert_string_equal(sc_model_tensor(m, 3)->name, "layers.2.bias");
        sc_model_destroy(m);
        sc_conf_free(&c);
}

static void cnn_values_and_kafka(void **state)
{
        sc_conf_t c;
        char kv[512] = "";
        int n = 0;

        load_ok(&c, VALID_DIR "/cnn.json");
        assert_int_equal(c.model.n_layers, 9);
        const sc_layer_spec_t *l = c.model.layers;
        assert_int_equal(l[0].kind, SC_LAYER_CONV2D);
        assert_int_equal(l[0].filters, 16);
        assert_int_equal(l[0].kernel, 3);
        assert_int_equal(l[0].stride, 1); /* conv2d default */
        assert_int_equal(l[0].padding, 1);
        assert_int_equal(l[0].init, SC_INIT_AUTO);
        assert_int_equal(l[2].kind, SC_LAYER_MAXPOOL2D);
        assert_int_equal(l[2].kernel, 2);
        assert_int_equal(l[2].stride, 0); /* 0 = the pooling window */
        assert_int_equal(l[3].stride, 2);
        assert_int_equal(l[3].init, SC_INIT_XAVIER);
        assert_int_equal(l[5].stride, 1);
        assert_int_equal(l[4].kind, SC_LAYER_TANH);
        assert_int_equal(l[6].kind, SC_LAYER_FLATTEN);
        assert_int_equal(l[8].kind, SC_LAYER_SIGMOID);
        assert_int_equal(c.model.loss, SC_LOSS_MSE);
        assert_string_equal(c.data.dir, "/srv/fmnist");
        assert_string_equal(c.data.source, "fashion-mnist");

        assert_non_null(c.kafka);
        assert_int_equal(sc_conf_kafka_foreach(&c, collect_kv, kv), 0);
        assert_string_equal(kv, "bootstrap.servers=localhost:9092;linger.ms=5;"
                                "enable.idempotence=true;batch.size=1500000;");
        assert_int_equal(sc_conf_kafka_foreach(&c, stop_at_second, &n), 7);
        assert_int_equal(n, 2);
        sc_conf_free(&c);
        assert_null(c.kafka);
}

static void schedule_in_epochs(void **state)
{
        sc_conf_t c;
        sc_sched_spec_t s;
        char err[512];

        load_ok(&c, VALID_DIR "/cnn.json");
        assert_int_equal(sc_conf_sched_steps(&c, 100, &s, err, sizeof(err)), SC_OK);
        assert_int_equal(s.kind, SC_SCHED_COSINE);
        assert_true(s.lr == 0.1);
        assert_int_equal(s.warmup_steps, 50);
        assert_int_equal(s.total_steps, 2000);
        assert_true(s.min_lr == 0.001);
        assert_int_equal(sc_conf_sched_steps(&c, 0, &s, err, sizeof(err)), SC_ERR_INVAL);
        sc_conf_free(&c);

        load_ok(&c, VALID_DIR "/epochs_multistep.json");
        assert_int_equal(sc_conf_sched_steps(&c, 100, &s, err, sizeof(err)), SC_OK);
        assert_int_equal(s.n_milestones, 3);
        assert_int_equal(s.milestones[0], 50);
        assert_int_equal(s.milestones[1], 200);
        assert_int_equal(s.milestones[2], 425);
        assert_int_equal(s.total_steps, 600); /* 0 = the whole run */
        assert_true(s.gamma == 0.2);
        /* Two milestones on one step: an error naming the key. */
        assert_int_equal(
            sc_conf_set(&c, "optim.schedule.milestones_epochs=[0.1, 0.2]", err, sizeof(err)),
            SC_OK);
        assert_int_equal(sc_conf_sched_steps(&c, 1, &s, err, sizeof(err)), SC_ERR_CONFIG);
        assert_non_null(strstr(err, "$.optim.schedule.milestones_epochs: epochs 0.1 and 0.2"));

        /* Steps pass through unchanged. */
        sc_conf_free(&c);
        load_ok(&c, VALID_DIR "/mlp.json");
        assert_int_equal(sc_conf_sched_steps(&c, 7, &s, err, sizeof(err)), SC_OK);
        assert_int_equal(s.milestones[1], 2000);
        assert_int_equal(s.warmup_steps, 100);
        assert_int_equal(s.total_steps, 21);
        sc_conf_free(&c);
}

static void set_ok(sc_conf_t *c, const char *assignment)
{
        char err[1024] = "";
        if (sc_conf_set(c, assignment, err, sizeof(err)) != SC_OK)
                fail_msg("%s: %s", assignment, err);
}

static void set_fails(sc_conf_t *c, const char *assignment, const char *expect)
{
        char err[1024] = "";
        char *before = sc_conf_dump(c);
        sc_err_t rc = sc_conf_set(c, assignment, err, sizeof(err));
        if (rc != SC_ERR_CONFIG)
                fail_msg("%s: expected a config error, got %d", assignment, rc);
        if (!strstr(err, expect))
                fail_msg("%s:\n  got      %s\n  expected %s", assignment, err, expect);
        /* Atomic: nothing changed. */
        char *after = sc_conf_dump(c);
        assert_string_equal(before, after);
        free(before);
        free(after);
}

static void overrides(void **state)
{
        sc_conf_t c;
        load_ok(&c, VALID_DIR "/mlp.json");

        set_ok(&c, "optim.lr=0.2");
        assert_true(c.optim.lr == 0.2);
        set_ok(&c, "data.dir=/data/fmnist"); /* not JSON: a string */
        assert_string_equal(c.data.dir, "/data/fmnist");
        set_ok(&c, "train.checkpoint=\"true\"");
        assert_string_equal(c.train.checkpoint, "true");
        set_ok(&c, "data.source=fashion-mnist");
        assert_string_equal(c.data.source, "fashion-mnist");
        set_ok(&c, "optim.schedule={\"type\": \"cosine\", \"min_lr\": 0.01}");
        assert_int_equal(c.optim.sched.kind, SC_SCHED_COSINE);
        assert_true(c.optim.sched.min_lr == 0.01);
        assert_int_equal(c.optim.sched.n_milestones, 2); /* untouched keys stay */
        set_ok(&c, "model.input=[3, 32, 32]");
        assert_int_equal(c.model.input.c, 3);
        assert_int_equal(c.model.input.w, 32);

        /* List elements: a key, a new element, a new type. */
        set_ok(&c, "model.layers[0].units=128");
        assert_int_equal(c.model.layers[0].units, 128);
        assert_int_equal(c.model.layers[0].init, SC_INIT_HE);
        set_ok(&c, "model.layers[4]={\"type\": \"sigmoid\"}");
        assert_int_equal(c.model.n_layers, 5);
        assert_int_equal(c.model.layers[4].kind, SC_LAYER_SIGMOID);
        set_ok(&c, "model.layers[1].type=tanh");
        assert_int_equal(c.model.layers[1].kind, SC_LAYER_TANH);
        /* model.init reaches the layers without their own init only. */
        set_ok(&c, "model.init=auto");
        assert_int_equal(c.model.layers[0].init, SC_INIT_HE);
        assert_int_equal(c.model.layers[3].init, SC_INIT_AUTO);

        /* worker.window: seconds or "auto" (a job's rate sum), and back */
        set_ok(&c, "worker.window=auto");
        assert_int_equal(c.worker.batch.window_auto, 1);
        char *dump = sc_conf_dump(&c);
        assert_non_null(strstr(dump, "\"window\": \"auto\""));
        free(dump);
        set_ok(&c, "worker.window=0.25");
        assert_int_equal(c.worker.batch.window_auto, 0);
        assert_true(c.worker.batch.window == 0.25);
        set_fails(&c, "worker.window=fast",
                  "$.worker.window: expected seconds (a number) or \"auto\"");
        set_fails(&c, "worker.window=0", "$.worker.window: 0 is out of range (0, 1e+06]");

        /* kafka keys keep their dots. */
        set_ok(&c, "kafka.bootstrap.servers=broker:9092");
        set_ok(&c, "kafka.linger.ms=10");
        char kv[512] = "";
        sc_conf_kafka_foreach(&c, collect_kv, kv);
        assert_string_equal(kv, "bootstrap.servers=broker:9092;linger.ms=10;");

        set_fails(&c, "optim.lrr=0.1",
                  "override: $.optim.lrr: unknown property (did you "
                  "mean \"lr\"?)");
        set_fails(&c, "optimm.lr=0.1",
                  "override: $.optimm: unknown property (did you mean "
                  "\"optim\"?)");
        set_fails(&c, "optim.lr=-1", "override: $.optim.lr: expected number > 0, got -1");
        set_fails(&c, "optim.lr=fast", "$.optim.lr: expected number > 0, got string");
        set_fails(&c, "model.layers[9].units=3",
                  "$.model.layers[9]: no such entry (the list "
                  "has 5)");
        set_fails(&c, "model.layers[0].size=3",
                  "$.model.layers[0].size: not a key of dense "
                  "layers");
        set_fails(&c, "model.layers[1].type=conv2d", "$.model.layers[1]: conv2d layer needs");
        set_fails(&c, "model.loss.x=1", "$.model.loss: expected one of");
        set_fails(&c, "kafka.sasl={}", "$.kafka.sasl: expected string, number or boolean");
        set_fails(&c, "optim.momentum=0", "override: $.optim.nesterov: needs optim.momentum > 0");
        set_fails(&c, "lr", "override: \"lr\": expected <property>=<value>");
        set_fails(&c, "=1", "expected <property>=<value>");
        /* Repetitions of repetitions multiply what regcomp builds: refused
         * before it allocates gigabytes (a fuzz find); ordinary ones pass. */
        set_fails(&c, "source.pattern=^ens+++++++++++++++++++++++++++++o]+$",
                  "$.source.pattern: two repetition operators in a row");
        set_fails(&c, "source.pattern=^ens+*+)+", "$.source.pattern: two repetition operators");
        set_fails(&c, "source.pattern=^a{2}+", "$.source.pattern: two repetition operators");
        set_fails(&c, "source.pattern=^((((((((((((((((a)+)+)+)+)+)+)+)+)+)+)+)+)+)+)+)+",
                  "$.source.pattern: too many repetitions");
        set_fails(&c, "source.pattern=^a{32767}{32767}", "$.source.pattern: too many repetitions");
        set_fails(&c, "source.pattern=^(.*)(.*)(.*)(.*)(.*)(.*)\\6\\5\\4\\3\\2\\1x",
                  "$.source.pattern: a back-reference");
        set_fails(&c, "source.pattern=^(dev)-\\1$", "$.source.pattern: a back-reference");
        set_ok(&c, "source.pattern=^dev-[\\1]\\.x\\\\1$"); /* in brackets, or an escaped \ */
        set_ok(&c, "source.pattern=^dev-[[:alpha:]\\1]$"); /* after a class, still in brackets */
        set_ok(&c, "source.pattern=^dev-[0-9]{1,3}\\.(temp|hum)+[[:alpha:]+*]*\\+$");
        set_ok(&c, "source.pattern=");
        /* The origin survives overrides (for later model errors). */
        assert_string_equal(c.origin, VALID_DIR "/mlp.json");
        sc_conf_free(&c);
}

/* Secret kafka values never reach a dump; the rest stay as given. */
static void dump_redacts_secrets(void **state)
{
        static const char *const secret[] = {"sasl.password",
                                             "ssl.key.password",
                                             "ssl.keystore.password",
                                             "ssl.key.pem",
                                             "sasl.oauthbearer.client.secret",
                                             "sasl.oauthbearer.config"};
        static const char *const plain[] = {"sasl.username", "ssl.key.location",
                                            "ssl.certificate.pem", "security.protocol"};
        char err[256], set[128];
        sc_conf_t c;

        sc_conf_defaults(&c);
        for (size_t i = 0; i < sizeof(secret) / sizeof(secret[0]); i++) {
                assert_true(sc_conf_kafka_secret(secret[i]));
                snprintf(set, sizeof(set), "kafka.%s=hush-%zu", secret[i], i);
                assert_int_equal(sc_conf_set(&c, set, err, sizeof(err)), SC_OK);
        }
        for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
                assert_false(sc_conf_kafka_secret(plain[i]));
                snprintf(set, sizeof(set), "kafka.%s=open-%zu", plain[i], i);
                assert_int_equal(sc_conf_set(&c, set, err, sizeof(err)), SC_OK);
        }
        char *d = sc_conf_dump(&c);
        assert_non_null(d);
        assert_null(strstr(d, "hush-"));
        for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
                snprintf(set, sizeof(set), "\"%s\": \"open-%zu\"", plain[i], i);
                assert_non_null(strstr(d, set));
        }
        snprintf(set, sizeof(set), "\"sasl.password\": \"%s\"", SC_CONF_REDACTED);
        assert_non_null(strstr(d, set));
        free(d);
        /* the file a process writes for others keeps the values, and reads
         * back to the same configuration */
        d = sc_conf_dump_secret(&c);
        assert_non_null(d);
        assert_null(strstr(d, SC_CONF_REDACTED));
        sc_conf_t back;
        assert_int_equal(sc_conf_parse(&back, d, "dump", err, sizeof(err)), SC_OK);
        char *d2 = sc_conf_dump_secret(&back);
        assert_string_equal(d, d2);
        free(d2);
        free(d);
        sc_conf_free(&back);
        sc_conf_free(&c);
}

static void model_error_prefix(void **state)
{
        sc_conf_t c;
        char err[256];
        assert_int_equal(sc_conf_parse(&c, "{}", "job.json", err, sizeof(err)), SC_OK);
        snprintf(err, sizeof(err), "layers[2] (conv2d): kernel 5 exceeds input 4x4");
        sc_conf_model_error(&c, err, sizeof(err));
        assert_string_equal(err, "job.json: $.model.layers[2] (conv2d): kernel 5 exceeds input "
                                 "4x4");
        sc_conf_free(&c);
}

static void describe_lists_every_property(void **state)
{
        char *text = sc_conf_describe(0), *md = sc_conf_describe(1);
        size_t n = 0;
        const char *name;

        assert_non_null(text);
        assert_non_null(md);
        while ((name = sc_conf_prop_name(n))) {
                char quoted[128];
                assert_non_null(strstr(text, name));
                /* The markdown page lists list keys by their own name. */
                const char *key = strstr(name, "[].") ? strstr(name, "[].") + 3 : name;
                snprintf(quoted, sizeof(quoted), "| `%s` |", key);
                if (!strstr(md, quoted))
                        fail_msg("%s missing from the markdown page", name);
                n++;
        }
        assert_true(n >= 40);
        assert_null(sc_conf_prop_name(n + 1));
        assert_non_null(strstr(md, "# scadles configuration"));
        assert_non_null(strstr(text, "optim.schedule.milestones_epochs"));
        /* The simulator's section and the embedding properties are rows too. */
        assert_non_null(strstr(text, "\n[sim] "));
        assert_non_null(strstr(text, "\nsim.churn\n"));
        assert_non_null(strstr(text, "\n[embedding] "));
        assert_non_null(strstr(text, "\nqueue.full.policy\n"));
        assert_non_null(strstr(md, "| `predict.publish.steps` |"));
        free(text);
        free(md);
}

/* Whether a section was named (the worker is distributed when the job
 * section is): by the file, or by an override of the section or a key. */
/* A JSON syntax error names line and column but not the text at it: a
 * value there may be a secret. */
static void parse_errors_quote_no_value(void **state)
{
        sc_conf_t c;
        char err[512];
        (void)state;
        assert_int_equal(sc_conf_parse(&c, "{\"kafka\": {\"sasl.password\": \"Hunter2\\q\"}}", "t",
                                       err, sizeof(err)),
                         SC_ERR_CONFIG);
        assert_non_null(strstr(err, "t:1:"));
        assert_non_null(strstr(err, "invalid escape"));
        assert_null(strstr(err, "Hunter2"));
        assert_int_equal(
            sc_conf_parse(&c, "{\"kafka\": {\"sasl.password\": \"s3cr", "t", err, sizeof(err)),
            SC_ERR_CONFIG);
        assert_null(strstr(err, "s3cr"));
}

static void sections_given(void **state)
{
        sc_conf_t c;
        char err[512];

        assert_int_equal(sc_conf_parse(&c, "{\"optim\": {\"lr\": 0.1}}", "t", err, sizeof(err)),
                         SC_OK);
        assert_true(sc_conf_section_given(&c, "optim"));
        assert_false(sc_conf_section_given(&c, "job"));
        assert_false(sc_conf_section_given(&c, "kafka"));
        assert_false(sc_conf_section_given(&c, "nosuch"));
        assert_int_equal(sc_conf_set(&c, "job.nosuch=1", err, sizeof(err)), SC_ERR_CONFIG);
        assert_false(sc_conf_section_given(&c, "job"));
        assert_int_equal(sc_conf_set(&c, "job.shards=2", err, sizeof(err)), SC_OK);
        assert_true(sc_conf_section_given(&c, "job"));
        assert_int_equal(sc_conf_set(&c, "kafka.client.id=x", err, sizeof(err)), SC_OK);
        assert_true(sc_conf_section_given(&c, "kafka"));
        sc_conf_free(&c);
        assert_int_equal(sc_conf_parse(&c, "{\"job\": {}}", "t", err, sizeof(err)), SC_OK);
        assert_true(sc_conf_section_given(&c, "job"));
        sc_conf_free(&c);
}

/* A layer's name in the configuration is its vtable's (sc_layer_kind_name):
 * one spelling for configuration, checkpoints' messages and ONNX names. */
static void layer_names_are_the_layers_own(void **state)
{
        /* the keys some kinds require */
        static const char *const extra[SC_LAYER__END] = {
            [SC_LAYER_DENSE] = ", \"units\": 4",
            [SC_LAYER_CONV2D] = ", \"filters\": 2, \"kernel\": 3",
            [SC_LAYER_MAXPOOL2D] = ", \"size\": 2",
            [SC_LAYER_DROPOUT] = ", \"rate\": 0.5",
        };
        char set[160];
        sc_conf_t c;
        sc_conf_defaults(&c);
        for (int k = 0; k < SC_LAYER__END; k++) {
                snprintf(set, sizeof(set), "model.layers[%d]={\"type\": \"%s\"%s}", k,
                         sc_layer_kind_name((sc_layer_kind_t)k), extra[k] ? extra[k] : "");
                assert_int_equal(sc_conf_set(&c, set, NULL, 0), SC_OK);
                assert_int_equal(c.model.layers[k].kind, k);
        }
        sc_conf_free(&c);
}

/* The module specs embedded in sc_conf_t take the table's defaults, and
 * the modules' own defaults (what a caller without a configuration gets)
 * are the same values: one set of defaults. */
static void embedded_specs_default_as_the_modules(void **state)
{
        sc_conf_t c;
        sc_batch_spec_t b;
        sc_stream_spec_t st;

        sc_conf_defaults(&c);
        sc_batch_spec_defaults(&b);
        sc_stream_spec_defaults(&st);
        assert_int_equal(c.worker.batch.shuffle, 256);
        assert_memory_equal(&c.worker.batch, &b, sizeof(b));
        assert_memory_equal(&c.streams.buffer, &st, sizeof(st));
        /* The sync policy's parameters, for the configured policy and workers. */
        sc_sync_spec_t sy;
        sc_sync_spec_defaults(&sy, c.job.sync.kind, c.job.sync.n_workers);
        assert_memory_equal(&c.job.sync, &sy, sizeof(sy));
        /* The decoder's: each format's, from streams.* with the model's sizes. */
        sc_decode_spec_t want, got;
        sc_decode_spec_defaults(&want, SC_DECODE_JSON);
        sc_ks_decode_spec(&c, "any", 0, 10, &got);
        assert_memory_equal(&got, &want, sizeof(want));
        assert_int_equal(sc_conf_set(&c, "streams.cap=100", NULL, 0), SC_OK);
        assert_int_equal(c.streams.buffer.cap, 100);
        assert_int_equal(sc_conf_set(&c, "streams.cap=-1", NULL, 0), SC_ERR_CONFIG);
        assert_int_equal(sc_conf_set(&c, "worker.batch=fixed", NULL, 0), SC_OK);
        assert_int_equal(c.worker.batch.mode, SC_BATCH_FIXED);
        sc_conf_free(&c);
}

/* The embedding properties (scadles_conf_set's own names) go through the
 * table's rows with their text syntax; they are not keys of a file, an
 * override or the dump, and "eval" / "worker.id" do not shadow the eval
 * and worker sections. */
static void embedding_properties(void **state)
{
        sc_conf_t c;
        char err[512], *dump;
        int known;

        sc_conf_defaults(&c);
        assert_int_equal(c.embed.queue_max, 10000);
        assert_int_equal(c.embed.block_ms, 1000);
        assert_int_equal(c.embed.eval, 1);
        assert_int_equal(
            sc_conf_set_embedding(&c, "queue.block.ms", "-1", &known, err, sizeof(err)), SC_OK);
        assert_true(known);
        assert_int_equal(c.embed.block_ms, -1);
        assert_int_equal(
            sc_conf_set_embedding(&c, "queue.full.policy", "drop", &known, err, sizeof(err)),
            SC_OK);
        assert_int_equal(c.embed.queue_drop, 1);
        assert_int_equal(sc_conf_set_embedding(&c, "eval", "0", &known, err, sizeof(err)), SC_OK);
        assert_int_equal(c.embed.eval, 0);
        assert_int_equal(sc_conf_set_embedding(&c, "distributed", "true", &known, err, sizeof(err)),
                         SC_OK);
        assert_int_equal(c.embed.distributed, 1);
        assert_int_equal(
            sc_conf_set_embedding(&c, "predict.publish.steps", "50", &known, err, sizeof(err)),
            SC_OK);
        assert_int_equal(c.embed.publish_steps, 50);

        static const char *const bad[][3] = {
            {"queue.block.ms", "-2", "queue.block.ms: \"-2\": expected integer in [-1, 3600000]"},
            {"queue.buffering.max.records", "12x", "expected integer in [1, 10000000]"},
            {"worker.id", "", "worker.id: \"\": expected integer"},
            {"distributed", "maybe", "distributed: \"maybe\": expected true or false"},
            {"queue.full.policy", "wait", "expected one of \"block\", \"drop\""},
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                sc_conf_embed_t before = c.embed;
                assert_int_equal(
                    sc_conf_set_embedding(&c, bad[i][0], bad[i][1], &known, err, sizeof(err)),
                    SC_ERR_CONFIG);
                assert_true(known);
                if (!strstr(err, bad[i][2]))
                        fail_msg("%s=%s: %s", bad[i][0], bad[i][1], err);
                assert_memory_equal(&before, &c.embed, sizeof(before));
        }
        assert_int_equal(sc_conf_set_embedding(&c, "optim.lr", "0.1", &known, err, sizeof(err)),
                         SC_OK);
        assert_false(known);

        assert_int_equal(sc_conf_set(&c, "eval.window=50", err, sizeof(err)), SC_OK);
        assert_int_equal(c.eval.window, 50);
        assert_int_equal(sc_conf_set(&c, "distributed=true", err, sizeof(err)), SC_ERR_CONFIG);
        assert_non_null(strstr(err, "$.distributed: unknown property"));
        assert_non_null(dump = sc_conf_dump(&c));
        assert_null(strstr(dump, "\"queue\""));
        assert_null(strstr(dump, "\"distributed\""));
        free(dump);
        sc_conf_free(&c);
        assert_int_equal(sc_conf_parse(&c, "{\"worker\": {\"id\": 1}}", "f.json", err, sizeof(err)),
                         SC_ERR_CONFIG);
        assert_non_null(strstr(err, "f.json: $.worker.id: unknown property"));
        assert_null(strstr(err, "id,"));
}

/* docs/CONFIG.md is generated from the table (make docs). */
static void committed_docs_match_the_table(void **state)
{
        FILE *f = fopen("docs/CONFIG.md", "rb");
        char *md = sc_conf_describe(1);
        assert_non_null(f);
        assert_non_null(md);
        size_t len = strlen(md);
        char *file = malloc(len + 2);
        assert_non_null(file);
        size_t n = fread(file, 1, len + 1, f);
        fclose(f);
        if (n != len || memcmp(file, md, len))
                fail_msg("docs/CONFIG.md is out of date with the property table: run `make docs`");
        free(file);
        free(md);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(defaults_are_documented_values),
            cmocka_unit_test(invalid_cases_name_the_path),
            cmocka_unit_test(missing_file_is_io_error),
            cmocka_unit_test(valid_files_round_trip),
            cmocka_unit_test(mlp_values),
            cmocka_unit_test(cnn_values_and_kafka),
            cmocka_unit_test(batchnorm_values),
            cmocka_unit_test(schedule_in_epochs),
            cmocka_unit_test(overrides),
            cmocka_unit_test(dump_redacts_secrets),
            cmocka_unit_test(model_error_prefix),
            cmocka_unit_test(describe_lists_every_property),
            cmocka_unit_test(committed_docs_match_the_table),
            cmocka_unit_test(embedding_properties),
            cmocka_unit_test(sections_given),
            cmocka_unit_test(parse_errors_quote_no_value),
            cmocka_unit_test(embedded_specs_default_as_the_modules),
            cmocka_unit_test(layer_names_are_the_layers_own),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
