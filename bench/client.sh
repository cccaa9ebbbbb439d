#!/usr/bin/env bash
# Device SDK benchmarks against a real kidledger-server on loopback (release builds):
# joining a household of 100,000 transactions with `kidledger join` (first pull and merge into
# the replica: wall time and peak RSS of the process), then reads and writes on that replica
# (the `ClientBenchmarks` XCTest case, release build: snapshot() and a durable local mutation).
# Usage: bench/client.sh [--transactions N] [--rounds R] [--build sql|api|both] [--skip-inprocess]
# --build: the household filled by SQL into the stopped server (sql), pushed through the API
# as sync batches of 400 with the server running (api), or each in turn (both, the default).
# SERVER_BIN / CLIENT_BIN override the executables (default: release builds).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
scratch="${SCRATCH:-$repo/.build-client-rel}"
# One set of build flags for the executables and the in-process benchmark (tests need
# -enable-testing), so neither rebuilds the other.
flags=(-c release -Xswiftc -enable-testing --scratch-path "$scratch")
if [ -z "${SERVER_BIN:-}" ] || [ -z "${CLIENT_BIN:-}" ]; then
    (cd "$repo" && swift build "${flags[@]}" --product kidledger-server >&2)
    (cd "$repo" && swift build "${flags[@]}" --product kidledger >&2)
    bin="$(cd "$repo" && swift build "${flags[@]}" --show-bin-path)"
    SERVER_BIN="${SERVER_BIN:-$bin/kidledger-server}"
    CLIENT_BIN="${CLIENT_BIN:-$bin/kidledger}"
fi
exec python3 "$repo/bench/client-bench.py" --server "$SERVER_BIN" --client "$CLIENT_BIN" \
    --port "${OUR_PORT:-18191}" --repo "$repo" --scratch "$scratch" "$@"
