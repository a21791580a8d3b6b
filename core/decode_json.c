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

typedef struct sc_json {
        const unsigned char *p, *start, *end;
        int depth;
        int bad;          /* syntax error */
        char bad_msg[64]; /* what, at bad_pos */
        size_t bad_pos;
        const sc_decode_path_t *fpath, *lpath;
        /* features */
        float *x;
        size_t numel, n;
        int f_found;
        sc_decode_fault_t f_fault;
        char f_msg[96];
        /* label */
        int l_found, l_number;
        double l_value;
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

#define SC_FNV_OFFSET 0xcbf29ce484222325ull
#define SC_FNV_PRIME 0x100000001b3ull

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

static void sc_json_value(sc_json_t *j, int fm, int lm);

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
                        sc_json_value(j, -1, -1);
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
        sc_json_value(j, -1, -1);
}

/* Path step matching: the child's match depth for key / index. */
static int sc_json_match_key(const sc_decode_path_t *path, int m, const unsigned char *key,
                             size_t len)
{
        if (m < 0 || m >= path->n || path->step[m].is_index || path->step[m].len != len ||
            len > SC_JSON_KEY_MAX || memcmp(path->step[m].name, key, len))
                return -1;
        return m + 1;
}

static int sc_json_match_index(const sc_decode_path_t *path, int m, size_t index)
{
        if (m < 0 || m >= path->n || !path->step[m].is_index || path->step[m].index != index)
                return -1;
        return m + 1;
}

/* Any value at j->p; fm / lm: how many steps of the features / label path
 * lead here (-1: off the path). */
static void sc_json_value(sc_json_t *j, int fm, int lm)
{
        sc_json_ws(j);
        if (j->p >= j->end) {
                sc_json_fail(j, "unexpected end");
                return;
        }
        if (fm == j->fpath->n) {
                j->f_found = 1;
                j->f_fault = SC_DECODE_OK;
                j->n = 0;
                if (*j->p == '[' ||
                    (j->numel == 1 && (*j->p == '-' || (*j->p >= '0' && *j->p <= '9')))) {
                        sc_json_features(j, 0);
                } else {
                        int num = *j->p == '-' || (*j->p >= '0' && *j->p <= '9');
                        j->f_fault = num ? SC_DECODE_WRONG_LENGTH : SC_DECODE_NOT_NUMERIC;
                        snprintf(j->f_msg, sizeof(j->f_msg), "expected an array of numbers");
                        sc_json_value(j, -1, lm);
                }
                return;
        }
        if (lm == j->lpath->n) {
                j->l_found = 1;
                j->l_number = *j->p == '-' || (*j->p >= '0' && *j->p <= '9');
                if (j->l_number)
                        sc_json_number(j, &j->l_value);
                else
                        sc_json_value(j, fm, -1);
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
                        int want = (fm >= 0 && fm < j->fpath->n) || (lm >= 0 && lm < j->lpath->n);
                        const unsigned char *name = j->p;
                        if (sc_json_string(j, want ? key : NULL, &len, &hash) < 0)
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
                        sc_json_value(j, want ? sc_json_match_key(j->fpath, fm, key, len) : -1,
                                      want ? sc_json_match_key(j->lpath, lm, key, len) : -1);
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
                        sc_json_value(j, sc_json_match_index(j->fpath, fm, index),
                                      sc_json_match_index(j->lpath, lm, index));
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

sc_decode_fault_t sc_decode_json(const sc_decode_spec_t *spec, const sc_record_t *rec, float *x,
                                 int32_t *label, char *errstr, size_t errstr_size)
{
        sc_decode_path_t fpath, lpath;
        sc_json_t j;
        sc_decode_fault_t f;
        int want_label = spec->label_source == SC_DECODE_LABEL_FIELD;

        if (sc_decode_path_compile(spec->features_path, sizeof(spec->features_path), &fpath) ||
            (want_label &&
             sc_decode_path_compile(spec->label_path, sizeof(spec->label_path), &lpath))) {
                sc_errf(SC_ERR_DECODE, errstr, errstr_size, "decode: malformed json path");
                return SC_DECODE_BAD_SPEC;
        }
        if (!want_label)
                lpath.n = SC_DECODE_PATH_STEPS + 1; /* never reached */
        memset(&j, 0, offsetof(sc_json_t, keys));   /* keys[], key_at[]: written before read */
        j.p = j.start = rec->value;
        j.end = j.p + rec->value_size;
        j.fpath = &fpath;
        j.lpath = &lpath;
        j.x = x;
        j.numel = spec->numel;

        sc_json_ws(&j);
        if (j.p < j.end && *j.p != '{' && *j.p != '[')
                sc_json_fail(&j, "expected an object or array");
        else
                sc_json_value(&j, 0, want_label ? 0 : -1);
        sc_json_ws(&j);
        if (!j.bad && j.p != j.end)
                sc_json_fail(&j, "end of text expected");
        if (j.bad) {
                sc_errf(SC_ERR_DECODE, errstr, errstr_size, "json: %s at byte %zu", j.bad_msg,
                        j.bad_pos);
                return SC_DECODE_BAD_JSON;
        }
        if (!j.f_found) {
                sc_errf(SC_ERR_DECODE, errstr, errstr_size, "%s: missing", spec->features_path);
                return SC_DECODE_MISSING_FIELD;
        }
        if (j.f_fault != SC_DECODE_OK) {
                sc_errf(SC_ERR_DECODE, errstr, errstr_size, "%s: %s", spec->features_path, j.f_msg);
                return j.f_fault;
        }
        if (j.n != spec->numel) {
                sc_errf(SC_ERR_DECODE, errstr, errstr_size, "%s: expected %zu numbers, got %zu",
                        spec->features_path, spec->numel, j.n);
                return SC_DECODE_WRONG_LENGTH;
        }
        if (want_label) {
                if (!j.l_found) {
                        sc_errf(SC_ERR_DECODE, errstr, errstr_size, "%s: missing",
                                spec->label_path);
                        return SC_DECODE_MISSING_FIELD;
                }
                if (!j.l_number) {
                        sc_errf(SC_ERR_DECODE, errstr, errstr_size, "%s: expected a number",
                                spec->label_path);
                        return SC_DECODE_NOT_NUMERIC;
                }
                f = sc_decode_label_number(spec, j.l_value, spec->label_path, label, errstr,
                                           errstr_size);
        } else {
                f = sc_decode_label_meta(spec, rec, label, errstr, errstr_size);
        }
        if (f != SC_DECODE_OK)
                return f;
        return sc_decode_normalize(spec, x, spec->numel, errstr, errstr_size);
}
