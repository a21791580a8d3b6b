/* fuzz_wire.c — libFuzzer target: wire messages as the aggregator and the
 * workers read them. Input: one selector byte (fuzz_server.h; bit 6 set
 * keeps the stored CRCs instead of fixing them), then a run of framed
 * messages. Updates are decoded (codec payload included) and applied to a
 * shard server; model shards restore their server state; broadcasts are
 * taken by a subscriber (message i at offset i); every applied update is
 * followed by a snapshot that must restore into a fresh server. */
#include "fuzz_common.h"
#include "fuzz_server.h"

#include "sc_bcast.h"
#include "sc_codec.h"
#include "sc_wire.h"

static const char sc_fuzz_key[] = "fuzz-job-key";

/* Snapshot, then restore into a new server of the same spec: must succeed. */
static void sc_fuzz_roundtrip(sc_server_t *srv, uint8_t sel)
{
        uint8_t *snap = NULL;
        size_t len = 0;
        char why[256];
        if (sc_server_snapshot(srv, &snap, &len))
                return; /* out of memory */
        sc_server_t *copy = sc_fuzz_server_new(sel);
        if (copy) {
                sc_err_t err = sc_server_restore(copy, snap, len, why, sizeof(why));
                SC_FUZZ_ASSERT_OK(err, "restore of a fresh snapshot", why);
                SC_FUZZ_ASSERT(sc_server_version(copy) == sc_server_version(srv));
                SC_FUZZ_ASSERT(!memcmp(sc_server_params(copy), sc_server_params(srv),
                                       SC_FUZZ_SHARD * sizeof(float)));
                sc_server_destroy(copy);
        }
        free(snap);
}

static void sc_fuzz_update(sc_server_t *srv, uint8_t sel, const sc_wire_update_t *wu)
{
        static uint32_t idx[SC_FUZZ_SHARD];
        static float val[SC_FUZZ_SHARD], dense[SC_FUZZ_SHARD];
        sc_apply_result_t res;
        sc_update_t u;
        char why[256];

        if (sc_server_update_decode(wu, SC_FUZZ_SHARD, idx, val, dense, &u, why, sizeof(why)))
                return;
        if (sc_server_apply(srv, &u, &res, why, sizeof(why)) == SC_OK)
                sc_fuzz_roundtrip(srv, sel);
}

static void sc_fuzz_model(sc_server_t *srv, const sc_wire_model_view_t *m)
{
        char why[256];
        if (m->count <= 4096 && m->params) { /* NULL with PARAMS_IN_STATE */
                float *f = malloc(((size_t)m->count + 1) * sizeof(float));
                if (f) {
                        sc_wire_get_f32s(f, m->params, m->count);
                        free(f);
                }
        }
        for (uint32_t i = 0; i < m->napplied && i < 1024; i++) {
                sc_wire_applied_t a;
                sc_wire_get_applied(m, i, &a);
        }
        if (m->state_len)
                sc_server_restore(srv, m->state, m->state_len, why, sizeof(why));
}

static void sc_fuzz_samples(const sc_wire_samples_view_t *s)
{
        size_t numel = (size_t)s->count * s->c * s->h * s->w;
        if (numel > (1u << 16))
                return;
        float *x = malloc((numel + 1) * sizeof(float));
        int32_t *y = malloc(((size_t)s->count + 1) * sizeof(int32_t));
        if (x && y) {
                sc_wire_get_f32s(x, s->data, numel);
                if (s->labels)
                        sc_wire_get_i32s(y, s->labels, s->count);
        }
        free(x);
        free(y);
}

/* A broadcast follower over the run: message i is at offset i. */
typedef struct sc_fuzz_follow {
        sc_bcast_sub_t sub;
        float view[SC_FUZZ_SHARD];
        int64_t offset;
} sc_fuzz_follow_t;

static void sc_fuzz_bcast(sc_fuzz_follow_t *f, uint8_t sel, const sc_wire_bcast_t *m)
{
        sc_bcast_action_t act;
        int64_t seek;
        char why[256];
        /* selector bit 0: the partition end is far ahead (the catch-up rules) */
        sc_bcast_sub_take(&f->sub, f->view, SC_FUZZ_SHARD, m, f->offset,
                          (sel & 1) ? f->offset + 64 : -1, &act, &seek, why, sizeof(why));
}

/* Decodes one message of len bytes (a private copy: CRC fix-ups write it). */
static void sc_fuzz_message(sc_server_t *srv, sc_fuzz_follow_t *f, uint8_t sel, uint8_t *p,
                            size_t len)
{
        int fix = !(sel & 0x40);
        sc_wire_msg_t msg;
        char why[256];
        sc_err_t err;

        if (fix && len >= SC_WIRE_HDR_SIZE)
                sc_le_put32(p + 12, sc_crc32c(sc_crc32c(0, p, 12), p + SC_WIRE_HDR_SIZE,
                                              len - SC_WIRE_HDR_SIZE));
        int sig = len >= 8 && (p[6] & SC_WIRE_FLAG_HMAC);
        err = sig ? sc_wire_decode_auth(p, len, sc_fuzz_key, sizeof(sc_fuzz_key) - 1, &msg, why,
                                        sizeof(why))
                  : sc_wire_decode(p, len, &msg, why, sizeof(why));
        if (err)
                return;
        if (fix && msg.type == SC_WIRE_MODEL && msg.u.model.state_len >= 4) {
                /* Reach the server state behind its own CRC trailer too. */
                sc_fuzz_fix_trailer((uint8_t *)msg.u.model.state, msg.u.model.state_len);
                sc_le_put32(p + 12, sc_crc32c(sc_crc32c(0, p, 12), p + SC_WIRE_HDR_SIZE,
                                              len - SC_WIRE_HDR_SIZE));
                if (sig)
                        return; /* the tag no longer verifies */
                if (sc_wire_decode(p, len, &msg, why, sizeof(why)))
                        return;
        }
        switch (msg.type) {
        case SC_WIRE_UPDATE:
                sc_fuzz_update(srv, sel, &msg.u.update);
                break;
        case SC_WIRE_MODEL:
                sc_fuzz_model(srv, &msg.u.model);
                break;
        case SC_WIRE_SAMPLES:
                sc_fuzz_samples(&msg.u.samples);
                break;
        case SC_WIRE_BCAST:
                sc_fuzz_bcast(f, sel, &msg.u.bcast);
                break;
        case SC_WIRE_CONTROL: {
                const sc_wire_control_t *c = &msg.u.control;
                (void)sc_wire_control_field(c, SC_WIRE_F_RATE, 0.0);
                if (c->kind == SC_WIRE_CTL_LEAVE || c->kind == SC_WIRE_CTL_JOIN)
                        sc_server_set_live(srv, c->worker, c->kind == SC_WIRE_CTL_JOIN, NULL);
                break;
        }
        default:
                break;
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size < 1)
                return 0;
        uint8_t sel = data[0];
        sc_server_t *srv = sc_fuzz_server_new(sel);
        if (!srv)
                return 0;
        sc_fuzz_follow_t *f = calloc(1, sizeof(*f));
        if (!f) {
                sc_server_destroy(srv);
                return 0;
        }
        sc_bcast_sub_init(&f->sub, 4);
        data++;
        size--;
        while (size > 0) {
                size_t len = size;
                if (size >= SC_WIRE_HDR_SIZE) {
                        uint64_t want = SC_WIRE_HDR_SIZE + (uint64_t)sc_le_get32(data + 8);
                        if (want < len)
                                len = (size_t)want;
                }
                uint8_t *p = sc_fuzz_copy(data, len);
                if (!p)
                        break;
                sc_fuzz_message(srv, f, sel, p, len);
                f->offset++;
                free(p);
                data += len;
                size -= len;
        }
        free(f);
        sc_server_destroy(srv);
        return 0;
}

/* ---- seeds: every codec's update, a model shard carrying a server
 * snapshot, samples, control, and a signed update ---- */

static void sc_fuzz_seed_buf(const char *dir, const char *name, uint8_t sel, const sc_buf_t *b)
{
        uint8_t *p = malloc(b->len + 1);
        if (!p)
                exit(1);
        p[0] = sel;
        memcpy(p + 1, b->data, b->len);
        sc_fuzz_seed(dir, name, p, b->len + 1);
        free(p);
}

static void sc_fuzz_write_seeds(const char *dir)
{
        float g[SC_FUZZ_SHARD];
        sc_rng_t rng;
        char name[64];

        sc_rng_seed(&rng, 7);
        for (int i = 0; i < SC_FUZZ_SHARD; i++)
                g[i] = 0.01f * (float)(i - SC_FUZZ_SHARD / 2) * (i % 3 ? 1.0f : -0.5f);
        for (int kind = 0; kind < SC_SYNC__END; kind++) {
                uint8_t sel = (uint8_t)(kind | ((kind & 1) << 3) | ((kind & 2) ? 0x20 : 0));
                sc_update_kind_t uk = sc_sync_sends_gradients((sc_sync_kind_t)kind)
                                          ? SC_UPDATE_GRAD
                                          : SC_UPDATE_DELTA;
                for (int c = 0; c < SC_CODEC__END; c++) {
                        sc_codec_params_t cp;
                        sc_codec_t *codec = NULL;
                        sc_buf_t b, pay;
                        sc_buf_init(&b);
                        sc_buf_init(&pay);
                        sc_codec_params_default(&cp, (sc_codec_id_t)c);
                        cp.ratio = 0.25;
                        cp.half_values = kind == 1;
                        cp.log8_values = kind == 2;
                        cp.rice_index = kind == 3;
                        if (sc_codec_new(&codec, (sc_codec_id_t)c, &cp, SC_FUZZ_SHARD, NULL, 0,
                                         NULL, 0))
                                continue;
                        for (uint64_t seq = 1; seq <= 3; seq++) {
                                pay.len = 0;
                                if (sc_codec_encode(codec, g, &rng, &pay, NULL, 0))
                                        break;
                                sc_wire_update_t u = {.worker = (uint32_t)(seq % 2),
                                                      .shard = 0,
                                                      .seq = seq,
                                                      .t_read = 0,
                                                      .samples = 32,
                                                      .kind = (sc_wire_update_kind_t)uk,
                                                      .codec = (uint8_t)c,
                                                      .payload = pay.data,
                                                      .payload_len = pay.len};
                                size_t start = b.len;
                                if (sc_wire_encode_update(&b, &u, NULL, 0))
                                        break;
                                if (c == 0 && seq == 3)
                                        sc_wire_sign(&b, start, sc_fuzz_key,
                                                     sizeof(sc_fuzz_key) - 1, NULL, 0);
                        }
                        snprintf(name, sizeof(name), "update-%s-%s", sc_sync_kind_name(kind),
                                 sc_codec_name((sc_codec_id_t)c));
                        sc_fuzz_seed_buf(dir, name, sel, &b);
                        sc_codec_destroy(codec);
                        sc_buf_free(&b);
                        sc_buf_free(&pay);
                }

                /* A model shard whose state is the server's snapshot. */
                sc_server_t *srv = sc_fuzz_server_new(sel);
                uint8_t *snap = NULL;
                size_t slen = 0;
                if (!srv || sc_server_snapshot(srv, &snap, &slen))
                        exit(1);
                sc_wire_applied_t ap[2] = {{0, 3}, {1, 2}};
                sc_wire_model_t m = {.shard = 0,
                                     .version = 3,
                                     .begin = 0,
                                     .count = SC_FUZZ_SHARD,
                                     .grad_offset = 17,
                                     .params = sc_server_params(srv),
                                     .napplied = 2,
                                     .applied = ap,
                                     .state_len = (uint32_t)slen,
                                     .state = snap};
                sc_buf_t b;
                sc_buf_init(&b);
                if (sc_wire_encode_model(&b, &m, NULL, 0))
                        exit(1);
                snprintf(name, sizeof(name), "model-%s", sc_sync_kind_name(kind));
                sc_fuzz_seed_buf(dir, name, sel, &b);
                sc_buf_free(&b);
                free(snap);
                sc_server_destroy(srv);
        }

        int32_t labels[2] = {3, 7};
        float x[2 * 1 * 2 * 3];
        for (size_t i = 0; i < sizeof(x) / sizeof(x[0]); i++)
                x[i] = (float)i * 0.5f;
        sc_wire_samples_t s = {
            .worker = 1, .seq = 9, .count = 2, .c = 1, .h = 2, .w = 3, .labels = labels, .data = x};
        sc_wire_control_t c = {
            .kind = SC_WIRE_CTL_HEARTBEAT, .worker = 0, .timestamp = 123456, .nfields = 3};
        c.fields[0] = (sc_wire_field_t){SC_WIRE_F_RATE, 250.0};
        c.fields[1] = (sc_wire_field_t){SC_WIRE_F_BATCH, 32.0};
        c.fields[2] = (sc_wire_field_t){SC_WIRE_F_LOSS, 0.7};
        sc_wire_control_t leave = {.kind = SC_WIRE_CTL_LEAVE, .worker = 1, .timestamp = 5};
        sc_buf_t b;
        sc_buf_init(&b);
        if (sc_wire_encode_samples(&b, &s, NULL, 0) || sc_wire_encode_control(&b, &c, NULL, 0) ||
            sc_wire_encode_control(&b, &leave, NULL, 0))
                exit(1);
        sc_fuzz_seed_buf(dir, "samples-control", 0x08, &b);

        /* A broadcast: a keyframe (offset 0) and two q8 deltas. */
        sc_bcast_spec_t bs = {.codec = SC_CODEC_Q8, .keyframe_interval = 4};
        sc_bcast_pub_t *pub;
        float params[SC_FUZZ_SHARD];
        sc_wire_applied_t bap = {0, 1};
        sc_codec_params_default(&bs.params, SC_CODEC_Q8);
        if (sc_bcast_pub_new(&pub, &bs, 0, 0, SC_FUZZ_SHARD, NULL, 0, NULL, 0))
                exit(1);
        b.len = 0;
        for (int v = 1; v <= 3; v++) {
                for (int i = 0; i < SC_FUZZ_SHARD; i++)
                        params[i] = (float)(i * v) * 0.01f;
                if (sc_bcast_pub_encode(pub, params, (uint64_t)v, &bap, 1, NULL, &b, NULL, NULL, 0))
                        exit(1);
                if (v == 1)
                        sc_bcast_pub_keyed(pub, 0);
        }
        sc_fuzz_seed_buf(dir, "bcast-q8", 0x00, &b);
        sc_fuzz_seed_buf(dir, "bcast-q8-behind", 0x01, &b);
        sc_bcast_pub_destroy(pub);
        sc_buf_free(&b);
}
