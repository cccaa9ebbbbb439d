#!/usr/bin/env bash
# Ledger benchmarks, each against a reference measured in the same run:
#  1. durable POST …/transactions (wrk, 64 connections, every request its own idempotent
#     transaction, synchronous=FULL) vs a raw SQLite one-row-per-commit loop with the same
#     durability (WAL, synchronous=FULL) on the same disk;
#  2. authenticated GET …/children (10 children, JSON) vs nginx (1 worker) serving a fixed reply.
# Usage: bench/ledger.sh [duration=10s] [connections=64]
set -euo pipefail
duration="${1:-10s}"
conns="${2:-64}"
port="${OUR_PORT:-18291}"
nginx_port="${NGINX_PORT:-18292}"
source "$(dirname "$0")/lib.sh"
bench_server_bin
"$SERVER_BIN" serve --port "$port" --data-dir "$tmp/data" --quiet > "$tmp/server.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do curl -fs "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
base="http://127.0.0.1:$port"
token=$(curl -fs -XPOST "$base/v1/accounts" -H 'content-type: application/json' -d '{"handle":"bench","displayName":"Bench"}' | python3 -c 'import sys,json;print(json.load(sys.stdin)["token"]["secret"])')
hh=$(curl -fs -XPOST "$base/v1/households" -H "authorization: Bearer $token" -H 'content-type: application/json' -d '{"name":"Bench"}' | python3 -c 'import sys,json;print(json.load(sys.stdin)["id"])')
child=""
for i in $(seq 10); do
  c=$(curl -fs -XPOST "$base/v1/households/$hh/children" -H "authorization: Bearer $token" -H 'content-type: application/json' -d "{\"name\":\"Child $i\"}" | python3 -c 'import sys,json;print(json.load(sys.stdin)["id"])')
  child=${child:-$c}
done

cat > "$tmp/post.lua" <<LUA
local counter = 0
local thread_id = 0
setup = function(thread) thread:set("tid", thread_id); thread_id = thread_id + 1 end
request = function()
  counter = counter + 1
  local key = string.format("bench-%d-%d-%d", tid or 0, counter, math.random(1, 2^30))
  return wrk.format("POST", "/v1/households/$hh/children/$child/transactions",
    {["Authorization"] = "Bearer $token", ["Content-Type"] = "application/json", ["Idempotency-Key"] = key},
    '{"amountCents":1,"note":"bench"}')
end
LUA

echo "== durable POST transactions: wrk -t2 -c$conns -d$duration"
wrk -t2 -c"$conns" -d"$duration" --latency -s "$tmp/post.lua" "$base" > "$tmp/post.txt"
post_rps=$(awk '/Requests\/sec/ {print $2}' "$tmp/post.txt")
post_p99=$(awk '$1=="99%" {print $2}' "$tmp/post.txt")
non2xx=$(awk '/Non-2xx/ {print $5}' "$tmp/post.txt"); non2xx=${non2xx:-0}

echo "== raw SQLite: one INSERT per COMMIT, WAL, synchronous=FULL, same disk"
raw_rps=$(python3 - "$tmp/raw.sqlite" <<'PY'
import sqlite3, sys, time, uuid
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA journal_mode=WAL"); db.execute("PRAGMA synchronous=FULL")
db.execute("CREATE TABLE t (id TEXT PRIMARY KEY, amount INTEGER, note TEXT)")
n, start = 0, time.time()
while time.time() - start < 5:
    db.execute("BEGIN IMMEDIATE"); db.execute("INSERT INTO t VALUES (?, 1, 'bench')", (str(uuid.uuid4()),)); db.execute("COMMIT")
    n += 1
print("%.1f" % (n / (time.time() - start)))
PY
)

echo "== GET children (10, authenticated) vs nginx fixed reply"
bench_start_nginx "$nginx_port"
sleep 0.5
wrk -t2 -c"$conns" -d"$duration" --latency "http://127.0.0.1:$nginx_port/" > "$tmp/nginx.txt"
wrk -t2 -c"$conns" -d"$duration" --latency -H "Authorization: Bearer $token" "$base/v1/households/$hh/children" > "$tmp/children.txt"
nginx_rps=$(awk '/Requests\/sec/ {print $2}' "$tmp/nginx.txt")
children_rps=$(awk '/Requests\/sec/ {print $2}' "$tmp/children.txt")
children_p99=$(awk '$1=="99%" {print $2}' "$tmp/children.txt")
"$SERVER_BIN" check --data-dir "$tmp/data" > "$tmp/check.json" || { cat "$tmp/check.json"; exit 1; }

python3 - "$post_rps" "$raw_rps" "$post_p99" "$non2xx" "$children_rps" "$nginx_rps" "$children_p99" <<'PY'
import sys
post, raw, p99, bad, ch, ng, chp99 = sys.argv[1:]
print(f"POST transactions: {float(post):.0f} req/s (p99 {p99}, non-2xx {bad}); raw SQLite commit loop: {float(raw):.0f} commits/s; ratio {float(post)/float(raw):.2f}x (target >= 4x)")
print(f"GET children: {float(ch):.0f} req/s (p99 {chp99}); nginx fixed reply: {float(ng):.0f} req/s; ratio {float(ch)/float(ng):.2f} (target >= 0.5)")
PY
echo "check after the run: $(cat "$tmp/check.json")"
