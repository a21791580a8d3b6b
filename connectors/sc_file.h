/* sc_file.h — whole-file writes that never leave a half-written file. */
#ifndef SC_FILE_H
#define SC_FILE_H

#include <stddef.h>

#include "sc_err.h"

/* Writes len bytes of buf to path atomically: a temporary file in the same
 * folder (path.tmp.XXXXXX, mode 0644), fsync, rename over path, fsync of the
 * folder. An existing file at path stays intact on failure and no temporary
 * file is left behind. Errors (SC_ERR_IO, SC_ERR_INVAL for a path too long)
 * start with path. */
sc_err_t sc_file_write_atomic(const char *path, const void *buf, size_t len, char *errstr,
                              size_t errstr_size);

#endif
