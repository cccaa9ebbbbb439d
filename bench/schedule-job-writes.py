#!/usr/bin/env python3
"""How much the schedule job's catch-up slows durable writes: runs the schedule-job bench in
its serve mode (bench/schedule-job/main.swift --serve: N schedules seeded, HTTP on a
loopback port), sends POST …/transactions at a fixed rate for SECONDS (open loop: each
request's latency counts from the instant it was due to be sent, so a stalled server is
charged for the requests waiting behind it), and at JOB_AT seconds runs the job: with every
schedule due ("due") or with none due ("none", the same database and load). Runs alternate
none/due, PAIRS pairs, each over a fresh database (the caller's RESET command between runs).

Prints, per run: the writes' latency percentiles over the whole load, over the job's run
(job_*) and over the rest of the run (rest_*: the control, as the machine's other load moves), the server process's CPU per write (its CPU over the load ÷ writes; in "due" runs it
includes the job's), the job's payments, CPU and wall time; then the medians of each kind
and the slow-down (due ÷ none − 1).

Usage: schedule-job-writes.py BENCH_BIN [--schedules 20000] [--rate 200] [--seconds 60]
       [--job-at 5] [--pairs 2] [--connections 16] [--reset 'shell command']
"""
import argparse
import collections
import json
import selectors
import socket
import statistics
import subprocess
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("bin")
ap.add_argument("--schedules", type=int, default=20000)
ap.add_argument("--rate", type=float, default=200)
ap.add_argument("--seconds", type=float, default=60)
ap.add_argument("--job-at", type=float, default=5)
ap.add_argument("--pairs", type=int, default=2)
ap.add_argument("--connections", type=int, default=16)
ap.add_argument("--reset", default="")
args = ap.parse_args()


def pct(values, p):
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, int(p / 100 * len(v)))]


def load(port, hh, child, token, job):
    """Paced POSTs for args.seconds; calls job() once at args.job_at (its (start, end, line))."""
    sel = selectors.DefaultSelector()

    def connect():
        s = socket.create_connection(("127.0.0.1", port))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.setblocking(False)
        return s
    # Taken in turn (oldest free first): every connection stays in use, none idles out.
    free = collections.deque(connect() for _ in range(args.connections))
    state = {}  # socket -> [due time, buffer]
    interval = 1 / args.rate
    total = int(args.seconds * args.rate)
    latencies = []  # (due, latency)
    failures = 0
    start = time.monotonic()
    sent = 0
    job_done = None
    job_thread = None
    import threading

    def run_job():
        nonlocal job_done
        a = time.monotonic()
        line = job()
        job_done = (a - start, time.monotonic() - start, line)

    while sent < total or state:
        now = time.monotonic()
        if job_thread is None and now - start >= args.job_at:
            job_thread = threading.Thread(target=run_job)
            job_thread.start()
        while sent < total and start + sent * interval <= now and free:
            s = free.popleft()
            due = start + sent * interval
            body = '{"amountCents":1,"note":"load"}'
            s.send((f"POST /v1/households/{hh}/children/{child}/transactions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(body)}\r\n\r\n{body}").encode())
            state[s] = [due, b""]
            sel.register(s, selectors.EVENT_READ)
            sent += 1
        wait = max(0.0, start + sent * interval - time.monotonic()) if sent < total and free else 0.05
        for key, _ in sel.select(timeout=wait):
            s = key.fileobj
            chunk = s.recv(65536)
            if not chunk:
                # Closed by the server: the request counts as failed, a new connection replaces it.
                failures += 1
                sel.unregister(s)
                del state[s]
                s.close()
                free.append(connect())
                continue
            st = state[s]
            st[1] += chunk
            head, sep, rest = st[1].partition(b"\r\n\r\n")
            if not sep:
                continue
            length = 0
            for line in head.split(b"\r\n")[1:]:
                k, _, v = line.partition(b":")
                if k.strip().lower() == b"content-length":
                    length = int(v)
            if len(rest) < length:
                continue
            done = time.monotonic()
            if not head.startswith(b"HTTP/1.1 201"):
                failures += 1
            latencies.append((st[0] - start, done - st[0]))
            sel.unregister(s)
            del state[s]
            free.append(s)
    elapsed = time.monotonic() - start
    if job_thread:
        job_thread.join()
    for s in free:
        s.close()
    return latencies, failures, elapsed, job_done


def one(kind):
    if args.reset:
        subprocess.run(args.reset, shell=True, check=True)
    p = subprocess.Popen([args.bin, str(args.schedules), "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    ready = p.stdout.readline().split()
    assert ready and ready[0] == "ready", ready
    port, hh, child, token = int(ready[1]), ready[2], ready[3], ready[4]

    def ask(line):
        p.stdin.write(line + "\n")
        p.stdin.flush()
        return p.stdout.readline().split()

    time.sleep(1)
    before = ask("cpu")
    lat, failures, elapsed, job = load(port, hh, child, token, lambda: ask(f"job {kind}"))
    after = ask("cpu")
    p.stdin.write("quit\n")
    p.stdin.flush()
    p.wait()
    cpu = float(after[1]) - float(before[1])
    pg = float(after[2]) - float(before[2])
    all_ms = [l * 1000 for _, l in lat]
    js, je, line = job
    during = [l * 1000 for due, l in lat if js <= due <= je]
    # The same run outside the job's window (a second after it left out): a control that
    # moves with the machine's other load.
    rest = [l * 1000 for due, l in lat if due < js or due > je + 1]
    r = {"kind": kind, "writes": len(lat), "failures": failures, "rate": len(lat) / elapsed,
         "p50": pct(all_ms, 50), "p90": pct(all_ms, 90), "p99": pct(all_ms, 99), "max": max(all_ms),
         "mean": statistics.mean(all_ms),
         "job_p50": pct(during, 50), "job_p99": pct(during, 99), "job_mean": statistics.mean(during) if during else float("nan"),
         "job_writes": len(during), "rest_p50": pct(rest, 50), "rest_mean": statistics.mean(rest),
         "cpu_per_write_us": cpu / len(lat) * 1e6, "server_cpu": cpu, "pg_cpu": pg,
         "payments": int(line[1]), "job_cpu": float(line[2]), "job_wall": float(line[3])}
    print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in r.items()}), flush=True)
    return r


runs = []
for _ in range(args.pairs):
    runs.append(one("none"))
    runs.append(one("due"))
summary = {}
for key in ["mean", "p50", "p90", "p99", "cpu_per_write_us", "server_cpu", "pg_cpu"]:
    a = statistics.median(r[key] for r in runs if r["kind"] == "none")
    b = statistics.median(r[key] for r in runs if r["kind"] == "due")
    summary[key] = {"none": round(a, 3), "due": round(b, 3), "slowdown_pct": round((b / a - 1) * 100, 1) if a else None}
during = [r["job_mean"] / r["rest_mean"] for r in runs if r["kind"] == "due" and r["job_writes"]]
summary["due_job_mean_vs_rest_mean"] = [round(x, 3) for x in during]
print(json.dumps({"summary": summary}), flush=True)
