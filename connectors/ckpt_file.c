/* ckpt_file.c — checkpoint files: atomic save (temporary file, fsync,
 * rename, folder fsync) and load of a model (parameters and non-trainable
 * state) and its optimizer velocity. */
#include "sc_ckpt.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Largest checkpoint file read (bytes). */
#define SC_CKPT_FILE_MAX ((off_t)1 << 36)

static sc_err_t sc_ckpt_write_all(int fd, const uint8_t *buf, size_t len)
{
        while (len > 0) {
                ssize_t w = write(fd, buf, len);
                if (w < 0) {
                        if (errno == EINTR)
                                continue;
                        return SC_ERR_IO;
                }
                buf += w;
                len -= (size_t)w;
        }
        return SC_OK;
}

/* fsyncs the folder holding path so the rename itself is durable. */
static int sc_ckpt_sync_dir(const char *path)
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

sc_err_t sc_ckpt_save(const char *path, sc_model_t *model, const sc_sgd_t *sgd,
                      const sc_ckpt_meta_t *meta, char *errstr, size_t errstr_size)
{
        char tmp[4096], msg[512];
        uint8_t *buf;
        size_t len;
        sc_err_t err;
        size_t n = sc_model_nparams(model);

        if (sgd && sgd->velocity && sgd->n != n)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "%s: optimizer holds %zu values, the model %zu parameters", path,
                               sgd->n, n);
        if (snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", path) >= (int)sizeof(tmp))
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size, "checkpoint path too long");
        err = sc_ckpt_encode(sc_model_spec(model), meta, sc_model_params(model),
                             sgd ? sgd->velocity : NULL, n, sc_model_state(model),
                             sc_model_nstate(model), &buf, &len, msg, sizeof(msg));
        if (err)
                return sc_errf(err, errstr, errstr_size, "%s: %s", path, msg);
        int fd = mkstemp(tmp);
        if (fd < 0) {
                err = sc_errf(SC_ERR_IO, errstr, errstr_size, "%s: cannot create %s: %s", path, tmp,
                              strerror(errno));
                goto out_free;
        }
        if (sc_ckpt_write_all(fd, buf, len) || fchmod(fd, 0644) || fsync(fd)) {
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
        if (sc_ckpt_sync_dir(path))
                err = sc_errf(SC_ERR_IO, errstr, errstr_size,
                              "%s: saved, but cannot sync its folder: %s", path, strerror(errno));
        goto out_free;
out_unlink:
        unlink(tmp);
out_free:
        free(buf);
        return err;
}

sc_err_t sc_ckpt_load(const char *path, sc_model_t *model, sc_sgd_t *sgd, sc_ckpt_meta_t *meta,
                      int *has_state, char *errstr, size_t errstr_size)
{
        char msg[512];
        struct stat st;
        sc_err_t err = SC_OK;
        size_t n = sc_model_nparams(model);

        if (sgd && sgd->velocity && sgd->n != n)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "%s: optimizer holds %zu values, the model %zu parameters", path,
                               sgd->n, n);
        int fd = open(path, O_RDONLY);
        if (fd < 0)
                return sc_errf(SC_ERR_IO, errstr, errstr_size, "%s: cannot open: %s", path,
                               strerror(errno));
        if (fstat(fd, &st)) {
                err = sc_errf(SC_ERR_IO, errstr, errstr_size, "%s: cannot stat: %s", path,
                              strerror(errno));
                goto out_close;
        }
        if (!S_ISREG(st.st_mode) || st.st_size > SC_CKPT_FILE_MAX) {
                err = sc_errf(SC_ERR_IO, errstr, errstr_size,
                              "%s: not a regular file of at most %lld bytes", path,
                              (long long)SC_CKPT_FILE_MAX);
                goto out_close;
        }
        size_t len = (size_t)st.st_size;
        uint8_t *buf = malloc(len ? len : 1);
        if (!buf) {
                err = sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "%s: cannot allocate %zu bytes",
                              path, len);
                goto out_close;
        }
        size_t got = 0;
        while (got < len) {
                ssize_t r = read(fd, buf + got, len - got);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0) {
                        err = sc_errf(SC_ERR_IO, errstr, errstr_size, "%s: read error: %s", path,
                                      strerror(errno));
                        goto out_free;
                }
                if (r == 0)
                        break;
                got += (size_t)r;
        }
        int hs = 0;
        err = sc_ckpt_decode(buf, got, sc_model_spec(model), meta, sc_model_params(model),
                             sgd ? sgd->velocity : NULL, n, NULL, sc_model_state(model),
                             sc_model_nstate(model), &hs, msg, sizeof(msg));
        if (err) {
                sc_errf(err, errstr, errstr_size, "%s: %s", path, msg);
                goto out_free;
        }
        if (!hs)
                sc_model_reset_state(model);
        if (has_state)
                *has_state = hs;
out_free:
        free(buf);
out_close:
        close(fd);
        return err;
}
