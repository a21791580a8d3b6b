/* test_eval_set.c — the held-out set of the eval section: CSV lines (header
 * and blank lines skipped) through a source.topics element's decoder, JSON
 * Lines through streams.*, IDX files through the decoder's scale/mean/std,
 * errors naming file and line, and the section's configuration checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sc_conf.h"
#include "sc_eval_set.h"

static char dir[64];

static void put(const char *name, const void *bytes, size_t n, char *path, size_t path_size)
{
        snprintf(path, path_size, "%s/%s", dir, name);
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(bytes, 1, n, f), n);
        fclose(f);
}

static void parse(sc_conf_t *conf, const char *json)
{
        char err[512];
        if (sc_conf_parse(conf, json, "t.json", err, sizeof(err)) != SC_OK)
                fail_msg("%s", err);
}

static const char model3[] = "\"model\": {\"input\": [3], \"layers\": [{\"type\": \"dense\", "
                             "\"units\": 2}]}";

static void test_csv_with_decoder_topic(void **state)
{
        (void)state;
        char path[256], json[1024], err[512];
        const char text[] = "a,b,c,label\n1,2,3,1\n\n4,5,6,0\r\n7,8,9,1";
        put("e.csv", text, sizeof(text) - 1, path, sizeof(path));
        snprintf(json, sizeof(json),
                 "{%s, \"source\": {\"topics\": [{\"topic\": \"t\", \"format\": \"csv\", "
                 "\"label_column\": 3, \"first_feature_column\": 0, \"mean\": 5, \"std\": 2}]}, "
                 "\"eval\": {\"file\": \"%s\", \"decoder\": \"t\"}}",
                 model3, path);
        sc_conf_t conf;
        parse(&conf, json);
        assert_true(sc_eval_set_configured(&conf));
        sc_dataset_t ds;
        if (sc_eval_set_load(&conf, 2, &ds, err, sizeof(err)) != SC_OK)
                fail_msg("%s", err);
        assert_int_equal(ds.n, 3);
        assert_int_equal(ds.n_classes, 2);
        const float want[9] = {-2, -1.5f, -1, -0.5f, 0, 0.5f, 1, 1.5f, 2};
        for (int i = 0; i < 9; i++)
                assert_true(ds.x[i] == want[i]);
        assert_int_equal(ds.y[0], 1);
        assert_int_equal(ds.y[1], 0);
        assert_int_equal(ds.y[2], 1);
        sc_dataset_free(&ds);
        sc_conf_free(&conf);
}

/* A csv file with a header line and class names in the label column: the
 * header (no column a number) is skipped; a first data line with a label
 * that is not a class is an error, not a header. */
static void test_csv_header_with_class_names(void **state)
{
        (void)state;
        char path[256], json[1024], err[512];
        const char text[] = "temp,kind,status\n1,pump,ok\n3,fan,leak\n";
        put("n.csv", text, sizeof(text) - 1, path, sizeof(path));
        snprintf(json, sizeof(json),
                 "{\"model\": {\"input\": [4], \"layers\": [{\"type\": \"dense\", "
                 "\"units\": 2}]}, \"streams\": {\"format\": \"csv\", \"label_column\": 2, "
                 "\"labels\": [\"ok\", \"leak\"], \"fields\": [{\"column\": 0}, "
                 "{\"column\": 1, \"type\": \"categorical\", \"vocab\": [\"pump\", "
                 "\"fan\"]}]}, \"eval\": {\"file\": \"%s\"}}",
                 path);
        sc_conf_t conf;
        parse(&conf, json);
        sc_dataset_t ds;
        if (sc_eval_set_load(&conf, 2, &ds, err, sizeof(err)) != SC_OK)
                fail_msg("%s", err);
        assert_int_equal(ds.n, 2);
        assert_int_equal(ds.y[0], 0);
        assert_int_equal(ds.y[1], 1);
        const float want[8] = {1, 1, 0, 0, 3, 0, 1, 0};
        for (int i = 0; i < 8; i++)
                assert_true(ds.x[i] == want[i]);
        sc_dataset_free(&ds);
        const char bad[] = "1,pump,boiling\n3,fan,leak\n";
        put("n.csv", bad, sizeof(bad) - 1, path, sizeof(path));
        assert_int_equal(sc_eval_set_load(&conf, 2, &ds, err, sizeof(err)), SC_ERR_DECODE);
        assert_non_null(strstr(err, "n.csv:1: csv record (label_range)"));
        sc_conf_free(&conf);
}

static void test_jsonl_and_bad_line(void **state)
{
        (void)state;
        char path[256], json[1024], err[512];
        const char good[] = "{\"features\": [1, 2, 3], \"label\": 0}\n"
                            "{\"features\": [4, 5, 6], \"label\": 1}\n";
        put("e.jsonl", good, sizeof(good) - 1, path, sizeof(path));
        snprintf(json, sizeof(json),
                 "{%s, \"streams\": {\"scale\": 2}, \"eval\": {\"file\": \"%s\"}}", model3, path);
        sc_conf_t conf;
        parse(&conf, json);
        sc_dataset_t ds;
        if (sc_eval_set_load(&conf, 2, &ds, err, sizeof(err)) != SC_OK)
                fail_msg("%s", err);
        assert_int_equal(ds.n, 2);
        assert_true(ds.x[5] == 12.0f);
        sc_dataset_free(&ds);
        const char bad[] = "{\"features\": [1, 2, 3], \"label\": 0}\n"
                           "{\"features\": [1, 2], \"label\": 1}\n";
        put("e.jsonl", bad, sizeof(bad) - 1, path, sizeof(path));
        assert_int_equal(sc_eval_set_load(&conf, 2, &ds, err, sizeof(err)), SC_ERR_DECODE);
        assert_non_null(strstr(err, "e.jsonl:2: json record (wrong_length)"));
        assert_null(ds.x);
        const char label[] = "{\"features\": [1, 2, 3], \"label\": 5}\n";
        put("e.jsonl", label, sizeof(label) - 1, path, sizeof(path));
        assert_int_equal(sc_eval_set_load(&conf, 2, &ds, err, sizeof(err)), SC_ERR_DECODE);
        assert_non_null(strstr(err, "e.jsonl:1: json record (label_range)"));
        put("e.jsonl", "\n\n", 2, path, sizeof(path));
        assert_int_equal(sc_eval_set_load(&conf, 2, &ds, err, sizeof(err)), SC_ERR_DECODE);
        assert_non_null(strstr(err, "no records"));
        unlink(path);
        assert_int_equal(sc_eval_set_load(&conf, 2, &ds, err, sizeof(err)), SC_ERR_IO);
        assert_non_null(strstr(err, "e.jsonl"));
        sc_conf_free(&conf);
}

static void test_idx_scale(void **state)
{
        (void)state;
        char img[256], lab[256], json[1024], err[512];
        /* 2 images of 1x2x2 bytes, labels 1 and 0 */
        const unsigned char im[] = {0, 0, 8, 3, 0, 0, 0, 2, 0, 0,  0,  2,
                                    0, 0, 0, 2, 0, 2, 4, 6, 8, 10, 12, 14};
        const unsigned char lb[] = {0, 0, 8, 1, 0, 0, 0, 2, 1, 0};
        put("im.idx", im, sizeof(im), img, sizeof(img));
        put("lb.idx", lb, sizeof(lb), lab, sizeof(lab));
        snprintf(json, sizeof(json),
                 "{\"model\": {\"input\": [1, 2, 2], \"layers\": [{\"type\": \"flatten\"}, "
                 "{\"type\": \"dense\", \"units\": 2}]}, \"streams\": {\"scale\": 0.5, \"mean\": "
                 "1, \"std\": 2}, \"eval\": {\"file\": \"%s\", \"labels\": \"%s\"}}",
                 img, lab);
        sc_conf_t conf;
        parse(&conf, json);
        sc_dataset_t ds;
        if (sc_eval_set_load(&conf, 2, &ds, err, sizeof(err)) != SC_OK)
                fail_msg("%s", err);
        assert_int_equal(ds.n, 2);
        for (int i = 0; i < 8; i++)
                assert_true(ds.x[i] == ((float)(2 * i) * 0.5f - 1.0f) / 2.0f);
        assert_int_equal(ds.y[0], 1);
        sc_dataset_free(&ds);
        sc_conf_free(&conf);
        /* the same bytes, no labels file */
        snprintf(json, sizeof(json), "{%s, \"eval\": {\"file\": \"%s\"}}", model3, img);
        parse(&conf, json);
        assert_int_equal(sc_eval_set_load(&conf, 2, &ds, err, sizeof(err)), SC_ERR_CONFIG);
        assert_non_null(strstr(err, "$.eval.labels"));
        sc_conf_free(&conf);
        unlink(img);
        unlink(lab);
}

static void test_conf_errors(void **state)
{
        (void)state;
        static const struct {
                const char *json, *error;
        } cases[] = {
            {"{\"eval\": {\"file\": \"a.csv\", \"topic\": \"t\"}}", "$.eval.topic: give eval.file"},
            {"{\"eval\": {\"labels\": \"l.idx\"}}", "$.eval.labels: labels of an IDX"},
            {"{\"eval\": {\"file\": \"a.csv\", \"format\": \"csv\", \"labels\": \"l\"}}",
             "$.eval.labels: only an IDX"},
            {"{\"eval\": {\"file\": \"a\", \"format\": \"idx\"}}", "$.eval.labels: an IDX"},
            {"{\"eval\": {\"topic\": \"t\", \"decoder\": \"x\"}}",
             "$.eval.decoder: \"x\" is not a topic"},
            {"{\"eval\": {\"window\": 0}}", "$.eval.window"},
            {"{\"eval\": {\"format\": \"xml\"}}", "$.eval.format"},
            {"{\"train\": {\"checkpoint_interval\": -1}}", "$.train.checkpoint_interval"},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                sc_conf_t conf;
                char err[512] = "";
                if (sc_conf_parse(&conf, cases[i].json, "t.json", err, sizeof(err)) == SC_OK ||
                    !strstr(err, cases[i].error))
                        fail_msg("case %zu: \"%s\", expected \"%s\"", i, err, cases[i].error);
        }
}

static int setup(void **state)
{
        (void)state;
        snprintf(dir, sizeof(dir), "%s/scadles-evalset.XXXXXX",
                 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
        (void)state;
        char p[128];
        static const char *const names[] = {"e.csv", "e.jsonl", "im.idx", "lb.idx", "n.csv"};
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
                snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
                unlink(p);
        }
        return rmdir(dir);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_csv_with_decoder_topic),
            cmocka_unit_test(test_csv_header_with_class_names),
            cmocka_unit_test(test_jsonl_and_bad_line),
            cmocka_unit_test(test_idx_scale),
            cmocka_unit_test(test_conf_errors),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
