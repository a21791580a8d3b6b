/* decode.c — record decoding entry point, the csv and raw-tensor decoders,
 * labels from key/header/offset, normalization, spec checking and the fault
 * counters (the json decoder is in decode_json.c). */
#include "sc_decode.h"
#include "decode_impl.h"
#include "sc_avro.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sc_le.h"

#define SC_DECODE_NUMEL_MAX ((size_t)1 << 28)
#define SC_DECODE_OFFSET_MAX ((size_t)1 << 30)

static const char *const sc_decode_fault_names[SC_DECODE_FAULT__END] = {
    [SC_DECODE_OK] = "ok",
    [SC_DECODE_EMPTY] = "empty",
    [SC_DECODE_WRONG_LENGTH] = "wrong_length",
    [SC_DECODE_BAD_JSON] = "bad_json",
    [SC_DECODE_MISSING_FIELD] = "missing_field",
    [SC_DECODE_NOT_NUMERIC] = "not_numeric",
    [SC_DECODE_NOT_FINITE] = "not_finite",
    [SC_DECODE_LABEL_RANGE] = "label_range",
    [SC_DECODE_BAD_CSV] = "bad_csv_columns",
    [SC_DECODE_BAD_KEY] = "bad_key",
    [SC_DECODE_BAD_HEADER] = "bad_header",
    [SC_DECODE_BAD_SPEC] = "bad_spec",
    [SC_DECODE_TOO_MANY_HEADERS] = "too_many_headers",
    [SC_DECODE_WRONG_TYPE] = "wrong_type",
    [SC_DECODE_BAD_AVRO] = "bad_avro",
    [SC_DECODE_UNKNOWN_SCHEMA] = "unknown_schema",
};

const char *sc_decode_fault_name(sc_decode_fault_t fault)
{
        if ((int)fault < 0 || fault >= SC_DECODE_FAULT__END)
                return "unknown";
        return sc_decode_fault_names[fault];
}

sc_decode_fault_t sc_decode_fault_parse(const char *name)
{
        for (int i = 0; name && i < SC_DECODE_FAULT__END; i++)
                if (!strcmp(name, sc_decode_fault_names[i]))
                        return (sc_decode_fault_t)i;
        return SC_DECODE_FAULT__END;
}

const char *sc_decode_format_name(sc_decode_format_t format)
{
        switch (format) {
        case SC_DECODE_JSON:
                return "json";
        case SC_DECODE_CSV:
                return "csv";
        case SC_DECODE_RAW:
                return "raw";
        case SC_DECODE_AVRO:
                return "avro";
        default:
                return "unknown";
        }
}

int sc_decode_stats_add(sc_decode_stats_t *stats, sc_decode_fault_t fault)
{
        if ((int)fault < 0 || fault >= SC_DECODE_FAULT__END)
                fault = SC_DECODE_BAD_SPEC;
        stats->count[fault]++;
        if (fault == SC_DECODE_OK)
                return 0;
        stats->rejected++;
        return stats->count[fault] == 1;
}

void sc_decode_spec_defaults(sc_decode_spec_t *spec, sc_decode_format_t format)
{
        memset(spec, 0, sizeof(*spec));
        spec->format = format;
        spec->numel = 0;
        spec->n_classes = 10;
        spec->scale = SC_DECODE_DEF_SCALE;
        spec->mean = SC_DECODE_DEF_MEAN;
        spec->std = SC_DECODE_DEF_STD;
        spec->label_source = format == SC_DECODE_RAW ? SC_DECODE_LABEL_KEY : SC_DECODE_LABEL_FIELD;
        spec->label_encoding = SC_DECODE_DEF_LABEL_ENCODING;
        strcpy(spec->label_header, SC_DECODE_DEF_LABEL_HEADER);
        strcpy(spec->features_path, SC_DECODE_DEF_FEATURES_PATH);
        strcpy(spec->label_path, SC_DECODE_DEF_LABEL_PATH);
        spec->delimiter = SC_DECODE_DEF_DELIMITER[0];
        spec->label_column = 0;
        spec->first_feature_column = SC_DECODE_DEF_FIRST_FEATURE_COLUMN;
        spec->columns = 0;
        spec->dtype = SC_DECODE_DEF_DTYPE;
        spec->data_offset = 0;
        spec->label_offset = 0;
}

/* ---- JSON paths: "$" then ".name" / "[index]" steps ---- */

int sc_decode_path_compile(const char *path, size_t max, sc_decode_path_t *out)
{
        const char *p = path, *end = memchr(path, '\0', max);

        out->n = 0;
        if (!end || *p != '$')
                return -1;
        p++;
        while (p < end) {
                if (out->n == SC_DECODE_PATH_STEPS)
                        return -1;
                if (*p == '.') {
                        const char *name = ++p;
                        while (p < end && *p != '.' && *p != '[')
                                p++;
                        if (p == name)
                                return -1;
                        out->step[out->n].is_index = 0;
                        out->step[out->n].name = name;
                        out->step[out->n].len = (size_t)(p - name);
                } else if (*p == '[') {
                        size_t idx = 0;
                        int digits = 0;
                        p++;
                        while (p < end && *p >= '0' && *p <= '9' && digits < 9) {
                                idx = idx * 10 + (size_t)(*p++ - '0');
                                digits++;
                        }
                        if (digits == 0 || p == end || *p != ']')
                                return -1;
                        p++;
                        out->step[out->n].is_index = 1;
                        out->step[out->n].index = idx;
                } else {
                        return -1;
                }
                out->n++;
        }
        return 0;
}

static int sc_decode_path_ok(const char *path)
{
        sc_decode_path_t compiled;
        return sc_decode_path_compile(path, SC_DECODE_PATH_MAX, &compiled) == 0;
}

/* A CSV spec's delimiter. */
static sc_err_t sc_decode_check_csv_delimiter(const sc_decode_spec_t *spec, char *errstr,
                                              size_t errstr_size)
{
        char d = spec->delimiter;
        if (d == '\0' || d == '\n' || d == '\r' || d == '.' || d == '-' || d == '+' || d == 'e' ||
            d == 'E' || (d >= '0' && d <= '9'))
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "decode.delimiter: a character that cannot be part of a "
                               "number or line end");
        return SC_OK;
}

/* A CSV spec's delimiter and columns. */
static sc_err_t sc_decode_check_csv(const sc_decode_spec_t *spec, char *errstr, size_t errstr_size)
{
        sc_err_t e = sc_decode_check_csv_delimiter(spec, errstr, errstr_size);
        if (e)
                return e;
        if (spec->first_feature_column < 0 || spec->label_column < 0)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "decode.label_column/first_feature_column: expected >= 0");
        size_t last = (size_t)spec->first_feature_column + spec->numel; /* exclusive */
        if (last > (size_t)1 << 26)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "decode.first_feature_column: too many columns");
        size_t need = last;
        if (spec->label_source == SC_DECODE_LABEL_FIELD) {
                size_t lc = (size_t)spec->label_column;
                if (lc >= (size_t)spec->first_feature_column && lc < last)
                        return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                       "decode.label_column: %d lies inside the feature "
                                       "columns [%d, %zu)",
                                       spec->label_column, spec->first_feature_column, last);
                if (lc + 1 > need)
                        need = lc + 1;
        }
        if (spec->columns < 0 || (spec->columns > 0 && (size_t)spec->columns < need))
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "decode.columns: expected 0 or >= %zu, got %d", need, spec->columns);
        return SC_OK;
}

/* A raw spec's element type and byte offsets. */
static sc_err_t sc_decode_check_raw(const sc_decode_spec_t *spec, char *errstr, size_t errstr_size)
{
        if ((int)spec->dtype < 0 || spec->dtype >= SC_DECODE_DTYPE__END)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "decode.dtype: expected uint8 or float32");
        if (spec->data_offset > SC_DECODE_OFFSET_MAX || spec->label_offset > SC_DECODE_OFFSET_MAX)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "decode.data_offset/label_offset: expected <= %zu",
                               SC_DECODE_OFFSET_MAX);
        size_t esize = spec->dtype == SC_DECODE_F32 ? 4 : 1;
        size_t end = spec->data_offset + spec->numel * esize;
        if (spec->label_source == SC_DECODE_LABEL_OFFSET &&
            spec->label_offset >= spec->data_offset && spec->label_offset < end)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "decode.label_offset: byte %zu lies inside the tensor "
                               "bytes [%zu, %zu)",
                               spec->label_offset, spec->data_offset, end);
        return SC_OK;
}

/* Field i's column in this spec's records (after an unlabelled spec took
 * the label column out). */
static size_t sc_decode_field_column(const sc_decode_spec_t *spec, size_t i)
{
        const sc_field_t *f = &spec->fields->field[i];
        size_t c = f->column >= 0 ? (size_t)f->column
                                  : (size_t)sc_vocab_find(spec->header, f->column_name,
                                                          strlen(f->column_name));
        return spec->csv_label_dropped > 0 && c >= (size_t)spec->csv_label_dropped ? c - 1 : c;
}

/* 1 if path a is path b or leads into it (compiled, from the root). */
static int sc_decode_path_prefix(const sc_decode_path_t *a, const sc_decode_path_t *b)
{
        if (a->n > b->n)
                return 0;
        for (int i = 0; i < a->n; i++) {
                if (a->step[i].is_index != b->step[i].is_index)
                        return 0;
                if (a->step[i].is_index
                        ? a->step[i].index != b->step[i].index
                        : a->step[i].len != b->step[i].len ||
                              memcmp(a->step[i].name, b->step[i].name, a->step[i].len))
                        return 0;
        }
        return 1;
}

/* 1 if every step of path is a name (no [index]). */
static int sc_decode_path_names(const sc_decode_path_t *path)
{
        for (int i = 0; i < path->n; i++)
                if (path->step[i].is_index)
                        return 0;
        return 1;
}

/* A spec's named fields: their width, paths (json) or columns (csv). */
static sc_err_t sc_decode_check_fields(const sc_decode_spec_t *spec, char *errstr,
                                       size_t errstr_size)
{
        const sc_fields_t *fs = spec->fields;
        int label_field = spec->label_source == SC_DECODE_LABEL_FIELD;
        if (spec->format == SC_DECODE_RAW)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "decode.fields: raw records have no named fields");
        if (fs->n == 0)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "decode.fields: expected at least one field");
        if (fs->width != spec->numel)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "decode.fields: they encode %zu features, the model's input takes "
                               "%zu (set model.input to [%zu])",
                               fs->width, spec->numel, fs->width);
        if (spec->scale != 1.0f || spec->mean != 0.0f || spec->std != 1.0f)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "decode.scale/mean/std: not used with fields (give each field's "
                               "mean and std)");
        for (size_t i = 0; i < fs->n; i++) {
                const sc_field_t *f = &fs->field[i];
                if (spec->format == SC_DECODE_CSV) {
                        if (f->column < 0 && !f->column_name[0])
                                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                               "decode.fields[%zu].column: a csv field needs its "
                                               "zero-based column or column name",
                                               i);
                        if (f->column < 0 &&
                            sc_vocab_find(spec->header, f->column_name, strlen(f->column_name)) < 0)
                                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                               "decode.fields[%zu].column: \"%s\" is not a "
                                               "column of the header%s",
                                               i, f->column_name,
                                               spec->header ? "" : " (none is given)");
                        if (label_field &&
                            (int)sc_decode_field_column(spec, i) == spec->label_column)
                                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                               "decode.fields[%zu].column: %d is the label column",
                                               i, spec->label_column);
                        if (spec->columns > 0 &&
                            sc_decode_field_column(spec, i) >= (size_t)spec->columns)
                                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                               "decode.fields[%zu].column: %d is not below "
                                               "decode.columns (%d)",
                                               i, (int)sc_decode_field_column(spec, i),
                                               spec->columns);
                        for (size_t k = 0; k < i; k++)
                                if (sc_decode_field_column(spec, k) ==
                                    sc_decode_field_column(spec, i))
                                        return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                                       "decode.fields[%zu].column: %d is also "
                                                       "fields[%zu]'s",
                                                       i, (int)sc_decode_field_column(spec, i), k);
                        continue;
                }
                if (!f->path[0])
                        return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                       "decode.fields[%zu].path: %s field needs its path", i,
                                       spec->format == SC_DECODE_AVRO ? "an avro" : "a json");
                sc_decode_path_t a, b;
                if (sc_decode_path_compile(f->path, sizeof(f->path), &a) || a.n == 0)
                        return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                       "decode.fields[%zu].path: expected \"$\" then .name or "
                                       "[index] steps",
                                       i);
                if (spec->format == SC_DECODE_AVRO && !sc_decode_path_names(&a))
                        return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                       "decode.fields[%zu].path: an avro field is a field name, "
                                       "or names through nested records (\"$.a.b\"), not "
                                       "[index] steps",
                                       i);
                if (label_field &&
                    sc_decode_path_compile(spec->label_path, sizeof(spec->label_path), &b) == 0 &&
                    (sc_decode_path_prefix(&a, &b) || sc_decode_path_prefix(&b, &a)))
                        return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                       "decode.fields[%zu].path: %s overlaps the label path %s", i,
                                       f->path, spec->label_path);
                for (size_t k = 0; k < i; k++) {
                        sc_decode_path_compile(fs->field[k].path, sizeof(fs->field[k].path), &b);
                        if (sc_decode_path_prefix(&a, &b) || sc_decode_path_prefix(&b, &a))
                                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                               "decode.fields[%zu].path: %s overlaps "
                                               "fields[%zu]'s %s",
                                               i, f->path, k, fs->field[k].path);
                }
        }
        if (spec->format == SC_DECODE_CSV) {
                int need = label_field ? spec->label_column + 1 : 0;
                for (size_t i = 0; i < fs->n; i++)
                        if ((int)sc_decode_field_column(spec, i) + 1 > need)
                                need = (int)sc_decode_field_column(spec, i) + 1;
                if (spec->columns > 0 && spec->columns < need)
                        return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                       "decode.columns: expected 0 or >= %d, got %d", need,
                                       spec->columns);
        }
        return SC_OK;
}

sc_err_t sc_decode_spec_check(const sc_decode_spec_t *spec, char *errstr, size_t errstr_size)
{
        if (!spec)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size, "decode: no spec");
        if ((int)spec->format < 0 || spec->format >= SC_DECODE_FORMAT__END)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "decode.format: expected json, csv, raw or avro");
        if (spec->numel == 0 || spec->numel > SC_DECODE_NUMEL_MAX)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "decode.numel: expected 1..%zu, got %zu", SC_DECODE_NUMEL_MAX,
                               spec->numel);
        if (spec->n_classes < 1)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "decode.n_classes: expected >= 1, got %d", spec->n_classes);
        if (!isfinite(spec->scale) || !isfinite(spec->mean))
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "decode.scale/mean: expected finite numbers");
        if (!isfinite(spec->std) || spec->std == 0.0f || !isfinite(spec->scale / spec->std) ||
            !isfinite(spec->mean / spec->std))
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "decode.std: expected a finite non-zero number, got %g",
                               (double)spec->std);
        if ((int)spec->label_source < 0 || spec->label_source >= SC_DECODE_LABEL_SOURCE__END)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "decode.label_source: expected field, key, header, offset or "
                               "none");
        if (spec->label_source == SC_DECODE_LABEL_FIELD && spec->format == SC_DECODE_RAW)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "decode.label_source: raw records take the label from key, "
                               "header or offset, not field");
        if (spec->label_source == SC_DECODE_LABEL_OFFSET && spec->format != SC_DECODE_RAW)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "decode.label_source: offset is only for raw records");
        if ((int)spec->label_encoding < 0 || spec->label_encoding >= SC_DECODE_ENC__END)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "decode.label_encoding: expected ascii or byte");
        if (spec->label_source == SC_DECODE_LABEL_HEADER &&
            (spec->label_header[0] == '\0' ||
             !memchr(spec->label_header, '\0', sizeof(spec->label_header))))
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "decode.label_header: expected a header name");
        if (spec->label_encoding == SC_DECODE_ENC_BYTE && spec->n_classes > 256 &&
            (spec->label_source == SC_DECODE_LABEL_KEY ||
             spec->label_source == SC_DECODE_LABEL_HEADER))
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "decode.label_encoding: byte labels cannot reach %d classes",
                               spec->n_classes);
        if (spec->labels && sc_vocab_size(spec->labels) != (size_t)spec->n_classes)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "decode.labels: %zu class names, the model has %d classes",
                               sc_vocab_size(spec->labels), spec->n_classes);
        if (spec->fields) {
                sc_err_t e = sc_decode_check_fields(spec, errstr, errstr_size);
                if (e)
                        return e;
        }
        switch (spec->format) {
        case SC_DECODE_JSON:
                if (!spec->fields && !sc_decode_path_ok(spec->features_path))
                        return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                       "decode.features_path: expected \"$\" then .name or "
                                       "[index] steps");
                if (spec->label_source == SC_DECODE_LABEL_FIELD &&
                    !sc_decode_path_ok(spec->label_path))
                        return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                       "decode.label_path: expected \"$\" then .name or "
                                       "[index] steps");
                break;
        case SC_DECODE_CSV:
                if (spec->fields)
                        return sc_decode_check_csv_delimiter(spec, errstr, errstr_size);
                return sc_decode_check_csv(spec, errstr, errstr_size);
        case SC_DECODE_RAW:
                return sc_decode_check_raw(spec, errstr, errstr_size);
        case SC_DECODE_AVRO: {
                sc_decode_path_t lp;
                if (!spec->fields)
                        return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                       "decode.fields: avro records are read by named fields "
                                       "(give fields)");
                if (spec->label_source == SC_DECODE_LABEL_FIELD &&
                    (sc_decode_path_compile(spec->label_path, sizeof(spec->label_path), &lp) ||
                     lp.n == 0 || !sc_decode_path_names(&lp)))
                        return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                       "decode.label_path: expected a field name (\"$.status\"), "
                                       "or names through nested records");
                break;
        }
        default:
                break;
        }
        return SC_OK;
}

/* ---- labels from key / header / offset ---- */

static sc_decode_fault_t sc_decode_label_bytes(const sc_decode_spec_t *spec, const void *bytes,
                                               size_t size, sc_decode_fault_t fault,
                                               const char *what, int32_t *label, char *errstr,
                                               size_t errstr_size)
{
        const unsigned char *b = bytes;
        int64_t v = 0;

        if (!b || size == 0) {
                sc_errf(SC_ERR_DECODE, errstr, errstr_size, "%s: missing or empty", what);
                return fault;
        }
        if (spec->label_encoding == SC_DECODE_ENC_ASCII && spec->labels)
                return sc_decode_label_text(spec, bytes, size, what, 2, fault, label, errstr,
                                            errstr_size);
        if (spec->label_encoding == SC_DECODE_ENC_BYTE) {
                if (size != 1) {
                        sc_errf(SC_ERR_DECODE, errstr, errstr_size, "%s: expected 1 byte, got %zu",
                                what, size);
                        return fault;
                }
                v = b[0];
        } else {
                size_t i = 0;
                int neg = 0;
                if (b[0] == '-' || b[0] == '+') {
                        neg = b[0] == '-';
                        i = 1;
                }
                if (i == size || size - i > 10) {
                        sc_errf(SC_ERR_DECODE, errstr, errstr_size,
                                "%s: expected a decimal integer of 1..10 digits", what);
                        return fault;
                }
                for (; i < size; i++) {
                        if (b[i] < '0' || b[i] > '9') {
                                sc_errf(SC_ERR_DECODE, errstr, errstr_size,
                                        "%s: byte %zu is not a decimal digit", what, i);
                                return fault;
                        }
                        v = v * 10 + (b[i] - '0');
                }
                if (neg)
                        v = -v;
        }
        if (v < 0 || v >= spec->n_classes) {
                sc_errf(SC_ERR_DECODE, errstr, errstr_size, "%s: label %lld outside [0, %d)", what,
                        (long long)v, spec->n_classes);
                return SC_DECODE_LABEL_RANGE;
        }
        *label = (int32_t)v;
        return SC_DECODE_OK;
}

void sc_decode_spec_unlabelled(sc_decode_spec_t *spec)
{
        if (spec->format == SC_DECODE_CSV && spec->label_source == SC_DECODE_LABEL_FIELD) {
                spec->csv_label_dropped = spec->label_column + 1;
                if (spec->label_column < spec->first_feature_column)
                        spec->first_feature_column--;
                if (spec->columns > 0)
                        spec->columns--;
        }
        if (spec->format == SC_DECODE_RAW && spec->label_source == SC_DECODE_LABEL_OFFSET &&
            spec->label_offset < spec->data_offset)
                spec->data_offset--;
        spec->label_source = SC_DECODE_LABEL_NONE;
}

/* Label from key, header or value offset, or none (not FIELD). */
sc_decode_fault_t sc_decode_label_meta(const sc_decode_spec_t *spec, const sc_record_t *rec,
                                       int32_t *label, char *errstr, size_t errstr_size)
{
        switch (spec->label_source) {
        case SC_DECODE_LABEL_KEY:
                return sc_decode_label_bytes(spec, rec->key, rec->key_size, SC_DECODE_BAD_KEY,
                                             "key", label, errstr, errstr_size);
        case SC_DECODE_LABEL_HEADER: {
                const sc_decode_header_t *found = NULL;
                for (size_t i = 0; rec->headers && i < rec->n_headers; i++)
                        if (rec->headers[i].name &&
                            !strcmp(rec->headers[i].name, spec->label_header))
                                found = &rec->headers[i];
                if (!found) {
                        sc_errf(SC_ERR_DECODE, errstr, errstr_size, "header \"%s\": missing",
                                spec->label_header);
                        return SC_DECODE_BAD_HEADER;
                }
                return sc_decode_label_bytes(spec, found->value, found->size, SC_DECODE_BAD_HEADER,
                                             "label header", label, errstr, errstr_size);
        }
        case SC_DECODE_LABEL_OFFSET: {
                const unsigned char *v = rec->value;
                int32_t l;
                if (spec->label_offset >= rec->value_size) {
                        sc_errf(SC_ERR_DECODE, errstr, errstr_size,
                                "value: label byte %zu beyond %zu bytes", spec->label_offset,
                                rec->value_size);
                        return SC_DECODE_WRONG_LENGTH;
                }
                l = v[spec->label_offset];
                if (l >= spec->n_classes) {
                        sc_errf(SC_ERR_DECODE, errstr, errstr_size,
                                "value byte %zu: label %d outside [0, %d)", spec->label_offset,
                                (int)l, spec->n_classes);
                        return SC_DECODE_LABEL_RANGE;
                }
                *label = l;
                return SC_DECODE_OK;
        }
        case SC_DECODE_LABEL_NONE:
                *label = -1;
                return SC_DECODE_OK;
        default:
                sc_errf(SC_ERR_DECODE, errstr, errstr_size, "decode.label_source: not valid here");
                return SC_DECODE_BAD_SPEC;
        }
}

sc_decode_fault_t sc_decode_label_text(const sc_decode_spec_t *spec, const char *s, size_t len,
                                       const char *where, int numeric_text,
                                       sc_decode_fault_t not_label, int32_t *label, char *errstr,
                                       size_t errstr_size)
{
        double v;
        int32_t i = sc_vocab_find(spec->labels, s, len);
        if (i >= 0) {
                *label = i;
                return SC_DECODE_OK;
        }
        if (numeric_text == 2) { /* a key or header: [+-]digits, as without names */
                size_t k = len && (s[0] == '-' || s[0] == '+');
                int digits = len > k && len - k <= 10;
                for (size_t q = k; digits && q < len; q++)
                        digits = s[q] >= '0' && s[q] <= '9';
                if (digits && sc_decode_number(s, s + len, &v) == 0)
                        return sc_decode_label_number(spec, v, where, label, errstr, errstr_size);
        } else if (numeric_text && len < SC_FIELDS_TEXT_MAX &&
                   sc_decode_number(s, s + len, &v) == 0) {
                return sc_decode_label_number(spec, v, where, label, errstr, errstr_size);
        }
        if (spec->labels) {
                char shown[44];
                size_t n = len < 40 ? len : 40;
                for (size_t k = 0; k < n; k++)
                        shown[k] = s[k] >= 0x20 && s[k] < 0x7f ? s[k] : '?';
                snprintf(shown + n, sizeof(shown) - n, "%s", len > n ? "..." : "");
                char names[96];
                size_t at = 0;
                for (size_t k = 0; k < sc_vocab_size(spec->labels) && at < sizeof(names); k++)
                        at += (size_t)snprintf(names + at, sizeof(names) - at, "%s%s",
                                               k ? ", " : "", sc_vocab_name(spec->labels, k));
                if (at >= sizeof(names))
                        snprintf(names + sizeof(names) - 4, 4, "...");
                sc_errf(SC_ERR_DECODE, errstr, errstr_size,
                        "%s: label \"%s\" is not a class name%s (%s)", where, shown,
                        numeric_text ? " or index" : "", names);
                return SC_DECODE_LABEL_RANGE;
        }
        sc_errf(SC_ERR_DECODE, errstr, errstr_size, "%s: expected a number", where);
        return not_label;
}

/* Checks the label number v from a text field. */
sc_decode_fault_t sc_decode_label_number(const sc_decode_spec_t *spec, double v, const char *where,
                                         int32_t *label, char *errstr, size_t errstr_size)
{
        if (!isfinite(v)) {
                sc_errf(SC_ERR_DECODE, errstr, errstr_size, "%s: label is not finite", where);
                return SC_DECODE_NOT_FINITE;
        }
        if (v != floor(v)) {
                sc_errf(SC_ERR_DECODE, errstr, errstr_size, "%s: label %g is not an integer", where,
                        v);
                return SC_DECODE_NOT_NUMERIC;
        }
        if (v < 0 || v >= spec->n_classes) {
                sc_errf(SC_ERR_DECODE, errstr, errstr_size, "%s: label %g outside [0, %d)", where,
                        v, spec->n_classes);
                return SC_DECODE_LABEL_RANGE;
        }
        *label = (int32_t)v;
        return SC_DECODE_OK;
}

/* Normalizes x[0..n) in place; fails on a non-finite result. */
sc_decode_fault_t sc_decode_normalize(const sc_decode_spec_t *spec, float *x, size_t n,
                                      char *errstr, size_t errstr_size)
{
        const float a = spec->scale / spec->std, b = -spec->mean / spec->std;
        int bad = 0;
        for (size_t i = 0; i < n; i++) {
                float y = x[i] * a + b;
                x[i] = y;
                bad |= !isfinite(y);
        }
        if (bad) {
                for (size_t i = 0; i < n; i++)
                        if (!isfinite(x[i])) {
                                sc_errf(SC_ERR_DECODE, errstr, errstr_size,
                                        "feature %zu: not finite after normalization", i);
                                break;
                        }
                return SC_DECODE_NOT_FINITE;
        }
        return SC_DECODE_OK;
}

/* ---- raw ---- */

static sc_decode_fault_t sc_decode_raw(const sc_decode_spec_t *spec, const sc_record_t *rec,
                                       float *x, int32_t *label, char *errstr, size_t errstr_size)
{
        const unsigned char *v = rec->value;
        size_t esize = spec->dtype == SC_DECODE_F32 ? 4 : 1;
        size_t end = spec->data_offset + spec->numel * esize, want = end;
        sc_decode_fault_t f;

        if (spec->label_source == SC_DECODE_LABEL_OFFSET && spec->label_offset + 1 > want)
                want = spec->label_offset + 1;
        if (rec->value_size != want) {
                sc_errf(SC_ERR_DECODE, errstr, errstr_size,
                        "value: expected %zu bytes (%zu %s features), got %zu", want, spec->numel,
                        esize == 4 ? "float32" : "uint8", rec->value_size);
                return SC_DECODE_WRONG_LENGTH;
        }
        f = sc_decode_label_meta(spec, rec, label, errstr, errstr_size);
        if (f != SC_DECODE_OK)
                return f;
        v += spec->data_offset;
        if (spec->dtype == SC_DECODE_U8) {
                const float a = spec->scale / spec->std, b = -spec->mean / spec->std;
                /* Every result lies between b and 255 * a + b. */
                if (!isfinite(255.0f * a + b)) {
                        sc_errf(SC_ERR_DECODE, errstr, errstr_size,
                                "value: features not finite after normalization");
                        return SC_DECODE_NOT_FINITE;
                }
                for (size_t i = 0; i < spec->numel; i++)
                        x[i] = (float)v[i] * a + b;
                return SC_DECODE_OK;
        }
        sc_le_getf32s(x, v, spec->numel);
        for (size_t i = 0; i < spec->numel; i++)
                if (!isfinite(x[i])) {
                        sc_errf(SC_ERR_DECODE, errstr, errstr_size,
                                "value: float32 feature %zu is NaN or infinite", i);
                        return SC_DECODE_NOT_FINITE;
                }
        return sc_decode_normalize(spec, x, spec->numel, errstr, errstr_size);
}

/* ---- text numbers ---- */

static const double sc_decode_pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                         1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                         1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* Parses the whole of [p, end) as a number, leading/trailing blanks allowed.
 * Returns 0 and *out on success, -1 if not a number. Non-finite spellings
 * ("nan", "inf", overflow) parse and are caught by the caller. */
int sc_decode_number(const char *p, const char *end, double *out)
{
        while (p < end && (*p == ' ' || *p == '\t'))
                p++;
        while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
                end--;
        if (p == end)
                return -1;
        /* Fast path, independent of the C locale: [-+]digits[.digits][e[-+]digits]
         * with at most 19 significant digits and a decimal exponent within 22. */
        const char *q = p;
        int neg = 0, digits = 0, frac = 0;
        uint64_t m = 0;
        if (*q == '-' || *q == '+')
                neg = *q++ == '-';
        while (q < end && *q >= '0' && *q <= '9' && digits < 19) {
                m = m * 10 + (uint64_t)(*q++ - '0');
                digits++;
        }
        if (q < end && *q == '.') {
                q++;
                while (q < end && *q >= '0' && *q <= '9' && digits < 19) {
                        m = m * 10 + (uint64_t)(*q++ - '0');
                        digits++;
                        frac++;
                }
        }
        int e = -frac;
        if (q < end && digits > 0 && (*q == 'e' || *q == 'E')) {
                const char *r = q + 1;
                int eneg = 0, edigits = 0, ev = 0;
                if (r < end && (*r == '-' || *r == '+'))
                        eneg = *r++ == '-';
                while (r < end && *r >= '0' && *r <= '9' && edigits < 4) {
                        ev = ev * 10 + (*r++ - '0');
                        edigits++;
                }
                if (edigits > 0) {
                        e += eneg ? -ev : ev;
                        q = r;
                }
        }
        if (q == end && digits > 0 && e >= -22 && e <= 22) {
                double v =
                    e >= 0 ? (double)m * sc_decode_pow10[e] : (double)m / sc_decode_pow10[-e];
                *out = neg ? -v : v;
                return 0;
        }
        /* Slow path (strtod): long mantissas or exponents, hex, inf/nan. */
        char buf[64];
        size_t n = (size_t)(end - p);
        if (n >= sizeof(buf))
                return -1;
        memcpy(buf, p, n);
        buf[n] = '\0';
        char *stop;
        errno = 0;
        double v = strtod(buf, &stop);
        if (stop != buf + n || stop == buf)
                return -1;
        *out = v;
        return 0;
}

/* ---- csv ---- */

/* Moves [*a, *b) in past blanks at both ends. */
static void sc_decode_csv_trim(const char **a, const char **b)
{
        while (*a < *b && (**a == ' ' || **a == '\t'))
                (*a)++;
        while (*b > *a && ((*b)[-1] == ' ' || (*b)[-1] == '\t'))
                (*b)--;
}

/* The label in column col, [a, b) (trimmed): a class name or an integer. */
static sc_decode_fault_t sc_decode_csv_label(const sc_decode_spec_t *spec, const char *a,
                                             const char *b, size_t col, int32_t *label,
                                             char *errstr, size_t errstr_size)
{
        char where[48];
        snprintf(where, sizeof(where), "csv column %zu", col);
        return sc_decode_label_text(spec, a, (size_t)(b - a), where, 1, SC_DECODE_NOT_NUMERIC,
                                    label, errstr, errstr_size);
}

/* One line whose features are spec->fields (columns, extra columns ignored
 * unless spec->columns is set). */
static sc_decode_fault_t sc_decode_csv_fields(const sc_decode_spec_t *spec, const char *p,
                                              const char *end, const sc_record_t *rec, float *x,
                                              int32_t *label, char *errstr, size_t errstr_size)
{
        const sc_fields_t *fs = spec->fields;
        const char d = spec->delimiter;
        int want_label = spec->label_source == SC_DECODE_LABEL_FIELD;
        size_t lc = (size_t)spec->label_column, col = 0, need = want_label ? lc + 1 : 0;
        sc_fval_t vals[SC_FIELDS_MAX];
        size_t fcol[SC_FIELDS_MAX]; /* each field's column, resolved once */
        sc_decode_fault_t f;

        for (size_t i = 0; i < fs->n; i++) {
                vals[i].kind = SC_FVAL_ABSENT;
                fcol[i] = sc_decode_field_column(spec, i);
                if (fcol[i] + 1 > need)
                        need = fcol[i] + 1;
        }
        for (const char *q = p; (q = memchr(q, d, (size_t)(end - q))) != NULL; q++)
                col++;
        col++;
        if (spec->columns > 0 ? col != (size_t)spec->columns : col < need) {
                sc_errf(SC_ERR_DECODE, errstr, errstr_size, "csv: expected %s%zu columns, got %zu",
                        spec->columns > 0 ? "" : "at least ",
                        spec->columns > 0 ? (size_t)spec->columns : need, col);
                return SC_DECODE_BAD_CSV;
        }
        const char *field = p;
        for (col = 0;; col++) {
                const char *fe = memchr(field, d, (size_t)(end - field));
                if (!fe)
                        fe = end;
                const char *a = field, *b = fe;
                sc_decode_csv_trim(&a, &b);
                if (want_label && col == lc &&
                    (f = sc_decode_csv_label(spec, a, b, col, label, errstr, errstr_size)) !=
                        SC_DECODE_OK)
                        return f;
                for (size_t i = 0; i < fs->n; i++) {
                        if (fcol[i] != col)
                                continue;
                        if (a == b)
                                vals[i].kind = SC_FVAL_NULL;
                        else
                                sc_field_read_text(&fs->field[i], a, (size_t)(b - a),
                                                   sc_fnv1a(a, (size_t)(b - a)), &vals[i]);
                }
                if (fe == end)
                        break;
                field = fe + 1;
        }
        if (!want_label) {
                f = sc_decode_label_meta(spec, rec, label, errstr, errstr_size);
                if (f != SC_DECODE_OK)
                        return f;
        } else if (col < lc) {
                sc_errf(SC_ERR_DECODE, errstr, errstr_size, "csv: no label column");
                return SC_DECODE_BAD_CSV;
        }
        return sc_fields_encode(fs, vals, spec, x, errstr, errstr_size);
}

static sc_decode_fault_t sc_decode_csv(const sc_decode_spec_t *spec, const sc_record_t *rec,
                                       float *x, int32_t *label, char *errstr, size_t errstr_size)
{
        const char *p = rec->value, *end = p + rec->value_size;
        const char d = spec->delimiter;
        size_t first = (size_t)spec->first_feature_column, last = first + spec->numel;
        size_t need = last, col = 0;
        int want_label = spec->label_source == SC_DECODE_LABEL_FIELD;
        size_t lc = (size_t)spec->label_column;
        int have_label = 0;
        sc_decode_fault_t f;

        if (want_label && lc + 1 > need)
                need = lc + 1;
        if (spec->columns > 0)
                need = (size_t)spec->columns;
        if (end > p && end[-1] == '\n')
                end--;
        if (end > p && end[-1] == '\r')
                end--;
        if (memchr(p, '\n', (size_t)(end - p)) || memchr(p, '\r', (size_t)(end - p))) {
                sc_errf(SC_ERR_DECODE, errstr, errstr_size, "csv: value holds more than one line");
                return SC_DECODE_BAD_CSV;
        }
        if (spec->fields)
                return sc_decode_csv_fields(spec, p, end, rec, x, label, errstr, errstr_size);
        for (const char *q = p; (q = memchr(q, d, (size_t)(end - q))) != NULL; q++)
                col++;
        if (++col != need) {
                sc_errf(SC_ERR_DECODE, errstr, errstr_size, "csv: expected %zu columns, got %zu",
                        need, col);
                return SC_DECODE_BAD_CSV;
        }
        col = 0;
        const char *field = p;
        for (;;) {
                const char *fe = memchr(field, d, (size_t)(end - field));
                if (!fe)
                        fe = end;
                if (col < need) {
                        double v;
                        int is_feat = col >= first && col < last;
                        int is_label = want_label && col == lc;
                        if (is_label) {
                                const char *a = field, *b = fe;
                                sc_decode_csv_trim(&a, &b);
                                f = sc_decode_csv_label(spec, a, b, col, label, errstr,
                                                        errstr_size);
                                if (f != SC_DECODE_OK)
                                        return f;
                                have_label = 1;
                        } else if (is_feat) {
                                if (sc_decode_number(field, fe, &v) < 0) {
                                        sc_errf(SC_ERR_DECODE, errstr, errstr_size,
                                                "csv column %zu: not a number", col);
                                        return SC_DECODE_NOT_NUMERIC;
                                }
                                float fv = (float)v;
                                if (!isfinite(fv)) {
                                        sc_errf(SC_ERR_DECODE, errstr, errstr_size,
                                                "csv column %zu: not finite", col);
                                        return SC_DECODE_NOT_FINITE;
                                }
                                x[col - first] = fv;
                        }
                }
                col++;
                if (fe == end)
                        break;
                field = fe + 1;
        }
        if (!want_label) {
                f = sc_decode_label_meta(spec, rec, label, errstr, errstr_size);
                if (f != SC_DECODE_OK)
                        return f;
        } else if (!have_label) {
                sc_errf(SC_ERR_DECODE, errstr, errstr_size, "csv: no label column");
                return SC_DECODE_BAD_CSV;
        }
        return sc_decode_normalize(spec, x, spec->numel, errstr, errstr_size);
}

sc_decode_fault_t sc_decode_record(const sc_decode_spec_t *spec, const sc_record_t *rec, float *x,
                                   int32_t *label, char *errstr, size_t errstr_size)
{
        if (!spec || !rec || !x || !label || spec->numel == 0 ||
            spec->numel > SC_DECODE_NUMEL_MAX || !(spec->std != 0.0f) ||
            (spec->fields && (spec->fields->width != spec->numel ||
                              spec->fields->n > SC_FIELDS_MAX || spec->fields->n == 0))) {
                sc_errf(SC_ERR_INVAL, errstr, errstr_size, "decode: spec not checked");
                return SC_DECODE_BAD_SPEC;
        }
        if (!rec->value || rec->value_size == 0) {
                sc_errf(SC_ERR_DECODE, errstr, errstr_size, "value: empty (tombstone)");
                return SC_DECODE_EMPTY;
        }
        if (rec->n_headers > SC_DECODE_MAX_HEADERS) {
                sc_errf(SC_ERR_DECODE, errstr, errstr_size, "headers: more than %d",
                        SC_DECODE_MAX_HEADERS);
                return SC_DECODE_TOO_MANY_HEADERS;
        }
        switch (spec->format) {
        case SC_DECODE_JSON:
                return sc_decode_json(spec, rec, x, label, errstr, errstr_size);
        case SC_DECODE_CSV:
                if (spec->first_feature_column < 0 || spec->label_column < 0)
                        break;
                return sc_decode_csv(spec, rec, x, label, errstr, errstr_size);
        case SC_DECODE_RAW:
                if (spec->data_offset > SC_DECODE_OFFSET_MAX ||
                    spec->label_offset > SC_DECODE_OFFSET_MAX)
                        break;
                return sc_decode_raw(spec, rec, x, label, errstr, errstr_size);
        case SC_DECODE_AVRO:
                return sc_decode_avro(spec, rec, x, label, errstr, errstr_size);
        default:
                break;
        }
        sc_errf(SC_ERR_INVAL, errstr, errstr_size, "decode: spec not checked");
        return SC_DECODE_BAD_SPEC;
}
