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

# check STATUS WHAT: counts a check in `passed` or `failed` (STATUS 0: passed) and prints it.
check() {
    if [ "$1" = 0 ]; then passed=$((passed + 1)); echo "PASS $2"; else failed=$((failed + 1)); echo "FAIL $2"; fi
}

# count_part PART LOG STATUS: adds the counts of LOG's line `PART: N passed, N failed` to
# `passed` and `failed` (a run that failed without counting its failure counts as one).
count_part() {
    local line p f
    line=$(grep -E "^$1: [0-9]+ passed, [0-9]+ failed$" "$2" | tail -n 1)
    p=$(sed -nE 's/.*: ([0-9]+) passed.*/\1/p' <<<"$line"); p=${p:-0}
    f=$(sed -nE 's/.* ([0-9]+) failed$/\1/p' <<<"$line"); f=${f:-0}
    [ "$3" = 0 ] || [ "$f" -gt 0 ] || f=1
    passed=$((passed + p)); failed=$((failed + f))
}
