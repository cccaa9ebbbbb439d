# Shared set-up for the bench/ scripts; source it after `set -euo pipefail`.
# Provides $repo, $tmp (removed on exit), the pids array (killed on exit),
# bench_server_bin (sets SERVER_BIN, building a release binary when unset) and
# bench_start_nginx PORT (nginx, 1 worker, fixed 200 "ok" reply, keep-alive) and
# bench_post_lua FILE HOUSEHOLD CHILD TOKEN (a wrk script posting a new transaction per request).

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tmp="$(mktemp -d)"
pids=()
bench_cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap bench_cleanup EXIT

command -v wrk >/dev/null && [ -x /usr/sbin/nginx ] || { echo "needs wrk and nginx: apt-get install -y nginx-light wrk" >&2; exit 1; }

bench_server_bin() {
    if [ -z "${SERVER_BIN:-}" ]; then
        (cd "$repo" && swift build -c release --product kidledger-server >&2)
        SERVER_BIN="$(cd "$repo" && swift build -c release --show-bin-path)/kidledger-server"
    fi
}

bench_start_nginx() {
    local port=$1
    mkdir -p "$tmp/nginx/logs"
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
        listen 127.0.0.1:$port;
        location / { default_type text/plain; return 200 "ok"; }
    }
}
CONF
    /usr/sbin/nginx -p "$tmp/nginx" -c "$tmp/nginx/nginx.conf" &
    pids+=($!)
}

# Every request is a new transaction: its Idempotency-Key is unique per wrk invocation (the
# script argument), thread and request. The request bytes are prebuilt but for the key, so
# the load generator, which shares the cores with the server, spends little per request.
bench_post_lua() {
    cat > "$1" <<LUA
local counter = 0
local thread_id = 0
local head, tail
setup = function(thread) thread:set("tid", thread_id); thread_id = thread_id + 1 end
init = function(args)
  local body = '{"amountCents":1,"note":"bench"}'
  head = "POST /v1/households/$2/children/$3/transactions HTTP/1.1\r\n" ..
         "Host: " .. wrk.host .. ":" .. wrk.port .. "\r\n" ..
         "Authorization: Bearer $4\r\nContent-Type: application/json\r\n" ..
         "Content-Length: " .. #body .. "\r\nIdempotency-Key: bench-" .. (args[1] or "run") .. "-" .. (tid or 0) .. "-"
  tail = "\r\n\r\n" .. body
end
request = function()
  counter = counter + 1
  return head .. counter .. tail
end
LUA
}
