#!/usr/bin/env bash
# The schedule payment job's catch-up: N schedules (default 20,000) that all fall due in the
# same minute, paid by one run of the job in the test process (SQLite; for PostgreSQL run it
# through scripts/test-postgres.sh with POSTGRES_TEST_FILTER=ScheduleJobBenchmark and the
# variable set). Prints the process's CPU time for the run (every thread: the job, the
# writer, the committer) and its wall time. Build first: swift build --build-tests.
#
# Usage: bench/schedule-job.sh [schedules=20000]
set -euo pipefail
cd "$(dirname "$0")/.."
KIDLEDGER_BENCH_SCHEDULES="${1:-20000}" swift test --skip-build --filter ScheduleJobBenchmark 2>&1 | grep -E "schedule-job:|error|Executed"
