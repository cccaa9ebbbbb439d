#!/usr/bin/env bash
# The schedule job's effect on durable writes (issue 45: ≤ 5 % slower): POST …/transactions
# at a fixed rate for a minute while the job catches up N schedules, against the same run
# with none due, alternating (bench/schedule-job-writes.py; the server is the schedule-job
# bench's serve mode, built in release). SQLite in a temporary folder; with
# `--traits Postgres` over a throwaway PostgreSQL cluster of its own (fsync on), a fresh
# database each run, the cluster's CPU counted too.
#
# Usage: bench/schedule-job-writes.sh [schedules=20000] [extra swift build flags, e.g. --traits Postgres]
# RATE (writes/s, default 200), DURATION (seconds, default 60), JOB_AT (default 5), PAIRS (default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-20000}"; shift || true
postgres=""
for a in "$@"; do [ "$a" = Postgres ] && postgres=1; done
scratch=(); [ -n "$postgres" ] && scratch=(--scratch-path .build-release-pg)
swift build -c release --product schedule-job-bench "${scratch[@]}" "$@" >/dev/null
bin="$(swift build -c release --show-bin-path "${scratch[@]}" "$@")/schedule-job-bench"
reset=""
if [ -n "$postgres" ]; then
  cluster=$(mktemp -d -u /tmp/kidledger-bench-pg.XXXXXX)
  trap 'bash scripts/pg-cluster.sh stop "$cluster"' EXIT
  KIDLEDGER_DATABASE_URL=$(bash scripts/pg-cluster.sh start "$cluster")
  KIDLEDGER_BENCH_PG_PID=$(head -1 "$cluster/data/postmaster.pid")
  export KIDLEDGER_DATABASE_URL KIDLEDGER_BENCH_PG_PID
  reset="psql '${KIDLEDGER_DATABASE_URL%/*}/postgres' -qAt -c 'DROP DATABASE IF EXISTS kidledger' -c 'CREATE DATABASE kidledger' >/dev/null"
fi
python3 bench/schedule-job-writes.py "$bin" --schedules "$n" --rate "${RATE:-200}" --seconds "${DURATION:-60}" \
  --job-at "${JOB_AT:-5}" --pairs "${PAIRS:-2}" --reset "$reset"
