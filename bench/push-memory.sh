#!/usr/bin/env bash
# Push registrations and memory at rest (a figure, not a timed test): the server's resident
# memory, idle after start and a few requests, on an empty database and on one holding
# DEVICES push registrations (device tokens with a registered APNs key) across HOUSEHOLDS
# households (each owner's account holds DEVICES/HOUSEHOLDS tokens), seeded by SQL into the
# stopped server's database. The server keeps nothing per registration in memory; this
# measures that claim. Target: within +50 MB at 100,000 devices over 20,000 households.
# Usage: bench/push-memory.sh [devices=100000] [households=20000]
set -euo pipefail
devices="${1:-100000}"
households="${2:-20000}"
port="${OUR_PORT:-18393}"
source "$(dirname "$0")/lib.sh"
bench_server_bin
command -v sqlite3 >/dev/null || { echo "needs the sqlite3 command: apt-get install -y sqlite3" >&2; exit 1; }
gateway="http://127.0.0.1:9/_matrix/push/v1/notify"

# Starts the server on DIR, makes a few requests, waits, prints its RSS in kB, stops it.
rss_at_rest() {
  local dir=$1
  "$SERVER_BIN" serve --port "$port" --data-dir "$dir" --quiet --push-gateway "$gateway" > "$tmp/server.log" 2>&1 &
  local pid=$!
  pids+=("$pid")
  bench_wait_up "$port" 200 0.1
  for _ in 1 2 3 4 5; do curl -fs "http://127.0.0.1:$port/healthz" >/dev/null; curl -fs "http://127.0.0.1:$port/readyz" >/dev/null || true; done
  sleep 2
  awk '/^VmRSS:/ {print $2}' "/proc/$pid/status"
  kill "$pid"; wait "$pid" 2>/dev/null || true
}

empty="$tmp/empty"; seeded="$tmp/seeded"
mkdir -p "$empty" "$seeded"
before=$(rss_at_rest "$empty")
# The seeded folder starts as a copy of a freshly migrated database.
rss_at_rest "$seeded" >/dev/null
per=$(( devices / households ))
now=$(( $(date +%s) * 1000 ))
sqlite3 "$seeded/kidledger.sqlite" <<SQL
PRAGMA foreign_keys = OFF;
BEGIN;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $households)
INSERT INTO accounts (id, handle, display_name, created_at)
  SELECT printf('00000000-0000-4000-8000-%012d', i), 'parent' || i, 'Parent ' || i, $now FROM n;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $households)
INSERT INTO households (id, name, currency, owner_account_id, created_at, modified_at, change_tag, incarnation)
  SELECT printf('00000000-0000-4000-9000-%012d', i), 'Family ' || i, 'EUR', printf('00000000-0000-4000-8000-%012d', i),
         $now, $now, 'tag' || i, 1 FROM n;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $devices)
INSERT INTO tokens (id, account_id, hash, device_name, created_at)
  SELECT printf('00000000-0000-4000-a000-%012d', i), printf('00000000-0000-4000-8000-%012d', (i - 1) / $per + 1),
         randomblob(32), 'Phone ' || i, $now FROM n;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $devices)
INSERT INTO push_registrations (token_id, account_id, app_id, push_key, gateway, registered_at)
  SELECT printf('00000000-0000-4000-a000-%012d', i), printf('00000000-0000-4000-8000-%012d', (i - 1) / $per + 1),
         'com.example.kidmoney', lower(hex(randomblob(32))), '$gateway', $now FROM n;
COMMIT;
SQL
registered=$(sqlite3 "$seeded/kidledger.sqlite" "SELECT count(*) FROM push_registrations")
after=$(rss_at_rest "$seeded")
size=$(du -k "$seeded/kidledger.sqlite" | cut -f1)
echo "push registrations: $registered over $households households (database $((size / 1024)) MB)"
echo "RSS at rest: empty $((before / 1024)) MB, with them $((after / 1024)) MB: +$(((after - before) / 1024)) MB (target +50 MB)"
