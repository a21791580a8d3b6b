/* fields.c — named-field feature specifications: vocabularies (byte strings
 * found by a sorted table of their hashes), field lists and their spans,
 * reading a field's value from text and encoding a record's field values
 * into the feature vector. */
#include "sc_fields.h"
#include "decode_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sc_err.h"

uint64_t sc_fnv1a(const void *p, size_t n)
{
        const unsigned char *b = p;
        uint64_t h = SC_FNV_OFFSET;
        for (size_t i = 0; i < n; i++)
                h = (h ^ b[i]) * SC_FNV_PRIME;
        return h;
}

/* ---- vocabularies ---- */

struct sc_vocab {
        int refs;
        size_t n, cap;
        char **name;       /* by index */
        uint64_t *hash;    /* sorted, with */
        uint32_t *by_hash; /* the index of each */
};

sc_vocab_t *sc_vocab_new(void)
{
        sc_vocab_t *v = calloc(1, sizeof(*v));
        if (v)
                v->refs = 1;
        return v;
}

sc_vocab_t *sc_vocab_ref(const sc_vocab_t *v)
{
        sc_vocab_t *m = (sc_vocab_t *)v;
        if (m)
                __atomic_add_fetch(&m->refs, 1, __ATOMIC_RELAXED);
        return m;
}

void sc_vocab_unref(const sc_vocab_t *v)
{
        sc_vocab_t *m = (sc_vocab_t *)v;
        if (!m || __atomic_sub_fetch(&m->refs, 1, __ATOMIC_ACQ_REL) > 0)
                return;
        for (size_t i = 0; i < m->n; i++)
                free(m->name[i]);
        free(m->name);
        free(m->hash);
        free(m->by_hash);
        free(m);
}

/* First position of the sorted hash table whose hash is >= h. */
static size_t sc_vocab_lower(const sc_vocab_t *v, uint64_t h)
{
        size_t lo = 0, hi = v->n;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (v->hash[mid] < h)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

int32_t sc_vocab_find_hashed(const sc_vocab_t *v, const void *s, size_t len, uint64_t h)
{
        if (!v || len == 0 || len > SC_VOCAB_ENTRY_MAX)
                return -1;
        for (size_t i = sc_vocab_lower(v, h); i < v->n && v->hash[i] == h; i++) {
                const char *name = v->name[v->by_hash[i]];
                if (strlen(name) == len && !memcmp(name, s, len))
                        return (int32_t)v->by_hash[i];
        }
        return -1;
}

int32_t sc_vocab_find(const sc_vocab_t *v, const void *s, size_t len)
{
        if (!v || len == 0 || len > SC_VOCAB_ENTRY_MAX)
                return -1;
        return sc_vocab_find_hashed(v, s, len, sc_fnv1a(s, len));
}

int sc_vocab_add(sc_vocab_t *v, const char *s, size_t len)
{
        if (!v || !s || len == 0 || len > SC_VOCAB_ENTRY_MAX || memchr(s, '\0', len))
                return -1;
        uint64_t h = sc_fnv1a(s, len);
        if (sc_vocab_find_hashed(v, s, len, h) >= 0)
                return -1;
        if (v->n == SC_VOCAB_MAX)
                return -2;
        if (v->n == v->cap) {
                size_t cap = v->cap ? v->cap * 2 : 16;
                char **name = realloc(v->name, cap * sizeof(*name));
                if (!name)
                        return -2;
                v->name = name;
                uint64_t *hash = realloc(v->hash, cap * sizeof(*hash));
                if (!hash)
                        return -2;
                v->hash = hash;
                uint32_t *by = realloc(v->by_hash, cap * sizeof(*by));
                if (!by)
                        return -2;
                v->by_hash = by;
                v->cap = cap;
        }
        char *copy = malloc(len + 1);
        if (!copy)
                return -2;
        memcpy(copy, s, len);
        copy[len] = '\0';
        size_t at = sc_vocab_lower(v, h);
        memmove(v->hash + at + 1, v->hash + at, (v->n - at) * sizeof(*v->hash));
        memmove(v->by_hash + at + 1, v->by_hash + at, (v->n - at) * sizeof(*v->by_hash));
        v->hash[at] = h;
        v->by_hash[at] = (uint32_t)v->n;
        v->name[v->n] = copy;
        return (int)v->n++;
}

size_t sc_vocab_size(const sc_vocab_t *v)
{
        return v ? v->n : 0;
}

const char *sc_vocab_name(const sc_vocab_t *v, size_t i)
{
        return v && i < v->n ? v->name[i] : NULL;
}

/* ---- field lists ---- */

static const char *const sc_field_kind_names[SC_FIELD_KIND__END] = {"numeric", "boolean",
                                                                    "categorical", "hashed"};
static const char *const sc_field_missing_names[SC_MISSING__END] = {"error", "zero", "constant",
                                                                    "mean"};

const char *sc_field_kind_name(sc_field_kind_t kind)
{
        return (int)kind >= 0 && kind < SC_FIELD_KIND__END ? sc_field_kind_names[kind] : "unknown";
}

int sc_field_kind_parse(const char *name)
{
        for (int i = 0; name && i < SC_FIELD_KIND__END; i++)
                if (!strcmp(name, sc_field_kind_names[i]))
                        return i;
        return -1;
}

const char *sc_field_missing_name(sc_field_missing_t m)
{
        return (int)m >= 0 && m < SC_MISSING__END ? sc_field_missing_names[m] : "unknown";
}

int sc_field_missing_parse(const char *name)
{
        for (int i = 0; name && i < SC_MISSING__END; i++)
                if (!strcmp(name, sc_field_missing_names[i]))
                        return i;
        return -1;
}

sc_fields_t *sc_fields_new(void)
{
        sc_fields_t *f = calloc(1, sizeof(*f));
        if (!f)
                return NULL;
        f->paths = calloc(SC_FIELDS_MAX, sizeof(*f->paths));
        if (!f->paths) {
                free(f);
                return NULL;
        }
        f->refs = 1;
        return f;
}

sc_fields_t *sc_fields_ref(const sc_fields_t *f)
{
        sc_fields_t *m = (sc_fields_t *)f;
        if (m)
                __atomic_add_fetch(&m->refs, 1, __ATOMIC_RELAXED);
        return m;
}

void sc_fields_unref(const sc_fields_t *f)
{
        sc_fields_t *m = (sc_fields_t *)f;
        if (!m || __atomic_sub_fetch(&m->refs, 1, __ATOMIC_ACQ_REL) > 0)
                return;
        for (size_t i = 0; i < m->n; i++)
                sc_vocab_unref(m->field[i].vocab);
        free(m->paths);
        free(m);
}

void sc_field_defaults(sc_field_t *field)
{
        memset(field, 0, sizeof(*field));
        field->column = -1;
        field->kind = SC_FIELD_NUMERIC;
        field->missing = SC_MISSING_MEAN;
        field->std = 1.0;
}

/* Where a field is read: its path completed to "$." form and compiled, or
 * its csv column. -1 with errstr when neither holds. */
static int sc_field_check_where(sc_field_t *field, char *errstr, size_t errstr_size)
{
        if (!memchr(field->path, '\0', sizeof(field->path))) {
                sc_errf(SC_ERR_CONFIG, errstr, errstr_size, "path: too long");
                return -1;
        }
        memcpy(field->given, field->path, sizeof(field->given));
        if (field->path[0] && field->path[0] != '$') {
                char full[sizeof(field->path)];
                if ((size_t)snprintf(full, sizeof(full), "$.%s", field->path) >= sizeof(full)) {
                        sc_errf(SC_ERR_CONFIG, errstr, errstr_size, "path: too long");
                        return -1;
                }
                memcpy(field->path, full, sizeof(full));
        }
        sc_decode_path_t compiled;
        if (field->path[0] &&
            (sc_decode_path_compile(field->path, sizeof(field->path), &compiled) ||
             compiled.n == 0)) {
                sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                        "path: expected a member name, or \"$\" then .name and [index] steps, "
                        "got \"%s\"",
                        field->path);
                return -1;
        }
        if (!field->path[0] && field->column < 0 && !field->column_name[0]) {
                sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                        "path/column: a field needs its path (json) or column (csv)");
                return -1;
        }
        if (!memchr(field->column_name, '\0', sizeof(field->column_name))) {
                sc_errf(SC_ERR_CONFIG, errstr, errstr_size, "column: name too long");
                return -1;
        }
        return 0;
}

/* What a field's type makes of it: its width in features (0 with errstr
 * when its type's settings do not hold). */
static size_t sc_field_check_kind(const sc_field_t *field, char *errstr, size_t errstr_size)
{
        size_t width = 0;
        switch (field->kind) {
        case SC_FIELD_NUMERIC:
        case SC_FIELD_BOOLEAN:
                if (!isfinite(field->mean) || !isfinite(field->fill)) {
                        sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                "mean/fill: expected finite numbers");
                        return 0;
                }
                if (!isfinite(field->std) || !(field->std > 0) || !isfinite(1.0 / field->std)) {
                        sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                "std: expected a finite number > 0, got %g", field->std);
                        return 0;
                }
                width = field->indicator ? 2 : 1;
                break;
        case SC_FIELD_CATEGORICAL:
                if (sc_vocab_size(field->vocab) == 0) {
                        sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                "vocab: a categorical field needs a list of its values");
                        return 0;
                }
                width = sc_vocab_size(field->vocab) + 1;
                break;
        case SC_FIELD_HASHED:
                if (field->buckets < 1 || field->buckets > SC_FIELDS_BUCKETS_MAX) {
                        sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                "buckets: expected 1..%d, got %d", SC_FIELDS_BUCKETS_MAX,
                                field->buckets);
                        return 0;
                }
                width = (size_t)field->buckets;
                break;
        default:
                sc_errf(SC_ERR_CONFIG, errstr, errstr_size, "type: not a field type");
                return 0;
        }
        if ((field->kind == SC_FIELD_CATEGORICAL || field->kind == SC_FIELD_HASHED) &&
            (field->missing == SC_MISSING_CONSTANT || field->missing == SC_MISSING_MEAN ||
             field->indicator)) {
                sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                        "missing: a %s field takes \"zero\" (no slot set) or \"error\"%s",
                        sc_field_kind_name(field->kind),
                        field->indicator ? ", and no indicator" : "");
                return 0;
        }
        if ((int)field->missing < 0 || field->missing >= SC_MISSING__END) {
                sc_errf(SC_ERR_CONFIG, errstr, errstr_size, "missing: not a rule");
                return 0;
        }
        return width;
}

int sc_fields_add(sc_fields_t *f, sc_field_t *field, char *errstr, size_t errstr_size)
{
        if (f->n == SC_FIELDS_MAX) {
                sc_errf(SC_ERR_CONFIG, errstr, errstr_size, "at most %d fields", SC_FIELDS_MAX);
                return -1;
        }
        if (sc_field_check_where(field, errstr, errstr_size))
                return -1;
        size_t width = sc_field_check_kind(field, errstr, errstr_size);
        if (!width)
                return -1;
        if (f->width + width > SC_FIELDS_WIDTH_MAX) {
                sc_errf(SC_ERR_CONFIG, errstr, errstr_size, "more than %zu features in all",
                        SC_FIELDS_WIDTH_MAX);
                return -1;
        }
        field->offset = f->width;
        field->width = width;
        field->mul = 1.0f;
        field->add = 0.0f;
        if (field->kind == SC_FIELD_NUMERIC || field->kind == SC_FIELD_BOOLEAN) {
                field->mul = (float)(1.0 / field->std);
                field->add = (float)(-field->mean / field->std);
                if (!isfinite(field->mul) || !isfinite(field->add) || field->mul == 0.0f) {
                        sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                "mean/std: %g / %g do not fit a float", field->mean, field->std);
                        return -1;
                }
        }
        f->field[f->n] = *field;
        /* compiled again on the copy: the steps point into its path */
        if (sc_decode_path_compile(f->field[f->n].path, sizeof(f->field[f->n].path),
                                   &f->paths[f->n]))
                f->paths[f->n].n = -1;
        f->n++;
        f->width += width;
        field->vocab = NULL; /* moved */
        return 0;
}

/* ---- reading and encoding values ---- */

void sc_field_read_text(const sc_field_t *field, const char *s, size_t len, uint64_t hash,
                        sc_fval_t *out)
{
        memset(out, 0, sizeof(*out));
        out->kind = SC_FVAL_TEXT;
        out->cat = -1;
        switch (field->kind) {
        case SC_FIELD_NUMERIC:
        case SC_FIELD_BOOLEAN:
                if (field->kind == SC_FIELD_BOOLEAN && len == 4 && !memcmp(s, "true", 4)) {
                        out->kind = SC_FVAL_TRUE;
                } else if (field->kind == SC_FIELD_BOOLEAN && len == 5 && !memcmp(s, "false", 5)) {
                        out->kind = SC_FVAL_FALSE;
                } else if (len < SC_FIELDS_TEXT_MAX &&
                           sc_decode_number(s, s + len, &out->num) == 0) {
                        out->kind = SC_FVAL_NUMBER;
                } else {
                        out->bad_number = 1;
                }
                return;
        case SC_FIELD_CATEGORICAL:
                out->hash = hash;
                out->cat = sc_vocab_find_hashed(field->vocab, s, len, hash);
                return;
        default:
                out->hash = hash;
                return;
        }
}

/* "$.temp" or "csv column 3" (in the spec's records: after an unlabelled
 * spec took the label column out), for messages. */
static const char *sc_field_where(const sc_field_t *field, const sc_decode_spec_t *spec, char *buf,
                                  size_t size)
{
        int c = field->column;
        if (spec->format != SC_DECODE_CSV) {
                snprintf(buf, size, "%s", field->path);
                return buf;
        }
        if (field->column_name[0]) {
                snprintf(buf, size, "csv column \"%s\"", field->column_name);
                return buf;
        }
        if (spec->csv_label_dropped > 0 && c >= spec->csv_label_dropped)
                c--;
        snprintf(buf, size, "csv column %d", c);
        return buf;
}

static const char *sc_fval_kind_text(sc_fval_kind_t k)
{
        switch (k) {
        case SC_FVAL_NUMBER:
                return "a number";
        case SC_FVAL_TEXT:
                return "a string";
        case SC_FVAL_TRUE:
        case SC_FVAL_FALSE:
                return "a boolean";
        default:
                return "an object or array";
        }
}

sc_decode_fault_t sc_fields_encode(const sc_fields_t *f, const sc_fval_t *vals,
                                   const sc_decode_spec_t *spec, float *x, char *errstr,
                                   size_t errstr_size)
{
        char where[SC_FIELDS_PATH_MAX + 16];
        for (size_t i = 0; i < f->n; i++) {
                const sc_field_t *fd = &f->field[i];
                const sc_fval_t *v = &vals[i];
                float *out = x + fd->offset;
                int missing = v->kind == SC_FVAL_ABSENT || v->kind == SC_FVAL_NULL;
                if (missing && fd->missing == SC_MISSING_ERROR) {
                        sc_errf(SC_ERR_DECODE, errstr, errstr_size, "%s: %s",
                                sc_field_where(fd, spec, where, sizeof(where)),
                                v->kind == SC_FVAL_NULL ? "null (the field's missing rule is "
                                                          "\"error\")"
                                                        : "missing");
                        return SC_DECODE_MISSING_FIELD;
                }
                if (fd->kind == SC_FIELD_CATEGORICAL || fd->kind == SC_FIELD_HASHED) {
                        memset(out, 0, fd->width * sizeof(*out));
                        if (missing)
                                continue;
                        if (v->kind == SC_FVAL_OTHER) {
                                sc_errf(SC_ERR_DECODE, errstr, errstr_size,
                                        "%s: expected a string, number or boolean, got an object "
                                        "or array",
                                        sc_field_where(fd, spec, where, sizeof(where)));
                                return SC_DECODE_WRONG_TYPE;
                        }
                        if (fd->kind == SC_FIELD_CATEGORICAL)
                                out[v->cat >= 0 ? (size_t)v->cat : fd->width - 1] = 1.0f;
                        else
                                out[v->hash % (uint64_t)fd->buckets] = 1.0f;
                        continue;
                }
                double raw;
                if (missing) {
                        raw = fd->missing == SC_MISSING_CONSTANT ? fd->fill
                              : fd->missing == SC_MISSING_MEAN   ? fd->mean
                                                                 : 0.0;
                } else if (v->kind == SC_FVAL_NUMBER) {
                        raw = v->num;
                } else if (fd->kind == SC_FIELD_BOOLEAN &&
                           (v->kind == SC_FVAL_TRUE || v->kind == SC_FVAL_FALSE)) {
                        raw = v->kind == SC_FVAL_TRUE;
                } else {
                        sc_errf(
                            SC_ERR_DECODE, errstr, errstr_size, "%s: expected %s, got %s",
                            sc_field_where(fd, spec, where, sizeof(where)),
                            fd->kind == SC_FIELD_BOOLEAN ? "true, false or a number" : "a number",
                            v->kind == SC_FVAL_TEXT && v->bad_number ? "a string that is not one"
                                                                     : sc_fval_kind_text(v->kind));
                        return v->kind == SC_FVAL_TEXT && v->bad_number ? SC_DECODE_NOT_NUMERIC
                                                                        : SC_DECODE_WRONG_TYPE;
                }
                float y = (float)raw * fd->mul + fd->add;
                if (!isfinite(raw) || !isfinite(y)) {
                        sc_errf(SC_ERR_DECODE, errstr, errstr_size, "%s: %s",
                                sc_field_where(fd, spec, where, sizeof(where)),
                                !isfinite(raw)          ? "not finite"
                                : !isfinite((float)raw) ? "outside the range of a float"
                                                        : "not finite after standardization");
                        return SC_DECODE_NOT_FINITE;
                }
                out[0] = y;
                if (fd->indicator)
                        out[1] = (float)missing;
        }
        return SC_DECODE_OK;
}

void sc_fields_affine(const sc_fields_t *f, float *mul, float *add)
{
        for (size_t i = 0; i < f->n; i++) {
                const sc_field_t *fd = &f->field[i];
                for (size_t k = 0; k < fd->width; k++) {
                        mul[fd->offset + k] = k == 0 ? fd->mul : 1.0f;
                        add[fd->offset + k] = k == 0 ? fd->add : 0.0f;
                }
        }
}

void sc_fields_feature_name(const sc_fields_t *f, size_t i, char *buf, size_t size)
{
        for (size_t n = 0; n < f->n; n++) {
                const sc_field_t *fd = &f->field[n];
                if (i < fd->offset || i >= fd->offset + fd->width)
                        continue;
                char base[SC_FIELDS_PATH_MAX + 16];
                size_t k = i - fd->offset;
                if (fd->path[0])
                        snprintf(base, sizeof(base), "%s",
                                 !strncmp(fd->path, "$.", 2) ? fd->path + 2 : fd->path);
                else if (fd->column_name[0])
                        snprintf(base, sizeof(base), "%s", fd->column_name);
                else
                        snprintf(base, sizeof(base), "column%d", fd->column);
                switch (fd->kind) {
                case SC_FIELD_CATEGORICAL:
                        if (k < sc_vocab_size(fd->vocab))
                                snprintf(buf, size, "%s=%s", base, sc_vocab_name(fd->vocab, k));
                        else
                                snprintf(buf, size, "%s.other", base);
                        return;
                case SC_FIELD_HASHED:
                        snprintf(buf, size, "%s#%zu", base, k);
                        return;
                default:
                        snprintf(buf, size, "%s%s", base, k ? ".missing" : "");
                        return;
                }
        }
        snprintf(buf, size, "?");
}
