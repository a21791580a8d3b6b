/* sc_log.h — the runtime's one log line: every program of connectors/ (the
 * worker, the Kafka source, the aggregator, the predictor) reports to a
 * callback of this type, formatted by sc_logf. */
#ifndef SC_LOG_H
#define SC_LOG_H

/* A line for a person (level: syslog's, 3 error, 4 warning, 6 info, 7
 * debug), one line, no newline; called on the caller's thread. */
typedef void (*sc_log_fn)(void *opaque, int level, const char *line);

/* Formats one line (at most 1023 bytes, longer is cut) and gives it to fn;
 * nothing if fn is NULL. */
void sc_logf(sc_log_fn fn, void *opaque, int level, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
