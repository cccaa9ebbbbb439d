#!/usr/bin/env bash
# Ledger benchmarks, each against a reference measured in the same run:
#  1. durable POST …/transactions (wrk, 64 connections, every request its own idempotent
#     transaction, synchronous=FULL) vs a raw SQLite one-row-per-commit loop with the same
#     durability (WAL, synchronous=FULL) on the same disk;
#  2. authenticated GET …/children (10 children, JSON) vs nginx (1 worker) serving a fixed reply.
# Both sides of (1) are measured after a warm-up (default 5 s) on the same database: a
# freshly created SQLite file commits markedly slower in its first seconds (its WAL and
# database file are still growing), which is not the steady state a server lives in.
# Usage: bench/ledger.sh [duration=10s] [connections=64] [warm-up=5s]
set -euo pipefail
duration="${1:-10s}"
conns="${2:-64}"
warmup="${3:-5s}"
port="${OUR_PORT:-18291}"
nginx_port="${NGINX_PORT:-18292}"
source "$(dirname "$0")/lib.sh"
bench_server_bin
"$SERVER_BIN" serve --port "$port" --data-dir "$tmp/data" --quiet > "$tmp/server.log" 2>&1 &
pids+=($!)
bench_wait_up "$port" 50 0.1
base="http://127.0.0.1:$port"
token=$(curl -fs -XPOST "$base/v1/accounts" -H 'content-type: application/json' -d '{"handle":"bench","displayName":"Bench"}' | python3 -c 'import sys,json;print(json.load(sys.stdin)["token"]["secret"])')
hh=$(curl -fs -XPOST "$base/v1/households" -H "authorization: Bearer $token" -H 'content-type: application/json' -d '{"name":"Bench"}' | python3 -c 'import sys,json;print(json.load(sys.stdin)["id"])')
child=""
for i in $(seq 10); do
  c=$(curl -fs -XPOST "$base/v1/households/$hh/children" -H "authorization: Bearer $token" -H 'content-type: application/json' -d "{\"name\":\"Child $i\"}" | python3 -c 'import sys,json;print(json.load(sys.stdin)["id"])')
  child=${child:-$c}
done

bench_post_lua "$tmp/post.lua" "$hh" "$child" "$token"

echo "== durable POST transactions: warm-up wrk -d$warmup, then wrk -t2 -c$conns -d$duration"
wrk -t2 -c"$conns" -d"$warmup" -s "$tmp/post.lua" "$base" -- "warm$$" > /dev/null
metric() { curl -fs "$base/metrics" | awk -v m="$1" '$1==m {print $2}'; }
commits0=$(metric kidledger_db_commits_total); writes0=$(metric kidledger_db_committed_writes_total)
count_tx() { curl -fs "$base/v1/households/$hh/children" -H "authorization: Bearer $token" | python3 -c 'import sys,json;print(sum(c["balanceCents"] for c in json.load(sys.stdin)["items"]))'; }
tx0=$(count_tx)
wrk -t2 -c"$conns" -d"$duration" --latency -s "$tmp/post.lua" "$base" -- "run$$" > "$tmp/post.txt"
post_rps=$(awk '/Requests\/sec/ {print $2}' "$tmp/post.txt")
post_p99=$(awk '$1=="99%" {print $2}' "$tmp/post.txt")
non2xx=$(awk '/Non-2xx/ {print $5}' "$tmp/post.txt"); non2xx=${non2xx:-0}
commits=$(( $(metric kidledger_db_commits_total) - commits0 )); writes=$(( $(metric kidledger_db_committed_writes_total) - writes0 ))
inserted=$(( $(count_tx) - tx0 ))   # each transaction adds 1 cent

echo "== raw SQLite: one INSERT per COMMIT, WAL, synchronous=FULL, same disk"
raw_rps=$(python3 - "$tmp/raw.sqlite" "$warmup" <<'PY'
import sqlite3, sys, time, uuid
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA journal_mode=WAL"); db.execute("PRAGMA synchronous=FULL")
db.execute("CREATE TABLE t (id TEXT PRIMARY KEY, amount INTEGER, note TEXT)")
def loop(seconds):
    n, start = 0, time.time()
    while time.time() - start < seconds:
        db.execute("BEGIN IMMEDIATE"); db.execute("INSERT INTO t VALUES (?, 1, 'bench')", (str(uuid.uuid4()),)); db.execute("COMMIT")
        n += 1
    return n / (time.time() - start)
loop(float(sys.argv[2].rstrip("s")))   # warm-up, as for the server
print("%.1f" % loop(5))
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

# GET answers are cached until the next commit; a writer committing every 10 ms keeps
# invalidating them, so this run shows the cost of reads that go to SQLite.
echo "== GET children while another client commits a transaction every 10 ms"
python3 - "$base" "$hh" "$child" "$token" "${duration%s}" > "$tmp/trickle.txt" <<'PY' &
import http.client, sys, time, urllib.parse
base, hh, child, token, seconds = sys.argv[1:]
u = urllib.parse.urlparse(base)
c = http.client.HTTPConnection(u.hostname, u.port)
n, end = 0, time.time() + float(seconds) + 0.5
while time.time() < end:
    c.request("POST", f"/v1/households/{hh}/children/{child}/transactions", body='{"amountCents":1}',
              headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
    r = c.getresponse(); r.read()
    n += r.status == 201
    time.sleep(0.01)
print(n)
PY
trickle=$!
wrk -t2 -c"$conns" -d"$duration" --latency -H "Authorization: Bearer $token" "$base/v1/households/$hh/children" > "$tmp/children-mixed.txt"
wait "$trickle"
mixed_rps=$(awk '/Requests\/sec/ {print $2}' "$tmp/children-mixed.txt")
mixed_p99=$(awk '$1=="99%" {print $2}' "$tmp/children-mixed.txt")
"$SERVER_BIN" check --data-dir "$tmp/data" > "$tmp/check.json" || { cat "$tmp/check.json"; exit 1; }

python3 - "$post_rps" "$raw_rps" "$post_p99" "$non2xx" "$children_rps" "$nginx_rps" "$children_p99" "$commits" "$writes" "$mixed_rps" "$mixed_p99" "$(cat "$tmp/trickle.txt")" "$inserted" <<'PY'
import sys
post, raw, p99, bad, ch, ng, chp99, commits, writes, mixed, mixedp99, trickled, inserted = sys.argv[1:]
if int(inserted) != int(writes):
    print(f"WARNING: {writes} writes but {inserted} new transactions: requests were replays, the figure below overstates")
print(f"POST transactions: {float(post):.0f} req/s (p99 {p99}, non-2xx {bad}; {writes} writes in {commits} commits, {int(writes)/max(1,int(commits)):.1f} per commit; {inserted} new transactions); raw SQLite commit loop: {float(raw):.0f} commits/s; ratio {float(post)/float(raw):.2f}x (target >= 4x)")
print(f"GET children: {float(ch):.0f} req/s (p99 {chp99}); nginx fixed reply: {float(ng):.0f} req/s; ratio {float(ch)/float(ng):.2f} (target >= 0.5)")
print(f"GET children with {trickled} commits by another client meanwhile: {float(mixed):.0f} req/s (p99 {mixedp99}); ratio to nginx {float(mixed)/float(ng):.2f}")
PY
echo "check after the run: $(cat "$tmp/check.json")"
