/* sc_decode.h — record decoders (json, csv, raw tensor) that turn one stream
 * record's (key, value, headers) bytes into a normalized float sample and an
 * int32 label, classifying every malformed record by kind.
 *
 * Decoding is a pure function of (spec, record): no allocation, no state,
 * safe on any byte string. The features are either one numeric array (json:
 * features_path; csv: numel columns from first_feature_column; raw: the
 * tensor), normalized as x' = (x * scale - mean) / std, or named fields
 * (spec.fields, sc_fields.h) with their own missing-value rules and
 * standardization. */
#ifndef SC_DECODE_H
#define SC_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "sc_err.h"
#include "sc_fields.h"

struct sc_avro_cache;

#define SC_DECODE_PATH_MAX 128
#define SC_DECODE_NAME_MAX 64

typedef enum sc_decode_format {
        SC_DECODE_JSON, /* a JSON object; features and label from field paths */
        SC_DECODE_CSV,  /* one delimited text line; features and label from columns */
        SC_DECODE_RAW,  /* a little-endian uint8 / float32 tensor of exactly numel elements */
        SC_DECODE_AVRO, /* Avro binary framed for a schema registry; named fields (sc_avro.h) */
        SC_DECODE_FORMAT__END
} sc_decode_format_t;

typedef enum sc_decode_dtype {
        SC_DECODE_U8,  /* one byte per feature */
        SC_DECODE_F32, /* IEEE-754 float32, little-endian, 4 bytes per feature */
        SC_DECODE_DTYPE__END
} sc_decode_dtype_t;

/* Where the label comes from. FIELD is the format's own place (json:
 * label_path, csv: label_column) and is not valid for raw. */
typedef enum sc_decode_label_source {
        SC_DECODE_LABEL_FIELD,
        SC_DECODE_LABEL_KEY,    /* the record key, per label_encoding */
        SC_DECODE_LABEL_HEADER, /* the last header named label_header, per label_encoding */
        SC_DECODE_LABEL_OFFSET, /* raw: the uint8 at byte label_offset of the value */
        SC_DECODE_LABEL_NONE,   /* no label (scoring): *label is -1 */
        SC_DECODE_LABEL_SOURCE__END
} sc_decode_label_source_t;

/* How a key or header carries a label. */
typedef enum sc_decode_label_encoding {
        SC_DECODE_ENC_ASCII, /* decimal ASCII integer, e.g. "7" */
        SC_DECODE_ENC_BYTE,  /* exactly one byte, its unsigned value */
        SC_DECODE_ENC__END
} sc_decode_label_encoding_t;

/* Decoder configuration of one stream (topic). Plain data: copy freely.
 * Defaults are those of sc_decode_spec_defaults(). */
typedef struct sc_decode_spec {
        sc_decode_format_t format; /* default json */
        size_t numel;              /* features per sample = the model's input numel (> 0) */
        int n_classes;             /* labels must lie in [0, n_classes); default 10 */
        float scale;               /* multiplies each raw value first; default 1 */
        float mean;                /* subtracted after scaling; default 0 */
        float std;                 /* divides last; default 1, must be non-zero */
        sc_decode_label_source_t label_source;     /* default field (raw: key) */
        sc_decode_label_encoding_t label_encoding; /* key/header; default ascii */
        char label_header[SC_DECODE_NAME_MAX];     /* header name; default "label" */
        /* json: "$" followed by ".name" and "[index]" steps. The features value
         * is an array of numbers, nested arrays are flattened in row-major
         * order; it must hold exactly numel numbers. */
        char features_path[SC_DECODE_PATH_MAX]; /* default "$.features" */
        char label_path[SC_DECODE_PATH_MAX];    /* default "$.label" */
        /* csv: one line (a trailing "\n" or "\r\n" is allowed); numel features
         * from first_feature_column on, zero-based columns. */
        char delimiter;           /* default ',' */
        int label_column;         /* default 0 */
        int first_feature_column; /* default 1 */
        int columns;              /* exact columns per line; 0 = exactly enough for the
                                     label and feature columns (default) */
        /* raw */
        sc_decode_dtype_t dtype; /* default u8 */
        size_t data_offset;      /* byte of the value where the tensor starts; default 0 */
        size_t label_offset;     /* label_source offset: byte of the value holding the
                                    uint8 label, outside the tensor; default 0 */
        /* json and csv: the features are these fields (their width must be
         * numel; scale, mean and std stay 1, 0, 1) instead of features_path
         * or the feature columns; NULL = none (default). Borrowed. */
        const sc_fields_t *fields;
        /* Class names, index = label (n_classes of them): a label given as
         * text may be a name; NULL = labels are integers (default). Borrowed. */
        const sc_vocab_t *labels;
        /* csv: the names of the columns, in order (a field's column_name is
         * looked up here); NULL = none (default). Borrowed. */
        const sc_vocab_t *header;
        /* csv with fields: label column + 1 that sc_decode_spec_unlabelled took
         * out (the field columns after it move down by one); 0 = none. */
        int csv_label_dropped;
        /* avro: the schema cache of the records' ids, compiled for this
         * spec's fields and label (sc_avro_cache_new); NULL = none, every
         * record is unknown_schema. Borrowed. */
        const struct sc_avro_cache *avro;
} sc_decode_spec_t;

/* Kinds of malformed record. Names (sc_decode_fault_name) are stable
 * snake_case strings for logs, metrics and the dead-letter topic. */
typedef enum sc_decode_fault {
        SC_DECODE_OK = 0,
        SC_DECODE_EMPTY,            /* "empty": no value bytes (tombstone) */
        SC_DECODE_WRONG_LENGTH,     /* "wrong_length": value / feature count not as expected */
        SC_DECODE_BAD_JSON,         /* "bad_json": not valid JSON text */
        SC_DECODE_MISSING_FIELD,    /* "missing_field": a path does not resolve, or the label
                                       (or a field whose missing rule is error) is null */
        SC_DECODE_NOT_NUMERIC,      /* "not_numeric": a feature or label is not a number */
        SC_DECODE_NOT_FINITE,       /* "not_finite": NaN or infinity before or after scaling */
        SC_DECODE_LABEL_RANGE,      /* "label_range": label outside [0, n_classes) */
        SC_DECODE_BAD_CSV,          /* "bad_csv_columns": wrong CSV column count or lines */
        SC_DECODE_BAD_KEY,          /* "bad_key": key missing or not a label */
        SC_DECODE_BAD_HEADER,       /* "bad_header": label header missing or not a label */
        SC_DECODE_BAD_SPEC,         /* "bad_spec": the spec fails sc_decode_spec_check */
        SC_DECODE_TOO_MANY_HEADERS, /* "too_many_headers": over SC_DECODE_MAX_HEADERS headers */
        SC_DECODE_WRONG_TYPE,       /* "wrong_type": a field's value has a type it cannot take */
        SC_DECODE_BAD_AVRO,         /* "bad_avro": not framed Avro, or a body its schema cannot
                                       read (truncated, bad length or branch, bytes left) */
        SC_DECODE_UNKNOWN_SCHEMA,   /* "unknown_schema": the schema id is not in the registry,
                                       or its schema cannot be used */
        SC_DECODE_FAULT__END
} sc_decode_fault_t;

/* Headers a record may carry. sc_decode_record rejects a record with more
 * (SC_DECODE_TOO_MANY_HEADERS) before reading any of them, so a driver that
 * copies a record's headers into an array gives it room for
 * SC_DECODE_MAX_HEADERS + 1 and copies at most that many: the one past the
 * limit is what gets the record rejected rather than silently truncated. */
#define SC_DECODE_MAX_HEADERS 64

/* One record header; value may be NULL (size 0). name is NUL-terminated. */
typedef struct sc_decode_header {
        const char *name;
        const void *value;
        size_t size;
} sc_decode_header_t;

/* One record as bytes, borrowed for the duration of a call. key and value may
 * be NULL with size 0. */
typedef struct sc_record {
        const void *key;
        size_t key_size;
        const void *value;
        size_t value_size;
        const sc_decode_header_t *headers;
        size_t n_headers;
} sc_record_t;

/* The defaults' one home: sc_decode_spec_defaults and the configuration's
 * streams.* decoding rows (core/conf_table.c) both take them from here. */
#define SC_DECODE_DEF_SCALE 1
#define SC_DECODE_DEF_MEAN 0
#define SC_DECODE_DEF_STD 1
#define SC_DECODE_DEF_LABEL_ENCODING SC_DECODE_ENC_ASCII
#define SC_DECODE_DEF_LABEL_ENCODING_NAME "ascii"
#define SC_DECODE_DEF_LABEL_HEADER "label"
#define SC_DECODE_DEF_FEATURES_PATH "$.features"
#define SC_DECODE_DEF_LABEL_PATH "$.label"
#define SC_DECODE_DEF_DELIMITER ","
#define SC_DECODE_DEF_FIRST_FEATURE_COLUMN 1
#define SC_DECODE_DEF_DTYPE SC_DECODE_U8
#define SC_DECODE_DEF_DTYPE_NAME "u8"
/* Fills spec with the defaults for format (numel is set to 0: the caller sets
 * it to the model's input numel). */
void sc_decode_spec_defaults(sc_decode_spec_t *spec, sc_decode_format_t format);

/* Turns a labelled spec into the same layout without its label, for records
 * that carry none (scoring): label_source NONE; a CSV label column before
 * the features or a raw label byte before the tensor is taken out, so the
 * later columns or bytes move down by one (columns, when set, one fewer). A
 * spec whose label is in the key or a header keeps its layout. */
void sc_decode_spec_unlabelled(sc_decode_spec_t *spec);

/* Checks every field of spec; the message names the field as "decode.<name>"
 * so a config loader can prefix its JSON path. */
sc_err_t sc_decode_spec_check(const sc_decode_spec_t *spec, char *errstr, size_t errstr_size);

/* Decodes rec into x (spec->numel floats) and *label. Returns SC_DECODE_OK or
 * the fault kind with a one-line reason in errstr (what and where, e.g.
 * "$.pixels: expected 784 numbers, got 12"). x and *label are unspecified on a
 * fault. Never reads outside the given byte ranges, whatever the bytes. */
sc_decode_fault_t sc_decode_record(const sc_decode_spec_t *spec, const sc_record_t *rec, float *x,
                                   int32_t *label, char *errstr, size_t errstr_size);

/* "ok", "empty", "wrong_length", ... (never NULL). */
const char *sc_decode_fault_name(sc_decode_fault_t fault);
/* The fault whose name is name, or SC_DECODE_FAULT__END if none. */
sc_decode_fault_t sc_decode_fault_parse(const char *name);
const char *sc_decode_format_name(sc_decode_format_t format);

/* Per-kind counts of malformed records, for logging each kind once. */
typedef struct sc_decode_stats {
        uint64_t count[SC_DECODE_FAULT__END]; /* count[SC_DECODE_OK] = decoded records */
        uint64_t rejected;                    /* sum of every fault kind */
} sc_decode_stats_t;

/* Counts one outcome. Returns 1 the first time a fault kind is seen (log it
 * then, with topic/partition/offset), 0 otherwise and for SC_DECODE_OK. */
int sc_decode_stats_add(sc_decode_stats_t *stats, sc_decode_fault_t fault);

#endif
