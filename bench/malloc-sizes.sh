#!/usr/bin/env bash
# Heap requests per request, by size: the release server runs with bench/malloc-sizes.c
# preloaded (built here with gcc), is seeded and warmed up, then counts the allocations
# of one wrk run of fixed duration, for one thread (THREAD=kl-writer, kl-loop-0, …) or all.
# Printed per request completed: all allocations, those of up to 1,032 bytes (which the C
# library keeps per thread), and every class above that with at least 0.01 per request.
#
# Usage: bench/malloc-sizes.sh [duration=3s] [connections=64] [kind=post]
#   kind: post (durable POST …/transactions, a new transaction each), children, healthz.
# Environment: SERVER_BIN (default: release build), THREAD (default: every thread),
# WRK_THREADS (2), PORT (18441).
set -euo pipefail
duration="${1:-3s}"
conns="${2:-64}"
kind="${3:-post}"
threads="${WRK_THREADS:-2}"
port="${PORT:-18441}"
source "$(dirname "$0")/lib.sh"
command -v gcc >/dev/null || { echo "needs gcc" >&2; exit 1; }
bench_server_bin
gcc -O2 -shared -fPIC -o "$tmp/malloc-sizes.so" "$repo/bench/malloc-sizes.c" -ldl
mkdir -p "$tmp/data"
LD_PRELOAD="$tmp/malloc-sizes.so" MALLOC_SIZES_OUT="$tmp/sizes" MALLOC_SIZES_THREAD="${THREAD:-}" \
    "$SERVER_BIN" serve --port "$port" --data-dir "$tmp/data" > "$tmp/server.log" 2>&1 &
spid=$!; pids+=($spid)
bench_wait_up "$port"
base="http://127.0.0.1:$port"
eval "$(bench_seed "" "$base")"
args=()
bench_kind_args "$kind" "$base" "$hh" "${children%%,*}" "$token"
wrk -t"$threads" -c"$conns" -d2s "${args[@]}" -- warm >/dev/null
kill -USR2 "$spid"
out=$(wrk -t"$threads" -c"$conns" -d"$duration" "${args[@]}" -- run)
kill -USR2 "$spid"
for _ in $(seq 1 50); do grep -q '^end$' "$tmp/sizes" 2>/dev/null && break; sleep 0.1; done
requests=$(awk '/requests in/ {print $1}' <<<"$out")
echo "kidledger-server, $kind, wrk -t$threads -c$conns -d$duration: $requests requests; thread: ${THREAD:-all}"
awk -v n="$requests" '
    $1 == "end" { next }
    { total += $3; if ($2 != -1 && $2 <= 1032) small += $3; else big[$1 " " $2] += $3 }
    END {
        printf "allocations per request: %.2f, of up to 1,032 bytes: %.2f\n", total / n, small / n
        for (k in big) if (big[k] / n >= 0.01) {
            split(k, b, " "); printf "%8d – %s bytes: %.3f per request\n", b[1], (b[2] == -1 ? "more" : b[2]), big[k] / n | "sort -n"
        }
    }' "$tmp/sizes"
