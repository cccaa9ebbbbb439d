#!/usr/bin/env python3
"""Sends an exact number of requests over a few keep-alive connections and checks every
answer's status: the load for counting instructions per request (bench/instructions.sh),
where wrk's fixed duration would leave the request count to chance.

Usage: exact-load.py PORT KIND REQUESTS CONNECTIONS [HOUSEHOLD CHILD TOKEN] [TAG]
KIND: healthz | children | post (a new transaction per request, Idempotency-Key unique per TAG)
      | push (POST …/changes with 400 new transactions per request, random ids unique per TAG;
        CHILD may be a comma-separated list, taken in turn)
      | feed (GET …/changes?limit=500 of HOUSEHOLD: the first page)
"""
import random
import selectors
import socket
import sys

port, kind, total, conns = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
hh, child, token = (sys.argv[5:8] + ["", "", ""])[:3]
tag = sys.argv[8] if len(sys.argv) > 8 else "x"
children = child.split(",")
child = children[0]
rng = random.Random(tag)


def push_body():
    # Ids start with random bits, as a device's random UUIDs would: inserts land all over
    # the id index.
    records = [f'{{"id":"{rng.getrandbits(128):032x}","childId":"{children[i % len(children)]}","amountCents":1,'
               f'"note":"","source":"manual","createdAt":"2026-12-02T10:00:00.000Z"}}' for i in range(400)]
    for i, r in enumerate(records):
        h = r[7:39]
        records[i] = r[:7] + f"{h[:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:32]}" + r[39:]
    return '{"transactions":[' + ",".join(records) + ']}'


def request(conn_index, n):
    host = f"Host: 127.0.0.1:{port}\r\n"
    if kind == "healthz":
        return f"GET /healthz HTTP/1.1\r\n{host}\r\n".encode()
    if kind == "children":
        return f"GET /v1/households/{hh}/children HTTP/1.1\r\n{host}Authorization: Bearer {token}\r\n\r\n".encode()
    if kind == "post":
        body = '{"amountCents":1,"note":"bench"}'
        return (f"POST /v1/households/{hh}/children/{child}/transactions HTTP/1.1\r\n{host}"
                f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\nIdempotency-Key: exact-{tag}-{conn_index}-{n}\r\n\r\n{body}").encode()
    if kind == "feed":
        return f"GET /v1/households/{hh}/changes?limit=500 HTTP/1.1\r\n{host}Authorization: Bearer {token}\r\n\r\n".encode()
    if kind == "push":
        body = push_body()
        return (f"POST /v1/households/{hh}/changes HTTP/1.1\r\n{host}"
                f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n{body}").encode()
    raise SystemExit(f"unknown kind {kind}")


expected = 201 if kind == "post" else 200
sel = selectors.DefaultSelector()
per = [total // conns + (1 if i < total % conns else 0) for i in range(conns)]
state = {}
for i in range(conns):
    if per[i] == 0:
        continue
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(request(i, 0))
    state[s] = {"i": i, "sent": 1, "done": 0, "buf": b""}
    sel.register(s, selectors.EVENT_READ)

bad = 0
while state:
    for key, _ in sel.select():
        s = key.fileobj
        st = state[s]
        data = s.recv(65536)
        if not data:
            raise SystemExit("server closed a connection")
        st["buf"] += data
        while True:
            buf = st["buf"]
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                break
            head = buf[:end].decode("latin-1")
            length = 0
            for line in head.split("\r\n")[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            if len(buf) < end + 4 + length:
                break
            status = int(head.split(" ", 2)[1])
            if kind == "push" and status == expected and buf[end + 4:end + 4 + length].count(b'"saved"') != 400:
                status = -1  # every pushed transaction is new: each must be saved
            if status != expected:
                bad += 1
                if bad < 3:
                    print(f"unexpected {status}: {buf[:end + 4 + length][:300]!r}", file=sys.stderr)
            st["buf"] = buf[end + 4 + length:]
            st["done"] += 1
            if st["sent"] < per[st["i"]]:
                s.sendall(request(st["i"], st["sent"]))
                st["sent"] += 1
        if st["done"] >= per[st["i"]]:
            sel.unregister(s)
            s.close()
            del state[s]
if bad:
    raise SystemExit(f"{bad} of {total} answers were not {expected}")
