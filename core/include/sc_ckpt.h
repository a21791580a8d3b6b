/* sc_ckpt.h — training checkpoints: a versioned little-endian binary format
 * holding a copy of the model spec, step/epoch counters, the parameters, the
 * optimizer velocity and the model's non-trainable state (batchnorm running
 * statistics), closed by a CRC32C.
 *
 * Layout (integers little-endian, floats IEEE-754 binary32 LE):
 *   "SCCK"  u32 version  u32 flags (bit 0: velocity present,
 *                                   bit 1: state present, version 2 only)
 *   meta:   u64 step  u64 epoch  u64 epoch_step  u64 seed  u32 batch  u32 0
 *   spec:   i32 input c, h, w  u32 loss  u32 n_layers
 *           n_layers x (u32 kind, i32 units, filters, kernel, stride,
 *                       padding, f32 rate, u32 init)
 *   u64 nparams  f32 params[nparams]  [f32 velocity[nparams]]
 *   [u64 nstate  f32 state[nstate]]            (flags bit 1)
 *   [u64 nresume  u8 resume[nresume]]          (flags bit 2, version 3 only)
 *   u32 crc32c of every byte before it
 *
 * Version 2 adds only the state section, version 3 only the resume section
 * (what a worker needs to go on from the checkpoint: the records its model
 * holds, as JSON, docs/STREAMS.md). Each file is written in the oldest
 * version that holds its sections: without state and resume, version 1,
 * byte for byte what earlier builds wrote and read; earlier builds refuse a
 * newer one by its version. This build reads all three; a version 1
 * checkpoint loaded into a model with state leaves that state at its
 * initial value (sc_ckpt_load resets it).
 *
 * The encode/decode functions work on memory (core is sans-I/O); files are
 * read and written atomically by connectors/file/ckpt_file.c (sc_ckpt_save,
 * sc_ckpt_load, declared in connectors/file/sc_file.h). */
#ifndef SC_CKPT_H
#define SC_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include "sc_err.h"
#include "sc_nn.h"
#include "sc_optim.h"

#define SC_CKPT_VERSION 3     /* newest version read and written */
#define SC_CKPT_VERSION_MIN 1 /* oldest version read (written when there is no state) */

/* Where training stands. */
typedef struct sc_ckpt_meta {
        uint64_t step;       /* optimizer steps taken in total */
        uint64_t epoch;      /* epochs completed */
        uint64_t epoch_step; /* steps taken into the epoch in progress (0 at a boundary) */
        uint64_t seed;       /* run seed (decides the shuffle order of each epoch) */
        uint32_t batch;      /* batch size epoch_step counts in */
        /* The resume section: encode stores it when resume_len > 0; parse and
         * decode point it into their buffer (sc_ckpt_load: NULL, see
         * sc_ckpt_load_resume). */
        const uint8_t *resume;
        size_t resume_len;
} sc_ckpt_meta_t;

/* Encodes a checkpoint into a new buffer (*bufp, *lenp; caller frees
 * *bufp). params and velocity are (nparams) floats; velocity may be NULL
 * (not stored). state is (nstate) floats (sc_model_state); nstate 0 stores
 * none (a version 1 checkpoint). */
sc_err_t sc_ckpt_encode(const sc_model_spec_t *spec, const sc_ckpt_meta_t *meta,
                        const float *params, const float *velocity, size_t nparams,
                        const float *state, size_t nstate, uint8_t **bufp, size_t *lenp,
                        char *errstr, size_t errstr_size);

/* A validated checkpoint, pointing into the buffer it was parsed from. */
typedef struct sc_ckpt_view {
        uint32_t version;
        sc_model_spec_t spec;
        sc_ckpt_meta_t meta;
        size_t nparams;
        const uint8_t *params;   /* (nparams) f32 LE */
        const uint8_t *velocity; /* (nparams) f32 LE, or NULL when not stored */
        size_t nstate;
        const uint8_t *state; /* (nstate) f32 LE, or NULL when not stored */
} sc_ckpt_view_t;

/* Checks magic, version, every length and the CRC32C of buf. Errors:
 * SC_ERR_CORRUPT (not a checkpoint, truncated, checksum mismatch, bad field),
 * SC_ERR_VERSION (a version this build does not read). */
sc_err_t sc_ckpt_parse(sc_ckpt_view_t *view, const void *buf, size_t len, char *errstr,
                       size_t errstr_size);

/* SC_OK when a checkpoint of spec `have` loads into a model of spec `want`
 * (same input, layer kinds and shape-deciding fields; dropout rate, init and
 * loss may differ); else SC_ERR_SHAPE with the first difference. */
sc_err_t sc_ckpt_spec_check(const sc_model_spec_t *have, const sc_model_spec_t *want, char *errstr,
                            size_t errstr_size);

/* Parses buf, checks it against spec (sc_ckpt_spec_check), nparams and,
 * when state is not NULL and the checkpoint stores state, nstate
 * (SC_ERR_SHAPE if either differs), then writes params (nparams floats),
 * when velocity is not NULL velocity (zeros if the checkpoint has none),
 * and when state is not NULL and the checkpoint stores state, state (nstate
 * floats; left as it is otherwise: state NULL ignores the section). *has_velocity and *has_state
 * (if not NULL) say whether the checkpoint stored them. Nothing is written on error. */
sc_err_t sc_ckpt_decode(const void *buf, size_t len, const sc_model_spec_t *spec,
                        sc_ckpt_meta_t *meta, float *params, float *velocity, size_t nparams,
                        int *has_velocity, float *state, size_t nstate, int *has_state,
                        char *errstr, size_t errstr_size);

#endif
