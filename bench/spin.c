/* A fixed CPU-bound loop (registers and one cached word: no memory traffic to disturb),
 * run for SECONDS of wall time. Prints the thread's CPU time per million iterations in
 * milliseconds, its CPU time and the wall time: on an otherwise idle CPU the first figure
 * is constant; when something else takes the CPU unseen (interrupt handling charged to
 * whoever runs, the hypervisor's work on the same physical core) it grows.
 *
 * Usage: spin SECONDS */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double clock_of(clockid_t id) { struct timespec t; clock_gettime(id, &t); return t.tv_sec + t.tv_nsec / 1e9; }

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: %s SECONDS\n", argv[0]); return 2; }
    double seconds = atof(argv[1]);
    volatile uint64_t x = 0;
    double t0 = clock_of(CLOCK_MONOTONIC), c0 = clock_of(CLOCK_THREAD_CPUTIME_ID);
    uint64_t millions = 0;
    while (clock_of(CLOCK_MONOTONIC) - t0 < seconds) {
        for (int i = 0; i < 1000000; i++) x += (uint64_t)i * x + 1;
        millions++;
    }
    double c1 = clock_of(CLOCK_THREAD_CPUTIME_ID), t1 = clock_of(CLOCK_MONOTONIC);
    printf("%.4f %.3f %.3f\n", (c1 - c0) * 1e3 / millions, c1 - c0, t1 - t0);
    return 0;
}
