/* conf_file.c — reads a configuration file and hands its text to the parser. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sc_conf.h"

#define SC_CONF_FILE_MAX (16u << 20)

/* Reads path and parses it with sc_conf_parse, or sc_conf_parse_sim when sim. */
static sc_err_t sc_conf_load_as(sc_conf_t *conf, const char *path, int sim, char *errstr,
                                size_t errstr_size)
{
        size_t len = 0, cap = 4096;
        char *text;
        FILE *f;

        sc_conf_defaults(conf);
        f = fopen(path, "rb");
        if (!f)
                return sc_errf(SC_ERR_IO, errstr, errstr_size, "%s: cannot open: %s", path,
                               strerror(errno));
        text = malloc(cap);
        while (text) {
                len += fread(text + len, 1, cap - 1 - len, f);
                if (len < cap - 1 || cap > SC_CONF_FILE_MAX)
                        break;
                char *bigger = realloc(text, cap * 2);
                if (!bigger) {
                        free(text);
                        text = NULL;
                        break;
                }
                text = bigger;
                cap *= 2;
        }
        int failed = ferror(f);
        int saved = errno;
        fclose(f);
        if (!text)
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "%s: out of memory", path);
        if (failed) {
                free(text);
                return sc_errf(SC_ERR_IO, errstr, errstr_size, "%s: cannot read: %s", path,
                               strerror(saved));
        }
        if (len >= SC_CONF_FILE_MAX) {
                free(text);
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "%s: larger than %u bytes; not a configuration file", path,
                               SC_CONF_FILE_MAX);
        }
        text[len] = '\0';
        if (memchr(text, '\0', len)) {
                free(text);
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "%s: contains a NUL byte; not a JSON text", path);
        }
        sc_err_t err = sim ? sc_conf_parse_sim(conf, text, path, errstr, errstr_size)
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
