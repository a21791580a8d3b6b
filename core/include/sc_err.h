/* sc_err.h — one error enum for the whole library, with descriptions from one
 * table, and the errstr convention for messages a user reads. */
#ifndef SC_ERR_H
#define SC_ERR_H

#include <stddef.h>

/* A macro's value as a string literal: a module's default is a macro in its
 * header, and the configuration table's row gives it as text with this. */
#define SC_STR_(x) #x
#define SC_STR(x) SC_STR_(x)

typedef enum sc_err {
        SC_OK = 0,
        SC_ERR_NOMEM,       /* an allocation failed */
        SC_ERR_INVAL,       /* an argument is out of its documented range */
        SC_ERR_CONFIG,      /* configuration is invalid (errstr names the JSON path) */
        SC_ERR_SHAPE,       /* tensor shapes do not fit together */
        SC_ERR_IO,          /* a file or socket operation failed (errno in errstr) */
        SC_ERR_CORRUPT,     /* bytes fail a length, magic or CRC check */
        SC_ERR_VERSION,     /* a format version this build does not read */
        SC_ERR_DECODE,      /* a record or message cannot be decoded */
        SC_ERR_UNSUPPORTED, /* valid request this build cannot serve */
        SC_ERR_STATE,       /* call not valid in the object's current state */
        SC_ERR_AGAIN,       /* nothing available now; retry later */
        SC_ERR_AUTH,        /* a message lacks the tag its job requires, or it does not verify */
        SC_ERR_DIVERGED,    /* training diverged: the loss is NaN or infinite */
        SC_ERR__END
} sc_err_t;

/* Returns a static, one-line description of err (never NULL). */
const char *sc_err2str(sc_err_t err);

/* Writes a printf-style message into errstr (if errstr and size are non-zero),
 * always NUL-terminated and truncated to fit. Returns err so callers can write
 * `return sc_errf(SC_ERR_CONFIG, errstr, size, "...")`. */
sc_err_t sc_errf(sc_err_t err, char *errstr, size_t errstr_size, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
