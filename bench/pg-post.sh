#!/usr/bin/env bash
# Durable writes on PostgreSQL: kidledger-server against pgbench running the equivalent
# single transaction, in the same run on the same throwaway cluster.
#
#   kidledger  durable POST …/transactions, each request a new transaction (its own
#              Idempotency-Key), into one child of each of HOUSEHOLDS households (default
#              1: every write waits for the one household's row lock), from wrk with
#              `connections` connections split evenly over `servers` server processes
#              (each its own wrk) that share the database
#   pgbench    the same write as one transaction per client request, `connections`
#              clients, prepared statements, into as many other households of the same
#              database (client n writes household n mod HOUSEHOLDS):
#                BEGIN;
#                UPDATE households SET seq = seq + 1 WHERE id = … RETURNING seq;  -- locks the row
#                                                (… FROM a table of the households, by primary key)
#                INSERT INTO transactions (…, seq) VALUES (…);                      -- a new row
#                UPDATE children SET balance_cents = balance_cents + 1 WHERE …;     -- the balance
#                COMMIT;
# The two alternate within each round (which goes first alternates by round). Printed per
# round and as medians: both rates and kidledger ÷ pgbench (issue target ≥ 1.0); the server
# processes' CPU per request (utime + stime from /proc/<pid>/stat across the wrk run ÷
# requests completed, as bench/cpu-per-request.sh); PostgreSQL's CPU per write for each
# (the postmaster's children, live and exited, across the run). Every kidledger run checks
# that the balances grew by the requests wrk completed; every pgbench run, by the
# transactions pgbench counted.
# With two or more servers, then: a write through the first server to a long-poll parked on
# the second (a wake across processes, LISTEN/NOTIFY): p50/p90 over `wakes` writes (0: none), timed
# from sending the write to the poll's answer.
#
# Usage: bench/pg-post.sh [duration=10s] [connections=64] [rounds=3] [servers=2] [warm-up=5s] [wakes=200]
# Environment: SERVER_BIN (a kidledger-server built with the Postgres trait; default: the
# release build `swift build -c release --traits Postgres --scratch-path .build-postgres`),
# HOUSEHOLDS (1), WRK_THREADS (per wrk, default 1), PGBENCH_THREADS (2), APT_LOCK (lock held
# while installing).
# The cluster is scripts/pg-cluster.sh's: fsync on, synchronous_commit on (durable).
set -euo pipefail
duration="${1:-10s}"
conns="${2:-64}"
rounds="${3:-3}"
nservers="${4:-2}"
warmup="${5:-5s}"
wakes="${6:-200}"
households="${HOUSEHOLDS:-1}"
threads="${WRK_THREADS:-1}"
pgthreads="${PGBENCH_THREADS:-2}"
secs() { local d=$1; d=${d%s}; echo "$d"; }
[ $((conns % nservers)) = 0 ] || { echo "connections ($conns) must divide evenly over $nservers servers" >&2; exit 2; }

# The load generators and PostgreSQL, installed when missing.
need=()
command -v wrk >/dev/null || need+=(wrk)
[ -x /usr/sbin/nginx ] || need+=(nginx-light)   # bench/lib.sh expects it
command -v curl >/dev/null || need+=(curl)
command -v jq >/dev/null || need+=(jq)
have_pg=""
for v in 15 16 17 14; do [ -x "/usr/lib/postgresql/$v/bin/pgbench" ] && have_pg=1; done
[ -n "$have_pg" ] || need+=(postgresql)
pkg-config --exists libpq 2>/dev/null || need+=(libpq-dev)
if [ ${#need[@]} -gt 0 ]; then
    apt_lock="${APT_LOCK:-/var/lock/kidledger-apt.lock}"
    [ -d "$(dirname "$apt_lock")" ] || apt_lock=/tmp/apt-install.lock
    echo "installing ${need[*]}" >&2
    flock "$apt_lock" sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 "$@" >/dev/null' sh "${need[@]}"
fi
pgbin=""
for v in 15 16 17 14; do [ -x "/usr/lib/postgresql/$v/bin/pgbench" ] && { pgbin=/usr/lib/postgresql/$v/bin; break; }; done

source "$(dirname "$0")/lib.sh"
if [ -z "${SERVER_BIN:-}" ]; then
    (cd "$repo" && swift build -c release --traits Postgres --scratch-path .build-postgres --product kidledger-server >&2)
    SERVER_BIN="$(cd "$repo" && swift build -c release --traits Postgres --scratch-path .build-postgres --show-bin-path)/kidledger-server"
fi
clk=$(getconf CLK_TCK)

# A folder of its own: the cluster belongs to the postgres user, $tmp is root's only.
cluster=$(mktemp -d -u /tmp/kidledger-pg.XXXXXX)
trap 'bench_cleanup; bash "$repo/scripts/pg-cluster.sh" stop "$cluster"' EXIT
url=$(bash "$repo/scripts/pg-cluster.sh" start "$cluster")
"$SERVER_BIN" migrate --database-url "$url" >&2
postmaster=$(head -n 1 "$cluster/data/postmaster.pid")

# The servers, on free loopback ports (reported in their listening lines), default logging
# to a file as a deployment would have it.
server_pids=(); ports=()
for n in $(seq 1 "$nservers"); do
    mkdir -p "$tmp/keys"
    KIDLEDGER_DATABASE_URL=$url "$SERVER_BIN" serve --port 0 --data-dir "$tmp/keys" --max-households-per-account 0 > "$tmp/server-$n.log" 2>&1 &
    server_pids+=($!); pids+=($!)
    for _ in $(seq 1 300); do grep -q '"event":"listening"' "$tmp/server-$n.log" && break; sleep 0.05; done
    ports+=("$(grep -m 1 '"event":"listening"' "$tmp/server-$n.log" | jq -er .port)") \
        || { echo "server $n did not start:" >&2; cat "$tmp/server-$n.log" >&2; exit 1; }
done
echo "== PostgreSQL $url, $nservers server(s) on ${ports[*]}" >&2

# HOUSEHOLDS households of one child each written through the servers (the requests take
# them in turn), as many written by pgbench (client n writes household n mod HOUSEHOLDS).
post() { # PATH JSON [TOKEN]: the answer's body, which must be 201
    curl -fsS -X POST "http://127.0.0.1:${ports[0]}$1" -H 'content-type: application/json' \
        ${3:+-H "authorization: Bearer $3"} -d "$2"
}
account=$(post /v1/accounts '{"handle":"bench","displayName":"Bench"}')
token=$(jq -r .token.secret <<<"$account"); author=$(jq -r .account.id <<<"$account")
hhs=(); children=(); targets=()
for i in $(seq 0 $((households - 1))); do
    for kind in kidledger pgbench; do
        h=$(post /v1/households "{\"name\":\"$kind\"}" "$token" | jq -r .id)
        c=$(post "/v1/households/$h/children" '{"name":"Child"}' "$token" | jq -r .id)
        if [ "$kind" = kidledger ]; then hhs+=("$h"); children+=("$c"); else targets+=("($i, '$h', '$c')"); fi
    done
done
hh=${hhs[0]}; child=${children[0]}
psql_at() { "$pgbin/psql" "$url" -qAtX -c "$1"; }
psql_at "CREATE TABLE bench_targets (slot int PRIMARY KEY, hh uuid NOT NULL, child uuid NOT NULL);
         INSERT INTO bench_targets VALUES $(IFS=,; echo "${targets[*]}")"

# The household row is locked first (as the server does), its seq advanced, then the row
# inserted and the balance updated. The (household, child) pair is looked up by primary
# key in the same statement.
cat > "$tmp/pgbench.sql" <<SQL
\set slot :client_id % $households
BEGIN;
UPDATE households h SET seq = h.seq + 1 FROM bench_targets b
    WHERE b.slot = :slot AND h.id = b.hh RETURNING b.hh AS hh, b.child AS child, h.seq AS seq \gset
INSERT INTO transactions (household_id, id, child_id, amount_cents, note, source, created_at, recorded_at,
                          author_account_id, reversal_id, seq)
    VALUES (:hh, gen_random_uuid(), :child, 1, 'bench', 'manual', now(), now(), :author, gen_random_uuid(), :seq);
UPDATE children SET balance_cents = balance_cents + 1 WHERE household_id = :hh AND id = :child;
COMMIT;
SQL
bench_post_lua "$tmp/post.lua" "$(IFS=,; echo "${hhs[*]}")" "$(IFS=,; echo "${children[*]}")" "$token"

server_ticks() {  # utime+stime of the server processes (one that exited counts nothing; pg_ticks says so)
    local p t total=0
    for p in "${server_pids[@]}"; do
        t=$(awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$p/stat" 2>/dev/null) || continue
        [ -n "$t" ] && total=$(( total + t ))
    done
    echo "$total"
}
pg_ticks() {
    for p in "${server_pids[@]}"; do [ -r "/proc/$p/stat" ] || { echo "a server exited:" >&2; cat "$tmp"/server-*.log >&2; exit 1; }; done
    bench_pg_ticks "$postmaster"
}
balance_of() { # KIND: the sum of its households' balances
    psql_at "SELECT coalesce(sum(c.balance_cents), 0) FROM children c JOIN households h ON h.id = c.household_id WHERE h.name = '$1'"
}

invocation=0
# kidledger ROUND DURATION: one wrk per server, at the same time.
kidledger() {
    local round=$1 d=$2 b0 b1 s0 s1 g0 g1 n reqs=0 rps=0 bad=0 i
    invocation=$((invocation + 1))
    b0=$(balance_of kidledger); s0=$(server_ticks); g0=$(pg_ticks)
    for i in "${!ports[@]}"; do
        wrk -t"$threads" -c$((conns / nservers)) -d"$d" --timeout 10s -s "$tmp/post.lua" "http://127.0.0.1:${ports[$i]}/" \
            -- "$invocation-$i" > "$tmp/wrk-$i.txt" 2>&1 &
        wrk_pids[$i]=$!
    done
    for i in "${!ports[@]}"; do wait "${wrk_pids[$i]}"; done
    s1=$(server_ticks); g1=$(pg_ticks)
    sleep 0.5   # requests still in flight finish
    b1=$(balance_of kidledger)
    for i in "${!ports[@]}"; do
        n=$(awk '/ requests in / {print $1}' "$tmp/wrk-$i.txt")
        [ -n "$n" ] && [ "$n" -gt 0 ] || { echo "wrk completed no request:" >&2; cat "$tmp/wrk-$i.txt" >&2; exit 1; }
        reqs=$((reqs + n))
        rps=$(awk -v a="$rps" '/Requests\/sec/ {print a + $2}' "$tmp/wrk-$i.txt")
        bad=$((bad + $(awk '/Non-2xx/ {print $5}' "$tmp/wrk-$i.txt" | grep . || echo 0)))
        bad=$((bad + $(awk '/Socket errors/ { gsub(",", ""); print $4 + $6 + $8 + $10 }' "$tmp/wrk-$i.txt" | grep . || echo 0)))
    done
    if [ "$bad" -gt 0 ]; then
        echo "round $round: $bad failed requests:" >&2
        grep -hE "Non-2xx|Socket errors" "$tmp"/wrk-*.txt >&2
        grep -h '"status":5' "$tmp"/server-*.log | tail -n 3 >&2 || true
    fi
    if [ $((b1 - b0)) -lt "$reqs" ] || [ $((b1 - b0)) -gt $((reqs + conns)) ]; then
        echo "WARNING: kidledger: $reqs requests but the balance grew by $((b1 - b0))" >&2
    fi
    [ "$round" = warm ] || echo "$round kidledger $rps $reqs $((s1 - s0)) $((g1 - g0)) $bad" >> "$tmp/results.txt"
}

# pgbench ROUND DURATION
pgbench_run() {
    local round=$1 d=$2 b0 b1 g0 g1 tps n
    b0=$(balance_of pgbench); g0=$(pg_ticks)
    "$pgbin/pgbench" -n -M prepared -c "$conns" -j "$pgthreads" -T "$(secs "$d")" -f "$tmp/pgbench.sql" \
        -D author="$author" "$url" > "$tmp/pgbench.txt" 2>&1 \
        || { cat "$tmp/pgbench.txt" >&2; exit 1; }
    g1=$(pg_ticks)
    b1=$(balance_of pgbench)
    tps=$(awk '/^tps = / {print $3; exit}' "$tmp/pgbench.txt")
    n=$(awk -F': ' '/number of transactions actually processed/ {split($2, a, "/"); print a[1]}' "$tmp/pgbench.txt")
    [ $((b1 - b0)) = "$n" ] || echo "WARNING: pgbench counted $n transactions, the balance grew by $((b1 - b0))" >&2
    [ "$round" = warm ] || echo "$round pgbench $tps $n 0 $((g1 - g0)) 0" >> "$tmp/results.txt"
}

echo "== warm-up ($warmup each)" >&2
kidledger warm "$warmup"; pgbench_run warm "$warmup"
for r in $(seq 1 "$rounds"); do
    echo "== round $r of $rounds: $duration, $conns connections / clients" >&2
    if [ $((r % 2)) = 1 ]; then kidledger "$r" "$duration"; pgbench_run "$r" "$duration"
    else pgbench_run "$r" "$duration"; kidledger "$r" "$duration"; fi
done

wake=""
if [ "$nservers" -ge 2 ] && [ "$wakes" -gt 0 ]; then
    echo "== wake across processes: $wakes writes through server 1, a long-poll parked on server 2" >&2
    wake=$(python3 - "${ports[0]}" "${ports[1]}" "$token" "$hh" "$child" "$wakes" <<'PY'
import http.client, json, statistics, sys, threading, time
writer_port, poller_port, token, hh, child, rounds = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6])
H = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
def client(port): return http.client.HTTPConnection("127.0.0.1", int(port), timeout=120)
def get(c, path):
    c.request("GET", path, headers=H); r = c.getresponse(); d = r.read()
    assert r.status == 200, (r.status, d[:300]); return json.loads(d)
writer, poller, probe = client(writer_port), client(poller_port), client(poller_port)
since = get(poller, f"/v1/households/{hh}/changes?limit=1")["nextToken"]
# The token of the newest change: page to the end once.
while True:
    page = get(poller, f"/v1/households/{hh}/changes?since={since}&limit=1000")
    since = page["nextToken"]
    if not page["moreComing"]: break
def parked():
    probe.request("GET", "/metrics"); body = probe.getresponse().read().decode()
    return next(int(float(l.split()[1])) for l in body.splitlines() if l.startswith("kidledger_parked_long_polls "))
lat, ack = [], []
for _ in range(rounds):
    got = {}
    def poll():
        got["page"] = get(poller, f"/v1/households/{hh}/changes?since={since}&wait=30")
        got["t"] = time.perf_counter()
    th = threading.Thread(target=poll); th.start()
    deadline = time.time() + 5
    while parked() < 1 and time.time() < deadline: time.sleep(0.002)
    t0 = time.perf_counter()
    writer.request("POST", f"/v1/households/{hh}/children/{child}/transactions", body='{"amountCents":1}', headers=H)
    r = writer.getresponse(); r.read(); assert r.status == 201, r.status
    t1 = time.perf_counter()
    th.join()
    assert len(got["page"]["transactions"]) == 1, got["page"]
    since = got["page"]["nextToken"]
    lat.append((got["t"] - t0) * 1000); ack.append((t1 - t0) * 1000)
lat.sort()
print(f"p50 {statistics.median(lat):.2f} ms, p90 {lat[int(len(lat) * 0.9)]:.2f} ms, max {lat[-1]:.2f} ms over {rounds} writes "
      f"(the write itself answered in p50 {statistics.median(ack):.2f} ms)")
PY
)
fi

python3 - "$tmp/results.txt" "$clk" "$nservers" "$conns" "$wake" "$households" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
clk, nservers, conns, wake, households = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
by = {}
for r, kind, rate, n, sticks, gticks, bad in rows:
    by.setdefault(r, {})[kind] = dict(rate=float(rate), n=int(n), server=int(sticks) * 1e6 / clk / int(n),
                                      pg=int(gticks) * 1e6 / clk / int(n), bad=int(bad))
rounds = sorted(by, key=int)
med = lambda xs: statistics.median(xs)
print(f"durable writes on PostgreSQL, {conns} connections/clients, {nservers} server process(es), {households} household(s); per round, then median")
print(f"{'round':>5} {'kidledger req/s':>16} {'pgbench tps':>12} {'ratio':>6} {'server µs/req':>14} {'PG µs/write kl':>15} {'PG µs/write pgb':>16} {'errors':>7}")
for r in rounds:
    k, p = by[r]["kidledger"], by[r]["pgbench"]
    print(f"{r:>5} {k['rate']:>16.0f} {p['rate']:>12.0f} {k['rate'] / p['rate']:>6.2f} {k['server']:>14.1f} {k['pg']:>15.1f} {p['pg']:>16.1f} {k['bad']:>7}")
k = [by[r]["kidledger"] for r in rounds]; p = [by[r]["pgbench"] for r in rounds]
print(f"{'med':>5} {med([x['rate'] for x in k]):>16.0f} {med([x['rate'] for x in p]):>12.0f} "
      f"{med([a['rate'] / b['rate'] for a, b in zip(k, p)]):>6.2f} {med([x['server'] for x in k]):>14.1f} "
      f"{med([x['pg'] for x in k]):>15.1f} {med([x['pg'] for x in p]):>16.1f} {sum(x['bad'] for x in k):>7}")
print("kidledger ÷ pgbench per round: " + " ".join("%.2f" % (a["rate"] / b["rate"]) for a, b in zip(k, p)) + " (target ≥ 1.0)")
if wake: print("write through server 1 → long-poll on server 2: " + wake + " (target p50 < 10 ms)")
PY
