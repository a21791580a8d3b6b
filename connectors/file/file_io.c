/* file_io.c — whole files: read at once (configuration, checkpoints,
 * held-out sets) and written atomically (temporary file, fsync, rename,
 * folder fsync: checkpoints and model exports). */
#include "sc_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int sc_file_write_all(int fd, const uint8_t *buf, size_t len)
{
        while (len > 0) {
                ssize_t w = write(fd, buf, len);
                if (w < 0) {
                        if (errno == EINTR)
                                continue;
                        return -1;
                }
                buf += w;
                len -= (size_t)w;
        }
        return 0;
}

/* fsyncs the folder holding path so the rename itself is durable. */
static int sc_file_sync_dir(const char *path)
{
        char dir[4096];
        const char *slash = strrchr(path, '/');
        if (!slash) {
                strcpy(dir, ".");
        } else if (slash == path) {
                strcpy(dir, "/");
        } else {
                size_t n = (size_t)(slash - path);
                if (n >= sizeof(dir))
                        return -1;
                memcpy(dir, path, n);
                dir[n] = 0;
        }
        int fd = open(dir, O_RDONLY | O_DIRECTORY);
        if (fd < 0)
                return -1;
        int rc = fsync(fd);
        close(fd);
        return rc;
}

sc_err_t sc_file_write_atomic(const char *path, const void *buf, size_t len, char *errstr,
                              size_t errstr_size)
{
        char tmp[4096];
        sc_err_t err = SC_OK;

        if (snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", path) >= (int)sizeof(tmp))
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size, "%s: path too long", path);
        int fd = mkstemp(tmp);
        if (fd < 0)
                return sc_errf(SC_ERR_IO, errstr, errstr_size, "%s: cannot create %s: %s", path,
                               tmp, strerror(errno));
        if (sc_file_write_all(fd, buf, len) || fchmod(fd, 0644) || fsync(fd)) {
                err = sc_errf(SC_ERR_IO, errstr, errstr_size, "%s: cannot write %s: %s", path, tmp,
                              strerror(errno));
                close(fd);
                goto out_unlink;
        }
        if (close(fd)) {
                err = sc_errf(SC_ERR_IO, errstr, errstr_size, "%s: cannot write %s: %s", path, tmp,
                              strerror(errno));
                goto out_unlink;
        }
        if (rename(tmp, path)) {
                err = sc_errf(SC_ERR_IO, errstr, errstr_size, "%s: cannot rename %s into place: %s",
                              path, tmp, strerror(errno));
                goto out_unlink;
        }
        if (sc_file_sync_dir(path))
                err = sc_errf(SC_ERR_IO, errstr, errstr_size,
                              "%s: saved, but cannot sync its folder: %s", path, strerror(errno));
        return err;
out_unlink:
        unlink(tmp);
        return err;
}

sc_err_t sc_file_read_all(const char *path, size_t max, char **bufp, size_t *lenp, char *errstr,
                          size_t errstr_size)
{
        struct stat st;
        *bufp = NULL;
        *lenp = 0;
        int fd = open(path, O_RDONLY);
        if (fd < 0)
                return sc_errf(SC_ERR_IO, errstr, errstr_size, "%s: cannot open: %s", path,
                               strerror(errno));
        /* A regular file's size is the first guess; a pipe's is grown to. */
        size_t cap = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0
                         ? (size_t)st.st_size + 1
                         : 65536;
        if (cap > max + 1)
                cap = max + 1;
        size_t len = 0;
        char *buf = malloc(cap + 1);
        sc_err_t err = SC_OK;
        while (buf) {
                if (len == cap) {
                        if (len > max)
                                break;
                        size_t ncap = cap * 2 > max + 1 ? max + 1 : cap * 2;
                        char *nb = realloc(buf, ncap + 1);
                        if (!nb)
                                break;
                        buf = nb;
                        cap = ncap;
                }
                ssize_t r = read(fd, buf + len, cap - len);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0) {
                        err = sc_errf(SC_ERR_IO, errstr, errstr_size, "%s: read error: %s", path,
                                      strerror(errno));
                        break;
                }
                if (r == 0)
                        break;
                len += (size_t)r;
        }
        close(fd);
        if (!err && (!buf || (len == cap && len <= max)))
                err = sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "%s: out of memory", path);
        else if (!err && len > max)
                err = sc_errf(SC_ERR_INVAL, errstr, errstr_size, "%s: larger than %zu bytes", path,
                              max);
        if (err) {
                free(buf);
                return err;
        }
        buf[len] = '\0';
        *bufp = buf;
        *lenp = len;
        return SC_OK;
}
