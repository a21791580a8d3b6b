/* sc_fields.h — named-field feature specifications: which fields of a
 * record (a JSON path or a CSV column) become which features, how a field
 * with no value is filled in, and class names for labels.
 *
 * A field is numeric, boolean, categorical (one-hot over a vocabulary with
 * an out-of-vocabulary slot) or hashed (one-hot over N buckets). Its features
 * take a contiguous span of the encoded vector, in the order the fields are
 * listed; the vector's width is the model's input numel.
 *
 * Field lists and vocabularies are built once (from configuration), then
 * immutable and shared by reference count: copies of a decoder spec borrow
 * them, and whoever built or referenced one releases it with *_unref. */
#ifndef SC_FIELDS_H
#define SC_FIELDS_H

#include <stddef.h>
#include <stdint.h>

#define SC_FIELDS_MAX 62       /* fields of one record */
#define SC_FIELDS_PATH_MAX 128 /* a field's JSON path, NUL included */
#define SC_VOCAB_MAX 65536     /* entries of one vocabulary */
#define SC_VOCAB_ENTRY_MAX 127 /* bytes of one vocabulary entry */
#define SC_FIELDS_BUCKETS_MAX 65536
#define SC_FIELDS_WIDTH_MAX ((size_t)1 << 24)
#define SC_FIELDS_TEXT_MAX 128 /* bytes of a value's text a decoder keeps to read it */

/* A set of distinct byte strings with stable indices, looked up by content. */
typedef struct sc_vocab sc_vocab_t;

/* An empty vocabulary with one reference; NULL when out of memory. */
sc_vocab_t *sc_vocab_new(void);
sc_vocab_t *sc_vocab_ref(const sc_vocab_t *v);
void sc_vocab_unref(const sc_vocab_t *v);
/* Adds s (len bytes, 1..SC_VOCAB_ENTRY_MAX, no NUL inside) as the next
 * index. Returns the index, -1 if s is already there or not a valid entry,
 * -2 when full or out of memory. Only before the vocabulary is shared. */
int sc_vocab_add(sc_vocab_t *v, const char *s, size_t len);
/* Index of the entry equal to [s, s + len), or -1. */
int32_t sc_vocab_find(const sc_vocab_t *v, const void *s, size_t len);
/* The same, given hash = sc_fnv1a(s, len) (s is not read when len is over
 * SC_VOCAB_ENTRY_MAX). */
int32_t sc_vocab_find_hashed(const sc_vocab_t *v, const void *s, size_t len, uint64_t hash);
size_t sc_vocab_size(const sc_vocab_t *v);
/* Entry i, NUL-terminated (NULL when i is out of range). */
const char *sc_vocab_name(const sc_vocab_t *v, size_t i);

typedef enum sc_field_kind {
        SC_FIELD_NUMERIC,     /* a number (or a string holding one) */
        SC_FIELD_BOOLEAN,     /* true / false as 1 / 0 (numbers taken as they are) */
        SC_FIELD_CATEGORICAL, /* one-hot over vocab, then one out-of-vocabulary slot */
        SC_FIELD_HASHED,      /* one-hot over buckets by a hash of the value's text */
        SC_FIELD_KIND__END
} sc_field_kind_t;

/* What a field that is absent or null becomes. */
typedef enum sc_field_missing {
        SC_MISSING_ERROR,    /* the record is refused (missing_field) */
        SC_MISSING_ZERO,     /* numeric/boolean: the value 0; categorical/hashed: no slot set */
        SC_MISSING_CONSTANT, /* numeric/boolean: the value fill */
        SC_MISSING_MEAN,     /* numeric/boolean: the field's mean */
        SC_MISSING__END
} sc_field_missing_t;

typedef struct sc_field {
        char path[SC_FIELDS_PATH_MAX];  /* json: "$" then .name / [index] steps */
        char given[SC_FIELDS_PATH_MAX]; /* set by sc_fields_add: path as given ("temp") */
        int column;                     /* csv: zero-based column; -1 = none (or by name) */
        char column_name[SC_VOCAB_ENTRY_MAX + 1]; /* csv: the column of this name in the
                                                     decoder's header; "" = by index */
        sc_field_kind_t kind;
        sc_field_missing_t missing;
        int indicator;        /* numeric/boolean: one more feature, 1 when missing */
        double fill;          /* SC_MISSING_CONSTANT */
        double mean, std;     /* numeric/boolean: the feature is (value - mean) / std */
        int buckets;          /* hashed */
        sc_vocab_t *vocab;    /* categorical (owned) */
        size_t offset, width; /* this field's span of the encoded vector */
        float mul, add;       /* set by sc_fields_add: the feature is value * mul + add in
                                 float (mul = 1 / std, add = -mean / std; 1, 0 for slots) */
} sc_field_t;

struct sc_decode_path;

typedef struct sc_fields {
        size_t n, width;
        sc_field_t field[SC_FIELDS_MAX];
        struct sc_decode_path *paths; /* internal: each field's compiled path (n < 1: none) */
        int refs;                     /* internal */
} sc_fields_t;

/* An empty field list with one reference; NULL when out of memory. */
sc_fields_t *sc_fields_new(void);
sc_fields_t *sc_fields_ref(const sc_fields_t *f);
void sc_fields_unref(const sc_fields_t *f);
/* Field defaults: numeric, path "", column -1, missing mean, mean 0, std 1. */
void sc_field_defaults(sc_field_t *field);
/* Appends field (its vocab, if any, moves into the list) and sets its span;
 * a path not starting with "$" is a member of the root ("temp" = "$.temp").
 * Returns 0, or -1 when the list is full or the field is invalid (errstr
 * says which key, as "<key>: ..."). */
int sc_fields_add(sc_fields_t *f, sc_field_t *field, char *errstr, size_t errstr_size);

/* Each feature's standardization, x' = x * mul[i] + add[i] (f->width each):
 * the encoded vector before it is what an exported model takes. */
void sc_fields_affine(const sc_fields_t *f, float *mul, float *add);
/* A name for feature i (< f->width) into buf: "temp", "temp.missing",
 * "kind=pump", "kind.other", "device#3" (the field's path without "$."). */
void sc_fields_feature_name(const sc_fields_t *f, size_t i, char *buf, size_t size);

/* The name of a kind / missing rule, and back (-1 if unknown). */
const char *sc_field_kind_name(sc_field_kind_t kind);
int sc_field_kind_parse(const char *name);
const char *sc_field_missing_name(sc_field_missing_t m);
int sc_field_missing_parse(const char *name);

/* One field's value as read from a record, for sc_fields_encode. */
typedef enum sc_fval_kind {
        SC_FVAL_ABSENT, /* the path or column is not in the record */
        SC_FVAL_NULL,   /* JSON null, or an empty CSV column */
        SC_FVAL_NUMBER, /* num */
        SC_FVAL_TEXT,   /* a string (or, for categorical/hashed, a number's or boolean's text) */
        SC_FVAL_TRUE,
        SC_FVAL_FALSE,
        SC_FVAL_OTHER, /* an object or array */
} sc_fval_kind_t;

typedef struct sc_fval {
        sc_fval_kind_t kind;
        double num;     /* NUMBER */
        int32_t cat;    /* TEXT: categorical vocabulary index, -1 = not in it */
        uint64_t hash;  /* TEXT: 64-bit FNV-1a of the text */
        int bad_number; /* numeric field, TEXT: the string is not a number */
} sc_fval_t;

/* 64-bit FNV-1a. */
#define SC_FNV_OFFSET 0xcbf29ce484222325ull
#define SC_FNV_PRIME 0x100000001b3ull
uint64_t sc_fnv1a(const void *p, size_t n);

#endif
