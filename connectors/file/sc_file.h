/* sc_file.h — the runtime's file I/O: whole-file reads and atomic writes,
 * and the files of the formats core encodes (configuration, checkpoint,
 * ONNX). Core encodes and decodes the bytes; these read and write them. */
#ifndef SC_FILE_H
#define SC_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "sc_ckpt.h"
#include "sc_conf.h"
#include "sc_err.h"
#include "sc_nn.h"
#include "sc_onnx.h"
#include "sc_optim.h"

/* Reads the regular file at path whole into *bufp (caller frees), with a
 * NUL after its *lenp bytes. Errors start with path: SC_ERR_IO (cannot
 * open, not a regular file, read error), SC_ERR_INVAL (more than max
 * bytes), SC_ERR_NOMEM. */
sc_err_t sc_file_read_all(const char *path, size_t max, char **bufp, size_t *lenp, char *errstr,
                          size_t errstr_size);

/* Writes len bytes of buf to path atomically: a temporary file in the same
 * folder (path.tmp.XXXXXX, mode 0644), fsync, rename over path, fsync of the
 * folder. An existing file at path stays intact on failure and no temporary
 * file is left behind. Errors (SC_ERR_IO, SC_ERR_INVAL for a path too long)
 * start with path. */
sc_err_t sc_file_write_atomic(const char *path, const void *buf, size_t len, char *errstr,
                              size_t errstr_size);

/* ---- configuration files (conf_file.c) ---- */

/* Reads the file at path and parses it (sc_conf_parse). */
sc_err_t sc_conf_load(sc_conf_t *conf, const char *path, char *errstr, size_t errstr_size);
/* The same with sc_conf_parse_sim. */
sc_err_t sc_conf_load_sim(sc_conf_t *conf, const char *path, char *errstr, size_t errstr_size);

/* ---- checkpoint files (ckpt_file.c) ---- */

/* Saves model parameters, its state (if it has any)
 * and sgd velocity (sgd may be NULL) to path atomically: a temporary file in the same folder,
 * fsync, rename, fsync of the folder. An existing file stays intact on failure. */
sc_err_t sc_ckpt_save(const char *path, sc_model_t *model, const sc_sgd_t *sgd,
                      const sc_ckpt_meta_t *meta, char *errstr, size_t errstr_size);
/* Loads path into model (whose spec must match: parameters, and state when
 * the checkpoint has it) and sgd velocity (sgd may be NULL); meta (if not
 * NULL) receives the counters. A checkpoint without state (version 1) loaded
 * into a model with state resets that state to its initial value (mean 0,
 * variance 1); *has_state (if not NULL) tells whether the checkpoint had
 * state. Errors are prefixed with path. model and sgd are unchanged on
 * error. */
sc_err_t sc_ckpt_load(const char *path, sc_model_t *model, sc_sgd_t *sgd, sc_ckpt_meta_t *meta,
                      int *has_state, char *errstr, size_t errstr_size);
/* As sc_ckpt_load; *resume receives a copy of the resume section with a NUL
 * after its *resume_len bytes (resume_len may be NULL; the caller frees
 * *resume), or NULL when the checkpoint has none. */
sc_err_t sc_ckpt_load_resume(const char *path, sc_model_t *model, sc_sgd_t *sgd,
                             sc_ckpt_meta_t *meta, int *has_state, char **resume,
                             size_t *resume_len, char *errstr, size_t errstr_size);

/* ---- ONNX files (onnx_file.c) ---- */

/* Encodes model (sc_onnx_encode) and writes it to
 * path atomically (sc_file_write_atomic); *size (if not NULL) receives the
 * file's bytes. Errors start with path. */
sc_err_t sc_onnx_save(const char *path, sc_model_t *model, const sc_onnx_opts_t *opts, size_t *size,
                      char *errstr, size_t errstr_size);

#endif
