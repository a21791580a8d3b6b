/* monitor.c — the part of a process's Prometheus endpoint every process
 * shares (sc_monitor.h). */
#include "sc_monitor.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sc_mem.h"
#include "sc_mserver.h"

#define SC_MON_HEAP_S 10.0

struct sc_monitor {
        sc_mserver_t *srv;
        const sc_conf_t *conf;
        const char *role;
        sc_log_fn log;
        void *log_opaque;
        sc_prom_t prom;
        double t_snap; /* monotonic time of the last snapshot; -inf before */
        double t_down; /* since when no broker is reachable; 0 = one is */
        double start;  /* process start, seconds since the epoch */
        /* the heap's figures, read every SC_MON_HEAP_S (reading them walks
         * the allocator's free lists under its locks) */
        double t_heap;
        uint64_t heap_use, heap_free;
        int heap_ok;
        int logged_bad;
};

/* The process's start in seconds since the epoch: its start in clock ticks
 * after boot (/proc/self/stat field 22) plus the boot time (/proc/stat
 * btime); now when either cannot be read. */
static double sc_mon_start_time(void)
{
        double now = (double)time(NULL);
        char buf[1024];
        FILE *f = fopen("/proc/self/stat", "r");
        size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
        if (f)
                fclose(f);
        buf[n] = 0;
        const char *p = strrchr(buf, ')'); /* the command name may hold spaces */
        unsigned long long ticks = 0;
        for (int field = 2; p && *p && field < 22; p++)
                if (*p == ' ' && ++field == 22)
                        ticks = strtoull(p + 1, NULL, 10);
        unsigned long long btime = 0;
        f = fopen("/proc/stat", "r");
        while (f && fgets(buf, sizeof(buf), f))
                if (!strncmp(buf, "btime ", 6))
                        btime = strtoull(buf + 6, NULL, 10);
        if (f)
                fclose(f);
        long hz = sysconf(_SC_CLK_TCK);
        if (!ticks || !btime || hz <= 0)
                return now;
        return (double)btime + (double)ticks / (double)hz;
}

static double sc_mon_rss(void)
{
        unsigned long size = 0, resident = 0;
        FILE *f = fopen("/proc/self/statm", "r");
        if (!f)
                return NAN;
        int got = fscanf(f, "%lu %lu", &size, &resident);
        fclose(f);
        return got == 2 ? (double)resident * (double)sysconf(_SC_PAGESIZE) : NAN;
}

sc_err_t sc_monitor_new(sc_monitor_t **mp, const sc_conf_t *conf, const char *role, sc_log_fn log,
                        void *log_opaque, char *errstr, size_t errstr_size)
{
        char why[512];
        *mp = NULL;
        if (!conf->metrics.listen[0])
                return SC_OK;
        sc_monitor_t *m = calloc(1, sizeof(*m));
        if (!m)
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
        double stale = fmax(30.0, 10.0 * conf->metrics.interval);
        int rc = sc_mserver_new(&m->srv, conf->metrics.listen, stale, why, sizeof(why));
        if (rc) {
                free(m);
                return sc_errf(rc == SC_MSERVER_EADDR ? SC_ERR_CONFIG : SC_ERR_IO, errstr,
                               errstr_size, "metrics.listen: %s", why);
        }
        m->conf = conf;
        m->role = role;
        m->log = log;
        m->log_opaque = log_opaque;
        m->t_snap = -INFINITY;
        m->t_heap = -INFINITY;
        m->start = sc_mon_start_time();
        sc_prom_init(&m->prom);
        const char *host = conf->metrics.listen;
        const char *colon = strrchr(host, ':');
        int hl = (int)(colon - host);
        /* Notice, not info: a host that shows only notices (the plugin's
         * default) learns the port too. */
        sc_logf(log, log_opaque, 5, "metrics on http://%.*s:%d/metrics (%s; /healthz beside it)",
                hl ? hl : 9, hl ? host : "localhost", sc_mserver_port(m->srv), role);
        *mp = m;
        return SC_OK;
}

void sc_monitor_destroy(sc_monitor_t *m)
{
        if (!m)
                return;
        sc_mserver_destroy(m->srv);
        sc_prom_free(&m->prom);
        free(m);
}

int sc_monitor_due(const sc_monitor_t *m, double now)
{
        return m && now - m->t_snap >= m->conf->metrics.interval;
}

sc_prom_t *sc_monitor_begin(sc_monitor_t *m, double now)
{
        sc_prom_t *p = &m->prom;
        struct timespec cpu;
        const char *info[] = {"role", m->role, "version", SC_VERSION_STR, NULL};
        m->t_snap = now;
        sc_prom_clear(p);
        sc_prom_family(p, "scadles_info", "gauge", "The process: its role and version (always 1).");
        sc_prom_sample(p, NULL, info, 1);
        sc_prom_family(p, "process_resident_memory_bytes", "gauge",
                       "Resident memory size in bytes.");
        sc_prom_sample(p, NULL, NULL, sc_mon_rss());
        if (now - m->t_heap >= SC_MON_HEAP_S) {
                m->t_heap = now;
                m->heap_ok = !sc_mem_heap(&m->heap_use, &m->heap_free);
        }
        if (m->heap_ok) {
                const char *used[] = {"state", "in_use", NULL}, *held[] = {"state", "free", NULL};
                sc_prom_family(p, "scadles_heap_bytes", "gauge",
                               "The allocator's heap over every thread: bytes in use, and bytes "
                               "free in its arenas (not all resident: trims give pages back).");
                sc_prom_sample(p, NULL, used, (double)m->heap_use);
                sc_prom_sample(p, NULL, held, (double)m->heap_free);
        }
        sc_prom_family(p, "process_start_time_seconds", "gauge",
                       "Start time of the process since unix epoch in seconds.");
        sc_prom_sample(p, NULL, NULL, m->start);
        if (!clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu)) {
                sc_prom_family(p, "process_cpu_seconds_total", "counter",
                               "Total user and system CPU time spent in seconds.");
                sc_prom_sample(p, NULL, NULL, (double)cpu.tv_sec + (double)cpu.tv_nsec * 1e-9);
        }
        return p;
}

void sc_monitor_reach(sc_monitor_t *m, double now, int reachable)
{
        if (reachable)
                m->t_down = 0;
        else if (m->t_down <= 0)
                m->t_down = now;
        sc_prom_family(&m->prom, "scadles_broker_reachable", "gauge",
                       "1 while the process's consumer reaches a broker (its statistics events), "
                       "else 0.");
        sc_prom_sample(&m->prom, NULL, NULL, reachable ? 1 : 0);
}

void sc_monitor_publish(sc_monitor_t *m, double now, int model_finite)
{
        char why[160] = "";
        if (!model_finite)
                snprintf(why, sizeof(why), "the model holds a value that is not finite");
        else if (m->t_down > 0 && now - m->t_down > m->conf->metrics.broker_down)
                snprintf(why, sizeof(why),
                         "no broker reachable for %.0f s (metrics.broker_down %g)", now - m->t_down,
                         m->conf->metrics.broker_down);
        if ((m->prom.bad || m->prom.oom) && !m->logged_bad) {
                m->logged_bad = 1;
                sc_logf(m->log, m->log_opaque, 3, "metrics: %s in the snapshot after \"%s\"",
                        m->prom.oom ? "out of memory" : "an invalid name", m->prom.fam);
        }
        if (m->prom.oom) /* a cut text would fail the whole scrape: the last one ages */
                return;
        sc_mserver_publish(m->srv, m->prom.buf ? m->prom.buf : "", m->prom.len, !why[0], why);
}

#define sc_mon_counter(p, name, help, v) sc_prom_one(p, name, "counter", help, (double)(v))
#define sc_mon_gauge(p, name, help, v) sc_prom_one(p, name, "gauge", help, (double)(v))

void sc_monitor_rejected(sc_prom_t *p, const sc_decode_stats_t *faults)
{
        sc_prom_family(p, "scadles_records_rejected_total", "counter",
                       "Malformed records by reason (docs/STREAMS.md).");
        for (int k = 1; k < SC_DECODE_FAULT__END; k++) {
                const char *lbl[] = {"reason", sc_decode_fault_name((sc_decode_fault_t)k), NULL};
                sc_prom_sample(p, NULL, lbl, (double)faults->count[k]);
        }
}

static void sc_mon_lag(void *opaque, const char *topic, int32_t partition, int64_t lag, int64_t end)
{
        sc_prom_t *p = opaque;
        char part[16];
        (void)end;
        if (lag < 0)
                return;
        snprintf(part, sizeof(part), "%" PRId32, partition);
        const char *lbl[] = {"topic", topic, "partition", part, NULL};
        sc_prom_sample(p, NULL, lbl, (double)lag);
}

void sc_monitor_source(sc_prom_t *p, sc_kafka_source_t *src)
{
        const sc_kafka_source_stats_t *ks = sc_kafka_source_stats(src);
        sc_mon_counter(p, "scadles_records_dead_lettered_total",
                       "Malformed records delivered to the dead-letter topic.",
                       (double)ks->ks_dead_letter);
        sc_mon_counter(p, "scadles_records_lost_total",
                       "Records removed by retention before they were read.", (double)ks->ks_lost);
        sc_mon_counter(p, "scadles_records_redelivered_total",
                       "Records finished here whose commit a rebalance refused: the next owner "
                       "reads them again.",
                       (double)ks->ks_redelivered);
        sc_mon_counter(p, "scadles_rebalances_total", "Partition assignments and revocations.",
                       (double)(ks->ks_assigns + ks->ks_revokes));
        sc_mon_counter(p, "scadles_commit_errors_total", "Offset commits that failed.",
                       (double)ks->ks_commit_errors);
        sc_mon_gauge(p, "scadles_assigned_partitions", "Partitions assigned to this consumer.",
                     ks->ks_partitions);
        int aligned = sc_kafka_source_align_paused(src);
        sc_mon_gauge(p, "scadles_paused_partitions",
                     "Assigned partitions paused by backpressure (a full buffer).",
                     ks->ks_paused_partitions - aligned);
        sc_mon_gauge(p, "scadles_align_paused_partitions",
                     "Assigned partitions paused for running ahead in time of the "
                     "furthest-behind partition (source.align).",
                     aligned);
        sc_mon_counter(p, "scadles_align_pauses_total",
                       "Pauses of a partition for running ahead in time (source.align).",
                       (double)ks->ks_align_pauses);
        sc_prom_family(p, "scadles_consumer_lag_records", "gauge",
                       "Records of an assigned partition beyond the next one to read, from the "
                       "high watermark of the consumer's last fetch response.");
        sc_kafka_source_lags(src, sc_mon_lag, p);
}

void sc_monitor_final(sc_monitor_t *m, const char *reason)
{
        if (m)
                sc_mserver_final(m->srv, reason);
}

int sc_monitor_finite(const float *v, size_t n)
{
        float acc = 0;
        for (size_t i = 0; i < n; i++)
                acc += v[i] * 0.0f; /* NaN or inf turns it NaN */
        return acc == 0;
}
