/* Counts a process's heap requests by size, for one thread or all: loaded with LD_PRELOAD
 * in front of the C library's malloc, realloc, posix_memalign and aligned_alloc (not calloc,
 * which dlsym itself may need before it can answer; Swift and SQLite allocate through malloc).
 * Counting starts and stops at SIGUSR2 (so a warm-up is left out); at each stop the counts
 * are appended to the file named by MALLOC_SIZES_OUT (default: standard error) and reset.
 *
 *   MALLOC_SIZES_THREAD   count only calls from threads of this name (as /proc shows it)
 *
 * Output, one line per size class that saw a request: "<low> <high> <count>", classes of
 * 16 bytes up to 1,024 and of 256 bytes up to 64 KiB, then larger requests as one class.
 * The C library keeps freed blocks of up to 1,032 bytes per thread; larger ones go back
 * to its shared bins, which costs more to take and give back.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#define SMALL 64      /* 16-byte classes up to 1,024 */
#define MEDIUM 252    /* 256-byte classes from 1,024 up to 65,536 */
static atomic_long counts[SMALL + MEDIUM + 1];
static atomic_int counting;
static char wanted[16];
static __thread int thread_state;  /* 0 unknown, 1 counted, 2 not */

static void *(*next_malloc)(size_t);
static void *(*next_realloc)(void *, size_t);
static int (*next_posix_memalign)(void **, size_t, size_t);
static void *(*next_aligned_alloc)(size_t, size_t);

static int class_of(size_t n) {
    if (n <= 1024) return n == 0 ? 0 : (int)((n - 1) / 16);
    if (n <= 65536) return SMALL + (int)((n - 1025) / 256);
    return SMALL + MEDIUM;
}

static void count(size_t n) {
    if (!atomic_load_explicit(&counting, memory_order_relaxed)) return;
    if (wanted[0]) {
        if (!thread_state) {
            char name[17] = {0};
            prctl(PR_GET_NAME, name);
            thread_state = strcmp(name, wanted) == 0 ? 1 : 2;
        }
        if (thread_state != 1) return;
    }
    atomic_fetch_add_explicit(&counts[class_of(n)], 1, memory_order_relaxed);
}

static void dump(void) {
    const char *path = getenv("MALLOC_SIZES_OUT");
    int fd = path ? open(path, O_WRONLY | O_CREAT | O_APPEND, 0644) : 2;
    if (fd < 0) return;
    char line[96];
    for (int i = 0; i <= SMALL + MEDIUM; i++) {
        long c = atomic_exchange(&counts[i], 0);
        if (!c) continue;
        long low, high;
        if (i < SMALL) { low = i * 16 + 1; high = (i + 1) * 16; }
        else if (i < SMALL + MEDIUM) { low = 1025 + (long)(i - SMALL) * 256; high = low + 255; }
        else { low = 65537; high = -1; }
        int len = snprintf(line, sizeof line, "%ld %ld %ld\n", low, high, c);
        if (write(fd, line, (size_t)len) < 0) break;
    }
    if (write(fd, "end\n", 4) < 0) { /* nothing to do */ }
    if (path) close(fd);
}

static void toggle(int sig) {
    (void)sig;
    if (atomic_exchange(&counting, 0)) dump(); else atomic_store(&counting, 1);
}

__attribute__((constructor)) static void start(void) {
    const char *t = getenv("MALLOC_SIZES_THREAD");
    if (t) strncpy(wanted, t, sizeof wanted - 1);
    signal(SIGUSR2, toggle);
}

void *malloc(size_t n) {
    if (!next_malloc) next_malloc = dlsym(RTLD_NEXT, "malloc");
    count(n);
    return next_malloc(n);
}

void *realloc(void *p, size_t n) {
    if (!next_realloc) next_realloc = dlsym(RTLD_NEXT, "realloc");
    count(n);
    return next_realloc(p, n);
}

int posix_memalign(void **p, size_t a, size_t n) {
    if (!next_posix_memalign) next_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
    count(n);
    return next_posix_memalign(p, a, n);
}

void *aligned_alloc(size_t a, size_t n) {
    if (!next_aligned_alloc) next_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
    count(n);
    return next_aligned_alloc(a, n);
}
