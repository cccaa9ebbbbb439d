#!/usr/bin/env bash
# Keep-alive /healthz throughput: nginx (1 worker, fixed "ok") vs kidledger-server.
# Usage: bench/http-healthz.sh [duration=10s] [connections=64]
# SERVER_BIN overrides the server executable (default: release build of kidledger-server);
# it is started as "$SERVER_BIN serve --port P --data-dir TMP $SERVER_ARGS" (e.g. SERVER_ARGS=--quiet).
set -euo pipefail
duration="${1:-10s}"
conns="${2:-64}"
repo="$(cd "$(dirname "$0")/.." && pwd)"
nginx_port="${NGINX_PORT:-18181}"
our_port="${OUR_PORT:-18182}"
tmp="$(mktemp -d)"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT

command -v wrk >/dev/null && [ -x /usr/sbin/nginx ] || { echo "needs wrk and nginx: apt-get install -y nginx-light wrk" >&2; exit 1; }

if [ -z "${SERVER_BIN:-}" ]; then
    (cd "$repo" && swift build -c release --product kidledger-server >&2)
    SERVER_BIN="$(cd "$repo" && swift build -c release --show-bin-path)/kidledger-server"
fi

mkdir -p "$tmp/nginx/logs" "$tmp/data"
cat > "$tmp/nginx/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/logs/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_requests 100000000;
    keepalive_timeout 60s;
    client_body_temp_path $tmp/nginx/body;
    proxy_temp_path $tmp/nginx/proxy;
    fastcgi_temp_path $tmp/nginx/fastcgi;
    uwsgi_temp_path $tmp/nginx/uwsgi;
    scgi_temp_path $tmp/nginx/scgi;
    server {
        listen 127.0.0.1:$nginx_port;
        location / { default_type text/plain; return 200 "ok"; }
    }
}
CONF
/usr/sbin/nginx -p "$tmp/nginx" -c "$tmp/nginx/nginx.conf" &
pids+=($!)
"$SERVER_BIN" serve --port "$our_port" --data-dir "$tmp/data" ${SERVER_ARGS:-} > "$tmp/server.log" 2>&1 &
server_pid=$!
pids+=($server_pid)

wait_up() {
    for _ in $(seq 1 200); do
        curl -fs "http://127.0.0.1:$1/healthz" >/dev/null 2>&1 && return 0
        sleep 0.05
    done
    echo "server on port $1 did not come up" >&2
    cat "$tmp/server.log" >&2 || true
    exit 1
}
wait_up "$nginx_port"
wait_up "$our_port"

# wrk latency figures come as e.g. 812.00us / 1.23ms / 1.01s; print milliseconds.
to_ms() { awk '{ v=$1; if (v ~ /us$/) { sub(/us$/,"",v); print v/1000 } else if (v ~ /ms$/) { sub(/ms$/,"",v); print v } else if (v ~ /s$/) { sub(/s$/,"",v); print v*1000 } else print v }'; }

run() {
    wrk -t2 -c"$conns" -d"$duration" --latency "http://127.0.0.1:$1/healthz" > "$tmp/wrk-$1.txt"
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
