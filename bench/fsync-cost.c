/* What one durable commit of the WAL costs the kernel on this machine, by how it is made
 * durable: `frames` WAL frames (2,072 bytes: a 24-byte header and a 2 KiB page) written
 * after each other into a file that already has its blocks (as a log restarted from its
 * beginning), then synced, `iterations` times. Prints the wall time and this process's CPU
 * time (user + system, getrusage) per commit.
 *
 *   buffered   one pwrite of the frames, then fdatasync (what SQLite does)
 *   rwf-dsync  one pwritev2 with RWF_DSYNC
 *   o-dsync    one pwrite on a descriptor opened O_DSYNC
 *   o-direct   one pwrite on a descriptor opened O_DIRECT | O_DSYNC, rounded out to 4 KiB
 *   nosync     one pwrite, no sync (the CPU of the copy alone)
 *
 * Usage: fsync-cost FILE FRAMES ITERATIONS MODE
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
static double cpu(void) {
    struct rusage r; getrusage(RUSAGE_SELF, &r);
    return r.ru_utime.tv_sec + r.ru_utime.tv_usec / 1e6 + r.ru_stime.tv_sec + r.ru_stime.tv_usec / 1e6;
}

int main(int argc, char **argv) {
    if (argc != 5) { fprintf(stderr, "usage: %s FILE FRAMES ITERATIONS buffered|rwf-dsync|o-dsync|o-direct|nosync\n", argv[0]); return 2; }
    const char *mode = argv[4];
    int frames = atoi(argv[2]), iterations = atoi(argv[3]);
    int direct = !strcmp(mode, "o-direct");
    int flags = O_RDWR | O_CREAT;
    if (!strcmp(mode, "o-dsync")) flags |= O_DSYNC;
    if (direct) flags |= O_DIRECT | O_DSYNC;
    size_t len = (size_t)2072 * frames;
    if (direct) len = (len + 4095) & ~(size_t)4095;
    const size_t total = 64 << 20;
    char *buf;
    if (posix_memalign((void **)&buf, 4096, len) != 0) return 1;
    memset(buf, 1, len);
    int fd = open(argv[1], flags, 0644);
    if (fd < 0) { perror("open"); return 1; }
    for (size_t o = 0; o + len <= total; o += len)  /* the file's blocks exist before the run */
        if (pwrite(fd, buf, len, o) != (ssize_t)len) { perror("pwrite"); return 1; }
    fdatasync(fd);
    double t0 = now(), c0 = cpu();
    off_t off = 0;
    for (int i = 0; i < iterations; i++) {
        if (off + len > total) off = 0;
        ssize_t n;
        if (!strcmp(mode, "rwf-dsync")) {
            struct iovec v = { buf, len };
            n = pwritev2(fd, &v, 1, off, RWF_DSYNC);
        } else {
            n = pwrite(fd, buf, len, off);
        }
        if (n != (ssize_t)len) { perror("write"); return 1; }
        if (!strcmp(mode, "buffered")) fdatasync(fd);
        off += len;
    }
    double t1 = now(), c1 = cpu();
    printf("%-10s %3d frames: %7.1f us wall, %6.1f us CPU per commit\n", mode, frames,
           (t1 - t0) / iterations * 1e6, (c1 - c0) / iterations * 1e6);
    close(fd);
    unlink(argv[1]);
    return 0;
}
