/* bcast.c — the model broadcast's publisher (view, deltas with server-side
 * error feedback, keyframes) and subscriber (apply, catch-up decisions). */
#include "sc_bcast.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct sc_bcast_pub {
        sc_bcast_spec_t spec;
        uint32_t shard;
        uint64_t begin;
        size_t n;
        sc_codec_t *delta, *key; /* downlink codec; dense none for keyframes */
        float *view, *diff;      /* (n) */
        int has;                 /* view valid */
        uint64_t version;        /* of the view */
        uint64_t generation;     /* of this owner (sc_bcast_pub_generation) */
        double rate_sum;         /* carried by every message (sc_bcast_pub_rate_sum) */
        uint32_t since_key;      /* deltas since the last keyframe */
        int64_t key_offset;      /* of the last keyframe, -1 until its report */
        sc_buf_t payload;
};

void sc_bcast_spec_conf(sc_bcast_spec_t *spec, const sc_conf_job_t *job)
{
        memset(spec, 0, sizeof(*spec));
        spec->codec = job->downlink;
        spec->keyframe_interval = (uint32_t)job->keyframe_interval;
        sc_codec_params_default(&spec->params, spec->codec);
        if (job->downlink_ratio > 0)
                spec->params.ratio = job->downlink_ratio;
        spec->params.half_values = job->downlink_half;
}

sc_err_t sc_bcast_pub_new(sc_bcast_pub_t **pubp, const sc_bcast_spec_t *spec, uint32_t shard,
                          uint64_t begin, size_t n, const sc_tensor_view_t *views, int nviews,
                          char *errstr, size_t errstr_size)
{
        sc_codec_params_t cp = spec->params;
        sc_bcast_pub_t *pub;
        sc_err_t err;

        *pubp = NULL;
        if (n == 0 || n > UINT32_MAX || spec->keyframe_interval < 1)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "broadcast: shard of %zu floats, keyframe interval %u", n,
                               spec->keyframe_interval);
        if (!(pub = calloc(1, sizeof(*pub))))
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
        pub->spec = *spec;
        pub->shard = shard;
        pub->begin = begin;
        pub->n = n;
        pub->key_offset = -1;
        cp.error_feedback = 0; /* params - view carries what was not sent */
        if ((err = sc_codec_new(&pub->delta, spec->codec, &cp, n, views, nviews, errstr,
                                errstr_size)) ||
            (err = sc_codec_new(&pub->key, SC_CODEC_NONE, NULL, n, NULL, 0, errstr, errstr_size)))
                goto fail;
        if (!(pub->view = calloc(n, sizeof(float))) || !(pub->diff = malloc(n * sizeof(float)))) {
                err = sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
                goto fail;
        }
        *pubp = pub;
        return SC_OK;
fail:
        sc_bcast_pub_destroy(pub);
        return err;
}

sc_err_t sc_bcast_pub_new_model(sc_bcast_pub_t **pubp, const sc_bcast_spec_t *spec, uint32_t shard,
                                const sc_model_t *model, size_t begin, size_t end, char *errstr,
                                size_t errstr_size)
{
        int nt = sc_model_ntensors(model);
        sc_tensor_view_t *views = calloc((size_t)nt + 1, sizeof(*views));
        sc_tensor_view_t *clip = calloc((size_t)nt + 1, sizeof(*clip));
        sc_err_t err;

        *pubp = NULL;
        if (!views || !clip) {
                err = sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
        } else {
                for (int i = 0; i < nt; i++)
                        views[i] = *sc_model_tensor(model, i);
                int nv = sc_codec_clip_views(views, nt, begin, end, clip);
                err = sc_bcast_pub_new(pubp, spec, shard, begin, end - begin, clip, nv, errstr,
                                       errstr_size);
        }
        free(views);
        free(clip);
        return err;
}

void sc_bcast_pub_destroy(sc_bcast_pub_t *pub)
{
        if (!pub)
                return;
        sc_codec_destroy(pub->delta);
        sc_codec_destroy(pub->key);
        free(pub->view);
        free(pub->diff);
        sc_buf_free(&pub->payload);
        free(pub);
}

void sc_bcast_pub_generation(sc_bcast_pub_t *pub, uint64_t generation)
{
        if (generation != pub->generation)
                sc_bcast_pub_reset(pub); /* a new owner's view starts with a keyframe */
        pub->generation = generation;
}

void sc_bcast_pub_rate_sum(sc_bcast_pub_t *pub, double rate_sum)
{
        /* none for 0 or NaN; a sum past the wire's limit is sent as the limit */
        pub->rate_sum = rate_sum > 0 ? fmin(rate_sum, SC_WIRE_RATE_MAX) : 0.0;
}

int sc_bcast_pub_key_due(const sc_bcast_pub_t *pub)
{
        return !pub->has || pub->since_key >= pub->spec.keyframe_interval;
}

int sc_bcast_pub_delta_ready(const sc_bcast_pub_t *pub)
{
        return pub->has && pub->key_offset >= 0;
}

void sc_bcast_pub_keyed(sc_bcast_pub_t *pub, int64_t offset)
{
        pub->key_offset = offset;
}

void sc_bcast_pub_reset(sc_bcast_pub_t *pub)
{
        pub->has = 0;
        pub->key_offset = -1;
}

int sc_bcast_pub_current(const sc_bcast_pub_t *pub, uint64_t version)
{
        return pub->has && pub->version == version;
}

int sc_bcast_pub_exact(const sc_bcast_pub_t *pub, uint64_t version)
{
        return sc_bcast_pub_current(pub, version) && pub->since_key == 0;
}

const float *sc_bcast_pub_view(const sc_bcast_pub_t *pub)
{
        return pub->view;
}

uint64_t sc_bcast_pub_version(const sc_bcast_pub_t *pub)
{
        return pub->version;
}

/* view := decoded keyframe, or view += decoded delta: the one code path the
 * subscriber runs too, so both ends hold the same bits. */
static sc_err_t sc_bcast_apply(float *view, size_t n, sc_wire_bcast_kind_t kind,
                               const uint8_t *payload, size_t len, char *errstr, size_t errstr_size)
{
        if (kind == SC_WIRE_BCAST_KEY) {
                sc_codec_info_t info;
                sc_err_t err = sc_codec_payload_info(payload, len, &info, errstr, errstr_size);
                if (err)
                        return err;
                if (info.codec != SC_CODEC_NONE || info.format != SC_CODEC_FMT_DENSE || info.n != n)
                        return sc_errf(SC_ERR_DECODE, errstr, errstr_size,
                                       "broadcast: keyframe payload is not %zu dense floats", n);
                memset(view, 0, n * sizeof(float));
        }
        return sc_codec_decode_add(payload, len, view, n, 1.0f, errstr, errstr_size);
}

sc_err_t sc_bcast_pub_encode(sc_bcast_pub_t *pub, const float *params, uint64_t version,
                             const sc_wire_applied_t *applied, uint32_t napplied, sc_rng_t *rng,
                             sc_buf_t *out, sc_wire_bcast_kind_t *kindp, char *errstr,
                             size_t errstr_size)
{
        int key = sc_bcast_pub_key_due(pub);
        sc_err_t err;

        if (!key && pub->key_offset < 0)
                return sc_errf(SC_ERR_STATE, errstr, errstr_size,
                               "broadcast shard %u: the keyframe's offset is not known yet",
                               pub->shard);
        if (!key && version <= pub->version)
                return sc_errf(SC_ERR_STATE, errstr, errstr_size,
                               "broadcast shard %u: version %llu is not after the view's %llu",
                               pub->shard, (unsigned long long)version,
                               (unsigned long long)pub->version);
        pub->payload.len = 0;
        if (key) {
                err = sc_codec_encode(pub->key, params, NULL, &pub->payload, errstr, errstr_size);
        } else {
                for (size_t i = 0; i < pub->n; i++)
                        pub->diff[i] = params[i] - pub->view[i];
                err =
                    sc_codec_encode(pub->delta, pub->diff, rng, &pub->payload, errstr, errstr_size);
        }
        if (err)
                return err;
        sc_wire_bcast_t m = {.shard = pub->shard,
                             .kind = key ? SC_WIRE_BCAST_KEY : SC_WIRE_BCAST_DELTA,
                             .generation = pub->generation,
                             .rate_sum = pub->rate_sum,
                             .version = version,
                             .base = key ? 0 : pub->version,
                             .key_offset = key ? -1 : pub->key_offset,
                             .begin = pub->begin,
                             .count = (uint32_t)pub->n,
                             .napplied = napplied,
                             .applied = applied,
                             .payload = pub->payload.data,
                             .payload_len = pub->payload.len};
        if ((err = sc_wire_encode_bcast(out, &m, errstr, errstr_size)))
                return err;
        if ((err = sc_bcast_apply(pub->view, pub->n, m.kind, pub->payload.data, pub->payload.len,
                                  errstr, errstr_size))) {
                sc_bcast_pub_reset(pub); /* cannot happen for our own payload; be safe */
                return err;
        }
        pub->has = 1;
        pub->version = version;
        if (key) {
                pub->since_key = 0;
                pub->key_offset = -1;
        } else {
                pub->since_key++;
        }
        if (kindp)
                *kindp = m.kind;
        return SC_OK;
}

/* ---- subscriber ---------------------------------------------------------- */

void sc_bcast_sub_init(sc_bcast_sub_t *sub, uint32_t lag)
{
        memset(sub, 0, sizeof(*sub));
        sub->chain = sub->probe_from = sub->sought = -1;
        sub->lag = lag ? lag : 1;
}

static sc_bcast_action_t sc_bcast_seek(sc_bcast_sub_t *sub, int64_t to, int64_t *seekp)
{
        sub->seeks++;
        sub->next = to;
        *seekp = to;
        return SC_BCAST_SEEK;
}

/* -1, 0 or 1 as m's (generation, version) is below, equal to or above the
 * view's: the order of the shard's states, whatever the records' offsets. */
static int sc_bcast_order(const sc_bcast_sub_t *sub, const sc_wire_bcast_t *m)
{
        if (!sub->has)
                return 1;
        if (m->generation != sub->generation)
                return m->generation > sub->generation ? 1 : -1;
        if (m->version != sub->version)
                return m->version > sub->version ? 1 : -1;
        return 0;
}

/* The decision for a valid keyframe m at offset: installed when it is newer
 * than the view, or as new and sought (a delta of its chain sent the reader
 * to it); an older one (a replay, or a deposed owner's) is refused. */
static sc_bcast_action_t sc_bcast_decide_key(sc_bcast_sub_t *sub, const sc_wire_bcast_t *m,
                                             int64_t offset, int64_t end, int64_t *seekp)
{
        int order = sc_bcast_order(sub, m);
        if (order > 0 || (order == 0 && offset == sub->sought))
                return SC_BCAST_APPLIED;
        if (order < 0)
                sub->rollbacks++;
        if (sub->probe_from >= 0) { /* looked at the end for a newer chain: none */
                int64_t back = sub->probe_from;
                sub->probe_from = -1;
                sub->no_probe_before = end;
                return sc_bcast_seek(sub, back, seekp);
        }
        return SC_BCAST_SKIP;
}

/* The decision for a valid message m at offset (the view untouched). */
static sc_bcast_action_t sc_bcast_decide(sc_bcast_sub_t *sub, const sc_wire_bcast_t *m,
                                         int64_t offset, int64_t end, int64_t *seekp)
{
        if (m->kind == SC_WIRE_BCAST_KEY)
                return sc_bcast_decide_key(sub, m, offset, end, seekp);
        if (sub->probe_from < 0 && end > offset + 1 && offset >= sub->no_probe_before &&
            end - 1 - offset >= (int64_t)sub->lag &&
            (!sub->has || end - 1 - sub->chain > (int64_t)sub->lag)) {
                sub->probe_from = offset;
                return sc_bcast_seek(sub, end - 1, seekp);
        }
        if (sub->has && m->key_offset == sub->chain && m->generation == sub->generation) {
                if (m->base == sub->version)
                        return SC_BCAST_APPLIED;
                if (m->base < sub->version)
                        return SC_BCAST_SKIP;
                if (sub->probe_from >= 0) { /* no newer keyframe: back to where we were */
                        int64_t back = sub->probe_from;
                        sub->probe_from = -1;
                        sub->no_probe_before = end;
                        return sc_bcast_seek(sub, back, seekp);
                }
                sub->gaps++;
                return SC_BCAST_SKIP;
        }
        if (sc_bcast_order(sub, m) > 0 && m->key_offset != sub->sought) {
                sub->probe_from = -1;
                sub->sought = m->key_offset;
                return sc_bcast_seek(sub, m->key_offset, seekp);
        }
        if (sub->probe_from >= 0) {
                int64_t back = sub->probe_from;
                sub->probe_from = -1;
                sub->no_probe_before = end;
                return sc_bcast_seek(sub, back, seekp);
        }
        return SC_BCAST_SKIP; /* an older chain, or a keyframe that could not be read */
}

sc_err_t sc_bcast_sub_take(sc_bcast_sub_t *sub, float *view, size_t n, const sc_wire_bcast_t *m,
                           int64_t offset, int64_t end, sc_bcast_action_t *actp, int64_t *seekp,
                           char *errstr, size_t errstr_size)
{
        sc_bcast_action_t act;
        sc_err_t err;

        *actp = SC_BCAST_SKIP;
        *seekp = -1;
        if (m->count != n)
                return sc_errf(SC_ERR_DECODE, errstr, errstr_size,
                               "broadcast shard %u at offset %lld: %u floats, the shard has %zu",
                               m->shard, (long long)offset, m->count, n);
        if (m->kind == SC_WIRE_BCAST_DELTA && m->key_offset >= offset)
                return sc_errf(SC_ERR_DECODE, errstr, errstr_size,
                               "broadcast shard %u at offset %lld: delta names keyframe offset "
                               "%lld, not before its own",
                               m->shard, (long long)offset, (long long)m->key_offset);
        act = sc_bcast_decide(sub, m, offset, end, seekp);
        if (act == SC_BCAST_APPLIED) {
                if ((err = sc_bcast_apply(view, n, m->kind, m->payload, m->payload_len, errstr,
                                          errstr_size))) {
                        if (m->kind == SC_WIRE_BCAST_KEY)
                                sub->has = 0; /* validated first: cannot be half-written */
                        sub->next = offset + 1;
                        return err;
                }
                if (m->kind == SC_WIRE_BCAST_KEY) {
                        sub->has = 1;
                        sub->generation = m->generation;
                        sub->chain = offset;
                        sub->sought = -1;
                        sub->probe_from = -1;
                        sub->keyframes++;
                } else {
                        sub->deltas++;
                }
                sub->version = m->version;
        } else if (act == SC_BCAST_SKIP) {
                sub->skipped++;
        }
        if (act != SC_BCAST_SEEK)
                sub->next = offset + 1;
        *actp = act;
        return SC_OK;
}

uint32_t sc_bcast_applied(const sc_server_t *srv, sc_wire_applied_t *out)
{
        uint32_t na = 0;
        for (int w = 0; w < sc_server_spec(srv)->sync.n_workers; w++) {
                uint64_t s = sc_server_applied_seq(srv, (uint32_t)w);
                if (s)
                        out[na++] = (sc_wire_applied_t){.worker = (uint32_t)w, .seq = s};
        }
        return na;
}
