#!/usr/bin/env bash
# Failover of PostgreSQL under load, on this machine: a primary and a standby made from it
# with pg_basebackup (two throwaway clusters on loopback), the schema migrated, two
# `kidledger-server serve` processes on one multi-host URL with target_session_attrs=read-write
# (server A reaches the primary through a relay, scripts/pg_failover.py, so the answers in
# flight to it can be lost; server B directly), 16 writers through both. Then the relay
# stops passing the primary's answers on, the primary is killed (SIGKILL, every process of
# it), the standby promoted (`pg_ctl promote`), the old primary left down; the writers retry
# until every write is answered, and the checks (scripts/pg_failover.py prints one line each):
#   - writes through each server succeed again after the promotion (and how soon);
#   - every answer is 201, 200 or 503, and every write is acknowledged in the end;
#   - no write is applied twice, no row is a write nobody sent;
#   - synchronous standby: every acknowledged write is on the new primary, and group-commit
#     batches that committed while their answers were lost were retried and stored once;
#   - balances through both servers equal the sums; `kidledger-server check` is clean;
#   - a long-poll parked on B is woken by a write through A after the failover;
#   - then the old primary, rebuilt as a standby of the new one, runs again on its old port
#     (the first host of B's URL): it streams from the new primary, and writes through A, B
#     and a server started now on B's URL land on the new primary.
# With an asynchronous standby the lost acknowledged writes are counted, not failed on.
#
#   scripts/pg-failover.sh            # sync, then async
#   scripts/pg-failover.sh sync       # the synchronous standby only (the test command's part)
#
# Ends with `failover: N passed, N failed` (every check of every run). Installs PostgreSQL and
# libpq from Debian when missing; builds the server with the Postgres trait unless SERVER_BIN
# is set. Everything runs in a temporary folder and is stopped and removed on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
modes=("$@")
[ ${#modes[@]} -gt 0 ] || modes=(sync async)
for m in "${modes[@]}"; do
    case "$m" in sync|async) ;; *) echo "usage: $0 [sync|async]..." >&2; exit 2 ;; esac
done

. scripts/test-servers.sh
find_pg
if [ -z "$pgbin" ] || ! pkg-config --exists libpq 2>/dev/null || ! command -v jq >/dev/null || ! command -v curl >/dev/null; then
    echo "installing PostgreSQL, libpq-dev, curl and jq" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql libpq-dev curl jq >/dev/null
    find_pg
fi
need_server_bin

passed=0
failed=0
tmp=""
pids=()
cleanup() {
    set +e
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
    pids=()
    if [ -n "$tmp" ]; then
        [ -f "$tmp/standby/data/postmaster.pid" ] && as_owner "$pgbin/pg_ctl" -D "$tmp/standby/data" -m immediate -w stop >/dev/null 2>&1
        bash "$repo/scripts/pg-cluster.sh" stop "$tmp/primary" >/dev/null 2>&1
        rm -rf "$tmp"
    fi
    tmp=""
}
finish() {
    local status=$?
    cleanup
    [ "$status" = 0 ] || [ "$failed" -gt 0 ] || failed=$((failed + 1))
    echo "failover: $passed passed, $failed failed"
    [ "$failed" = 0 ] && [ "$status" = 0 ]
}
trap finish EXIT
trap 'exit 130' INT TERM

step() { printf '==> %s\n' "$*" >&2; }

# rejoin: the old primary, rebuilt as a standby of the new one (pg_basebackup, as a failover
# tool would with pg_rewind), starts again on its old port — the first host of server B's URL.
# Checks that it streams from the new primary, that writes through A and B still land on the
# new primary, and that a server started now on B's URL skips the old primary (read-only)
# and writes to the new one. Uses the caller's ports, hosts_b, standby_port, primary_port.
rejoin() {
    step "[$mode] the old primary rejoins as a standby of the new primary, on its old port"
    local old=$tmp/primary/data state="" family token household child code n ok
    rm -rf "$old"
    as_owner "$pgbin/pg_basebackup" -h 127.0.0.1 -p "$standby_port" -U postgres -D "$old" -X stream -c fast -R >/dev/null || return 1
    cat >>"$old/postgresql.auto.conf" <<CONF
primary_conninfo = 'host=127.0.0.1 port=$standby_port user=postgres application_name=old_primary'
synchronous_standby_names = ''
CONF
    as_owner "$pgbin/pg_ctl" -D "$old" -l "$tmp/primary/server.log" -o "-p $primary_port" -w -t 60 start >/dev/null || return 1
    local psql_s=("$pgbin/psql" -h 127.0.0.1 -p "$standby_port" -U postgres -d kidledger -qAt)
    for _ in $(seq 1 200); do
        state=$("${psql_s[@]}" -c "SELECT state FROM pg_stat_replication WHERE application_name = 'old_primary'")
        [ "$state" = streaming ] && break
        sleep 0.05
    done
    ok=1; [ "$state" = streaming ] && ok=0
    check "$ok" "the old primary runs again, as a standby streaming from the new primary"

    family=$(cat "$tmp/family.json")
    token=$(jq -r .token <<<"$family"); household=$(jq -r .household <<<"$family"); child=$(jq -r .child <<<"$family")
    serve_test c --database-url "postgres://postgres@$hosts_b/kidledger?target_session_attrs=read-write"
    ports+=("$(listening_port c)")
    for n in 0 1 2; do
        code=$(curl -s -o /dev/null -w '%{http_code}' -m 20 -X POST "http://127.0.0.1:${ports[$n]}/v1/households/$household/children/$child/transactions" \
            -H "authorization: Bearer $token" -H 'content-type: application/json' -d "{\"amountCents\":1,\"note\":\"rejoined-$n\"}")
        [ "$code" = 201 ] || echo "write through server $n after the rejoin: HTTP $code" >&2
    done
    ok=1
    [ "$("${psql_s[@]}" -c "SELECT count(*) FROM transactions WHERE household_id = '$household' AND note LIKE 'rejoined-%'")" = 3 ] && ok=0
    check "$ok" "with the old primary back as a standby, writes through A, B and a server started now on B's URL (old primary first) land on the new primary"
}

run() { # sync|async
    local mode=$1 started
    started=$(date +%s.%N)
    tmp=$(mktemp -d /tmp/kidledger-failover.XXXXXX)
    chmod 755 "$tmp"

    step "[$mode] primary cluster"
    local primary_url primary_port standby_port
    primary_url=$(bash scripts/pg-cluster.sh start "$tmp/primary") || return 1
    primary_port=$(cat "$tmp/primary/port")
    local psql_p=("$pgbin/psql" -h 127.0.0.1 -p "$primary_port" -U postgres -d kidledger)
    if [ "$mode" = sync ]; then
        # A commit is acknowledged once the standby named `standby` has flushed it.
        as_owner "${psql_p[@]}" -qAt -c "ALTER SYSTEM SET synchronous_standby_names = 'standby'" -c "SELECT pg_reload_conf()" >/dev/null || return 1
    fi

    step "[$mode] standby from pg_basebackup"
    mkdir -p "$tmp/standby"
    [ "$(id -u)" != 0 ] || chown postgres: "$tmp/standby"
    as_owner "$pgbin/pg_basebackup" -h 127.0.0.1 -p "$primary_port" -U postgres -D "$tmp/standby/data" -X stream -c fast -R >/dev/null || return 1
    cat >>"$tmp/standby/data/postgresql.auto.conf" <<CONF
primary_conninfo = 'host=127.0.0.1 port=$primary_port user=postgres application_name=standby'
unix_socket_directories = '$tmp/standby'
# Promoted, it has no standby of its own: waiting for one would hold every commit (pg_basebackup
# copied the primary's setting; a failover tool such as Patroni manages it the same way).
synchronous_standby_names = ''
CONF
    standby_port=$(free_port)
    as_owner "$pgbin/pg_ctl" -D "$tmp/standby/data" -l "$tmp/standby/server.log" -o "-p $standby_port" -w -t 60 start >/dev/null || return 1
    local want=async state=""
    [ "$mode" = sync ] && want=sync
    for _ in $(seq 1 200); do
        state=$(as_owner "${psql_p[@]}" -qAt -c "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby' AND state = 'streaming'")
        [ "$state" = "$want" ] && break
        sleep 0.05
    done
    [ "$state" = "$want" ] || { echo "the standby is not streaming as $want (state '$state')" >&2; return 1; }

    step "[$mode] migrate; relay in front of the primary; two servers"
    "$SERVER_BIN" migrate --database-url "$primary_url" >/dev/null || return 1
    python3 scripts/pg_failover.py relay "$tmp/relay.port" "$primary_port" &
    pids+=($!)
    local relay_pid=$!
    for _ in $(seq 1 100); do [ -f "$tmp/relay.port" ] && break; sleep 0.05; done
    local relay_port
    relay_port=$(cat "$tmp/relay.port")
    local hosts_a="127.0.0.1:$relay_port,127.0.0.1:$standby_port" hosts_b="127.0.0.1:$primary_port,127.0.0.1:$standby_port"
    local ports=() n
    serve_test a --database-url "postgres://postgres@$hosts_a/kidledger?target_session_attrs=read-write"
    serve_test b --database-url "postgres://postgres@$hosts_b/kidledger?target_session_attrs=read-write"
    for n in a b; do ports+=("$(listening_port "$n")"); done
    [ -n "${ports[0]}" ] && [ -n "${ports[1]}" ] || { echo "a server did not start" >&2; cat "$tmp"/server-*.log >&2; return 1; }

    step "[$mode] 16 writers, kill -9 of the primary, promotion"
    local out=$tmp/drive.log status=0
    python3 scripts/pg_failover.py drive --mode "$mode" --part "failover-$mode" --a "http://127.0.0.1:${ports[0]}" --b "http://127.0.0.1:${ports[1]}" \
        --primary-data "$tmp/primary/data" --relay-pid "$relay_pid" --relay-port-file "$tmp/relay.port" \
        --promote "$(printf '%q ' "${owner[@]}" "$pgbin/pg_ctl" -D "$tmp/standby/data" -w -t 60 promote)" \
        --psql "$(printf '%q ' "$pgbin/psql" -h 127.0.0.1 -p "$standby_port" -U postgres -d kidledger)" \
        --check "$(printf '%q ' "$SERVER_BIN" check --database-url "postgres://postgres@127.0.0.1:$standby_port/kidledger")" \
        --family-file "$tmp/family.json" 2>&1 | tee "$out" || status=$?
    local before=$failed
    count_part "failover-$mode" "$out" "$status"

    rejoin || check 1 "the old primary rebuilt and started as a standby of the new primary"
    if [ "$failed" -gt "$before" ]; then
        for n in a b c; do [ -f "$tmp/server-$n.log" ] || continue; echo "--- server $n log (tail)" >&2; tail -n 15 "$tmp/server-$n.log" >&2; done
    fi
    step "[$mode] done in $(python3 -c "print(f'{$(date +%s.%N) - $started:.1f}')") s"
    cleanup
}

for m in "${modes[@]}"; do run "$m" || failed=$((failed + 1)); cleanup; done
