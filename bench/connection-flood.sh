#!/usr/bin/env bash
# One address floods kidledger-server with 20,000 idle connections (reopening each one the
# server closes) while GET /healthz is measured from another loopback address (127.0.0.2),
# one new connection per request. Passes when no request fails and p99 < 50 ms.
# Usage: bench/connection-flood.sh [connections=20000] [seconds=20]
# SERVER_BIN overrides the server executable (default: release build of kidledger-server);
# SERVER_ARGS are added to its serve command line.
set -euo pipefail
count="${1:-20000}"
seconds="${2:-20}"
repo="$(cd "$(dirname "$0")/.." && pwd)"
# Each flooder process holds up to 10,000 descriptors: raise the soft limit to the hard one.
ulimit -n "$(ulimit -Hn)"
if [ -z "${SERVER_BIN:-}" ]; then
    (cd "$repo" && swift build -c release --product kidledger-server >&2)
    SERVER_BIN="$(cd "$repo" && swift build -c release --show-bin-path)/kidledger-server"
fi
exec python3 "$repo/bench/connection-flood.py" --server "$SERVER_BIN" --connections "$count" --seconds "$seconds" \
    --port "${OUR_PORT:-18184}" --server-args "${SERVER_ARGS:-}"
