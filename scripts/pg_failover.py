#!/usr/bin/env python3
"""The load, the failover and the checks of scripts/pg-failover.sh (standard library only).

    pg_failover.py relay PORT_FILE UPSTREAM_PORT
        A TCP relay on a free loopback port (written to PORT_FILE) in front of a PostgreSQL
        cluster. SIGUSR1 freezes it: from then on, on each connection that sends a COMMIT,
        what the database answers is dropped (ends of connections still pass), as if the
        answers were lost in transit (a line is added to PORT_FILE.frozen for each such
        COMMIT); other sessions are served until they commit; and new
        connections are refused, as by a host that is down (libpq moves on to the next host
        of a URL only when the connection itself fails, not when a session it opened ends).

    pg_failover.py drive --mode sync|async --a URL --b URL --primary-data DIR
                         --relay-pid PID --promote CMD... --psql CMD... --check CMD...
        Writers post transactions through both servers; the relay in front of the primary
        is frozen and the primary killed (SIGKILL, every process of it); the standby is
        promoted; the writers go on until their writes are answered. Then the checks, one
        line each, and `failover-<mode>: N passed, N failed`.

Each logical write carries a note of its own ("w<writer>-<n>"): a note stored twice is a
write applied twice, whatever its id. Even writers send their own id, odd writers an
Idempotency-Key; a 503 is retried with the same id or key, as the API asks.
"""
import argparse
import asyncio
import http.client
import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
import uuid


# --- relay --------------------------------------------------------------------------------

def relay(port_file, upstream_port):
    frozen = False
    listener = None

    def freeze(*_):
        nonlocal frozen
        frozen = True
        listener.close()

    async def pump(reader, writer, conn, upstream):
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                if upstream:
                    # The COMMIT's text travels in the Parse message of its pipeline.
                    if frozen and not conn["committing"] and b"COMMIT\x00" in data:
                        conn["committing"] = True
                        with open(port_file + ".frozen", "a") as f:
                            f.write("COMMIT\n")
                elif conn["committing"]:
                    continue
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    async def serve(client_reader, client_writer):
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", upstream_port)
        except OSError:
            client_writer.close()
            return
        conn = {"committing": False}
        await asyncio.gather(pump(client_reader, up_writer, conn, True), pump(up_reader, client_writer, conn, False))

    async def main():
        nonlocal listener
        server = listener = await asyncio.start_server(serve, "127.0.0.1", 0)
        asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, freeze)
        with open(port_file + ".tmp", "w") as f:
            f.write(str(server.sockets[0].getsockname()[1]))
        os.rename(port_file + ".tmp", port_file)
        await asyncio.Event().wait()

    asyncio.run(main())


# --- HTTP ---------------------------------------------------------------------------------

class Client:
    """One keep-alive connection to one server; reconnects after a failure."""

    def __init__(self, base):
        self.host, port = base.replace("http://", "").split(":")
        self.port = int(port)
        self.conn = None

    def call(self, method, path, token=None, body=None, headers=None, timeout=20):
        h = {"content-type": "application/json"} if body is not None else {}
        if token:
            h["authorization"] = "Bearer " + token
        h.update(headers or {})
        try:
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
            self.conn.timeout = timeout
            self.conn.request(method, path, body=None if body is None else json.dumps(body), headers=h)
            r = self.conn.getresponse()
            raw = r.read()
            try:
                data = json.loads(raw) if raw else {}
            except ValueError:
                data = {}
            return r.status, data
        except (OSError, http.client.HTTPException) as e:
            if self.conn is not None:
                self.conn.close()
            self.conn = None
            return 0, {"detail": str(e)}


def must(status_and_body, *want):
    status, body = status_and_body
    if status not in want:
        raise SystemExit(f"unexpected HTTP {status}: {body}")
    return body


# --- the run ------------------------------------------------------------------------------

class Load:
    def __init__(self, bases, household, children, token, writers):
        self.bases, self.household, self.children, self.token = bases, household, children, token
        self.writers = writers
        self.lock = threading.Lock()
        self.acknowledged = {}       # note -> (id, child, amount)
        self.attempted = set()       # notes
        self.unknown_then_stored = []  # notes first answered "lost while committing", then 200
        self.statuses = {}
        self.unexpected = []
        self.ok_times = []           # (time, server) of every 2xx
        self.pending = 0
        self.stop_at = None          # no new write after this time
        self.give_up = None

    def writer(self, w):
        client = Client(self.bases[w % 2])
        n = 0
        while self.stop_at is None or time.monotonic() < self.stop_at:
            n += 1
            note = f"w{w}-{n}"
            child = self.children[(w + n) % len(self.children)]
            amount = (w * 7919 + n * 104729) % 1000 + 1
            body = {"amountCents": amount, "note": note}
            headers = {}
            if w % 2 == 0:
                body["id"] = str(uuid.uuid4())
            else:
                headers["Idempotency-Key"] = note + "-" + uuid.uuid4().hex
            with self.lock:
                self.attempted.add(note)
                self.pending += 1
            commit_unknown = False
            while True:
                if self.give_up and time.monotonic() > self.give_up:
                    with self.lock:
                        self.unexpected.append(f"{note}: never acknowledged")
                    return
                status, data = client.call("POST", f"/v1/households/{self.household}/children/{child}/transactions",
                                           self.token, body, headers)
                kind = str(status) if status else "no answer"
                if status == 503 and "committing" in data.get("detail", ""):
                    kind = "503 (lost while committing)"
                with self.lock:
                    self.statuses[kind] = self.statuses.get(kind, 0) + 1
                if status in (200, 201):
                    tx = data.get("transaction", {})
                    with self.lock:
                        if "id" in body and tx.get("id") != body["id"]:
                            self.unexpected.append(f"{note}: answered with id {tx.get('id')}")
                        self.acknowledged[note] = (tx.get("id"), child, amount)
                        self.ok_times.append((time.monotonic(), w % 2))
                        self.pending -= 1
                        if commit_unknown and status == 200:
                            self.unknown_then_stored.append(note)
                    break
                if status == 503:
                    if "committing" in data.get("detail", ""):
                        commit_unknown = True
                    time.sleep(0.02)
                elif status == 0:
                    time.sleep(0.05)
                else:
                    with self.lock:
                        self.unexpected.append(f"{note}: HTTP {status} {data.get('code', '')}")
                    time.sleep(0.05)

    def start(self):
        self.threads = [threading.Thread(target=self.writer, args=(w,), daemon=True) for w in range(self.writers)]
        for t in self.threads:
            t.start()

    def finish(self, seconds_from_now, grace):
        self.stop_at = time.monotonic() + seconds_from_now
        self.give_up = self.stop_at + grace
        for t in self.threads:
            t.join()


def drive(args):
    a, b = Client(args.a), Client(args.b)
    results = []

    def check(ok, what):
        results.append(ok)
        print(("PASS " if ok else "FAIL ") + what, flush=True)

    tag = uuid.uuid4().hex[:8]
    account = must(a.call("POST", "/v1/accounts", body={"handle": f"fo{tag}", "displayName": "Failover"}), 201)
    token = account["token"]["secret"]
    household = must(a.call("POST", "/v1/households", token, {"name": "Home", "currency": "EUR"}), 201)["id"]
    children = [must(a.call("POST", f"/v1/households/{household}/children", token, {"name": n}), 201)["id"]
                for n in ("Ada", "Ben", "Cy")]

    if args.family_file:
        with open(args.family_file, "w") as f:
            json.dump({"token": token, "household": household, "child": children[0]}, f)
    load = Load([args.a, args.b], household, children, token, args.writers)
    started = time.monotonic()
    load.start()
    if args.mode == "pooled":
        time.sleep(args.before + args.after)
        load.finish(0, grace=20)
        print(f"load: {args.writers} writers for {time.monotonic() - started:.1f} s", flush=True)
        print("answers: " + ", ".join(f"{n}×{s}" for s, n in sorted(load.statuses.items())), flush=True)
    else:
        fail_over(args, load, started, check)

    check(not load.unexpected, "every write answered 201, 200 or 503 and acknowledged in the end"
          + ("" if not load.unexpected else ": " + "; ".join(load.unexpected[:5])))

    rows = psql(args.psql, f"SELECT note, id, child_id, amount_cents FROM transactions WHERE household_id = '{household}'")
    stored = {}
    for note, tid, child, amount in rows:
        stored.setdefault(note, []).append((tid, child, int(amount)))
    twice = {n: v for n, v in stored.items() if len(v) > 1}
    check(not twice, f"no write applied twice ({len(rows)} rows, {len(stored)} distinct writes)"
          + ("" if not twice else f": {list(twice.items())[:3]}"))
    strangers = [n for n in stored if n not in load.attempted]
    check(not strangers, "every stored row is a write that was sent" + ("" if not strangers else f": {strangers[:3]}"))

    lost = [n for n, (tid, child, amount) in load.acknowledged.items()
            if not any(r == (tid, child, amount) for r in stored.get(n, []))]
    figure = (f"{len(load.acknowledged)} writes acknowledged, {len(lost)} of them missing in the database; "
              f"{len(load.unknown_then_stored)} answered 503 'lost while committing' whose retry found them stored (200)")
    if args.mode != "async":
        check(not lost, "every acknowledged write is stored: " + figure)
    if args.mode == "sync":
        check(len(load.unknown_then_stored) > 0,
              "writes whose COMMIT (a group-commit batch in flight) committed while its answer was lost were retried "
              "and stored once "
              f"({len(load.unknown_then_stored)} such writes)")
    if args.mode == "async":
        print(f"asynchronous standby: {figure}" + (f" (lost: {lost[:5]})" if lost else ""), flush=True)

    sums = {c: 0 for c in children}
    for n, v in stored.items():
        for tid, child, amount in v:
            sums[child] += amount
    for name, client in (("A", a), ("B", b)):
        status, data = client.call("GET", f"/v1/households/{household}/children", token)
        balances = {c["id"]: c["balanceCents"] for c in data.get("items", [])} if status == 200 else {}
        check(balances == sums, f"balances through {name} equal the sums of the stored transactions ({sums})"
              + ("" if balances == sums else f": HTTP {status}, {balances}"))

    r = subprocess.run(args.check, capture_output=True, text=True)
    check(r.returncode == 0, "kidledger-server check is clean"
          + ("" if r.returncode == 0 else f": {r.stdout.strip()} {r.stderr.strip()}"))

    check(*long_poll(a, b, household, children[0], token))

    passed = results.count(True)
    print(f"{args.part}: {passed} passed, {len(results) - passed} failed", flush=True)
    return 0 if passed == len(results) else 1


def fail_over(args, load, started, check):
    """Freezes the relay, kills the primary, promotes the standby; checks that writes come back."""
    time.sleep(args.before)
    before_kill = len(load.acknowledged)

    # The answers from the primary to server A are lost from now on; B's still arrive.
    os.kill(args.relay_pid, signal.SIGUSR1)
    frozen_at = time.monotonic()
    # Until a COMMIT's answer is held back (A's committers are busy: at once, unless the
    # machine is very busy), then time for the primary to commit what it was sent.
    frozen_commits = 0
    while frozen_commits == 0 and time.monotonic() < frozen_at + 5:
        time.sleep(0.02)
        try:
            with open(args.relay_port_file + ".frozen") as f:
                frozen_commits = len(f.readlines())
        except FileNotFoundError:
            pass
    time.sleep(0.2)
    with open(os.path.join(args.primary_data, "postmaster.pid")) as f:
        postmaster = int(f.readline())
    victims = [postmaster] + children_of(postmaster)
    killed_at = time.monotonic()
    for pid in victims:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    acknowledged_at_kill = len(load.acknowledged)
    time.sleep(args.detect)
    subprocess.run(args.promote, check=True, stdout=subprocess.DEVNULL)
    promoted_at = time.monotonic()
    load.finish(args.after, grace=20)
    print(f"load: {args.writers} writers for {time.monotonic() - started:.1f} s, primary killed after "
          f"{killed_at - started:.1f} s ({before_kill} writes acknowledged at the freeze, {acknowledged_at_kill} at the kill), "
          f"standby promoted {(promoted_at - killed_at) * 1000:.0f} ms after the kill", flush=True)
    in_window = sum(1 for t, server in load.ok_times if frozen_at <= t < killed_at and server == 1)
    with open(args.relay_port_file + ".frozen") as f:
        frozen_commits = len(f.readlines())
    print(f"between the freeze and the kill: {frozen_commits} COMMIT(s) of A held back, {in_window} writes acknowledged "
          "through B", flush=True)
    print("answers: " + ", ".join(f"{n}×{s}" for s, n in sorted(load.statuses.items())), flush=True)

    # Writes succeed again: the first 2xx through each server after the promotion.
    back = {}
    for t, server in sorted(load.ok_times):
        if t > promoted_at and server not in back:
            back[server] = t
    for server, name in ((0, "A (through the relay)"), (1, "B")):
        ok = server in back
        check(ok, f"writes through {name} succeed again after the promotion"
              + (f": {(back[server] - promoted_at) * 1000:.0f} ms after it, "
                 f"{(back[server] - killed_at) * 1000:.0f} ms after the kill" if ok else ""))


def long_poll(a, b, household, child, token):
    """A long-poll parked on B is woken by a write through A (the change bus, after the failover)."""
    deadline = time.monotonic() + 10
    while True:  # B's change bus listens on the new primary again
        status, _ = Client(b_base(b)).call("GET", "/readyz")
        if status == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    head = {"moreComing": True}
    while head.get("moreComing"):  # the feed read to its end
        since = f"?since={head['nextToken']}" if "nextToken" in head else ""
        status, head = b.call("GET", f"/v1/households/{household}/changes{since}", token)
        if status != 200:
            return False, f"long-poll after the failover: HTTP {status} reading the feed"
    answer = {}

    def poll():
        answer["r"] = Client(b_base(b)).call(
            "GET", f"/v1/households/{household}/changes?since={head['nextToken']}&wait=20", token, timeout=30)
        answer["t"] = time.monotonic()

    t = threading.Thread(target=poll)
    t.start()
    for _ in range(200):
        conn = http.client.HTTPConnection(b.host, b.port, timeout=5)
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
        conn.close()
        if any(l.startswith("kidledger_parked_long_polls ") and float(l.split()[1]) >= 1 for l in text.splitlines()):
            break
        time.sleep(0.02)
    written = time.monotonic()
    status, _ = a.call("POST", f"/v1/households/{household}/children/{child}/transactions", token,
                       {"amountCents": 1, "note": "wake"})
    t.join()
    status_b, data = answer["r"]
    woken = any(x.get("note") == "wake" for x in data.get("transactions", []))
    ms = (answer["t"] - written) * 1000
    return (status == 201 and status_b == 200 and woken and ms < 5000,
            f"a long-poll parked on B was woken by a write through A ({ms:.0f} ms; write {status}, poll {status_b})")


def b_base(client):
    return f"http://{client.host}:{client.port}"


def children_of(pid):
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                if int(fields[1]) == pid:
                    out.append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    return out


def psql(cmd, sql):
    r = subprocess.run(cmd + ["-qAt", "-F", "\t", "-c", sql], capture_output=True, text=True, check=True)
    return [line.split("\t") for line in r.stdout.splitlines() if line]


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "relay":
        relay(sys.argv[2], int(sys.argv[3]))
        return 0
    p = argparse.ArgumentParser()
    p.add_argument("command", choices=["drive"])
    p.add_argument("--mode", choices=["sync", "async", "pooled"], required=True,
                   help="pooled: no failover, the load and the checks only")
    p.add_argument("--a", required=True)
    p.add_argument("--b", required=True)
    p.add_argument("--primary-data")
    p.add_argument("--relay-pid", type=int)
    p.add_argument("--relay-port-file", help="the relay's PORT_FILE (its .frozen file counts the COMMITs held back)")
    p.add_argument("--writers", type=int, default=16)
    p.add_argument("--part", default="load", help="the name on the last line (`<part>: N passed, N failed`)")
    p.add_argument("--before", type=float, default=2.0, help="seconds of load before the kill")
    p.add_argument("--detect", type=float, default=0.3, help="seconds from the kill to the promotion")
    p.add_argument("--after", type=float, default=2.0, help="seconds of load after the promotion")
    p.add_argument("--promote", type=shlex.split)
    p.add_argument("--psql", type=shlex.split, required=True)
    p.add_argument("--check", type=shlex.split, required=True)
    p.add_argument("--family-file", help="where to write the token, household and a child (JSON) for later checks")
    return drive(p.parse_args())


if __name__ == "__main__":
    sys.exit(main())
