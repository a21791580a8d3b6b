/* conf_sim.c — the values of the simulator's section that are not one plain
 * type (sim.rates, sim.window, sim.churn: rows of conf_table.c), and the
 * section's cross-property checks. */
#include <string.h>

#include "conf_impl.h"

static const char *const sc_conf_rate_sets[] = {"S1", "S2", "S10", "S20"};
static const sc_sim_rates_t sc_conf_rate_kinds[] = {SC_SIM_RATES_S1, SC_SIM_RATES_S2,
                                                    SC_SIM_RATES_S10, SC_SIM_RATES_S20};

/* "S1".."S20", a rate > 0 for every device, or a list of rates (device i
 * takes rate i modulo the count). at: sc_sim_spec_t. */
sc_err_t sc_conf_sim_rates(json_t *v, void *at, const char *origin, const char *jpath, char *errstr,
                           size_t errstr_size)
{
        sc_sim_spec_t *spec = at;
        char epath[600];
        size_t i;
        json_t *e;

        if (json_is_string(v)) {
                for (i = 0; i < 4; i++)
                        if (!strcmp(json_string_value(v), sc_conf_rate_sets[i])) {
                                spec->rates = sc_conf_rate_kinds[i];
                                return SC_OK;
                        }
                return sc_conf_fail(errstr, errstr_size, origin, jpath,
                                    "unknown rate set \"%s\" (expected S1, S2, S10, S20, a number "
                                    "or a list of numbers)",
                                    json_string_value(v));
        }
        if (json_is_number(v)) {
                if (!(json_number_value(v) > 0))
                        return sc_conf_fail(errstr, errstr_size, origin, jpath, "must be > 0");
                spec->rates = SC_SIM_RATES_CONSTANT;
                spec->rate = json_number_value(v);
                return SC_OK;
        }
        if (json_is_array(v) && json_array_size(v) >= 1 && json_array_size(v) <= SC_SIM_MAX_LIST) {
                json_array_foreach(v, i, e)
                {
                        snprintf(epath, sizeof(epath), "%s[%zu]", jpath, i);
                        if (!json_is_number(e) || !(json_number_value(e) > 0))
                                return sc_conf_fail(errstr, errstr_size, origin, epath,
                                                    "expected a number > 0");
                        spec->rate_list[i] = json_number_value(e);
                }
                spec->n_rates = (int)json_array_size(v);
                spec->rates = SC_SIM_RATES_LIST;
                return SC_OK;
        }
        return sc_conf_fail(errstr, errstr_size, origin, jpath,
                            "expected S1, S2, S10, S20, a number or a list of 1 to %d numbers",
                            SC_SIM_MAX_LIST);
}

json_t *sc_conf_sim_rates_json(const void *at)
{
        const sc_sim_spec_t *spec = at;

        if (spec->rates == SC_SIM_RATES_CONSTANT)
                return json_real(spec->rate);
        if (spec->rates == SC_SIM_RATES_LIST) {
                json_t *a = json_array();
                for (int i = 0; a && i < spec->n_rates; i++)
                        json_array_append_new(a, json_real(spec->rate_list[i]));
                return a;
        }
        for (size_t i = 0; i < 4; i++)
                if (spec->rates == sc_conf_rate_kinds[i])
                        return json_string(sc_conf_rate_sets[i]);
        return json_null();
}

/* A batch window: seconds in [lo, hi] (lo excluded when lo_excl) to
 * *window with *autop 0, or "auto" (*autop 1, *window untouched). */
static sc_err_t sc_conf_window(json_t *v, double lo, int lo_excl, double hi, double *window,
                               int *autop, const char *origin, const char *jpath, char *errstr,
                               size_t errstr_size)
{
        if (json_is_string(v) && !strcmp(json_string_value(v), "auto")) {
                *autop = 1;
                return SC_OK;
        }
        if (!json_is_number(v))
                return sc_conf_fail(errstr, errstr_size, origin, jpath,
                                    "expected seconds (a number) or \"auto\"");
        double d = json_number_value(v);
        if (!((lo_excl ? d > lo : d >= lo) && d <= hi))
                return sc_conf_fail(errstr, errstr_size, origin, jpath,
                                    "%g is out of range %c%g, %g]", d, lo_excl ? '(' : '[', lo, hi);
        *window = d;
        *autop = 0;
        return SC_OK;
}

/* Seconds in [1e-6, 1e9], or "auto": base_batch / sum of the rates.
 * at: sc_sync_spec_t. */
sc_err_t sc_conf_sim_window(json_t *v, void *at, const char *origin, const char *jpath,
                            char *errstr, size_t errstr_size)
{
        sc_sync_spec_t *sync = at;
        return sc_conf_window(v, 1e-6, 0, 1e9, &sync->window, &sync->window_auto, origin, jpath,
                              errstr, errstr_size);
}

json_t *sc_conf_sim_window_json(const void *at)
{
        const sc_sync_spec_t *sync = at;
        return sync->window_auto ? json_string("auto") : json_real(sync->window);
}

/* worker.window: seconds in (0, 1e6], or "auto" (the job's base_batch / the
 * sum of its live workers' rates, from the broadcasts). at: sc_batch_spec_t. */
sc_err_t sc_conf_worker_window(json_t *v, void *at, const char *origin, const char *jpath,
                               char *errstr, size_t errstr_size)
{
        sc_batch_spec_t *bs = at;
        return sc_conf_window(v, 0, 1, 1e6, &bs->window, &bs->window_auto, origin, jpath, errstr,
                              errstr_size);
}

json_t *sc_conf_worker_window_json(const void *at)
{
        const sc_batch_spec_t *bs = at;
        return bs->window_auto ? json_string("auto") : json_real(bs->window);
}

/* [[device, leave_at, rejoin_at or null], ...]. at: sc_sim_spec_t. */
sc_err_t sc_conf_sim_churn(json_t *v, void *at, const char *origin, const char *jpath, char *errstr,
                           size_t errstr_size)
{
        sc_sim_spec_t *spec = at;
        char epath[600];
        size_t i;
        json_t *e;

        if (!json_is_array(v) || json_array_size(v) > SC_SIM_MAX_CHURN)
                return sc_conf_fail(errstr, errstr_size, origin, jpath,
                                    "expected a list of at most %d [device, leave_at, rejoin_at] "
                                    "entries",
                                    SC_SIM_MAX_CHURN);
        json_array_foreach(v, i, e)
        {
                json_t *d = json_array_get(e, 0), *l = json_array_get(e, 1),
                       *r = json_array_get(e, 2);
                if (!json_is_array(e) || json_array_size(e) != 3 || !json_is_integer(d) ||
                    json_integer_value(d) < 0 || !json_is_number(l) ||
                    !(json_number_value(l) >= 0) || !(json_is_number(r) || json_is_null(r))) {
                        snprintf(epath, sizeof(epath), "%s[%zu]", jpath, i);
                        return sc_conf_fail(errstr, errstr_size, origin, epath,
                                            "expected [device >= 0, leave_at >= 0, rejoin_at or "
                                            "null]");
                }
                spec->churn[i].device = (int)json_integer_value(d);
                spec->churn[i].leave_at = json_number_value(l);
                spec->churn[i].rejoin_at = json_is_null(r) ? -1 : json_number_value(r);
        }
        spec->n_churn = (int)json_array_size(v);
        return SC_OK;
}

json_t *sc_conf_sim_churn_json(const void *at)
{
        const sc_sim_spec_t *spec = at;
        json_t *a = json_array();

        for (int i = 0; a && i < spec->n_churn; i++) {
                const sc_sim_churn_t *c = &spec->churn[i];
                json_array_append_new(
                    a, json_pack("[i, f, o]", c->device, c->leave_at,
                                 c->rejoin_at < 0 ? json_null() : json_real(c->rejoin_at)));
        }
        return a;
}

sc_err_t sc_conf_validate_sim(sc_conf_t *conf, char *errstr, size_t errstr_size)
{
        sc_sim_spec_t *spec = &conf->sim;
        char sub[256];

        spec->sync.n_workers = spec->devices;
        if (sc_sync_spec_check(&spec->sync, sub, sizeof(sub)))
                return sc_conf_fail(errstr, errstr_size, conf->origin, "$.sim", "%s", sub);
        for (int i = 0; i < spec->n_churn; i++)
                if (spec->churn[i].device >= spec->devices) {
                        char epath[64];
                        snprintf(epath, sizeof(epath), "$.sim.churn[%d]", i);
                        return sc_conf_fail(errstr, errstr_size, conf->origin, epath,
                                            "device %d of %d", spec->churn[i].device,
                                            spec->devices);
                }
        /* A range's upper end, when set, is not below its lower end. */
        const struct {
                const char *path, *lo_path;
                double hi, lo;
        } ranges[] = {{"$.sim.up_bps_max", "$.sim.up_bps", spec->up_bps_max, spec->up_bps},
                      {"$.sim.down_bps_max", "$.sim.down_bps", spec->down_bps_max, spec->down_bps},
                      {"$.sim.latency_max", "$.sim.latency", spec->latency_max, spec->latency}};
        for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++)
                if (ranges[i].hi > 0 && ranges[i].hi < ranges[i].lo)
                        return sc_conf_fail(errstr, errstr_size, conf->origin, ranges[i].path,
                                            "%g is below %s (%g); 0 turns it off", ranges[i].hi,
                                            ranges[i].lo_path, ranges[i].lo);
        return SC_OK;
}
