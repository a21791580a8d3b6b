/* decode_impl.h — helpers shared by the record decoders (decode.c and
 * decode_json.c); internal to core/. */
#ifndef SC_DECODE_IMPL_H
#define SC_DECODE_IMPL_H

#include "sc_decode.h"

#define SC_DECODE_PATH_STEPS 32

/* A compiled JSON path: "$" then ".name" / "[index]" steps. */
typedef struct sc_decode_path {
        int n;
        struct {
                int is_index;
                size_t index;
                const char *name; /* into the source string, not NUL-terminated */
                size_t len;
        } step[SC_DECODE_PATH_STEPS];
} sc_decode_path_t;

/* Compiles path (NUL-terminated within max bytes); -1 if malformed. */
int sc_decode_path_compile(const char *path, size_t max, sc_decode_path_t *out);

/* Label from key, header or value offset (label_source other than field). */
sc_decode_fault_t sc_decode_label_meta(const sc_decode_spec_t *spec, const sc_record_t *rec,
                                       int32_t *label, char *errstr, size_t errstr_size);
/* Checks a label number read from a text field at `where`. */
sc_decode_fault_t sc_decode_label_number(const sc_decode_spec_t *spec, double v, const char *where,
                                         int32_t *label, char *errstr, size_t errstr_size);
/* x = x * scale / std - mean / std in place; NOT_FINITE if a result is. */
sc_decode_fault_t sc_decode_normalize(const sc_decode_spec_t *spec, float *x, size_t n,
                                      char *errstr, size_t errstr_size);
/* Parses the whole of [p, end) (blanks around allowed) as a decimal number;
 * 0 on success, -1 if it is not one. */
int sc_decode_number(const char *p, const char *end, double *out);

/* Reads a text of len bytes (a JSON string's unescaped bytes, a CSV column,
 * a JSON number's or literal's text) as field's value into *out; s holds its
 * first min(len, SC_FIELDS_TEXT_MAX) bytes and hash = sc_fnv1a of all of
 * them. */
void sc_field_read_text(const sc_field_t *field, const char *s, size_t len, uint64_t hash,
                        sc_fval_t *out);

/* Encodes the values (one per field, in order) into x (f->width floats);
 * a fault names the field by its path (json) or its column in spec's
 * records (csv). */
sc_decode_fault_t sc_fields_encode(const sc_fields_t *f, const sc_fval_t *vals,
                                   const sc_decode_spec_t *spec, float *x, char *errstr,
                                   size_t errstr_size);

/* A label given as text (a JSON string, a CSV column, an ASCII key or
 * header): a class name of spec->labels, else an index written as a number
 * (numeric_text 1: any decimal number with an integer value, as a csv
 * column; 2: [+-] and 1 to 10 digits, as a key or header; 0: none);
 * not_label is the fault when it is neither and there are no names. */
sc_decode_fault_t sc_decode_label_text(const sc_decode_spec_t *spec, const char *s, size_t len,
                                       const char *where, int numeric_text,
                                       sc_decode_fault_t not_label, int32_t *label, char *errstr,
                                       size_t errstr_size);

sc_decode_fault_t sc_decode_json(const sc_decode_spec_t *spec, const sc_record_t *rec, float *x,
                                 int32_t *label, char *errstr, size_t errstr_size);

#endif
