#!/usr/bin/env bash
# The scaled topology of deploy/compose.yaml on this machine, without Docker: PostgreSQL
# from Debian's packages in a temporary folder (scripts/pg-cluster.sh), the schema migrated
# once (`kidledger-server migrate`), three `kidledger-server serve` processes on loopback
# ports sharing that database, and nginx in front of them with the configuration rendered
# from deploy/nginx.conf.template (the same file the compose nginx uses). Then a smoke test
# through the balancer, and everything is stopped and removed on exit, also on failure.
#
#   deploy/local-topology.sh            # smoke test, then tear down
#   deploy/local-topology.sh --keep     # smoke test, then keep serving until Ctrl-C
#
# The smoke test, every request through nginx unless it says otherwise:
#   - /healthz and /readyz; two parents sign up (from two client addresses, 127.0.0.2 and
#     127.0.0.3, which the servers' access logs must show: nginx is their trusted proxy);
#   - a household, a child, share, invite, accept; transactions from both parents, one
#     retried with the same Idempotency-Key (one transaction, answered 201 then 200);
#   - the household's transactions paged one at a time with each page's cursor (the pages
#     are served by different processes, which must read each other's cursors);
#   - the entitlement JWKS is the same from every process;
#   - long-polls parked on each server directly and one through nginx, woken by a write
#     made directly on the first server (a wake across processes, through PostgreSQL);
#   - the balance equals the sum of the transactions; nginx kept its connections to the
#     servers open (keep-alive) instead of opening one per request.
#
# Runs as root (the cluster belongs to the `postgres` user) or as a user who may run
# initdb. Installs PostgreSQL, libpq, nginx, curl, jq and gettext-base (envsubst) from
# Debian when missing. Builds the server with the Postgres trait unless SERVER_BIN is set.
#
# Environment: SERVER_BIN (a kidledger-server built with the Postgres trait; default:
# `swift build --traits Postgres --scratch-path .build-postgres`), TOPOLOGY_PORT (nginx's
# loopback port, default: a free one), APT_LOCK (lock held while installing).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
keep=""
[ "${1:-}" = "--keep" ] && keep=1

need=()
have_pg=""
for v in 15 16 17 14; do [ -x "/usr/lib/postgresql/$v/bin/initdb" ] && have_pg=1; done
[ -n "$have_pg" ] || need+=(postgresql)
pkg-config --exists libpq 2>/dev/null || need+=(libpq-dev)
[ -x /usr/sbin/nginx ] || need+=(nginx-light)
for tool in curl jq envsubst; do
    command -v "$tool" >/dev/null || { [ "$tool" = envsubst ] && need+=(gettext-base) || need+=("$tool"); }
done
if [ ${#need[@]} -gt 0 ]; then
    apt_lock="${APT_LOCK:-/var/lock/kidledger-apt.lock}"
    [ -d "$(dirname "$apt_lock")" ] || apt_lock=/tmp/apt-install.lock
    echo "installing ${need[*]}" >&2
    flock "$apt_lock" sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 "$@" >/dev/null' sh "${need[@]}"
fi

if [ -z "${SERVER_BIN:-}" ]; then
    swift build --traits Postgres --scratch-path .build-postgres --product kidledger-server >&2
    SERVER_BIN="$(swift build --traits Postgres --scratch-path .build-postgres --show-bin-path)/kidledger-server"
fi

# deploy/compose.yaml and the nginx template agree (the compose file itself needs Docker).
. scripts/python-env.sh
python deploy/check-compose.py >&2

tmp=$(mktemp -d /tmp/kidledger-topology.XXXXXX)
chmod 755 "$tmp"
cluster=$tmp/pg
pids=()
teardown() {
    local status=$?
    set +e
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
    bash "$repo/scripts/pg-cluster.sh" stop "$cluster" 2>/dev/null
    if [ "$status" != 0 ]; then
        echo "--- logs (failed with status $status)" >&2
        for f in "$tmp"/server-*.log "$tmp"/nginx/logs/error.log; do
            # A crash report is long: its first lines say why, the last lines are registers.
            [ -f "$f" ] && { echo "--- $f" >&2; grep -v '^{"ts"' "$f" | head -n 20 >&2; tail -n 5 "$f" >&2; }
        done
    fi
    rm -rf "$tmp"
    # The count scripts/test.sh reads.
    if [ "$status" = 0 ]; then echo "topology: 1 passed, 0 failed"; else echo "topology: 0 passed, 1 failed"; fi
    exit "$status"
}
trap teardown EXIT
trap 'exit 130' INT TERM

step() { printf '==> %s\n' "$*" >&2; }
die() { printf 'topology: FAILED: %s\n' "$*" >&2; exit 1; }
started=$(date +%s.%N)

# --- PostgreSQL, migrated once ------------------------------------------------------------
step "PostgreSQL from Debian's packages in $cluster"
url=$(bash scripts/pg-cluster.sh start "$cluster")
step "migrate ($url)"
"$SERVER_BIN" migrate --database-url "$url" >&2

# --- three servers --------------------------------------------------------------------------
# They share one data folder for the keys every process must hold alike (cursor.key, read
# back from list cursors another process made, and entitlement-keys/); the data is in
# PostgreSQL. They start together on the empty folder, as in deploy/compose.yaml, and agree
# on one set of keys. Port 0: each picks a free loopback port and reports it in its
# listening line. nginx connects from 127.0.0.1: that is the trusted proxy.
mkdir -p "$tmp/keys"
serve() { # n
    KIDLEDGER_DATABASE_URL=$url "$SERVER_BIN" serve --host 127.0.0.1 --port 0 \
        --data-dir "$tmp/keys" --trusted-proxies 127.0.0.1 > "$tmp/server-$1.log" 2>&1 &
    pids+=($!)
}
ports=()
listening() { # n: waits for server n's listening line, appends its port to ports
    for _ in $(seq 1 300); do
        grep -q '"event":"listening"' "$tmp/server-$1.log" && break
        kill -0 "${pids[$(($1 - 1))]}" 2>/dev/null || die "server $1 exited before listening"
        sleep 0.05
    done
    local port
    port=$(grep -m 1 '"event":"listening"' "$tmp/server-$1.log" | jq -er .port) || die "server $1 did not listen within 15 s"
    ports+=("$port")
}
step "three kidledger-server processes on loopback"
for n in 1 2 3; do serve "$n"; done
for n in 1 2 3; do listening "$n"; done
S1=http://127.0.0.1:${ports[0]}; S2=http://127.0.0.1:${ports[1]}; S3=http://127.0.0.1:${ports[2]}
step "servers on ${ports[*]}"

# --- nginx from the shared template ----------------------------------------------------------
lb_port=${TOPOLOGY_PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
mkdir -p "$tmp/nginx"
export KIDLEDGER_LISTEN=127.0.0.1:$lb_port
export KIDLEDGER_UPSTREAM_1=127.0.0.1:${ports[0]} KIDLEDGER_UPSTREAM_2=127.0.0.1:${ports[1]} KIDLEDGER_UPSTREAM_3=127.0.0.1:${ports[2]}
# shellcheck disable=SC2016  # the names are envsubst's, not the shell's
envsubst '${KIDLEDGER_LISTEN} ${KIDLEDGER_UPSTREAM_1} ${KIDLEDGER_UPSTREAM_2} ${KIDLEDGER_UPSTREAM_3}' \
    < deploy/nginx.conf.template > "$tmp/nginx/kidledger.conf"
# Around it, what the nginx image's own nginx.conf provides, for a private nginx; its access
# log names the upstream that answered each request.
. scripts/nginx-private.sh
nginx_private_conf "$tmp/nginx" "
    log_format upstream '\$remote_addr \"\$request\" \$status upstream=\$upstream_addr';
    access_log $tmp/nginx/logs/access.log upstream;
    include $tmp/nginx/kidledger.conf;"
/usr/sbin/nginx -t -q -p "$tmp/nginx" -c "$tmp/nginx/nginx.conf" || die "nginx refuses the rendered configuration"
/usr/sbin/nginx -p "$tmp/nginx" -c "$tmp/nginx/nginx.conf" &
pids+=($!)
B=http://127.0.0.1:$lb_port
for _ in $(seq 1 100); do curl -fs -o /dev/null "$B/healthz" && break; sleep 0.05; done
step "nginx on $B"

# --- smoke test -------------------------------------------------------------------------
# call EXPECTED-STATUS METHOD URL [curl args…]: the body on stdout; anything else fails.
call() {
    local want=$1 method=$2 u=$3; shift 3
    local got
    got=$(curl -sS -m 70 -o "$tmp/body" -w '%{http_code}' -X "$method" "$u" "$@") || die "$method $u: curl failed"
    [ "$got" = "$want" ] || { cat "$tmp/body" >&2; echo >&2; die "$method $u: HTTP $got, expected $want"; }
    cat "$tmp/body"
}
J='content-type: application/json'

call 200 GET "$B/healthz" >/dev/null
call 200 GET "$B/readyz" >/dev/null
call 403 GET "$B/metrics" >/dev/null
step "/healthz and /readyz through nginx: 200; /metrics: 403 (scraped on each server)"

tag=$(date +%s%N | tail -c 9)
ALEX=$(call 201 POST "$B/v1/accounts" --interface 127.0.0.2 -H "$J" -d "{\"handle\":\"alex$tag\",\"displayName\":\"Alex\"}")
SAM=$(call 201 POST "$B/v1/accounts" --interface 127.0.0.3 -H "$J" -d "{\"handle\":\"sam$tag\",\"displayName\":\"Sam\"}")
A="authorization: Bearer $(jq -r .token.secret <<<"$ALEX")"
S="authorization: Bearer $(jq -r .token.secret <<<"$SAM")"
step "two parents signed up"

HID=$(call 201 POST "$B/v1/households" -H "$A" -H "$J" -d '{"name":"Home","currency":"EUR"}' | jq -r .id)
CID=$(call 201 POST "$B/v1/households/$HID/children" -H "$A" -H "$J" -d '{"name":"Ada"}' | jq -r .id)
call 201 POST "$B/v1/households/$HID/share" -H "$A" >/dev/null
call 201 POST "$B/v1/households/$HID/share/participants" -H "$A" -H "$J" \
    -d "{\"handle\":\"sam$tag\",\"permission\":\"readWrite\"}" >/dev/null
IID=$(call 200 GET "$B/v1/invitations" -H "$S" | jq -r '.items[0].id')
[ "$IID" != null ] || die "Sam has no pending invitation"
call 200 POST "$B/v1/invitations/$IID/accept" -H "$S" >/dev/null
step "household $HID shared with Sam, invitation accepted"

TX=$B/v1/households/$HID/children/$CID/transactions
call 201 POST "$TX" -H "$A" -H "$J" -H "Idempotency-Key: allowance-$tag" -d '{"amountCents":500,"note":"allowance"}' >/dev/null
call 200 POST "$TX" -H "$A" -H "$J" -H "Idempotency-Key: allowance-$tag" -d '{"amountCents":500,"note":"allowance"}' >/dev/null
for i in 1 2 3; do call 201 POST "$TX" -H "$S" -H "$J" -d "{\"amountCents\":-$i,\"note\":\"sam $i\"}" >/dev/null; done
for i in 1 2; do call 201 POST "$TX" -H "$A" -H "$J" -d "{\"amountCents\":$((10 * i)),\"note\":\"alex $i\"}" >/dev/null; done
step "transactions from both parents (one retried with its Idempotency-Key: 201, then 200)"

# Six transactions, paged one at a time: consecutive pages come from different processes.
seen=0; cursor=""
while :; do
    page=$(call 200 GET "$B/v1/households/$HID/transactions?limit=1${cursor:+&cursor=$cursor}" -H "$S")
    seen=$((seen + $(jq '.items | length' <<<"$page")))
    cursor=$(jq -r '.nextCursor // empty' <<<"$page")
    [ -n "$cursor" ] || break
    [ "$seen" -le 10 ] || die "paging does not end"
done
[ "$seen" = 6 ] || die "paged $seen transactions, expected 6"
step "6 transactions paged one at a time across the processes"

jwks=""
for s in "$S1" "$S2" "$S3"; do
    k=$(call 200 GET "$s/v1/entitlement-keys" | jq -cS .)
    [ -z "$jwks" ] || [ "$k" = "$jwks" ] || die "the processes publish different entitlement keys"
    jwks=$k
done
step "the three processes publish the same entitlement keys"

# Long-polls parked on each server directly and one through nginx; the write goes directly
# to the first server, so the polls on the second and third are woken across processes.
NEXT=$(call 200 GET "$B/v1/households/$HID/changes" -H "$A" | jq -r .nextToken)
poll() { # name base-url
    curl -sS -m 70 -o "$tmp/poll-$1" -w '%{http_code} %{time_total}\n' \
        "$2/v1/households/$HID/changes?since=$NEXT&wait=30" -H "$A" > "$tmp/poll-$1.status" &
    pollers+=($!)
}
pollers=()
poll s1 "$S1"; poll s2 "$S2"; poll s3 "$S3"; poll lb "$B"
for _ in $(seq 1 100); do
    parked=0
    for s in "$S1" "$S2" "$S3"; do
        n=$(curl -fs "$s/metrics" | awk '/^kidledger_parked_long_polls / {print $2}')
        parked=$((parked + ${n:-0}))
    done
    [ "$parked" -ge 4 ] && break
    sleep 0.05
done
[ "$parked" -ge 4 ] || die "only $parked long-polls parked"
written=$(date +%s.%N)
call 201 POST "$S1/v1/households/$HID/children/$CID/transactions" -H "$S" -H "$J" -d '{"amountCents":7,"note":"wake"}' >/dev/null
for p in "${pollers[@]}"; do wait "$p" || die "a long-poll failed"; done
woken=$(date +%s.%N)
wake_ms=$(python3 -c "print(round(($woken - $written) * 1000))")
# A poll that was not woken ends only when its 30 s wait runs out.
[ "$wake_ms" -lt 5000 ] || die "the long-polls ended $wake_ms ms after the write: not woken by it"
for name in s1 s2 s3 lb; do
    read -r code _ < "$tmp/poll-$name.status"
    [ "$code" = 200 ] || die "long-poll $name: HTTP $code"
    jq -e '.transactions | any(.note == "wake")' "$tmp/poll-$name" >/dev/null || die "long-poll $name was not woken by the write"
done
step "long-polls on all three servers and through nginx woken by a write on server 1 (all answered $wake_ms ms after it)"

balance=$(call 200 GET "$B/v1/households/$HID/children" -H "$A" | jq '.items[0].balanceCents')
[ "$balance" = $((500 - 6 + 30 + 7)) ] || die "balance $balance, expected $((500 - 6 + 30 + 7))"
call 200 GET "$B/readyz" >/dev/null
step "balance $balance = the sum of the transactions; /readyz 200"

# The servers saw the clients' addresses, not nginx's.
for who in 127.0.0.2 127.0.0.3; do
    grep -h '"event":"request"' "$tmp"/server-*.log | grep '"path":"/v1/accounts"' | grep -q "\"remote\":\"$who\"" \
        || die "no server logged the sign-up from $who (X-Forwarded-For from nginx not used)"
done
step "the servers logged the clients' addresses (127.0.0.2, 127.0.0.3), not nginx's"

# Keep-alive to the upstreams: 60 more requests through nginx leave a few connections to the
# servers open, instead of one opened and closed per request (each close leaves a socket in
# TIME_WAIT on one side or the other).
p1=${ports[0]}; p2=${ports[1]}; p3=${ports[2]}
upstream="( dport = :$p1 or dport = :$p2 or dport = :$p3 or sport = :$p1 or sport = :$p2 or sport = :$p3 )"
closed0=$(ss -Htn state time-wait "$upstream" | wc -l)
for _ in $(seq 1 60); do curl -fs -o /dev/null "$B/v1/households/$HID/children" -H "$A"; done
open=$(ss -Htn state established "( dport = :$p1 or dport = :$p2 or dport = :$p3 )" | wc -l)
closed=$(( $(ss -Htn state time-wait "$upstream" | wc -l) - closed0 ))
[ "$open" -ge 1 ] && [ "$closed" -lt 10 ] || die "nginx to the servers: $open connections open, $closed closed during 60 requests (no keep-alive?)"
spread=$(awk '/upstream=[0-9]/ {sub(/.*upstream=/, ""); print}' "$tmp/nginx/logs/access.log" | sort | uniq -c | awk '{printf "%s%s", sep, $1; sep="/"}')
step "keep-alive upstream: 60 requests, $open connections open to the servers, $closed closed; requests per server: $spread"

elapsed=$(python3 -c "print(f'{$(date +%s.%N) - $started:.1f}')")
echo "topology: smoke test passed in $elapsed s (PostgreSQL, 3 servers, nginx on $B)"
if [ -n "$keep" ]; then
    echo "serving on $B (servers ${ports[*]}, database $url); Ctrl-C stops everything"
    wait "${pids[0]}"
fi
