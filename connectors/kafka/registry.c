/* registry.c — the Schema Registry client: GET /schemas/ids/ID with
 * libcurl, the answer's "schema" member read with jansson, schemas cached
 * by id, a doubling back-off after a failed request. */
#include "sc_registry.h"
#include "sc_avro.h"
#include "sc_file.h"

#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SC_REG_BACKOFF_MIN 0.5
#define SC_REG_BACKOFF_MAX 30.0
#define SC_REG_BODY_MAX (2 * (size_t)SC_AVRO_SCHEMA_MAX + 4096) /* escaped JSON of one */
#define SC_REG_CACHE_MAX 4096
#define SC_REG_NOT_FOUND_TRIES 3 /* a 40403 answered this many times, 0.5 s then 1 s apart */
#define SC_REG_PENDING_MAX 256

typedef struct sc_reg_entry {
        int32_t id;
        char *text;
        size_t len;
} sc_reg_entry_t;

/* An id the registry said it does not have, not yet believed: a registry
 * follower may not have replicated a schema registered a moment ago. */
typedef struct sc_reg_pending {
        int32_t id;
        int tries;
        double next;
} sc_reg_pending_t;

struct sc_registry {
        char *url; /* without a trailing '/' */
        char *auth_file;
        int reload_auth; /* read auth_file again before the next request */
        char *userpwd;
        char *ca;
        long timeout_ms;
        CURL *curl;
        sc_reg_entry_t *e;
        size_t n, cap;
        sc_reg_pending_t pending[SC_REG_PENDING_MAX];
        size_t n_pending;
        double next_try, backoff;
        sc_registry_stats_t stats;
};

static pthread_once_t sc_reg_once = PTHREAD_ONCE_INIT;
static void sc_reg_global(void)
{
        curl_global_init(CURL_GLOBAL_DEFAULT);
}

void sc_registry_destroy(sc_registry_t *r)
{
        if (!r)
                return;
        if (r->curl)
                curl_easy_cleanup(r->curl);
        for (size_t i = 0; i < r->n; i++)
                free(r->e[i].text);
        free(r->e);
        if (r->userpwd) {
                memset(r->userpwd, 0, strlen(r->userpwd));
                free(r->userpwd);
        }
        free(r->url);
        free(r->auth_file);
        free(r->ca);
        free(r);
}

static sc_err_t sc_reg_auth(sc_registry_t *r, const char *file, char *errstr, size_t errstr_size)
{
        char *text = NULL, why[512];
        size_t len = 0;
        sc_err_t err = sc_file_read_all(file, 4096, &text, &len, why, sizeof(why));
        if (err)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "$.source.schema_registry.basic_auth_file: %s", why);
        size_t keep = strcspn(text, "\r\n");
        memset(text + keep, 0, len - keep); /* the file's other lines: not kept */
        if (!strchr(text, ':') || text[0] == ':') {
                memset(text, 0, len);
                free(text);
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "$.source.schema_registry.basic_auth_file: %s: the first line "
                               "is not user:password",
                               file);
        }
        if (r->userpwd) {
                memset(r->userpwd, 0, strlen(r->userpwd));
                free(r->userpwd);
        }
        r->userpwd = text;
        return SC_OK;
}

sc_err_t sc_registry_new(sc_registry_t **out, const sc_registry_spec_t *spec, char *errstr,
                         size_t errstr_size)
{
        *out = NULL;
        if (!spec->url || (strncmp(spec->url, "http://", 7) && strncmp(spec->url, "https://", 8)))
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "$.source.schema_registry.url: expected http://host[:port] or "
                               "https://host[:port], got \"%s\"",
                               spec->url ? spec->url : "");
        pthread_once(&sc_reg_once, sc_reg_global);
        sc_registry_t *r = calloc(1, sizeof(*r));
        if (!r || !(r->url = strdup(spec->url)) || !(r->curl = curl_easy_init())) {
                sc_registry_destroy(r);
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "schema registry: out of memory");
        }
        size_t ul = strlen(r->url);
        while (ul > 0 && r->url[ul - 1] == '/')
                r->url[--ul] = '\0';
        r->timeout_ms = (long)lround((spec->timeout > 0 ? spec->timeout : 5) * 1000);
        if (spec->auth_file && spec->auth_file[0]) {
                sc_err_t err = (r->auth_file = strdup(spec->auth_file))
                                   ? sc_reg_auth(r, spec->auth_file, errstr, errstr_size)
                                   : sc_errf(SC_ERR_NOMEM, errstr, errstr_size,
                                             "schema registry: out of memory");
                if (err) {
                        sc_registry_destroy(r);
                        return err;
                }
        }
        if (spec->ca && spec->ca[0] && access(spec->ca, R_OK)) {
                sc_registry_destroy(r);
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "$.source.schema_registry.ca_location: %s: %s", spec->ca,
                               strerror(errno));
        }
        if (spec->ca && spec->ca[0] && !(r->ca = strdup(spec->ca))) {
                sc_registry_destroy(r);
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "schema registry: out of memory");
        }
        *out = r;
        return SC_OK;
}

const char *sc_registry_url(const sc_registry_t *r)
{
        return r->url;
}

const sc_registry_stats_t *sc_registry_stats(const sc_registry_t *r)
{
        return &r->stats;
}

int sc_registry_waiting(const sc_registry_t *r, double t)
{
        if (r->stats.unavailable)
                return 1;
        for (size_t i = 0; i < r->n_pending; i++)
                if (r->pending[i].next > t)
                        return 1;
        return 0;
}

double sc_registry_retry_in(const sc_registry_t *r, double t)
{
        return r->next_try > t ? r->next_try - t : 0;
}

typedef struct sc_reg_body {
        char *p;
        size_t n, cap;
        int over;
} sc_reg_body_t;

static size_t sc_reg_write(char *data, size_t size, size_t nmemb, void *opaque)
{
        sc_reg_body_t *b = opaque;
        size_t n = size * nmemb;
        if (b->n + n + 1 > SC_REG_BODY_MAX) {
                b->over = 1;
                return 0;
        }
        if (b->n + n + 1 > b->cap) {
                size_t nc = b->cap ? b->cap : 4096;
                while (nc < b->n + n + 1)
                        nc *= 2;
                char *np = realloc(b->p, nc);
                if (!np)
                        return 0;
                b->p = np;
                b->cap = nc;
        }
        memcpy(b->p + b->n, data, n);
        b->n += n;
        b->p[b->n] = '\0';
        return n;
}

static const sc_reg_entry_t *sc_reg_cached(const sc_registry_t *r, int32_t id)
{
        for (size_t i = 0; i < r->n; i++)
                if (r->e[i].id == id)
                        return &r->e[i];
        return NULL;
}

/* A failed request: back off. */
static sc_registry_result_t sc_reg_down(sc_registry_t *r, double t)
{
        if (!r->stats.unavailable)
                r->stats.outage_since = t;
        r->stats.unavailable = 1;
        r->stats.failures++;
        r->backoff = r->backoff > 0 ? fmin(2 * r->backoff, SC_REG_BACKOFF_MAX) : SC_REG_BACKOFF_MIN;
        r->next_try = t + r->backoff;
        return SC_REGISTRY_UNAVAILABLE;
}

/* The message and error_code of an error answer ({"error_code":...,
 * "message":...}), or the start of the body and 0. */
static long sc_reg_message(const sc_reg_body_t *b, char *out, size_t size)
{
        json_t *j = b->p ? json_loadb(b->p, b->n, 0, NULL) : NULL;
        const char *m = j ? json_string_value(json_object_get(j, "message")) : NULL;
        long code = j ? (long)json_integer_value(json_object_get(j, "error_code")) : 0;
        snprintf(out, size, "%.200s", m ? m : b->p ? b->p : "no body");
        for (char *c = out; *c; c++)
                if (*c == '\n' || *c == '\r' || *c == '\t')
                        *c = ' ';
        size_t n = strlen(out);
        while (n > 0 && out[n - 1] == ' ')
                out[--n] = '\0';
        json_decref(j);
        return code;
}

static sc_reg_pending_t *sc_reg_pending(sc_registry_t *r, int32_t id)
{
        for (size_t i = 0; i < r->n_pending; i++)
                if (r->pending[i].id == id)
                        return &r->pending[i];
        return NULL;
}

static void sc_reg_pending_drop(sc_registry_t *r, int32_t id)
{
        sc_reg_pending_t *p = sc_reg_pending(r, id);
        if (p)
                *p = r->pending[--r->n_pending];
        r->stats.pending = (int)r->n_pending;
}

/* A good answer: the registry is up. */
static void sc_reg_up(sc_registry_t *r)
{
        r->stats.unavailable = 0;
        r->backoff = 0;
        r->next_try = 0;
}

/* "Schema not found" (error code 40403): believed after SC_REG_NOT_FOUND_TRIES
 * answers, 0.5 s then 1 s apart; until then the record waits. */
static sc_registry_result_t sc_reg_not_found(sc_registry_t *r, int32_t id, double t,
                                             const char *msg, char *why, size_t why_size)
{
        sc_reg_pending_t *p = sc_reg_pending(r, id);
        if (p && t - p->next > 10.0)
                p->tries = 0; /* left long ago (its records revoked): start over */
        if (!p && r->n_pending == SC_REG_PENDING_MAX) {
                size_t old = 0; /* full: the longest untouched goes */
                for (size_t i = 1; i < r->n_pending; i++)
                        if (r->pending[i].next < r->pending[old].next)
                                old = i;
                r->pending[old] = r->pending[--r->n_pending];
        }
        if (!p) {
                p = &r->pending[r->n_pending++];
                *p = (sc_reg_pending_t){id, 0, 0};
                r->stats.pending = (int)r->n_pending;
        }
        if (++p->tries < SC_REG_NOT_FOUND_TRIES) {
                p->next = t + 0.5 * (double)(1 << (p->tries - 1));
                sc_errf(SC_ERR_AGAIN, why, why_size,
                        "%s: no schema id %d yet (%s); asked again in %.1f s", r->url, id, msg,
                        p->next - t);
                return SC_REGISTRY_UNAVAILABLE;
        }
        sc_reg_pending_drop(r, id);
        r->stats.not_found++;
        sc_errf(SC_ERR_DECODE, why, why_size, "the registry has no schema id %d (%s)", id, msg);
        return SC_REGISTRY_NOT_FOUND;
}

/* Keeps a schema's text; the oldest goes when SC_REG_CACHE_MAX are kept
 * (the streams keep what they compiled from it). */
static int sc_reg_keep(sc_registry_t *r, int32_t id, const char *s, size_t len)
{
        char *text = malloc(len + 1);
        if (!text)
                return -1;
        memcpy(text, s, len);
        text[len] = '\0';
        if (r->n == SC_REG_CACHE_MAX) {
                free(r->e[0].text);
                memmove(r->e, r->e + 1, (r->n - 1) * sizeof(*r->e));
                r->n--;
        }
        if (r->n == r->cap) {
                size_t nc = r->cap ? 2 * r->cap : 8;
                sc_reg_entry_t *ne = realloc(r->e, nc * sizeof(*ne));
                if (!ne) {
                        free(text);
                        return -1;
                }
                r->e = ne;
                r->cap = nc;
        }
        r->e[r->n++] = (sc_reg_entry_t){id, text, len};
        return 0;
}

/* The answer to GET /schemas/ids/ID: status and body. A 404 is "no such
 * schema" only with the registry's own error code 40403 (else a proxy or a
 * wrong path answered: the registry is not reached). */
static sc_registry_result_t sc_reg_answer(sc_registry_t *r, int32_t id, long status,
                                          sc_reg_body_t *b, double t, char *why, size_t why_size)
{
        char msg[256];
        if (status != 200) {
                long code = sc_reg_message(b, msg, sizeof(msg));
                if (status == 404 && code == 40403) {
                        sc_reg_up(r);
                        return sc_reg_not_found(r, id, t, msg, why, why_size);
                }
                if (status == 401 || status == 403)
                        r->reload_auth = r->auth_file != NULL;
                sc_errf(SC_ERR_IO, why, why_size, "%s: HTTP %ld: %s%s", r->url, status, msg,
                        status == 401 || status == 403
                            ? " (check source.schema_registry.basic_auth_file; it is read "
                              "again before the next request)"
                        : status == 404 ? " (not the registry's \"schema not found\": is the "
                                          "URL's path right?)"
                                        : "");
                return sc_reg_down(r, t);
        }
        json_t *j = json_loadb(b->p ? b->p : "", b->n, 0, NULL);
        json_t *js = j ? json_object_get(j, "schema") : NULL;
        const char *type = j ? json_string_value(json_object_get(j, "schemaType")) : NULL;
        if (!json_is_string(js)) {
                json_decref(j);
                sc_errf(SC_ERR_IO, why, why_size, "%s: schema id %d: the answer has no \"schema\"",
                        r->url, id);
                return sc_reg_down(r, t);
        }
        sc_reg_up(r);
        sc_reg_pending_drop(r, id);
        if (type && strcmp(type, "AVRO")) {
                sc_errf(SC_ERR_DECODE, why, why_size, "schema id %d is %s, not AVRO", id, type);
                json_decref(j);
                r->stats.not_found++;
                return SC_REGISTRY_NOT_FOUND;
        }
        int kept = sc_reg_keep(r, id, json_string_value(js), json_string_length(js));
        json_decref(j);
        if (kept) {
                sc_errf(SC_ERR_NOMEM, why, why_size, "schema id %d: out of memory", id);
                return SC_REGISTRY_UNAVAILABLE; /* tried again; the registry is up */
        }
        return SC_REGISTRY_OK;
}

/* One request to url into b, a POST of post (with headers hdr) when post
 * is given: *status is the HTTP status, 0 without an answer. */
static CURLcode sc_reg_perform(sc_registry_t *r, const char *url, sc_reg_body_t *b,
                               const char *post, struct curl_slist *hdr, long *status)
{
        CURL *c = r->curl;
        curl_easy_reset(c);
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sc_reg_write);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, b);
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, r->timeout_ms);
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, r->timeout_ms);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, post ? 0L : 1L);
        curl_easy_setopt(c, CURLOPT_MAXREDIRS, 3L);
        curl_easy_setopt(c, CURLOPT_USERAGENT, "scadles");
        if (post) {
                curl_easy_setopt(c, CURLOPT_POSTFIELDS, post);
                curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
        }
        if (r->userpwd) {
                curl_easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
                curl_easy_setopt(c, CURLOPT_USERPWD, r->userpwd);
        }
        if (r->ca)
                curl_easy_setopt(c, CURLOPT_CAINFO, r->ca);
        r->stats.requests++;
        CURLcode cc = curl_easy_perform(c);
        *status = 0;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
        return cc;
}

sc_registry_result_t sc_registry_get(sc_registry_t *r, int32_t id, double t, const char **schema,
                                     size_t *len, char *why, size_t why_size)
{
        const sc_reg_entry_t *e = sc_reg_cached(r, id);
        const sc_reg_pending_t *pend = e ? NULL : sc_reg_pending(r, id);
        if (!e && (t < r->next_try || (pend && t < pend->next))) {
                double at = pend && pend->next > r->next_try ? pend->next : r->next_try;
                sc_errf(SC_ERR_AGAIN, why, why_size, "%s: %s, asked again in %.1f s", r->url,
                        r->stats.unavailable ? "unavailable" : "schema not found yet", at - t);
                return SC_REGISTRY_UNAVAILABLE;
        }
        if (!e) {
                char url[4200], awhy[512];
                sc_reg_body_t b = {0};
                long status = 0;
                if (r->reload_auth) {
                        if (sc_reg_auth(r, r->auth_file, awhy, sizeof(awhy))) {
                                sc_errf(SC_ERR_CONFIG, why, why_size, "%s", awhy);
                                return sc_reg_down(r, t);
                        }
                        r->reload_auth = 0;
                }
                snprintf(url, sizeof(url), "%s/schemas/ids/%d", r->url, id);
                CURLcode cc = sc_reg_perform(r, url, &b, NULL, NULL, &status);
                sc_registry_result_t res;
                if (cc != CURLE_OK && b.over && status == 200) {
                        sc_reg_up(r);
                        sc_reg_pending_drop(r, id);
                        sc_errf(SC_ERR_DECODE, why, why_size,
                                "schema id %d: the answer is over %zu bytes", id, SC_REG_BODY_MAX);
                        r->stats.not_found++;
                        res = SC_REGISTRY_NOT_FOUND;
                } else if (cc != CURLE_OK) {
                        sc_errf(SC_ERR_IO, why, why_size, "%s: %s", r->url,
                                b.over ? "an error answer over the size of a schema"
                                       : curl_easy_strerror(cc));
                        res = sc_reg_down(r, t);
                } else {
                        res = sc_reg_answer(r, id, status, &b, t, why, why_size);
                }
                free(b.p);
                if (res != SC_REGISTRY_OK)
                        return res;
                e = &r->e[r->n - 1];
        }
        *schema = e->text;
        *len = e->len;
        return SC_REGISTRY_OK;
}

sc_err_t sc_registry_register(sc_registry_t *r, const char *subject, const char *schema,
                              int32_t *id, char *why, size_t why_size)
{
        char url[4400], msg[256];
        sc_reg_body_t b = {0};
        long status = 0;
        json_t *req = json_pack("{s:s}", "schema", schema);
        char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
        json_decref(req);
        struct curl_slist *hdr =
            curl_slist_append(NULL, "Content-Type: application/vnd.schemaregistry.v1+json");
        if (!body || !hdr) {
                free(body);
                curl_slist_free_all(hdr);
                return sc_errf(SC_ERR_NOMEM, why, why_size, "schema registry: out of memory");
        }
        for (const char *c = subject; *c; c++)
                if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                      (*c >= '0' && *c <= '9') || *c == '.' || *c == '_' || *c == '-')) {
                        free(body);
                        curl_slist_free_all(hdr);
                        return sc_errf(SC_ERR_INVAL, why, why_size,
                                       "schema registry: subject \"%s\" is not a topic name "
                                       "followed by -value",
                                       subject);
                }
        snprintf(url, sizeof(url), "%s/subjects/%s/versions", r->url, subject);
        CURLcode cc = sc_reg_perform(r, url, &b, body, hdr, &status);
        free(body);
        curl_slist_free_all(hdr);
        sc_err_t err = SC_OK;
        json_t *j = cc == CURLE_OK && status == 200 && b.p ? json_loadb(b.p, b.n, 0, NULL) : NULL;
        json_t *jid = j ? json_object_get(j, "id") : NULL;
        json_int_t got = json_is_integer(jid) ? json_integer_value(jid) : -1;
        if (cc != CURLE_OK)
                err = sc_errf(SC_ERR_IO, why, why_size, "%s: %s", r->url, curl_easy_strerror(cc));
        else if (status != 200) {
                sc_reg_message(&b, msg, sizeof(msg));
                err = sc_errf(SC_ERR_IO, why, why_size, "%s: registering %s: HTTP %ld: %s", r->url,
                              subject, status, msg);
        } else if (got < 0 || got > INT32_MAX)
                err = sc_errf(SC_ERR_IO, why, why_size, "%s: registering %s: no id in the answer",
                              r->url, subject);
        else
                *id = (int32_t)got;
        json_decref(j);
        free(b.p);
        return err;
}
