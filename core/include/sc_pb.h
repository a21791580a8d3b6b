/* sc_pb.h — a minimal protocol-buffers writer (the wire format only: varints,
 * fixed32, length-delimited fields and packed repeated scalars) that appends
 * to an sc_buf. Enough to write messages such as ONNX models; no reader, no
 * schema. Sans-I/O.
 *
 * Errors are sticky: after the first failure (out of memory, a message
 * larger than SC_PB_MAX_LEN) every call is a no-op and sc_pb_err() returns
 * that error, so a writer checks once at the end. */
#ifndef SC_PB_H
#define SC_PB_H

#include <stddef.h>
#include <stdint.h>

#include "sc_buf.h"
#include "sc_err.h"

/* Wire types. */
#define SC_PB_VARINT 0
#define SC_PB_FIXED64 1
#define SC_PB_LEN 2
#define SC_PB_FIXED32 5

/* Largest length-delimited field written (bytes): protobuf parsers refuse
 * messages of 2 GiB and more. */
#define SC_PB_MAX_LEN ((size_t)INT32_MAX)

typedef struct sc_pb {
        sc_buf_t *buf; /* appended to; the caller owns it */
        sc_err_t err;  /* first error, SC_OK while none */
} sc_pb_t;

/* Starts writing at the end of buf (borrowed). */
void sc_pb_init(sc_pb_t *pb, sc_buf_t *buf);
sc_err_t sc_pb_err(const sc_pb_t *pb);

/* A base-128 varint of v, no tag. */
void sc_pb_varint(sc_pb_t *pb, uint64_t v);
/* The key of field (>= 1) with wire type wt. */
void sc_pb_tag(sc_pb_t *pb, uint32_t field, int wt);
/* int32 / int64 / uint64 / enum / bool field: negative values take 10 bytes
 * (two's complement), as protobuf writes int64. */
void sc_pb_int(sc_pb_t *pb, uint32_t field, int64_t v);
/* float field (fixed32, IEEE-754 little-endian). */
void sc_pb_float(sc_pb_t *pb, uint32_t field, float v);
/* bytes field of n bytes (data may be NULL when n is 0). */
void sc_pb_bytes(sc_pb_t *pb, uint32_t field, const void *data, size_t n);
/* string field (NUL-terminated s, written without the NUL). */
void sc_pb_string(sc_pb_t *pb, uint32_t field, const char *s);
/* Packed repeated float field: one length-delimited run of n fixed32. */
void sc_pb_floats(sc_pb_t *pb, uint32_t field, const float *v, size_t n);
/* Packed repeated int64 field: one length-delimited run of n varints. */
void sc_pb_int64s(sc_pb_t *pb, uint32_t field, const int64_t *v, size_t n);

/* Embedded message: sc_pb_begin writes the key and returns a mark; write the
 * message's fields, then sc_pb_end(mark) inserts its length in front of them
 * (moving the body by the length's varint size). Nest freely; end in
 * reverse order of begin. */
size_t sc_pb_begin(sc_pb_t *pb, uint32_t field);
void sc_pb_end(sc_pb_t *pb, size_t mark);

#endif
