#!/usr/bin/env bash
# The PostgreSQL side of the suite: installs PostgreSQL and libpq from Debian when missing,
# builds with the `Postgres` trait (in a build folder of its own, so the default build's
# stays as it is), starts a throwaway cluster, runs the tests that need PostgreSQL with
# KIDLEDGER_TEST_DATABASE_URL set, and stops the cluster whatever happens.
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
# Besides the PostgreSQL-only tests, the App Store suites run their HTTP tests over PostgreSQL
# (TestServer puts each server in a schema of its own).
swift test --skip-build --traits Postgres --scratch-path "$scratch" \
  --filter "${POSTGRES_TEST_FILTER:-Postgres|MigrateCommand|NotificationTests|SubscriptionTests|EntitlementTokenTests}"
