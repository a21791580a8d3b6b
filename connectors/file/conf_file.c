/* conf_file.c — reads a configuration file and hands its text to the parser. */
#include <stdlib.h>
#include <string.h>

#include "sc_conf.h"
#include "sc_file.h"

#define SC_CONF_FILE_MAX (16u << 20)

/* Reads path and parses it with sc_conf_parse, or sc_conf_parse_sim when sim. */
static sc_err_t sc_conf_load_as(sc_conf_t *conf, const char *path, int sim, char *errstr,
                                size_t errstr_size)
{
        size_t len;
        char *text;

        sc_conf_defaults(conf);
        sc_err_t err = sc_file_read_all(path, SC_CONF_FILE_MAX, &text, &len, errstr, errstr_size);
        if (err == SC_ERR_INVAL)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "%s: larger than %u bytes; not a configuration file", path,
                               SC_CONF_FILE_MAX);
        if (err)
                return err;
        if (memchr(text, '\0', len)) {
                free(text);
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "%s: contains a NUL byte; not a JSON text", path);
        }
        err = sim ? sc_conf_parse_sim(conf, text, path, errstr, errstr_size)
                  : sc_conf_parse(conf, text, path, errstr, errstr_size);
        free(text);
        return err;
}

sc_err_t sc_conf_load(sc_conf_t *conf, const char *path, char *errstr, size_t errstr_size)
{
        return sc_conf_load_as(conf, path, 0, errstr, errstr_size);
}

sc_err_t sc_conf_load_sim(sc_conf_t *conf, const char *path, char *errstr, size_t errstr_size)
{
        return sc_conf_load_as(conf, path, 1, errstr, errstr_size);
}
