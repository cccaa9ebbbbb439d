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

pgbin=""
for v in 15 16 17 14; do
  if [ -x "/usr/lib/postgresql/$v/bin/initdb" ]; then pgbin="/usr/lib/postgresql/$v/bin"; break; fi
done
if [ -z "$pgbin" ]; then echo "pg-cluster: PostgreSQL server binaries not found (apt-get install postgresql)" >&2; exit 1; fi

as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

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
    started=""
    for _ in 1 2 3 4 5 6 7 8; do
      port=$(( 20000 + (RANDOM % 20000) ))
      if as_owner "$pgbin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -o "-p $port" -w -t 60 start >/dev/null 2>&1; then
        started=1; break
      fi
    done
    if [ -z "$started" ]; then echo "pg-cluster: could not start (see $dir/server.log)" >&2; tail -20 "$dir/server.log" >&2 || true; exit 1; fi
    echo "$port" >"$dir/port"
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
