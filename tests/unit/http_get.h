/* http_get.h — a small HTTP/1.x client over loopback for the unit tests of
 * the metrics endpoint (test_mserver.c, test_monitor.c): one request, the
 * whole response read to EOF, its status, Content-Type and body. Included
 * after cmocka.h (get() asserts). */
#ifndef SC_TEST_HTTP_GET_H
#define SC_TEST_HTTP_GET_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

typedef struct resp {
        int code;
        char ctype[128];
        char *body; /* NUL-terminated; caller frees with resp_free */
        size_t blen;
} resp_t;

static void resp_free(resp_t *r)
{
        free(r->body);
        r->body = NULL;
}

/* Sends req as is to the loopback (v6 = ::1) on port, reads until EOF and
 * parses the status code, the Content-Type and the body. 0 on success. */
static int http_raw(int v6, int port, const char *req, resp_t *r)
{
        memset(r, 0, sizeof(*r));
        int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
        if (fd < 0)
                return -1;
        struct timeval tv = {.tv_sec = 10};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        int rc;
        if (v6) {
                struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons(port)};
                a.sin6_addr = in6addr_loopback;
                rc = connect(fd, (struct sockaddr *)&a, sizeof(a));
        } else {
                struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
                a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                rc = connect(fd, (struct sockaddr *)&a, sizeof(a));
        }
        if (rc) {
                close(fd);
                return -1;
        }
        size_t n = strlen(req), off = 0;
        while (off < n) {
                ssize_t w = send(fd, req + off, n - off, MSG_NOSIGNAL);
                if (w <= 0) {
                        close(fd);
                        return -1;
                }
                off += (size_t)w;
        }
        size_t cap = 4096, len = 0;
        char *buf = malloc(cap);
        for (;;) {
                if (len + 1 >= cap) {
                        cap *= 2;
                        buf = realloc(buf, cap);
                }
                ssize_t got = recv(fd, buf + len, cap - len - 1, 0);
                if (got < 0 && errno == EINTR)
                        continue;
                if (got < 0) {
                        free(buf);
                        close(fd);
                        return -1;
                }
                if (got == 0)
                        break;
                len += (size_t)got;
        }
        close(fd);
        buf[len] = 0;
        char *hend = strstr(buf, "\r\n\r\n");
        if (!hend || sscanf(buf, "HTTP/1.%*d %d", &r->code) != 1) {
                free(buf);
                return -1;
        }
        *hend = 0;
        for (char *h = strstr(buf, "\r\n"); h; h = strstr(h + 2, "\r\n"))
                if (!strncasecmp(h + 2, "Content-Type:", 13)) {
                        const char *v = h + 2 + 13;
                        while (*v == ' ')
                                v++;
                        snprintf(r->ctype, sizeof(r->ctype), "%.*s", (int)strcspn(v, "\r"), v);
                }
        r->blen = len - (size_t)(hend + 4 - buf);
        r->body = malloc(r->blen + 1);
        memcpy(r->body, hend + 4, r->blen);
        r->body[r->blen] = 0;
        free(buf);
        return 0;
}

/* "GET path HTTP/1.0" to 127.0.0.1:port. */
static void get(int port, const char *path, resp_t *r)
{
        char req[256];
        snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\n\r\n", path);
        assert_int_equal(http_raw(0, port, req, r), 0);
}

#endif
