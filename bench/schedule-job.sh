#!/usr/bin/env bash
# The schedule payment job's catch-up: N schedules (default 20,000) that all fall due in the
# same minute, paid by one run of the job (bench/schedule-job/main.swift, built in release).
# Prints the process's CPU time for the run (every thread: the job, the writer, the
# completions) and its wall time. SQLite in a temporary folder. With `--traits Postgres`
# the bench runs over a throwaway PostgreSQL cluster of its own (scripts/pg-cluster.sh,
# fsync on) and also prints the CPU of the cluster's processes (the backends serving it, the
# WAL writer, the checkpointer: the postmaster and its children, from /proc/<pid>/stat);
# with KIDLEDGER_DATABASE_URL set, that database instead (its CPU counted only when
# KIDLEDGER_BENCH_PG_PID names its postmaster).
#
# Usage: bench/schedule-job.sh [schedules=20000] [extra swift build flags, e.g. --traits Postgres]
# RUNS=k runs the bench k times (default 1), each over a fresh database.
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-20000}"; shift || true
postgres=""
for a in "$@"; do [ "$a" = Postgres ] && postgres=1; done
scratch=(); [ -n "$postgres" ] && scratch=(--scratch-path .build-release-pg)
swift build -c release --product schedule-job-bench "${scratch[@]}" "$@" >/dev/null
bin="$(swift build -c release --show-bin-path "${scratch[@]}" "$@")/schedule-job-bench"
if [ -n "$postgres" ] && [ -z "${KIDLEDGER_DATABASE_URL:-}" ]; then
  cluster=$(mktemp -d -u /tmp/kidledger-bench-pg.XXXXXX)
  trap 'bash scripts/pg-cluster.sh stop "$cluster"' EXIT
  KIDLEDGER_DATABASE_URL=$(bash scripts/pg-cluster.sh start "$cluster")
  KIDLEDGER_BENCH_PG_PID=$(head -1 "$cluster/data/postmaster.pid")
  export KIDLEDGER_DATABASE_URL KIDLEDGER_BENCH_PG_PID
fi
for _ in $(seq "${RUNS:-1}"); do
  if [ -n "${cluster:-}" ]; then
    # A fresh database each run (the job reads every due schedule of the database).
    psql "${KIDLEDGER_DATABASE_URL%/*}/postgres" -qAt -c "DROP DATABASE IF EXISTS kidledger" -c "CREATE DATABASE kidledger" >/dev/null
  fi
  "$bin" "$n"
done
