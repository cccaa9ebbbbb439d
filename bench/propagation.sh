#!/usr/bin/env bash
# Propagation: a change on one device reaches another device's snapshots() stream, both
# running automatic sync against a release kidledger-server on loopback (target: p50 ≤ 100 ms).
# Usage: bench/propagation.sh [ROUNDS]   (default 200; prints one JSON line)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
scratch="${SCRATCH:-$repo/.build-client-rel}"
(cd "$repo" && swift build -c release --scratch-path "$scratch" --product kidledger-server >&2)
(cd "$repo" && swift build -c release --scratch-path "$scratch" --product ledger-propagation-bench >&2)
bin="$(cd "$repo" && swift build -c release --scratch-path "$scratch" --show-bin-path)"
data="$(mktemp -d)"
port="${OUR_PORT:-18193}"
"$bin/kidledger-server" serve --host 127.0.0.1 --port "$port" --data-dir "$data" --quiet >/dev/null 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 100); do
    curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
    sleep 0.1
done
"$bin/ledger-propagation-bench" "http://127.0.0.1:$port" "${1:-200}"
