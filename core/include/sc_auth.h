/* sc_auth.h — authenticated job records: every record on J.grad, J.model,
 * J.ctl and J.inject carries an HMAC-SHA256 tag (sc_wire.h) under a key
 * derived from the job key for its signer, and readers require it.
 *
 * Keys: worker w signs with HMAC-SHA256(job key, "scadles-worker" NUL job
 * NUL u32le w), the aggregators sign J.model records with HMAC-SHA256(job
 * key, "scadles-aggregator" NUL job NUL): bound to the job's name, so two
 * jobs sharing a key do not accept each other's records. A reader takes the
 * signer from the message (the worker field of an update, samples or
 * control message; the aggregator for a model shard, and only for one), so
 * a worker's key cannot sign for another worker. Anyone
 * holding the job key can derive every key (docs/SECURITY.md). Sans-I/O:
 * the connectors read the key (connectors/file/job_auth.c). */
#ifndef SC_AUTH_H
#define SC_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "sc_buf.h"
#include "sc_err.h"
#include "sc_wire.h"

#define SC_AUTH_AGGREGATOR UINT32_MAX /* signer of model shards */
#define SC_AUTH_MIN_KEY 16            /* bytes */
#define SC_AUTH_JOB_MAX 255           /* bytes of the job name a key is bound to */

typedef struct sc_auth {
        int on; /* 0: records are neither signed nor required to be */
        int n_workers;
        uint8_t agg_key[32];  /* the aggregators' key */
        uint8_t *worker_keys; /* (n_workers x 32) */
} sc_auth_t;

/* Zeroes n bytes of key material at p (stores the compiler keeps). */
void sc_auth_wipe(void *p, size_t n);
/* Derives the key of signer (a worker id or SC_AUTH_AGGREGATOR) in job
 * (its first SC_AUTH_JOB_MAX bytes). */
void sc_auth_derive(const void *key, size_t keylen, const char *job, uint32_t signer,
                    uint8_t out[32]);
/* Turns auth on with the job key (keylen >= SC_AUTH_MIN_KEY) for job's
 * workers 0..n_workers-1; the key is not kept. auth must be zeroed first. */
sc_err_t sc_auth_init(sc_auth_t *auth, const void *key, size_t keylen, const char *job,
                      int n_workers, char *errstr, size_t errstr_size);
/* Accepts a zeroed or freed auth. */
void sc_auth_free(sc_auth_t *auth);
/* Signs the message that starts at buf->data + start and ends buf as
 * signer; nothing when auth is off. */
sc_err_t sc_auth_sign(const sc_auth_t *auth, sc_buf_t *buf, size_t start, uint32_t signer,
                      char *errstr, size_t errstr_size);
/* Decodes a message: with auth off, sc_wire_decode(); with auth on, the
 * message must carry a tag that its signer's key verifies: SC_ERR_AUTH
 * (errstr says unsigned, unknown signer or bad tag) otherwise. *signerp
 * (may be NULL) receives the signer. */
sc_err_t sc_auth_decode(const sc_auth_t *auth, const void *data, size_t len, sc_wire_msg_t *msg,
                        uint32_t *signerp, char *errstr, size_t errstr_size);

#endif
