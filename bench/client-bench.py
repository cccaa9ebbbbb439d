#!/usr/bin/env python3
"""Helper for bench/client.sh: device SDK benchmarks against a real kidledger-server.

1. `kidledger join` of a household of N transactions (default 100,000): wall time and the
   process's peak RSS (first pull of every page and its merge into a new replica).
2. On the joined replica, in process (XCTest `ClientBenchmarks`, release build, run only when
   KIDLEDGER_BENCH_STORE is set): snapshot() median and a durable local mutation's median.

KIDLEDGER_BENCH_TRACE=1 also prints each join's CPU time (user, system) and its stderr;
KIDLEDGER_BENCH_PERF=FILE records the joins with `perf record -g` into FILE.<build>.

--build says how the household is filled (both by default, each measured in turn):
  sql  created over HTTP, then filled by SQL into the stopped server's database the way the
       server writes rows (bench/sync-bench.py's `seed`), the server restarted;
  api  the way households are built: the transactions pushed through the API as sync
       batches of 400 (POST …/changes), then shared, the server still running (its WAL,
       caches and statements as a deployment would have them).
Each join also reports the server's CPU during it (utime+stime from /proc, all threads) and
the joiner's (its rusage), so a difference can be placed on one side."""
import argparse, importlib.util, shutil, json, os, statistics, subprocess, sys, tempfile, time, uuid

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("sync_bench", os.path.join(here, "sync-bench.py"))
sync_bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sync_bench)
Server, Client, seed = sync_bench.Server, sync_bench.Client, sync_bench.seed

def server_ticks(pid):
    """utime + stime of a process (all its threads), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

def push_batches(c, h, kid, count, batch=400):
    """Pushes `count` new transactions into `h` through the API, `batch` per sync push."""
    done = 0
    while done < count:
        n = min(batch, count - done)
        txs = [{"id": str(uuid.uuid4()), "childId": kid, "amountCents": 100, "note": "", "source": "manual",
                "createdAt": "2026-12-02T10:00:00.000Z"} for _ in range(n)]
        res = c.json("POST", f"/v1/households/{h}/changes", {"transactions": txs})["results"]
        assert all(r["status"] == "saved" for r in res), res[:3]
        done += n

def run_measured(argv, env=None):
    """Runs argv; returns (seconds, peak RSS in MB, stdout, user+system CPU seconds)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out = proc.stdout.read()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - t0
    if status != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {err.decode()[:500]}")
    if os.environ.get("KIDLEDGER_BENCH_TRACE"):
        print(err.decode(), end="")
        print(f"cpu user {usage.ru_utime:.3f} s sys {usage.ru_stime:.3f} s")
    return elapsed, usage.ru_maxrss / 1024, out.decode(), usage.ru_utime + usage.ru_stime

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--client", required=True)
    ap.add_argument("--port", type=int, default=18191)
    ap.add_argument("--repo", required=True)
    ap.add_argument("--scratch", required=True)
    ap.add_argument("--transactions", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--build", choices=["sql", "api", "both"], default="both")
    ap.add_argument("--skip-inprocess", action="store_true")
    a = ap.parse_args()
    builds = ["sql", "api"] if a.build == "both" else [a.build]
    store = None
    for i, build in enumerate(builds):
        store = measure(a, build, keep_store=i == len(builds) - 1 and not a.skip_inprocess)
    if not a.skip_inprocess and store:
        env = dict(os.environ, KIDLEDGER_BENCH_STORE=store)
        r = subprocess.run(["swift", "test", "-c", "release", "-Xswiftc", "-enable-testing", "--scratch-path", a.scratch,
                            "--filter", "ClientBenchmarks"], cwd=a.repo, env=env, capture_output=True, text=True)
        for line in r.stdout.splitlines() + r.stderr.splitlines():
            if line.startswith("bench:") or "error" in line:
                print(line, flush=True)
        shutil.rmtree(os.path.dirname(store), ignore_errors=True)

def measure(a, build, keep_store):
    """Builds a household of a.transactions the `build` way and joins it a.rounds times (after
    one round that warms the server). With keep_store, returns the last joiner's store (its
    folder is the caller's to remove); otherwise removes everything and returns None."""
    data = tempfile.mkdtemp(prefix="kidledger-client-bench-")
    server = Server(a.server, data, a.port)
    server.start()
    base = f"http://127.0.0.1:{a.port}"
    anon = Client(a.port)
    owner = anon.json("POST", "/v1/accounts", {"handle": "owner", "displayName": "Owner"})
    c = Client(a.port, owner["token"]["secret"])
    h = c.json("POST", "/v1/households", {"name": "Bench"})["id"]
    kid = c.json("POST", f"/v1/households/{h}/children", {"name": "Ada"})["id"]
    t0 = time.monotonic()
    if build == "sql":
        c.json("POST", f"/v1/households/{h}/share", {})
        server.stop()
        seed(os.path.join(data, "kidledger.sqlite"), h, kid, owner["account"]["id"], a.transactions, 1)
        print(f"[sql] seeded {a.transactions:,} transactions by SQL in {time.monotonic() - t0:.1f} s", flush=True)
        server.start()
    else:
        push_batches(c, h, kid, a.transactions)
        c.json("POST", f"/v1/households/{h}/share", {})
        wal = os.path.join(data, "kidledger.sqlite-wal")
        print(f"[api] pushed {a.transactions:,} transactions in batches of 400 in {time.monotonic() - t0:.1f} s"
              f" (WAL {os.path.getsize(wal) / 1e6 if os.path.exists(wal) else 0:.1f} MB)", flush=True)
    c = Client(a.port, owner["token"]["secret"])
    joins = []
    store = None
    ok = False
    try:
        for r in range(a.rounds + 1):  # the first round warms the server's page cache
            store = os.path.join(data, f"joiner{r}.store")
            env = dict(os.environ, KIDLEDGER_NO_AUTOSYNC="1")
            subprocess.run([a.client, "--store", store, "--server", base, "signup", "--handle", f"joiner{r}",
                            "--name", "Joiner"], check=True, capture_output=True, env=env)
            inv = c.json("POST", f"/v1/households/{h}/share/participants", {"handle": f"joiner{r}", "permission": "readWrite"})
            argv = [a.client, "--store", store, "join", inv["invitationId"]]
            if os.environ.get("KIDLEDGER_BENCH_PERF"):  # profile the join: perf record -g into that file
                argv = ["perf", "record", "-g", "-o", os.environ["KIDLEDGER_BENCH_PERF"] + "." + build, "--"] + argv
            s0 = server_ticks(server.proc.pid)
            seconds, rss, out, cpu = run_measured(argv, env)
            server_cpu = server_ticks(server.proc.pid) - s0
            counts = json.loads(subprocess.run([a.client, "--store", store, "--json", "children"], check=True,
                                               capture_output=True, env=env).stdout)
            if r > 0: joins.append((seconds, rss, cpu, server_cpu))
            print(f"[{build}] join round {r}: {seconds:.3f} s, peak RSS {rss:.1f} MB, joiner CPU {cpu:.3f} s, "
                  f"server CPU {server_cpu:.2f} s", flush=True)
        best = min(joins)
        result = {"build": build, "transactions": a.transactions, "seconds_best": round(best[0], 3),
                  "seconds_all": [round(j[0], 3) for j in joins], "peak_rss_mb_max": round(max(j[1] for j in joins), 1),
                  "joiner_cpu_s": [round(j[2], 3) for j in joins], "server_cpu_s": [round(j[3], 2) for j in joins]}
        print("join:", json.dumps(result), flush=True)
        print("children after join:", json.dumps(counts)[:200], flush=True)
        ok = True
    finally:
        server.stop()
        if not (ok and keep_store):
            shutil.rmtree(data, ignore_errors=True)
    return store if ok and keep_store else None

if __name__ == "__main__":
    main()
