#!/usr/bin/env bash
# Opens 10,000 idle keep-alive connections to kidledger-server and reports its RSS before
# and after, plus the time from spawn to the "listening" log line.
# Usage: bench/idle-connections.sh [connections=10000]
# SERVER_BIN overrides the server executable (default: release build of kidledger-server).
set -euo pipefail
count="${1:-10000}"
repo="$(cd "$(dirname "$0")/.." && pwd)"
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
if [ -z "${SERVER_BIN:-}" ]; then
    (cd "$repo" && swift build -c release --product kidledger-server >&2)
    SERVER_BIN="$(cd "$repo" && swift build -c release --show-bin-path)/kidledger-server"
fi
exec python3 "$repo/bench/idle-connections.py" --server "$SERVER_BIN" --connections "$count" --port "${OUR_PORT:-18183}"
