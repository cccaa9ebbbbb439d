#!/usr/bin/env python3
"""Helper for bench/connection-flood.sh: one address floods the server with idle
connections while another address measures /healthz.

Flooder processes keep --connections connections from 127.0.0.1 open or opening, never
sending a byte, and opens a new one whenever the server closes one (refused at the
per-address cap, or closed at the header timeout). Meanwhile this process sends
sequential GET /healthz requests from 127.0.0.2, each on a new connection, and records
their latency and every failure. Passes (exit 0) when no request failed and p99 < 50 ms."""
import argparse, json, multiprocessing, os, resource, selectors, socket, subprocess, sys, tempfile, time

IP_BIND_ADDRESS_NO_PORT = 24  # Linux: pick the port at connect(), not at bind()


def flood(port, target, stop, report, who):
    """Keeps `target` sockets to 127.0.0.1:port open or connecting until `stop` is set."""
    sel = selectors.DefaultSelector()
    live = 0
    stats = {"opened": 0, "closed_by_server": 0, "answered_503": 0, "connect_errors": 0, "held_max": 0}
    last = time.monotonic()
    while not stop.is_set():
        # Open up to 2,000 at a time, then see what the server did with them.
        budget = min(2000, target - live)
        for _ in range(budget):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            try:
                s.connect(("127.0.0.1", port))
            except BlockingIOError:
                pass
            except OSError:
                stats["connect_errors"] += 1
                s.close()
                time.sleep(0.001)
                break
            sel.register(s, selectors.EVENT_READ)
            live += 1
            stats["opened"] += 1
        for key, _ in sel.select(timeout=0.05):
            s = key.fileobj
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            if data.startswith(b"HTTP/1.1 503"):
                stats["answered_503"] += 1
            sel.unregister(s)
            s.close()
            live -= 1
            stats["closed_by_server"] += 1
        stats["held_max"] = max(stats["held_max"], live)
        if time.monotonic() - last > 0.5:
            last = time.monotonic()
            report.put(("progress", who, (stats["opened"], live)))
    for key in list(sel.get_map().values()):
        key.fileobj.close()
    report.put(("done", who, stats))


def fetch(port, path, timeout):
    """GET `path` from 127.0.0.2 on a new connection (Connection: close); the whole answer."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.setsockopt(socket.SOL_IP, IP_BIND_ADDRESS_NO_PORT, 1)
        s.bind(("127.0.0.2", 0))
        s.settimeout(timeout)
        s.connect(("127.0.0.1", port))
        s.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return data
            data += chunk
    finally:
        s.close()


def healthz(port, timeout=2.0):
    """One GET /healthz: (seconds, error or None)."""
    t0 = time.monotonic()
    try:
        data = fetch(port, "/healthz", timeout)
    except OSError as e:
        return time.monotonic() - t0, type(e).__name__
    if not data.startswith(b"HTTP/1.1 200"):
        return time.monotonic() - t0, (data.split(b"\r\n", 1)[0].decode(errors="replace") or "no answer")
    return time.monotonic() - t0, None


def measure(port, seconds):
    latencies, errors = [], {}
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        t, err = healthz(port)
        if err:
            errors[err] = errors.get(err, 0) + 1
        else:
            latencies.append(t)
        time.sleep(0.002)
    return latencies, errors


def summary(latencies, errors):
    lat = sorted(latencies)
    pct = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] * 1000 if lat else float("nan")
    return {"requests": len(lat) + sum(errors.values()), "failed": sum(errors.values()), "errors": errors,
            "p50_ms": round(pct(0.50), 2), "p90_ms": round(pct(0.90), 2), "p99_ms": round(pct(0.99), 2),
            "max_ms": round(lat[-1] * 1000, 2) if lat else None}


def metrics(port):
    text = fetch(port, "/metrics", 5).decode()
    return {line.split(" ")[0]: line.split(" ")[1] for line in text.splitlines()
            if line.startswith("kidledger_connections_refused_total") or line.startswith("kidledger_open_connections")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--connections", type=int, default=20000)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--port", type=int, default=18184)
    ap.add_argument("--server-args", default="")
    a = ap.parse_args()
    # Each flooder process holds at most 10,000 sockets, so that the descriptor limit (per
    # process) need not exceed what an unprivileged user usually has.
    flooders = max(1, -(-a.connections // 10000))
    share = -(-a.connections // flooders)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = share + 1024
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, want), hard))
    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < want:
        sys.exit(f"needs {want} descriptors per process (ulimit -n); the hard limit is {hard}")

    data = tempfile.mkdtemp()
    log_path = os.path.join(data, "server.log")
    log = open(log_path, "wb")
    proc = subprocess.Popen([a.server, "serve", "--port", str(a.port), "--data-dir", data, "--log-level", "warning"]
                            + a.server_args.split(), stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        listening = None
        while listening is None and time.monotonic() < deadline and proc.poll() is None:
            with open(log_path) as f:
                for line in f:
                    if '"listening"' in line:
                        listening = json.loads(line)
            time.sleep(0.01)
        if listening is None:
            sys.exit("server did not start: " + open(log_path).read())
        print("server:", {k: listening[k] for k in ("maxConnections", "maxConnectionsPerAddress") if k in listening}, flush=True)

        base = summary(*measure(a.port, 3))
        print("healthz from 127.0.0.2, no flood:", json.dumps(base), flush=True)

        stop, report = multiprocessing.Event(), multiprocessing.Queue()
        procs = [multiprocessing.Process(target=flood, args=(a.port, share, stop, report, i)) for i in range(flooders)]
        for p in procs:
            p.start()
        # Measure once the flooders have opened as many connections as they keep open.
        progress = {}
        while sum(o for o, _ in progress.values()) < a.connections:
            kind, who, value = report.get()
            if kind == "progress":
                progress[who] = value
        opened, live = sum(o for o, _ in progress.values()), sum(l for _, l in progress.values())
        print(f"flood: {opened} connections opened from 127.0.0.1 by {flooders} processes, {live} open or opening; "
              "each one the server closes is opened again", flush=True)
        under = summary(*measure(a.port, a.seconds))
        print(f"healthz from 127.0.0.2 during the flood ({a.seconds:.0f} s):", json.dumps(under), flush=True)
        counters = metrics(a.port)
        stop.set()
        stats = {}
        done = 0
        while done < flooders:
            kind, _, value = report.get()
            if kind == "done":
                done += 1
                for k, v in value.items():
                    stats[k] = stats.get(k, 0) + v
        for p in procs:
            p.join()
        print("flooders (summed):", json.dumps(stats))
        print("server metrics:", json.dumps(counters))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
    # The server reports the refusals still waiting when it stops.
    with open(log_path) as f:
        refusal_lines = [json.loads(l) for l in f if '"connections_refused"' in l]
    logged = sum(sum(l["refused"].values()) for l in refusal_lines)
    print(f"connections_refused log lines: {len(refusal_lines)} (refusals in them: {logged})")
    ok = under["failed"] == 0 and under["p99_ms"] < 50
    print("PASS" if ok else "FAIL", "(no failed request and p99 < 50 ms)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
