#!/usr/bin/env bash
# Push wake benchmarks (figures, not timed tests):
#  1. commit -> wake at a loopback gateway: p50/p99 over SAMPLES writes, one push device,
#     --push-min-interval 0 (each write its own wake);
#  2. durable POST …/transactions throughput (wrk, 64 connections) with push off and with
#     10 push devices in the household (default --push-min-interval 10 s, gateway answering),
#     in turn, twice (each run on a fresh server and data folder);
#  3. the outbox while the gateway is down: the same load for the same time against a gateway
#     that refuses connections; the outbox depth afterwards (one wake per device is the bound)
#     and how many wakes the commits queued or updated meanwhile.
# Usage: bench/push.sh [duration=10s] [samples=200]
set -euo pipefail
duration="${1:-10s}"
samples="${2:-200}"
port="${OUR_PORT:-18391}"
gateway_port="${GATEWAY_PORT:-18392}"
source "$(dirname "$0")/lib.sh"
bench_server_bin
notify="http://127.0.0.1:$gateway_port/_matrix/push/v1/notify"
base="http://127.0.0.1:$port"
metric() { curl -fs "$base/metrics" | awk -v m="$1" '$1==m {print $2}'; }

# Starts a server on a fresh data folder with the given extra arguments.
serve() {
  local name=$1; shift
  "$SERVER_BIN" serve --port "$port" --data-dir "$tmp/$name" --quiet --registrations-per-hour 0 "$@" > "$tmp/$name.log" 2>&1 &
  server_pid=$!
  pids+=("$server_pid")
  bench_wait_up "$port" 100 0.1
}
stop() { kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; }

# Warm-up then a measured wrk run of durable POSTs; prints requests/s.
post_load() {
  eval "$(python3 "$repo/bench/push.py" setup "$base" "$1" "$2")"
  bench_post_lua "$tmp/post.lua" "$hh" "$child" "$token"
  wrk -t2 -c64 -d3s -s "$tmp/post.lua" "$base" -- "warm$RANDOM" > /dev/null
  wrk -t2 -c64 -d"$duration" -s "$tmp/post.lua" "$base" -- "run$RANDOM" | awk '/Requests\/sec/ {print $2}'
}

echo "== 1. commit -> wake latency (loopback gateway, $samples writes)"
serve latency --push-gateway "$notify" --push-min-interval 0
GATEWAY_PORT=$gateway_port python3 "$repo/bench/push.py" latency "$base" "$samples"
stop

echo "== 2. durable POST throughput, wrk -t2 -c64 -d$duration, push off and on in turn, twice"
python3 -c "
import http.server, json
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get('Content-Length', 0)))
        b = b'{\"rejected\":[]}'
        self.send_response(200); self.send_header('Content-Length', str(len(b))); self.end_headers(); self.wfile.write(b)
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(('127.0.0.1', $gateway_port), H).serve_forever()" &
gateway_pid=$!
pids+=("$gateway_pid")
for round in 1 2; do
  serve "off$round"
  off=$(post_load 0 -)
  stop
  serve "on$round" --push-gateway "$notify"
  on=$(post_load 10 default)
  sent=$(metric kidledger_push_wakes_sent_total)
  stop
  python3 -c "print(f'round $round: push off {float(\"$off\"):.0f} req/s; 10 push devices {float(\"$on\"):.0f} req/s ({(float(\"$on\") / float(\"$off\") - 1) * 100:+.1f} %), {int(float(\"$sent\"))} wakes sent')"
done
kill "$gateway_pid"; wait "$gateway_pid" 2>/dev/null || true

echo "== 3. the outbox while the gateway is down (connections refused), same load"
serve down --push-gateway "$notify" --push-retry-seconds 0.1 --push-retry-max-seconds 1
down=$(post_load 10 default)
echo "durable POSTs: $down req/s; outbox depth after the run: $(metric kidledger_push_outbox_depth) (10 devices);" \
     "wakes queued or updated: $(metric kidledger_push_wakes_queued_total); failed attempts: $(metric kidledger_push_wakes_failed_total)"
stop
