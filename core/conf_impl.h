/* conf_impl.h — the configuration property table's types, shared by the
 * table (conf_table.c), the checks (conf.c), the JSON walker (conf_parse.c) and the documentation
 * and dump writers (conf_doc.c). Internal to core/. */
#ifndef SC_CONF_IMPL_H
#define SC_CONF_IMPL_H

#include <jansson.h>
#include <stddef.h>

#include "sc_conf.h"

typedef enum sc_conf_type {
        SC_CONF_INT,         /* int */
        SC_CONF_LONG,        /* long */
        SC_CONF_UINT64,      /* uint64_t, 0 .. 2^63-1 (JSON integers are signed) */
        SC_CONF_SIZE,        /* size_t, >= 0 */
        SC_CONF_DOUBLE,      /* double */
        SC_CONF_FLOAT,       /* float */
        SC_CONF_BOOL,        /* int 0/1 */
        SC_CONF_STRING,      /* char[size]; with names: one of them */
        SC_CONF_ENUM,        /* enum (int-sized) = index into names */
        SC_CONF_LONG_LIST,   /* long[size] + int count at count_offset; ascending */
        SC_CONF_DOUBLE_LIST, /* double[size] + int count at count_offset; ascending */
        SC_CONF_SHAPE,       /* sc_shape_t from [c, h, w] or [n] */
        SC_CONF_OBJ_LIST,    /* array of objects described by a sub-table (list) */
        SC_CONF_PASSTHROUGH, /* json_t * object of scalars, kept (a reference) */
        SC_CONF_CUSTOM,      /* parsed and written back by the row's own functions */
} sc_conf_type_t;

/* Row flags. */
#define SC_CONF_F_MIN_EXCL 0x1 /* value > min rather than >= min */
#define SC_CONF_F_MAX_EXCL 0x2 /* value < max rather than <= max */
#define SC_CONF_F_REQUIRED 0x4 /* list element rows: the key must be given */
#define SC_CONF_F_SIM 0x8      /* read only with conf->sim_section (the simulator's) */
#define SC_CONF_F_EMBED 0x10   /* set only by sc_conf_set_embedding, never read or dumped */
#define SC_CONF_F_PLUGIN 0x20  /* set only by sc_conf_set_plugin, never read or dumped */
#define SC_CONF_F_BYNAME (SC_CONF_F_EMBED | SC_CONF_F_PLUGIN)

/* SC_CONF_CUSTOM: parses v into at (= base + offset), messages
 * "<origin>: <jpath>: ..." through sc_conf_fail; and the value at `at` back
 * as JSON (new reference). */
typedef sc_err_t (*sc_conf_parse_fn)(json_t *v, void *at, const char *origin, const char *jpath,
                                     char *errstr, size_t errstr_size);
typedef json_t *(*sc_conf_json_fn)(const void *at);
/* SC_CONF_CUSTOM holding a shared value: take = 1 takes one more reference
 * to the value at `at` (after a struct copy), take = 0 releases it and
 * clears the slot. */
typedef void (*sc_conf_ref_fn)(void *at, int take);

typedef struct sc_conf_list sc_conf_list_t;

/* One property. min/max are NAN when unbounded (numbers, list items, shape
 * dimensions). */
typedef struct sc_conf_prop {
        const char *path; /* below $, dots between nested objects: "optim.schedule.gamma" */
        sc_conf_type_t type;
        size_t offset;              /* into the base: sc_conf_t, or a list element */
        const char *def;            /* default as JSON text; NULL = zero */
        double min, max;            /* range of numbers, of list items, of shape dims */
        unsigned flags;             /* SC_CONF_F_* */
        const char *const *names;   /* enum / string choices, NULL-terminated */
        size_t size;                /* string: buffer bytes; lists: max entries */
        size_t count_offset;        /* lists: the int entry count */
        const sc_conf_list_t *list; /* SC_CONF_OBJ_LIST */
        unsigned kinds;         /* list element rows: bit k = allowed when the tag is k; 0 = all */
        const char *inherit;    /* list element rows: default = this main-table property */
        const char *def_doc;    /* default as documented when def cannot say it */
        const char *expect;     /* SC_CONF_CUSTOM: the values it takes, for messages and docs */
        sc_conf_parse_fn parse; /* SC_CONF_CUSTOM */
        sc_conf_json_fn json;   /* SC_CONF_CUSTOM */
        sc_conf_ref_fn ref;     /* SC_CONF_CUSTOM with a shared value, else NULL */
        const char *desc;
} sc_conf_prop_t;

/* An array of objects; each element is a struct of elem_size bytes. */
struct sc_conf_list {
        const sc_conf_prop_t *props;
        size_t nprops;
        size_t elem_size;
        const char *tag;       /* required enum key choosing which rows apply, or NULL */
        size_t given_offset;   /* in sc_conf_t: uint32_t[max], bit j = props[j] given */
        const char *elem_name; /* "layer", for messages */
};

/* A top-level section, for documentation. */
typedef struct sc_conf_section {
        const char *name;
        const char *desc;
        unsigned flags; /* 0: the rows under name; else the rows with these flags */
} sc_conf_section_t;

extern const sc_conf_prop_t sc_conf_props[];
extern const size_t sc_conf_nprops;
extern const sc_conf_section_t sc_conf_sections[];
extern const size_t sc_conf_nsections;

/* conf_parse.c */
/* Parses v into the property at base (one table row); jpath is v's JSON path
 * for messages; conf is the whole configuration (list bookkeeping). */
sc_err_t sc_conf_parse_value(const sc_conf_prop_t *prop, json_t *v, void *base, sc_conf_t *conf,
                             const char *origin, const char *jpath, char *errstr,
                             size_t errstr_size);
/* Formats "<origin>: <jpath>: message" into errstr; returns SC_ERR_CONFIG. */
sc_err_t sc_conf_fail(char *errstr, size_t errstr_size, const char *origin, const char *jpath,
                      const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* "integer >= 1", "number in [0, 1)", "one of \"a\", \"b\"" for prop. */
void sc_conf_expect_text(const sc_conf_prop_t *prop, char *buf, size_t size);
/* Current value of a scalar property at base as JSON (new reference). */
json_t *sc_conf_value_json(const sc_conf_prop_t *prop, const void *base, const sc_conf_t *conf);
/* conf_dup.c: the JSON path ("$.train.epochs") of the member name that
 * jansson's duplicate-key error stops at (byte pos of text); -1 if the text
 * before pos is not inside an object. */
int sc_conf_dup_path(const char *text, size_t pos, char *path, size_t size);
/* conf_sim.c: the custom rows of the sim section and its cross-property
 * checks (run by sc_conf_validate when conf->sim_section). */
sc_err_t sc_conf_sim_rates(json_t *v, void *at, const char *origin, const char *jpath, char *errstr,
                           size_t errstr_size);
json_t *sc_conf_sim_rates_json(const void *at);
sc_err_t sc_conf_sim_window(json_t *v, void *at, const char *origin, const char *jpath,
                            char *errstr, size_t errstr_size);
json_t *sc_conf_sim_window_json(const void *at);
sc_err_t sc_conf_worker_window(json_t *v, void *at, const char *origin, const char *jpath,
                               char *errstr, size_t errstr_size);
json_t *sc_conf_worker_window_json(const void *at);
sc_err_t sc_conf_sim_churn(json_t *v, void *at, const char *origin, const char *jpath, char *errstr,
                           size_t errstr_size);
json_t *sc_conf_sim_churn_json(const void *at);
sc_err_t sc_conf_validate_sim(sc_conf_t *conf, char *errstr, size_t errstr_size);
/* conf_fields.c: streams.fields and streams.labels (and a topic's). */
sc_err_t sc_conf_fields(json_t *v, void *at, const char *origin, const char *jpath, char *errstr,
                        size_t errstr_size);
json_t *sc_conf_fields_json(const void *at);
void sc_conf_fields_ref(void *at, int take);
sc_err_t sc_conf_labels(json_t *v, void *at, const char *origin, const char *jpath, char *errstr,
                        size_t errstr_size);
json_t *sc_conf_labels_json(const void *at);
void sc_conf_labels_ref(void *at, int take);
/* conf.c: takes (take = 1) or releases (0) the references of the shared
 * values of one element of list l / of the first count elements of list
 * property p at base (a released slot is cleared). */
void sc_conf_elem_refs(const sc_conf_list_t *l, void *elem, int take);
void sc_conf_list_refs(const sc_conf_prop_t *p, void *base, int count, int take);
const sc_conf_prop_t *sc_conf_find(const sc_conf_prop_t *props, size_t n, const char *path);

#endif
