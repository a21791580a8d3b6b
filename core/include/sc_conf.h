/* sc_conf.h — JSON configuration -> typed configuration through one property
 * table (name, type, default, min/max, description). Unknown keys and wrong
 * types are errors naming the JSON path ("$.model.layers[2].kernel: expected
 * integer >= 1"). The "kafka" object is kept as JSON and passed to librdkafka
 * untouched. docs/CONFIG.md and `scadles config --list` come from the table.
 *
 * Every error message reads "<origin>: $.json.path: message", where origin is
 * the file name (sc_conf_load, connectors/file/sc_file.h), the origin given to sc_conf_parse, or
 * "override" (sc_conf_set). Syntax errors read "<origin>:<line>:<column>:
 * invalid JSON: ...". */
#ifndef SC_CONF_H
#define SC_CONF_H

#include <stddef.h>
#include <stdint.h>

#include "sc_batch.h"
#include "sc_codec.h"
#include "sc_decode.h"
#include "sc_err.h"
#include "sc_nn.h"
#include "sc_optim.h"
#include "sc_server.h"
#include "sc_sim_spec.h"
#include "sc_stream.h"
#include "sc_sync.h"

#define SC_CONF_PATH_MAX 512
#define SC_CONF_ORIGIN_MAX 256

typedef struct sc_conf_optim {
        double lr; /* base learning rate */
        double momentum;
        int nesterov;
        double weight_decay;
        sc_sched_spec_t sched; /* kind, warmup, milestones... in steps (lr copied from above) */
        double base_batch;     /* linear LR scaling: lr * batch / base_batch; 0 = off */
        /* The same schedule times in epochs (offline training); each is an
         * alternative to its steps twin (giving both is an error). Convert
         * with sc_conf_sched_steps(). */
        double warmup_epochs;
        double total_epochs;
        int n_milestones_epochs;
        double milestones_epochs[SC_SCHED_MAX_MILESTONES];
} sc_conf_optim_t;

typedef struct sc_conf_train {
        int epochs;
        int batch;
        uint64_t seed;
        int threads;                       /* compute threads per model */
        char checkpoint[SC_CONF_PATH_MAX]; /* "" = do not save */
        double progress_interval;          /* seconds between progress lines; 0 = per epoch */
        double checkpoint_interval; /* s between checkpoints of long runs; 0 = at stop only */
        int resume;                 /* a standalone worker starts from its checkpoint */
} sc_conf_train_t;

typedef struct sc_conf_data {
        char source[32];             /* "fashion-mnist" or "synthetic" */
        char dir[SC_CONF_PATH_MAX];  /* IDX folder (default: Debian's package path) */
        double mean, std;            /* normalization after scaling to [0,1]: (x-mean)/std */
        int synth_train, synth_test; /* synthetic: sample counts */
        int synth_classes;
        double synth_noise;
} sc_conf_data_t;

/* ---- streaming: source (Kafka topics), streams (decoders and buffers),
 * worker (batches, evaluation, stopping) ---- */

#define SC_CONF_MAX_TOPICS 64
#define SC_CONF_TOPIC_MAX 256

/* Label origin as configured; AUTO = the format's own field (json, csv) or
 * the key (raw). */
typedef enum sc_conf_label {
        SC_CONF_LABEL_AUTO,
        SC_CONF_LABEL_FIELD,
        SC_CONF_LABEL_KEY,
        SC_CONF_LABEL_HEADER,
        SC_CONF_LABEL_OFFSET,
} sc_conf_label_t;

/* A record decoder as configured (turned into an sc_decode_spec_t with the
 * model's numel and classes by the source, sc_ks_decode_spec). */
typedef struct sc_conf_decode {
        sc_decode_format_t format;
        sc_conf_label_t label; /* AUTO: the format's own */
        sc_decode_label_encoding_t label_encoding;
        char label_header[64];
        char features_path[128];
        char label_path[128];
        char delimiter[2]; /* exactly one character */
        int label_column, first_feature_column, columns;
        sc_decode_dtype_t dtype;
        long data_offset, label_offset;
        double scale, mean, std;
        const sc_fields_t *fields; /* named fields; NULL = none (shared, counted) */
        const sc_vocab_t *labels;  /* class names; NULL = none (shared, counted) */
        const sc_vocab_t *header;  /* csv column names; NULL = none (shared, counted) */
} sc_conf_decode_t;

/* One element of source.topics: a topic and its decoder (keys not given
 * take the streams.* value). */
typedef struct sc_conf_topic {
        char topic[SC_CONF_TOPIC_MAX];
        sc_conf_decode_t decode;
} sc_conf_topic_t;

typedef struct sc_conf_source {
        char group_id[SC_CONF_TOPIC_MAX];
        char pattern[SC_CONF_TOPIC_MAX];     /* POSIX extended regex of topics; "" = none */
        char dead_letter[SC_CONF_TOPIC_MAX]; /* dead-letter topic; "" = none */
        int unlabelled; /* records carry no label (scadles predict): sc_decode_spec_unlabelled */
        double align; /* s a partition may run ahead of the furthest behind (timestamps); 0 = off */
        /* the Schema Registry of avro topics */
        char registry_url[SC_CONF_PATH_MAX];       /* "" = none */
        char registry_auth_file[SC_CONF_PATH_MAX]; /* "user:password" for basic auth; "" = none */
        char registry_ca[SC_CONF_PATH_MAX];        /* PEM CA bundle; "" = the system's */
        double registry_timeout;                   /* s, one request */
        int n_topics;
        sc_conf_topic_t topics[SC_CONF_MAX_TOPICS];
} sc_conf_source_t;

typedef struct sc_conf_streams {
        sc_conf_decode_t decode; /* default decoder */
        sc_stream_spec_t buffer; /* every stream's buffer: policy, cap, watermarks... */
} sc_conf_streams_t;

typedef struct sc_conf_worker {
        sc_batch_spec_t batch;    /* mode, b, b_min, b_max, window, shuffle */
        double progress_interval; /* s */
        double eval_interval;     /* s; 0 = only at the end */
        int eval;                 /* evaluate on the test half of data.source */
        int eval_samples;         /* 0 = the whole test set */
        long max_samples;         /* stop after training on this many; 0 = no limit */
        double duration;          /* s; 0 = no limit */
        double idle_exit;         /* s without records; 0 = never */
        double commit_interval;   /* s between offset commits */
} sc_conf_worker_t;

/* ---- evaluation: the held-out set from the user's data, the prequential window ---- */

/* Format of eval.file; AUTO = IDX when the file starts with the IDX or gzip
 * magic, else lines in the decoder's format. */
typedef enum sc_conf_eval_format {
        SC_CONF_EVAL_AUTO,
        SC_CONF_EVAL_CSV,
        SC_CONF_EVAL_JSON,
        SC_CONF_EVAL_IDX,
} sc_conf_eval_format_t;

typedef struct sc_conf_eval {
        char file[SC_CONF_PATH_MAX];     /* CSV / JSON Lines / IDX images; "" = none */
        char labels[SC_CONF_PATH_MAX];   /* IDX labels of an IDX eval.file */
        char topic[SC_CONF_TOPIC_MAX];   /* held-out topic, read to its end at start; "" = none */
        char decoder[SC_CONF_TOPIC_MAX]; /* source.topics element whose decoder reads it */
        int format;                      /* sc_conf_eval_format_t */
        long window;                     /* prequential sliding window, samples */
} sc_conf_eval_t;

/* ---- monitoring: the Prometheus endpoint of every process, drift detection ---- */

#define SC_CONF_LISTEN_MAX 256

typedef struct sc_conf_metrics {
        char listen[SC_CONF_LISTEN_MAX]; /* "host:port" of /metrics and /healthz; "" = off */
        double interval;                 /* s between snapshots of the served text */
        double broker_down;              /* s without a reachable broker before 503 */
} sc_conf_metrics_t;

typedef enum sc_conf_drift_action {
        SC_CONF_DRIFT_NONE,  /* report only */
        SC_CONF_DRIFT_RESET, /* forget the optimizer's momentum */
        SC_CONF_DRIFT_BOOST, /* multiply the learning rate for a window of samples */
} sc_conf_drift_action_t;

typedef struct sc_conf_drift {
        int on;             /* Page-Hinkley on the prequential error */
        double delta;       /* tolerated rise of the error rate */
        double threshold;   /* alarm level of the cumulative statistic */
        long min_samples;   /* samples after a (re)start before an alarm */
        double alpha;       /* forgetting factor of the cumulative sum */
        int action;         /* sc_conf_drift_action_t */
        double boost;       /* boost: learning-rate factor */
        long boost_samples; /* boost: samples it lasts */
} sc_conf_drift_t;

/* ---- distributed training: the job shared by workers and aggregators ---- */

#define SC_CONF_JOB_NAME_MAX 200 /* topic names "<name>.grad" etc. stay below 249 */

typedef enum sc_conf_publish {
        SC_CONF_PUBLISH_AUTO,     /* every version (every policy) */
        SC_CONF_PUBLISH_EVERY,    /* every new shard version */
        SC_CONF_PUBLISH_INTERVAL, /* at most one per snapshot_interval (and on revoke/exit) */
} sc_conf_publish_t;

#define SC_CONF_AUTH_MAX 256

typedef struct sc_conf_job {
        char name[SC_CONF_JOB_NAME_MAX]; /* topics J.grad, J.model, J.inject, J.ctl */
        int shards;                      /* model shards = partitions of J.grad and J.model */
        int replication;                 /* of created topics; -1 = the broker's default */
        sc_sync_spec_t sync;             /* policy and parameters; n_workers = job.workers */
        sc_codec_id_t codec;             /* of worker updates */
        double codec_ratio;              /* 0 = the codec's default */
        int codec_error_feedback;        /* -1 = the codec's default, else 0 / 1 */
        double codec_delta;              /* adaptive: 0 = default 0.3 */
        sc_codec_id_t downlink;          /* of broadcast deltas */
        double downlink_ratio;           /* 0 = the codec's default */
        int downlink_half;               /* sparse delta values as IEEE half */
        int keyframe_interval;           /* broadcast deltas between keyframes */
        sc_conf_publish_t publish;
        double snapshot_interval;  /* s between publications (interval / async auto) */
        double heartbeat_interval; /* s between worker heartbeats on J.ctl */
        double leave_grace;        /* s unable to form a batch before leaving barriers */
        double session_timeout;    /* s of silence after which a worker leaves barriers */
        double round_timeout;      /* s a round waits for its missing turns (0: for ever) */
        double progress_interval;  /* s between aggregator progress lines */
        double inject_alpha;       /* worker: probability a batch shares on J.inject */
        double inject_beta;        /* worker: fraction shared / most foreign mixed in */
        double inject_max_age;     /* worker: refuse J.inject records older than this (s) */
        sc_server_limits_t limits; /* aggregators: what one update may do */
        uint64_t model_jump;       /* workers: refuse a J.model record this far ahead */
        int auth_none;             /* job.auth.mode none: unauthenticated */
        char auth_key_file[SC_CONF_AUTH_MAX]; /* job key: a file holding it, or */
        char auth_key_env[SC_CONF_AUTH_MAX];  /* an environment variable holding it */
} sc_conf_job_t;

/* ---- embedding: the public API's worker (plugin/scadles.c), set only by
 * name through scadles_conf_set (sc_conf_set_embedding), never from a file ---- */

typedef struct sc_conf_embed {
        int stats_interval_ms; /* stats callback period; 0 = no periodic statistics */
        int queue_max;         /* records the push queue holds */
        int queue_drop;        /* 1 = drop at once when full, 0 = block up to block_ms */
        int block_ms;          /* -1 = block until there is room */
        int distributed;       /* a member of the job in job.* */
        int worker_id;         /* distributed: 0 .. job.workers-1 */
        int eval;              /* held-out evaluation */
        long publish_steps;    /* scadles_predict: publish the model every this many steps */
} sc_conf_embed_t;

/* ---- plugin: the librdkafka interceptor's own settings (plugin/interceptor.c),
 * set only as scadles.<name> on the host's configuration ---- */

typedef struct sc_conf_plugin {
        char config[SC_CONF_PATH_MAX];       /* the worker's configuration file; "" = none */
        char summary_file[SC_CONF_PATH_MAX]; /* final statistics JSON; "" = none */
        char stats_file[SC_CONF_PATH_MAX];   /* periodic statistics, a line each; "" = none */
        int log_level;                       /* stderr lines at or below this syslog level */
        int flush_ms;                        /* on the host's destroy: wait this long */
} sc_conf_plugin_t;

typedef struct sc_conf {
        sc_model_spec_t model;
        sc_conf_optim_t optim;
        sc_conf_train_t train;
        sc_conf_data_t data;
        void *kafka; /* json_t * object, owned (a reference); NULL if absent */
        void *kafka_consumer, *kafka_producer; /* the same, for one client type */
        sc_conf_source_t source;
        sc_conf_streams_t streams;
        sc_conf_worker_t worker;
        sc_conf_job_t job;
        sc_conf_eval_t eval;
        sc_conf_metrics_t metrics;
        sc_conf_drift_t drift;
        sc_sim_spec_t sim; /* the simulator's section (scadles sim) */
        /* 1 = read for the simulator (sc_conf_parse_sim): the sim.* properties
         * are read, checked and dumped; 0 = $.sim is an unknown property, as
         * for every other command. */
        int sim_section;
        sc_conf_embed_t embed;   /* the embedding properties (public API) */
        sc_conf_plugin_t plugin; /* the interceptor's own properties */
        /* Internal: bit s = the s-th documented section ("job", ...) was named
         * at the top level of the parsed text or by an override. */
        uint32_t sections_given;
        /* Internal: bit j of topic_given[i] = source.topics[i]'s j-th key was given. */
        uint32_t topic_given[SC_CONF_MAX_TOPICS];

        /* model.init: initialization of layers that do not name their own. */
        sc_init_kind_t init;
        /* Internal: bit j of layer_given[i] = layer i's j-th key was given
         * (so model.init reaches only the layers without their own "init"). */
        uint32_t layer_given[SC_MODEL_MAX_LAYERS];
        char origin[SC_CONF_ORIGIN_MAX]; /* where the configuration came from */
} sc_conf_t;

/* Sets every property to its default (model: no layers, no kafka object).
 * conf must not hold a kafka reference (fresh or sc_conf_free'd). */
void sc_conf_defaults(sc_conf_t *conf);
/* Parses a JSON text into conf (which gets defaults first; it must not hold
 * a kafka reference). origin names the input in messages (a file name).
 * Errors name the JSON path; on error conf holds the defaults again and
 * nothing that needs freeing. */
sc_err_t sc_conf_parse(sc_conf_t *conf, const char *json_text, const char *origin, char *errstr,
                       size_t errstr_size);
/* The same for the simulator: the "sim" section is read too (conf->sim,
 * conf->sim_section = 1); without one conf->sim holds the defaults. */
sc_err_t sc_conf_parse_sim(sc_conf_t *conf, const char *json_text, const char *origin, char *errstr,
                           size_t errstr_size);
/* Applies one "a.b.c=value" override (value parsed as JSON, else a string).
 * Paths: any property ("optim.lr"), a section with an object value
 * ("optim.schedule={...}"), a list element or its key ("model.layers[1].units",
 * "model.layers[3]={...}"; index == count appends), or "kafka.<any.key>".
 * Atomic: on error conf is unchanged. */
sc_err_t sc_conf_set(sc_conf_t *conf, const char *assignment, char *errstr, size_t errstr_size);
/* Applies n overrides in order, then checks the result once (so one may
 * rename what another refers to, as a topic and eval.decoder). Atomic: on
 * error conf is unchanged. */
sc_err_t sc_conf_set_all(sc_conf_t *conf, const char *const *assignments, int n, char *errstr,
                         size_t errstr_size);
/* 1 if the configuration named the top-level section (a "job" object in
 * the file, or a job.* override), 0 if it holds only its defaults. */
int sc_conf_section_given(const sc_conf_t *conf, const char *section);
/* Sets one embedding property (the names of the "embedding" section:
 * "queue.block.ms", "eval", ...) from its text: integers in decimal, booleans
 * true/false/1/0, choices by name. *known = 0 if name is not one of them
 * (conf unchanged, SC_OK). Errors read "<name>: \"<value>\": expected ..."
 * and leave conf unchanged. */
sc_err_t sc_conf_set_embedding(sc_conf_t *conf, const char *name, const char *value, int *known,
                               char *errstr, size_t errstr_size);
/* Sets one property of the interceptor's own (the names of the "plugin"
 * section, without their "scadles." prefix) the same way; *known is 0 for
 * other names. */
sc_err_t sc_conf_set_plugin(sc_conf_t *conf, const char *name, const char *value, int *known,
                            char *errstr, size_t errstr_size);
/* Cross-property checks (run by parse and set; call it after editing the
 * struct by hand). Also applies model.init to layers without their own. */
sc_err_t sc_conf_validate(sc_conf_t *conf, char *errstr, size_t errstr_size);
/* Releases what conf holds (the kafka objects, the decoders' field lists
 * and class names). Accepts NULL. */
void sc_conf_free(sc_conf_t *conf);
/* The decoder spec of the configured decoder d for a model of numel inputs
 * and n_classes classes (d's shared values borrowed). */
void sc_conf_decode_spec(const sc_conf_decode_t *d, size_t numel, int n_classes,
                         sc_decode_spec_t *ds);
/* After a struct copy of a configuration (*copy = *conf), takes one more
 * reference to each of its shared decoder values (streams.fields,
 * streams.labels and the topics'), so that both are freed by sc_conf_free.
 * The kafka objects are not touched. */
void sc_conf_ref_values(sc_conf_t *copy);

/* Every property with type, default, range and meaning: plain text
 * (markdown = 0) or the docs/CONFIG.md page (markdown = 1). Caller frees;
 * NULL if out of memory. */
char *sc_conf_describe(int markdown);
/* The markdown tables (### headings) of the comma-separated sections
 * ("source,streams,worker"), as docs/CONFIG.md has them; docs/STREAMS.md
 * embeds them. *textp is the caller's. SC_ERR_INVAL names an unknown
 * section. */
sc_err_t sc_conf_describe_sections(const char *sections, char **textp, char *errstr,
                                   size_t errstr_size);
/* Name of the i-th property of the table ("optim.lr", list element keys as
 * "model.layers[].units"); NULL when i is past the end. */
const char *sc_conf_prop_name(size_t i);
/* jansson's error text (json_error_t.text) without the token it quotes ("invalid escape", not
 * "invalid escape near '\"Hunter2\\q'"): a configuration's values may be
 * secrets, and the line and column locate the error. Returns buf. */
const char *sc_conf_json_error(const char *jansson_text, char *buf, size_t size);

/* The resolved configuration as indented JSON that sc_conf_parse reads back
 * to the same values, except that secret kafka values (sc_conf_kafka_secret)
 * read SC_CONF_REDACTED. Caller frees; NULL if out of memory. */
char *sc_conf_dump(const sc_conf_t *conf);
/* The same with the secret values themselves: for a configuration file one
 * process writes for others (the demo's job.json), never for display. */
char *sc_conf_dump_secret(const sc_conf_t *conf);

/* The learning-rate schedule in optimizer steps: conf->optim.sched with lr
 * filled in and every epoch-valued time (warmup_epochs, total_epochs,
 * milestones_epochs) converted with steps_per_epoch (rounded to nearest).
 * total_steps 0 becomes train.epochs * steps_per_epoch. steps_per_epoch
 * must be >= 1. */
sc_err_t sc_conf_sched_steps(const sc_conf_t *conf, long steps_per_epoch, sc_sched_spec_t *out,
                             char *errstr, size_t errstr_size);

/* Rewrites an sc_model_new() message ("layers[2] (conv2d): ...") held in
 * errstr into "<origin>: $.model.layers[2] (conv2d): ...". */
void sc_conf_model_error(const sc_conf_t *conf, char *errstr, size_t errstr_size);

/* 1 if the librdkafka property key holds a secret (a password, a secret,
 * private key material): dumps print its value as SC_CONF_REDACTED. */
#define SC_CONF_REDACTED "(redacted)"
int sc_conf_kafka_secret(const char *key);

/* Calls fn for each kafka property with its value as a string (numbers in
 * shortest round-trip form, booleans "true"/"false"), in file order. A
 * non-zero return from fn stops the walk and is returned. */
typedef int (*sc_conf_kv_fn)(const char *key, const char *value, void *opaque);
int sc_conf_kafka_foreach(const sc_conf_t *conf, sc_conf_kv_fn fn, void *opaque);

#endif
