#!/usr/bin/env bash
# kidledger behind pgbouncer in transaction pooling mode, on this machine: a throwaway
# PostgreSQL cluster (scripts/pg-cluster.sh), Debian's pgbouncer in front of it
# (`pool_mode = transaction`, 4 server sessions for the 2 × 16 sessions of the servers, so
# consecutive transactions of one server session run on different PostgreSQL sessions),
# and two `kidledger-server serve` processes with `--database-url` the pooler and
# `--database-direct-url` PostgreSQL itself (LISTEN and the migration lock). Checks:
#   - a server given only the pooler's URL refuses to start and says what to set instead,
#     whether pgbouncer refuses libpq's `options` startup parameter (its default) or ignores
#     it; so does one whose direct URL is the pooler;
#   - 16 writers through both servers (scripts/pg_failover.py drive --mode pooled): every
#     answer 201/200/503, every acknowledged write stored once, balances equal the sums,
#     `kidledger-server check` clean, a long-poll on one server woken by a write through the
#     other (LISTEN on the direct session, NOTIFY through the pooler);
#   - the OpenAPI contract tests (scripts/contract-test.sh, a short run) pass
#     against a server through pgbouncer;
#   - the servers' sessions were multiplexed: more client sessions than server sessions.
#
# Ends with `pgbouncer: N passed, N failed`. Installs PostgreSQL, libpq and pgbouncer from
# Debian when missing; builds the server with the Postgres trait unless SERVER_BIN is set.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

. scripts/test-servers.sh
find_pg
if [ -z "$pgbin" ] || ! pkg-config --exists libpq 2>/dev/null || [ ! -x /usr/sbin/pgbouncer ]; then
    echo "installing PostgreSQL, libpq-dev and pgbouncer" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql libpq-dev pgbouncer >/dev/null
    find_pg
fi
need_server_bin

passed=0
failed=0
tmp=$(mktemp -d /tmp/kidledger-pgbouncer.XXXXXX)
chmod 755 "$tmp"
[ "$(id -u)" != 0 ] || chown postgres: "$tmp"
pids=()
finish() {
    local status=$?
    set +e
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
    for f in "$tmp"/pgbouncer-*.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null; done
    if [ "$failed" -gt 0 ] || [ "$status" != 0 ]; then
        for f in "$tmp"/server-*.log "$tmp"/pgbouncer-*.log; do [ -f "$f" ] && { echo "--- $f" >&2; tail -n 15 "$f" >&2; }; done
    fi
    bash "$repo/scripts/pg-cluster.sh" stop "$tmp/pg" >/dev/null 2>&1
    rm -rf "$tmp"
    [ "$status" = 0 ] || [ "$failed" -gt 0 ] || failed=1
    echo "pgbouncer: $passed passed, $failed failed"
    [ "$failed" = 0 ]
}
trap finish EXIT
trap 'exit 130' INT TERM

step() { printf '==> %s\n' "$*" >&2; }

step "PostgreSQL"
direct=$(bash scripts/pg-cluster.sh start "$tmp/pg")
pg_port=$(cat "$tmp/pg/port")

# pgbouncer NAME IGNORE-OPTIONS: one pgbouncer in transaction mode; prints its port.
pgbouncer() {
    local name=$1 port
    port=$(free_port)
    echo '"postgres" ""' >"$tmp/userlist.txt"
    cat >"$tmp/pgbouncer-$name.ini" <<INI
[databases]
kidledger = host=127.0.0.1 port=$pg_port dbname=kidledger user=postgres

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = trust
auth_file = $tmp/userlist.txt
admin_users = postgres
pool_mode = transaction
default_pool_size = 4
max_client_conn = 500
logfile = $tmp/pgbouncer-$name.log
pidfile = $tmp/pgbouncer-$name.pid
${2:+ignore_startup_parameters = extra_float_digits, options}
INI
    "${owner[@]}" /usr/sbin/pgbouncer -q -d "$tmp/pgbouncer-$name.ini"
    for _ in $(seq 1 100); do "$pgbin/pg_isready" -q -h 127.0.0.1 -p "$port" && break; sleep 0.05; done
    echo "$port"
}
step "pgbouncer in transaction mode (one that refuses the options startup parameter, one that ignores it)"
strict_port=$(pgbouncer strict "")
lenient_port=$(pgbouncer lenient 1)
# The servers go through the one configured as Debian ships it (refusing `options`).
pooled=postgres://postgres@127.0.0.1:$strict_port/kidledger
lenient=postgres://postgres@127.0.0.1:$lenient_port/kidledger
"$SERVER_BIN" migrate --database-url "$direct" >/dev/null

# refused URL-ARGS...: prints 0 when the server exits (non-zero) within 20 s naming the direct URL flag.
refused() {
    local out=$tmp/refused.log status=0
    mkdir -p "$tmp/keys-refused"
    timeout 20 "$SERVER_BIN" serve --host 127.0.0.1 --port 0 --data-dir "$tmp/keys-refused" --log-level warning "$@" >"$out" 2>&1 || status=$?
    if [ "$status" != 0 ] && [ "$status" != 124 ] && grep -q "reaches a connection pooler" "$out" \
        && grep -q -- "--database-direct-url" "$out"; then
        sed 's/^/    /' "$out" >&2
        echo 0
    else
        cat "$out" >&2
        echo 1
    fi
}
check "$(refused --database-url "$pooled")" \
    "a server given only a pgbouncer URL (pgbouncer refusing the options parameter) refuses to start and names --database-direct-url"
check "$(refused --database-url "$lenient")" \
    "a server given only a pgbouncer URL (pgbouncer ignoring the options parameter) refuses to start and names --database-direct-url"
check "$(refused --database-url "$pooled" --database-direct-url "$lenient")" "a server whose --database-direct-url is the pooler refuses to start"

step "two servers through pgbouncer, LISTEN and migrations direct"
ports=()
for n in a b; do serve_test "$n" --database-url "$pooled" --database-direct-url "$direct"; done
for n in a b; do ports+=("$(listening_port "$n")"); done
[ -n "${ports[0]}" ] && [ -n "${ports[1]}" ] || { echo "a server did not start" >&2; failed=$((failed + 1)); exit 1; }

step "16 writers through both servers"
status=0
python3 scripts/pg_failover.py drive --mode pooled --part pooled --before 2 --after 1 \
    --a "http://127.0.0.1:${ports[0]}" --b "http://127.0.0.1:${ports[1]}" \
    --psql "$(printf '%q ' "$pgbin/psql" -h 127.0.0.1 -p "$pg_port" -U postgres -d kidledger)" \
    --check "$(printf '%q ' "$SERVER_BIN" check --database-url "$direct")" 2>&1 | tee "$tmp/drive.log" || status=$?
count_part pooled "$tmp/drive.log" "$status"

step "the OpenAPI contract tests against a server through pgbouncer"
# Every operation (scripts/contract-test.sh; a shorter run than the test command's own: its
# examples, fuzzing and stateful phases, 5 examples each): the storage's statements through
# transaction pooling.
status=0
KIDLEDGER_DATABASE_URL=$pooled KIDLEDGER_DATABASE_DIRECT_URL=$direct KIDLEDGER_SERVER_BIN=$SERVER_BIN \
    KIDLEDGER_CONTRACT_EXAMPLES=5 KIDLEDGER_CONTRACT_PHASES=examples,fuzzing,stateful KIDLEDGER_CONTRACT_REPORT=$tmp/contract \
    bash scripts/contract-test.sh >"$tmp/contract.log" 2>&1 || status=$?
operations=$(cat "$tmp"/contract/junit-*.xml 2>/dev/null | grep -o '<testcase ' | wc -l)
[ "$status" = 0 ] || tail -n 40 "$tmp/contract.log"
check "$status" "the contract tests through pgbouncer ($operations operations, schemathesis)"

# Multiplexed: the servers hold more sessions with pgbouncer than pgbouncer holds with PostgreSQL.
admin=("$pgbin/psql" -h 127.0.0.1 -p "$strict_port" -U postgres -d pgbouncer -qAt)
clients=$("${admin[@]}" -c "SHOW CLIENTS" | grep -c '|kidledger|' || true)
servers=$("${admin[@]}" -c "SHOW SERVERS" | grep -c '|kidledger|' || true)
s=1
if [ "$clients" -gt "$servers" ] && [ "$servers" -ge 1 ] && [ "$servers" -le 4 ]; then s=0; fi
check "$s" "transaction pooling: $clients client sessions of the servers on $servers PostgreSQL sessions"
