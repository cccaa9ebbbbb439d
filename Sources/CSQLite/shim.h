#include <sqlite3.h>

/// sqlite3_config is variadic, which Swift cannot call; this wraps the one option we set.
/// It must run before SQLite initialises (when the first connection opens); later it
/// answers SQLITE_MISUSE and changes nothing.
static inline int kidledger_sqlite3_config_memstatus(int on) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, on);
}
