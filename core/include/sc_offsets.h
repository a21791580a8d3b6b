/* sc_offsets.h — per-partition tracking of which consumed record offsets are
 * finished (trained on, dropped or rejected), for committing offsets when
 * records finish out of order: a partition's commit position is the lowest
 * consumed offset not yet finished, or one past the last consumed offset when
 * all are finished (Kafka's "next offset to read" convention).
 *
 * Memory: one entry per outstanding offset (grown in powers of two, never
 * per record); finished entries at the front of a partition are released as
 * the position advances. Not thread-safe. */
#ifndef SC_OFFSETS_H
#define SC_OFFSETS_H

#include <stddef.h>
#include <stdint.h>

#include "sc_err.h"

typedef struct sc_offsets_s sc_offsets_t;

/* A partition and the offset to commit for it. */
typedef struct sc_offsets_commit {
        int32_t partition;
        int64_t offset;
} sc_offsets_commit_t;

sc_err_t sc_offsets_new(sc_offsets_t **offsetsp);
/* Accepts NULL. */
void sc_offsets_destroy(sc_offsets_t *offsets);

/* Records that (partition, offset) was consumed and is outstanding. Offsets
 * of one partition must strictly increase (gaps are fine); otherwise
 * SC_ERR_STATE (call sc_offsets_forget() after seeking back or reassignment).
 * partition >= 0, offset >= 0. *epoch (if not NULL) receives the partition's
 * epoch, which sc_offsets_done() must be given back. */
sc_err_t sc_offsets_track(sc_offsets_t *offsets, int32_t partition, int64_t offset, uint32_t *epoch,
                          char *errstr, size_t errstr_size);

/* Marks an outstanding offset finished. SC_ERR_STATE if it is not
 * outstanding (never tracked, already finished, or tracked in an earlier
 * epoch of the partition, i.e. before sc_offsets_forget()). */
sc_err_t sc_offsets_done(sc_offsets_t *offsets, int32_t partition, int64_t offset, uint32_t epoch,
                         char *errstr, size_t errstr_size);

/* The partition's commit position in *next. SC_ERR_AGAIN if nothing of the
 * partition was tracked since it was created or forgotten. */
sc_err_t sc_offsets_position(const sc_offsets_t *offsets, int32_t partition, int64_t *next);

/* Writes up to max partitions whose commit position advanced since they were
 * last reported here, in increasing partition order, and marks them
 * reported. Returns how many were written; call again while it returns max. */
size_t sc_offsets_changed(sc_offsets_t *offsets, sc_offsets_commit_t *out, size_t max);

/* Outstanding offsets of one partition, or of all (partition < 0). */
size_t sc_offsets_outstanding(const sc_offsets_t *offsets, int32_t partition);

/* The partition's current epoch, 0 if it is not tracked. */
uint32_t sc_offsets_epoch(const sc_offsets_t *offsets, int32_t partition);

/* Forgets a partition (revoked, or about to be re-read from an earlier
 * offset): its outstanding offsets are no longer tracked and later done()
 * calls for them fail with SC_ERR_STATE, even once the partition is tracked
 * again (a new epoch). Returns how many were outstanding. */
size_t sc_offsets_forget(sc_offsets_t *offsets, int32_t partition);

/* The last tracked offset of partition, -1 if none. */
int64_t sc_offsets_last(const sc_offsets_t *offsets, int32_t partition);
/* The tracked partitions (something consumed), in increasing order: writes
 * up to max of them, returns how many there are. */
size_t sc_offsets_partitions(const sc_offsets_t *offsets, int32_t *out, size_t max);
/* The finished offsets of partition above its commit position (finished out
 * of order), increasing: writes up to max, returns how many there are.
 * With the position they say exactly which consumed records are finished. */
size_t sc_offsets_finished(const sc_offsets_t *offsets, int32_t partition, int64_t *out,
                           size_t max);

#endif
