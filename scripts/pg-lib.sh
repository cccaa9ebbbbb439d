# Shared by scripts/pg-cluster.sh and scripts/pg-standby.sh (sourced): the server binaries,
# running as the cluster's owner, and starting a cluster's data folder on a free port.

pgbin=""
for v in 15 16 17 14; do
  if [ -x "/usr/lib/postgresql/$v/bin/initdb" ]; then pgbin="/usr/lib/postgresql/$v/bin"; break; fi
done
if [ -z "$pgbin" ]; then echo "$(basename "$0"): PostgreSQL server binaries not found (apt-get install postgresql)" >&2; exit 1; fi

as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# Starts the cluster in DIR/data on a free loopback port, written to DIR/port. The server
# inherits none of this shell's descriptors beyond 0-2 (a caller waiting for a pipe or a
# socket it handed over to close would otherwise wait for as long as the server runs).
start_on_free_port() {
  local dir=$1 port
  for _ in 1 2 3 4 5 6 7 8; do
    port=$(( 20000 + (RANDOM % 20000) ))
    if (
      for fd in /proc/$BASHPID/fd/*; do
        fd=${fd##*/}
        if [ "$fd" -gt 2 ] 2>/dev/null && [ "$fd" != 255 ]; then eval "exec $fd>&-" 2>/dev/null || true; fi
      done
      exec 255>&- 2>/dev/null || true
      as_owner "$pgbin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -o "-p $port" -w -t 60 start </dev/null >/dev/null 2>&1
    ); then
      echo "$port" >"$dir/port"
      return 0
    fi
  done
  echo "$(basename "$0"): could not start (see $dir/server.log)" >&2
  tail -20 "$dir/server.log" >&2 || true
  return 1
}
