#!/usr/bin/env bash
# Sync feed benchmarks: incremental pull of 10 changes from households of 1,000,000 vs
# 1,000 transactions, full first pull of 100,000 transactions (gzip), long-poll
# propagation median, 5,000 concurrent long-polls held 30 s (RSS, threads), and
# `kidledger-server check` on the seeded 1.1 M transactions.
# Usage: bench/sync-pull.sh [extra sync-bench.py flags, e.g. --only full --rounds 50]
# SERVER_BIN overrides the server executable (default: release build of kidledger-server).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
if [ -z "${SERVER_BIN:-}" ]; then
    scratch="${SCRATCH:-$repo/.build-sync-rel}"
    (cd "$repo" && swift build -c release --scratch-path "$scratch" --product kidledger-server >&2)
    SERVER_BIN="$(cd "$repo" && swift build -c release --scratch-path "$scratch" --show-bin-path)/kidledger-server"
fi
exec python3 "$repo/bench/sync-bench.py" --server "$SERVER_BIN" --port "${OUR_PORT:-18190}" "$@"
