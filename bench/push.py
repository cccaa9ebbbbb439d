#!/usr/bin/env python3
"""Helpers of bench/push.sh (figures, not timed tests).

  push.py setup BASE DEVICES GATEWAY_URL
      Mum's household with a child, Dad joined with DEVICES device tokens, each registered
      for push at GATEWAY_URL (when not "-"). Prints shell assignments.
  push.py latency BASE SAMPLES
      Starts a loopback gateway (a Matrix push gateway that answers {"rejected": []}),
      expects the server at BASE to send to it (port from $GATEWAY_PORT), makes the family
      with one push device and measures, SAMPLES times, from the durable POST's answer
      (and from its request) to the wake arriving at the gateway.
"""
import http.client
import json
import os
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse


def call(base, method, path, token=None, body=None):
    u = urlparse(base)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = "Bearer " + token
    c.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, (json.loads(data) if data else None)


def family(base, devices, gateway):
    tag = uuid.uuid4().hex[:6]
    _, mum = call(base, "POST", "/v1/accounts", body={"handle": "mum" + tag, "displayName": "Mum"})
    _, dad = call(base, "POST", "/v1/accounts", body={"handle": "dad" + tag, "displayName": "Dad"})
    mt, dt = mum["token"]["secret"], dad["token"]["secret"]
    _, h = call(base, "POST", "/v1/households", mt, {"name": "Bench"})
    _, c = call(base, "POST", f"/v1/households/{h['id']}/children", mt, {"name": "Ada"})
    call(base, "POST", f"/v1/households/{h['id']}/share", mt)
    _, inv = call(base, "POST", f"/v1/households/{h['id']}/share/participants", mt,
                  {"handle": "dad" + tag, "permission": "readWrite"})
    call(base, "POST", f"/v1/invitations/{inv['invitationId']}/accept", dt)
    for i in range(devices):
        _, t = call(base, "POST", "/v1/tokens", dt, {"deviceName": f"device {i}"})
        if gateway != "-":
            s, _ = call(base, "PUT", f"/v1/tokens/{t['id']}/push", dt,
                        {"appId": "com.example.bench", "pushKey": os.urandom(32).hex()})
            assert s == 204, s
    return mt, h["id"], c["id"]


class Gateway(BaseHTTPRequestHandler):
    arrivals = []
    cond = threading.Condition()

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        now = time.monotonic()
        payload = json.dumps({"rejected": []}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
        with Gateway.cond:
            Gateway.arrivals.append((now, json.loads(body)))
            Gateway.cond.notify_all()

    def log_message(self, *args):
        pass


def latency(base, samples):
    port = int(os.environ["GATEWAY_PORT"])
    server = ThreadingHTTPServer(("127.0.0.1", port), Gateway)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    mt, h, c = family(base, 1, "default")
    u = urlparse(base)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    from_ack, from_send = [], []
    for i in range(samples):
        with Gateway.cond:
            before = len(Gateway.arrivals)
        sent = time.monotonic()
        conn.request("POST", f"/v1/households/{h}/children/{c}/transactions",
                     body=json.dumps({"amountCents": 1}),
                     headers={"Content-Type": "application/json", "Authorization": "Bearer " + mt})
        r = conn.getresponse()
        r.read()
        acked = time.monotonic()
        assert r.status == 201, r.status
        with Gateway.cond:
            ok = Gateway.cond.wait_for(lambda: len(Gateway.arrivals) > before, timeout=10)
            assert ok, "no wake within 10 s"
            arrived = Gateway.arrivals[before][0]
        from_ack.append(max(0.0, arrived - acked))
        from_send.append(arrived - sent)
        time.sleep(0.005)
    server.shutdown()

    def pct(xs, p):
        xs = sorted(xs)
        return xs[min(len(xs) - 1, int(len(xs) * p))] * 1000

    print(f"commit -> wake at the gateway over {samples} writes: "
          f"from the POST's answer p50 {pct(from_ack, 0.5):.2f} ms, p99 {pct(from_ack, 0.99):.2f} ms, "
          f"max {max(from_ack) * 1000:.2f} ms; from the POST's request p50 {pct(from_send, 0.5):.2f} ms, "
          f"p99 {pct(from_send, 0.99):.2f} ms")


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "setup":
        mt, h, c = family(sys.argv[2], int(sys.argv[3]), sys.argv[4])
        print(f"token={mt} hh={h} child={c}")
    elif cmd == "latency":
        latency(sys.argv[2], int(sys.argv[3]))
    else:
        sys.exit(__doc__)
