/* sim_metrics.c — the simulator's reports: test-set evaluation of the
 * servers' model (with device 0's batchnorm statistics) and the JSON metric
 * lines. */
#include <math.h>
#include <string.h>

#include "sim_impl.h"

/* ---- metrics and the run loop ----------------------------------------------
 */

static void sc_sim_evaluate(sc_sim_t *sim, double *loss, double *acc)
{
        const sc_dataset_t *ds = sim->test;
        size_t m = sim->spec.eval_samples > 0 && (size_t)sim->spec.eval_samples < ds->n
                       ? (size_t)sim->spec.eval_samples
                       : ds->n;
        for (int sh = 0; sh < sim->ns; sh++)
                memcpy(sc_model_params(sim->model) + sim->begin[sh],
                       sc_server_params(sim->servers[sh]),
                       (sim->begin[sh + 1] - sim->begin[sh]) * sizeof(float));
        /* Batchnorm: device 0's running statistics, as rank 0 evaluates in
         * data-parallel training where every rank keeps its own. */
        if (sim->devs[0].bn_state)
                memcpy(sc_model_state(sim->model), sim->devs[0].bn_state,
                       sc_model_nstate(sim->model) * sizeof(float));
        size_t hits = 0;
        (void)sc_model_eval_set(sim->model, ds->x, ds->y, m, 250, loss, &hits);
        *acc = m ? (double)hits / (double)m : 0;
}

/* The model version: the least over the shards. */
uint64_t sc_sim_version(const sc_sim_t *sim)
{
        uint64_t v = UINT64_MAX;
        for (int sh = 0; sh < sim->ns; sh++) {
                uint64_t x = sc_server_version(sim->servers[sh]);
                v = x < v ? x : v;
        }
        return v;
}

/* JSON has no NaN or infinity: those print as null. */
static void sc_sim_num(FILE *out, const char *key, double v, const char *fmt)
{
        fprintf(out, ",\"%s\":", key);
        if (isfinite(v))
                fprintf(out, fmt, v);
        else
                fputs("null", out);
}

static void sc_sim_totals(sc_sim_t *sim, uint64_t *up, uint64_t *down, uint64_t *buffered,
                          uint64_t *dropped, double *wait, double *data_wait, double *send_wait)
{
        *up = *down = *buffered = *dropped = 0;
        *wait = *data_wait = *send_wait = 0;
        for (int i = 0; i < sim->nd; i++) {
                sc_sim_dev_t *d = &sim->devs[i];
                sc_sim_stream_advance(&d->stream, sim->now);
                *up += d->up.bytes;
                *down += d->down.bytes;
                *buffered += d->stream.buffered;
                *dropped += d->stream.dropped;
                *wait += sc_sync_worker_wait_seconds(d->w);
                *send_wait += d->send_wait;
                *data_wait +=
                    d->data_wait + (d->data_wait_since >= 0 ? sim->now - d->data_wait_since : 0);
        }
}

void sc_sim_line(sc_sim_t *sim, FILE *out, int final)
{
        sc_server_stats_t st;
        uint64_t up, down, buffered, dropped, steps = 0, compressed = 0;
        double wait, data_wait, send_wait, tl, acc;

        sc_sim_evaluate(sim, &tl, &acc);
        sim->last_acc = acc;
        sim->last_test_loss = tl;
        if (sim->reached_t < 0 && sim->spec.target_acc > 0 && acc >= sim->spec.target_acc)
                sim->reached_t = sim->now;
        sc_sim_totals(sim, &up, &down, &buffered, &dropped, &wait, &data_wait, &send_wait);
        sc_server_stats(sim->servers[0], &st); /* every update reaches every shard */
        for (int i = 0; i < sim->nd; i++)
                for (int sh = 0; sh < sim->ns; sh++) {
                        sc_codec_stats_t cs;
                        sc_codec_stats(sim->devs[i].codec[sh], &cs);
                        steps += cs.steps;
                        compressed += cs.compressed;
                }
        fprintf(out, final ? "{\"event\":\"end\",\"t\":%.6f" : "{\"t\":%.6f", sim->now);
        fprintf(out, ",\"step\":%llu,\"updates\":%llu", (unsigned long long)sc_sim_version(sim),
                (unsigned long long)st.applied);
        if (sim->loss_n)
                sim->last_loss = sim->loss_sum / (double)sim->loss_n;
        if (sim->stale_n)
                sim->last_stale = sim->stale_sum / (double)sim->stale_n;
        sc_sim_num(out, "loss", sim->loss_n || final ? sim->last_loss : NAN, "%.6f");
        sc_sim_num(out, "test_loss", tl, "%.6f");
        sc_sim_num(out, "test_acc", acc, "%.4f");
        fprintf(out,
                ",\"samples\":%llu,\"bytes_up\":%llu,\"bytes_down\":%llu,\"inject_"
                "bytes\":%llu,"
                "\"buffered\":%llu,\"dropped\":%llu",
                (unsigned long long)sim->samples, (unsigned long long)up, (unsigned long long)down,
                (unsigned long long)sim->inject_bytes, (unsigned long long)buffered,
                (unsigned long long)dropped);
        sc_sim_num(out, "wait_s", wait, "%.6f");
        sc_sim_num(out, "data_wait_s", data_wait, "%.6f");
        sc_sim_num(out, "send_wait_s", send_wait, "%.6f");
        sc_sim_num(out, "staleness", sim->stale_n || final ? sim->last_stale : 0, "%.4f");
        int live = 0;
        for (int i = 0; i < sim->nd; i++)
                live += !sim->devs[i].offline;
        fprintf(out, ",\"live\":%d", live);
        sc_sim_num(out, "cnc", steps ? (double)compressed / (double)steps : 0, "%.4f");
        if (sim->spec.sync.kind == SC_SYNC_ADSP)
                sc_sim_num(out, "commit_rate", sim->commit_rate, "%.4f");
        if (sim->spec.sync.kind == SC_SYNC_LOCALSGD && sim->spec.adacomm_interval > 0)
                fprintf(out, ",\"local_steps\":%d", sim->tau);
        if (final) {
                uint64_t peak = 0;
                for (int i = 0; i < sim->nd; i++)
                        peak = sim->devs[i].stream.peak > peak ? sim->devs[i].stream.peak : peak;
                fprintf(out,
                        ",\"policy\":\"%s\",\"devices\":%d,\"shards\":%d,\"peak_buffered\":"
                        "%llu",
                        sc_sync_kind_name(sim->spec.sync.kind), sim->nd, sim->ns,
                        (unsigned long long)peak);
                sc_sim_num(out, "time_to_target", sim->reached_t >= 0 ? sim->reached_t : NAN,
                           "%.6f");
                fprintf(out, ",\"lost_msgs\":%llu,\"stalled\":%s",
                        (unsigned long long)sim->lost_msgs, sim->stalled ? "true" : "false");
                fputs(",\"bytes_down_devices\":[", out);
                for (int i = 0; i < sim->nd; i++)
                        fprintf(out, "%s%llu", i ? "," : "",
                                (unsigned long long)sim->devs[i].down.bytes);
                fputs("]", out);
                if (sim->spec.server_ingress_bps > 0 || sim->spec.apply_rate > 0)
                        sc_sim_num(out, "server_wait_s", sim->server_wait, "%.6f");
                if (sim->spec.sync.kind == SC_SYNC_SCADLES) /* the batch window in use */
                        sc_sim_num(out, "window", sc_sync_worker_window(sim->devs[0].w), "%.4f");
        }
        fputs("}\n", out);
        sim->loss_sum = 0;
        sim->loss_n = 0;
        sim->stale_sum = 0;
        sim->stale_n = 0;
}
