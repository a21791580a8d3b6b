/* cli_child.c — the commands a command runs as child processes (the demo's
 * feed, workers and aggregators): started from this executable with their
 * output in files, stopped by a signal, their summaries read back. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cmd.h"
#include "sc_clock.h"

pid_t sc_cli_child_spawn(sc_cli_child_t *ch, const char *out_dir, const char *name,
                         char *const argv[])
{
        snprintf(ch->name, sizeof(ch->name), "%s", name);
        snprintf(ch->out, sizeof(ch->out), "%s/%s.out", out_dir, name);
        snprintf(ch->err, sizeof(ch->err), "%s/%s.err", out_dir, name);
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0)
                return -1;
        if (pid == 0) {
                /* A process group of its own: Ctrl-C reaches the parent only,
                 * which stops its children in order. */
                setpgid(0, 0);
                int fo = open(ch->out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
                int fe = open(ch->err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
                if (fo >= 0)
                        dup2(fo, 1);
                if (fe >= 0)
                        dup2(fe, 2);
                execv("/proc/self/exe", argv);
                _exit(127);
        }
        ch->pid = pid;
        ch->done = 0;
        return pid;
}

void sc_cli_child_stop(sc_cli_child_t *ch, int sig, double secs)
{
        if (ch->pid <= 0 || ch->done)
                return;
        kill(ch->pid, sig);
        double t0 = sc_clock_mono();
        for (;;) {
                pid_t r = waitpid(ch->pid, &ch->status, WNOHANG);
                if (r == ch->pid) {
                        ch->done = 1;
                        return;
                }
                if (sc_clock_mono() - t0 > secs) {
                        kill(ch->pid, SIGKILL);
                        waitpid(ch->pid, &ch->status, 0);
                        ch->done = 1;
                        return;
                }
                struct timespec ts = {0, 20000000};
                nanosleep(&ts, NULL);
        }
}

json_t *sc_cli_child_summary(const sc_cli_child_t *ch)
{
        FILE *f = fopen(ch->out, "r");
        char *line = NULL, *last = NULL;
        size_t cap = 0;
        if (!f)
                return NULL;
        while (getline(&line, &cap, f) > 0)
                if (!strncmp(line, "summary: ", 9)) {
                        free(last);
                        last = strdup(line + 9);
                }
        free(line);
        fclose(f);
        json_t *j = last ? json_loads(last, 0, NULL) : NULL;
        free(last);
        return j;
}
