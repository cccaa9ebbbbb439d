#!/usr/bin/env bash
# An asynchronous standby of a throwaway cluster (scripts/pg-cluster.sh), for failover tests.
#
#   scripts/pg-standby.sh start PRIMARY_DIR DIR   pg_basebackup -R of the primary into DIR,
#                                                 started on a free loopback port; prints its URL
#   scripts/pg-standby.sh detach DIR              stops the standby receiving WAL (it keeps
#                                                 serving reads): what the primary commits from
#                                                 now on never reaches it
#   scripts/pg-standby.sh crash DIR               stops a cluster at once (pg_ctl -m immediate),
#                                                 as a machine that died
#   scripts/pg-standby.sh promote DIR             promotes the standby to a primary
#   scripts/pg-standby.sh stop DIR                stops it and removes DIR
set -euo pipefail

cmd=${1:-}
. "$(dirname "$0")/pg-lib.sh"
psql_at() { as_owner "$pgbin/psql" -h "$1" -p "$(cat "$1/port")" -U postgres -d postgres -qAt -c "$2"; }

case "$cmd" in
  start)
    primary=$(cd "${2:?primary folder}" && pwd); dir=${3:?standby folder}
    mkdir -p "$dir"; dir=$(cd "$dir" && pwd)
    if [ "$(id -u)" = 0 ]; then chown postgres: "$dir"; fi
    as_owner "$pgbin/pg_basebackup" -h 127.0.0.1 -p "$(cat "$primary/port")" -U postgres -D "$dir/data" -R -X stream \
      >"$dir/basebackup.log" 2>&1 || { cat "$dir/basebackup.log" >&2; exit 1; }
    # The copied configuration names the primary's socket folder; the standby has its own.
    echo "unix_socket_directories = '$dir'" >>"$dir/data/postgresql.conf"
    start_on_free_port "$dir"
    port=$(cat "$dir/port")
    echo "postgres://postgres@127.0.0.1:$port/kidledger"
    ;;
  detach)
    dir=${2:?standby folder}
    psql_at "$dir" "ALTER SYSTEM SET primary_conninfo = ''" >/dev/null
    psql_at "$dir" "SELECT pg_reload_conf()" >/dev/null
    for _ in $(seq 1 100); do
      [ "$(psql_at "$dir" "SELECT count(*) FROM pg_stat_wal_receiver")" = 0 ] && exit 0
      sleep 0.1
    done
    echo "pg-standby: the WAL receiver did not stop" >&2; exit 1
    ;;
  crash)
    as_owner "$pgbin/pg_ctl" -D "${2:?folder}/data" -m immediate -w stop >/dev/null
    ;;
  promote)
    as_owner "$pgbin/pg_ctl" -D "${2:?standby folder}/data" -w promote >/dev/null
    ;;
  stop)
    dir=${2:?folder}
    if [ -d "$dir/data" ]; then as_owner "$pgbin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true; fi
    rm -rf "$dir"
    ;;
  *)
    sed -n '2,13p' "$0" >&2; exit 2
    ;;
esac
