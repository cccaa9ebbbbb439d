#!/usr/bin/env bash
# Server CPU per request: utime + stime of the server process (all its threads, from
# /proc/<pid>/stat) across one wrk run of fixed duration, divided by the requests wrk
# completed in it. Requests per second on a shared machine swing from run to run and
# depend on how wrk and the server share the cores; CPU spent per request does much less.
#
# Measured in each round, against kidledger-server (release build, default access logging,
# written to a file) and nginx (1 worker, fixed 200 reply, access log off) in the same run:
#   nginx         GET / from nginx, the reference
#   healthz       GET /healthz
#   children      authenticated GET …/children (11 children)
#   feed          GET …/changes?limit=500, first page of a household of 1,200 transactions
#                 (500 records, ~115 KB of JSON; each pull also records the device's pull
#                 time, a durable write)
#   feed-gzip     the same with Accept-Encoding: gzip, as the device SDK asks
#   push          POST …/changes, 400 new transactions per request (fewer connections: the
#                 pushes still in flight when wrk stops count CPU but no completed request)
#   post          durable POST …/transactions, each request a new transaction
#   post-nofsync  the same against a second server started under eatmydata (fsync a no-op)
# post and post-nofsync alternate (which goes first alternates by round); their throughput
# ratio is how close durable writes are to the no-fsync limit. The two servers must hold
# databases of about the same size for that ratio to be about fsync alone (a POST into a
# ledger of 1.5 million transactions costs more than into a fresh one), so every push run
# against the first server is followed by the same push against the second (push-nofsync,
# reported, not compared). After the POST runs a bare SQLite loop commits one row per
# transaction on the same disk for as long (WAL, synchronous=FULL, as the server's writer):
# the durable POST throughput divided by its commits per second is what group commit gains.
# The same loop with SQLite's default rollback journal is shown beside it, for scale only.
# Every write run checks that the ledger grew by the requests wrk completed.
#
# BACKEND=postgres measures the same over PostgreSQL: a throwaway cluster
# (scripts/pg-cluster.sh: fsync on, durable commits) with two databases, one per server; the
# second has `synchronous_commit = off` (a commit does not wait for its WAL flush), which is
# the no-fsync side there. The database's own work runs in PostgreSQL's processes, so each
# row also shows PostgreSQL's CPU per request (the postmaster and its children, as
# bench/pg-post.sh counts it); the server column is kidledger-server's alone. The reference
# loop is pgbench with one client inserting one row per transaction into the durable
# database, for as long. SERVER_BIN defaults to the release build with the Postgres trait
# (`--scratch-path .build-postgres`).
#
# Two loads, in every round and in one run (WRK_THREADS, default "1 2"): with one wrk thread
# the server has a core to itself and takes small batches per wake-up (closer to how most
# servers run); with two, wrk's threads share both cores with the server and it takes large
# batches per wake-up. Each load gets a table of its own, compared with nginx at that load.
# With SYSCALLS=1 each run is also counted by `perf stat` on the kernel's syscall tracepoints
# (every thread of the measured processes, attached before and detached after wrk): system
# calls, epoll_wait calls (each one a wake-up or a poll) and context switches per request,
# beside the CPU (which the counting itself raises a little: compare those runs with each
# other, not with runs without it).
#
# Usage: bench/cpu-per-request.sh [duration=5s] [connections=64] [rounds=3] [warm-up=5s]
# Environment: BACKEND (sqlite, or postgres), SERVER_BIN (default: release build of
# kidledger-server), WRK_THREADS ("1 2": the loads, each a number of wrk threads), SYSCALLS (0),
# KINDS (which to run besides nginx, default "healthz children feed feed-gzip push post"; post
# includes post-nofsync),
# PUSH_CONNS (4), OUR_PORT, NOFSYNC_PORT, NGINX_PORT, APT_LOCK (lock held while installing).
set -euo pipefail
duration="${1:-5s}"
conns="${2:-64}"
rounds="${3:-3}"
warmup="${4:-5s}"
read -r -a loads <<< "${WRK_THREADS:-1 2}"
threads=${loads[0]}
syscalls="${SYSCALLS:-0}"
push_conns="${PUSH_CONNS:-4}"
port="${OUR_PORT:-18301}"
nofsync_port="${NOFSYNC_PORT:-18302}"
nginx_port="${NGINX_PORT:-18303}"
backend="${BACKEND:-sqlite}"
case $backend in sqlite|postgres) ;; *) echo "BACKEND must be sqlite or postgres, not $backend" >&2; exit 2 ;; esac

# The load generator, the reference server and the fsync-less runner, installed when missing.
need=()
command -v wrk >/dev/null || need+=(wrk)
[ -x /usr/sbin/nginx ] || need+=(nginx-light)
command -v curl >/dev/null || need+=(curl)
pgbin=""
if [ "$backend" = sqlite ]; then
    command -v eatmydata >/dev/null || need+=(eatmydata)
else
    for v in 15 16 17 14; do [ -x "/usr/lib/postgresql/$v/bin/pgbench" ] && { pgbin=/usr/lib/postgresql/$v/bin; break; }; done
    [ -n "$pgbin" ] || need+=(postgresql)
    pkg-config --exists libpq 2>/dev/null || need+=(libpq-dev)
fi
if [ ${#need[@]} -gt 0 ]; then
    apt_lock="${APT_LOCK:-/var/lock/kidledger-apt.lock}"
    [ -d "$(dirname "$apt_lock")" ] || apt_lock=/tmp/apt-install.lock
    echo "installing ${need[*]}" >&2
    flock "$apt_lock" sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 "$@" >/dev/null' sh "${need[@]}"
fi

source "$(dirname "$0")/lib.sh"
if [ "$backend" = postgres ]; then
    for v in 15 16 17 14; do [ -x "/usr/lib/postgresql/$v/bin/pgbench" ] && { pgbin=/usr/lib/postgresql/$v/bin; break; }; done
    if [ -z "${SERVER_BIN:-}" ]; then
        (cd "$repo" && swift build -c release --traits Postgres --scratch-path .build-postgres --product kidledger-server >&2)
        SERVER_BIN="$(cd "$repo" && swift build -c release --traits Postgres --scratch-path .build-postgres --show-bin-path)/kidledger-server"
    fi
else
    bench_server_bin
fi
clk=$(getconf CLK_TCK)

# Default logging (an access line per request) to a file, as a deployment would have it.
mkdir -p "$tmp/data" "$tmp/data-nofsync"
if [ "$backend" = sqlite ]; then
    "$SERVER_BIN" serve --port "$port" --data-dir "$tmp/data" > "$tmp/server.log" 2>&1 &
    server_pid=$!; pids+=($server_pid)
    eatmydata "$SERVER_BIN" serve --port "$nofsync_port" --data-dir "$tmp/data-nofsync" > "$tmp/server-nofsync.log" 2>&1 &
    nofsync_pid=$!; pids+=($nofsync_pid)   # eatmydata execs the server: same process
else
    # A folder of its own: the cluster belongs to the postgres user, $tmp is root's only.
    cluster=$(mktemp -d -u /tmp/kidledger-pg.XXXXXX)
    trap 'bench_cleanup; bash "$repo/scripts/pg-cluster.sh" stop "$cluster"' EXIT
    url=$(bash "$repo/scripts/pg-cluster.sh" start "$cluster")
    nofsync_url="${url%/*}/kidledger_nofsync"
    "$pgbin/psql" "$url" -qAtX -c "CREATE DATABASE kidledger_nofsync" >/dev/null
    "$pgbin/psql" "$url" -qAtX -c "ALTER DATABASE kidledger_nofsync SET synchronous_commit = off" >/dev/null
    "$SERVER_BIN" migrate --database-url "$url" >&2
    "$SERVER_BIN" migrate --database-url "$nofsync_url" >&2
    # The reference loop's table (raw_pgbench), in the durable database.
    "$pgbin/psql" "$url" -qAtX -c "CREATE TABLE bench_raw (n bigserial PRIMARY KEY, id uuid NOT NULL UNIQUE, amount bigint NOT NULL)"
    postmaster=$(head -n 1 "$cluster/data/postmaster.pid")
    KIDLEDGER_DATABASE_URL=$url "$SERVER_BIN" serve --port "$port" --data-dir "$tmp/data" > "$tmp/server.log" 2>&1 &
    server_pid=$!; pids+=($server_pid)
    KIDLEDGER_DATABASE_URL=$nofsync_url "$SERVER_BIN" serve --port "$nofsync_port" --data-dir "$tmp/data-nofsync" \
        > "$tmp/server-nofsync.log" 2>&1 &
    nofsync_pid=$!; pids+=($nofsync_pid)
fi
bench_start_nginx "$nginx_port"
nginx_pid=${pids[-1]}
bench_wait_up "$port"; bench_wait_up "$nofsync_port"; bench_wait_up "$nginx_port"
if [ "$backend" = sqlite ]; then
    grep -q libeatmydata "/proc/$nofsync_pid/maps" || { echo "the no-fsync server does not have libeatmydata loaded" >&2; exit 1; }
fi

eval "$(bench_seed "" "http://127.0.0.1:$port")"
eval "$(bench_seed nofsync_ "http://127.0.0.1:$nofsync_port")"

# Every write request inserts new rows: POST's Idempotency-Key and each pushed transaction's
# id are unique per wrk invocation (the argument), thread and request. Pushed ids start with
# random bits, as a device's random UUIDs would, so inserts land all over the id index.
# Request bytes are prebuilt where they can be: the load generator shares the cores.
bench_post_lua "$tmp/post.lua" "$hh" "${children%%,*}" "$token"
bench_post_lua "$tmp/post-nofsync.lua" "$nofsync_hh" "${nofsync_children%%,*}" "$nofsync_token"
# push_lua FILE HOUSEHOLD CHILDREN TOKEN: a wrk script pushing 400 new transactions per request.
push_lua() {
    local lua_children
    lua_children=$(echo "$3" | sed 's/[^,]*/"&"/g')
    cat > "$1" <<LUA
local counter = 0
local thread_id = 0
local head, tag
local children = { $lua_children }
setup = function(thread) thread:set("tid", thread_id); thread_id = thread_id + 1 end
init = function(args)
  tag = (tonumber(args[1]) or 0) % 4096
  math.randomseed(tag * 256 + (tid or 0) + 1)
  head = "POST /v1/households/$2/changes HTTP/1.1\r\n" ..
         "Host: " .. wrk.host .. ":" .. wrk.port .. "\r\n" ..
         "Authorization: Bearer $4\r\nContent-Type: application/json\r\n"
end
request = function()
  counter = counter + 1
  local parts = {}
  for i = 1, 400 do
    parts[i] = string.format('{"id":"%04x%04x-%04x-4%03x-8%03x-%012x","childId":"%s","amountCents":1,"note":"","source":"manual","createdAt":"2026-12-02T10:00:00.000Z"}',
      math.random(0, 65535), math.random(0, 65535), tid or 0, tag, i - 1, counter, children[(i % #children) + 1])
  end
  local body = '{"transactions":[' .. table.concat(parts, ",") .. ']}'
  return head .. "Content-Length: " .. #body .. "\r\n\r\n" .. body
end
LUA
}
push_lua "$tmp/push.lua" "$hh" "$children" "$token"
push_lua "$tmp/push-nofsync.lua" "$nofsync_hh" "$nofsync_children" "$nofsync_token"

# utime + stime in clock ticks, summed over the given processes (and, for nginx, its workers).
ticks() {
    local p total=0
    for p in "$@"; do
        [ -r "/proc/$p/stat" ] || { echo "process $p is gone" >&2; cat "$tmp"/*.log >&2; exit 1; }
        total=$(( total + $(awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$p/stat") ))
    done
    echo "$total"
}
# PostgreSQL's CPU in clock ticks (bench_pg_ticks); 0 on SQLite.
pg_ticks() {
    if [ "$backend" = postgres ]; then bench_pg_ticks "$postmaster"; else echo 0; fi
}
procs() {  # the processes whose CPU a kind is charged
    case $1 in
        nginx) echo "$nginx_pid $(ps -o pid= --ppid "$nginx_pid" | tr '\n' ' ')" ;;
        post-nofsync|push-nofsync) echo "$nofsync_pid" ;;
        *) echo "$server_pid" ;;
    esac
}
balance() {  # sum of the 11 children's balances (every written transaction adds 1 cent)
    curl -fs "http://127.0.0.1:$1/v1/households/$2/children" -H "authorization: Bearer $3" |
        python3 -c 'import sys,json;print(sum(c["balanceCents"] for c in json.load(sys.stdin)["items"]))'
}

invocation=0
# run ROUND KIND DURATION: one wrk run of KIND, its CPU and requests appended to results.
run() {
    local round=$1 kind=$2 d=$3 c=$conns url script="" per=0 b0=0 b1 p t0 t1 g0 g1
    local h=() bport=$port bhh=$hh btok=$token
    invocation=$((invocation + 1))
    case $kind in
        nginx) url="http://127.0.0.1:$nginx_port/" ;;
        healthz) url="http://127.0.0.1:$port/healthz" ;;
        children) url="http://127.0.0.1:$port/v1/households/$hh/children"; h=(-H "Authorization: Bearer $token") ;;
        feed) url="http://127.0.0.1:$port/v1/households/$feed/changes?limit=500"; h=(-H "Authorization: Bearer $token") ;;
        feed-gzip) url="http://127.0.0.1:$port/v1/households/$feed/changes?limit=500"
                   h=(-H "Authorization: Bearer $token" -H "Accept-Encoding: gzip") ;;
        push) url="http://127.0.0.1:$port/"; script="$tmp/push.lua"; per=400; c=$push_conns ;;
        push-nofsync) url="http://127.0.0.1:$nofsync_port/"; script="$tmp/push-nofsync.lua"; per=400; c=$push_conns ;;
        post) url="http://127.0.0.1:$port/"; script="$tmp/post.lua"; per=1 ;;
        post-nofsync) url="http://127.0.0.1:$nofsync_port/"; script="$tmp/post-nofsync.lua"; per=1 ;;
    esac
    # Writes to the no-fsync server are checked against its own ledger.
    case $kind in *-nofsync) bport=$nofsync_port; bhh=$nofsync_hh; btok=$nofsync_token ;; esac
    [ "$per" = 0 ] || b0=$(balance "$bport" "$bhh" "$btok")
    p=$(procs "$kind")
    # Dirty pages left by earlier runs (the no-fsync server's above all: its writes reach the
    # disk only when the kernel gets round to them) are written out now, not by kernel
    # threads competing for the cores during this run.
    sync
    # shellcheck disable=SC2086
    t0=$(ticks $p); g0=$(pg_ticks)
    local perf_pid=""
    if [ "$syscalls" = 1 ]; then
        perf stat -x, -o "$tmp/perf.txt" -e raw_syscalls:sys_enter,syscalls:sys_enter_epoll_wait,context-switches \
            -t "$(for q in $p; do ls "/proc/$q/task"; done | paste -sd,)" 2> "$tmp/perf.log" &
        perf_pid=$!
        sleep 0.2
    fi
    if [ -n "$script" ]; then
        wrk -t"$threads" -c"$c" -d"$d" -s "$script" "$url" -- "$invocation" > "$tmp/wrk.txt" 2>&1
    else
        wrk -t"$threads" -c"$c" -d"$d" "${h[@]}" "$url" > "$tmp/wrk.txt" 2>&1
    fi
    # shellcheck disable=SC2086
    t1=$(ticks $p); g1=$(pg_ticks)
    local sc="0 0 0"
    if [ -n "$perf_pid" ]; then
        kill -INT "$perf_pid"; wait "$perf_pid" 2>/dev/null || true
        sc=$(awk -F, '$3 == "raw_syscalls:sys_enter" { a = $1 } $3 == "syscalls:sys_enter_epoll_wait" { b = $1 }
                      $3 == "context-switches" { c = $1 } END { print a + 0, b + 0, c + 0 }' "$tmp/perf.txt")
    fi
    sleep 0.5   # requests still in flight finish before the next run starts counting
    local reqs rps non2xx errors
    reqs=$(awk '/ requests in / {print $1}' "$tmp/wrk.txt")
    rps=$(awk '/Requests\/sec/ {print $2}' "$tmp/wrk.txt")
    non2xx=$(awk '/Non-2xx/ {print $5}' "$tmp/wrk.txt"); non2xx=${non2xx:-0}
    errors=$(awk '/Socket errors/ { gsub(",", ""); print $4 + $6 + $8 + $10 }' "$tmp/wrk.txt"); errors=${errors:-0}
    [ -n "$reqs" ] && [ "$reqs" -gt 0 ] || { echo "wrk completed no request for $kind:" >&2; cat "$tmp/wrk.txt" >&2; exit 1; }
    if [ "$per" != 0 ]; then
        b1=$(balance "$bport" "$bhh" "$btok")
        # wrk counts completed requests; up to one request per connection may still have
        # been written after it stopped.
        if [ $(( b1 - b0 )) -lt $(( reqs * per )) ] || [ $(( b1 - b0 )) -gt $(( (reqs + c) * per )) ]; then
            echo "WARNING: $kind: $reqs requests but $(( b1 - b0 )) new transactions (expected $per each)" >&2
        fi
    fi
    [ "$round" = warm ] || echo "$round $kind@$threads $((t1 - t0)) $reqs $rps $non2xx $errors $((g1 - g0)) $sc" >> "$tmp/results.txt"
}

# The reference for durable writes: a bare SQLite loop on the same disk committing one row
# per transaction (WAL, synchronous=FULL, as the server's writer), for the bench's duration;
# with JOURNAL=delete the same loop in SQLite's default rollback-journal mode.
raw_loop() {  # ROUND [JOURNAL=wal]: appends "ROUND raw-sqlite[-delete] - commits commits/s 0 0"
    if [ "$backend" = postgres ]; then raw_pgbench "$1"; return; fi
    python3 - "$tmp/raw.sqlite" "${duration%s}" "$1" "${2:-wal}" >> "$tmp/results.txt" <<'PY'
import os, sqlite3, sys, time
path, seconds, round_, journal = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
for suffix in ("", "-wal", "-shm", "-journal"):
    if os.path.exists(path + suffix): os.remove(path + suffix)
db = sqlite3.connect(path, isolation_level=None)
db.execute(f"PRAGMA journal_mode={journal}")
db.execute("PRAGMA synchronous=FULL")
db.execute("CREATE TABLE t (n INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, amount INTEGER NOT NULL)")
n, start = 0, time.monotonic()
while time.monotonic() - start < seconds:
    db.execute("INSERT INTO t (id, amount) VALUES (?, 1)", (f"row-{n}",))
    n += 1
print(round_, "raw-sqlite" if journal == "wal" else "raw-sqlite-" + journal, 0, n, n / (time.monotonic() - start), 0, 0, 0, 0, 0, 0)
PY
}
# On PostgreSQL: pgbench, one client, one row inserted per transaction into the durable
# database, for as long (appends "ROUND raw-pg - transactions tps 0 0 0").
raw_pgbench() {
    echo "INSERT INTO bench_raw (id, amount) VALUES (gen_random_uuid(), 1);" > "$tmp/raw.sql"
    "$pgbin/pgbench" -n -M prepared -c 1 -T "${duration%s}" -f "$tmp/raw.sql" "$url" > "$tmp/pgbench.txt" 2>&1 \
        || { cat "$tmp/pgbench.txt" >&2; exit 1; }
    local tps n
    tps=$(awk '/^tps = / {print $3; exit}' "$tmp/pgbench.txt")
    n=$(awk -F': ' '/number of transactions actually processed/ {split($2, a, "/"); print a[1]}' "$tmp/pgbench.txt")
    echo "$1 raw-pg 0 $n $tps 0 0 0 0 0 0" >> "$tmp/results.txt"
}

echo "== warm-up (write paths $warmup each, the others 1s)" >&2
kinds=" ${KINDS:-healthz children feed feed-gzip push post} "
reads=(nginx)
for k in healthz children feed feed-gzip push; do [[ "$kinds" == *" $k "* ]] && reads+=("$k"); done
writes=false; [[ "$kinds" == *" post "* ]] && writes=true
# run_kind ROUND KIND DURATION: KIND, and after a push the same push against the no-fsync
# server when POSTs are compared.
run_kind() {
    run "$@"
    if [ "$2" = push ] && $writes; then run "$1" push-nofsync "$3"; fi
}
for k in "${reads[@]}"; do run_kind warm "$k" 1s; done
if $writes; then run warm post "$warmup"; run warm post-nofsync "$warmup"; fi

for r in $(seq 1 "$rounds"); do
    # The loads take turns within the round, their order alternating by round.
    order=("${loads[@]}")
    if [ $((r % 2)) = 0 ]; then order=(); for ((i = ${#loads[@]} - 1; i >= 0; i--)); do order+=("${loads[i]}"); done; fi
    for threads in "${order[@]}"; do
        echo "== round $r of $rounds: wrk -t$threads -c$conns -d$duration (push: -c$push_conns)" >&2
        for k in "${reads[@]}"; do run_kind "$r" "$k" "$duration"; done
        if $writes; then
            if [ $((r % 2)) = 1 ]; then run "$r" post "$duration"; run "$r" post-nofsync "$duration"
            else run "$r" post-nofsync "$duration"; run "$r" post "$duration"; fi
        fi
    done
    if $writes; then raw_loop "$r"; [ "$backend" = postgres ] || raw_loop "$r" delete; fi
done

if [ "$backend" = postgres ]; then
    "$SERVER_BIN" check --database-url "$url" > "$tmp/check.json"
else
    "$SERVER_BIN" check --data-dir "$tmp/data" > "$tmp/check.json"
fi || { echo "check failed:" >&2; cat "$tmp/check.json" >&2; exit 1; }

python3 - "$tmp/results.txt" "$clk" "$(wc -l < "$tmp/server.log")" "$backend" "$syscalls" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
clk, loglines, backend, counted = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5] == "1"
pg = backend == "postgres"
us, pgus, rps, bad, sc = {}, {}, {}, {}, {}
loops_rps = {}
for r, kind, ticks, reqs, rate, non2xx, errors, pgticks, calls, waits, switches in rows:
    if "@" not in kind:   # the reference loops, once per round whatever the load
        loops_rps.setdefault(kind, {})[r] = float(rate)
        continue
    us.setdefault(kind, {})[r] = int(ticks) * 1e6 / clk / int(reqs)
    pgus.setdefault(kind, {})[r] = int(pgticks) * 1e6 / clk / int(reqs)
    rps.setdefault(kind, {})[r] = float(rate)
    bad[kind] = bad.get(kind, 0) + int(non2xx) + int(errors)
    sc.setdefault(kind, {})[r] = (int(calls) / int(reqs), int(waits) / int(reqs), int(switches) / int(reqs))
loads = sorted({k.split("@")[1] for k in us}, key=int)
rounds = sorted(us["nginx@" + loads[0]], key=int)
labels = {
    "nginx": "nginx fixed reply (1 worker)",
    "healthz": "GET /healthz",
    "children": "GET …/children (11, authenticated)",
    "feed": "GET …/changes?limit=500",
    "feed-gzip": "GET …/changes?limit=500, gzip",
    "push": "POST …/changes (400 transactions)",
    "push-nofsync": "POST …/changes (400), " + ("sync. commit off" if pg else "eatmydata"),
    "post": "POST …/transactions, durable",
    "post-nofsync": "POST …/transactions, " + ("sync. commit off" if pg else "eatmydata"),
}
def span(xs, fmt):
    return (fmt % xs[0]) if len(xs) == 1 else (fmt % min(xs)) + "–" + (fmt % max(xs))
for load in loads:
    print(f"== wrk -t{load}: server CPU per request (utime+stime / requests completed), {len(rounds)} round(s); median [range]"
          + (", backend PostgreSQL (its own CPU per request in the last column)" if pg else ""))
    print(f"{'request':38} {'µs/request':>20} {'nginx/kidledger':>18} {'req/s':>10} {'errors':>7}"
          + (f" {'PostgreSQL µs/request':>22}" if pg else "")
          + (f" {'syscalls/req':>12} {'epoll_wait/req':>14} {'cswitch/req':>11}" if counted else ""))
    for kind in labels:
        key, nkey = kind + "@" + load, "nginx@" + load
        if key not in us: continue
        xs = [us[key][r] for r in rounds]
        fmt = "%.0f" if max(xs) >= 100 else "%.1f"
        ratio = [us[nkey][r] / us[key][r] for r in rounds]
        rfmt = "%.2g" if max(ratio) < 0.1 else "%.2f"
        ratio_s = "" if kind == "nginx" else (rfmt % statistics.median(ratio)) + " [" + span(ratio, rfmt) + "]"
        pgs = ""
        if pg and kind != "nginx":
            ps = [pgus[key][r] for r in rounds]
            pfmt = "%.0f" if max(ps) >= 100 else "%.1f"
            pgs = f" {(pfmt % statistics.median(ps)) + ' [' + span(ps, pfmt) + ']':>22}"
        counts = ""
        if counted:
            med = [statistics.median(sc[key][r][i] for r in rounds) for i in range(3)]
            counts = f" {med[0]:>12.2f} {med[1]:>14.3f} {med[2]:>11.3f}"
        print(f"{labels[kind]:38} {(fmt % statistics.median(xs)) + ' [' + span(xs, fmt) + ']':>20} {ratio_s:>18} "
              f"{statistics.median([rps[key][r] for r in rounds]):>10.0f} {bad[key]:>7}" + pgs + counts)
    if "post@" + load in rps:
        dur = [rps["post@" + load][r] / rps["post-nofsync@" + load][r] for r in rounds]
        print("durable ÷ no-fsync POST throughput, per round: " + " ".join("%.2f" % x for x in dur)
              + f" (median {statistics.median(dur):.2f})")
        refs = ((("raw-pg", "durable POST throughput ÷ pgbench, one client inserting one row per transaction"),) if pg else
                (("raw-sqlite", "durable POST throughput ÷ a bare SQLite loop committing one row per transaction"),
                 ("raw-sqlite-delete", "  for scale: ÷ the same loop in SQLite's default rollback-journal mode")))
        for loop, text in refs:
            raw = [rps["post@" + load][r] / loops_rps[loop][r] for r in rounds]
            print(text + " (" + "/".join("%.0f" % loops_rps[loop][r] for r in rounds) + " commits/s), per round: "
                  + " ".join("%.1f" % x for x in raw) + f" (median {statistics.median(raw):.1f})")
    print(f"per round µs: " + "; ".join(f"{k} " + "/".join("%.1f" % us[k + "@" + load][r] for r in rounds)
                                       for k in labels if k + "@" + load in us))
    if pg:
        print(f"per round PostgreSQL µs: " + "; ".join(f"{k} " + "/".join("%.1f" % pgus[k + "@" + load][r] for r in rounds)
                                                      for k in labels if k + "@" + load in pgus and k != "nginx"))
print(f"server log: {loglines} lines (default access logging, to a file)")
PY
echo "check after the run: $(cat "$tmp/check.json")"
