/* cmd_config.c — `scadles config`: lists the configuration properties, writes
 * docs/CONFIG.md, or checks a configuration file (with overrides). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "sc_conf.h"
#include "sc_kafka_util.h"

static void sc_config_usage(FILE *out)
{
        fprintf(out,
                "usage: scadles config --list\n"
                "       scadles config --markdown\n"
                "       scadles config --markdown-sections SECTION[,SECTION...]\n"
                "       scadles config --check [-c FILE] [--set PROPERTY=VALUE ...]\n"
                "\n"
                "  --list            every property with type, range, default and meaning\n"
                "  --markdown        the same as the docs/CONFIG.md page\n"
                "  --markdown-sections S\n"
                "                    the tables of the sections S (e.g. source,streams),\n"
                "                    as docs/STREAMS.md embeds them\n"
                "  --check           validate FILE (or the defaults) with the overrides applied,\n"
                "                    check the kafka properties with librdkafka, compile\n"
                "                    source.pattern, build the model to check its shapes, and\n"
                "                    print the resolved configuration as JSON (secrets such as\n"
                "                    kafka.sasl.password print as \"(redacted)\")\n"
                "  -c, --config FILE configuration file (JSON)\n"
                "  --set P=V         override property P (V is JSON, or else a string);\n"
                "                    e.g. --set optim.lr=0.05 --set model.layers[0].units=128\n"
                "  -h, --help        this text\n"
                "\n"
                "Exit status: 0 ok, 1 runtime failure, 2 usage or configuration error.\n");
}

static int sc_config_print(char *text)
{
        if (!text) {
                fprintf(stderr, "scadles config: out of memory\n");
                return 1;
        }
        fputs(text, stdout);
        free(text);
        return 0;
}

int sc_cmd_config(int argc, char **argv)
{
        enum { NONE, LIST, MARKDOWN, CHECK } mode = NONE;
        const char *file = NULL, *sections = NULL;
        char errstr[1024], why[768];
        sc_conf_t conf;

        for (int i = 1; i < argc; i++) {
                const char *a = argv[i];
                if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
                        sc_config_usage(stdout);
                        return 0;
                } else if (!strcmp(a, "--list")) {
                        mode = LIST;
                } else if (!strcmp(a, "--markdown")) {
                        mode = MARKDOWN;
                } else if (!strcmp(a, "--markdown-sections") && i + 1 < argc) {
                        sections = argv[++i];
                } else if (!strcmp(a, "--check")) {
                        mode = CHECK;
                } else if ((!strcmp(a, "-c") || !strcmp(a, "--config")) && i + 1 < argc) {
                        file = argv[++i];
                } else if (!strcmp(a, "--set") && i + 1 < argc) {
                        i++;
                } else {
                        fprintf(stderr, "scadles config: unexpected argument '%s'\n\n", a);
                        sc_config_usage(stderr);
                        return 2;
                }
        }
        if (sections) {
                char *text;
                if (sc_conf_describe_sections(sections, &text, errstr, sizeof(errstr))) {
                        fprintf(stderr, "scadles config: --markdown-sections: %s\n", errstr);
                        return 2;
                }
                return sc_config_print(text);
        }
        if (mode == LIST)
                return sc_config_print(sc_conf_describe(0));
        if (mode == MARKDOWN)
                return sc_config_print(sc_conf_describe(1));
        if (mode != CHECK) {
                sc_config_usage(stderr);
                return 2;
        }

        sc_err_t err = SC_OK;
        if (file)
                err = sc_conf_load(&conf, file, errstr, sizeof(errstr));
        else
                sc_conf_defaults(&conf);
        for (int i = 1; !err && i < argc; i++)
                if (!strcmp(argv[i], "--set"))
                        err = sc_conf_set(&conf, argv[++i], errstr, sizeof(errstr));
                else if (!strcmp(argv[i], "-c") || !strcmp(argv[i], "--config"))
                        i++;
        if (err) {
                fprintf(stderr, "scadles config: %s\n", errstr);
                sc_conf_free(&conf);
                /* An unreadable or invalid file is the user's to fix: 2. */
                return err == SC_ERR_NOMEM ? 1 : 2;
        }
        /* librdkafka's own checks, on a throwaway client configuration. */
        err = sc_kafka_conf_check((const json_t *)conf.kafka, "$.kafka", why, sizeof(why));
        if (!err)
                err = sc_kafka_conf_check((const json_t *)conf.kafka_consumer, "$.kafka_consumer",
                                          why, sizeof(why));
        if (!err)
                err = sc_kafka_conf_check((const json_t *)conf.kafka_producer, "$.kafka_producer",
                                          why, sizeof(why));
        if (err) {
                fprintf(stderr, "scadles config: %s: %s\n", conf.origin, why);
                sc_conf_free(&conf);
                return err == SC_ERR_NOMEM ? 1 : 2;
        }
        /* Shapes are the model's to check: build it (parameters stay zero). */
        if (conf.model.n_layers > 0) {
                sc_model_t *model = NULL;
                err = sc_model_new(&model, &conf.model, errstr, sizeof(errstr));
                if (err) {
                        sc_conf_model_error(&conf, errstr, sizeof(errstr));
                        fprintf(stderr, "scadles config: %s\n", errstr);
                        sc_conf_free(&conf);
                        return err == SC_ERR_NOMEM ? 1 : 2;
                }
                sc_shape_t out = sc_model_output_shape(model);
                fprintf(stderr,
                        "scadles config: %s: ok; model of %d layers, %zu parameters, "
                        "output %dx%dx%d\n",
                        conf.origin, conf.model.n_layers, sc_model_nparams(model), out.c, out.h,
                        out.w);
                sc_model_destroy(model);
        }
        int rc = sc_config_print(sc_conf_dump(&conf));
        if (!rc)
                putchar('\n');
        sc_conf_free(&conf);
        return rc;
}
