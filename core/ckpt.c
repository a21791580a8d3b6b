/* ckpt.c — encodes and decodes training checkpoints (format in sc_ckpt.h) in
 * memory, checking every length, the model spec and the CRC32C. */
#include "sc_ckpt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sc_crc32c.h"
#include "sc_le.h"

static const uint8_t sc_ckpt_magic[4] = {'S', 'C', 'C', 'K'};

#define SC_CKPT_FLAG_VELOCITY 1u
#define SC_CKPT_FLAG_STATE 2u   /* version 2 */
#define SC_CKPT_FLAG_RESUME 4u  /* version 3 */
#define SC_CKPT_HEAD_BYTES 12u  /* magic, version, flags */
#define SC_CKPT_META_BYTES 40u  /* 4 x u64, 2 x u32 */
#define SC_CKPT_SPEC_BYTES 20u  /* input, loss, n_layers */
#define SC_CKPT_LAYER_BYTES 32u /* 8 x 4 bytes */

sc_err_t sc_ckpt_encode(const sc_model_spec_t *spec, const sc_ckpt_meta_t *meta,
                        const float *params, const float *velocity, size_t nparams,
                        const float *state, size_t nstate, uint8_t **bufp, size_t *lenp,
                        char *errstr, size_t errstr_size)
{
        *bufp = NULL;
        *lenp = 0;
        if (spec->n_layers < 0 || spec->n_layers > SC_MODEL_MAX_LAYERS)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "checkpoint: model has %d layers, outside [0, %d]", spec->n_layers,
                               SC_MODEL_MAX_LAYERS);
        if (nparams > (SIZE_MAX - 4096) / 8)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "checkpoint: %zu parameters is too many", nparams);
        if (nstate > (SIZE_MAX - 4096) / 8 - nparams) /* nparams <= that bound: no wrap */
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "checkpoint: %zu state values is too many", nstate);
        if (nstate && !state)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "checkpoint: %zu state values announced without a buffer", nstate);
        /* Without state the bytes are exactly version 1's, which older
         * builds read; with state, version 2 (older builds refuse it by its
         * version instead of dropping the statistics). */
        size_t nresume = meta->resume ? meta->resume_len : 0;
        if (nresume > SIZE_MAX / 2 - 4 * (nparams + nstate) * 2 - 4096)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "checkpoint: a resume section of %zu bytes is too long", nresume);
        uint32_t flags = (velocity ? SC_CKPT_FLAG_VELOCITY : 0) |
                         (nstate ? SC_CKPT_FLAG_STATE : 0) | (nresume ? SC_CKPT_FLAG_RESUME : 0);
        uint32_t version = nresume ? 3 : nstate ? 2 : SC_CKPT_VERSION_MIN;
        size_t len = SC_CKPT_HEAD_BYTES + SC_CKPT_META_BYTES + SC_CKPT_SPEC_BYTES +
                     SC_CKPT_LAYER_BYTES * (size_t)spec->n_layers + 8 +
                     4 * nparams * (velocity ? 2 : 1) + (nstate ? 8 + 4 * nstate : 0) +
                     (nresume ? 8 + nresume : 0) + 4;
        uint8_t *buf = malloc(len);
        if (!buf)
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size,
                               "checkpoint: cannot allocate %zu bytes", len);
        sc_le_w_t w = {buf};
        sc_lew_bytes(&w, sc_ckpt_magic, 4);
        sc_lew_u32(&w, version);
        sc_lew_u32(&w, flags);
        sc_lew_u64(&w, meta->step);
        sc_lew_u64(&w, meta->epoch);
        sc_lew_u64(&w, meta->epoch_step);
        sc_lew_u64(&w, meta->seed);
        sc_lew_u32(&w, meta->batch);
        sc_lew_u32(&w, 0);
        sc_lew_u32(&w, (uint32_t)spec->input.c);
        sc_lew_u32(&w, (uint32_t)spec->input.h);
        sc_lew_u32(&w, (uint32_t)spec->input.w);
        sc_lew_u32(&w, (uint32_t)spec->loss);
        sc_lew_u32(&w, (uint32_t)spec->n_layers);
        for (int i = 0; i < spec->n_layers; i++) {
                const sc_layer_spec_t *l = &spec->layers[i];
                sc_lew_u32(&w, (uint32_t)l->kind);
                sc_lew_u32(&w, (uint32_t)l->units);
                sc_lew_u32(&w, (uint32_t)l->filters);
                sc_lew_u32(&w, (uint32_t)l->kernel);
                sc_lew_u32(&w, (uint32_t)l->stride);
                sc_lew_u32(&w, (uint32_t)l->padding);
                sc_lew_f32(&w, l->rate);
                sc_lew_u32(&w, (uint32_t)l->init);
        }
        sc_lew_u64(&w, (uint64_t)nparams);
        for (size_t i = 0; i < nparams; i++)
                sc_lew_f32(&w, params[i]);
        if (velocity)
                for (size_t i = 0; i < nparams; i++)
                        sc_lew_f32(&w, velocity[i]);
        if (nstate) {
                sc_lew_u64(&w, (uint64_t)nstate);
                for (size_t i = 0; i < nstate; i++)
                        sc_lew_f32(&w, state[i]);
        }
        if (nresume) {
                sc_lew_u64(&w, (uint64_t)nresume);
                sc_lew_bytes(&w, meta->resume, nresume);
        }
        sc_lew_u32(&w, sc_crc32c(0, buf, (size_t)(w.p - buf)));
        *bufp = buf;
        *lenp = len;
        return SC_OK;
}

static sc_err_t sc_ckpt_truncated(size_t len, size_t need, char *errstr, size_t errstr_size)
{
        return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                       "checkpoint truncated: %zu bytes, at least %zu expected", len, need);
}

sc_err_t sc_ckpt_parse(sc_ckpt_view_t *view, const void *vbuf, size_t len, char *errstr,
                       size_t errstr_size)
{
        const uint8_t *buf = vbuf;
        size_t need;

        memset(view, 0, sizeof(*view));
        if (len < 4 && len > 0 && !memcmp(buf, sc_ckpt_magic, len))
                return sc_ckpt_truncated(len, SC_CKPT_HEAD_BYTES, errstr, errstr_size);
        if (len < 4 || memcmp(buf, sc_ckpt_magic, 4))
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "not a scadles checkpoint (bad magic)");
        need = SC_CKPT_HEAD_BYTES + SC_CKPT_META_BYTES + SC_CKPT_SPEC_BYTES;
        if (len < 8)
                return sc_ckpt_truncated(len, need, errstr, errstr_size);
        view->version = sc_le_get32(buf + 4);
        if (view->version < SC_CKPT_VERSION_MIN || view->version > SC_CKPT_VERSION)
                return sc_errf(SC_ERR_VERSION, errstr, errstr_size,
                               "checkpoint format version %u; this build reads versions %d to %d",
                               view->version, SC_CKPT_VERSION_MIN, SC_CKPT_VERSION);
        if (len < need)
                return sc_ckpt_truncated(len, need, errstr, errstr_size);
        uint32_t flags = sc_le_get32(buf + 8);
        uint32_t known = SC_CKPT_FLAG_VELOCITY | (view->version >= 2 ? SC_CKPT_FLAG_STATE : 0) |
                         (view->version >= 3 ? SC_CKPT_FLAG_RESUME : 0);
        if (flags & ~known)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "checkpoint has unknown flags 0x%x", flags);
        const uint8_t *p = buf + SC_CKPT_HEAD_BYTES;
        view->meta.step = sc_le_get64(p);
        view->meta.epoch = sc_le_get64(p + 8);
        view->meta.epoch_step = sc_le_get64(p + 16);
        view->meta.seed = sc_le_get64(p + 24);
        view->meta.batch = sc_le_get32(p + 32);
        p += SC_CKPT_META_BYTES;
        sc_model_spec_t *spec = &view->spec;
        spec->input.c = (int)sc_le_get32(p);
        spec->input.h = (int)sc_le_get32(p + 4);
        spec->input.w = (int)sc_le_get32(p + 8);
        uint32_t loss = sc_le_get32(p + 12);
        uint32_t n_layers = sc_le_get32(p + 16);
        p += SC_CKPT_SPEC_BYTES;
        if (loss > SC_LOSS_MSE)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "checkpoint names unknown loss %u", loss);
        spec->loss = (sc_loss_kind_t)loss;
        if (n_layers > SC_MODEL_MAX_LAYERS)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "checkpoint model has %u layers, more than %d", n_layers,
                               SC_MODEL_MAX_LAYERS);
        spec->n_layers = (int)n_layers;
        need += SC_CKPT_LAYER_BYTES * n_layers + 8;
        if (len < need)
                return sc_ckpt_truncated(len, need, errstr, errstr_size);
        for (uint32_t i = 0; i < n_layers; i++, p += SC_CKPT_LAYER_BYTES) {
                sc_layer_spec_t *l = &spec->layers[i];
                uint32_t kind = sc_le_get32(p), init = sc_le_get32(p + 28);
                if (kind >= SC_LAYER__END || init > SC_INIT_XAVIER)
                        return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                                       "checkpoint layers[%u] has unknown kind %u or init %u", i,
                                       kind, init);
                l->kind = (sc_layer_kind_t)kind;
                l->units = (int)sc_le_get32(p + 4);
                l->filters = (int)sc_le_get32(p + 8);
                l->kernel = (int)sc_le_get32(p + 12);
                l->stride = (int)sc_le_get32(p + 16);
                l->padding = (int)sc_le_get32(p + 20);
                l->rate = sc_le_getf32(p + 24);
                l->init = (sc_init_kind_t)init;
                if (!isfinite(l->rate))
                        return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                                       "checkpoint layers[%u] has a non-finite rate", i);
        }
        uint64_t nparams = sc_le_get64(p);
        p += 8;
        size_t copies = (flags & SC_CKPT_FLAG_VELOCITY) ? 2 : 1;
        size_t room = len - need;
        if (nparams > room / (4 * copies))
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "checkpoint truncated: %zu bytes, %llu parameters announced", len,
                               (unsigned long long)nparams);
        need += 4 * copies * (size_t)nparams;
        const uint8_t *state = NULL;
        uint64_t nstate = 0;
        if (flags & SC_CKPT_FLAG_STATE) {
                need += 8;
                if (len < need)
                        return sc_ckpt_truncated(len, need + 4, errstr, errstr_size);
                state = p + 4 * copies * (size_t)nparams;
                nstate = sc_le_get64(state);
                state += 8;
                if (nstate > (len - need) / 4)
                        return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                                       "checkpoint truncated: %zu bytes, %llu state values "
                                       "announced",
                                       len, (unsigned long long)nstate);
                need += 4 * (size_t)nstate;
        }
        const uint8_t *resume = NULL;
        uint64_t nresume = 0;
        if (flags & SC_CKPT_FLAG_RESUME) {
                resume = p + 4 * copies * (size_t)nparams + (state ? 8 + 4 * (size_t)nstate : 0);
                need += 8;
                if (len < need)
                        return sc_ckpt_truncated(len, need + 4, errstr, errstr_size);
                nresume = sc_le_get64(resume);
                resume += 8;
                if (nresume == 0)
                        return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                                       "checkpoint announces an empty resume section");
                if (nresume > len - need)
                        return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                                       "checkpoint truncated: %zu bytes, a resume section of %llu "
                                       "bytes announced",
                                       len, (unsigned long long)nresume);
                need += (size_t)nresume;
        }
        need += 4;
        if (len < need)
                return sc_ckpt_truncated(len, need, errstr, errstr_size);
        if (len > need)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "checkpoint has %zu trailing bytes after its %zu", len - need, need);
        uint32_t crc = sc_crc32c(0, buf, len - 4);
        if (crc != sc_le_get32(buf + len - 4))
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "checkpoint checksum mismatch (stored 0x%08x, computed 0x%08x): "
                               "the data is corrupt",
                               sc_le_get32(buf + len - 4), crc);
        view->nparams = (size_t)nparams;
        view->params = p;
        view->velocity = copies == 2 ? p + 4 * (size_t)nparams : NULL;
        view->nstate = (size_t)nstate;
        view->state = state;
        view->meta.resume = resume;
        view->meta.resume_len = (size_t)nresume;
        return SC_OK;
}

static int sc_ckpt_stride(const sc_layer_spec_t *l)
{
        if (l->stride > 0)
                return l->stride;
        return l->kind == SC_LAYER_MAXPOOL2D ? l->kernel : 1;
}

sc_err_t sc_ckpt_spec_check(const sc_model_spec_t *have, const sc_model_spec_t *want, char *errstr,
                            size_t errstr_size)
{
        if (have->input.c != want->input.c || have->input.h != want->input.h ||
            have->input.w != want->input.w)
                return sc_errf(SC_ERR_SHAPE, errstr, errstr_size,
                               "checkpoint model input is (%d, %d, %d), configured model input "
                               "is (%d, %d, %d)",
                               have->input.c, have->input.h, have->input.w, want->input.c,
                               want->input.h, want->input.w);
        if (have->n_layers != want->n_layers)
                return sc_errf(SC_ERR_SHAPE, errstr, errstr_size,
                               "checkpoint model has %d layers, configured model has %d",
                               have->n_layers, want->n_layers);
        for (int i = 0; i < have->n_layers; i++) {
                const sc_layer_spec_t *a = &have->layers[i], *b = &want->layers[i];
                const char *field = NULL;
                int va = 0, vb = 0;
                if (a->kind != b->kind)
                        return sc_errf(SC_ERR_SHAPE, errstr, errstr_size,
                                       "checkpoint model layers[%d] is %s, configured model "
                                       "layers[%d] is %s",
                                       i, sc_layer_kind_name(a->kind), i,
                                       sc_layer_kind_name(b->kind));
                if (a->kind == SC_LAYER_DENSE && a->units != b->units) {
                        field = "units", va = a->units, vb = b->units;
                } else if (a->kind == SC_LAYER_CONV2D && a->filters != b->filters) {
                        field = "filters", va = a->filters, vb = b->filters;
                } else if ((a->kind == SC_LAYER_CONV2D || a->kind == SC_LAYER_MAXPOOL2D) &&
                           a->kernel != b->kernel) {
                        field = "kernel", va = a->kernel, vb = b->kernel;
                } else if ((a->kind == SC_LAYER_CONV2D || a->kind == SC_LAYER_MAXPOOL2D) &&
                           sc_ckpt_stride(a) != sc_ckpt_stride(b)) {
                        field = "stride", va = sc_ckpt_stride(a), vb = sc_ckpt_stride(b);
                } else if (a->kind == SC_LAYER_CONV2D && a->padding != b->padding) {
                        field = "padding", va = a->padding, vb = b->padding;
                }
                if (field)
                        return sc_errf(SC_ERR_SHAPE, errstr, errstr_size,
                                       "checkpoint model layers[%d] (%s) has %s %d, configured "
                                       "model has %d",
                                       i, sc_layer_kind_name(a->kind), field, va, vb);
        }
        return SC_OK;
}

sc_err_t sc_ckpt_decode(const void *buf, size_t len, const sc_model_spec_t *spec,
                        sc_ckpt_meta_t *meta, float *params, float *velocity, size_t nparams,
                        int *has_velocity, float *state, size_t nstate, int *has_state,
                        char *errstr, size_t errstr_size)
{
        sc_ckpt_view_t view;
        sc_err_t err;

        err = sc_ckpt_parse(&view, buf, len, errstr, errstr_size);
        if (err)
                return err;
        err = sc_ckpt_spec_check(&view.spec, spec, errstr, errstr_size);
        if (err)
                return err;
        if (view.nparams != nparams)
                return sc_errf(SC_ERR_SHAPE, errstr, errstr_size,
                               "checkpoint holds %zu parameters, the model has %zu", view.nparams,
                               nparams);
        if (state && view.state && view.nstate != nstate)
                return sc_errf(SC_ERR_SHAPE, errstr, errstr_size,
                               "checkpoint holds %zu state values (batchnorm running "
                               "statistics), the model has %zu",
                               view.nstate, nstate);
        for (size_t i = 0; i < nparams; i++)
                params[i] = sc_le_getf32(view.params + 4 * i);
        if (velocity) {
                for (size_t i = 0; i < nparams; i++)
                        velocity[i] = view.velocity ? sc_le_getf32(view.velocity + 4 * i) : 0.0f;
        }
        if (state && view.state) {
                for (size_t i = 0; i < nstate; i++)
                        state[i] = sc_le_getf32(view.state + 4 * i);
        }
        if (meta)
                *meta = view.meta;
        if (has_velocity)
                *has_velocity = view.velocity != NULL;
        if (has_state)
                *has_state = view.state != NULL;
        return SC_OK;
}
