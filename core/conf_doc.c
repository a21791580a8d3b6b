/* conf_doc.c — writes the property table as text (`scadles config --list`)
 * or markdown (docs/CONFIG.md), and a configuration back to JSON. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf_impl.h"

typedef struct sc_conf_sb {
        char *s;
        size_t len, cap;
        int oom;
} sc_conf_sb_t;

__attribute__((format(printf, 2, 3))) static void sc_conf_sb_printf(sc_conf_sb_t *sb,
                                                                    const char *fmt, ...)
{
        va_list ap;

        if (sb->oom)
                return;
        for (;;) {
                va_start(ap, fmt);
                int n = vsnprintf(sb->s ? sb->s + sb->len : NULL, sb->s ? sb->cap - sb->len : 0,
                                  fmt, ap);
                va_end(ap);
                if (n < 0) {
                        sb->oom = 1;
                        return;
                }
                if (sb->s && sb->len + (size_t)n < sb->cap) {
                        sb->len += (size_t)n;
                        return;
                }
                size_t cap = sb->cap ? sb->cap * 2 : 4096;
                while (cap < sb->len + (size_t)n + 1)
                        cap *= 2;
                char *s = realloc(sb->s, cap);
                if (!s) {
                        sb->oom = 1;
                        return;
                }
                sb->s = s;
                sb->cap = cap;
        }
}

/* The default as documented; markdown puts JSON defaults in backticks. */
static void sc_conf_default_text(const sc_conf_prop_t *p, int markdown, char *buf, size_t size)
{
        if (p->def_doc)
                snprintf(buf, size, "%s", p->def_doc);
        else if (markdown)
                snprintf(buf, size, "`%s`", p->def ? p->def : "0");
        else
                snprintf(buf, size, "%s", p->def ? p->def : "0");
}

/* "dense" or "conv2d, maxpool2d" or "all" for a list element row. */
static void sc_conf_kinds_text(const sc_conf_list_t *l, const sc_conf_prop_t *p, char *buf,
                               size_t size)
{
        const sc_conf_prop_t *tag = l->tag ? sc_conf_find(l->props, l->nprops, l->tag) : NULL;
        size_t len = 0;

        snprintf(buf, size, "all");
        if (!tag || !p->kinds)
                return;
        for (int k = 0; tag->names[k] && len < size; k++)
                if (p->kinds >> k & 1u)
                        len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? ", " : "",
                                                tag->names[k]);
}

static void sc_conf_describe_row(sc_conf_sb_t *sb, const sc_conf_prop_t *p, const char *name,
                                 const char *kinds, int markdown)
{
        char want[512], def[600];

        sc_conf_expect_text(p, want, sizeof(want));
        sc_conf_default_text(p, markdown, def, sizeof(def));
        if (!markdown) {
                sc_conf_sb_printf(sb, "%s%s%s%s\n    %s; %s%s\n    %s\n", name, kinds ? "  (" : "",
                                  kinds ? kinds : "", kinds ? ")" : "", want,
                                  (p->flags & SC_CONF_F_REQUIRED) ? "" : "default ", def, p->desc);
                return;
        }
        if (kinds)
                sc_conf_sb_printf(sb, "| `%s` | %s | %s | %s | %s |\n", name, kinds, want, def,
                                  p->desc);
        else
                sc_conf_sb_printf(sb, "| `%s` | %s | %s | %s |\n", name, want, def, p->desc);
}

static void sc_conf_describe_list(sc_conf_sb_t *sb, const sc_conf_prop_t *p, int markdown)
{
        char name[256], kinds[256];

        if (markdown && p->list->tag)
                sc_conf_sb_printf(sb,
                                  "\nEach element of `%s` is an object; which keys it takes "
                                  "depends on its `%s`:\n\n"
                                  "| Key | Applies to | Type | Default | Description |\n"
                                  "|---|---|---|---|---|\n",
                                  p->path, p->list->tag);
        else if (markdown)
                sc_conf_sb_printf(sb,
                                  "\nEach element of `%s` is an object with these keys:\n\n"
                                  "| Key | Applies to | Type | Default | Description |\n"
                                  "|---|---|---|---|---|\n",
                                  p->path);
        for (size_t j = 0; j < p->list->nprops; j++) {
                const sc_conf_prop_t *q = &p->list->props[j];
                sc_conf_kinds_text(p->list, q, kinds, sizeof(kinds));
                snprintf(name, sizeof(name), "%s[].%s", p->path, q->path);
                sc_conf_describe_row(sb, q, markdown ? q->path : name, kinds, markdown);
        }
        if (markdown)
                sc_conf_sb_printf(sb, "\n");
}

static const char sc_conf_md_intro[] =
    "# scadles configuration\n"
    "\n"
    "Generated from the property table (core/conf_table.c) by `scadles config --markdown`; "
    "`make check-docs` fails when this page is out of date.\n"
    "\n"
    "A configuration is one JSON object. Every property has a default, so a file names "
    "only what it changes. Unknown keys, wrong types and out-of-range values are errors "
    "that name the file and the JSON path:\n"
    "\n"
    "```\n"
    "job.json: $.optim.lrr: unknown property (did you mean \"lr\"?)\n"
    "job.json: $.model.layers[2].kernel: expected integer in [1, 1024], got 0\n"
    "job.json: $.train.epochs: key given twice (line 3, column 16)\n"
    "job.json:4:3: invalid JSON: string or '}' expected near '}'\n"
    "```\n"
    "\n"
    "Overrides (`--set property=value`, repeatable) take the value as JSON, or as a string "
    "when it is not JSON: `--set optim.lr=0.05`, `--set data.source=synthetic`, "
    "`--set 'optim.schedule={\"type\":\"cosine\"}'`, `--set model.layers[0].units=128`, "
    "`--set 'model.layers[3]={\"type\":\"relu\"}'` (index = count appends), "
    "`--set kafka.bootstrap.servers=host:9092`.\n"
    "\n"
    "`scadles config --check -c file.json` validates a file and prints the resolved "
    "configuration; `scadles config --list` prints this table as text. The check covers what "
    "would otherwise fail later: every `kafka` property is set on a throwaway librdkafka "
    "configuration, `source.pattern` is compiled and the model is built (a model past "
    "2^32 - 1 parameters is an error of its layer). Exit status: 0 ok, 2 configuration or "
    "usage error, 1 runtime failure (out of memory). Secrets in `kafka` print as "
    "\"(redacted)\".\n"
    "\n"
    "Example:\n"
    "\n"
    "```json\n"
    "{\n"
    "  \"model\": {\n"
    "    \"input\": [1, 28, 28],\n"
    "    \"layers\": [\n"
    "      {\"type\": \"conv2d\", \"filters\": 16, \"kernel\": 3, \"padding\": 1},\n"
    "      {\"type\": \"relu\"},\n"
    "      {\"type\": \"maxpool2d\", \"size\": 2},\n"
    "      {\"type\": \"flatten\"},\n"
    "      {\"type\": \"dense\", \"units\": 10}\n"
    "    ],\n"
    "    \"loss\": \"softmax_xent\"\n"
    "  },\n"
    "  \"optim\": {\"lr\": 0.05, \"momentum\": 0.9,\n"
    "            \"schedule\": {\"type\": \"multistep\", \"milestones_epochs\": [5, 8]}},\n"
    "  \"train\": {\"epochs\": 10, \"batch\": 64},\n"
    "  \"kafka\": {\"bootstrap.servers\": \"localhost:9092\"}\n"
    "}\n"
    "```\n";

/* Appends section s's table; heading "##" or "###" in markdown. */
static void sc_conf_describe_section(sc_conf_sb_t *sb, size_t s, int markdown, const char *heading)
{
        const char *sec = sc_conf_sections[s].name;
        size_t slen = strlen(sec);
        if (markdown)
                sc_conf_sb_printf(sb,
                                  "\n%s %s\n\n%s\n\n"
                                  "| Property | Type | Default | Description |\n"
                                  "|---|---|---|---|\n",
                                  heading, sec, sc_conf_sections[s].desc);
        else
                sc_conf_sb_printf(sb, "%s[%s] %s\n\n", s ? "\n" : "", sec,
                                  sc_conf_sections[s].desc);
        unsigned flags = sc_conf_sections[s].flags;
        for (size_t i = 0; i < sc_conf_nprops; i++) {
                const sc_conf_prop_t *p = &sc_conf_props[i];
                int under =
                    !strncmp(p->path, sec, slen) && (!p->path[slen] || p->path[slen] == '.');
                if (flags ? !(p->flags & flags) : !under || (p->flags & SC_CONF_F_BYNAME))
                        continue;
                sc_conf_describe_row(sb, p, p->path, NULL, markdown);
        }
        for (size_t i = 0; i < sc_conf_nprops; i++) {
                const sc_conf_prop_t *p = &sc_conf_props[i];
                if (!flags && p->type == SC_CONF_OBJ_LIST && !strncmp(p->path, sec, slen) &&
                    p->path[slen] == '.')
                        sc_conf_describe_list(sb, p, markdown);
        }
}

static char *sc_conf_sb_take(sc_conf_sb_t *sb)
{
        if (sb->oom) {
                free(sb->s);
                return NULL;
        }
        return sb->s;
}

char *sc_conf_describe(int markdown)
{
        sc_conf_sb_t sb = {0};

        if (markdown)
                sc_conf_sb_printf(&sb, "%s", sc_conf_md_intro);
        for (size_t s = 0; s < sc_conf_nsections; s++)
                sc_conf_describe_section(&sb, s, markdown, "##");
        return sc_conf_sb_take(&sb);
}

sc_err_t sc_conf_describe_sections(const char *sections, char **textp, char *errstr,
                                   size_t errstr_size)
{
        sc_conf_sb_t sb = {0};
        *textp = NULL;
        for (const char *p = sections; *p;) {
                size_t n = strcspn(p, ",");
                size_t s = 0;
                while (s < sc_conf_nsections && (strlen(sc_conf_sections[s].name) != n ||
                                                 strncmp(sc_conf_sections[s].name, p, n)))
                        s++;
                if (s == sc_conf_nsections) {
                        free(sb.s);
                        return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                                       "no configuration section \"%.*s\"", (int)n, p);
                }
                sc_conf_describe_section(&sb, s, 1, "###");
                p += n + (p[n] == ',');
        }
        if (!(*textp = sc_conf_sb_take(&sb)))
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
        return SC_OK;
}

static int sc_conf_is_zero(const void *at, size_t n)
{
        const unsigned char *b = at;
        for (size_t i = 0; i < n; i++)
                if (b[i])
                        return 0;
        return 1;
}

static json_t *sc_conf_elem_json(const sc_conf_list_t *l, const char *elem, uint32_t given,
                                 const sc_conf_t *conf)
{
        const sc_conf_prop_t *tag = l->tag ? sc_conf_find(l->props, l->nprops, l->tag) : NULL;
        int kind = tag ? *(const int *)(elem + tag->offset) : -1;
        json_t *obj = json_object();

        for (size_t j = 0; obj && j < l->nprops; j++) {
                const sc_conf_prop_t *q = &l->props[j];
                if (kind >= 0 && q->kinds && !(q->kinds >> kind & 1u))
                        continue;
                /* Unset optional keys ("= size") and inherited values stay implicit. */
                if (q->inherit && !(given >> j & 1u))
                        continue;
                /* Unset keys without a default stay implicit; a key the file
                 * gave stays, zero or not (a zero given and a zero unset can
                 * mean different things: decode.first_feature_column). */
                if (!q->def && !(q->flags & SC_CONF_F_REQUIRED) && q != tag && !(given >> j & 1u) &&
                    sc_conf_is_zero(elem + q->offset, sizeof(int)))
                        continue;
                if (json_object_set_new(obj, q->path, sc_conf_value_json(q, elem, conf))) {
                        json_decref(obj);
                        return NULL;
                }
        }
        return obj;
}

json_t *sc_conf_value_json(const sc_conf_prop_t *p, const void *base, const sc_conf_t *conf)
{
        const char *at = (const char *)base + p->offset;
        int n;

        switch (p->type) {
        case SC_CONF_INT:
                return json_integer(*(const int *)at);
        case SC_CONF_LONG:
                return json_integer(*(const long *)at);
        case SC_CONF_SIZE:
                return json_integer((json_int_t) * (const size_t *)at);
        case SC_CONF_UINT64:
                return json_integer((json_int_t) * (const uint64_t *)at);
        case SC_CONF_DOUBLE:
                return json_real(*(const double *)at);
        case SC_CONF_FLOAT:
                return json_real(*(const float *)at);
        case SC_CONF_BOOL:
                return json_boolean(*(const int *)at);
        case SC_CONF_STRING:
                return json_string(at);
        case SC_CONF_ENUM: {
                int idx = *(const int *)at, k = 0;
                while (p->names[k])
                        k++;
                return json_string(idx >= 0 && idx < k ? p->names[idx] : "?");
        }
        case SC_CONF_LONG_LIST:
        case SC_CONF_DOUBLE_LIST: {
                json_t *a = json_array();
                n = *(const int *)((const char *)base + p->count_offset);
                for (int i = 0; a && i < n; i++)
                        json_array_append_new(a, p->type == SC_CONF_LONG_LIST
                                                     ? json_integer(((const long *)at)[i])
                                                     : json_real(((const double *)at)[i]));
                return a;
        }
        case SC_CONF_SHAPE: {
                sc_shape_t s;
                memcpy(&s, at, sizeof(s));
                if (s.h == 1 && s.w == 1)
                        return json_pack("[i]", s.c);
                return json_pack("[i, i, i]", s.c, s.h, s.w);
        }
        case SC_CONF_OBJ_LIST: {
                json_t *a = json_array();
                const uint32_t *given =
                    (const uint32_t *)((const char *)conf + p->list->given_offset);
                n = *(const int *)((const char *)base + p->count_offset);
                for (int i = 0; a && i < n; i++)
                        json_array_append_new(
                            a, sc_conf_elem_json(p->list, at + (size_t)i * p->list->elem_size,
                                                 given[i], conf));
                return a;
        }
        case SC_CONF_PASSTHROUGH: {
                json_t *obj = *(json_t *const *)at;
                return obj ? json_deep_copy(obj) : json_object();
        }
        case SC_CONF_CUSTOM:
                return p->json(at);
        }
        return json_null();
}

/* Sets root.<dotted path> = v, creating objects on the way (steals v). */
static int sc_conf_put(json_t *root, const char *path, json_t *v)
{
        char seg[128];
        const char *dot;

        while ((dot = strchr(path, '.'))) {
                snprintf(seg, sizeof(seg), "%.*s", (int)(dot - path), path);
                json_t *next = json_object_get(root, seg);
                if (!next) {
                        next = json_object();
                        if (json_object_set_new(root, seg, next)) {
                                json_decref(v);
                                return -1;
                        }
                }
                root = next;
                path = dot + 1;
        }
        return json_object_set_new(root, path, v);
}

/* Replaces the values of secret properties of a passthrough object. */
static int sc_conf_redact(json_t *obj)
{
        const char *key;
        json_t *v;
        json_object_foreach(obj, key, v)
        {
                if (sc_conf_kafka_secret(key) &&
                    json_object_set_new(obj, key, json_string(SC_CONF_REDACTED)))
                        return -1;
        }
        return 0;
}

static char *sc_conf_dump_as(const sc_conf_t *conf, int redact)
{
        json_t *root = json_object();
        char *text;

        for (size_t i = 0; root && i < sc_conf_nprops; i++) {
                const sc_conf_prop_t *p = &sc_conf_props[i];
                int pass = p->type == SC_CONF_PASSTHROUGH;
                if (pass && !*(json_t *const *)((const char *)conf + p->offset))
                        continue;
                if (((p->flags & SC_CONF_F_SIM) && !conf->sim_section) ||
                    (p->flags & SC_CONF_F_BYNAME))
                        continue;
                /* A job section makes a worker a job member: print it only
                 * when the configuration has one, so the output loads back
                 * as the same kind of configuration. */
                if (!strncmp(p->path, "job.", 4) && !sc_conf_section_given(conf, "job"))
                        continue;
                json_t *v = sc_conf_value_json(p, conf, conf);
                if (v && pass && redact && sc_conf_redact(v)) {
                        json_decref(v);
                        v = NULL;
                }
                if (!v || sc_conf_put(root, p->path, v)) {
                        json_decref(root);
                        return NULL;
                }
        }
        text = root ? json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(15)) : NULL;
        json_decref(root);
        return text;
}

char *sc_conf_dump(const sc_conf_t *conf)
{
        return sc_conf_dump_as(conf, 1);
}

char *sc_conf_dump_secret(const sc_conf_t *conf)
{
        return sc_conf_dump_as(conf, 0);
}
