#!/usr/bin/env bash
# The PostgreSQL side of the suite: installs PostgreSQL and libpq from Debian when missing,
# builds with the `Postgres` trait (in a build folder of its own, so the default build's
# stays as it is), starts a throwaway cluster, runs the server's XCTest suite with
# KIDLEDGER_TEST_DATABASE_URL set — every test server then keeps its data in a fresh schema
# of that database, so the same HTTP tests run as against SQLite; tests of what only SQLite
# has skip with the reason — and stops the cluster whatever happens.
#
# POSTGRES_TEST_FILTER   swift test --filter (default: the server's and PostgresKit's tests, and the
#                        devices' restore tests: the server healed, after a failover too)
# POSTGRES_CONTRACT_REPORT  when set, also runs the schemathesis contract tests
#                        (scripts/contract-test.sh) against a server over the cluster, with
#                        their JUnit report and their exit status (file exit-status) in that
#                        folder; the script's own status is the XCTest run's
# POSTGRES_STATEMENTS    when set, the cluster logs every statement (log_statement = all) and
#                        the distinct statements of the storage's sessions are written to
#                        this file at the end (scripts/household_scope.py extract), for the
#                        household-scope check (scripts/household_scope.py check)
set -euo pipefail
cd "$(dirname "$0")/.."

have_server=""
for v in 15 16 17 14; do [ -x "/usr/lib/postgresql/$v/bin/initdb" ] && have_server=1; done
if [ -z "$have_server" ] || ! pkg-config --exists libpq 2>/dev/null; then
  echo "installing PostgreSQL and libpq-dev"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-15 libpq-dev \
    || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql libpq-dev
fi

scratch=.build-postgres
swift build --build-tests --traits Postgres --scratch-path "$scratch"

cluster=$(mktemp -d -u /tmp/kidledger-pg.XXXXXX)
trap 'bash scripts/pg-cluster.sh stop "$cluster"' EXIT
KIDLEDGER_TEST_DATABASE_URL=$(bash scripts/pg-cluster.sh start "$cluster")
export KIDLEDGER_TEST_DATABASE_URL
# The cluster's folder: the multi-process tests restart PostgreSQL under load.
export KIDLEDGER_TEST_PG_CLUSTER="$cluster"
echo "PostgreSQL tests against $KIDLEDGER_TEST_DATABASE_URL"
if [ -n "${POSTGRES_STATEMENTS:-}" ]; then
  # Each statement with the session's application_name; parameter values left out.
  psql "$KIDLEDGER_TEST_DATABASE_URL" -qAt -c "ALTER SYSTEM SET log_statement = 'all'" \
    -c "ALTER SYSTEM SET log_line_prefix = '%m [%p] %a: '" -c "ALTER SYSTEM SET log_parameter_max_length = 0" \
    -c "SELECT pg_reload_conf()" >/dev/null
fi
# Every server test: TestServer puts each server in a schema of its own.
status=0
swift test --skip-build --traits Postgres --scratch-path "$scratch" \
  --filter "${POSTGRES_TEST_FILTER:-LedgerServerTests|PostgresKitTests|RestoreReconcileTests|CLIRestoreTests}" || status=$?

if [ -n "${POSTGRES_CONTRACT_REPORT:-}" ]; then
  # The contract tests against a server over PostgreSQL (the variable selects it).
  echo "contract tests against a server over PostgreSQL"
  contract=0
  KIDLEDGER_DATABASE_URL=$KIDLEDGER_TEST_DATABASE_URL KIDLEDGER_CONTRACT_REPORT=$POSTGRES_CONTRACT_REPORT \
    KIDLEDGER_SERVER_BIN="$scratch/debug/kidledger-server" bash scripts/contract-test.sh || contract=$?
  mkdir -p "$POSTGRES_CONTRACT_REPORT"
  echo "$contract" >"$POSTGRES_CONTRACT_REPORT/exit-status"
fi
if [ -n "${POSTGRES_STATEMENTS:-}" ]; then
  python3 scripts/household_scope.py extract "$cluster/server.log" >"$POSTGRES_STATEMENTS" || status=1
  echo "$(wc -l <"$POSTGRES_STATEMENTS") distinct statements of the storage logged to $POSTGRES_STATEMENTS"
fi
exit "$status"
