/* sc_mserver.h — the metrics endpoint of a process: GET /metrics serves
 * the last Prometheus text the process published, GET /healthz 200 "ok" or
 * 503 with the reason it published (or "no report from the process's loop
 * for N s" when the loop stopped publishing). /metrics ends with
 * scadles_snapshot_age_seconds, the age of the text it serves. Served by libmicrohttpd on a thread
 * of its own: publishing copies the text under a lock, so a scrape never waits for the training
 * loop nor the loop for a scrape (docs/OPERATIONS.md). */
#ifndef SC_MSERVER_H
#define SC_MSERVER_H

#include <stddef.h>

typedef struct sc_mserver sc_mserver_t;

/* Listens on listen ("host:port", "[v6]:port" or ":port" for every
 * interface; port 0 = a free one, see sc_mserver_port). stale_s: /healthz
 * says 503 once no publication came for this long. Returns 0, or with
 * errstr set SC_MSERVER_EADDR for an address that does not parse or
 * resolve, SC_MSERVER_EBIND when it cannot be bound, SC_MSERVER_ENOMEM.
 * Until the first publication /metrics is empty and /healthz says 503
 * "starting". */
#define SC_MSERVER_EADDR (-1)
#define SC_MSERVER_EBIND (-2)
#define SC_MSERVER_ENOMEM (-3)
int sc_mserver_new(sc_mserver_t **sp, const char *listen, double stale_s, char *errstr,
                   size_t errstr_size);
/* Stops the thread and frees. Accepts NULL. */
void sc_mserver_destroy(sc_mserver_t *s);
/* The bound port. */
int sc_mserver_port(const sc_mserver_t *s);
/* Replaces the served text (copied) and the health: healthy = 1, or 0 with
 * reason (a line, copied). Out of memory keeps the previous text, which
 * then ages. */
void sc_mserver_publish(sc_mserver_t *s, const char *text, size_t len, int healthy,
                        const char *reason);
/* The process stopped (reason: why, a line): /healthz says 503 and reason
 * from now on, /metrics keeps the last text. */
void sc_mserver_final(sc_mserver_t *s, const char *reason);
/* Requests served since the start: GET or HEAD /metrics, /healthz, and
 * the others (404 and 405). */
typedef struct sc_mserver_stats {
        unsigned long metrics, healthz, other;
} sc_mserver_stats_t;
void sc_mserver_stats(sc_mserver_t *s, sc_mserver_stats_t *st);

#endif
