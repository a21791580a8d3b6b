/* auth.c — per-signer keys derived from a job key, signing and verified
 * decoding of job records (sc_auth.h). */
#include "sc_auth.h"

#include <stdlib.h>
#include <string.h>

#include "sc_le.h"

void sc_auth_wipe(void *p, size_t n)
{
        volatile uint8_t *v = p; /* stores a compiler keeps */
        for (size_t i = 0; i < n; i++)
                v[i] = 0;
}

void sc_auth_derive(const void *key, size_t keylen, const char *job, uint32_t signer,
                    uint8_t out[32])
{
        /* label NUL job NUL, then u32le(worker) for a worker */
        uint8_t m[20 + SC_AUTH_JOB_MAX + 1 + 4];
        const char *label = signer == SC_AUTH_AGGREGATOR ? "scadles-aggregator" : "scadles-worker";
        size_t ll = strlen(label) + 1, jl = strnlen(job, SC_AUTH_JOB_MAX), n;

        memcpy(m, label, ll);
        memcpy(m + ll, job, jl);
        m[ll + jl] = 0;
        n = ll + jl + 1;
        if (signer != SC_AUTH_AGGREGATOR) {
                sc_le_put32(m + n, signer);
                n += 4;
        }
        sc_wire_hmac_sha256(key, keylen, m, n, NULL, 0, out);
}

sc_err_t sc_auth_init(sc_auth_t *auth, const void *key, size_t keylen, const char *job,
                      int n_workers, char *errstr, size_t errstr_size)
{
        if (keylen < SC_AUTH_MIN_KEY)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "job key of %zu bytes: at least %d are needed", keylen,
                               SC_AUTH_MIN_KEY);
        if (n_workers < 1)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size, "job keys for %d workers",
                               n_workers);
        if (!(auth->worker_keys = malloc((size_t)n_workers * 32)))
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "job keys: out of memory");
        auth->n_workers = n_workers;
        sc_auth_derive(key, keylen, job, SC_AUTH_AGGREGATOR, auth->agg_key);
        for (int w = 0; w < n_workers; w++)
                sc_auth_derive(key, keylen, job, (uint32_t)w, auth->worker_keys + 32 * (size_t)w);
        auth->on = 1;
        return SC_OK;
}

void sc_auth_free(sc_auth_t *auth)
{
        if (!auth)
                return;
        if (auth->worker_keys)
                sc_auth_wipe(auth->worker_keys, (size_t)auth->n_workers * 32);
        free(auth->worker_keys);
        sc_auth_wipe(auth, sizeof(*auth));
}

static const uint8_t *sc_auth_key(const sc_auth_t *auth, uint32_t signer)
{
        if (signer == SC_AUTH_AGGREGATOR)
                return auth->agg_key;
        if (signer >= (uint32_t)auth->n_workers)
                return NULL;
        return auth->worker_keys + 32 * (size_t)signer;
}

sc_err_t sc_auth_sign(const sc_auth_t *auth, sc_buf_t *buf, size_t start, uint32_t signer,
                      char *errstr, size_t errstr_size)
{
        const uint8_t *key;

        if (!auth || !auth->on)
                return SC_OK;
        if (!(key = sc_auth_key(auth, signer)))
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size, "sign: no key for worker %u",
                               signer);
        return sc_wire_sign(buf, start, key, 32, errstr, errstr_size);
}

/* The signer a message claims: its worker field, or the aggregators. */
static int sc_auth_signer(const uint8_t *m, size_t len, sc_wire_type_t type, uint32_t *signer)
{
        size_t at = type == SC_WIRE_CONTROL ? 4 : 0;
        if (type == SC_WIRE_MODEL || type == SC_WIRE_BCAST) {
                *signer = SC_AUTH_AGGREGATOR;
                return 0;
        }
        if (len < SC_WIRE_HDR_SIZE + at + 4 + SC_WIRE_TAG_SIZE)
                return -1;
        *signer = sc_le_get32(m + SC_WIRE_HDR_SIZE + at);
        return 0;
}

sc_err_t sc_auth_decode(const sc_auth_t *auth, const void *data, size_t len, sc_wire_msg_t *msg,
                        uint32_t *signerp, char *errstr, size_t errstr_size)
{
        const uint8_t *m = data, *key;
        sc_wire_type_t type;
        uint32_t signer = 0;
        sc_err_t err;

        if (!auth || !auth->on)
                return sc_wire_decode(data, len, msg, errstr, errstr_size);
        if ((err = sc_wire_check(data, len, &type, errstr, errstr_size)))
                return err;
        if (!(m[6] & SC_WIRE_FLAG_HMAC))
                return sc_errf(SC_ERR_AUTH, errstr, errstr_size,
                               "unsigned %s message (this job requires the HMAC tag)",
                               sc_wire_type_name(type));
        /* a signed frame that passed the check holds the tag; the aggregators'
         * key signs model shards and broadcasts only, whatever a worker field says */
        if (sc_auth_signer(m, len, type, &signer) ||
            (type != SC_WIRE_MODEL && type != SC_WIRE_BCAST && signer == SC_AUTH_AGGREGATOR) ||
            !(key = sc_auth_key(auth, signer)))
                return sc_errf(SC_ERR_AUTH, errstr, errstr_size,
                               "%s message signed as worker %u, not a worker of the job",
                               sc_wire_type_name(type), signer);
        if ((err = sc_wire_decode_auth(data, len, key, 32, msg, errstr, errstr_size)))
                return err;
        if (signerp)
                *signerp = signer;
        return SC_OK;
}
