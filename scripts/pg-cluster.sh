#!/usr/bin/env bash
# A throwaway PostgreSQL cluster in a folder of its own, from Debian's packages.
#
#   scripts/pg-cluster.sh start DIR   initdb + start on a free loopback port (and a unix
#                                     socket in DIR); prints the database URL on stdout
#   scripts/pg-cluster.sh stop DIR    stops it and removes DIR
#   scripts/pg-cluster.sh url DIR     prints the URL of a running cluster
#
# Run as root, the cluster belongs to the `postgres` user (initdb refuses root). It has a
# database `kidledger`, trust authentication, and listens on 127.0.0.1 only.
# PG_CLUSTER_FSYNC=off turns fsync off (faster tests; never for durability checks).
set -euo pipefail

cmd=${1:-}; dir=${2:-}
if [ -z "$cmd" ] || [ -z "$dir" ]; then
  echo "usage: $0 start|stop|url DIR" >&2; exit 2
fi

. "$(dirname "$0")/pg-lib.sh"

case "$cmd" in
  start)
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    if [ "$(id -u)" = 0 ]; then chown postgres: "$dir"; fi
    as_owner "$pgbin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 --no-instructions >"$dir/initdb.log" 2>&1 \
      || { cat "$dir/initdb.log" >&2; exit 1; }
    cat >>"$dir/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
max_connections = 300
shared_buffers = 128MB
fsync = ${PG_CLUSTER_FSYNC:-on}
log_min_messages = warning
CONF
    start_on_free_port "$dir"
    port=$(cat "$dir/port")
    as_owner "$pgbin/psql" -h "$dir" -p "$port" -U postgres -d postgres -qAt -c "CREATE DATABASE kidledger" >/dev/null
    echo "postgres://postgres@127.0.0.1:$port/kidledger"
    ;;
  url)
    echo "postgres://postgres@127.0.0.1:$(cat "$dir/port")/kidledger"
    ;;
  stop)
    if [ -d "$dir/data" ]; then
      as_owner "$pgbin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
    fi
    rm -rf "$dir"
    ;;
  *)
    echo "usage: $0 start|stop|url DIR" >&2; exit 2
    ;;
esac
