#!/usr/bin/env bash
# Keep-alive /healthz throughput: nginx (1 worker, fixed "ok") vs kidledger-server.
# Usage: bench/http-healthz.sh [duration=10s] [connections=64]
# SERVER_BIN overrides the server executable (default: release build of kidledger-server);
# it is started as "$SERVER_BIN serve --port P --data-dir TMP $SERVER_ARGS" (e.g. SERVER_ARGS=--quiet).
set -euo pipefail
duration="${1:-10s}"
conns="${2:-64}"
nginx_port="${NGINX_PORT:-18181}"
our_port="${OUR_PORT:-18182}"
source "$(dirname "$0")/lib.sh"
bench_server_bin
mkdir -p "$tmp/data"
bench_start_nginx "$nginx_port"
"$SERVER_BIN" serve --port "$our_port" --data-dir "$tmp/data" ${SERVER_ARGS:-} > "$tmp/server.log" 2>&1 &
server_pid=$!
pids+=($server_pid)

bench_wait_up "$nginx_port"
bench_wait_up "$our_port"

# wrk latency figures come as e.g. 812.00us / 1.23ms / 1.01s; print milliseconds.
to_ms() { awk '{ v=$1; if (v ~ /us$/) { sub(/us$/,"",v); print v/1000 } else if (v ~ /ms$/) { sub(/ms$/,"",v); print v } else if (v ~ /s$/) { sub(/s$/,"",v); print v*1000 } else print v }'; }

# wrk shares the machine's cores with the server it measures. Run it at a higher priority
# (where allowed) so that its own waiting for a core is not counted as the server's
# latency; both servers are measured the same way.
prio=""
if nice -n -10 true 2>/dev/null; then prio="nice -n -10"; fi
echo "wrk priority: ${prio:-default}" >&2

run() {
    $prio wrk -t2 -c"$conns" -d"$duration" --latency "http://127.0.0.1:$1/healthz" > "$tmp/wrk-$1.txt"
    cat "$tmp/wrk-$1.txt" >&2
}
run "$nginx_port"
run "$our_port"

nginx_rps=$(awk '/Requests\/sec/ {print $2}' "$tmp/wrk-$nginx_port.txt")
our_rps=$(awk '/Requests\/sec/ {print $2}' "$tmp/wrk-$our_port.txt")
nginx_p99=$(awk '$1=="99%" {print $2}' "$tmp/wrk-$nginx_port.txt" | to_ms)
our_p99=$(awk '$1=="99%" {print $2}' "$tmp/wrk-$our_port.txt" | to_ms)
ratio=$(awk -v a="$our_rps" -v b="$nginx_rps" 'BEGIN { printf "%.2f", a / b }')
echo "nginx (1 worker):  ${nginx_rps} req/s  p99 ${nginx_p99} ms"
echo "kidledger-server:  ${our_rps} req/s  p99 ${our_p99} ms"
echo "ratio ours/nginx:  ${ratio}   (target >= 0.8, p99 < 5 ms)"
