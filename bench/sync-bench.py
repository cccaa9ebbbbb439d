#!/usr/bin/env python3
"""Helper for bench/sync-pull.sh: sync feed benchmarks against a real kidledger-server.

1. incremental pull of 10 new changes from households of 1,000 and 1,000,000 transactions
2. full first pull of a household of 100,000 transactions (gzip, pages of 1000)
3. long-poll propagation: a write by one client to another client's waiting pull
4. N concurrent long-polls held for 30 s: server RSS and thread count
5. `kidledger-server check` over the seeded database (about 1.1 M transactions)

Households are created over HTTP, then filled by SQL into the stopped server's database
(the same rows the server writes: one seq per transaction, cached balance, household seq)."""
import argparse, gzip, http.client, json, os, resource, select, socket, sqlite3, statistics, subprocess
import sys, tempfile, threading, time, uuid

def status_field(pid, name):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(name + ":"):
                return int(line.split()[1])
    return -1

class Server:
    def __init__(self, binary, data, port):
        self.binary, self.data, self.port = binary, data, port
        self.proc = None

    def start(self):
        log = open(os.path.join(self.data, "server.log"), "ab")
        # Thousands of long-polls come from one address here: no per-address cap.
        self.proc = subprocess.Popen([self.binary, "serve", "--port", str(self.port), "--data-dir", self.data, "--quiet",
                                      "--max-connections-per-address", "0"],
                                     stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                c.request("GET", "/healthz"); c.getresponse().read(); c.close()
                return
            except OSError:
                time.sleep(0.02)
        raise SystemExit("server did not start")

    def stop(self):
        self.proc.terminate(); self.proc.wait(30)

class Client:
    def __init__(self, port, token=None):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        self.token = token

    def call(self, method, path, body=None, headers=None):
        h = {"Content-Type": "application/json"} if body is not None else {}
        if self.token: h["Authorization"] = "Bearer " + self.token
        h.update(headers or {})
        self.conn.request(method, path, body=None if body is None else json.dumps(body), headers=h)
        r = self.conn.getresponse()
        data = r.read()
        return r.status, r.getheader("Content-Encoding"), data

    def json(self, method, path, body=None, expect=(200, 201)):
        st, _, data = self.call(method, path, body)
        if st not in expect: raise SystemExit(f"{method} {path}: {st} {data[:300]!r}")
        return json.loads(data)

def seed(db_path, household, child, author, count, tag):
    """Appends `count` transactions to `household` the way the server would."""
    db = sqlite3.connect(db_path)
    db.execute("PRAGMA journal_mode=WAL"); db.execute("PRAGMA synchronous=OFF")
    (seq, key) = db.execute("SELECT seq, ledger_key FROM households WHERE id = ?", (household,)).fetchone()
    now = int(time.time() * 1000)
    ns = uuid.UUID("6f1c7a52-3b0e-4c8e-9d55-2a4b8e1f0c3d")
    def row(i):
        tx = str(uuid.UUID(bytes=os.urandom(16), version=4))
        # reversal_id: the row's key, the id its reversal would have (UUIDv5 "reversal:" + id),
        # stored as the UUID's 16 bytes (schema version 7).
        return (tx, key, child, 100, "", "manual", now, now, author, seq + 1 + i, uuid.uuid5(ns, "reversal:" + tx).bytes)
    db.executemany("INSERT INTO transactions (id, household_key, child_id, amount_cents, note, source, created_at, recorded_at, "
                   "author_account_id, seq, reversal_id) VALUES (?,?,?,?,?,?,?,?,?,?,?)", (row(i) for i in range(count)))
    db.execute("UPDATE households SET seq = ? WHERE id = ?", (seq + count, household))
    db.execute("UPDATE children SET balance_cents = balance_cents + ? WHERE household_id = ? AND id = ?", (100 * count, household, child))
    db.commit(); db.close()

def latest_token(c, h):
    return c.json("GET", f"/v1/households/{h}/sync-status")["latestToken"]

def push10(c, h, child):
    txs = [{"id": str(uuid.uuid4()), "childId": child, "amountCents": 1, "note": "", "source": "manual",
            "createdAt": "2026-12-02T10:00:00.000Z"} for _ in range(10)]
    res = c.json("POST", f"/v1/households/{h}/changes", {"transactions": txs})["results"]
    assert all(r["status"] == "saved" for r in res), res

def bench_incremental(c, h, child, rounds):
    times = []
    for _ in range(rounds):
        token = latest_token(c, h)
        push10(c, h, child)
        t0 = time.perf_counter()
        page = c.json("GET", f"/v1/households/{h}/changes?since={token}")
        times.append(time.perf_counter() - t0)
        assert len(page["transactions"]) == 10 and not page["moreComing"], (len(page["transactions"]), page["moreComing"])
    return statistics.median(times), sorted(times)[int(len(times) * 0.9)]

def bench_full(c, h, expect):
    t0 = time.perf_counter()
    since, n, wire, raw, pages = None, 0, 0, 0, 0
    while True:
        q = "limit=1000" + (f"&since={since}" if since else "")
        st, enc, data = c.call("GET", f"/v1/households/{h}/changes?{q}", headers={"Accept-Encoding": "gzip"})
        assert st == 200 and (enc == "gzip" or len(data) < 1024), (st, enc)
        wire += len(data)
        body = gzip.decompress(data) if enc == "gzip" else data
        raw += len(body)
        page = json.loads(body)
        n += len(page["transactions"]); pages += 1
        since = page["nextToken"]
        if not page["moreComing"]: break
    elapsed = time.perf_counter() - t0
    assert n == expect, (n, expect)
    return elapsed, pages, wire, raw

def bench_propagation(port, token, h, child, rounds):
    poller, writer = Client(port, token), Client(port, token)
    since = latest_token(writer, h)
    lat, write_ack = [], []
    for _ in range(rounds):
        got = {}
        def poll():
            got["page"] = poller.json("GET", f"/v1/households/{h}/changes?since={since}&wait=30")
            got["t"] = time.perf_counter()
        th = threading.Thread(target=poll); th.start()
        time.sleep(0.02)  # let the pull park
        t0 = time.perf_counter()
        writer.json("POST", f"/v1/households/{h}/children/{child}/transactions", {"amountCents": 1})
        t1 = time.perf_counter()
        th.join()
        assert len(got["page"]["transactions"]) == 1
        since = got["page"]["nextToken"]
        lat.append(got["t"] - t0); write_ack.append(t1 - t0)
    return statistics.median(lat), sorted(lat)[int(len(lat) * 0.9)], statistics.median(write_ack)

def bench_longpolls(server, token, h, count, hold):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, count + 1024)), hard))
    c = Client(server.port, token)
    since = latest_token(c, h)
    pid = server.proc.pid
    time.sleep(0.5)
    rss0, thr0 = status_field(pid, "VmRSS"), status_field(pid, "Threads")
    req = (f"GET /v1/households/{h}/changes?since={since}&wait={hold} HTTP/1.1\r\nHost: x\r\n"
           f"Authorization: Bearer {token}\r\n\r\n").encode()
    socks = []
    ep = select.epoll()
    t0 = time.monotonic()
    for i in range(count):
        s = socket.create_connection(("127.0.0.1", server.port))
        s.sendall(req); s.setblocking(False)
        ep.register(s.fileno(), select.EPOLLIN)
        socks.append(s)
    opened = time.monotonic() - t0
    time.sleep(min(10, hold / 2))
    rss1, thr1 = status_field(pid, "VmRSS"), status_field(pid, "Threads")
    early = sum(1 for _ in ep.poll(0))
    by_fd = {s.fileno(): s for s in socks}
    answers, statuses, first = {}, {}, None
    deadline = time.monotonic() + hold + 30
    while len(statuses) < count and time.monotonic() < deadline:
        for fd, _ in ep.poll(1):
            try: data = by_fd[fd].recv(65536)
            except BlockingIOError: continue
            buf = answers.get(fd, b"") + data
            answers[fd] = buf
            if fd not in statuses and b"\r\n" in buf:
                statuses[fd] = buf.split(b" ", 2)[1].decode()
                if first is None: first = time.monotonic() - t0
            if not data: ep.unregister(fd)
    done = time.monotonic() - t0
    rss2, thr2 = status_field(pid, "VmRSS"), status_field(pid, "Threads")
    for s in socks: s.close()
    ok = sum(1 for v in statuses.values() if v == "200")
    return dict(opened_s=round(opened, 2), rss_before_kib=rss0, rss_held_kib=rss1, extra_rss_mib=round((rss1 - rss0) / 1024, 1),
                threads_before=thr0, threads_held=thr1, threads_after=thr2, answered_early=early,
                answered_200=ok, answered=len(statuses), first_answer_s=round(first or -1, 2), all_answered_s=round(done, 2),
                rss_after_kib=rss2)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--port", type=int, default=18190)
    ap.add_argument("--big", type=int, default=1_000_000)
    ap.add_argument("--small", type=int, default=1_000)
    ap.add_argument("--full", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--polls", type=int, default=5000)
    ap.add_argument("--hold", type=int, default=30)
    ap.add_argument("--only", default="check,incremental,full,propagation,longpolls")
    a = ap.parse_args()
    only = set(a.only.split(","))
    data = tempfile.mkdtemp(prefix="kidledger-sync-bench-")
    server = Server(a.server, data, a.port)
    server.start()
    anon = Client(a.port)
    signup = anon.json("POST", "/v1/accounts", {"handle": "bench", "displayName": "Bench"})
    token, account = signup["token"]["secret"], signup["account"]["id"]
    c = Client(a.port, token)
    made = {}
    for name in ("small", "big", "full", "poll"):
        h = c.json("POST", "/v1/households", {"name": name})["id"]
        kid = c.json("POST", f"/v1/households/{h}/children", {"name": "Ada"})["id"]
        made[name] = (h, kid)
    server.stop()
    t0 = time.monotonic()
    for tag, (name, n) in enumerate((("small", a.small), ("big", a.big), ("full", a.full)), start=1):
        if name == "big" and "incremental" not in only: continue
        seed(os.path.join(data, "kidledger.sqlite"), made[name][0], made[name][1], account, n, tag)
    print(f"seeded {a.small:,} + {a.big:,} + {a.full:,} transactions in {time.monotonic() - t0:.1f} s", flush=True)
    out = {}
    if "check" in only:
        # `kidledger-server check` over the whole seeded database (server stopped).
        t0 = time.monotonic()
        r = subprocess.run([a.server, "check", "--data-dir", data], capture_output=True, text=True)
        report = json.loads(r.stdout)
        out["check"] = {"seconds": round(time.monotonic() - t0, 2), "exit": r.returncode, "ok": report.get("ok"),
                        "transactions": report.get("transactions")}
        print("check:", json.dumps(out["check"]), flush=True)
    server.start()
    c = Client(a.port, token)
    try:
        if "incremental" in only:
            for name in ("small", "big"):  # warm both, then measure
                bench_incremental(c, *made[name], 5)
            small = bench_incremental(c, *made["small"], a.rounds)
            big = bench_incremental(c, *made["big"], a.rounds)
            out["incremental"] = {"small_median_ms": round(small[0] * 1000, 3), "small_p90_ms": round(small[1] * 1000, 3),
                                  "big_median_ms": round(big[0] * 1000, 3), "big_p90_ms": round(big[1] * 1000, 3),
                                  "ratio": round(big[0] / small[0], 2)}
            print("incremental pull of 10 changes:", json.dumps(out["incremental"]), flush=True)
        if "full" in only:
            bench_full(c, made["full"][0], a.full)  # warm the page cache once
            runs = [bench_full(c, made["full"][0], a.full) for _ in range(3)]
            best = min(runs)
            out["full"] = {"seconds_best_of_3": round(best[0], 3), "seconds_all": [round(r[0], 3) for r in runs], "pages": best[1],
                           "gzip_bytes": best[2], "json_bytes": best[3]}
            print("full first pull of", f"{a.full:,}", "transactions (gzip):", json.dumps(out["full"]), flush=True)
        if "propagation" in only:
            med, p90, ack = bench_propagation(a.port, token, *made["poll"], a.rounds)
            out["propagation"] = {"median_ms": round(med * 1000, 2), "p90_ms": round(p90 * 1000, 2),
                                  "write_ack_median_ms": round(ack * 1000, 2), "writes": a.rounds}
            print("long-poll propagation:", json.dumps(out["propagation"]), flush=True)
        if "longpolls" in only:
            out["longpolls"] = bench_longpolls(server, token, made["poll"][0], a.polls, a.hold)
            print(f"{a.polls} concurrent long-polls held {a.hold} s:", json.dumps(out["longpolls"]), flush=True)
    finally:
        server.stop()
    print(json.dumps(out))

if __name__ == "__main__":
    main()
