# Shared set-up for the bench/ scripts; source it after `set -euo pipefail`.
# Provides $repo, $tmp (removed on exit), the pids array (killed on exit),
# bench_server_bin (sets SERVER_BIN, building a release binary when unset) and
# bench_start_nginx PORT (nginx, 1 worker, fixed 200 "ok" reply, keep-alive) and
# bench_post_lua FILE HOUSEHOLD CHILD TOKEN (a wrk script posting a new transaction per request) and
# bench_kind_args KIND URL HOUSEHOLD CHILD TOKEN (wrk's arguments for one kind of request) and
# bench_seed PREFIX URL (an account and households to measure against, as shell assignments) and
# bench_pg_ticks POSTMASTER (PostgreSQL's CPU so far, in clock ticks) and
# bench_wait_up PORT [tries=200] [seconds=0.05] (waits for /healthz, or exits with the logs).

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tmp="$(mktemp -d)"
pids=()
bench_cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap bench_cleanup EXIT

command -v wrk >/dev/null && [ -x /usr/sbin/nginx ] || { echo "needs wrk and nginx: apt-get install -y nginx-light wrk" >&2; exit 1; }

bench_server_bin() {
    if [ -z "${SERVER_BIN:-}" ]; then
        (cd "$repo" && swift build -c release --product kidledger-server >&2)
        SERVER_BIN="$(cd "$repo" && swift build -c release --show-bin-path)/kidledger-server"
    fi
}

# Waits until http://127.0.0.1:PORT/healthz answers, trying TRIES times SECONDS apart;
# otherwise prints the logs in $tmp and exits 1.
bench_wait_up() {
    local port=$1 tries=${2:-200} pause=${3:-0.05}
    for _ in $(seq 1 "$tries"); do
        curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && return 0
        sleep "$pause"
    done
    echo "server on port $port did not come up" >&2; cat "$tmp"/*.log >&2 2>/dev/null || true; exit 1
}

source "$repo/scripts/nginx-private.sh"
bench_start_nginx() {
    local port=$1
    nginx_private_conf "$tmp/nginx" "
    access_log off;
    keepalive_requests 100000000;
    keepalive_timeout 60s;
    server {
        listen 127.0.0.1:$port;
        location / { default_type text/plain; return 200 \"ok\"; }
    }"
    /usr/sbin/nginx -p "$tmp/nginx" -c "$tmp/nginx/nginx.conf" &
    pids+=($!)
}

# Every request is a new transaction: its Idempotency-Key is unique per wrk invocation (the
# script argument), thread and request. The request bytes are prebuilt but for the key, so
# the load generator, which shares the cores with the server, spends little per request.
# HOUSEHOLD and CHILD may be comma-separated lists of the same length: the requests then
# take the (household, child) pairs in turn.
bench_post_lua() {
    local households children
    households=$(echo "$2" | sed 's/[^,]*/"&"/g'); children=$(echo "$3" | sed 's/[^,]*/"&"/g')
    cat > "$1" <<LUA
local counter = 0
local thread_id = 0
local heads, tail = {}, nil
setup = function(thread) thread:set("tid", thread_id); thread_id = thread_id + 1 end
init = function(args)
  local body = '{"amountCents":1,"note":"bench"}'
  local households, children = { $households }, { $children }
  for i = 1, #households do
    heads[i] = "POST /v1/households/" .. households[i] .. "/children/" .. children[i] .. "/transactions HTTP/1.1\r\n" ..
               "Host: " .. wrk.host .. ":" .. wrk.port .. "\r\n" ..
               "Authorization: Bearer $4\r\nContent-Type: application/json\r\n" ..
               "Content-Length: " .. #body .. "\r\nIdempotency-Key: bench-" .. (args[1] or "run") .. "-" .. (tid or 0) .. "-"
  end
  tail = "\r\n\r\n" .. body
end
request = function()
  counter = counter + 1
  return heads[counter % #heads + 1] .. counter .. tail
end
LUA
}

# bench_kind_args KIND URL HOUSEHOLD CHILD TOKEN: sets the array `args` to wrk's arguments
# for one kind of request (post: a new transaction each, children: the authenticated list,
# healthz).
bench_kind_args() {
    case $1 in
        post) bench_post_lua "$tmp/post.lua" "$3" "$4" "$5"; args=(-s "$tmp/post.lua" "$2") ;;
        children) args=(-H "Authorization: Bearer $5" "$2/v1/households/$3/children") ;;
        healthz) args=("$2/healthz") ;;
        *) echo "kind must be post, children or healthz, not $1" >&2; exit 2 ;;
    esac
}

# An account, a household of 11 children, and a second household whose feed is read:
# one child and 1,200 transactions pushed in three batches of 400.
bench_seed() {  # PREFIX URL: prints PREFIXtoken=… PREFIXhh=… PREFIXfeed=… PREFIXchildren=…
    python3 - "$1" "$2" <<'PY'
import http.client, json, shlex, sys, urllib.parse, uuid
prefix = sys.argv[1]
u = urllib.parse.urlparse(sys.argv[2])
c = http.client.HTTPConnection(u.hostname, u.port)
def call(method, path, body=None, token=None):
    h = {"Content-Type": "application/json"}
    if token: h["Authorization"] = "Bearer " + token
    c.request(method, path, body=json.dumps(body) if body is not None else None, headers=h)
    r = c.getresponse(); data = r.read()
    assert 200 <= r.status < 300, (method, path, r.status, data[:300])
    return json.loads(data) if data else None
token = call("POST", "/v1/accounts", {"handle": "bench", "displayName": "Bench"})["token"]["secret"]
hh = call("POST", "/v1/households", {"name": "Bench"}, token)["id"]
children = [call("POST", f"/v1/households/{hh}/children", {"name": f"Child {i}"}, token)["id"] for i in range(1, 12)]
feed = call("POST", "/v1/households", {"name": "Feed"}, token)["id"]
feed_child = call("POST", f"/v1/households/{feed}/children", {"name": "Reader"}, token)["id"]
for _ in range(3):
    txs = [{"id": str(uuid.uuid4()), "childId": feed_child, "amountCents": 1, "note": "seeded", "source": "manual",
            "createdAt": "2026-12-02T10:00:00.000Z"} for _ in range(400)]
    res = call("POST", f"/v1/households/{feed}/changes", {"transactions": txs}, token)["results"]
    assert all(r["status"] == "saved" for r in res), res[:3]
page = call("GET", f"/v1/households/{feed}/changes?limit=500", token=token)
assert len(page["children"]) + len(page["transactions"]) == 500 and page["moreComing"], "feed page is not 500 records"
print(" ".join(f"{prefix}{k}={shlex.quote(v)}" for k, v in
               [("token", token), ("hh", hh), ("feed", feed), ("children", ",".join(children))]))
PY
}

# PostgreSQL's utime + stime in clock ticks: the postmaster, its children, and the children
# it has reaped (a backend that exits between two readings moves its ticks there; one that
# exits while being read is skipped).
bench_pg_ticks() {  # POSTMASTER
    local p t total=0
    # shellcheck disable=SC2046
    for p in "$1" $(ps -o pid= --ppid "$1"); do
        t=$(awk -v kids="$([ "$p" = "$1" ] && echo 1 || echo 0)" \
            '{ sub(/^.*\) /, ""); print $12 + $13 + (kids ? $14 + $15 : 0) }' "/proc/$p/stat" 2>/dev/null) || continue
        [ -n "$t" ] && total=$(( total + t ))
    done
    echo "$total"
}
