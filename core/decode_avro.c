/* decode_avro.c — Schema Registry framed Avro records by named fields: a
 * plan compiled per schema id from the writer's schema (parsed by libavro),
 * and a bounds-checked, allocation-free walker over a record's body. */
#include "sc_avro.h"
#include "decode_impl.h"

#include <avro.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SC_AV_LABEL SC_FIELDS_MAX /* the target that is the label */
#define SC_AV_NONE (-1)

/* One node of a schema expanded from its root: each occurrence of a type
 * is its own node, so a record field can be a target. */
typedef struct sc_av_node {
        avro_type_t type;
        int16_t target;  /* record field: SC_AV_NONE, a field index or SC_AV_LABEL */
        uint8_t descend; /* record field: a target is inside it */
        uint32_t n;      /* record: fields; union: branches; enum: symbols */
        uint32_t kid;    /* record/union: first of n in kids[]; array/map: the item node;
                            enum: first of n in syms[] */
        int64_t size;    /* fixed */
} sc_av_node_t;

typedef struct sc_av_sym {
        uint32_t off, len; /* into the plan's names */
        uint64_t hash;
} sc_av_sym_t;

typedef struct sc_av_plan {
        sc_av_node_t *nodes;
        uint32_t n_nodes, cap_nodes;
        uint32_t *kids;
        uint32_t n_kids, cap_kids;
        sc_av_sym_t *syms;
        uint32_t n_syms, cap_syms;
        char *names;
        size_t n_names, cap_names;
        uint64_t found; /* bit t: target t is in the schema (bit 63: the label) */
} sc_av_plan_t;

typedef struct sc_av_entry {
        int32_t id;
        sc_av_plan_t *plan; /* NULL: refused */
        char *reason;       /* refused: why */
} sc_av_entry_t;

struct sc_avro_cache {
        sc_decode_spec_t spec; /* fields and labels referenced */
        sc_av_entry_t *e;      /* sorted by id */
        size_t n, cap;
        size_t n_refused; /* entries without a plan (at most SC_AVRO_REFUSED_MAX) */
};

sc_avro_cache_t *sc_avro_cache_new(const sc_decode_spec_t *spec)
{
        sc_avro_cache_t *c = calloc(1, sizeof(*c));
        if (!c)
                return NULL;
        c->spec = *spec;
        c->spec.avro = NULL;
        c->spec.fields = spec->fields ? sc_fields_ref(spec->fields) : NULL;
        c->spec.labels = spec->labels ? sc_vocab_ref(spec->labels) : NULL;
        c->spec.header = NULL;
        return c;
}

static void sc_av_plan_free(sc_av_plan_t *p)
{
        if (!p)
                return;
        free(p->nodes);
        free(p->kids);
        free(p->syms);
        free(p->names);
        free(p);
}

void sc_avro_cache_free(sc_avro_cache_t *c)
{
        if (!c)
                return;
        for (size_t i = 0; i < c->n; i++) {
                sc_av_plan_free(c->e[i].plan);
                free(c->e[i].reason);
        }
        free(c->e);
        sc_fields_unref(c->spec.fields);
        sc_vocab_unref(c->spec.labels);
        free(c);
}

size_t sc_avro_cache_size(const sc_avro_cache_t *c)
{
        return c ? c->n : 0;
}

int sc_avro_frame_id(const void *value, size_t size, int32_t *id)
{
        const uint8_t *b = value;
        if (!b || size < 5 || b[0] != 0)
                return -1;
        *id = (int32_t)((uint32_t)b[1] << 24 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 8 | b[4]);
        return 0;
}

/* The entry of id, or where it would go (*at). */
static const sc_av_entry_t *sc_av_find(const sc_avro_cache_t *c, int32_t id, size_t *at)
{
        size_t lo = 0, hi = c->n;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (c->e[mid].id < id)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        if (at)
                *at = lo;
        return lo < c->n && c->e[lo].id == id ? &c->e[lo] : NULL;
}

size_t sc_avro_cache_absent(const sc_avro_cache_t *c, int32_t id, char *buf, size_t size)
{
        const sc_av_entry_t *e = c ? sc_av_find(c, id, NULL) : NULL;
        size_t n = 0, at = 0;
        if (size)
                buf[0] = '\0';
        if (!e || !e->plan)
                return 0;
        const sc_fields_t *fs = c->spec.fields;
        for (size_t i = 0; fs && i <= fs->n; i++) {
                int label = i == fs->n;
                if (label && c->spec.label_source != SC_DECODE_LABEL_FIELD)
                        break;
                if (e->plan->found & (1ull << (label ? 63 : i)))
                        continue;
                const char *path = label ? c->spec.label_path : fs->field[i].path;
                if (at < size)
                        at += (size_t)snprintf(buf + at, size - at, "%s%s%s", n ? ", " : "", path,
                                               label ? " (the label)" : "");
                n++;
        }
        return n;
}

int sc_avro_cache_need(const sc_avro_cache_t *c, const void *value, size_t size, int32_t *id)
{
        int32_t i;
        if (!c || sc_avro_frame_id(value, size, &i))
                return 0;
        if (id)
                *id = i;
        return sc_av_find(c, i, NULL) == NULL;
}

/* Removes entry i. */
static void sc_av_remove(sc_avro_cache_t *c, size_t i)
{
        if (!c->e[i].plan)
                c->n_refused--;
        sc_av_plan_free(c->e[i].plan);
        free(c->e[i].reason);
        memmove(c->e + i, c->e + i + 1, (c->n - i - 1) * sizeof(*c->e));
        c->n--;
}

static sc_err_t sc_av_insert(sc_avro_cache_t *c, int32_t id, sc_av_plan_t *plan, const char *reason)
{
        size_t at;
        if (sc_av_find(c, id, &at))
                return SC_ERR_STATE;
        if (plan && c->n - c->n_refused >= SC_AVRO_IDS_MAX)
                return SC_ERR_UNSUPPORTED;
        if (!plan && c->n_refused >= SC_AVRO_REFUSED_MAX) {
                /* a refused id makes room for another: the first one found */
                for (size_t i = 0; i < c->n; i++)
                        if (!c->e[i].plan) {
                                sc_av_remove(c, i);
                                break;
                        }
                sc_av_find(c, id, &at);
        }
        if (c->n == c->cap) {
                size_t nc = c->cap ? 2 * c->cap : 8;
                sc_av_entry_t *ne = realloc(c->e, nc * sizeof(*ne));
                if (!ne)
                        return SC_ERR_NOMEM;
                c->e = ne;
                c->cap = nc;
        }
        char *r = NULL;
        if (!plan && !(r = strdup(reason ? reason : "refused")))
                return SC_ERR_NOMEM;
        memmove(c->e + at + 1, c->e + at, (c->n - at) * sizeof(*c->e));
        c->e[at] = (sc_av_entry_t){id, plan, r};
        c->n++;
        c->n_refused += !plan;
        return SC_OK;
}

sc_err_t sc_avro_cache_refuse(sc_avro_cache_t *c, int32_t id, const char *reason)
{
        return sc_av_insert(c, id, NULL, reason);
}

/* ---- compiling a schema ---- */

typedef struct sc_av_build {
        sc_av_plan_t *p;
        char why[256];
} sc_av_build_t;

static int sc_av_grow(void **a, uint32_t *cap, uint32_t need, size_t elem)
{
        if (need <= *cap)
                return 0;
        uint32_t nc = *cap ? *cap : 16;
        while (nc < need)
                nc *= 2;
        void *n = realloc(*a, (size_t)nc * elem);
        if (!n)
                return -1;
        *a = n;
        *cap = nc;
        return 0;
}

/* Expands schema s into a new node (its index in *out); depth guards
 * recursive and deep schemas. -1 with b->why on failure. */
static int sc_av_expand(sc_av_build_t *b, avro_schema_t s, int depth, uint32_t *out)
{
        sc_av_plan_t *p = b->p;
        while (s && avro_typeof(s) == AVRO_LINK)
                s = avro_schema_link_target(s);
        if (!s || depth > SC_AVRO_DEPTH_MAX || p->n_nodes >= SC_AVRO_NODES_MAX) {
                snprintf(b->why, sizeof(b->why),
                         "schema is recursive or over %d levels or %d types deep",
                         SC_AVRO_DEPTH_MAX, SC_AVRO_NODES_MAX);
                return -1;
        }
        if (sc_av_grow((void **)&p->nodes, &p->cap_nodes, p->n_nodes + 1, sizeof(*p->nodes)))
                goto nomem;
        uint32_t me = p->n_nodes++;
        sc_av_node_t nd = {.type = avro_typeof(s), .target = SC_AV_NONE};
        switch (nd.type) {
        case AVRO_RECORD:
        case AVRO_UNION: {
                size_t n =
                    nd.type == AVRO_RECORD ? avro_schema_record_size(s) : avro_schema_union_size(s);
                nd.n = (uint32_t)n;
                nd.kid = p->n_kids;
                if (sc_av_grow((void **)&p->kids, &p->cap_kids, p->n_kids + (uint32_t)n,
                               sizeof(*p->kids)))
                        goto nomem;
                p->n_kids += (uint32_t)n;
                for (size_t i = 0; i < n; i++) {
                        avro_schema_t k = nd.type == AVRO_RECORD
                                              ? avro_schema_record_field_get_by_index(s, (int)i)
                                              : avro_schema_union_branch(s, (int)i);
                        uint32_t kn;
                        if (sc_av_expand(b, k, depth + 1, &kn))
                                return -1;
                        p->kids[nd.kid + i] = kn;
                }
                break;
        }
        case AVRO_ARRAY:
        case AVRO_MAP: {
                uint32_t kn;
                if (sc_av_expand(b,
                                 nd.type == AVRO_ARRAY ? avro_schema_array_items(s)
                                                       : avro_schema_map_values(s),
                                 depth + 1, &kn))
                        return -1;
                nd.kid = kn;
                break;
        }
        case AVRO_FIXED:
                nd.size = avro_schema_fixed_size(s);
                break;
        case AVRO_ENUM: {
                int n = avro_schema_enum_number_of_symbols(s);
                nd.n = n > 0 ? (uint32_t)n : 0;
                nd.kid = p->n_syms;
                if (sc_av_grow((void **)&p->syms, &p->cap_syms, p->n_syms + nd.n, sizeof(*p->syms)))
                        goto nomem;
                for (uint32_t i = 0; i < nd.n; i++) {
                        const char *sym = avro_schema_enum_get(s, (int)i);
                        size_t len = sym ? strlen(sym) : 0;
                        if (p->n_names + len > p->cap_names) {
                                size_t nc = p->cap_names ? 2 * p->cap_names : 256;
                                while (nc < p->n_names + len)
                                        nc *= 2;
                                char *nn = realloc(p->names, nc);
                                if (!nn)
                                        goto nomem;
                                p->names = nn;
                                p->cap_names = nc;
                        }
                        if (len)
                                memcpy(p->names + p->n_names, sym, len);
                        p->syms[p->n_syms++] = (sc_av_sym_t){(uint32_t)p->n_names, (uint32_t)len,
                                                             sc_fnv1a(sym ? sym : "", len)};
                        p->n_names += len;
                }
                break;
        }
        default:
                break;
        }
        p->nodes[me] = nd;
        *out = me;
        return 0;
nomem:
        snprintf(b->why, sizeof(b->why), "out of memory");
        return -1;
}

/* Marks the record field that path leads to (name steps through records,
 * or through a union whose one record branch is the record, from the root)
 * as target t, and the fields on the way as descended into. A path that is
 * not in this schema stays absent (its missing rule). */
static void sc_av_target(sc_av_plan_t *p, avro_schema_t root, const sc_decode_path_t *path, int t)
{
        uint32_t node = 0;
        avro_schema_t s = root;
        for (int i = 0; i < path->n; i++) {
                if (path->step[i].is_index || p->nodes[node].type != AVRO_RECORD)
                        return;
                while (s && avro_typeof(s) == AVRO_LINK)
                        s = avro_schema_link_target(s);
                char name[SC_FIELDS_PATH_MAX];
                snprintf(name, sizeof(name), "%.*s", (int)path->step[i].len, path->step[i].name);
                int k = avro_schema_record_field_get_index(s, name);
                if (k < 0 || (uint32_t)k >= p->nodes[node].n)
                        return;
                uint32_t kn = p->kids[p->nodes[node].kid + (uint32_t)k];
                if (i + 1 == path->n) {
                        p->nodes[kn].target = (int16_t)t;
                        p->found |= 1ull << (t == SC_AV_LABEL ? 63 : t);
                        return;
                }
                s = avro_schema_record_field_get_by_index(s, k);
                while (s && avro_typeof(s) == AVRO_LINK)
                        s = avro_schema_link_target(s);
                if (p->nodes[kn].type == AVRO_UNION) {
                        /* an optional record: the union's one record branch */
                        uint32_t j, rec = UINT32_MAX;
                        for (j = 0; j < p->nodes[kn].n; j++)
                                if (p->nodes[p->kids[p->nodes[kn].kid + j]].type == AVRO_RECORD)
                                        rec = rec == UINT32_MAX ? j : UINT32_MAX - 1;
                        if (rec >= p->nodes[kn].n)
                                return; /* none, or more than one */
                        p->nodes[kn].descend = 1;
                        s = avro_schema_union_branch(s, (int)rec);
                        kn = p->kids[p->nodes[kn].kid + rec];
                }
                p->nodes[kn].descend = 1;
                node = kn;
        }
}

static sc_err_t sc_av_compile(const sc_decode_spec_t *spec, const char *schema, size_t len,
                              sc_av_plan_t **out, char *why, size_t why_size)
{
        avro_schema_t root = NULL;
        sc_av_build_t b = {0};
        *out = NULL;
        if (len == 0 || len > SC_AVRO_SCHEMA_MAX)
                return sc_errf(SC_ERR_DECODE, why, why_size, "schema of %zu bytes (at most %u)",
                               len, SC_AVRO_SCHEMA_MAX);
        if (avro_schema_from_json_length(schema, len, &root) || !root) {
                const char *e = avro_strerror();
                return sc_errf(SC_ERR_DECODE, why, why_size, "not an Avro schema: %.200s",
                               e && *e ? e : "parse error");
        }
        sc_err_t err = SC_OK;
        if (avro_typeof(root) != AVRO_RECORD) {
                err = sc_errf(SC_ERR_DECODE, why, why_size, "the schema is a %s, not a record",
                              avro_schema_type_name(root));
                goto out;
        }
        if (!(b.p = calloc(1, sizeof(*b.p)))) {
                err = SC_ERR_NOMEM;
                goto out;
        }
        uint32_t r;
        if (sc_av_expand(&b, root, 0, &r)) {
                err = sc_errf(strcmp(b.why, "out of memory") ? SC_ERR_DECODE : SC_ERR_NOMEM, why,
                              why_size, "%s", b.why);
                goto out;
        }
        const sc_fields_t *fs = spec->fields;
        for (size_t i = 0; fs && i < fs->n; i++)
                sc_av_target(b.p, root, &fs->paths[i], (int)i);
        sc_decode_path_t lp;
        if (spec->label_source == SC_DECODE_LABEL_FIELD &&
            !sc_decode_path_compile(spec->label_path, sizeof(spec->label_path), &lp))
                sc_av_target(b.p, root, &lp, SC_AV_LABEL);
        *out = b.p;
        b.p = NULL;
out:
        sc_av_plan_free(b.p);
        avro_schema_decref(root);
        return err;
}

sc_err_t sc_avro_cache_put(sc_avro_cache_t *c, int32_t id, const char *schema, size_t len,
                           char *errstr, size_t errstr_size)
{
        char why[320];
        sc_av_plan_t *plan;
        if (!c || !schema)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size, "avro: no cache or schema");
        if (sc_av_find(c, id, NULL))
                return SC_OK;
        sc_err_t err = sc_av_compile(&c->spec, schema, len, &plan, why, sizeof(why));
        if (err == SC_ERR_NOMEM)
                return sc_errf(err, errstr, errstr_size, "schema id %d: out of memory", id);
        sc_err_t ins = sc_av_insert(c, id, plan, why);
        if (ins) {
                sc_av_plan_free(plan);
                return sc_errf(ins, errstr, errstr_size, "schema id %d: %s", id,
                               ins == SC_ERR_UNSUPPORTED ? "the cache is full" : "out of memory");
        }
        if (err)
                return sc_errf(err, errstr, errstr_size, "schema id %d: %s", id, why);
        return SC_OK;
}

/* ---- reading a record ---- */

typedef struct sc_av_rd {
        const uint8_t *p, *end;
        const sc_av_plan_t *plan;
        const sc_fields_t *fs;
        sc_fval_t *vals;
        uint64_t budget; /* values and items still allowed (zero-byte items) */
        const char *bad; /* first error */
        /* the label */
        int l_found, l_kind; /* 0 null, 1 number, 2 text, 3 other */
        double l_num;
        const char *l_text;
        size_t l_len;
} sc_av_rd_t;

static int sc_av_fail(sc_av_rd_t *r, const char *why)
{
        if (!r->bad)
                r->bad = why;
        return -1;
}

static int sc_av_long(sc_av_rd_t *r, int64_t *v)
{
        uint64_t u = 0;
        for (int shift = 0; shift < 70; shift += 7) {
                if (r->p >= r->end)
                        return sc_av_fail(r, "truncated");
                uint8_t b = *r->p++;
                if (shift == 63 && (b & 0x7e))
                        return sc_av_fail(r, "a varint over 64 bits");
                u |= (uint64_t)(b & 0x7f) << shift;
                if (!(b & 0x80)) {
                        *v = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
                        return 0;
                }
        }
        return sc_av_fail(r, "a varint over 10 bytes");
}

static int sc_av_bytes(sc_av_rd_t *r, int64_t n)
{
        if (n < 0)
                return sc_av_fail(r, "a negative length");
        if ((uint64_t)n > (uint64_t)(r->end - r->p))
                return sc_av_fail(r, "a length past the end of the record");
        r->p += n;
        return 0;
}

/* A zero-byte array item (a null, an empty record): at most budget of them
 * per record, since they cost time but no bytes. */
static int sc_av_tick(sc_av_rd_t *r)
{
        if (r->budget == 0)
                return sc_av_fail(r, "too many values for its size");
        r->budget--;
        return 0;
}

/* An Avro int: a varint of at most 5 bytes holding a 32-bit value. */
static int sc_av_int(sc_av_rd_t *r, int64_t *v)
{
        const uint8_t *p0 = r->p;
        if (sc_av_long(r, v))
                return -1;
        if (r->p - p0 > 5 || *v < INT32_MIN || *v > INT32_MAX)
                return sc_av_fail(r, "an int over 32 bits");
        return 0;
}

static int sc_av_bool(sc_av_rd_t *r, int *v)
{
        if (r->p >= r->end)
                return sc_av_fail(r, "truncated");
        if (*r->p > 1)
                return sc_av_fail(r, "a boolean that is not 0 or 1");
        *v = *r->p++;
        return 0;
}

static int sc_av_skip(sc_av_rd_t *r, uint32_t node);

/* The union branch at r->p: its node. */
static int sc_av_branch(sc_av_rd_t *r, const sc_av_node_t *nd, uint32_t *out)
{
        int64_t i;
        if (sc_av_long(r, &i))
                return -1;
        if (i < 0 || (uint64_t)i >= nd->n)
                return sc_av_fail(r, "a union branch out of range");
        *out = r->plan->kids[nd->kid + (uint32_t)i];
        return 0;
}

static int sc_av_skip_blocks(sc_av_rd_t *r, const sc_av_node_t *nd)
{
        for (;;) {
                int64_t count, size;
                if (sc_av_long(r, &count))
                        return -1;
                if (count == 0)
                        return 0;
                if (count < 0) {
                        if (count == INT64_MIN || sc_av_long(r, &size))
                                return sc_av_fail(r, "a block count out of range");
                        if (sc_av_bytes(r, size))
                                return -1;
                        continue;
                }
                for (int64_t k = 0; k < count; k++) {
                        const uint8_t *before = r->p;
                        if (nd->type == AVRO_MAP) {
                                int64_t kl;
                                if (sc_av_long(r, &kl) || sc_av_bytes(r, kl))
                                        return -1;
                        }
                        if (sc_av_skip(r, nd->kid) || (r->p == before && sc_av_tick(r)))
                                return -1;
                }
        }
}

static int sc_av_skip(sc_av_rd_t *r, uint32_t node)
{
        const sc_av_node_t *nd = &r->plan->nodes[node];
        int64_t v;
        int b;
        uint32_t br;
        switch (nd->type) {
        case AVRO_NULL:
                return 0;
        case AVRO_BOOLEAN:
                return sc_av_bool(r, &b);
        case AVRO_INT32:
                return sc_av_int(r, &v);
        case AVRO_INT64:
                return sc_av_long(r, &v);
        case AVRO_ENUM:
                if (sc_av_int(r, &v))
                        return -1;
                return v < 0 || (uint64_t)v >= nd->n ? sc_av_fail(r, "an enum symbol out of range")
                                                     : 0;
        case AVRO_FLOAT:
                return sc_av_bytes(r, 4);
        case AVRO_DOUBLE:
                return sc_av_bytes(r, 8);
        case AVRO_STRING:
        case AVRO_BYTES:
                return sc_av_long(r, &v) ? -1 : sc_av_bytes(r, v);
        case AVRO_FIXED:
                return sc_av_bytes(r, nd->size);
        case AVRO_UNION:
                return sc_av_branch(r, nd, &br) ? -1 : sc_av_skip(r, br);
        case AVRO_RECORD:
                for (uint32_t i = 0; i < nd->n; i++)
                        if (sc_av_skip(r, r->plan->kids[nd->kid + i]))
                                return -1;
                return 0;
        case AVRO_ARRAY:
        case AVRO_MAP:
                return sc_av_skip_blocks(r, nd);
        default:
                return sc_av_fail(r, "a type this reader does not know");
        }
}

/* A value read as a field's or the label's. */
typedef enum sc_av_kind {
        SC_AV_NULL,
        SC_AV_INT,  /* i */
        SC_AV_REAL, /* num, from a float (is_float) or a double */
        SC_AV_TEXT, /* s, len, hash */
        SC_AV_TRUE,
        SC_AV_FALSE,
        SC_AV_OTHER, /* a record, array, map or fixed (skipped) */
} sc_av_kind_t;

typedef struct sc_av_val {
        sc_av_kind_t kind;
        int64_t i;
        double num;
        int is_float;
        const char *s;
        size_t len;
        uint64_t hash;
} sc_av_val_t;

/* The value at r->p of node (a union's branch resolved); -1 on bad bytes. */
static int sc_av_scalar(sc_av_rd_t *r, uint32_t node, sc_av_val_t *v)
{
        const sc_av_node_t *nd = &r->plan->nodes[node];
        int64_t n;
        int b;
        uint32_t br;
        switch (nd->type) {
        case AVRO_NULL:
                v->kind = SC_AV_NULL;
                return 0;
        case AVRO_UNION:
                if (sc_av_branch(r, nd, &br))
                        return -1;
                return sc_av_scalar(r, br, v);
        case AVRO_BOOLEAN:
                if (sc_av_bool(r, &b))
                        return -1;
                v->kind = b ? SC_AV_TRUE : SC_AV_FALSE;
                return 0;
        case AVRO_INT32:
        case AVRO_INT64:
                if (nd->type == AVRO_INT32 ? sc_av_int(r, &v->i) : sc_av_long(r, &v->i))
                        return -1;
                v->kind = SC_AV_INT;
                return 0;
        case AVRO_FLOAT: {
                float f;
                if (r->end - r->p < 4)
                        return sc_av_fail(r, "truncated");
                memcpy(&f, r->p, 4);
                r->p += 4;
                v->num = f;
                v->is_float = 1;
                v->kind = SC_AV_REAL;
                return 0;
        }
        case AVRO_DOUBLE:
                if (r->end - r->p < 8)
                        return sc_av_fail(r, "truncated");
                memcpy(&v->num, r->p, 8);
                r->p += 8;
                v->is_float = 0;
                v->kind = SC_AV_REAL;
                return 0;
        case AVRO_STRING:
        case AVRO_BYTES:
                if (sc_av_long(r, &n))
                        return -1;
                v->s = (const char *)r->p;
                if (sc_av_bytes(r, n))
                        return -1;
                v->len = (size_t)n;
                v->hash = sc_fnv1a(v->s, v->len);
                v->kind = SC_AV_TEXT;
                return 0;
        case AVRO_ENUM: {
                if (sc_av_int(r, &n))
                        return -1;
                if (n < 0 || (uint64_t)n >= nd->n)
                        return sc_av_fail(r, "an enum symbol out of range");
                const sc_av_sym_t *sy = &r->plan->syms[nd->kid + (uint32_t)n];
                v->s = r->plan->names ? r->plan->names + sy->off : "";
                v->len = sy->len;
                v->hash = sy->hash;
                v->kind = SC_AV_TEXT;
                return 0;
        }
        default:
                v->kind = SC_AV_OTHER;
                return sc_av_skip(r, node);
        }
}

/* A number's text as JSON would carry it: an integer's digits, a real's
 * shortest text that reads back to the same float or double. */
static size_t sc_av_number_text(const sc_av_val_t *v, char *buf, size_t size)
{
        if (v->kind == SC_AV_INT)
                return (size_t)snprintf(buf, size, "%" PRId64, v->i);
        for (int prec = v->is_float ? 6 : 15; prec <= 17; prec++) {
                int n = snprintf(buf, size, "%.*g", prec, v->num);
                if (v->is_float ? strtof(buf, NULL) == (float)v->num : strtod(buf, NULL) == v->num)
                        return (size_t)n;
        }
        return strlen(buf);
}

/* Field t's value at r->p. */
static int sc_av_field(sc_av_rd_t *r, uint32_t node, int t)
{
        sc_av_val_t v = {0};
        if (sc_av_scalar(r, node, &v))
                return -1;
        if (t == SC_AV_LABEL) {
                r->l_found = 1;
                r->l_kind = v.kind == SC_AV_NULL                          ? 0
                            : v.kind == SC_AV_INT || v.kind == SC_AV_REAL ? 1
                            : v.kind == SC_AV_TEXT                        ? 2
                                                                          : 3;
                r->l_num = v.kind == SC_AV_INT ? (double)v.i : v.num;
                r->l_text = v.s;
                r->l_len = v.len;
                return 0;
        }
        const sc_field_t *f = &r->fs->field[t];
        sc_fval_t *out = &r->vals[t];
        int text = f->kind == SC_FIELD_CATEGORICAL || f->kind == SC_FIELD_HASHED;
        char buf[40];
        size_t n;
        memset(out, 0, sizeof(*out));
        switch (v.kind) {
        case SC_AV_NULL:
                out->kind = SC_FVAL_NULL;
                return 0;
        case SC_AV_INT:
        case SC_AV_REAL:
                if (!text) {
                        out->kind = SC_FVAL_NUMBER;
                        out->num = v.kind == SC_AV_INT ? (double)v.i : v.num;
                        return 0;
                }
                n = sc_av_number_text(&v, buf, sizeof(buf));
                sc_field_read_text(f, buf, n, sc_fnv1a(buf, n), out);
                return 0;
        case SC_AV_TEXT:
                sc_field_read_text(f, v.s, v.len, v.hash, out);
                return 0;
        case SC_AV_TRUE:
        case SC_AV_FALSE:
                if (!text) {
                        out->kind = v.kind == SC_AV_TRUE ? SC_FVAL_TRUE : SC_FVAL_FALSE;
                        return 0;
                }
                n = v.kind == SC_AV_TRUE ? 4 : 5;
                sc_field_read_text(f, v.kind == SC_AV_TRUE ? "true" : "false", n,
                                   sc_fnv1a(v.kind == SC_AV_TRUE ? "true" : "false", n), out);
                return 0;
        default:
                out->kind = SC_FVAL_OTHER;
                return 0;
        }
}

/* A record node's fields at r->p: targets read, the records (or the record
 * branch of a union) their paths go through descended into, the rest
 * skipped. A union's null branch leaves the targets beneath it absent. */
static int sc_av_record(sc_av_rd_t *r, uint32_t node)
{
        const sc_av_node_t *nd = &r->plan->nodes[node];
        for (uint32_t i = 0; i < nd->n; i++) {
                uint32_t kn = r->plan->kids[nd->kid + i], br;
                const sc_av_node_t *k = &r->plan->nodes[kn];
                int rc;
                if (k->target != SC_AV_NONE)
                        rc = sc_av_field(r, kn, k->target);
                else if (k->descend && k->type == AVRO_RECORD)
                        rc = sc_av_record(r, kn);
                else if (k->descend && k->type == AVRO_UNION)
                        rc = sc_av_branch(r, k, &br) ? -1
                             : r->plan->nodes[br].descend && r->plan->nodes[br].type == AVRO_RECORD
                                 ? sc_av_record(r, br)
                                 : sc_av_skip(r, br);
                else
                        rc = sc_av_skip(r, kn);
                if (rc)
                        return -1;
        }
        return 0;
}

static sc_decode_fault_t sc_av_label(const sc_decode_spec_t *spec, const sc_av_rd_t *r,
                                     int32_t *label, char *errstr, size_t errstr_size)
{
        if (spec->label_source != SC_DECODE_LABEL_FIELD)
                return SC_DECODE_OK;
        if (!r->l_found || r->l_kind == 0) {
                sc_errf(SC_ERR_DECODE, errstr, errstr_size, "%s: %s", spec->label_path,
                        r->l_found ? "null (no label)" : "missing (not in the record's schema)");
                return SC_DECODE_MISSING_FIELD;
        }
        if (r->l_kind == 2 && spec->labels)
                return sc_decode_label_text(spec, r->l_text, r->l_len, spec->label_path, 0,
                                            SC_DECODE_NOT_NUMERIC, label, errstr, errstr_size);
        if (r->l_kind != 1) {
                sc_errf(SC_ERR_DECODE, errstr, errstr_size, "%s: expected a number%s",
                        spec->label_path, spec->labels ? " or a class name" : "");
                return SC_DECODE_NOT_NUMERIC;
        }
        return sc_decode_label_number(spec, r->l_num, spec->label_path, label, errstr, errstr_size);
}

sc_decode_fault_t sc_decode_avro(const sc_decode_spec_t *spec, const sc_record_t *rec, float *x,
                                 int32_t *label, char *errstr, size_t errstr_size)
{
        const sc_fields_t *fs = spec->fields;
        sc_fval_t vals[SC_FIELDS_MAX];
        int32_t id;
        if (!fs || fs->n > SC_FIELDS_MAX || !fs->paths) {
                sc_errf(SC_ERR_DECODE, errstr, errstr_size, "decode: avro needs named fields");
                return SC_DECODE_BAD_SPEC;
        }
        if (sc_avro_frame_id(rec->value, rec->value_size, &id)) {
                sc_errf(SC_ERR_DECODE, errstr, errstr_size,
                        "avro: not framed for a schema registry (a 0 byte, a 4-byte schema id, "
                        "the body): %s",
                        rec->value_size < 5 ? "under 5 bytes" : "first byte is not 0");
                return SC_DECODE_BAD_AVRO;
        }
        if (spec->avro && spec->avro->spec.fields != fs) {
                /* a plan's targets index the field list it was compiled for */
                sc_errf(SC_ERR_DECODE, errstr, errstr_size,
                        "decode: the avro cache was made for other fields");
                return SC_DECODE_BAD_SPEC;
        }
        const sc_av_entry_t *e = spec->avro ? sc_av_find(spec->avro, id, NULL) : NULL;
        if (!e || !e->plan) {
                sc_errf(SC_ERR_DECODE, errstr, errstr_size, "avro: schema id %d: %s", id,
                        e ? e->reason
                          : "not known here (no schema registry, or the topic's schemas took "
                            "all " SC_STR(SC_AVRO_IDS_MAX) " places)");
                return SC_DECODE_UNKNOWN_SCHEMA;
        }
        sc_av_rd_t r = {.p = (const uint8_t *)rec->value + 5,
                        .end = (const uint8_t *)rec->value + rec->value_size,
                        .plan = e->plan,
                        .fs = fs,
                        .vals = vals,
                        .budget = 65536 + 16 * (uint64_t)rec->value_size};
        for (size_t i = 0; i < fs->n; i++)
                vals[i].kind = SC_FVAL_ABSENT;
        if (sc_av_record(&r, 0) == 0 && r.p != r.end)
                sc_av_fail(&r, "bytes left over after the record");
        if (r.bad) {
                sc_errf(SC_ERR_DECODE, errstr, errstr_size,
                        "avro: schema id %d: %s at byte %zu of the value", id, r.bad,
                        (size_t)(r.p - (const uint8_t *)rec->value));
                return SC_DECODE_BAD_AVRO;
        }
        sc_decode_fault_t f = spec->label_source == SC_DECODE_LABEL_FIELD
                                  ? sc_av_label(spec, &r, label, errstr, errstr_size)
                                  : sc_decode_label_meta(spec, rec, label, errstr, errstr_size);
        if (f != SC_DECODE_OK)
                return f;
        return sc_fields_encode(fs, vals, spec, x, errstr, errstr_size);
}
