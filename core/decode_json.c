/* decode_json.c — the json record decoder: one strict RFC 8259 pass over
 * the value, without allocation, that validates the whole text (duplicate
 * member names in an object included) and picks the features array and the
 * label number out at their configured paths. */
#include "decode_impl.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SC_JSON_DEPTH_MAX 128 /* deeper documents are refused as bad_json */
#define SC_JSON_FEAT_DEPTH 8  /* nesting allowed inside the features value */
#define SC_JSON_KEY_MAX 128   /* unescaped key bytes compared against a path */
/* Member names of the open objects remembered (a 64-bit FNV-1a hash of
 * their unescaped bytes, and where they start) to refuse duplicates; a
 * record with more open at once is refused as bad_json. */
#define SC_JSON_KEYS_MAX 1024

/* Targets matched in one pass: bit t of a mask is target t. */
enum { SC_JSON_T_FEATURES = 0, SC_JSON_T_LABEL = 1, SC_JSON_T_FIELD0 = 2 };
_Static_assert(SC_JSON_T_FIELD0 + SC_FIELDS_MAX <= 64, "a target mask is 64 bits");
_Static_assert(SC_FIELDS_TEXT_MAX == SC_JSON_KEY_MAX && SC_FIELDS_PATH_MAX == SC_DECODE_PATH_MAX,
               "a field's text and path fit the json decoder's buffers");

typedef struct sc_json {
        const unsigned char *p, *start, *end;
        int depth;
        int bad;          /* syntax error */
        char bad_msg[64]; /* what, at bad_pos */
        size_t bad_pos;
        const sc_decode_path_t *tp[SC_JSON_T_FIELD0 + SC_FIELDS_MAX]; /* target paths */
        const sc_fields_t *fields;
        /* features */
        float *x;
        size_t numel, n;
        int f_found;
        sc_decode_fault_t f_fault;
        char f_msg[96];
        /* label */
        int l_found, l_number, l_text, l_null;
        double l_value;
        size_t l_len;
        unsigned char l_buf[SC_JSON_KEY_MAX];
        /* named fields */
        sc_fval_t vals[SC_FIELDS_MAX];
        /* member names of the open objects, innermost last */
        size_t nkeys;
        uint64_t keys[SC_JSON_KEYS_MAX];
        const unsigned char *key_at[SC_JSON_KEYS_MAX]; /* the name's opening quote */
} sc_json_t;

static void sc_json_fail(sc_json_t *j, const char *msg)
{
        if (!j->bad) {
                j->bad = 1;
                snprintf(j->bad_msg, sizeof(j->bad_msg), "%s", msg);
                j->bad_pos = (size_t)(j->p - j->start);
        }
        j->p = j->end; /* stop scanning */
}

static void sc_json_ws(sc_json_t *j)
{
        while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
                j->p++;
}

static int sc_json_hex(unsigned char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/* Reads 4 hex digits at j->p (after "\u"). -1 if malformed. */
static long sc_json_u4(sc_json_t *j)
{
        long v = 0;
        if (j->end - j->p < 4)
                return -1;
        for (int i = 0; i < 4; i++) {
                int h = sc_json_hex(j->p[i]);
                if (h < 0)
                        return -1;
                v = v * 16 + h;
        }
        j->p += 4;
        return v;
}

/* Length of the valid UTF-8 sequence at p (lead byte >= 0x80), 0 if invalid. */
static int sc_json_utf8(const unsigned char *p, const unsigned char *end)
{
        unsigned char c = p[0];
        int n;
        unsigned char lo = 0x80, hi = 0xbf;
        if (c >= 0xc2 && c <= 0xdf)
                n = 2;
        else if (c >= 0xe0 && c <= 0xef) {
                n = 3;
                if (c == 0xe0)
                        lo = 0xa0;
                else if (c == 0xed)
                        hi = 0x9f;
        } else if (c >= 0xf0 && c <= 0xf4) {
                n = 4;
                if (c == 0xf0)
                        lo = 0x90;
                else if (c == 0xf4)
                        hi = 0x8f;
        } else
                return 0;
        if (end - p < n || p[1] < lo || p[1] > hi)
                return 0;
        for (int i = 2; i < n; i++)
                if (p[i] < 0x80 || p[i] > 0xbf)
                        return 0;
        return n;
}

static size_t sc_json_put_utf8(unsigned char *out, size_t at, size_t cap, long cp)
{
        unsigned char b[4];
        size_t n;
        if (cp < 0x80) {
                b[0] = (unsigned char)cp;
                n = 1;
        } else if (cp < 0x800) {
                b[0] = (unsigned char)(0xc0 | (cp >> 6));
                b[1] = (unsigned char)(0x80 | (cp & 0x3f));
                n = 2;
        } else if (cp < 0x10000) {
                b[0] = (unsigned char)(0xe0 | (cp >> 12));
                b[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
                b[2] = (unsigned char)(0x80 | (cp & 0x3f));
                n = 3;
        } else {
                b[0] = (unsigned char)(0xf0 | (cp >> 18));
                b[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
                b[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
                b[3] = (unsigned char)(0x80 | (cp & 0x3f));
                n = 4;
        }
        for (size_t i = 0; i < n; i++)
                if (at + i < cap)
                        out[at + i] = b[i];
        return at + n;
}

/* One unescaped byte of a string: kept in key (up to SC_JSON_KEY_MAX) and
 * hashed (h may be NULL: a value's bytes are not). */
static void sc_json_key_byte(unsigned char *key, size_t *k, uint64_t *h, unsigned char c)
{
        if (key && *k < SC_JSON_KEY_MAX)
                key[*k] = c;
        (*k)++;
        if (h)
                *h = (*h ^ c) * SC_FNV_PRIME;
}

static int sc_json_string(sc_json_t *j, unsigned char *key, size_t *key_len, uint64_t *hashp);

/* 1 if the member names starting at a and b (opening quotes, both already
 * validated) unescape to the same bytes: compared on their lengths and
 * their first SC_JSON_KEY_MAX bytes (their hashes matched already). */
static int sc_json_same_name(const sc_json_t *j, const unsigned char *a, const unsigned char *b)
{
        unsigned char ka[SC_JSON_KEY_MAX], kb[SC_JSON_KEY_MAX];
        size_t la = 0, lb = 0;
        sc_json_t t = {.start = j->start, .end = j->end};
        t.p = a;
        sc_json_string(&t, ka, &la, NULL);
        t.p = b;
        sc_json_string(&t, kb, &lb, NULL);
        return la == lb && !memcmp(ka, kb, la < SC_JSON_KEY_MAX ? la : SC_JSON_KEY_MAX);
}

/* Scans a string at j->p (on the opening quote). If key is not NULL, its
 * unescaped bytes go there (up to SC_JSON_KEY_MAX); *key_len gets the full
 * length and *hashp their FNV-1a hash (either may be NULL). Returns 0, or -1
 * after sc_json_fail. */
static int sc_json_string(sc_json_t *j, unsigned char *key, size_t *key_len, uint64_t *hashp)
{
        size_t k = 0;
        uint64_t h = SC_FNV_OFFSET, *hp = hashp ? &h : NULL;
        j->p++;
        for (;;) {
                if (j->p >= j->end) {
                        sc_json_fail(j, "unterminated string");
                        return -1;
                }
                unsigned char c = *j->p;
                if (c == '"') {
                        j->p++;
                        break;
                }
                if (c < 0x20) {
                        sc_json_fail(j, "control character in string");
                        return -1;
                }
                if (c == '\\') {
                        if (j->end - j->p < 2) {
                                sc_json_fail(j, "unterminated string");
                                return -1;
                        }
                        unsigned char e = j->p[1];
                        long cp;
                        j->p += 2;
                        switch (e) {
                        case '"':
                        case '\\':
                        case '/':
                                cp = e;
                                break;
                        case 'b':
                                cp = '\b';
                                break;
                        case 'f':
                                cp = '\f';
                                break;
                        case 'n':
                                cp = '\n';
                                break;
                        case 'r':
                                cp = '\r';
                                break;
                        case 't':
                                cp = '\t';
                                break;
                        case 'u':
                                cp = sc_json_u4(j);
                                if (cp >= 0xd800 && cp <= 0xdbff) {
                                        long lo = -1;
                                        if (j->end - j->p >= 2 && j->p[0] == '\\' &&
                                            j->p[1] == 'u') {
                                                j->p += 2;
                                                lo = sc_json_u4(j);
                                        }
                                        if (lo < 0xdc00 || lo > 0xdfff)
                                                cp = -1;
                                        else
                                                cp =
                                                    0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                                } else if (cp >= 0xdc00 && cp <= 0xdfff) {
                                        cp = -1;
                                }
                                if (cp == 0)
                                        cp = -1; /* NUL is not allowed in strings here */
                                break;
                        default:
                                cp = -1;
                        }
                        if (cp < 0) {
                                sc_json_fail(j, "invalid escape in string");
                                return -1;
                        }
                        unsigned char b[4];
                        size_t nb = sc_json_put_utf8(b, 0, sizeof(b), cp);
                        for (size_t i = 0; i < nb; i++)
                                sc_json_key_byte(key, &k, hp, b[i]);
                        continue;
                }
                if (c < 0x80) {
                        sc_json_key_byte(key, &k, hp, c);
                        j->p++;
                        continue;
                }
                int n = sc_json_utf8(j->p, j->end);
                if (!n) {
                        sc_json_fail(j, "invalid UTF-8 in string");
                        return -1;
                }
                for (int i = 0; i < n; i++)
                        sc_json_key_byte(key, &k, hp, j->p[i]);
                j->p += n;
        }
        if (key_len)
                *key_len = k;
        if (hashp)
                *hashp = h;
        return 0;
}

/* Scans a number; *out gets its value. Returns 0, or -1 after sc_json_fail. */
static int sc_json_number(sc_json_t *j, double *out)
{
        const unsigned char *s = j->p, *q = j->p;
        if (q < j->end && *q == '-')
                q++;
        if (q < j->end && *q == '0')
                q++;
        else if (q < j->end && *q >= '1' && *q <= '9')
                while (q < j->end && *q >= '0' && *q <= '9')
                        q++;
        else
                goto bad;
        if (q < j->end && *q == '.') {
                q++;
                if (q == j->end || *q < '0' || *q > '9')
                        goto bad;
                while (q < j->end && *q >= '0' && *q <= '9')
                        q++;
        }
        if (q < j->end && (*q == 'e' || *q == 'E')) {
                q++;
                if (q < j->end && (*q == '+' || *q == '-'))
                        q++;
                if (q == j->end || *q < '0' || *q > '9')
                        goto bad;
                while (q < j->end && *q >= '0' && *q <= '9')
                        q++;
        }
        j->p = q;
        if (sc_decode_number((const char *)s, (const char *)q, out) < 0) {
                /* Valid JSON but too long for the converter. */
                char buf[512];
                size_t n = (size_t)(q - s);
                if (n >= sizeof(buf)) {
                        sc_json_fail(j, "number too long");
                        return -1;
                }
                memcpy(buf, s, n);
                buf[n] = '\0';
                *out = strtod(buf, NULL);
        }
        return 0;
bad:
        sc_json_fail(j, "invalid number");
        return -1;
}

static int sc_json_lit(sc_json_t *j, const char *lit, size_t n)
{
        if ((size_t)(j->end - j->p) < n || memcmp(j->p, lit, n)) {
                sc_json_fail(j, "invalid literal");
                return -1;
        }
        j->p += n;
        return 0;
}

/* At an opening '[' or '{' (close: its ']' or '}'): enters it one level
 * deeper; 1 when it closes at once (consumed, level left), 0 when an element
 * follows, -1 (failed) when nested too deeply. */
static int sc_json_open(sc_json_t *j, char close)
{
        if (++j->depth > SC_JSON_DEPTH_MAX) {
                sc_json_fail(j, "nested too deeply");
                return -1;
        }
        j->p++;
        sc_json_ws(j);
        if (j->p < j->end && *j->p == close) {
                j->p++;
                j->depth--;
                return 1;
        }
        return 0;
}

/* After an element of an array or object: 1 at ',' (another follows), 0 at
 * close (consumed, level left), -1 (failed) otherwise. */
static int sc_json_next(sc_json_t *j, char close)
{
        sc_json_ws(j);
        if (j->p < j->end && *j->p == ',') {
                j->p++;
                return 1;
        }
        if (j->p < j->end && *j->p == close) {
                j->p++;
                j->depth--;
                return 0;
        }
        sc_json_fail(j, close == ']' ? "expected ',' or ']'" : "expected ',' or '}'");
        return -1;
}

static void sc_json_value(sc_json_t *j, int d, uint64_t mask);

static void sc_json_feature_fault(sc_json_t *j, sc_decode_fault_t f, const char *what)
{
        if (j->f_fault == SC_DECODE_OK) {
                j->f_fault = f;
                snprintf(j->f_msg, sizeof(j->f_msg), "element %zu %s", j->n, what);
        }
}

/* The features value (or a nested array inside it) at j->p. */
static void sc_json_features(sc_json_t *j, int depth)
{
        sc_json_ws(j);
        if (j->p >= j->end) {
                sc_json_fail(j, "unexpected end");
                return;
        }
        if (*j->p == '[') {
                if (depth >= SC_JSON_FEAT_DEPTH) {
                        if (j->f_fault == SC_DECODE_OK) {
                                j->f_fault = SC_DECODE_WRONG_LENGTH;
                                snprintf(j->f_msg, sizeof(j->f_msg), "arrays nested deeper than %d",
                                         SC_JSON_FEAT_DEPTH);
                        }
                        sc_json_value(j, 0, 0);
                        return;
                }
                if (sc_json_open(j, ']'))
                        return;
                for (;;) {
                        sc_json_features(j, depth + 1);
                        int more = sc_json_next(j, ']');
                        if (more < 0)
                                return;
                        if (!more)
                                break;
                }
                return;
        }
        if (*j->p == '-' || (*j->p >= '0' && *j->p <= '9')) {
                double v;
                if (sc_json_number(j, &v) < 0)
                        return;
                if (j->n < j->numel) {
                        float fv = (float)v;
                        if (!isfinite(fv))
                                sc_json_feature_fault(j, SC_DECODE_NOT_FINITE,
                                                      "is not finite as float");
                        j->x[j->n] = fv;
                }
                j->n++;
                return;
        }
        sc_json_feature_fault(j, SC_DECODE_NOT_NUMERIC, "is not a number");
        sc_json_value(j, 0, 0);
}

/* The targets of mask whose step d is the member name key / the index. */
static uint64_t sc_json_match_key(const sc_json_t *j, int d, uint64_t mask,
                                  const unsigned char *key, size_t len)
{
        uint64_t out = 0;
        if (len > SC_JSON_KEY_MAX)
                return 0;
        for (uint64_t m = mask; m; m &= m - 1) {
                int t = __builtin_ctzll(m);
                const sc_decode_path_t *path = j->tp[t];
                if (!path->step[d].is_index && path->step[d].len == len &&
                    !memcmp(path->step[d].name, key, len))
                        out |= 1ull << t;
        }
        return out;
}

static uint64_t sc_json_match_index(const sc_json_t *j, int d, uint64_t mask, size_t index)
{
        uint64_t out = 0;
        for (uint64_t m = mask; m; m &= m - 1) {
                int t = __builtin_ctzll(m);
                const sc_decode_path_t *path = j->tp[t];
                if (path->step[d].is_index && path->step[d].index == index)
                        out |= 1ull << t;
        }
        return out;
}

/* The features array's value at j->p; rest: the other targets leading here. */
static void sc_json_at_features(sc_json_t *j, int d, uint64_t rest)
{
        j->f_found = 1;
        j->f_fault = SC_DECODE_OK;
        j->n = 0;
        if (*j->p == '[' || (j->numel == 1 && (*j->p == '-' || (*j->p >= '0' && *j->p <= '9')))) {
                sc_json_features(j, 0);
                return;
        }
        int num = *j->p == '-' || (*j->p >= '0' && *j->p <= '9');
        j->f_fault = num ? SC_DECODE_WRONG_LENGTH : SC_DECODE_NOT_NUMERIC;
        snprintf(j->f_msg, sizeof(j->f_msg), "expected an array of numbers");
        sc_json_value(j, d, rest);
}

/* The label's value at j->p: a number or a string (a class name). */
static void sc_json_at_label(sc_json_t *j, int d, uint64_t rest)
{
        j->l_found = 1;
        j->l_number = *j->p == '-' || (*j->p >= '0' && *j->p <= '9');
        j->l_text = *j->p == '"';
        j->l_null = *j->p == 'n';
        if (j->l_number)
                sc_json_number(j, &j->l_value);
        else if (j->l_text)
                sc_json_string(j, j->l_buf, &j->l_len, NULL);
        else
                sc_json_value(j, d, rest);
}

/* Named field i's value at j->p. */
static void sc_json_at_field(sc_json_t *j, size_t i)
{
        const sc_field_t *f = &j->fields->field[i];
        sc_fval_t *v = &j->vals[i];
        int text = f->kind == SC_FIELD_CATEGORICAL || f->kind == SC_FIELD_HASHED;
        const unsigned char *s = j->p;

        memset(v, 0, sizeof(*v));
        switch (*j->p) {
        case '"': {
                unsigned char buf[SC_JSON_KEY_MAX];
                size_t len = 0;
                uint64_t hash = 0;
                if (sc_json_string(j, buf, &len, &hash) == 0)
                        sc_field_read_text(f, (const char *)buf, len, hash, v);
                return;
        }
        case 't':
        case 'f':
                if (sc_json_lit(j, *s == 't' ? "true" : "false", *s == 't' ? 4 : 5) < 0)
                        return;
                if (text)
                        sc_field_read_text(f, (const char *)s, (size_t)(j->p - s),
                                           sc_fnv1a(s, (size_t)(j->p - s)), v);
                else
                        v->kind = *s == 't' ? SC_FVAL_TRUE : SC_FVAL_FALSE;
                return;
        case 'n':
                sc_json_lit(j, "null", 4);
                v->kind = SC_FVAL_NULL;
                return;
        case '{':
        case '[':
                v->kind = SC_FVAL_OTHER;
                sc_json_value(j, 0, 0);
                return;
        default:
                if (sc_json_number(j, &v->num) < 0)
                        return;
                if (text)
                        sc_field_read_text(f, (const char *)s, (size_t)(j->p - s),
                                           sc_fnv1a(s, (size_t)(j->p - s)), v);
                else
                        v->kind = SC_FVAL_NUMBER;
                return;
        }
}

/* Any value at j->p, d steps below the root; mask: the targets whose first
 * d steps lead here. */
static void sc_json_value(sc_json_t *j, int d, uint64_t mask)
{
        sc_json_ws(j);
        if (j->p >= j->end) {
                sc_json_fail(j, "unexpected end");
                return;
        }
        for (uint64_t m = mask; m; m &= m - 1) {
                int t = __builtin_ctzll(m);
                if (j->tp[t]->n != d)
                        continue;
                uint64_t rest = mask & ~(1ull << t);
                if (t == SC_JSON_T_FEATURES)
                        sc_json_at_features(j, d, rest);
                else if (t == SC_JSON_T_LABEL)
                        sc_json_at_label(j, d, rest);
                else
                        sc_json_at_field(j, (size_t)(t - SC_JSON_T_FIELD0));
                return;
        }
        switch (*j->p) {
        case '{': {
                unsigned char key[SC_JSON_KEY_MAX];
                size_t len, base = j->nkeys;
                uint64_t hash;
                if (sc_json_open(j, '}'))
                        return;
                for (;;) {
                        sc_json_ws(j);
                        if (j->p >= j->end || *j->p != '"') {
                                sc_json_fail(j, "expected a member name");
                                return;
                        }
                        const unsigned char *name = j->p;
                        if (sc_json_string(j, mask ? key : NULL, &len, &hash) < 0)
                                return;
                        for (size_t i = base; i < j->nkeys; i++)
                                if (j->keys[i] == hash &&
                                    sc_json_same_name(j, j->key_at[i], name)) {
                                        j->p = name;
                                        sc_json_fail(j, "duplicate member name");
                                        return;
                                }
                        if (j->nkeys == SC_JSON_KEYS_MAX) {
                                j->p = name;
                                sc_json_fail(j, "too many member names in open objects");
                                return;
                        }
                        j->key_at[j->nkeys] = name;
                        j->keys[j->nkeys++] = hash;
                        sc_json_ws(j);
                        if (j->p >= j->end || *j->p != ':') {
                                sc_json_fail(j, "expected ':'");
                                return;
                        }
                        j->p++;
                        sc_json_value(j, d + 1, mask ? sc_json_match_key(j, d, mask, key, len) : 0);
                        int more = sc_json_next(j, '}');
                        if (more < 0)
                                return;
                        if (!more)
                                break;
                }
                j->nkeys = base;
                return;
        }
        case '[': {
                size_t index = 0;
                if (sc_json_open(j, ']'))
                        return;
                for (;; index++) {
                        sc_json_value(j, d + 1, mask ? sc_json_match_index(j, d, mask, index) : 0);
                        int more = sc_json_next(j, ']');
                        if (more < 0)
                                return;
                        if (!more)
                                break;
                }
                return;
        }
        case '"':
                sc_json_string(j, NULL, NULL, NULL);
                return;
        case 't':
                sc_json_lit(j, "true", 4);
                return;
        case 'f':
                sc_json_lit(j, "false", 5);
                return;
        case 'n':
                sc_json_lit(j, "null", 4);
                return;
        default: {
                double v;
                sc_json_number(j, &v);
                return;
        }
        }
}

/* 1 if a field has no json path (a csv-only field list). */
static int sc_json_paths_bad(const sc_fields_t *fs)
{
        for (size_t i = 0; i < fs->n; i++)
                if (fs->paths[i].n < 1)
                        return 1;
        return 0;
}

sc_decode_fault_t sc_decode_json(const sc_decode_spec_t *spec, const sc_record_t *rec, float *x,
                                 int32_t *label, char *errstr, size_t errstr_size)
{
        sc_decode_path_t fpath, lpath;
        sc_json_t j;
        sc_decode_fault_t f;
        const sc_fields_t *fs = spec->fields;
        int want_label = spec->label_source == SC_DECODE_LABEL_FIELD;
        uint64_t mask = 0;

        if ((!fs &&
             sc_decode_path_compile(spec->features_path, sizeof(spec->features_path), &fpath)) ||
            (want_label &&
             sc_decode_path_compile(spec->label_path, sizeof(spec->label_path), &lpath)) ||
            (fs && (fs->n > SC_FIELDS_MAX || !fs->paths || sc_json_paths_bad(fs)))) {
                sc_errf(SC_ERR_DECODE, errstr, errstr_size, "decode: malformed json path");
                return SC_DECODE_BAD_SPEC;
        }
        memset(&j, 0, offsetof(sc_json_t, keys)); /* keys[], key_at[]: written before read */
        j.p = j.start = rec->value;
        j.end = j.p + rec->value_size;
        j.x = x;
        j.numel = spec->numel;
        j.fields = fs;
        if (!fs) {
                j.tp[SC_JSON_T_FEATURES] = &fpath;
                mask |= 1ull << SC_JSON_T_FEATURES;
        }
        if (want_label) {
                j.tp[SC_JSON_T_LABEL] = &lpath;
                mask |= 1ull << SC_JSON_T_LABEL;
        }
        for (size_t i = 0; fs && i < fs->n; i++) {
                j.tp[SC_JSON_T_FIELD0 + i] = &fs->paths[i];
                mask |= 1ull << (SC_JSON_T_FIELD0 + i);
                j.vals[i].kind = SC_FVAL_ABSENT;
        }

        sc_json_ws(&j);
        if (j.p < j.end && *j.p != '{' && *j.p != '[')
                sc_json_fail(&j, "expected an object or array");
        else
                sc_json_value(&j, 0, mask);
        sc_json_ws(&j);
        if (!j.bad && j.p != j.end)
                sc_json_fail(&j, "end of text expected");
        if (j.bad) {
                sc_errf(SC_ERR_DECODE, errstr, errstr_size, "json: %s at byte %zu", j.bad_msg,
                        j.bad_pos);
                return SC_DECODE_BAD_JSON;
        }
        if (!fs) {
                if (!j.f_found) {
                        sc_errf(SC_ERR_DECODE, errstr, errstr_size, "%s: missing",
                                spec->features_path);
                        return SC_DECODE_MISSING_FIELD;
                }
                if (j.f_fault != SC_DECODE_OK) {
                        sc_errf(SC_ERR_DECODE, errstr, errstr_size, "%s: %s", spec->features_path,
                                j.f_msg);
                        return j.f_fault;
                }
                if (j.n != spec->numel) {
                        sc_errf(SC_ERR_DECODE, errstr, errstr_size,
                                "%s: expected %zu numbers, got %zu", spec->features_path,
                                spec->numel, j.n);
                        return SC_DECODE_WRONG_LENGTH;
                }
        }
        if (want_label) {
                if (!j.l_found) {
                        sc_errf(SC_ERR_DECODE, errstr, errstr_size, "%s: missing",
                                spec->label_path);
                        return SC_DECODE_MISSING_FIELD;
                }
                if (j.l_null) {
                        sc_errf(SC_ERR_DECODE, errstr, errstr_size, "%s: null (no label)",
                                spec->label_path);
                        return SC_DECODE_MISSING_FIELD;
                }
                if (j.l_text && spec->labels)
                        f = sc_decode_label_text(spec, (const char *)j.l_buf, j.l_len,
                                                 spec->label_path, 0, SC_DECODE_NOT_NUMERIC, label,
                                                 errstr, errstr_size);
                else if (!j.l_number) {
                        sc_errf(SC_ERR_DECODE, errstr, errstr_size, "%s: expected a number%s",
                                spec->label_path, spec->labels ? " or a class name" : "");
                        return SC_DECODE_NOT_NUMERIC;
                } else
                        f = sc_decode_label_number(spec, j.l_value, spec->label_path, label, errstr,
                                                   errstr_size);
        } else {
                f = sc_decode_label_meta(spec, rec, label, errstr, errstr_size);
        }
        if (f != SC_DECODE_OK)
                return f;
        if (fs)
                return sc_fields_encode(fs, j.vals, spec, x, errstr, errstr_size);
        return sc_decode_normalize(spec, x, spec->numel, errstr, errstr_size);
}
