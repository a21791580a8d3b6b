/* sim_bcast.c — the model broadcast in the simulator (sim.downlink_bcast):
 * the shards' publishers and logs, and each device's reader, run by the
 * same core module (core/bcast.c) as the Kafka runtime, so the bytes a
 * device reads are those a worker following J.bcast would. */
#include <stdlib.h>
#include <string.h>

#include "sim_impl.h"

sc_err_t sc_sim_bcast_init(sc_sim_t *sim, char *errstr, size_t errstr_size)
{
        const sc_bcast_spec_t *spec = &sc_job_spec(sim->job)->bcast;
        sc_err_t err;

        if (!(sim->bsh = calloc((size_t)sim->ns, sizeof(*sim->bsh))))
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "sim: out of memory");
        for (int sh = 0; sh < sim->ns; sh++)
                if ((err = sc_job_bcast_new(sim->job, sh, &sim->bsh[sh].pub, errstr, errstr_size)))
                        return err;
        for (int i = 0; i < sim->nd; i++) {
                sc_sim_dev_t *d = &sim->devs[i];
                if (!(d->bsub = calloc((size_t)sim->ns, sizeof(*d->bsub))) ||
                    !(d->bview = calloc(sim->n, sizeof(float))))
                        return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "sim: out of memory");
                for (int sh = 0; sh < sim->ns; sh++)
                        sc_bcast_sub_init(&d->bsub[sh], spec->keyframe_interval);
        }
        return SC_OK;
}

/* Version 0 goes out as a keyframe of every shard, as an aggregator's first
 * broadcast after its assignment does; each device reads it (a worker
 * starts from J.bcast's model) and starts at its arrival, not at 0. */
sc_err_t sc_sim_bcast_start(sc_sim_t *sim)
{
        sc_err_t err;

        for (int i = 0; i < sim->nd; i++) {
                sc_sim_dev_t *d = &sim->devs[i];
                double at = 0;
                for (int sh = 0; sh < sim->ns; sh++) {
                        size_t bytes = 0;
                        const float *view;
                        if ((err = sc_sim_bcast_send(sim, sh, i, &bytes, &view)))
                                return err;
                        double t = sc_sim_link_send(&d->down, 0, bytes);
                        at = t > at ? t : at;
                }
                if ((err = sc_sim_queue_push(&sim->q, at, SC_EV_READY, i, NULL)))
                        return err;
                d->busy = 1;
        }
        return SC_OK;
}

void sc_sim_bcast_free(sc_sim_t *sim)
{
        for (int i = 0; sim->devs && i < sim->nd; i++) {
                free(sim->devs[i].bsub);
                free(sim->devs[i].bview);
        }
        for (int sh = 0; sim->bsh && sh < sim->ns; sh++) {
                sc_bcast_pub_destroy(sim->bsh[sh].pub);
                for (int k = 0; k < sim->bsh[sh].cap; k++)
                        sc_buf_free(&sim->bsh[sh].log[k]);
                free(sim->bsh[sh].log);
        }
        free(sim->bsh);
        sim->bsh = NULL;
}

/* Publishes the shard's server version if the view is behind it; a
 * keyframe starts the log anew (it is delivered at once: its offset is
 * known). */
static sc_err_t sc_sim_bcast_publish(sc_sim_t *sim, int sh)
{
        sc_sim_bshard_t *b = &sim->bsh[sh];
        const sc_server_t *srv = sim->servers[sh];
        sc_wire_bcast_kind_t kind;
        char why[256];
        sc_err_t err;

        if (sc_bcast_pub_current(b->pub, sc_server_version(srv)))
                return SC_OK;
        if (sc_bcast_pub_key_due(b->pub)) {
                b->first += b->nlog;
                b->nlog = 0;
        }
        if (b->nlog == b->cap) {
                int cap = b->cap ? 2 * b->cap : 16;
                sc_buf_t *log = realloc(b->log, (size_t)cap * sizeof(*log));
                if (!log)
                        return SC_ERR_NOMEM;
                memset(log + b->cap, 0, (size_t)(cap - b->cap) * sizeof(*log));
                b->log = log;
                b->cap = cap;
        }
        sc_buf_t *rec = &b->log[b->nlog];
        rec->len = 0;
        if ((err = sc_job_bcast_encode(sim->job, b->pub, srv, rec, &kind, why, sizeof(why))))
                return err;
        if (kind == SC_WIRE_BCAST_KEY)
                sc_bcast_pub_keyed(b->pub, b->first + b->nlog);
        b->nlog++;
        return SC_OK;
}

sc_err_t sc_sim_bcast_send(sc_sim_t *sim, int sh, int i, size_t *bytesp, const float **viewp)
{
        sc_sim_bshard_t *b = &sim->bsh[sh];
        sc_bcast_sub_t *sub = &sim->devs[i].bsub[sh];
        float *view = sim->devs[i].bview + sim->begin[sh];
        size_t len = sim->begin[sh + 1] - sim->begin[sh];
        char why[256];
        sc_err_t err;

        if ((err = sc_sim_bcast_publish(sim, sh)))
                return err;
        int64_t end = b->first + b->nlog, off = sub->next;
        if (off < b->first) /* its records are gone: start at the newest, as a reader does */
                off = end - 1;
        for (int guard = 0; off < end && guard < 4 * b->nlog + 4; guard++) {
                const sc_buf_t *rec = &b->log[off - b->first];
                sc_wire_msg_t msg;
                sc_bcast_action_t act;
                int64_t seek;
                if ((err = sc_wire_decode(rec->data, rec->len, &msg, why, sizeof(why))) ||
                    (err = sc_bcast_sub_take(sub, view, len, &msg.u.bcast, off, end, &act, &seek,
                                             why, sizeof(why))))
                        return err;
                *bytesp += rec->len;
                off = act == SC_BCAST_SEEK ? seek : off + 1;
                if (off < b->first)
                        off = b->first;
        }
        *viewp = sc_bcast_pub_view(b->pub);
        return SC_OK;
}
