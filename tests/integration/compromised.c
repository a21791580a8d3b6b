/* compromised.c — test helper for tests/integration/security_compromised.sh:
 * linked into the scadles command (its objects and build/libscadles.a) with
 * -Wl,--wrap=sc_job_update_encode, it makes a worker that holds its genuine
 * job key and sends a scaled gradient, and claims a set sample count:
 *
 *   COMPROMISED_SCALE=S     every update's values times S (e.g. -10)
 *   COMPROMISED_SAMPLES=N   every update claims N samples (scadles weight)
 *
 * Unset, the worker is honest. The updates are then signed with the
 * worker's key as usual: to the aggregator they are genuine. */
#include <stdlib.h>

#include "sc_job.h"

sc_err_t __real_sc_job_update_encode(const sc_job_t *job, sc_codec_t *codec,
                                     const sc_wire_update_t *hdr, const float *vec, sc_rng_t *rng,
                                     sc_buf_t *payload, sc_buf_t *out, char *errstr,
                                     size_t errstr_size);
sc_err_t __wrap_sc_job_update_encode(const sc_job_t *job, sc_codec_t *codec,
                                     const sc_wire_update_t *hdr, const float *vec, sc_rng_t *rng,
                                     sc_buf_t *payload, sc_buf_t *out, char *errstr,
                                     size_t errstr_size);

sc_err_t __wrap_sc_job_update_encode(const sc_job_t *job, sc_codec_t *codec,
                                     const sc_wire_update_t *hdr, const float *vec, sc_rng_t *rng,
                                     sc_buf_t *payload, sc_buf_t *out, char *errstr,
                                     size_t errstr_size)
{
        static float *buf;
        static size_t cap;
        const char *s = getenv("COMPROMISED_SCALE"), *n = getenv("COMPROMISED_SAMPLES");
        sc_wire_update_t h = *hdr;
        size_t b, e;

        sc_job_range(job, (int)hdr->shard, &b, &e);
        if (s && *s) {
                float scale = strtof(s, NULL);
                if (e - b > cap) {
                        float *p = realloc(buf, (e - b) * sizeof(float));
                        if (!p)
                                abort();
                        buf = p;
                        cap = e - b;
                }
                for (size_t i = 0; i < e - b; i++)
                        buf[i] = scale * vec[i];
                vec = buf;
        }
        if (n && *n)
                h.samples = (uint32_t)strtoul(n, NULL, 10);
        return __real_sc_job_update_encode(job, codec, &h, vec, rng, payload, out, errstr,
                                           errstr_size);
}
