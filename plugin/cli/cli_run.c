/* cli_run.c — what long-running commands share at run time: the stop flag
 * set by SIGINT/SIGTERM, a monotonic clock, and the printers of library and
 * librdkafka log lines. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cmd.h"

volatile sig_atomic_t sc_cli_stop;

static void sc_cli_on_signal(int sig)
{
        (void)sig;
        sc_cli_stop = 1;
}

void sc_cli_signals(void)
{
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = sc_cli_on_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
}

volatile int sc_cli_quiet;

void sc_cli_log(void *opaque, int level, const char *msg)
{
        if (level > 6 || (level > 4 && sc_cli_quiet))
                return;
        fprintf(stderr, "scadles %s: %s\n", (const char *)opaque, msg);
}

void sc_cli_kafka_log(void *opaque, int level, const char *fac, const char *name, const char *msg)
{
        if (level > 5 || (level > 4 && sc_cli_quiet) || !strcmp(fac, "CONFWARN"))
                return;
        fprintf(stderr, "scadles %s: kafka: %s: %s: %s\n", (const char *)opaque, name, fac, msg);
}
