#!/usr/bin/env bash
# The schedule payment job's catch-up: N schedules (default 20,000) that all fall due in the
# same minute, paid by one run of the job (bench/schedule-job/main.swift, built in release).
# Prints the process's CPU time for the run (every thread: the job, the writer, the
# completions) and its wall time. SQLite in a temporary folder; with KIDLEDGER_DATABASE_URL
# set (a build with the Postgres trait), that database — the PostgreSQL server's own CPU
# is not counted.
#
# Usage: bench/schedule-job.sh [schedules=20000] [extra swift build flags, e.g. --traits Postgres]
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-20000}"; shift || true
swift build -c release --product schedule-job-bench "$@" >/dev/null
"$(swift build -c release --show-bin-path "$@")/schedule-job-bench" "$n"
