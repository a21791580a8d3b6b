/* sim_conf.c — the simulator's configuration: the "sim" section of a JSON
 * file through a small property table (unknown keys and wrong types are
 * errors naming $.sim.<key>), the rest handed to the main configuration. */
#include <jansson.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "sc_mix.h"
#include "sc_sim.h"

typedef enum sc_simp_type {
        SC_SIMP_INT,
        SC_SIMP_LONG,
        SC_SIMP_U32,
        SC_SIMP_U64,
        SC_SIMP_DOUBLE,
        SC_SIMP_BOOL,
        SC_SIMP_POLICY,
        SC_SIMP_CODEC,
        SC_SIMP_RATES,
        SC_SIMP_BUFFER,
        SC_SIMP_CHURN,
        SC_SIMP_WINDOW,
        SC_SIMP_DRAW,
} sc_simp_type_t;

typedef struct sc_simp {
        const char *key;
        sc_simp_type_t type;
        size_t offset;
        double min, max;
} sc_simp_t;

#define SC_SIMP(k, t, f, lo, hi)                                                                   \
        {                                                                                          \
                k, t, offsetof(sc_sim_spec_t, f), lo, hi                                           \
        }
static const sc_simp_t sc_simps[] = {
    SC_SIMP("devices", SC_SIMP_INT, devices, 1, SC_SIM_MAX_DEVICES),
    SC_SIMP("shards", SC_SIMP_INT, shards, 1, 1 << 16),
    SC_SIMP("seed", SC_SIMP_U64, seed, 0, 9.2e18),
    SC_SIMP("policy", SC_SIMP_POLICY, sync.kind, 0, 0),
    SC_SIMP("batch", SC_SIMP_INT, sync.batch, 1, 1 << 20),
    SC_SIMP("b_min", SC_SIMP_INT, sync.b_min, 1, 1 << 20),
    SC_SIMP("b_max", SC_SIMP_INT, sync.b_max, 1, 1 << 20),
    SC_SIMP("window", SC_SIMP_WINDOW, sync.window, 1e-6, 1e9),
    SC_SIMP("base_batch", SC_SIMP_DOUBLE, sync.base_batch, 0, 1e12),
    SC_SIMP("staleness", SC_SIMP_INT, sync.staleness, 0, 1 << 30),
    SC_SIMP("local_steps", SC_SIMP_INT, sync.local_steps, 1, 1 << 30),
    SC_SIMP("send_models", SC_SIMP_BOOL, sync.send_models, 0, 1),
    SC_SIMP("ada_window", SC_SIMP_U32, sync.ada_window, 1, 1 << 24),
    SC_SIMP("gamma", SC_SIMP_DOUBLE, sync.gamma, 1e-6, 1e9),
    SC_SIMP("commit_min", SC_SIMP_DOUBLE, sync.commit_min, 0, 1e9),
    SC_SIMP("commit_rate", SC_SIMP_DOUBLE, sync.commit_rate, 1e-6, 1e9),
    SC_SIMP("adsp_mu", SC_SIMP_DOUBLE, sync.adsp_mu, 0, 0.999999),
    SC_SIMP("adsp_eta", SC_SIMP_DOUBLE, sync.adsp_eta, 0, 1e6),
    SC_SIMP("tune", SC_SIMP_BOOL, tune, 0, 1),
    SC_SIMP("target_loss", SC_SIMP_DOUBLE, target_loss, -1e9, 1e9),
    SC_SIMP("local_lr", SC_SIMP_DOUBLE, local_lr, 0, 1e6),
    SC_SIMP("local_momentum", SC_SIMP_DOUBLE, local_mu, 0, 0.999999),
    SC_SIMP("codec", SC_SIMP_CODEC, codec, 0, 0),
    SC_SIMP("codec_ratio", SC_SIMP_DOUBLE, codec_ratio, 0, 1),
    SC_SIMP("codec_delta", SC_SIMP_DOUBLE, codec_delta, 0, 1e6),
    SC_SIMP("codec_vote", SC_SIMP_BOOL, codec_vote, 0, 1),
    SC_SIMP("codec_half", SC_SIMP_BOOL, codec_half, 0, 1),
    SC_SIMP("codec_log8", SC_SIMP_BOOL, codec_log8, 0, 1),
    SC_SIMP("codec_rice", SC_SIMP_BOOL, codec_rice, 0, 1),
    SC_SIMP("async_pull", SC_SIMP_BOOL, async_pull, 0, 1),
    SC_SIMP("downlink_bcast", SC_SIMP_BOOL, downlink_bcast, 0, 1),
    SC_SIMP("rates", SC_SIMP_RATES, rates, 0, 0),
    SC_SIMP("min_rate", SC_SIMP_DOUBLE, min_rate, 1e-6, 1e12),
    SC_SIMP("buffer", SC_SIMP_BUFFER, truncation, 0, 0),
    SC_SIMP("scadles_drain", SC_SIMP_BOOL, scadles_drain, 0, 1),
    SC_SIMP("buffer_window", SC_SIMP_DOUBLE, buffer_window, 1e-6, 1e9),
    SC_SIMP("labels_per_device", SC_SIMP_INT, labels_per_device, 0, 1 << 20),
    SC_SIMP("inject_alpha", SC_SIMP_DOUBLE, inject_alpha, 0, 1),
    SC_SIMP("inject_beta", SC_SIMP_DOUBLE, inject_beta, 0, 1),
    SC_SIMP("inject_draw", SC_SIMP_DRAW, inject_draw, 0, 0),
    SC_SIMP("per_sample", SC_SIMP_DOUBLE, per_sample, 0, 1e6),
    SC_SIMP("heterogeneity", SC_SIMP_DOUBLE, heterogeneity, 1, 1e6),
    SC_SIMP("step_overhead", SC_SIMP_DOUBLE, step_overhead, 0, 1e6),
    SC_SIMP("up_bps", SC_SIMP_DOUBLE, up_bps, 1, 1e15),
    SC_SIMP("down_bps", SC_SIMP_DOUBLE, down_bps, 1, 1e15),
    SC_SIMP("latency", SC_SIMP_DOUBLE, latency, 0, 1e6),
    SC_SIMP("up_bps_max", SC_SIMP_DOUBLE, up_bps_max, 0, 1e15),
    SC_SIMP("down_bps_max", SC_SIMP_DOUBLE, down_bps_max, 0, 1e15),
    SC_SIMP("latency_max", SC_SIMP_DOUBLE, latency_max, 0, 1e6),
    SC_SIMP("server_ingress_bps", SC_SIMP_DOUBLE, server_ingress_bps, 0, 1e15),
    SC_SIMP("apply_rate", SC_SIMP_DOUBLE, apply_rate, 0, 1e15),
    SC_SIMP("encode_rate", SC_SIMP_DOUBLE, encode_rate, 0, 1e15),
    SC_SIMP("max_time", SC_SIMP_DOUBLE, max_time, 1e-6, 1e12),
    SC_SIMP("max_steps", SC_SIMP_LONG, max_steps, 0, 9e18),
    SC_SIMP("target_acc", SC_SIMP_DOUBLE, target_acc, 0, 1),
    SC_SIMP("churn", SC_SIMP_CHURN, churn, 0, 0),
    SC_SIMP("eval_every", SC_SIMP_DOUBLE, eval_every, 1e-6, 1e12),
    SC_SIMP("eval_samples", SC_SIMP_INT, eval_samples, 0, 1 << 30),
};
#define SC_NSIMPS (sizeof(sc_simps) / sizeof(sc_simps[0]))

void sc_sim_spec_defaults(sc_sim_spec_t *spec)
{
        memset(spec, 0, sizeof(*spec));
        spec->devices = 4;
        spec->shards = 1;
        sc_sync_spec_defaults(&spec->sync, SC_SYNC_BSP, spec->devices);
        spec->target_loss = 0.3;
        spec->codec = SC_CODEC_NONE;
        spec->rates = SC_SIM_RATES_CONSTANT;
        spec->rate = 64;
        spec->min_rate = 1;
        spec->buffer_window = 1.0;
        spec->inject_draw = SC_MIX_DRAW_BALANCED;
        spec->per_sample = 0.001;
        spec->heterogeneity = 1.0;
        spec->up_bps = 12.5e6; /* 100 Mbit/s */
        spec->down_bps = 12.5e6;
        spec->latency = 0.005;
        spec->max_time = 60;
        spec->eval_every = 5;
        spec->eval_samples = 1000;
}

static sc_err_t sc_simp_number(json_t *v, const sc_simp_t *p, const char *origin, double *out,
                               char *errstr, size_t errstr_size)
{
        double d;
        int integral = p->type != SC_SIMP_DOUBLE;

        if (integral ? !json_is_integer(v) : !json_is_number(v))
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size, "%s: $.sim.%s: expected %s",
                               origin, p->key, integral ? "an integer" : "a number");
        d = json_number_value(v);
        if (!(d >= p->min && d <= p->max))
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "%s: $.sim.%s: %g is out of range [%g, %g]", origin, p->key, d,
                               p->min, p->max);
        *out = d;
        return SC_OK;
}

static sc_err_t sc_simp_rates(sc_sim_spec_t *spec, json_t *v, const char *origin, char *errstr,
                              size_t errstr_size)
{
        static const char *const names[] = {"S1", "S2", "S10", "S20"};
        static const sc_sim_rates_t kinds[] = {SC_SIM_RATES_S1, SC_SIM_RATES_S2, SC_SIM_RATES_S10,
                                               SC_SIM_RATES_S20};
        size_t i;
        json_t *e;

        if (json_is_string(v)) {
                for (i = 0; i < 4; i++)
                        if (!strcmp(json_string_value(v), names[i])) {
                                spec->rates = kinds[i];
                                return SC_OK;
                        }
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "%s: $.sim.rates: unknown rate set \"%s\" (expected S1, S2, S10, "
                               "S20, a number or a list of numbers)",
                               origin, json_string_value(v));
        }
        if (json_is_number(v)) {
                if (!(json_number_value(v) > 0))
                        return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                       "%s: $.sim.rates: must be > 0", origin);
                spec->rates = SC_SIM_RATES_CONSTANT;
                spec->rate = json_number_value(v);
                return SC_OK;
        }
        if (json_is_array(v) && json_array_size(v) >= 1 && json_array_size(v) <= SC_SIM_MAX_LIST) {
                json_array_foreach(v, i, e)
                {
                        if (!json_is_number(e) || !(json_number_value(e) > 0))
                                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                               "%s: $.sim.rates[%zu]: expected a number > 0",
                                               origin, i);
                        spec->rate_list[i] = json_number_value(e);
                }
                spec->n_rates = (int)json_array_size(v);
                spec->rates = SC_SIM_RATES_LIST;
                return SC_OK;
        }
        return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                       "%s: $.sim.rates: expected S1, S2, S10, S20, a number or a list of 1 to %d "
                       "numbers",
                       origin, SC_SIM_MAX_LIST);
}

/* "churn": [[device, leave_at, rejoin_at or null], ...] */
static sc_err_t sc_simp_churn(sc_sim_spec_t *spec, json_t *v, const char *origin, char *errstr,
                              size_t errstr_size)
{
        size_t i;
        json_t *e;

        if (!json_is_array(v) || json_array_size(v) > SC_SIM_MAX_CHURN)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "%s: $.sim.churn: expected a list of at most %d [device, leave_at, "
                               "rejoin_at] entries",
                               origin, SC_SIM_MAX_CHURN);
        json_array_foreach(v, i, e)
        {
                json_t *d = json_array_get(e, 0), *l = json_array_get(e, 1),
                       *r = json_array_get(e, 2);
                if (!json_is_array(e) || json_array_size(e) != 3 || !json_is_integer(d) ||
                    json_integer_value(d) < 0 || !json_is_number(l) ||
                    !(json_number_value(l) >= 0) || !(json_is_number(r) || json_is_null(r)))
                        return sc_errf(
                            SC_ERR_CONFIG, errstr, errstr_size,
                            "%s: $.sim.churn[%zu]: expected [device >= 0, leave_at >= 0, "
                            "rejoin_at or null]",
                            origin, i);
                spec->churn[i].device = (int)json_integer_value(d);
                spec->churn[i].leave_at = json_number_value(l);
                spec->churn[i].rejoin_at = json_is_null(r) ? -1 : json_number_value(r);
        }
        spec->n_churn = (int)json_array_size(v);
        return SC_OK;
}

sc_err_t sc_sim_spec_parse(sc_sim_spec_t *spec, void *json_sim, const char *origin, char *errstr,
                           size_t errstr_size)
{
        json_t *obj = json_sim, *v;
        const char *key;
        char sub[256];
        sc_err_t err;

        sc_sim_spec_defaults(spec);
        if (!obj)
                goto check;
        if (!json_is_object(obj))
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size, "%s: $.sim: expected an object",
                               origin);
        json_object_foreach(obj, key, v)
        {
                const sc_simp_t *p = NULL;
                char *base = (char *)spec;
                double d = 0;
                for (size_t i = 0; i < SC_NSIMPS; i++)
                        if (!strcmp(sc_simps[i].key, key))
                                p = &sc_simps[i];
                if (!p)
                        return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                       "%s: $.sim.%s: unknown key", origin, key);
                switch (p->type) {
                case SC_SIMP_POLICY:
                        if (!json_is_string(v))
                                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                               "%s: $.sim.policy: expected a string", origin);
                        if (sc_sync_kind_parse(json_string_value(v), &spec->sync.kind, sub,
                                               sizeof(sub)))
                                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                               "%s: $.sim.policy: %s", origin, sub);
                        break;
                case SC_SIMP_CODEC:
                        if (!json_is_string(v) ||
                            sc_codec_id_from_name(json_string_value(v), &spec->codec, sub,
                                                  sizeof(sub)))
                                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                               "%s: $.sim.codec: expected a codec name (none, "
                                               "topk, randk, adacomp, adaptive, q8, fp16)",
                                               origin);
                        break;
                case SC_SIMP_BUFFER:
                        if (json_is_string(v) && !strcmp(json_string_value(v), "persistence"))
                                spec->truncation = 0;
                        else if (json_is_string(v) && !strcmp(json_string_value(v), "truncation"))
                                spec->truncation = 1;
                        else
                                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                               "%s: $.sim.buffer: expected \"persistence\" or "
                                               "\"truncation\"",
                                               origin);
                        break;
                case SC_SIMP_DRAW:
                        if (json_is_string(v) && !strcmp(json_string_value(v), "balanced"))
                                spec->inject_draw = SC_MIX_DRAW_BALANCED;
                        else if (json_is_string(v) && !strcmp(json_string_value(v), "pooled"))
                                spec->inject_draw = SC_MIX_DRAW_POOLED;
                        else
                                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                               "%s: $.sim.inject_draw: expected \"balanced\" or "
                                               "\"pooled\"",
                                               origin);
                        break;
                case SC_SIMP_CHURN:
                        if ((err = sc_simp_churn(spec, v, origin, errstr, errstr_size)))
                                return err;
                        break;
                case SC_SIMP_RATES:
                        if ((err = sc_simp_rates(spec, v, origin, errstr, errstr_size)))
                                return err;
                        break;
                case SC_SIMP_WINDOW: /* seconds, or "auto": base_batch / sum of the rates */
                        if (json_is_string(v) && !strcmp(json_string_value(v), "auto")) {
                                spec->sync.window_auto = 1;
                                break;
                        }
                        if (!json_is_number(v))
                                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                               "%s: $.sim.window: expected seconds (a number) or "
                                               "\"auto\"",
                                               origin);
                        if ((err = sc_simp_number(v, p, origin, &d, errstr, errstr_size)))
                                return err;
                        spec->sync.window = d;
                        spec->sync.window_auto = 0;
                        break;
                case SC_SIMP_BOOL:
                        if (!json_is_boolean(v))
                                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                               "%s: $.sim.%s: expected true or false", origin, key);
                        *(int *)(base + p->offset) = json_is_true(v);
                        break;
                default:
                        if ((err = sc_simp_number(v, p, origin, &d, errstr, errstr_size)))
                                return err;
                        if (p->type == SC_SIMP_INT)
                                *(int *)(base + p->offset) = (int)d;
                        else if (p->type == SC_SIMP_LONG)
                                *(long *)(base + p->offset) = (long)json_integer_value(v);
                        else if (p->type == SC_SIMP_U32)
                                *(uint32_t *)(base + p->offset) = (uint32_t)d;
                        else if (p->type == SC_SIMP_U64)
                                *(uint64_t *)(base + p->offset) = (uint64_t)json_integer_value(v);
                        else
                                *(double *)(base + p->offset) = d;
                        break;
                }
        }
check:
        spec->sync.n_workers = spec->devices;
        if ((err = sc_sync_spec_check(&spec->sync, sub, sizeof(sub))))
                return sc_errf(err, errstr, errstr_size, "%s: $.sim: %s", origin, sub);
        for (int i = 0; i < spec->n_churn; i++)
                if (spec->churn[i].device >= spec->devices)
                        return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                       "%s: $.sim.churn[%d]: device %d of %d", origin, i,
                                       spec->churn[i].device, spec->devices);
        if (spec->labels_per_device < 0)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "%s: $.sim.labels_per_device: must be >= 0", origin);
        /* A range's upper end, when set, is not below its lower end. */
        const struct {
                const char *key, *lo_key;
                double hi, lo;
        } ranges[] = {{"up_bps_max", "up_bps", spec->up_bps_max, spec->up_bps},
                      {"down_bps_max", "down_bps", spec->down_bps_max, spec->down_bps},
                      {"latency_max", "latency", spec->latency_max, spec->latency}};
        for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++)
                if (ranges[i].hi > 0 && ranges[i].hi < ranges[i].lo)
                        return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                       "%s: $.sim.%s: %g is below $.sim.%s (%g); 0 turns it off",
                                       origin, ranges[i].key, ranges[i].hi, ranges[i].lo_key,
                                       ranges[i].lo);
        return SC_OK;
}

sc_err_t sc_sim_load(const char *path, sc_conf_t *conf, sc_sim_spec_t *spec, char *errstr,
                     size_t errstr_size)
{
        json_error_t jerr;
        json_t *root, *sim;
        char *rest = NULL;
        sc_err_t err;

        sc_conf_defaults(conf);
        if (!(root = json_load_file(path, 0, &jerr)))
                return sc_errf(jerr.line > 0 ? SC_ERR_CONFIG : SC_ERR_IO, errstr, errstr_size,
                               "%s:%d:%d: %s", path, jerr.line, jerr.column, jerr.text);
        if (!json_is_object(root)) {
                json_decref(root);
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size, "%s: $: expected an object",
                               path);
        }
        sim = json_object_get(root, "sim");
        json_incref(sim);
        json_object_del(root, "sim");
        err = sc_sim_spec_parse(spec, sim, path, errstr, errstr_size);
        json_decref(sim);
        if (!err) {
                if (!(rest = json_dumps(root, JSON_COMPACT)))
                        err = sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
                else
                        err = sc_conf_parse(conf, rest, path, errstr, errstr_size);
        }
        free(rest);
        json_decref(root);
        return err;
}
