#!/usr/bin/env bash
# Instructions the server executes per request (user space, every thread), counted by
# callgrind over an exact number of requests: steady where CPU timings on a shared machine
# are not, so a change to the request path can be measured from one run. System calls per
# request are counted with strace -c over the same kind of run (strace -c -f adds its own
# cost, so it is a separate run).
#
# Each kind runs against a release build with default access logging to a file, after a
# warm-up whose counts are discarded:
#   healthz    GET /healthz
#   children   authenticated GET …/children (11 children)
#   post       durable POST …/transactions, each request a new transaction
#   push       POST …/changes of 400 new transactions (not run by default; counted per
#              request, so divide by 400 for a record)
#   feed       GET …/changes?limit=500, the first page of a household of 1,200 transactions
#              (not run by default; each pull also records the device's pull, a durable write)
#
# BACKEND=postgres counts the same over PostgreSQL: a throwaway cluster (scripts/pg-cluster.sh,
# fsync on), migrated, the server started on it for each kind (the database's own work runs
# in PostgreSQL's processes and is not counted). Over PostgreSQL how many requests share a
# round trip (a stamp read, a group commit) depends on timing, which valgrind slows: compare
# such counts with each other at the same connections, not with timed runs.
#
# Usage: bench/instructions.sh [requests=4000] [connections=4] [kinds="healthz children post"]
# Environment: BACKEND (sqlite, or postgres), SERVER_BIN (default: release build of
# kidledger-server, with the Postgres trait in .build-postgres for BACKEND=postgres), PORT (18311),
# STRACE=0 to skip the system-call counts, KEEP=DIR to keep the callgrind outputs there
# (for callgrind_annotate), THREADS=1 to count each thread apart (the writer, the event
# loops: what the serial writer spends per request is printed on a line of its own).
set -euo pipefail
requests="${1:-4000}"
conns="${2:-4}"
kinds="${3:-healthz children post}"
port="${PORT:-18311}"
here="$(cd "$(dirname "$0")" && pwd)"
command -v valgrind >/dev/null || { echo "needs valgrind: apt-get install -y valgrind" >&2; exit 1; }
command -v callgrind_control >/dev/null || { echo "needs callgrind_control (valgrind)" >&2; exit 1; }
[ "${STRACE:-1}" = 0 ] || command -v strace >/dev/null || { echo "needs strace: apt-get install -y strace" >&2; exit 1; }

source "$here/lib.sh"
backend="${BACKEND:-sqlite}"
serve_env=()
case $backend in
    sqlite) bench_server_bin ;;
    postgres)
        if [ -z "${SERVER_BIN:-}" ]; then
            (cd "$repo" && swift build -c release --traits Postgres --scratch-path .build-postgres --product kidledger-server >&2)
            SERVER_BIN="$(cd "$repo" && swift build -c release --traits Postgres --scratch-path .build-postgres --show-bin-path)/kidledger-server"
        fi
        # A folder of its own: the cluster belongs to the postgres user, $tmp is root's only.
        cluster=$(mktemp -d -u /tmp/kidledger-pg.XXXXXX)
        trap 'bench_cleanup; bash "$repo/scripts/pg-cluster.sh" stop "$cluster"' EXIT
        url=$(bash "$repo/scripts/pg-cluster.sh" start "$cluster")
        "$SERVER_BIN" migrate --database-url "$url" >&2
        serve_env=(env "KIDLEDGER_DATABASE_URL=$url")
        ;;
    *) echo "BACKEND must be sqlite or postgres, not $backend" >&2; exit 2 ;;
esac

stop_server() {
    kill "$1"; wait "$1" 2>/dev/null || true
}

# Seed (an account and a household of 11 children, see bench_seed), on a plain server.
mkdir -p "$tmp/data"
"${serve_env[@]}" "$SERVER_BIN" serve --port "$port" --data-dir "$tmp/data" > "$tmp/server.log" 2>&1 &
pid=$!; pids+=($pid)
bench_wait_up "$port" 600 0.1   # slow under valgrind
eval "$(bench_seed "" "http://127.0.0.1:$port")"
child="${children%%,*}"
stop_server "$pid"

warm_for() {  # KIND: a quarter of the requests, at least 200 (10 pushes of 400 records, 50 feed pages)
    local floor=200
    [ "$1" = push ] && floor=10
    [ "$1" = feed ] && floor=50
    echo $(( requests / 4 > floor ? requests / 4 : floor ))
}
load() {  # KIND COUNT TAG
    python3 "$here/exact-load.py" "$port" "$1" "$2" "$conns" "$([ "$1" = feed ] && echo "$feed" || echo "$hh")" \
        "$([ "$1" = push ] && echo "$children" || echo "$child")" "$token" "$3"
}

printf '%-10s %14s %14s\n' kind "instr/request" "syscalls/req" > "$tmp/table.txt"
for kind in $kinds; do
    separate=(); [ "${THREADS:-0}" = 1 ] && separate=(--separate-threads=yes)
    "${serve_env[@]}" valgrind --tool=callgrind --instr-atstart=no "${separate[@]}" --callgrind-out-file="$tmp/cg.$kind.%p" \
        "$SERVER_BIN" serve --port "$port" --data-dir "$tmp/data" > "$tmp/server.log" 2> "$tmp/valgrind.log" &
    pid=$!; pids+=($pid)
    bench_wait_up "$port" 600 0.1   # slow under valgrind
    load "$kind" "$(warm_for "$kind")" "cg-warm"
    callgrind_control -z "$pid" >/dev/null
    callgrind_control -i on "$pid" >/dev/null
    load "$kind" "$requests" "cg"
    callgrind_control -i off "$pid" >/dev/null
    callgrind_control -d "$pid" >/dev/null
    stop_server "$pid"
    ir=$(cat "$tmp"/cg."$kind".* | awk '/^(summary|totals):/ { s += $2 } END { print s }')
    if [ "${THREADS:-0}" = 1 ]; then
        # One file per thread and dump; a thread is named by the loop it runs.
        for f in "$tmp"/cg."$kind".*-*; do
            n=$(awk '/^(summary|totals):/ { s += $2 } END { print s + 0 }' "$f")
            [ "$n" -gt 0 ] || continue
            if grep -q 'WriteQueueC3run' "$f"; then
                name=writer
                # Its commits: the writer's per-commit work is spread over the batch.
                callgrind_annotate --tree=calling "$f" 2>/dev/null | awk '!done && /sqlite3BtreeCommitPhaseOne \(/ && /> / {
                    for (i = 1; i <= NF; i++) if ($i ~ /^\([0-9,]+x\)$/) { gsub(/[(),x]/, "", $i); print $i; done = 1 } }' >> "$tmp/commits.$kind"
            elif grep -q 'EventLoopC3run' "$f"; then name="event loop"
            elif grep -q 'Checkpointer' "$f"; then name=checkpointer
            else name=other; fi
            echo "$name $n"
        done | awk -v r="$requests" '{ n = $NF; $NF = ""; sub(/ $/, ""); s[$0] += n }
            END { for (k in s) printf "  %-14s %10.0f instructions/request\n", k, s[k] / r }' | sort >> "$tmp/threads.$kind"
        echo "  group commits in the counted run: $(awk '{ s += $1 } END { print s + 0 }' "$tmp/commits.$kind" 2>/dev/null)" >> "$tmp/threads.$kind"
    fi
    # The dump after the run, and the final dump at exit (collection off): both counted once.
    syscalls="-"
    if [ "${STRACE:-1}" != 0 ]; then
        "${serve_env[@]}" "$SERVER_BIN" serve --port "$port" --data-dir "$tmp/data" > "$tmp/server.log" 2>&1 &
        pid=$!; pids+=($pid)
        bench_wait_up "$port" 600 0.1   # slow under valgrind
        load "$kind" "$(warm_for "$kind")" "st-warm"
        # Attached to every thread after the warm-up, detached after the run.
        # shellcheck disable=SC2046
        strace -c -f -o "$tmp/strace.$kind" $(ls "/proc/$pid/task" | sed 's/^/-p /') 2> "$tmp/strace.log" &
        spid=$!
        sleep 1
        load "$kind" "$requests" "st"
        sleep 0.3
        kill -INT "$spid"; wait "$spid" 2>/dev/null || true
        stop_server "$pid"
        calls=$(awk '$NF == "total" { print $4 }' "$tmp/strace.$kind")
        syscalls=$(python3 -c "print(f'{$calls / $requests:.2f}')")
        if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP"; cp "$tmp/strace.$kind" "$KEEP/"; fi
    fi
    if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP"; cp "$tmp"/cg."$kind".* "$KEEP/"; fi
    printf '%-10s %14.0f %14s\n' "$kind" "$(python3 -c "print($ir / $requests)")" "$syscalls" >> "$tmp/table.txt"
done
echo "release server ($backend), default access logging to a file; $requests requests over $conns keep-alive connections after a quarter as many (at least 200; 10 pushes, 50 feed pages) to warm up"
cat "$tmp/table.txt"
if [ "${THREADS:-0}" = 1 ]; then
    for kind in $kinds; do echo "$kind, by thread:"; cat "$tmp/threads.$kind"; done
fi
