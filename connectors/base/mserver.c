/* mserver.c — the metrics endpoint (sc_mserver.h) on libmicrohttpd's
 * internal polling thread. */
#include "sc_mserver.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "sc_clock.h"

#define SC_MSERVER_REASON_MAX 256
/* Connections at once, from one address, and seconds a connection may stay
 * idle: a client that opens connections and trickles bytes holds at most
 * SC_MS_PER_IP of them for SC_MS_TIMEOUT s, so a probe from another
 * address still gets through. */
#define SC_MS_CONNECTIONS (unsigned)64
#define SC_MS_PER_IP (unsigned)8
#define SC_MS_TIMEOUT (unsigned)3

struct sc_mserver {
        struct MHD_Daemon *d;
        int port;
        double stale_s;
        pthread_mutex_t lock; /* guards everything below */
        char *text;
        size_t len;
        int healthy;
        char reason[SC_MSERVER_REASON_MAX];
        double t_pub; /* monotonic time of the last publication; 0 = none */
        int final;    /* the process stopped: /healthz says reason for good */
        sc_mserver_stats_t st;
};

/* Queues r (then released) with its content type; a 405 names the methods
 * allowed. */
static enum MHD_Result sc_ms_send(struct MHD_Connection *c, unsigned code, const char *type,
                                  struct MHD_Response *r)
{
        if (!r)
                return MHD_NO;
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
        MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
        if (code == MHD_HTTP_METHOD_NOT_ALLOWED)
                MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
        enum MHD_Result ret = MHD_queue_response(c, code, r);
        MHD_destroy_response(r);
        return ret;
}

static enum MHD_Result sc_ms_reply(struct MHD_Connection *c, unsigned code, const char *type,
                                   const char *body, size_t len)
{
        return sc_ms_send(
            c, code, type,
            MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY));
}

/* The last text and, after it, how old it is (computed now, so that a loop
 * that stopped publishing shows in the metrics, not only on /healthz). */
static enum MHD_Result sc_ms_metrics(sc_mserver_t *s, struct MHD_Connection *c)
{
        static const char age_fam[] =
            "# HELP scadles_snapshot_age_seconds Seconds since the process's loop took the "
            "snapshot served.\n# TYPE scadles_snapshot_age_seconds gauge\n";
        pthread_mutex_lock(&s->lock);
        s->st.metrics++;
        size_t cap = s->len + sizeof(age_fam) + 64, len = s->len;
        char *body = malloc(cap);
        if (body) { /* copied under the lock: the loop may replace the text */
                memcpy(body, s->text ? s->text : "", s->len);
                if (s->t_pub > 0)
                        len += (size_t)snprintf(body + len, cap - len,
                                                "%sscadles_snapshot_age_seconds %.3f\n", age_fam,
                                                sc_clock_mono() - s->t_pub);
        }
        pthread_mutex_unlock(&s->lock);
        return sc_ms_send(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8",
                          body ? MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE)
                               : NULL);
}

static enum MHD_Result sc_ms_healthz(sc_mserver_t *s, struct MHD_Connection *c)
{
        char body[SC_MSERVER_REASON_MAX + 64];
        unsigned code;
        pthread_mutex_lock(&s->lock);
        s->st.healthz++;
        double age = sc_clock_mono() - s->t_pub;
        if (s->t_pub <= 0) {
                code = MHD_HTTP_SERVICE_UNAVAILABLE;
                snprintf(body, sizeof(body), "starting\n");
        } else if (s->final) {
                code = MHD_HTTP_SERVICE_UNAVAILABLE;
                snprintf(body, sizeof(body), "%s\n", s->reason);
        } else if (age > s->stale_s) {
                code = MHD_HTTP_SERVICE_UNAVAILABLE;
                snprintf(body, sizeof(body), "no report from the process's loop for %.1f s\n", age);
        } else if (!s->healthy) {
                code = MHD_HTTP_SERVICE_UNAVAILABLE;
                snprintf(body, sizeof(body), "%s\n", s->reason);
        } else {
                code = MHD_HTTP_OK;
                snprintf(body, sizeof(body), "ok\n");
        }
        pthread_mutex_unlock(&s->lock);
        return sc_ms_reply(c, code, "text/plain; charset=utf-8", body, strlen(body));
}

static enum MHD_Result sc_ms_handle(void *cls, struct MHD_Connection *c, const char *url,
                                    const char *method, const char *version,
                                    const char *upload_data, size_t *upload_data_size,
                                    void **req_cls)
{
        sc_mserver_t *s = cls;
        static const char nf[] = "not found: try /metrics or /healthz\n";
        static const char na[] = "only GET and HEAD\n";
        (void)version;
        (void)upload_data;
        if (!*req_cls) { /* the first call sees the headers only */
                *req_cls = s;
                return MHD_YES;
        }
        if (*upload_data_size) { /* a body is not read: dropped */
                *upload_data_size = 0;
                return MHD_YES;
        }
        int get = !strcmp(method, MHD_HTTP_METHOD_GET) || !strcmp(method, MHD_HTTP_METHOD_HEAD);
        if (get && !strcmp(url, "/metrics"))
                return sc_ms_metrics(s, c);
        if (get && !strcmp(url, "/healthz"))
                return sc_ms_healthz(s, c);
        pthread_mutex_lock(&s->lock);
        s->st.other++;
        pthread_mutex_unlock(&s->lock);
        if (!get)
                return sc_ms_reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", na,
                                   sizeof(na) - 1);
        return sc_ms_reply(c, MHD_HTTP_NOT_FOUND, "text/plain", nf, sizeof(nf) - 1);
}

static int sc_ms_err(int code, char *errstr, size_t errstr_size, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int sc_ms_err(int code, char *errstr, size_t errstr_size, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        if (errstr_size)
                vsnprintf(errstr, errstr_size, fmt, ap);
        va_end(ap);
        return code;
}

/* The daemon on addr (NULL: every interface, on port) with the extra
 * flags; NULL when it cannot listen. */
static struct MHD_Daemon *sc_ms_start(sc_mserver_t *s, unsigned extra, const struct sockaddr *addr,
                                      uint16_t port)
{
        unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | extra;
        if (addr)
                return MHD_start_daemon(flags, 0, NULL, NULL, sc_ms_handle, s, MHD_OPTION_SOCK_ADDR,
                                        addr, MHD_OPTION_CONNECTION_LIMIT, (unsigned)32,
                                        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
                                        MHD_OPTION_END);
        return MHD_start_daemon(flags, port, NULL, NULL, sc_ms_handle, s,
                                MHD_OPTION_CONNECTION_LIMIT, SC_MS_CONNECTIONS,
                                MHD_OPTION_PER_IP_CONNECTION_LIMIT, SC_MS_PER_IP,
                                MHD_OPTION_CONNECTION_TIMEOUT, SC_MS_TIMEOUT, MHD_OPTION_END);
}

/* Splits "host:port", "[v6]:port" or ":port" into host (empty = every
 * interface) and port. */
static int sc_ms_split(const char *listen, char *host, size_t hs, char *port, size_t ps)
{
        const char *colon;
        if (listen[0] == '[') {
                const char *end = strchr(listen, ']');
                if (!end || end[1] != ':' || (size_t)(end - listen - 1) >= hs)
                        return -1;
                memcpy(host, listen + 1, (size_t)(end - listen - 1));
                host[end - listen - 1] = 0;
                colon = end + 1;
        } else {
                colon = strrchr(listen, ':');
                if (!colon || (size_t)(colon - listen) >= hs ||
                    memchr(listen, ':', (size_t)(colon - listen)))
                        return -1;
                memcpy(host, listen, (size_t)(colon - listen));
                host[colon - listen] = 0;
        }
        char *end;
        long p = strtol(colon + 1, &end, 10);
        if (!colon[1] || *end || p < 0 || p > 65535 || strlen(colon + 1) >= ps)
                return -1;
        strcpy(port, colon + 1);
        return 0;
}

int sc_mserver_new(sc_mserver_t **sp, const char *listen, double stale_s, char *errstr,
                   size_t errstr_size)
{
        char host[256], port[16];
        struct addrinfo hints, *ai = NULL;
        *sp = NULL;
        if (sc_ms_split(listen, host, sizeof(host), port, sizeof(port)))
                return sc_ms_err(SC_MSERVER_EADDR, errstr, errstr_size,
                                 "\"%s\" is not host:port (port 0-65535; [v6]:port; :port for "
                                 "every interface)",
                                 listen);
        sc_mserver_t *s = calloc(1, sizeof(*s));
        if (!s)
                return sc_ms_err(SC_MSERVER_ENOMEM, errstr, errstr_size, "out of memory");
        pthread_mutex_init(&s->lock, NULL);
        s->stale_s = stale_s;
        if (!host[0]) { /* every interface: IPv6 and IPv4 on one socket, else IPv4 */
                s->d = sc_ms_start(s, MHD_USE_DUAL_STACK, NULL, (uint16_t)atoi(port));
                if (!s->d)
                        s->d = sc_ms_start(s, 0, NULL, (uint16_t)atoi(port));
        } else {
                memset(&hints, 0, sizeof(hints));
                hints.ai_family = AF_UNSPEC;
                hints.ai_socktype = SOCK_STREAM;
                hints.ai_flags = AI_NUMERICSERV;
                int gai = getaddrinfo(host, port, &hints, &ai);
                if (gai) {
                        sc_mserver_destroy(s);
                        return sc_ms_err(SC_MSERVER_EADDR, errstr, errstr_size, "\"%s\": %s",
                                         listen, gai_strerror(gai));
                }
                s->d = sc_ms_start(s, ai->ai_family == AF_INET6 ? MHD_USE_IPv6 : 0, ai->ai_addr, 0);
                freeaddrinfo(ai);
        }
        if (!s->d) {
                sc_mserver_destroy(s);
                return sc_ms_err(SC_MSERVER_EBIND, errstr, errstr_size,
                                 "cannot listen on %s (in use, or not an address of this host)",
                                 listen);
        }
        const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
        s->port = di ? (int)di->port : atoi(port);
        *sp = s;
        return 0;
}

void sc_mserver_destroy(sc_mserver_t *s)
{
        if (!s)
                return;
        if (s->d)
                MHD_stop_daemon(s->d);
        pthread_mutex_destroy(&s->lock);
        free(s->text);
        free(s);
}

int sc_mserver_port(const sc_mserver_t *s)
{
        return s->port;
}

void sc_mserver_publish(sc_mserver_t *s, const char *text, size_t len, int healthy,
                        const char *reason)
{
        char *copy = malloc(len + 1);
        if (copy) {
                memcpy(copy, text, len);
                copy[len] = 0;
        }
        char *old = NULL;
        pthread_mutex_lock(&s->lock);
        if (!copy) { /* the previous text stays, and ages */
                pthread_mutex_unlock(&s->lock);
                return;
        }
        old = s->text;
        s->text = copy;
        s->len = len;
        if (!s->final) { /* a final verdict stays */
                s->healthy = healthy;
                snprintf(s->reason, sizeof(s->reason), "%s",
                         healthy               ? ""
                         : reason && reason[0] ? reason
                                               : "unhealthy");
        }
        s->t_pub = sc_clock_mono();
        pthread_mutex_unlock(&s->lock);
        free(old);
}

void sc_mserver_final(sc_mserver_t *s, const char *reason)
{
        pthread_mutex_lock(&s->lock);
        s->final = 1;
        s->healthy = 0;
        snprintf(s->reason, sizeof(s->reason), "%s", reason && reason[0] ? reason : "stopped");
        if (s->t_pub <= 0)
                s->t_pub = sc_clock_mono();
        pthread_mutex_unlock(&s->lock);
}

void sc_mserver_stats(sc_mserver_t *s, sc_mserver_stats_t *st)
{
        pthread_mutex_lock(&s->lock);
        *st = s->st;
        pthread_mutex_unlock(&s->lock);
}
