/* cmd_keygen.c — `scadles keygen`: makes a job key (docs/SECURITY.md): 32
 * bytes from the kernel's random source, written as 64 hexadecimal digits
 * and a newline, to standard output or to a new file only its owner can
 * read. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"
#include "sc_auth.h"

#define SC_KEYGEN_BYTES 32

static void sc_keygen_usage(FILE *out)
{
        fprintf(out,
                "usage: scadles keygen [-o FILE [--force]]\n"
                "\n"
                "Makes a job key: %d random bytes as %d hexadecimal digits and a newline.\n"
                "A job's processes read it from job.auth.key_file, from the variable\n"
                "job.auth.key_env names, or from SCADLES_JOB_KEY (docs/SECURITY.md):\n"
                "\n"
                "  scadles keygen -o job.key          then \"auth\": {\"key_file\": \"job.key\"}\n"
                "  export SCADLES_JOB_KEY=$(scadles keygen)\n"
                "\n"
                "  -o, --out FILE  write the key to FILE, made with mode 0600; an existing\n"
                "                  FILE is an error (a job's key replaced by mistake locks\n"
                "                  its running processes out)\n"
                "  --force         replace an existing FILE\n"
                "  -h, --help      this text\n"
                "\n"
                "Exit status: 0 ok, 1 runtime failure, 2 usage error.\n",
                SC_KEYGEN_BYTES, 2 * SC_KEYGEN_BYTES);
}

/* Fills key from the kernel's random source; 0 or -1 (errno set). */
static int sc_keygen_random(uint8_t *key, size_t n)
{
        size_t got = 0;
        while (got < n) {
                ssize_t r = getrandom(key + got, n - got, 0);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0)
                        return -1;
                got += (size_t)r;
        }
        return 0;
}

int sc_cli_keygen(const char *out, int force, char *errstr, size_t errstr_size)
{
        uint8_t key[SC_KEYGEN_BYTES];
        char text[2 * SC_KEYGEN_BYTES + 2];

        if (sc_keygen_random(key, sizeof(key))) {
                snprintf(errstr, errstr_size, "the kernel's random source: %s", strerror(errno));
                return -1;
        }
        for (size_t i = 0; i < sizeof(key); i++)
                snprintf(text + 2 * i, 3, "%02x", key[i]);
        text[2 * SC_KEYGEN_BYTES] = '\n';
        text[2 * SC_KEYGEN_BYTES + 1] = '\0';
        sc_auth_wipe(key, sizeof(key));
        if (!out) {
                int bad = fputs(text, stdout) < 0 || fflush(stdout);
                sc_auth_wipe(text, sizeof(text));
                if (bad)
                        snprintf(errstr, errstr_size, "standard output: %s", strerror(errno));
                return bad ? -1 : 0;
        }
        int fd = open(out, O_WRONLY | O_CREAT | (force ? O_TRUNC : O_EXCL), 0600);
        size_t len = strlen(text);
        int ok = fd >= 0 && write(fd, text, len) == (ssize_t)len;
        int werr = errno;
        sc_auth_wipe(text, sizeof(text));
        if (fd >= 0 && (fchmod(fd, 0600) || close(fd)) && ok) {
                ok = 0;
                werr = errno;
        }
        if (!ok)
                snprintf(errstr, errstr_size, "%s: %s%s", out, strerror(werr),
                         werr == EEXIST ? " (--force replaces it)" : "");
        return ok ? 0 : -1;
}

int sc_cmd_keygen(int argc, char **argv)
{
        static const struct option longopts[] = {{"out", required_argument, NULL, 'o'},
                                                 {"force", no_argument, NULL, 'f'},
                                                 {"help", no_argument, NULL, 'h'},
                                                 {NULL, 0, NULL, 0}};
        const char *out = NULL;
        int force = 0, c;
        char err[600];

        while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
                switch (c) {
                case 'o':
                        out = optarg;
                        break;
                case 'f':
                        force = 1;
                        break;
                case 'h':
                        sc_keygen_usage(stdout);
                        return 0;
                default:
                        sc_keygen_usage(stderr);
                        return 2;
                }
        }
        if (optind < argc || (force && !out)) {
                sc_keygen_usage(stderr);
                return 2;
        }
        if (sc_cli_keygen(out, force, err, sizeof(err))) {
                fprintf(stderr, "scadles keygen: %s\n", err);
                return 1;
        }
        if (out)
                fprintf(stderr, "scadles keygen: wrote a job key to %s (mode 0600)\n", out);
        return 0;
}
