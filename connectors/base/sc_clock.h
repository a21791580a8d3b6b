/* sc_clock.h — the runtime's one clock. The core takes time as an argument
 * (sans-I/O); the programs above it read it here. */
#ifndef SC_CLOCK_H
#define SC_CLOCK_H

/* Monotonic seconds (CLOCK_MONOTONIC): for intervals and deadlines, never
 * for wall-clock time. */
double sc_clock_mono(void);

#endif
