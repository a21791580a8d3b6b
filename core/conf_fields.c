/* conf_fields.c — the decoder properties that hold shared values rather
 * than plain data: streams.fields (a list of named fields, sc_fields_t) and
 * streams.labels (class names, sc_vocab_t), with their per-topic overrides
 * (rows of conf_table.c). Both are reference counted: see sc_conf_ref_values. */
#include <string.h>

#include "conf_impl.h"

#define SC_CONF_FIELD_KEYS "path, column, type, missing, fill, indicator, mean, std, vocab, buckets"

/* The text of a vocabulary entry given as a string, an integer or a boolean
 * (records may carry a category either way). 0, or -1 if v is none. */
static int sc_conf_vocab_text(json_t *v, char *buf, size_t size, size_t *len)
{
        if (json_is_string(v)) {
                *len = json_string_length(v);
                if (*len >= size)
                        *len = size; /* refused by the caller as too long */
                else
                        memcpy(buf, json_string_value(v), *len);
                return 0;
        }
        if (json_is_integer(v)) {
                *len = (size_t)snprintf(buf, size, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
                return 0;
        }
        if (json_is_boolean(v)) {
                *len = (size_t)snprintf(buf, size, "%s", json_is_true(v) ? "true" : "false");
                return 0;
        }
        return -1;
}

/* A list of distinct names into a new vocabulary; what: for messages. */
static sc_err_t sc_conf_vocab(json_t *v, sc_vocab_t **out, int texts_only, const char *origin,
                              const char *jpath, char *errstr, size_t errstr_size)
{
        char epath[600], buf[SC_VOCAB_ENTRY_MAX + 1];
        size_t i, len;
        json_t *e;

        *out = NULL;
        if (!json_is_array(v) || json_array_size(v) > SC_VOCAB_MAX)
                return sc_conf_fail(errstr, errstr_size, origin, jpath,
                                    "expected a list of at most %d %s", SC_VOCAB_MAX,
                                    texts_only ? "names" : "values (strings, integers, booleans)");
        sc_vocab_t *voc = sc_vocab_new();
        if (!voc)
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
        json_array_foreach(v, i, e)
        {
                snprintf(epath, sizeof(epath), "%s[%zu]", jpath, i);
                if ((texts_only && !json_is_string(e)) ||
                    sc_conf_vocab_text(e, buf, sizeof(buf), &len) < 0) {
                        sc_vocab_unref(voc);
                        return sc_conf_fail(errstr, errstr_size, origin, epath, "expected %s",
                                            texts_only ? "a string"
                                                       : "a string, an integer or a boolean");
                }
                int r = sc_vocab_add(voc, buf, len);
                if (r == -2) {
                        sc_vocab_unref(voc);
                        return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
                }
                if (r < 0) {
                        sc_vocab_unref(voc);
                        if (len == 0 || len > SC_VOCAB_ENTRY_MAX || memchr(buf, '\0', len))
                                return sc_conf_fail(errstr, errstr_size, origin, epath,
                                                    "expected 1 to %d bytes, no NUL",
                                                    SC_VOCAB_ENTRY_MAX);
                        return sc_conf_fail(errstr, errstr_size, origin, epath,
                                            "\"%.*s\" is listed twice", (int)len, buf);
                }
        }
        *out = voc;
        return SC_OK;
}

static int sc_conf_field_int(json_t *v, long lo, long hi, long *out)
{
        if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
                return -1;
        *out = (long)json_integer_value(v);
        return 0;
}

/* One element of a fields list into field (vocab allocated). */
static sc_err_t sc_conf_field(json_t *obj, sc_field_t *field, const char *origin, const char *jpath,
                              char *errstr, size_t errstr_size)
{
        char kpath[640];
        const char *key;
        json_t *v;
        long n;
        int missing_given = 0;

        sc_field_defaults(field);
        if (!json_is_object(obj))
                return sc_conf_fail(errstr, errstr_size, origin, jpath,
                                    "expected an object with keys " SC_CONF_FIELD_KEYS);
        /* type first: the default missing rule follows it */
        json_t *type = json_object_get(obj, "type");
        if (type) {
                int k = json_is_string(type) ? sc_field_kind_parse(json_string_value(type)) : -1;
                if (k < 0) {
                        snprintf(kpath, sizeof(kpath), "%s.type", jpath);
                        return sc_conf_fail(errstr, errstr_size, origin, kpath,
                                            "expected \"numeric\", \"boolean\", \"categorical\" "
                                            "or \"hashed\"");
                }
                field->kind = (sc_field_kind_t)k;
        }
        if (field->kind == SC_FIELD_CATEGORICAL || field->kind == SC_FIELD_HASHED)
                field->missing = SC_MISSING_ZERO;
        json_object_foreach(obj, key, v)
        {
                snprintf(kpath, sizeof(kpath), "%s.%s", jpath, key);
                if (!strcmp(key, "type"))
                        continue;
                if (!strcmp(key, "path")) {
                        /* a member name takes "$." in front */
                        size_t max = json_is_string(v) && json_string_value(v)[0] == '$'
                                         ? sizeof(field->path) - 1
                                         : sizeof(field->path) - 3;
                        if (!json_is_string(v) || json_string_length(v) == 0 ||
                            json_string_length(v) > max)
                                return sc_conf_fail(errstr, errstr_size, origin, kpath,
                                                    "expected a JSON path (\"$...\", at most "
                                                    "%zu bytes) or a member name (at most %zu)",
                                                    sizeof(field->path) - 1,
                                                    sizeof(field->path) - 3);
                        memcpy(field->path, json_string_value(v), json_string_length(v) + 1);
                } else if (!strcmp(key, "column")) {
                        if (json_is_string(v) && json_string_length(v) > 0 &&
                            json_string_length(v) < sizeof(field->column_name) &&
                            !memchr(json_string_value(v), '\0', json_string_length(v))) {
                                memcpy(field->column_name, json_string_value(v),
                                       json_string_length(v) + 1);
                                field->column = -1;
                                continue;
                        }
                        if (sc_conf_field_int(v, 0, 1 << 20, &n) < 0)
                                return sc_conf_fail(errstr, errstr_size, origin, kpath,
                                                    "expected an integer in [0, %d] or a column "
                                                    "name of streams.header (1 to %zu bytes)",
                                                    1 << 20, sizeof(field->column_name) - 1);
                        field->column = (int)n;
                        field->column_name[0] = '\0';
                } else if (!strcmp(key, "missing")) {
                        int m =
                            json_is_string(v) ? sc_field_missing_parse(json_string_value(v)) : -1;
                        if (m < 0)
                                return sc_conf_fail(errstr, errstr_size, origin, kpath,
                                                    "expected \"error\", \"zero\", \"constant\" "
                                                    "or \"mean\"");
                        field->missing = (sc_field_missing_t)m;
                        missing_given = 1;
                } else if (!strcmp(key, "indicator")) {
                        if (!json_is_boolean(v))
                                return sc_conf_fail(errstr, errstr_size, origin, kpath,
                                                    "expected true or false");
                        field->indicator = json_is_true(v);
                } else if (!strcmp(key, "fill") || !strcmp(key, "mean") || !strcmp(key, "std")) {
                        if (!json_is_number(v))
                                return sc_conf_fail(errstr, errstr_size, origin, kpath,
                                                    "expected a number");
                        double x = json_number_value(v);
                        if (key[0] == 'f')
                                field->fill = x;
                        else if (key[0] == 'm')
                                field->mean = x;
                        else
                                field->std = x;
                } else if (!strcmp(key, "buckets")) {
                        if (sc_conf_field_int(v, 1, SC_FIELDS_BUCKETS_MAX, &n) < 0)
                                return sc_conf_fail(errstr, errstr_size, origin, kpath,
                                                    "expected an integer in [1, %d]",
                                                    SC_FIELDS_BUCKETS_MAX);
                        field->buckets = (int)n;
                } else if (!strcmp(key, "vocab")) {
                        sc_vocab_unref(field->vocab);
                        sc_err_t e =
                            sc_conf_vocab(v, &field->vocab, 0, origin, kpath, errstr, errstr_size);
                        if (e)
                                return e;
                } else {
                        return sc_conf_fail(
                            errstr, errstr_size, origin, kpath,
                            "unknown key of a field (a field takes: " SC_CONF_FIELD_KEYS ")");
                }
        }
        if (field->kind != SC_FIELD_CATEGORICAL && field->vocab) {
                snprintf(kpath, sizeof(kpath), "%s.vocab", jpath);
                return sc_conf_fail(errstr, errstr_size, origin, kpath,
                                    "only a categorical field takes a vocab");
        }
        if (field->kind != SC_FIELD_HASHED && json_object_get(obj, "buckets")) {
                snprintf(kpath, sizeof(kpath), "%s.buckets", jpath);
                return sc_conf_fail(errstr, errstr_size, origin, kpath,
                                    "only a hashed field takes buckets");
        }
        if (field->kind == SC_FIELD_HASHED && !field->buckets) {
                snprintf(kpath, sizeof(kpath), "%s.buckets", jpath);
                return sc_conf_fail(errstr, errstr_size, origin, kpath,
                                    "a hashed field needs its number of buckets");
        }
        if (json_object_get(obj, "fill") && field->missing != SC_MISSING_CONSTANT) {
                snprintf(kpath, sizeof(kpath), "%s.fill", jpath);
                return sc_conf_fail(errstr, errstr_size, origin, kpath,
                                    "fill is the value of missing: \"constant\"%s",
                                    missing_given ? "" : " (give that too)");
        }
        return SC_OK;
}

sc_err_t sc_conf_fields(json_t *v, void *at, const char *origin, const char *jpath, char *errstr,
                        size_t errstr_size)
{
        const sc_fields_t **slot = at;
        char epath[600], why[256];
        size_t i;
        json_t *e;

        if (!json_is_array(v) || json_array_size(v) > SC_FIELDS_MAX)
                return sc_conf_fail(errstr, errstr_size, origin, jpath,
                                    "expected a list of at most %d field objects", SC_FIELDS_MAX);
        sc_fields_t *fs = NULL;
        if (json_array_size(v) > 0 && !(fs = sc_fields_new()))
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
        json_array_foreach(v, i, e)
        {
                sc_field_t field;
                snprintf(epath, sizeof(epath), "%s[%zu]", jpath, i);
                sc_err_t err = sc_conf_field(e, &field, origin, epath, errstr, errstr_size);
                if (!err && sc_fields_add(fs, &field, why, sizeof(why)) < 0)
                        err = sc_conf_fail(errstr, errstr_size, origin, epath, "%s", why);
                if (err) {
                        sc_vocab_unref(field.vocab);
                        sc_fields_unref(fs);
                        return err;
                }
        }
        sc_fields_unref(*slot);
        *slot = fs;
        return SC_OK;
}

json_t *sc_conf_fields_json(const void *at)
{
        const sc_fields_t *fs = *(const sc_fields_t *const *)at;
        json_t *a = json_array();
        for (size_t i = 0; a && fs && i < fs->n; i++) {
                const sc_field_t *f = &fs->field[i];
                json_t *o = json_object();
                if (!o)
                        break;
                if (f->given[0])
                        json_object_set_new(o, "path", json_string(f->given));
                if (f->column >= 0)
                        json_object_set_new(o, "column", json_integer(f->column));
                else if (f->column_name[0])
                        json_object_set_new(o, "column", json_string(f->column_name));
                json_object_set_new(o, "type", json_string(sc_field_kind_name(f->kind)));
                json_object_set_new(o, "missing", json_string(sc_field_missing_name(f->missing)));
                if (f->kind == SC_FIELD_NUMERIC || f->kind == SC_FIELD_BOOLEAN) {
                        if (f->missing == SC_MISSING_CONSTANT)
                                json_object_set_new(o, "fill", json_real(f->fill));
                        json_object_set_new(o, "indicator", json_boolean(f->indicator));
                        json_object_set_new(o, "mean", json_real(f->mean));
                        json_object_set_new(o, "std", json_real(f->std));
                }
                if (f->kind == SC_FIELD_HASHED)
                        json_object_set_new(o, "buckets", json_integer(f->buckets));
                if (f->kind == SC_FIELD_CATEGORICAL) {
                        json_t *voc = json_array();
                        for (size_t k = 0; voc && k < sc_vocab_size(f->vocab); k++)
                                json_array_append_new(voc, json_string(sc_vocab_name(f->vocab, k)));
                        json_object_set_new(o, "vocab", voc);
                }
                json_array_append_new(a, o);
        }
        return a;
}

void sc_conf_fields_ref(void *at, int take)
{
        const sc_fields_t **slot = at;
        if (take) {
                sc_fields_ref(*slot);
        } else {
                sc_fields_unref(*slot);
                *slot = NULL;
        }
}

sc_err_t sc_conf_labels(json_t *v, void *at, const char *origin, const char *jpath, char *errstr,
                        size_t errstr_size)
{
        const sc_vocab_t **slot = at;
        sc_vocab_t *voc;
        sc_err_t e = sc_conf_vocab(v, &voc, 1, origin, jpath, errstr, errstr_size);
        if (e)
                return e;
        if (sc_vocab_size(voc) == 0) {
                sc_vocab_unref(voc);
                voc = NULL;
        }
        sc_vocab_unref(*slot);
        *slot = voc;
        return SC_OK;
}

json_t *sc_conf_labels_json(const void *at)
{
        const sc_vocab_t *voc = *(const sc_vocab_t *const *)at;
        json_t *a = json_array();
        for (size_t k = 0; a && k < sc_vocab_size(voc); k++)
                json_array_append_new(a, json_string(sc_vocab_name(voc, k)));
        return a;
}

void sc_conf_labels_ref(void *at, int take)
{
        const sc_vocab_t **slot = at;
        if (take) {
                sc_vocab_ref(*slot);
        } else {
                sc_vocab_unref(*slot);
                *slot = NULL;
        }
}
