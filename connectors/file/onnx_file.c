/* onnx_file.c — ONNX model files: sc_onnx_encode, then an atomic write. */
#include "sc_onnx.h"

#include "sc_file.h"

sc_err_t sc_onnx_save(const char *path, sc_model_t *model, const sc_onnx_opts_t *opts, size_t *size,
                      char *errstr, size_t errstr_size)
{
        char msg[512];
        sc_buf_t buf;
        sc_err_t err;

        sc_buf_init(&buf);
        err = sc_onnx_encode(model, opts, &buf, msg, sizeof(msg));
        if (err)
                return sc_errf(err, errstr, errstr_size, "%s: %s", path, msg);
        err = sc_file_write_atomic(path, buf.data, buf.len, errstr, errstr_size);
        if (!err && size)
                *size = buf.len;
        sc_buf_free(&buf);
        return err;
}
