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
