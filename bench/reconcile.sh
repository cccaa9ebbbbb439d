#!/usr/bin/env bash
# Reconciling after a restore, at size: a household of N transactions (default 100,000) over
# two children, backed up, 3 written after the backup, restored; then the owner's device
# reconciles (3 queued and pushed) and, once healed, reconciles again with nothing missing.
# Prints the test's figures line for the nothing-missing pass:
#   {"event":"reconcile_nothing_missing","transactions":N,"ms":…,"requests":1,"bytes":…}
# (time of the device's reconciliation pass: hashing its ids, one request, the server's
# summaries; bytes: request and response bodies, paths and headers). Debug build, like the
# test suite: swift build --build-tests first.
# KIDLEDGER_RECONCILE_TRANSACTIONS=N overrides the size; KIDLEDGER_TEST_DATABASE_URL (with a
# Postgres-trait build, SCRATCH=.build-postgres) runs it over PostgreSQL.
set -euo pipefail
cd "$(dirname "$0")/.."
export KIDLEDGER_RECONCILE_TRANSACTIONS=${KIDLEDGER_RECONCILE_TRANSACTIONS:-100000}
scratch=${SCRATCH:-.build}
traits=()
[ "$scratch" = ".build-postgres" ] && traits=(--traits Postgres)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
swift test --skip-build "${traits[@]}" --scratch-path "$scratch" \
  --filter 'RestoreReconcileTests/testThreeMissingOfManyMovesOnlyThose' >"$log" 2>&1 || status=$?
grep -E '"event":"reconcile_nothing_missing"' "$log" || { tail -30 "$log"; exit 1; }
grep -E 'Executed [0-9]+ test' "$log" | tail -1
exit "$status"
