#include <sqlite3.h>

/// sqlite3_config is variadic, which Swift cannot call; this wraps the one option we set.
/// It must run before SQLite initialises (when the first connection opens); later it
/// answers SQLITE_MISUSE and changes nothing.
static inline int kidledger_sqlite3_config_memstatus(int on) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, on);
}

/* A page cache that is SQLite's own with one key translated.
 *
 * When SQLite's B-tree rebalances pages it keeps the new pages in ascending order by
 * swapping two of them in the cache through a temporary page number: the locking page
 * (PENDING_BYTE / page size + 1, page 524,289 with 2 KiB pages), which never holds data.
 * SQLite's default cache remembers the largest key it has held and never lowers it until a
 * truncation; at the end of every write transaction the pager truncates the cache to the
 * database's size, and because that remembered key is far beyond it, the default cache
 * then scans its whole hash table (every cached page) to drop pages that do not exist. The
 * cost of each commit after a page split therefore grows with the cache's size.
 *
 * This wrapper passes everything to the default cache but gives the swap a key just above
 * the largest one the cache can hold, so the remembered key stays at the database's end
 * and the truncation checks one slot. `maxKey` is an upper bound of every key in the inner
 * cache: raised by each fetch that may create a page and each rekey, lowered by
 * truncation. The stand-in key is always above it when a swap starts, so no real page is
 * ever found or dropped under it.
 *
 * Install before SQLite initialises (kidledger_install_page_cache); later it answers
 * SQLITE_MISUSE and the default cache stays.
 */
typedef struct kidledger_page_cache {
    sqlite3_pcache *inner;
    unsigned int swapKey;    /* the B-tree's temporary key for this page size */
    unsigned int standIn;    /* the key used for swapKey while `swapping` */
    unsigned int maxKey;     /* no page in `inner` has a larger key, besides standIn */
    int swapping;
} kidledger_page_cache;

static inline sqlite3_pcache_methods2 *kidledger_page_cache_base(void) {
    static sqlite3_pcache_methods2 base;
    return &base;
}

/* Page swaps the wrapper has given a stand-in key, for tests (any connection, any thread). */
static inline unsigned long *kidledger_page_cache_swaps(void) {
    static unsigned long swaps;
    return &swaps;
}

static inline unsigned long kidledger_page_cache_swap_count(void) {
    return __atomic_load_n(kidledger_page_cache_swaps(), __ATOMIC_RELAXED);
}

static inline unsigned int kidledger_page_cache_key(kidledger_page_cache *c, unsigned int key) {
    if (key != c->swapKey) return key;
    if (!c->swapping) c->standIn = c->maxKey + 1;
    return c->standIn;
}

static inline int kidledger_page_cache_init(void *arg) {
    (void)arg;
    sqlite3_pcache_methods2 *base = kidledger_page_cache_base();
    return base->xInit(base->pArg);
}

static inline void kidledger_page_cache_shutdown(void *arg) {
    (void)arg;
    sqlite3_pcache_methods2 *base = kidledger_page_cache_base();
    if (base->xShutdown) base->xShutdown(base->pArg);
}

static inline sqlite3_pcache *kidledger_page_cache_create(int szPage, int szExtra, int bPurgeable) {
    kidledger_page_cache *c = (kidledger_page_cache *)sqlite3_malloc(sizeof(kidledger_page_cache));
    if (!c) return 0;
    c->inner = kidledger_page_cache_base()->xCreate(szPage, szExtra, bPurgeable);
    if (!c->inner) { sqlite3_free(c); return 0; }
    c->swapKey = 0x40000000u / (unsigned int)szPage + 1;   /* PENDING_BYTE / page size + 1 */
    c->standIn = 0;
    c->maxKey = 0;
    c->swapping = 0;
    return (sqlite3_pcache *)c;
}

static inline void kidledger_page_cache_cachesize(sqlite3_pcache *p, int nCachesize) {
    kidledger_page_cache_base()->xCachesize(((kidledger_page_cache *)p)->inner, nCachesize);
}

static inline int kidledger_page_cache_pagecount(sqlite3_pcache *p) {
    return kidledger_page_cache_base()->xPagecount(((kidledger_page_cache *)p)->inner);
}

static inline sqlite3_pcache_page *kidledger_page_cache_fetch(sqlite3_pcache *p, unsigned int key, int createFlag) {
    kidledger_page_cache *c = (kidledger_page_cache *)p;
    unsigned int k = kidledger_page_cache_key(c, key);
    /* Any key a page may be created under counts, the stand-in's too (SQLite never
     * creates the locking page, but if a damaged file led it there, the next swap still
     * gets a key of its own). */
    if (createFlag && k > c->maxKey) c->maxKey = k;
    return kidledger_page_cache_base()->xFetch(c->inner, k, createFlag);
}

static inline void kidledger_page_cache_unpin(sqlite3_pcache *p, sqlite3_pcache_page *page, int discard) {
    kidledger_page_cache_base()->xUnpin(((kidledger_page_cache *)p)->inner, page, discard);
}

static inline void kidledger_page_cache_rekey(sqlite3_pcache *p, sqlite3_pcache_page *page,
                                              unsigned int oldKey, unsigned int newKey) {
    kidledger_page_cache *c = (kidledger_page_cache *)p;
    unsigned int o = kidledger_page_cache_key(c, oldKey);
    unsigned int n = kidledger_page_cache_key(c, newKey);
    if (newKey == c->swapKey) {
        c->swapping = 1;
        __atomic_fetch_add(kidledger_page_cache_swaps(), 1, __ATOMIC_RELAXED);
    } else {
        if (oldKey == c->swapKey) c->swapping = 0;
        if (n > c->maxKey) c->maxKey = n;
    }
    kidledger_page_cache_base()->xRekey(c->inner, page, o, n);
}

static inline void kidledger_page_cache_truncate(sqlite3_pcache *p, unsigned int iLimit) {
    kidledger_page_cache *c = (kidledger_page_cache *)p;
    kidledger_page_cache_base()->xTruncate(c->inner, iLimit);
    if (iLimit > 0 && c->maxKey >= iLimit) c->maxKey = iLimit - 1;
    if (c->swapping && c->standIn >= iLimit) c->swapping = 0;
}

static inline void kidledger_page_cache_destroy(sqlite3_pcache *p) {
    kidledger_page_cache *c = (kidledger_page_cache *)p;
    kidledger_page_cache_base()->xDestroy(c->inner);
    sqlite3_free(c);
}

static inline void kidledger_page_cache_shrink(sqlite3_pcache *p) {
    kidledger_page_cache_base()->xShrink(((kidledger_page_cache *)p)->inner);
}

/* Installs the wrapper around the default page cache; SQLITE_OK when it is in force. */
static inline int kidledger_install_page_cache(void) {
    static sqlite3_pcache_methods2 methods;
    int rc = sqlite3_config(SQLITE_CONFIG_GETPCACHE2, kidledger_page_cache_base());
    if (rc != SQLITE_OK) return rc;
    if (kidledger_page_cache_base()->iVersion < 1 || !kidledger_page_cache_base()->xRekey) return SQLITE_ERROR;
    methods.iVersion = 1;
    methods.pArg = 0;
    methods.xInit = kidledger_page_cache_init;
    methods.xShutdown = kidledger_page_cache_shutdown;
    methods.xCreate = kidledger_page_cache_create;
    methods.xCachesize = kidledger_page_cache_cachesize;
    methods.xPagecount = kidledger_page_cache_pagecount;
    methods.xFetch = kidledger_page_cache_fetch;
    methods.xUnpin = kidledger_page_cache_unpin;
    methods.xRekey = kidledger_page_cache_rekey;
    methods.xTruncate = kidledger_page_cache_truncate;
    methods.xDestroy = kidledger_page_cache_destroy;
    methods.xShrink = kidledger_page_cache_shrink;
    return sqlite3_config(SQLITE_CONFIG_PCACHE2, &methods);
}

/* SQLite's memory, through malloc, with mid-size blocks kept per thread.
 *
 * A B-tree page split takes a scratch buffer of a little more than a page (2–3.5 KiB with
 * 2 KiB pages) and gives it back when the split is done; a write that adds a row to a
 * ledger splits a page about every third insert. The C library keeps freed blocks of up to
 * 1,032 bytes in a per-thread cache; a larger one goes back to its arena, merged with its
 * free neighbours, and the next request takes it apart again: about 3 % of the writer
 * thread's time went to that. This allocator hands every request to malloc with a 16-byte
 * header of its own (SQLite asks each block's size back), and keeps blocks of 1,025–8,192
 * bytes (with the header), in classes of 256 bytes, on a list per thread and class: at
 * most 8 blocks a class and 256 KiB a thread, freed when the thread ends. A block freed on
 * another thread than the one that took it goes to the freeing thread's lists.
 *
 * Install before SQLite initialises (kidledger_install_allocator); later it answers
 * SQLITE_MISUSE and SQLite's own allocator stays. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define KIDLEDGER_ALLOC_HEADER 16
#define KIDLEDGER_ALLOC_LOW 1024      /* blocks larger than this, header included, are kept */
#define KIDLEDGER_ALLOC_HIGH 8192     /* up to this size */
#define KIDLEDGER_ALLOC_STEP 256
#define KIDLEDGER_ALLOC_CLASSES ((KIDLEDGER_ALLOC_HIGH - KIDLEDGER_ALLOC_LOW) / KIDLEDGER_ALLOC_STEP)
#define KIDLEDGER_ALLOC_PER_CLASS 8
#define KIDLEDGER_ALLOC_PER_THREAD (256 * 1024)

typedef struct kidledger_alloc_cache {
    void *heads[KIDLEDGER_ALLOC_CLASSES];   /* each block's first word links the next */
    int counts[KIDLEDGER_ALLOC_CLASSES];
    size_t bytes;
} kidledger_alloc_cache;

/* The class of a block of `total` bytes (header included), or -1 when none keeps it. */
static inline int kidledger_alloc_class(size_t total) {
    if (total <= KIDLEDGER_ALLOC_LOW || total > KIDLEDGER_ALLOC_HIGH) return -1;
    return (int)((total - KIDLEDGER_ALLOC_LOW - 1) / KIDLEDGER_ALLOC_STEP);
}

static inline size_t kidledger_alloc_class_bytes(int cls) {
    return KIDLEDGER_ALLOC_LOW + (size_t)(cls + 1) * KIDLEDGER_ALLOC_STEP;
}

static inline pthread_key_t *kidledger_alloc_key(void) {
    static pthread_key_t key;
    return &key;
}

static inline kidledger_alloc_cache **kidledger_alloc_slot(void) {
    static __thread kidledger_alloc_cache *cache;
    return &cache;
}

/* At a thread's end: its kept blocks go back to malloc. */
static inline void kidledger_alloc_thread_ended(void *p) {
    kidledger_alloc_cache *c = (kidledger_alloc_cache *)p;
    for (int i = 0; i < KIDLEDGER_ALLOC_CLASSES; i++) {
        void *b = c->heads[i];
        while (b) {
            void *next = *(void **)b;
            free(b);
            b = next;
        }
    }
    free(c);
    *kidledger_alloc_slot() = 0;
}

static inline void kidledger_alloc_make_key(void) {
    (void)pthread_key_create(kidledger_alloc_key(), kidledger_alloc_thread_ended);
}

/* This thread's lists, made on first use; 0 when they cannot be (then blocks go to malloc). */
static inline kidledger_alloc_cache *kidledger_alloc_cache_here(void) {
    kidledger_alloc_cache **slot = kidledger_alloc_slot();
    if (*slot) return *slot;
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    if (pthread_once(&once, kidledger_alloc_make_key) != 0) return 0;
    kidledger_alloc_cache *c = (kidledger_alloc_cache *)calloc(1, sizeof(kidledger_alloc_cache));
    if (!c) return 0;
    if (pthread_setspecific(*kidledger_alloc_key(), c) != 0) { free(c); return 0; }
    *slot = c;
    return c;
}

/* The header: the block's usable size, then its class + 1 (0: a plain malloc block). */
static inline void *kidledger_alloc_finish(void *block, size_t usable, int cls) {
    ((size_t *)block)[0] = usable;
    ((size_t *)block)[1] = (size_t)(cls + 1);
    return (char *)block + KIDLEDGER_ALLOC_HEADER;
}

static inline void *kidledger_alloc_malloc(int n) {
    if (n < 0) return 0;
    size_t total = (size_t)n + KIDLEDGER_ALLOC_HEADER;
    int cls = kidledger_alloc_class(total);
    if (cls < 0) {
        void *b = malloc(total);
        return b ? kidledger_alloc_finish(b, (size_t)n, -1) : 0;
    }
    size_t bytes = kidledger_alloc_class_bytes(cls);
    kidledger_alloc_cache *c = kidledger_alloc_cache_here();
    void *b = c ? c->heads[cls] : 0;
    if (b) {
        c->heads[cls] = *(void **)b;
        c->counts[cls]--;
        c->bytes -= bytes;
    } else {
        b = malloc(bytes);
        if (!b) return 0;
    }
    return kidledger_alloc_finish(b, bytes - KIDLEDGER_ALLOC_HEADER, cls);
}

static inline void kidledger_alloc_free(void *p) {
    if (!p) return;
    void *b = (char *)p - KIDLEDGER_ALLOC_HEADER;
    int cls = (int)((size_t *)b)[1] - 1;
    if (cls >= 0) {
        size_t bytes = kidledger_alloc_class_bytes(cls);
        kidledger_alloc_cache *c = kidledger_alloc_cache_here();
        if (c && c->counts[cls] < KIDLEDGER_ALLOC_PER_CLASS && c->bytes + bytes <= KIDLEDGER_ALLOC_PER_THREAD) {
            *(void **)b = c->heads[cls];
            c->heads[cls] = b;
            c->counts[cls]++;
            c->bytes += bytes;
            return;
        }
    }
    free(b);
}

static inline int kidledger_alloc_size(void *p) {
    if (!p) return 0;
    return (int)((size_t *)((char *)p - KIDLEDGER_ALLOC_HEADER))[0];
}

static inline void *kidledger_alloc_realloc(void *p, int n) {
    if (!p) return kidledger_alloc_malloc(n);
    if (n < 0) return 0;
    void *b = (char *)p - KIDLEDGER_ALLOC_HEADER;
    size_t usable = ((size_t *)b)[0];
    int cls = (int)((size_t *)b)[1] - 1;
    size_t total = (size_t)n + KIDLEDGER_ALLOC_HEADER;
    /* Within its class the block already fits; a plain block stays plain if it may. */
    if (cls >= 0 && kidledger_alloc_class(total) == cls) return p;
    if (cls < 0 && kidledger_alloc_class(total) < 0) {
        void *grown = realloc(b, total);
        return grown ? kidledger_alloc_finish(grown, (size_t)n, -1) : 0;
    }
    void *q = kidledger_alloc_malloc(n);
    if (!q) return 0;
    memcpy(q, p, usable < (size_t)n ? usable : (size_t)n);
    kidledger_alloc_free(p);
    return q;
}

static inline int kidledger_alloc_roundup(int n) {
    return (n + 7) & ~7;
}

static inline int kidledger_alloc_init(void *arg) { (void)arg; return SQLITE_OK; }
static inline void kidledger_alloc_shutdown(void *arg) { (void)arg; }

/* Blocks this thread keeps now (for tests). */
static inline int kidledger_alloc_kept_here(void) {
    kidledger_alloc_cache *c = *kidledger_alloc_slot();
    if (!c) return 0;
    int n = 0;
    for (int i = 0; i < KIDLEDGER_ALLOC_CLASSES; i++) n += c->counts[i];
    return n;
}

/* Installs the allocator; SQLITE_OK when it is in force. */
static inline int kidledger_install_allocator(void) {
    static sqlite3_mem_methods methods;
    methods.xMalloc = kidledger_alloc_malloc;
    methods.xFree = kidledger_alloc_free;
    methods.xRealloc = kidledger_alloc_realloc;
    methods.xSize = kidledger_alloc_size;
    methods.xRoundup = kidledger_alloc_roundup;
    methods.xInit = kidledger_alloc_init;
    methods.xShutdown = kidledger_alloc_shutdown;
    methods.pAppData = 0;
    return sqlite3_config(SQLITE_CONFIG_MALLOC, &methods);
}
