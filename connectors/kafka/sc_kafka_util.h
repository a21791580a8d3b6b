/* sc_kafka_util.h — helpers every Kafka connector shares: librdkafka
 * configuration from JSON, a log bridge, produce with delivery tracking, a
 * metadata probe and the offset-gap check that turns retention loss into a
 * count instead of silence. */
#ifndef SC_KAFKA_UTIL_H
#define SC_KAFKA_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <librdkafka/rdkafka.h>

#include "sc_conf.h"
#include "sc_decode.h"
#include "sc_err.h"

/* ---- configuration ---- */

/* Sets one librdkafka property; errstr names `where` (e.g. "$.kafka.linger.ms")
 * and librdkafka's reason. */
sc_err_t sc_kafka_conf_set(rd_kafka_conf_t *conf, const char *name, const char *value,
                           const char *where, char *errstr, size_t errstr_size);

/* Applies every member of the JSON object obj to conf. Values may be strings,
 * integers, reals (written without exponent) or booleans ("true"/"false");
 * null, arrays and objects are errors. path is the JSON path of obj (e.g.
 * "$.kafka"); errors name "<path>.<key>". obj may be NULL (nothing to do).
 * conf stays owned by the caller; on error it may be partly updated. */
sc_err_t sc_kafka_conf_apply_json(rd_kafka_conf_t *conf, const json_t *obj, const char *path,
                                  char *errstr, size_t errstr_size);

/* Creates a conf from obj as above. On success *confp is a new conf the caller
 * owns (rd_kafka_conf_destroy, or pass it to rd_kafka_new). */
sc_err_t sc_kafka_conf_from_json(rd_kafka_conf_t **confp, const json_t *obj, const char *path,
                                 char *errstr, size_t errstr_size);

/* Checks obj as sc_kafka_conf_from_json would apply it, on a throwaway conf:
 * an unknown property or a value librdkafka refuses is SC_ERR_CONFIG naming
 * "<path>.<key>" (what `scadles config --check` runs before any client is
 * created). */
sc_err_t sc_kafka_conf_check(const json_t *obj, const char *path, char *errstr, size_t errstr_size);
/* 1 if librdkafka's client of this type reads the property (its C/P
 * column), so that setting it draws no CONFWARN; 1 for unknown names. */
int sc_kafka_conf_applies(const char *name, rd_kafka_type_t type);

/* The configuration of one of the runtime's own clients (worker, aggregator,
 * model reader), in this order: the latency settings the job needs
 * (consumers: fetch.wait.max.ms 10, producers: linger.ms 0; no Nagle), the
 * caller's defaults (name, value pairs, NULL-terminated; may be NULL), every
 * $.kafka property this client type reads (the others are skipped, so a
 * consumer property draws no warning from a producer), then $.kafka_consumer
 * or $.kafka_producer, which win. The log bridge is installed. On success
 * *confp is the caller's. */
sc_err_t sc_kafka_client_conf(rd_kafka_conf_t **confp, const sc_conf_t *conf, rd_kafka_type_t type,
                              const char *const *defaults, char *errstr, size_t errstr_size);

/* Applies "name=value" strings (as given to a command's -X option); errors
 * name the argument. */
sc_err_t sc_kafka_conf_set_kv(rd_kafka_conf_t *conf, const char *kv, char *errstr,
                              size_t errstr_size);

/* ---- logging ---- */

/* A log sink: level is syslog's (0 emerg .. 7 debug), fac librdkafka's
 * facility, name the client instance name. Called from librdkafka's threads:
 * must be thread-safe. */
typedef void (*sc_kafka_log_fn)(void *opaque, int level, const char *fac, const char *name,
                                const char *msg);

/* Sets the process-wide sink that sc_kafka_conf_log_bridge() forwards to;
 * NULL restores librdkafka's own printer (stderr). Thread-safe; takes effect
 * for log lines emitted afterwards. */
void sc_kafka_log_set_sink(sc_kafka_log_fn fn, void *opaque);

/* Installs the bridge on conf: librdkafka's log lines go to the current sink,
 * or to librdkafka's own printer while none is set; its error events are
 * logged the same way (level 3, facility "ERROR"), and an authentication or
 * TLS failure (SASL rejected, certificate not verified) or a fatal error is
 * remembered for sc_kafka_fatal_check(). */
void sc_kafka_conf_log_bridge(rd_kafka_conf_t *conf);

/* ---- failures a client does not recover from ---- */

/* SC_ERR_IO with errstr "Kafka authentication failed: <client>: <reason>
 * (check ...)" (or "Kafka client <client>: fatal error: ...") once any
 * bridged client of this process reported such a failure (librdkafka would
 * retry an unauthenticated client for ever); SC_OK before. Thread-safe.
 * Loops call it to stop with that message instead of waiting. The state is
 * the process's, never cleared: it suits the commands (one worker,
 * aggregator or predictor a process); a host embedding several workers
 * (the plugin in several consumers) sees one's failure stop all of them. */
sc_err_t sc_kafka_fatal_check(char *errstr, size_t errstr_size);

/* For an error err a call returned after its own timeout: when such a
 * failure is known, errstr is replaced by it (the cause) and SC_ERR_IO
 * returned; otherwise err and errstr are left as they are. */
sc_err_t sc_kafka_fatal_or(sc_err_t err, char *errstr, size_t errstr_size);

/* ---- produce with delivery tracking ---- */

/* Counts the delivery reports of the messages produced with it. Updated from
 * the delivery callback, which librdkafka runs inside rd_kafka_poll() /
 * rd_kafka_flush() on the caller's thread: poll from one thread only. */
typedef struct sc_kafka_delivery {
        int64_t dv_pending;               /* produced, no report yet */
        int64_t dv_delivered;             /* acknowledged by the broker */
        int64_t dv_failed;                /* permanently failed */
        rd_kafka_resp_err_t dv_first_err; /* first failure, or NO_ERROR */
        int32_t dv_last_partition;        /* of the last success */
        int64_t dv_last_offset;           /* of the last success, -1 before */
} sc_kafka_delivery_t;

void sc_kafka_delivery_init(sc_kafka_delivery_t *dv);

/* Installs the delivery-report callback that fills sc_kafka_delivery_t; it
 * must be on every conf whose handle is used with sc_kafka_produce(). A
 * message produced elsewhere with a NULL opaque is ignored by it. */
void sc_kafka_conf_delivery(rd_kafka_conf_t *conf);

/* Produces one message given as rd_kafka_produceva()'s list (topic and
 * partition name it in errors); while librdkafka's queue is full it serves
 * delivery reports and retries for up to timeout_ms. SC_ERR_AGAIN if the
 * queue stayed full, SC_ERR_IO for any other refusal. */
sc_err_t sc_kafka_produceva_retry(rd_kafka_t *rk, const rd_kafka_vu_t *vu, size_t n,
                                  const char *topic, int32_t partition, int timeout_ms,
                                  char *errstr, size_t errstr_size);

/* Produces one message (copied) to topic/partition (RD_KAFKA_PARTITION_UA lets
 * the partitioner choose) with an optional key and optional header
 * (hdr_name NULL for none) and tracks it in dv. When librdkafka's queue is
 * full it serves delivery reports and retries for up to timeout_ms.
 * timestamp_ms 0 means "now". */
sc_err_t sc_kafka_produce(rd_kafka_t *rk, const char *topic, int32_t partition, const void *key,
                          size_t key_len, const void *value, size_t value_len, const char *hdr_name,
                          const void *hdr_value, size_t hdr_len, int64_t timestamp_ms,
                          sc_kafka_delivery_t *dv, int timeout_ms, char *errstr,
                          size_t errstr_size);

/* As sc_kafka_produce, with a list of headers instead of one: hdrs (NULL
 * for none) becomes librdkafka's when the message is queued (SC_OK) and
 * stays the caller's otherwise. */
sc_err_t sc_kafka_produce_headers(rd_kafka_t *rk, const char *topic, int32_t partition,
                                  const void *key, size_t key_len, const void *value,
                                  size_t value_len, rd_kafka_headers_t *hdrs,
                                  sc_kafka_delivery_t *dv, int timeout_ms, char *errstr,
                                  size_t errstr_size);

/* Serves delivery reports until dv has nothing pending or timeout_ms passed.
 * Returns SC_OK when all were delivered, SC_ERR_IO when any failed (errstr
 * names the first error), SC_ERR_AGAIN on timeout. */
sc_err_t sc_kafka_delivery_wait(rd_kafka_t *rk, sc_kafka_delivery_t *dv, int timeout_ms,
                                char *errstr, size_t errstr_size);

/* Produces one message and waits for its delivery report; on success the
 * partition and offset it was written at go to *partitionp / *offsetp (either
 * may be NULL). */
sc_err_t sc_kafka_produce_sync(rd_kafka_t *rk, const char *topic, int32_t partition,
                               const void *key, size_t key_len, const void *value, size_t value_len,
                               int timeout_ms, int32_t *partitionp, int64_t *offsetp, char *errstr,
                               size_t errstr_size);

/* ---- probe ---- */

/* Connects to bootstrap and asks for cluster metadata within timeout_ms.
 * On success *brokersp / *topicsp (either may be NULL) get the counts. */
sc_err_t sc_kafka_probe(const char *bootstrap, int timeout_ms, int *brokersp, int *topicsp,
                        char *errstr, size_t errstr_size);

/* ---- records ---- */

/* Points hd[] at m's headers, at most SC_DECODE_MAX_HEADERS + 1 of them (hd
 * has room for that many): a record with more than the limit reaches
 * sc_decode_record with one too many and is rejected there. Returns how many.
 * The entries borrow m's memory. */
size_t sc_kafka_headers(const rd_kafka_message_t *m, sc_decode_header_t *hd);

/* ---- offset gaps (retention loss) ---- */

/* Per-partition consumption tracker. Offsets of a non-compacted,
 * non-transactional partition are contiguous, so a consumed offset beyond the
 * next expected one means records were removed (retention) before they were
 * read. gp_lost counts them; nothing is lost silently. */
typedef struct sc_kafka_gap {
        int64_t gp_next;   /* next expected offset; -1 until the first record */
        int64_t gp_lost;   /* records skipped so far */
        int64_t gp_events; /* times a gap was seen */
} sc_kafka_gap_t;

/* Starts a tracker; start is the first offset expected (e.g. 0 when reading a
 * partition from the beginning), or -1 to accept whatever comes first. */
void sc_kafka_gap_init(sc_kafka_gap_t *gp, int64_t start);

/* Records one consumed offset; returns the records lost just before it (0 in
 * the normal case). An offset below the expected one (a re-delivery after a
 * seek back) is accepted and moves the expectation back. */
int64_t sc_kafka_gap_observe(sc_kafka_gap_t *gp, int64_t offset);

/* For OFFSET_OUT_OF_RANGE (the expected offset is below the log start):
 * queries the partition's low watermark, counts the records between the
 * expected offset and it as lost, and sets the expectation to it. The caller
 * then seeks to gp->gp_next. Returns the records lost. */
sc_err_t sc_kafka_gap_resync(rd_kafka_t *rk, const char *topic, int32_t partition,
                             sc_kafka_gap_t *gp, int timeout_ms, int64_t *lostp, char *errstr,
                             size_t errstr_size);

/* A partition's end offset (*hi) and, when the fetch reported it, its log
 * start (*lo, else 0) as a fetch learns them: rk, a consumer with
 * enable.partition.eof=true and nothing assigned, is assigned the partition
 * at its end until the fetch reaches it, then unassigned. A fetch follows a
 * leader that moved (a broker that died), where librdkafka 2.0.2's
 * rd_kafka_query_watermark_offsets() waits past its timeout for the old
 * leader. SC_ERR_IO naming the partition and the last error when no fetch
 * answered within timeout_ms. */
sc_err_t sc_kafka_end_offsets(rd_kafka_t *rk, const char *topic, int32_t partition, int timeout_ms,
                              int64_t *lo, int64_t *hi, char *errstr, size_t errstr_size);

/* A record of a range read (sc_kafka_read_range), its offset in [start,
 * end). 0 to go on; non-zero ends the read (SC_OK is returned). */
typedef int (*sc_kafka_range_fn)(void *opaque, const rd_kafka_message_t *m);

/* Reads topic [partition] from start to end (exclusive) with rk, a reader
 * with nothing assigned (sc_kafka_reader_new): the partition is assigned at
 * start, each record of the range goes to fn, and the read ends with the
 * record at end - 1, the end-of-partition event, or an offset reset (the
 * rest was deleted from the log); the partition is then unassigned.
 * SC_ERR_IO when no record of the range came for timeout_ms (errors come
 * as events and do not count as records). */
sc_err_t sc_kafka_read_range(rd_kafka_t *rk, const char *topic, int32_t partition, int64_t start,
                             int64_t end, int timeout_ms, sc_kafka_range_fn fn, void *opaque,
                             char *errstr, size_t errstr_size);

/* Whether a client reaches a broker, from its statistics events (librdkafka
 * emits one per statistics.interval.ms whatever the brokers do; each lists
 * the brokers' connection states). A process that waits for input uses it so
 * that a broker outage does not read as idle topics. */
typedef struct sc_kafka_reach {
        int on;         /* statistics events are enabled on the client */
        int brokers_up; /* brokers (not bootstrap entries) UP in the last event */
        double t_stats; /* monotonic seconds of the last event (0: none yet) */
        int down;       /* the last transition reported was "unreachable" */
} sc_kafka_reach_t;
/* Before rd_kafka_new on a consumer's kc: statistics.interval.ms 1000 unless
 * $.kafka or $.kafka_consumer name it (0 there turns the tracking off: always
 * reachable), and
 * cb, whose opaque is the client's, as kc's statistics callback. */
sc_err_t sc_kafka_reach_conf(sc_kafka_reach_t *r, rd_kafka_conf_t *kc, const sc_conf_t *conf,
                             int (*cb)(rd_kafka_t *, char *, size_t, void *), char *errstr,
                             size_t errstr_size);
/* Reads one statistics event (from the callback); returns the line to log
 * when it turned the client unreachable (*level 4) or reachable again
 * (*level 5), NULL when neither. */
const char *sc_kafka_reach_event(sc_kafka_reach_t *r, const char *json, size_t len, int *level);
/* 1 when the last event, within 5 s, showed a broker UP (or tracking is
 * off); 0 when it showed none, or no event came for 5 s (or none yet). */
int sc_kafka_reach_ok(const sc_kafka_reach_t *r);

/* Closes a consumer that subscribed to a group: unsubscribes first, then
 * serves its rebalance callback (the revocation) until it holds no
 * partition and has held none for 200 ms, for at most timeout_ms; then
 * rd_kafka_consumer_close(). librdkafka 2.0 can abort the process
 * (rd_kafka_cgrp_terminated: assert !assignment_in_progress) when a close
 * meets a rebalance under way; this order keeps the two apart. Records
 * polled meanwhile are dropped uncommitted: the group's next owner reads
 * them. */
void sc_kafka_consumer_leave(rd_kafka_t *rk, int timeout_ms);
/* The usual timeout_ms: a revocation served locally takes milliseconds. */
#define SC_KAFKA_LEAVE_MS 5000

/* 1 when rk's group uses the cooperative rebalance protocol (incremental
 * assign/unassign), 0 for eager or when the protocol is not known: a member
 * the group no longer knows (its last revocation, at close) has none. */
int sc_kafka_cooperative(rd_kafka_t *rk);

/* A file descriptor that turns readable when any watched client has
 * something to serve (a message, a delivery report, a rebalance), so that a
 * loop over several clients sleeps until the first of them has work instead
 * of polling each on a timer (librdkafka's queue IO events; a queue signals
 * when it turns non-empty, so the caller drains what it polls). */
typedef struct sc_kafka_waker sc_kafka_waker_t;

sc_err_t sc_kafka_waker_new(sc_kafka_waker_t **wkp, char *errstr, size_t errstr_size);
/* Watches rk's consumer queue (a consumer with rd_kafka_poll_set_consumer),
 * else its main queue (a producer's delivery reports). At most
 * SC_KAFKA_WAKER_MAX clients; rk must outlive the waker. NULL rk is a no-op. */
#define SC_KAFKA_WAKER_MAX 8
sc_err_t sc_kafka_waker_watch(sc_kafka_waker_t *wk, rd_kafka_t *rk, char *errstr,
                              size_t errstr_size);
/* Sleeps until a watched client signals or timeout_ms passed; 1 if woken. */
int sc_kafka_waker_wait(sc_kafka_waker_t *wk, int timeout_ms);
/* Stops the signals and closes the descriptors: before the clients go. */
void sc_kafka_waker_destroy(sc_kafka_waker_t *wk);

/* A consumer that reads by assignment only and commits nothing: one of the
 * runtime's clients (sc_kafka_client_conf: latency defaults, $.kafka,
 * $.kafka_consumer), client.id and group.id = name, enable.partition.eof =
 * true (sc_kafka_end_offsets). SC_ERR_CONFIG for a bad kafka property,
 * SC_ERR_IO when librdkafka refuses the handle. *rkp is the caller's
 * (rd_kafka_destroy). */
sc_err_t sc_kafka_reader_new(rd_kafka_t **rkp, const sc_conf_t *conf, const char *name,
                             char *errstr, size_t errstr_size);

#endif
