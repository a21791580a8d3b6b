/* forge.c — test helper for tests/integration/security_attacks.sh: writes one
 * hostile wire message to a file (kcat produces it), or checks a J.bcast
 * record read back. Built by the test against build/libscadles.a.
 *
 *   forge update OUT WORKER SHARD SEQ SAMPLES COUNT VALUE SIGNER KEYFILE
 *       a dense update (codec none) of COUNT floats, the first VALUE, the
 *       rest 0; SIGNER: "none" (unsigned) or the worker id whose key signs
 *   forge dos OUT WORKER SHARD SEQ SIGNER KEYFILE
 *       an update whose payload is the 20-byte sparse k = n = 2^32-1 payload
 *   forge keyframe OUT SHARD VERSION BEGIN COUNT FILL SIGNER KEYFILE
 *       a broadcast keyframe of COUNT parameters, each FILL (0, nan, ...);
 *       SIGNER "none" or "agg"
 *   forge heartbeat OUT WORKER SIGNER KEYFILE
 *       a J.ctl heartbeat of WORKER stamped now (wall clock, microseconds)
 *   forge check OUT_UNUSED IN SHARD COUNT KEYFILE
 *       verifies the J.bcast record in IN (aggregators' key), prints its
 *       kind and version and exits 1 unless it carries COUNT finite values
 * Keys are those of the job named by $FORGE_JOB (default "dj"). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sc_auth.h"
#include "sc_codec.h"
#include "sc_wire.h"

static size_t read_file(const char *path, uint8_t *buf, size_t cap)
{
        FILE *f = fopen(path, "rb");
        size_t n;
        if (!f) {
                perror(path);
                exit(2);
        }
        n = fread(buf, 1, cap, f);
        fclose(f);
        return n;
}

static size_t read_key(const char *path, uint8_t *key)
{
        size_t n = read_file(path, key, 4096);
        while (n > 0 && (key[n - 1] == '\n' || key[n - 1] == '\r'))
                n--;
        return n;
}

/* The job the keys are bound to: $FORGE_JOB, else "dj". */
static const char *job_name(void)
{
        const char *j = getenv("FORGE_JOB");
        return j && *j ? j : "dj";
}

static void sign(sc_buf_t *buf, const char *signer, const char *keyfile)
{
        uint8_t key[4096], k[32];
        char err[256];
        size_t kl;
        if (!strcmp(signer, "none"))
                return;
        kl = read_key(keyfile, key);
        sc_auth_derive(key, kl, job_name(),
                       !strcmp(signer, "agg") ? SC_AUTH_AGGREGATOR : (uint32_t)atoi(signer), k);
        if (sc_wire_sign(buf, 0, k, 32, err, sizeof(err))) {
                fprintf(stderr, "forge: %s\n", err);
                exit(2);
        }
}

static void write_out(const char *path, const sc_buf_t *buf)
{
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(buf->data, 1, buf->len, f) != buf->len || fclose(f)) {
                perror(path);
                exit(2);
        }
}

static void update(sc_buf_t *buf, char **a, const uint8_t *payload, size_t plen)
{
        char err[256];
        sc_wire_update_t u = {.worker = (uint32_t)atoi(a[0]),
                              .shard = (uint32_t)atoi(a[1]),
                              .seq = strtoull(a[2], NULL, 10),
                              .samples = (uint32_t)strtoul(a[3], NULL, 10),
                              .kind = SC_WIRE_GRAD,
                              .codec = payload[0],
                              .payload = payload,
                              .payload_len = plen};
        if (sc_wire_encode_update(buf, &u, err, sizeof(err))) {
                fprintf(stderr, "forge: %s\n", err);
                exit(2);
        }
}

int main(int argc, char **argv)
{
        static const uint8_t dos[20] = {0x01, 0x01, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                        0xff, 0xff, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
        sc_buf_t buf;
        char err[256];

        sc_buf_init(&buf);
        if (argc == 11 && !strcmp(argv[1], "update")) {
                uint32_t n = (uint32_t)atoi(argv[7]);
                float v = strtof(argv[8], NULL);
                uint8_t *p = calloc(8 + 4 * (size_t)n, 1);
                char *ua[4] = {argv[3], argv[4], argv[5], argv[6]};
                p[0] = 0; /* codec none, dense */
                p[1] = 0;
                for (int i = 0; i < 4; i++)
                        p[4 + i] = (uint8_t)(n >> (8 * i));
                memcpy(p + 8, &v, 4);
                update(&buf, ua, p, 8 + 4 * (size_t)n);
                sign(&buf, argv[9], argv[10]);
                free(p);
        } else if (argc == 8 && !strcmp(argv[1], "dos")) {
                char *ua[4] = {argv[3], argv[4], argv[5], "1"};
                update(&buf, ua, dos, sizeof(dos));
                sign(&buf, argv[6], argv[7]);
        } else if (argc == 10 && !strcmp(argv[1], "keyframe")) {
                uint32_t n = (uint32_t)atoi(argv[6]);
                float fill = strtof(argv[7], NULL);
                uint8_t *p = calloc(8 + 4 * (size_t)n, 1); /* codec none, dense */
                for (int i = 0; i < 4; i++)
                        p[4 + i] = (uint8_t)(n >> (8 * i));
                for (uint32_t i = 0; i < n; i++)
                        memcpy(p + 8 + 4 * (size_t)i, &fill, 4);
                sc_wire_bcast_t m = {.shard = (uint32_t)atoi(argv[3]),
                                     .kind = SC_WIRE_BCAST_KEY,
                                     .version = strtoull(argv[4], NULL, 10),
                                     .key_offset = -1,
                                     .begin = strtoull(argv[5], NULL, 10),
                                     .count = n,
                                     .payload = p,
                                     .payload_len = 8 + 4 * (size_t)n};
                if (sc_wire_encode_bcast(&buf, &m, err, sizeof(err))) {
                        fprintf(stderr, "forge: %s\n", err);
                        return 2;
                }
                sign(&buf, argv[8], argv[9]);
                free(p);
        } else if (argc == 6 && !strcmp(argv[1], "heartbeat")) {
                struct timespec ts;
                timespec_get(&ts, TIME_UTC);
                sc_wire_control_t c = {.kind = SC_WIRE_CTL_HEARTBEAT,
                                       .worker = (uint32_t)atoi(argv[3]),
                                       .timestamp =
                                           (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000};
                if (sc_wire_encode_control(&buf, &c, err, sizeof(err))) {
                        fprintf(stderr, "forge: %s\n", err);
                        return 2;
                }
                sign(&buf, argv[4], argv[5]);
        } else if (argc == 7 && !strcmp(argv[1], "check")) {
                static uint8_t rec[1 << 22];
                uint8_t key[4096];
                size_t len = read_file(argv[3], rec, sizeof(rec)), kl = read_key(argv[6], key);
                sc_auth_t auth = {0};
                sc_wire_msg_t msg;
                if (sc_auth_init(&auth, key, kl, job_name(), 2, err, sizeof(err)) ||
                    sc_auth_decode(&auth, rec, len, &msg, NULL, err, sizeof(err)) ||
                    msg.type != SC_WIRE_BCAST) {
                        fprintf(stderr, "forge check: %s\n", err);
                        return 1;
                }
                const sc_wire_bcast_t *v = &msg.u.bcast;
                float *x = calloc(v->count ? v->count : 1, sizeof(float));
                int finite = x && v->count == (uint32_t)atoi(argv[5]) &&
                             v->shard == (uint32_t)atoi(argv[4]) &&
                             !sc_codec_decode_add(v->payload, v->payload_len, x, v->count, 1.0f,
                                                  err, sizeof(err));
                for (uint32_t i = 0; finite && i < v->count; i++)
                        finite = isfinite(x[i]);
                printf("shard %u %s version %llu count %u finite %d\n", v->shard,
                       v->kind == SC_WIRE_BCAST_KEY ? "keyframe" : "delta",
                       (unsigned long long)v->version, v->count, finite);
                free(x);
                sc_auth_free(&auth);
                return finite ? 0 : 1;
        } else {
                fprintf(stderr, "usage: see forge.c\n");
                return 2;
        }
        write_out(argv[2], &buf);
        sc_buf_free(&buf);
        return 0;
}
