/* sim_conf.c — a "sim" object alone through the property table (the
 * section's rows are in core/conf_table.c; a whole file is read with
 * sc_conf_load_sim into sc_conf_t.sim). */
#include <jansson.h>
#include <stdlib.h>

#include "sc_sim.h"

sc_err_t sc_sim_spec_parse(sc_sim_spec_t *spec, void *json_sim, const char *origin, char *errstr,
                           size_t errstr_size)
{
        json_t *root = json_object();
        char *text = NULL;
        sc_conf_t *conf = malloc(sizeof(*conf));
        sc_err_t err = SC_ERR_NOMEM;

        if (root && conf && (!json_sim || !json_object_set(root, "sim", json_sim)) &&
            (text = json_dumps(root, JSON_COMPACT))) {
                err = sc_conf_parse_sim(conf, text, origin, errstr, errstr_size);
                *spec = conf->sim;
                sc_conf_free(conf);
        } else {
                sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
        }
        free(text);
        free(conf);
        json_decref(root);
        return err;
}
