#!/usr/bin/env python3
"""Helper for bench/client.sh: device SDK benchmarks against a real kidledger-server.

1. `kidledger join` of a household of N transactions (default 100,000): wall time and the
   process's peak RSS (first pull of every page and its merge into a new replica).
2. On the joined replica, in process (XCTest `ClientBenchmarks`, release build, run only when
   KIDLEDGER_BENCH_STORE is set): snapshot() median and a durable local mutation's median.

KIDLEDGER_BENCH_TRACE=1 also prints each join's CPU time (user, system) and its stderr;
KIDLEDGER_BENCH_PERF=FILE records the joins with `perf record -g` into FILE.

The household is created over HTTP, then filled by SQL into the stopped server's database the
way the server writes rows (bench/sync-bench.py's `seed`)."""
import argparse, importlib.util, shutil, json, os, statistics, subprocess, sys, tempfile, time

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("sync_bench", os.path.join(here, "sync-bench.py"))
sync_bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sync_bench)
Server, Client, seed = sync_bench.Server, sync_bench.Client, sync_bench.seed

def run_measured(argv, env=None):
    """Runs argv; returns (seconds, peak RSS in MB, stdout)."""
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
    return elapsed, usage.ru_maxrss / 1024, out.decode()

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--client", required=True)
    ap.add_argument("--port", type=int, default=18191)
    ap.add_argument("--repo", required=True)
    ap.add_argument("--scratch", required=True)
    ap.add_argument("--transactions", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--skip-inprocess", action="store_true")
    a = ap.parse_args()
    data = tempfile.mkdtemp(prefix="kidledger-client-bench-")
    server = Server(a.server, data, a.port)
    server.start()
    base = f"http://127.0.0.1:{a.port}"
    anon = Client(a.port)
    owner = anon.json("POST", "/v1/accounts", {"handle": "owner", "displayName": "Owner"})
    c = Client(a.port, owner["token"]["secret"])
    h = c.json("POST", "/v1/households", {"name": "Bench"})["id"]
    kid = c.json("POST", f"/v1/households/{h}/children", {"name": "Ada"})["id"]
    c.json("POST", f"/v1/households/{h}/share", {})
    server.stop()
    t0 = time.monotonic()
    seed(os.path.join(data, "kidledger.sqlite"), h, kid, owner["account"]["id"], a.transactions, 1)
    print(f"seeded {a.transactions:,} transactions in {time.monotonic() - t0:.1f} s", flush=True)
    server.start()
    c = Client(a.port, owner["token"]["secret"])
    joins = []
    store = None
    try:
        for r in range(a.rounds + 1):  # the first round warms the server's page cache
            store = os.path.join(data, f"joiner{r}.store")
            env = dict(os.environ, KIDLEDGER_NO_AUTOSYNC="1")
            subprocess.run([a.client, "--store", store, "--server", base, "signup", "--handle", f"joiner{r}",
                            "--name", "Joiner"], check=True, capture_output=True, env=env)
            inv = c.json("POST", f"/v1/households/{h}/share/participants", {"handle": f"joiner{r}", "permission": "readWrite"})
            argv = [a.client, "--store", store, "join", inv["invitationId"]]
            if os.environ.get("KIDLEDGER_BENCH_PERF"):  # profile the join: perf record -g into that file
                argv = ["perf", "record", "-g", "-o", os.environ["KIDLEDGER_BENCH_PERF"], "--"] + argv
            seconds, rss, out = run_measured(argv, env)
            counts = json.loads(subprocess.run([a.client, "--store", store, "--json", "children"], check=True,
                                               capture_output=True, env=env).stdout)
            if r > 0: joins.append((seconds, rss))
            print(f"join round {r}: {seconds:.3f} s, peak RSS {rss:.1f} MB", flush=True)
        best = min(joins)
        result = {"join": {"transactions": a.transactions, "seconds_best": round(best[0], 3),
                           "seconds_all": [round(s, 3) for s, _ in joins], "peak_rss_mb_max": round(max(r for _, r in joins), 1)}}
        print("join:", json.dumps(result["join"]), flush=True)
        print("children after join:", json.dumps(counts)[:200], flush=True)
        if not a.skip_inprocess:
            env = dict(os.environ, KIDLEDGER_BENCH_STORE=store)
            r = subprocess.run(["swift", "test", "-c", "release", "-Xswiftc", "-enable-testing", "--scratch-path", a.scratch,
                                "--filter", "ClientBenchmarks"], cwd=a.repo, env=env, capture_output=True, text=True)
            for line in r.stdout.splitlines() + r.stderr.splitlines():
                if line.startswith("bench:") or "error" in line:
                    print(line, flush=True)
    finally:
        server.stop()
        shutil.rmtree(data, ignore_errors=True)

if __name__ == "__main__":
    main()
