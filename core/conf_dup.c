/* conf_dup.c — the JSON path of a member name given twice in a
 * configuration text: jansson refuses the text at that byte, this finds
 * where in the document the byte is, so the error names the path
 * ("$.train.epochs") as every other configuration error does. */
#include <stdio.h>
#include <string.h>

#include "conf_impl.h"

#define SC_DUP_DEPTH 32
#define SC_DUP_KEY 64

typedef struct sc_dup_frame {
        int is_obj;
        long index;           /* arrays: the element being read */
        char key[SC_DUP_KEY]; /* objects: the last member name read */
} sc_dup_frame_t;

/* Scans a string at text[i] (on the quote); copies up to SC_DUP_KEY - 1 of
 * its raw bytes to out (escapes kept as written). Returns the index after
 * the closing quote, or end. */
static size_t sc_dup_string(const char *text, size_t i, size_t end, char *out)
{
        size_t n = 0;
        for (i++; i < end && text[i] != '"'; i++) {
                if (text[i] == '\\' && i + 1 < end) {
                        if (out && n + 2 < SC_DUP_KEY) {
                                out[n++] = text[i];
                                out[n++] = text[i + 1];
                        }
                        i++;
                        continue;
                }
                if (out && n + 1 < SC_DUP_KEY)
                        out[n++] = text[i];
        }
        if (out)
                out[n] = '\0';
        return i < end ? i + 1 : end;
}

int sc_conf_dup_path(const char *text, size_t pos, char *path, size_t size)
{
        sc_dup_frame_t st[SC_DUP_DEPTH];
        int depth = 0, want_key = 0;
        size_t len = strlen(text), end = pos < len ? pos : len;

        for (size_t i = 0; i < end;) {
                char c = text[i];
                sc_dup_frame_t *top = depth ? &st[depth - 1] : NULL;
                if (c == '"') {
                        int is_key = top && top->is_obj && want_key;
                        i = sc_dup_string(text, i, end, is_key ? top->key : NULL);
                        want_key = 0;
                        continue;
                }
                if (c == '{' || c == '[') {
                        if (depth == SC_DUP_DEPTH)
                                return -1;
                        st[depth].is_obj = c == '{';
                        st[depth].index = 0;
                        st[depth].key[0] = '\0';
                        depth++;
                        want_key = c == '{';
                } else if ((c == '}' || c == ']') && depth) {
                        depth--;
                } else if (c == ',' && top) {
                        if (top->is_obj)
                                want_key = 1;
                        else
                                top->index++;
                }
                i++;
        }
        if (!depth || !st[depth - 1].is_obj)
                return -1;
        size_t at = (size_t)snprintf(path, size, "$");
        for (int d = 0; d < depth && at < size; d++)
                at += (size_t)(st[d].is_obj ? snprintf(path + at, size - at, ".%s", st[d].key)
                                            : snprintf(path + at, size - at, "[%ld]", st[d].index));
        return 0;
}
