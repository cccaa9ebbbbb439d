#!/usr/bin/env bash
# Where a request's server CPU goes, thread by thread: utime + stime of each of the
# server's threads (/proc/<pid>/task/<tid>/stat) across one wrk run of fixed duration,
# divided by the requests wrk completed. The server names its threads (kl-writer,
# kl-checkpoint, kl-loop-N, kl-log; over PostgreSQL kl-worker-N, kl-pg-…); the
# queues' threads (answers, reads) are the dispatch library's and are summed as
# "dispatch". Release build, default access logging to a file, a fresh data folder.
# Each thread's context switches per request are shown beside its CPU: "sleeps" (it
# blocked: epoll_wait, a semaphore, fdatasync) and "preempted" (the scheduler took the core).
#
# Usage: bench/cpu-per-thread.sh [duration=6s] [connections=64] [kind=post]
#   kind: post (durable POST …/transactions, a new transaction each), children
#   (authenticated GET …/children), healthz.
# Environment: SERVER_BIN (default: release build), EATMYDATA=1 (run the server under
# eatmydata: fsync a no-op), WRK_THREADS (2), PORT (18411), GROW=N (before the run, N
# transactions are written into the household's first child by SQL, the server stopped, so
# the POSTs land on a grown ledger: 1,000,000 take about half a minute), DRAIN=S (the
# second reading S seconds after the load, so that the work the run left behind, the
# checkpointer's last pass, is counted too).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
duration="${1:-6s}"; conns="${2:-64}"; kind="${3:-post}"
port="${PORT:-18411}"; threads="${WRK_THREADS:-2}"
case $kind in post|children|healthz) ;; *) echo "kind must be post, children or healthz" >&2; exit 2 ;; esac
bench_server_bin
prefix=()
if [ "${EATMYDATA:-0}" = 1 ]; then
    command -v eatmydata >/dev/null || { echo "needs eatmydata: apt-get install -y eatmydata" >&2; exit 1; }
    prefix=(eatmydata)
fi
mkdir -p "$tmp/data"
start_server() {
    "${prefix[@]}" "$SERVER_BIN" serve --port "$port" --data-dir "$tmp/data" >> "$tmp/server.log" 2>&1 &
    spid=$!; pids+=($spid)
    bench_wait_up "$port"
}
start_server
eval "$(bench_seed "" "http://127.0.0.1:$port")"
base="http://127.0.0.1:$port"
if [ "${GROW:-0}" -gt 0 ]; then
    kill "$spid"; wait "$spid" 2>/dev/null || true
    # The sync bench's seeding: rows as the server writes them, in one transaction.
    python3 - "$(dirname "$0")/sync-bench.py" "$tmp/data/kidledger.sqlite" "$hh" "${children%%,*}" "$GROW" <<'PY'
import importlib.util, sqlite3, sys
spec = importlib.util.spec_from_file_location("sync_bench", sys.argv[1])
sync_bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sync_bench)
path, household, child, count = sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
(owner,) = sqlite3.connect(path).execute("SELECT owner_account_id FROM households WHERE id = ?", (household,)).fetchone()
sync_bench.seed(path, household, child, owner, count, "grow")
PY
    start_server
fi
args=()
bench_kind_args "$kind" "$base" "$hh" "${children%%,*}" "$token"
# Warm-up: a fresh database grows its files and indexes before anything is counted.
wrk -t"$threads" -c"$conns" -d3s "${args[@]}" -- warm >/dev/null
snapshot() {  # tid name utime stime, per thread
    for t in /proc/"$spid"/task/*; do
        read -r name < "$t/comm" || continue
        stat=$(cat "$t/stat" 2>/dev/null) || continue
        sw=$(awk '/^voluntary_ctxt_switches/ {v = $2} /^nonvoluntary_ctxt_switches/ {n = $2} END {print v + 0, n + 0}' \
             "$t/status" 2>/dev/null) || continue
        echo "$(basename "$t") ${name// /_} $(echo "${stat##*) }" | awk '{print $12, $13}') $sw"
    done
}
commits() { curl -fs "$base/metrics" | awk '/^kidledger_db_commits_total/ {print $2}'; }
c0=$(commits); sync; snapshot > "$tmp/a"
out=$(wrk -t"$threads" -c"$conns" -d"$duration" "${args[@]}" -- run)
sleep "${DRAIN:-0}"  # the checkpointer copies what the run left in the log meanwhile
snapshot > "$tmp/b"; c1=$(commits)
requests=$(awk '/requests in/ {print $1}' <<<"$out")
clk=$(getconf CLK_TCK)
grown=""; [ "${GROW:-0}" -gt 0 ] && grown=", ledger grown by $GROW"
echo "kidledger-server${prefix:+ under eatmydata}$grown, $kind, wrk -t$threads -c$conns -d$duration: $requests requests," \
     "$(( (${c1%.*} - ${c0%.*}) )) commits"
join <(sort "$tmp/a") <(sort "$tmp/b") | awk -v n="$requests" -v clk="$clk" '
    { name = $2; if (name ~ /overcommit|^kidledger-serv/) name = (name ~ /overcommit/ ? "dispatch" : "main");
      u = ($8 - $3) * 1e6 / clk / n; s = ($9 - $4) * 1e6 / clk / n
      v = ($10 - $5) / n; w = ($11 - $6) / n
      U[name] += u; S[name] += s; V[name] += v; W[name] += w; TU += u; TS += s; TV += v; TW += w }
    END { for (k in U) if (U[k] + S[k] >= 0.05)
              printf "%-16s %10.2f %10.2f %10.2f %10.3f %10.3f\n", k, U[k], S[k], U[k] + S[k], V[k], W[k]
          printf "~total %10.2f %10.2f %10.2f %10.3f %10.3f\n", TU, TS, TU + TS, TV, TW }' > "$tmp/rows"
printf "%-16s %10s %10s %10s %10s %10s\n" "thread" "user µs" "sys µs" "total µs" "sleeps" "preempted"
grep -v '^~total' "$tmp/rows" | sort -k4 -rn
awk '/^~total/ {printf "%-16s %10s %10s %10s %10s %10s\n", "all threads", $2, $3, $4, $5, $6}' "$tmp/rows"
