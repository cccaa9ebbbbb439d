// libpq-fe.h lives in /usr/include/postgresql on Debian; pkg-config libpq adds that path.
#include <libpq-fe.h>
