/* conf_parse.c — walks a JSON document (or one --set override) over the
 * property table: typed values, ranges, lists of tagged objects, pass-through
 * objects, and messages naming the JSON path of every error. */
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf_impl.h"

#define SC_JPATH_MAX 768

typedef struct sc_conf_ctx {
        sc_conf_t *conf;
        const char *origin;
        char *errstr;
        size_t errstr_size;
} sc_conf_ctx_t;

sc_err_t sc_conf_fail(char *errstr, size_t errstr_size, const char *origin, const char *jpath,
                      const char *fmt, ...)
{
        char msg[1024];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        return sc_errf(SC_ERR_CONFIG, errstr, errstr_size, "%s: %s: %s", origin, jpath, msg);
}

#define FAIL(ctx, jpath, ...)                                                                      \
        sc_conf_fail((ctx)->errstr, (ctx)->errstr_size, (ctx)->origin, (jpath), __VA_ARGS__)

static const char *sc_conf_json_type(const json_t *v)
{
        switch (json_typeof(v)) {
        case JSON_OBJECT:
                return "object";
        case JSON_ARRAY:
                return "array";
        case JSON_STRING:
                return "string";
        case JSON_INTEGER:
                return "integer";
        case JSON_REAL:
                return "number";
        case JSON_TRUE:
        case JSON_FALSE:
                return "boolean";
        default:
                return "null";
        }
}

static void sc_conf_range_text(const sc_conf_prop_t *p, char *buf, size_t size)
{
        int lo = !isnan(p->min), hi = !isnan(p->max);
        int lx = !!(p->flags & SC_CONF_F_MIN_EXCL), hx = !!(p->flags & SC_CONF_F_MAX_EXCL);

        if ((p->type == SC_CONF_UINT64 || p->type == SC_CONF_SIZE) && !lo) {
                snprintf(buf, size, " >= 0");
        } else if (lo && hi) {
                snprintf(buf, size, " in %c%.15g, %.15g%c", lx ? '(' : '[', p->min, p->max,
                         hx ? ')' : ']');
        } else if (lo) {
                snprintf(buf, size, " %s %.15g", lx ? ">" : ">=", p->min);
        } else if (hi) {
                snprintf(buf, size, " %s %.15g", hx ? "<" : "<=", p->max);
        } else {
                buf[0] = '\0';
        }
}

static void sc_conf_names_text(const char *const *names, char *buf, size_t size)
{
        size_t len = 0;

        buf[0] = '\0';
        for (int i = 0; names[i] && len < size; i++)
                len += (size_t)snprintf(buf + len, size - len, "%s\"%s\"", i ? ", " : "", names[i]);
}

void sc_conf_expect_text(const sc_conf_prop_t *p, char *buf, size_t size)
{
        char r[96], n[256];

        sc_conf_range_text(p, r, sizeof(r));
        if (p->names)
                sc_conf_names_text(p->names, n, sizeof(n));
        switch (p->type) {
        case SC_CONF_INT:
        case SC_CONF_LONG:
        case SC_CONF_UINT64:
        case SC_CONF_SIZE:
                snprintf(buf, size, "integer%s", r);
                break;
        case SC_CONF_DOUBLE:
        case SC_CONF_FLOAT:
                snprintf(buf, size, "number%s", r);
                break;
        case SC_CONF_BOOL:
                snprintf(buf, size, "true or false");
                break;
        case SC_CONF_STRING:
                if (p->names)
                        snprintf(buf, size, "one of %s", n);
                else
                        snprintf(buf, size, "string of at most %zu bytes", p->size - 1);
                break;
        case SC_CONF_ENUM:
                snprintf(buf, size, "one of %s", n);
                break;
        case SC_CONF_LONG_LIST:
                snprintf(buf, size, "ascending list of at most %zu integers%s", p->size, r);
                break;
        case SC_CONF_DOUBLE_LIST:
                snprintf(buf, size, "ascending list of at most %zu numbers%s", p->size, r);
                break;
        case SC_CONF_SHAPE:
                snprintf(buf, size, "[c, h, w] or [n], integers%s", r);
                break;
        case SC_CONF_OBJ_LIST:
                snprintf(buf, size, "list of at most %zu objects", p->size);
                break;
        case SC_CONF_PASSTHROUGH:
                snprintf(buf, size, "object of strings, numbers and booleans");
                break;
        case SC_CONF_CUSTOM:
                snprintf(buf, size, "%s", p->expect);
                break;
        }
}

static int sc_conf_in_range(const sc_conf_prop_t *p, double x)
{
        if (!isnan(p->min) && (x < p->min || ((p->flags & SC_CONF_F_MIN_EXCL) && x == p->min)))
                return 0;
        if (!isnan(p->max) && (x > p->max || ((p->flags & SC_CONF_F_MAX_EXCL) && x == p->max)))
                return 0;
        return 1;
}

static size_t sc_conf_edit_distance(const char *a, const char *b)
{
        size_t la = strlen(a), lb = strlen(b), row[65];

        if (la > 64 || lb > 64)
                return SIZE_MAX;
        for (size_t j = 0; j <= lb; j++)
                row[j] = j;
        for (size_t i = 1; i <= la; i++) {
                size_t diag = row[0];
                row[0] = i;
                for (size_t j = 1; j <= lb; j++) {
                        size_t up = row[j];
                        size_t best = diag + (a[i - 1] != b[j - 1]);
                        if (up + 1 < best)
                                best = up + 1;
                        if (row[j - 1] + 1 < best)
                                best = row[j - 1] + 1;
                        row[j] = best;
                        diag = up;
                }
        }
        return row[lb];
}

/* Keeps cand in *best when it is the closest plausible spelling of key. */
static void sc_conf_suggest(const char *key, const char *cand, size_t cand_len, char *best,
                            size_t best_size, size_t *best_d)
{
        char c[128];

        if (cand_len >= sizeof(c))
                return;
        memcpy(c, cand, cand_len);
        c[cand_len] = '\0';
        size_t d = sc_conf_edit_distance(key, c);
        size_t longest = strlen(key) > cand_len ? strlen(key) : cand_len;
        if (d < *best_d && d <= 2 && d * 3 <= longest + 1) {
                *best_d = d;
                snprintf(best, best_size, "%s", c);
        }
}

/* Whether row p applies: to a list element of this kind, for the
 * simulator's rows to a configuration read for the simulator, and never for
 * the embedding rows (set by name only). */
static int sc_conf_row_allowed(const sc_conf_ctx_t *ctx, const sc_conf_prop_t *p, int kind)
{
        if (((p->flags & SC_CONF_F_SIM) && !ctx->conf->sim_section) ||
            (p->flags & SC_CONF_F_BYNAME))
                return 0;
        return kind < 0 || !p->kinds || (p->kinds >> kind & 1u);
}

static sc_err_t sc_conf_enum_fail(sc_conf_ctx_t *ctx, const sc_conf_prop_t *p, const char *jpath,
                                  const char *got)
{
        char names[256], best[64] = "";
        size_t d = SIZE_MAX;

        sc_conf_names_text(p->names, names, sizeof(names));
        for (int i = 0; p->names[i]; i++)
                sc_conf_suggest(got, p->names[i], strlen(p->names[i]), best, sizeof(best), &d);
        if (best[0])
                return FAIL(ctx, jpath, "expected one of %s, got \"%s\" (did you mean \"%s\"?)",
                            names, got, best);
        return FAIL(ctx, jpath, "expected one of %s, got \"%s\"", names, got);
}

static sc_err_t sc_conf_expected(sc_conf_ctx_t *ctx, const sc_conf_prop_t *p, const char *jpath,
                                 const json_t *v)
{
        char want[384];

        sc_conf_expect_text(p, want, sizeof(want));
        if (json_is_integer(v))
                return FAIL(ctx, jpath, "expected %s, got %" JSON_INTEGER_FORMAT, want,
                            json_integer_value(v));
        if (json_is_real(v)) {
                char num[40];
                snprintf(num, sizeof(num), "%.17g", json_real_value(v));
                if (!strpbrk(num, ".eEn"))
                        strcat(num, ".0"); /* 3.0 is not the integer 3 */
                return FAIL(ctx, jpath, "expected %s, got %s", want, num);
        }
        return FAIL(ctx, jpath, "expected %s, got %s", want, sc_conf_json_type(v));
}

/* One integer or number list item / shape dimension / scalar, range-checked. */
static sc_err_t sc_conf_number(sc_conf_ctx_t *ctx, const sc_conf_prop_t *p, const json_t *v,
                               int integer, const char *jpath, double *out)
{
        if (integer ? !json_is_integer(v) : !json_is_number(v))
                return sc_conf_expected(ctx, p, jpath, v);
        double x = json_number_value(v);
        if (!sc_conf_in_range(p, x))
                return sc_conf_expected(ctx, p, jpath, v);
        *out = x;
        return SC_OK;
}

static sc_err_t sc_conf_list(sc_conf_ctx_t *ctx, const sc_conf_prop_t *p, json_t *v, void *base,
                             const char *jpath)
{
        char ipath[SC_JPATH_MAX];
        int integer = p->type == SC_CONF_LONG_LIST;
        size_t n = json_array_size(v);
        double prev = 0;

        if (!json_is_array(v) || n > p->size)
                return sc_conf_expected(ctx, p, jpath, v);
        for (size_t i = 0; i < n; i++) {
                double x = 0;
                snprintf(ipath, sizeof(ipath), "%s[%zu]", jpath, i);
                sc_err_t err = sc_conf_number(ctx, p, json_array_get(v, i), integer, ipath, &x);
                if (err)
                        return err;
                if (i > 0 && x <= prev)
                        return FAIL(ctx, ipath, "expected ascending values, got %.15g after %.15g",
                                    x, prev);
                prev = x;
                if (integer)
                        ((long *)((char *)base + p->offset))[i] = (long)x;
                else
                        ((double *)((char *)base + p->offset))[i] = x;
        }
        *(int *)((char *)base + p->count_offset) = (int)n;
        return SC_OK;
}

static sc_err_t sc_conf_shape(sc_conf_ctx_t *ctx, const sc_conf_prop_t *p, json_t *v, void *base,
                              const char *jpath)
{
        char ipath[SC_JPATH_MAX];
        double d[3] = {1, 1, 1};
        size_t n = json_array_size(v);

        if (!json_is_array(v))
                return sc_conf_expected(ctx, p, jpath, v);
        if (n != 1 && n != 3) {
                char want[384];
                sc_conf_expect_text(p, want, sizeof(want));
                return FAIL(ctx, jpath, "expected %s, got %zu entries", want, n);
        }
        for (size_t i = 0; i < n; i++) {
                snprintf(ipath, sizeof(ipath), "%s[%zu]", jpath, i);
                sc_err_t err = sc_conf_number(ctx, p, json_array_get(v, i), 1, ipath, &d[i]);
                if (err)
                        return err;
        }
        if (d[0] * d[1] * d[2] > (double)(1 << 28))
                return FAIL(ctx, jpath, "%.0f features per sample is too many (at most %d)",
                            d[0] * d[1] * d[2], 1 << 28);
        sc_shape_t s = {(int)d[0], (int)d[1], (int)d[2]};
        memcpy((char *)base + p->offset, &s, sizeof(s));
        return SC_OK;
}

static sc_err_t sc_conf_passthrough(sc_conf_ctx_t *ctx, const sc_conf_prop_t *p, json_t *v,
                                    void *base, const char *jpath)
{
        char kpath[SC_JPATH_MAX];
        const char *key;
        json_t *item;

        if (!json_is_object(v))
                return sc_conf_expected(ctx, p, jpath, v);
        json_object_foreach(v, key, item)
        {
                if (json_is_string(item) || json_is_number(item) || json_is_boolean(item))
                        continue;
                snprintf(kpath, sizeof(kpath), "%s.%s", jpath, key);
                return FAIL(ctx, kpath, "expected string, number or boolean, got %s",
                            sc_conf_json_type(item));
        }
        json_t **slot = (json_t **)((char *)base + p->offset);
        json_t *copy = json_deep_copy(v);
        if (!copy)
                return sc_errf(SC_ERR_NOMEM, ctx->errstr, ctx->errstr_size, "%s: %s: out of memory",
                               ctx->origin, jpath);
        json_decref(*slot);
        *slot = copy;
        return SC_OK;
}

static sc_err_t sc_conf_parse_elem(sc_conf_ctx_t *ctx, const sc_conf_list_t *l, json_t *obj,
                                   const char *jpath, void *elem, uint32_t *given);

static sc_err_t sc_conf_objlist(sc_conf_ctx_t *ctx, const sc_conf_prop_t *p, json_t *v, void *base,
                                const char *jpath)
{
        char ipath[SC_JPATH_MAX];
        size_t n = json_array_size(v);
        uint32_t *given = (uint32_t *)((char *)ctx->conf + p->list->given_offset);

        if (!json_is_array(v))
                return sc_conf_expected(ctx, p, jpath, v);
        if (n > p->size)
                return FAIL(ctx, jpath, "at most %zu entries (got %zu)", p->size, n);
        /* the elements given before (an override) let go of their shared values */
        sc_conf_list_refs(p, base, *(int *)((char *)base + p->count_offset), 0);
        *(int *)((char *)base + p->count_offset) = 0;
        for (size_t i = 0; i < n; i++) {
                snprintf(ipath, sizeof(ipath), "%s[%zu]", jpath, i);
                char *elem = (char *)base + p->offset + i * p->list->elem_size;
                /* counted before it is parsed: a failure releases what it took */
                memset(elem, 0, p->list->elem_size);
                *(int *)((char *)base + p->count_offset) = (int)i + 1;
                sc_err_t err =
                    sc_conf_parse_elem(ctx, p->list, json_array_get(v, i), ipath, elem, &given[i]);
                if (err)
                        return err;
        }
        *(int *)((char *)base + p->count_offset) = (int)n;
        return SC_OK;
}

static sc_err_t sc_conf_value(sc_conf_ctx_t *ctx, const sc_conf_prop_t *p, json_t *v, void *base,
                              const char *jpath)
{
        char *at = (char *)base + p->offset;
        double x = 0;
        sc_err_t err;

        switch (p->type) {
        case SC_CONF_INT:
        case SC_CONF_LONG:
        case SC_CONF_UINT64:
        case SC_CONF_SIZE:
                if (!json_is_integer(v) || !sc_conf_in_range(p, json_number_value(v)) ||
                    ((p->type == SC_CONF_UINT64 || p->type == SC_CONF_SIZE) &&
                     json_integer_value(v) < 0) ||
                    (p->type == SC_CONF_INT &&
                     (json_integer_value(v) > INT_MAX || json_integer_value(v) < INT_MIN)))
                        return sc_conf_expected(ctx, p, jpath, v);
                if (p->type == SC_CONF_INT)
                        *(int *)at = (int)json_integer_value(v);
                else if (p->type == SC_CONF_LONG)
                        *(long *)at = (long)json_integer_value(v);
                else if (p->type == SC_CONF_SIZE)
                        *(size_t *)at = (size_t)json_integer_value(v);
                else
                        *(uint64_t *)at = (uint64_t)json_integer_value(v);
                return SC_OK;
        case SC_CONF_DOUBLE:
        case SC_CONF_FLOAT:
                if ((err = sc_conf_number(ctx, p, v, 0, jpath, &x)))
                        return err;
                if (p->type == SC_CONF_DOUBLE)
                        *(double *)at = x;
                else
                        *(float *)at = (float)x;
                return SC_OK;
        case SC_CONF_BOOL:
                if (!json_is_boolean(v))
                        return sc_conf_expected(ctx, p, jpath, v);
                *(int *)at = json_is_true(v);
                return SC_OK;
        case SC_CONF_STRING:
        case SC_CONF_ENUM:
                if (!json_is_string(v))
                        return sc_conf_expected(ctx, p, jpath, v);
                const char *s = json_string_value(v);
                if (strlen(s) != json_string_length(v))
                        return FAIL(ctx, jpath, "string contains a NUL character");
                int idx = -1;
                for (int i = 0; p->names && p->names[i]; i++)
                        if (!strcmp(p->names[i], s))
                                idx = i;
                if (p->names && idx < 0)
                        return sc_conf_enum_fail(ctx, p, jpath, s);
                if (p->type == SC_CONF_ENUM) {
                        *(int *)at = idx;
                        return SC_OK;
                }
                if (strlen(s) >= p->size)
                        return FAIL(ctx, jpath, "expected string of at most %zu bytes, got %zu",
                                    p->size - 1, strlen(s));
                memcpy(at, s, strlen(s) + 1);
                return SC_OK;
        case SC_CONF_LONG_LIST:
        case SC_CONF_DOUBLE_LIST:
                return sc_conf_list(ctx, p, v, base, jpath);
        case SC_CONF_SHAPE:
                return sc_conf_shape(ctx, p, v, base, jpath);
        case SC_CONF_OBJ_LIST:
                return sc_conf_objlist(ctx, p, v, base, jpath);
        case SC_CONF_PASSTHROUGH:
                return sc_conf_passthrough(ctx, p, v, base, jpath);
        case SC_CONF_CUSTOM:
                return p->parse(v, at, ctx->origin, jpath, ctx->errstr, ctx->errstr_size);
        }
        return FAIL(ctx, jpath, "unknown property type");
}

sc_err_t sc_conf_parse_value(const sc_conf_prop_t *prop, json_t *v, void *base, sc_conf_t *conf,
                             const char *origin, const char *jpath, char *errstr,
                             size_t errstr_size)
{
        sc_conf_ctx_t ctx = {conf, origin, errstr, errstr_size};
        return sc_conf_value(&ctx, prop, v, base, jpath);
}

/* Message for key, not a property at prefix (of list l, element kind). */
static sc_err_t sc_conf_unknown(sc_conf_ctx_t *ctx, const sc_conf_list_t *l, int kind,
                                const char *prefix, const char *key, const char *jpath)
{
        const sc_conf_prop_t *props = l ? l->props : sc_conf_props;
        size_t n = l ? l->nprops : sc_conf_nprops, plen = strlen(prefix);
        char best[128] = "", allowed[512] = "";
        size_t d = SIZE_MAX, alen = 0;
        int other_kind = 0;

        for (size_t i = 0; i < n; i++) {
                const char *path = props[i].path;
                if (strncmp(path, prefix, plen))
                        continue;
                const char *seg = path + plen;
                size_t seglen = strcspn(seg, ".");
                if (!sc_conf_row_allowed(ctx, &props[i], kind)) {
                        other_kind |= strlen(key) == seglen && !strncmp(seg, key, seglen);
                        continue;
                }
                sc_conf_suggest(key, seg, seglen, best, sizeof(best), &d);
                int seen = 0;
                for (size_t k = 0; k < i && !seen; k++)
                        seen = !strncmp(props[k].path, prefix, plen) &&
                               sc_conf_row_allowed(ctx, &props[k], kind) &&
                               strcspn(props[k].path + plen, ".") == seglen &&
                               !strncmp(props[k].path + plen, seg, seglen);
                if (!seen && alen < sizeof(allowed))
                        alen += (size_t)snprintf(allowed + alen, sizeof(allowed) - alen, "%s%.*s",
                                                 alen ? ", " : "", (int)seglen, seg);
        }
        if (l && l->tag && kind >= 0) {
                const sc_conf_prop_t *tag = sc_conf_find(l->props, l->nprops, l->tag);
                const char *kname = tag->names[kind];
                if (other_kind)
                        return FAIL(ctx, jpath, "not a key of %s %ss (%s takes: %s)", kname,
                                    l->elem_name, kname, allowed);
                if (best[0])
                        return FAIL(ctx, jpath,
                                    "unknown key of %s %ss (did you mean \"%s\"?; %s takes: %s)",
                                    kname, l->elem_name, best, kname, allowed);
                return FAIL(ctx, jpath, "unknown key of %s %ss (%s takes: %s)", kname, l->elem_name,
                            kname, allowed);
        }
        if (strchr(key, '.'))
                return FAIL(ctx, jpath,
                            "unknown property (nest objects instead of dotted keys: "
                            "{\"a\": {\"b\": 1}})");
        if (best[0])
                return FAIL(ctx, jpath, "unknown property (did you mean \"%s\"?)", best);
        return FAIL(ctx, jpath, "unknown property (known here: %s)", allowed);
}

/* Notes that the top-level key names a documented section. */
static void sc_conf_mark_section(sc_conf_t *conf, const char *key)
{
        for (size_t s = 0; s < sc_conf_nsections; s++)
                if (!strcmp(sc_conf_sections[s].name, key))
                        conf->sections_given |= 1u << s;
}

/* Applies every key of obj: rows of l (main table if NULL) whose path is
 * prefix + key, nested objects for sections, errors for the rest. */
static sc_err_t sc_conf_walk(sc_conf_ctx_t *ctx, const sc_conf_list_t *l, int kind, uint32_t *given,
                             json_t *obj, const char *prefix, const char *jpath, void *base)
{
        const sc_conf_prop_t *props = l ? l->props : sc_conf_props;
        size_t n = l ? l->nprops : sc_conf_nprops;
        char full[SC_JPATH_MAX], kpath[SC_JPATH_MAX];
        const char *key;
        json_t *v;

        json_object_foreach(obj, key, v)
        {
                snprintf(full, sizeof(full), "%s%s", prefix, key);
                snprintf(kpath, sizeof(kpath), "%s.%s", jpath, key);
                const sc_conf_prop_t *row = NULL;
                int section = 0;
                size_t flen = strlen(full);
                for (size_t i = 0; i < n && !row && !strchr(key, '.') && key[0]; i++) {
                        if (!sc_conf_row_allowed(ctx, &props[i], kind))
                                continue;
                        if (!strcmp(props[i].path, full))
                                row = &props[i];
                        else if (!strncmp(props[i].path, full, flen) && props[i].path[flen] == '.')
                                section = 1;
                }
                sc_err_t err;
                if (!l && !prefix[0] && (row || section))
                        sc_conf_mark_section(ctx->conf, key);
                if (row) {
                        err = sc_conf_value(ctx, row, v, base, kpath);
                        if (!err && given)
                                *given |= 1u << (row - props);
                } else if (section) {
                        if (!json_is_object(v))
                                return FAIL(ctx, kpath, "expected object, got %s",
                                            sc_conf_json_type(v));
                        snprintf(full + flen, sizeof(full) - flen, ".");
                        err = sc_conf_walk(ctx, l, kind, given, v, full, kpath, base);
                } else {
                        err = sc_conf_unknown(ctx, l, kind, prefix, key, kpath);
                }
                if (err)
                        return err;
        }
        return SC_OK;
}

static sc_err_t sc_conf_parse_elem(sc_conf_ctx_t *ctx, const sc_conf_list_t *l, json_t *obj,
                                   const char *jpath, void *elem, uint32_t *given)
{
        int kind = -1;
        sc_err_t err;

        if (!json_is_object(obj))
                return FAIL(ctx, jpath, "expected %s object, got %s", l->elem_name,
                            sc_conf_json_type(obj));
        sc_conf_elem_refs(l, elem, 0); /* an element given again lets go of its values */
        memset(elem, 0, l->elem_size);
        *given = 0;
        if (l->tag) {
                const sc_conf_prop_t *tag = sc_conf_find(l->props, l->nprops, l->tag);
                char names[256], tpath[SC_JPATH_MAX];
                json_t *tv = json_object_get(obj, l->tag);
                sc_conf_names_text(tag->names, names, sizeof(names));
                if (!tv)
                        return FAIL(ctx, jpath, "%s without \"%s\" (one of %s)", l->elem_name,
                                    l->tag, names);
                snprintf(tpath, sizeof(tpath), "%s.%s", jpath, l->tag);
                if ((err = sc_conf_value(ctx, tag, tv, elem, tpath)))
                        return err;
                kind = *(int *)((char *)elem + tag->offset);
        }
        for (size_t j = 0; j < l->nprops; j++) {
                const sc_conf_prop_t *p = &l->props[j];
                if (!p->def || !sc_conf_row_allowed(ctx, p, kind))
                        continue;
                json_t *dv = json_loads(p->def, JSON_DECODE_ANY, NULL);
                err = dv ? sc_conf_value(ctx, p, dv, elem, jpath) : SC_ERR_NOMEM;
                json_decref(dv);
                if (err)
                        return err;
        }
        if ((err = sc_conf_walk(ctx, l, kind, given, obj, "", jpath, elem)))
                return err;
        for (size_t j = 0; j < l->nprops; j++) {
                const sc_conf_prop_t *p = &l->props[j];
                if (!(p->flags & SC_CONF_F_REQUIRED) || !sc_conf_row_allowed(ctx, p, kind) ||
                    (*given >> j & 1u))
                        continue;
                if (kind < 0)
                        return FAIL(ctx, jpath, "%s needs \"%s\"", l->elem_name, p->path);
                const sc_conf_prop_t *tag = sc_conf_find(l->props, l->nprops, l->tag);
                return FAIL(ctx, jpath, "%s %s needs \"%s\"", tag->names[kind], l->elem_name,
                            p->path);
        }
        return SC_OK;
}

static sc_err_t sc_conf_parse_as(sc_conf_t *conf, const char *json_text, const char *origin,
                                 int sim, char *errstr, size_t errstr_size)
{
        sc_conf_ctx_t ctx = {conf, origin ? origin : "config", errstr, errstr_size};
        json_error_t jerr;
        const char *p = json_text;
        sc_err_t err;

        sc_conf_defaults(conf);
        conf->sim_section = sim;
        snprintf(conf->origin, sizeof(conf->origin), "%s", ctx.origin);
        while (isspace((unsigned char)*p))
                p++;
        if (!*p)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "%s: empty configuration (expected a JSON object)", ctx.origin);
        json_t *root = json_loads(json_text, JSON_REJECT_DUPLICATES, &jerr);
        if (!root) {
                char dup[SC_CONF_PATH_MAX];
                if (json_error_code(&jerr) == json_error_duplicate_key &&
                    !sc_conf_dup_path(json_text, (size_t)jerr.position, dup, sizeof(dup)))
                        return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                       "%s: %s: key given twice (line %d, column %d)", ctx.origin,
                                       dup, jerr.line, jerr.column);
                char why[JSON_ERROR_TEXT_LENGTH];
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size, "%s:%d:%d: invalid JSON: %s",
                               ctx.origin, jerr.line, jerr.column,
                               sc_conf_json_error(jerr.text, why, sizeof(why)));
        }
        if (!json_is_object(root))
                err = FAIL(&ctx, "$", "expected object, got %s", sc_conf_json_type(root));
        else
                err = sc_conf_walk(&ctx, NULL, -1, NULL, root, "", "$", conf);
        json_decref(root);
        if (!err)
                err = sc_conf_validate(conf, errstr, errstr_size);
        if (err) {
                sc_conf_free(conf);
                sc_conf_defaults(conf);
        }
        return err;
}

const char *sc_conf_json_error(const char *text, char *buf, size_t size)
{
        /* jansson ends its text with " near '<token>'" (or " near end of
         * file"): the token may be part of a secret, and the line and
         * column locate it without it. */
        const char *near = strstr(text, " near '");
        int n = near ? (int)(near - text) : (int)strlen(text);
        snprintf(buf, size, "%.*s", n, text);
        return buf;
}

sc_err_t sc_conf_parse(sc_conf_t *conf, const char *json_text, const char *origin, char *errstr,
                       size_t errstr_size)
{
        return sc_conf_parse_as(conf, json_text, origin, 0, errstr, errstr_size);
}

sc_err_t sc_conf_parse_sim(sc_conf_t *conf, const char *json_text, const char *origin, char *errstr,
                           size_t errstr_size)
{
        return sc_conf_parse_as(conf, json_text, origin, 1, errstr, errstr_size);
}

/* {"a": {"b": v}} for path "a.b" (steals v). */
static json_t *sc_conf_nest(const char *path, json_t *v)
{
        const char *dot = strrchr(path, '.');
        json_t *obj = json_object();
        char head[SC_JPATH_MAX];

        if (!obj || json_object_set_new(obj, dot ? dot + 1 : path, v)) {
                json_decref(obj);
                return NULL;
        }
        if (!dot)
                return obj;
        snprintf(head, sizeof(head), "%.*s", (int)(dot - path), path);
        return sc_conf_nest(head, obj);
}

/* "list[i]" or "list[i].rest" overrides. */
static sc_err_t sc_conf_set_elem(sc_conf_ctx_t *ctx, const char *path, const char *br, json_t *v)
{
        char lpath[256], jpath[SC_JPATH_MAX];
        const sc_conf_prop_t *p;
        char *end;

        snprintf(lpath, sizeof(lpath), "%.*s", (int)(br - path), path);
        p = sc_conf_find(sc_conf_props, sc_conf_nprops, lpath);
        snprintf(jpath, sizeof(jpath), "$.%s", lpath);
        if (!p || p->type != SC_CONF_OBJ_LIST)
                return FAIL(ctx, jpath, "not a list property");
        unsigned long idx = strtoul(br + 1, &end, 10);
        if (!isdigit((unsigned char)br[1]) || *end != ']' || (end[1] && end[1] != '.'))
                return FAIL(ctx, jpath, "expected %s[<index>] or %s[<index>].<key>", lpath, lpath);
        int *count = (int *)((char *)ctx->conf + p->count_offset);
        snprintf(jpath, sizeof(jpath), "$.%s[%lu]", lpath, idx);
        if (idx > (unsigned long)*count || (end[1] && idx == (unsigned long)*count) ||
            idx >= p->size)
                return FAIL(ctx, jpath, "no such entry (the list has %d)", *count);
        char *elem = (char *)ctx->conf + p->offset + idx * p->list->elem_size;
        uint32_t *given = (uint32_t *)((char *)ctx->conf + p->list->given_offset) + idx;
        if (!end[1]) {
                sc_err_t err = sc_conf_parse_elem(ctx, p->list, v, jpath, elem, given);
                if (!err && idx == (unsigned long)*count)
                        (*count)++;
                return err;
        }
        const sc_conf_prop_t *tag =
            p->list->tag ? sc_conf_find(p->list->props, p->list->nprops, p->list->tag) : NULL;
        json_t *obj = sc_conf_nest(end + 2, json_incref(v));
        if (!obj)
                return sc_errf(SC_ERR_NOMEM, ctx->errstr, ctx->errstr_size, "out of memory");
        sc_err_t err;
        if (tag && json_object_get(obj, tag->path)) {
                /* A new type: the element starts over from that type's defaults. */
                err = sc_conf_parse_elem(ctx, p->list, obj, jpath, elem, given);
        } else {
                int kind = tag ? *(int *)(elem + tag->offset) : -1;
                err = sc_conf_walk(ctx, p->list, kind, given, obj, "", jpath, elem);
        }
        json_decref(obj);
        return err;
}

static sc_err_t sc_conf_assign(sc_conf_ctx_t *ctx, const char *path, json_t *v)
{
        char jpath[SC_JPATH_MAX + 8];
        const char *br = strchr(path, '[');

        for (size_t i = 0; i < sc_conf_nprops; i++) {
                const sc_conf_prop_t *p = &sc_conf_props[i];
                size_t plen = strlen(p->path);
                if (p->type != SC_CONF_PASSTHROUGH || strncmp(path, p->path, plen) ||
                    path[plen] != '.')
                        continue;
                /* "kafka.<key>": the key may itself contain dots. */
                snprintf(jpath, sizeof(jpath), "$.%s", path);
                if (!path[plen + 1])
                        return FAIL(ctx, jpath, "empty key");
                json_t **slot = (json_t **)((char *)ctx->conf + p->offset);
                json_t *obj = *slot ? json_deep_copy(*slot) : json_object();
                if (!obj || json_object_set(obj, path + plen + 1, v)) {
                        json_decref(obj);
                        return sc_errf(SC_ERR_NOMEM, ctx->errstr, ctx->errstr_size,
                                       "out of memory");
                }
                snprintf(jpath, sizeof(jpath), "$.%s", p->path);
                sc_conf_mark_section(ctx->conf, p->path);
                sc_err_t err = sc_conf_value(ctx, p, obj, ctx->conf, jpath);
                json_decref(obj);
                return err;
        }
        if (br)
                return sc_conf_set_elem(ctx, path, br, v);
        json_t *obj = sc_conf_nest(path, json_incref(v));
        if (!obj)
                return sc_errf(SC_ERR_NOMEM, ctx->errstr, ctx->errstr_size, "out of memory");
        sc_err_t err = sc_conf_walk(ctx, NULL, -1, NULL, obj, "", "$", ctx->conf);
        json_decref(obj);
        return err;
}

/* One "path=value" override into the configuration of ctx. */
static sc_err_t sc_conf_assign_text(sc_conf_ctx_t *ctx, const char *assignment)
{
        char path[SC_JPATH_MAX];
        const char *eq = strchr(assignment, '=');
        if (!eq || eq == assignment || (size_t)(eq - assignment) >= sizeof(path))
                return sc_errf(SC_ERR_CONFIG, ctx->errstr, ctx->errstr_size,
                               "override: \"%s\": expected <property>=<value>", assignment);
        snprintf(path, sizeof(path), "%.*s", (int)(eq - assignment), assignment);
        json_t *v = json_loads(eq + 1, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
        if (!v)
                v = json_string(eq + 1);
        if (!v)
                return sc_errf(SC_ERR_CONFIG, ctx->errstr, ctx->errstr_size,
                               "override: %s: value is not valid UTF-8", path);
        sc_err_t err = sc_conf_assign(ctx, path, v);
        json_decref(v);
        return err;
}

sc_err_t sc_conf_set_all(sc_conf_t *conf, const char *const *assignments, int n, char *errstr,
                         size_t errstr_size)
{
        char origin[SC_CONF_ORIGIN_MAX];
        sc_err_t err = SC_OK;
        sc_conf_t *tmp = malloc(sizeof(*tmp));
        if (!tmp)
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
        *tmp = *conf;
        sc_conf_ref_values(tmp);
        json_incref((json_t *)tmp->kafka);
        json_incref((json_t *)tmp->kafka_consumer);
        json_incref((json_t *)tmp->kafka_producer);
        memcpy(origin, conf->origin, sizeof(origin));
        snprintf(tmp->origin, sizeof(tmp->origin), "override");
        sc_conf_ctx_t ctx = {tmp, "override", errstr, errstr_size};
        for (int i = 0; !err && i < n; i++)
                err = sc_conf_assign_text(&ctx, assignments[i]);
        if (!err)
                err = sc_conf_validate(tmp, errstr, errstr_size);
        if (err) {
                sc_conf_free(tmp);
                free(tmp);
                return err;
        }
        memcpy(tmp->origin, origin, sizeof(origin));
        sc_conf_free(conf);
        *conf = *tmp;
        free(tmp);
        return SC_OK;
}

sc_err_t sc_conf_set(sc_conf_t *conf, const char *assignment, char *errstr, size_t errstr_size)
{
        return sc_conf_set_all(conf, &assignment, 1, errstr, errstr_size);
}
