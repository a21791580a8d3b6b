/* log.c — the runtime's one log line (sc_log.h). */
#include "sc_log.h"

#include <stdarg.h>
#include <stdio.h>

void sc_logf(sc_log_fn fn, void *opaque, int level, const char *fmt, ...)
{
        char line[1024];
        va_list ap;
        if (!fn)
                return;
        va_start(ap, fmt);
        vsnprintf(line, sizeof(line), fmt, ap);
        va_end(ap);
        fn(opaque, level, line);
}
