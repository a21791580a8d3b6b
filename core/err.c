/* err.c — error descriptions and the errstr helper. */
#include "sc_err.h"

#include <stdarg.h>
#include <stdio.h>

static const char *const sc_err_descs[SC_ERR__END] = {
    [SC_OK] = "success",
    [SC_ERR_NOMEM] = "out of memory",
    [SC_ERR_INVAL] = "invalid argument",
    [SC_ERR_CONFIG] = "invalid configuration",
    [SC_ERR_SHAPE] = "tensor shapes do not fit",
    [SC_ERR_IO] = "input/output error",
    [SC_ERR_CORRUPT] = "corrupt data",
    [SC_ERR_VERSION] = "unsupported format version",
    [SC_ERR_DECODE] = "cannot decode record or message",
    [SC_ERR_UNSUPPORTED] = "not supported by this build",
    [SC_ERR_STATE] = "invalid in the current state",
    [SC_ERR_AGAIN] = "nothing available yet",
    [SC_ERR_AUTH] = "authentication failed",
    [SC_ERR_DIVERGED] = "training diverged (non-finite loss)",
};

const char *sc_err2str(sc_err_t err)
{
        if ((int)err < 0 || err >= SC_ERR__END || !sc_err_descs[err])
                return "unknown error";
        return sc_err_descs[err];
}

sc_err_t sc_errf(sc_err_t err, char *errstr, size_t errstr_size, const char *fmt, ...)
{
        va_list ap;

        if (!errstr || errstr_size == 0)
                return err;
        va_start(ap, fmt);
        vsnprintf(errstr, errstr_size, fmt, ap);
        va_end(ap);
        return err;
}
