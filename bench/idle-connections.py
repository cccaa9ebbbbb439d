#!/usr/bin/env python3
"""Helper for bench/idle-connections.sh: spawn the server, time start-up to the
"listening" line, open N keep-alive connections (one request each, then idle), and report
the server's VmRSS before and after."""
import argparse, os, resource, select, socket, subprocess, sys, tempfile, time

def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--connections", type=int, default=10000)
    ap.add_argument("--port", type=int, default=18183)
    a = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, a.connections + 1024)), hard))

    data = tempfile.mkdtemp()
    t0 = time.monotonic()
    # Server output goes to a file (a pipe nobody drains would block a logging server).
    log_path = os.path.join(data, "server.log")
    log = open(log_path, "wb")
    # Every connection comes from one address here: no per-address cap.
    proc = subprocess.Popen([a.server, "serve", "--port", str(a.port), "--data-dir", data,
                             "--max-connections-per-address", "0"],
                            stdout=log, stderr=subprocess.STDOUT)
    startup = None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and startup is None and proc.poll() is None:
        with open(log_path, "rb") as f:
            if b'"listening"' in f.read():
                startup = time.monotonic() - t0
                break
        time.sleep(0.001)
    if startup is None:
        with open(log_path, "rb") as f:
            print("server did not log a listening line:", f.read().decode(errors="replace"), file=sys.stderr)
        proc.kill()
        sys.exit(1)
    time.sleep(0.2)
    before = rss_kib(proc.pid)

    request = b"GET /healthz HTTP/1.1\r\nHost: bench\r\n\r\n"
    socks = []
    failed = 0
    drained = 0
    t1 = time.monotonic()
    def drain():
        nonlocal drained, failed
        for s in socks[drained:]:
            try:
                if not s.recv(4096).startswith(b"HTTP/1.1 200"):
                    failed += 1
            except OSError:
                failed += 1
        drained = len(socks)
    for i in range(a.connections):
        try:
            s = socket.create_connection(("127.0.0.1", a.port), timeout=5)
            s.sendall(request)
            socks.append(s)
        except OSError:
            failed += 1
        if len(socks) - drained >= 500:
            drain()
    drain()
    opened = time.monotonic() - t1
    time.sleep(1.0)
    after = rss_kib(proc.pid)

    print(f"start-up to listening line: {startup * 1000:.0f} ms")
    print(f"RSS before: {before / 1024:.1f} MiB")
    print(f"RSS with {len(socks)} idle keep-alive connections: {after / 1024:.1f} MiB "
          f"(+{(after - before) / 1024:.1f} MiB, {((after - before) * 1024 / max(1, len(socks))):.0f} B/conn)")
    print(f"opened in {opened:.1f} s, failures: {failed}")
    for s in socks:
        s.close()
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
    print(f"exit status after SIGTERM: {proc.returncode}")

if __name__ == "__main__":
    main()
