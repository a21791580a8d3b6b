/* fuzz_conf.c — libFuzzer target: the configuration parser. Input: a JSON
 * text for sc_conf_parse, or after a "set:" prefix one override for
 * sc_conf_set on the defaults. An accepted configuration's dump must parse
 * back and dump to the same text. */
#include "fuzz_common.h"

#include "sc_conf.h"

static void sc_fuzz_dump_roundtrip(const sc_conf_t *conf)
{
        char why[1024];
        sc_conf_t back;
        char *d1 = sc_conf_dump(conf), *d2 = NULL;
        if (!d1)
                return;
        sc_err_t err = sc_conf_parse(&back, d1, "dump", why, sizeof(why));
        SC_FUZZ_ASSERT_OK(err, "dump does not parse back", why);
        d2 = sc_conf_dump(&back);
        if (d2) {
                if (strcmp(d1, d2))
                        fprintf(stderr, "dump changed on reparse:\n%s\n---\n%s\n", d1, d2);
                SC_FUZZ_ASSERT(!strcmp(d1, d2));
        }
        free(d1);
        free(d2);
        sc_conf_free(&back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char why[1024];
        sc_conf_t conf;
        char *text = malloc(size + 1);
        if (!text)
                return 0;
        memcpy(text, data, size);
        text[size] = '\0';
        if (size >= 4 && !memcmp(text, "set:", 4)) {
                sc_conf_defaults(&conf);
                if (sc_conf_set(&conf, text + 4, why, sizeof(why)) == SC_OK)
                        sc_fuzz_dump_roundtrip(&conf);
                sc_conf_free(&conf);
        } else if (sc_conf_parse(&conf, text, "fuzz", why, sizeof(why)) == SC_OK) {
                sc_fuzz_dump_roundtrip(&conf);
                sc_conf_free(&conf);
        }
        free(text);
        return 0;
}

/* ---- seeds: the dump of the defaults and of a few edited configurations,
 * and overrides (fuzz/seeds.sh adds the example configurations) ---- */

static void sc_fuzz_write_seeds(const char *dir)
{
        static const char *const sets[] = {
            "model.layers[0]={\"type\": \"dense\", \"units\": 32}",
            "model.layers[1]={\"type\": \"relu\"}",
            "optim.lr=0.05",
            "optim.schedule={\"type\": \"multistep\", \"milestones\": [10, 20]}",
            "source.pattern=^sensor-[0-9]+$",
            "source.topics[0]={\"topic\": \"t\", \"format\": \"csv\"}",
            "kafka.bootstrap.servers=127.0.0.1:9092",
            "job.sync.policy=scadles",
            "streams.policy=truncate",
            "worker.batch=rate",
        };
        char name[32];
        sc_conf_t conf;
        char why[1024];

        sc_conf_defaults(&conf);
        for (size_t i = 0; i <= sizeof(sets) / sizeof(sets[0]); i++) {
                char *d = sc_conf_dump(&conf);
                if (!d)
                        exit(1);
                snprintf(name, sizeof(name), "dump-%zu", i);
                sc_fuzz_seed(dir, name, d, strlen(d));
                free(d);
                if (i == sizeof(sets) / sizeof(sets[0]))
                        break;
                snprintf(name, sizeof(name), "set-%zu", i);
                char line[512];
                int n = snprintf(line, sizeof(line), "set:%s", sets[i]);
                sc_fuzz_seed(dir, name, line, (size_t)n);
                if (sc_conf_set(&conf, sets[i], why, sizeof(why)))
                        fprintf(stderr, "fuzz seeds: conf: %s (seed kept)\n", why);
        }
        sc_conf_free(&conf);
}
