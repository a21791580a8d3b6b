/* cli_model.c — what several subcommands share around a model: the
 * configuration with its overrides, a model loaded from a checkpoint, and
 * per-sample class probabilities written as CSV. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "sc_ckpt.h"
#include "sc_file.h"

int sc_cli_ckpt_load(const char *cmd, const char *ckpt, sc_model_t *model, sc_sgd_t *sgd,
                     sc_ckpt_meta_t *meta)
{
        char err[1024];
        int has_state = 0;
        sc_err_t e = sc_ckpt_load(ckpt, model, sgd, meta, &has_state, err, sizeof(err));
        if (e) {
                fprintf(stderr, "scadles %s: %s\n", cmd, err);
                return e == SC_ERR_SHAPE ? 2 : 1;
        }
        if (sc_model_nstate(model) && !has_state)
                fprintf(stderr,
                        "scadles %s: warning: %s has no statistics for the model's batchnorm "
                        "or standardize layers (an older checkpoint); using mean 0, variance 1\n",
                        cmd, ckpt);
        return 0;
}

int sc_cli_model_load(const char *cmd, sc_conf_t *conf, const char *ckpt, sc_model_t **modelp)
{
        char err[1024];
        int rc;

        *modelp = NULL;
        if (sc_model_new(modelp, &conf->model, err, sizeof(err))) {
                sc_conf_model_error(conf, err, sizeof(err));
                fprintf(stderr, "scadles %s: %s\n", cmd, err);
                return 2;
        }
        if ((rc = sc_cli_ckpt_load(cmd, ckpt, *modelp, NULL, NULL))) {
                sc_model_destroy(*modelp);
                *modelp = NULL;
        }
        return rc;
}

#define SC_CLI_PRED_BATCH 256

int sc_cli_write_predictions(const char *cmd, sc_model_t *model, const float *x, const int32_t *y,
                             size_t n, const char *path)
{
        const size_t numel = sc_shape_numel(sc_model_spec(model)->input);
        const int k = (int)sc_shape_numel(sc_model_output_shape(model));
        float *out = malloc(sizeof(float) * SC_CLI_PRED_BATCH * (size_t)k);
        FILE *f = NULL;
        int rc = 1;

        if (!out) {
                fprintf(stderr, "scadles %s: --predictions: out of memory\n", cmd);
                return 1;
        }
        if (!(f = fopen(path, "w"))) {
                fprintf(stderr, "scadles %s: --predictions %s: cannot create: %s\n", cmd, path,
                        strerror(errno));
                goto out;
        }
        fprintf(f, "label,predicted");
        for (int j = 0; j < k; j++)
                fprintf(f, ",p%d", j);
        fprintf(f, "\n");
        for (size_t i = 0; i < n; i += SC_CLI_PRED_BATCH) {
                int b = (int)(n - i < SC_CLI_PRED_BATCH ? n - i : SC_CLI_PRED_BATCH);
                if (isnan(sc_model_eval_batch(model, x + i * numel, NULL, NULL, b, NULL, out))) {
                        fprintf(stderr, "scadles %s: --predictions: out of memory\n", cmd);
                        goto out;
                }
                for (int s = 0; s < b; s++) {
                        float *p = out + (size_t)s * (size_t)k;
                        int arg = sc_nn_softmax(p, k, p);
                        fprintf(f, "%d,%d", (int)y[i + (size_t)s], arg);
                        for (int j = 0; j < k; j++)
                                fprintf(f, ",%.9g", (double)p[j]);
                        fprintf(f, "\n");
                }
        }
        if (ferror(f) | fclose(f)) {
                f = NULL;
                fprintf(stderr, "scadles %s: --predictions %s: write error\n", cmd, path);
                goto out;
        }
        f = NULL;
        rc = 0;
out:
        if (f)
                fclose(f);
        free(out);
        return rc;
}
