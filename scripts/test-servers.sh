# Sourced by the PostgreSQL scripts (pg-failover.sh, pg-pgbouncer.sh): Debian's PostgreSQL
# binaries, the server built with the Postgres trait, and kidledger-server processes for a
# test, each on a free loopback port, data folder $tmp/keys-NAME, log $tmp/server-NAME.log,
# its pid appended to `pids` (the caller stops them).

# find_pg: sets pgbin to the newest PostgreSQL's binaries ("" when none is installed).
find_pg() {
    pgbin=""
    for v in 15 16 17 14; do [ -x "/usr/lib/postgresql/$v/bin/initdb" ] && { pgbin=/usr/lib/postgresql/$v/bin; return; }; done
}

# need_server_bin: SERVER_BIN, else the server built with the trait in .build-postgres/.
need_server_bin() {
    if [ -z "${SERVER_BIN:-}" ]; then
        swift build --traits Postgres --scratch-path .build-postgres --product kidledger-server >&2
        SERVER_BIN="$(swift build --traits Postgres --scratch-path .build-postgres --show-bin-path)/kidledger-server"
    fi
}

# as_owner CMD...: runs CMD as the clusters' owner (`postgres` when running as root).
owner=()
[ "$(id -u)" != 0 ] || owner=(runuser -u postgres --)
as_owner() { "${owner[@]}" "$@"; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# serve_test NAME ARGS...: starts one (ARGS: the database flags) with limits a load test needs lifted.
serve_test() {
    local n=$1
    shift
    mkdir -p "$tmp/keys-$n"
    "$SERVER_BIN" serve --host 127.0.0.1 --port 0 --data-dir "$tmp/keys-$n" --log-level warning \
        --registrations-per-hour 0 --auth-failures-per-minute 100000 "$@" >"$tmp/server-$n.log" 2>&1 &
    pids+=($!)
}

# listening_port NAME: waits up to 15 s for its listening line; prints its port (nothing: it did not listen).
listening_port() {
    for _ in $(seq 1 300); do grep -q '"event":"listening"' "$tmp/server-$1.log" && break; sleep 0.05; done
    grep -m 1 '"event":"listening"' "$tmp/server-$1.log" | sed -E 's/.*"port":([0-9]+).*/\1/'
}
