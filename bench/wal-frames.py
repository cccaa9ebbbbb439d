#!/usr/bin/env python3
"""WAL frames a durable POST costs, by what the transactions table's keys are made of.

Every page a commit changes is written whole to the WAL (checksummed, synced) and later
copied into the database file by the checkpoint thread, so pages changed per insert are
what the writer's I/O is made of. This takes the server's own schema (a database that
`kidledger-server accounts create` makes), inserts transactions the way the writer does
(one child of one household, `batch` per commit, the household's seq and the child's
balance written once per commit; a second household of 1,200 transactions beside it) and
counts the frames SQLite appends to the log (`PRAGMA wal_checkpoint`), per insert, for:

  as is           the schema as the server creates it (since version 8 without an id
                  index: the server keeps that in memory)
  v7 id index     with the unique index on (household_key, reversal_id) that versions 4-7
                  kept in the file, keyed by random values (SHA-1s of the ids)
  no per-household indexes   without the child, household and feed indexes
  blob ids        the transaction, child and author ids as 16-byte blobs too

The key (`reversal_id`) is written as the server writes it, a UUID's 16 bytes (schema
version 7). The last variant keeps the schema and changes only the values (SQLite stores a
blob in a TEXT column as a blob), so it shows what binary ids would save in pages, not their
CPU. Since schema version 6 rows name their household by an integer key; before it, by its
36-character id (2.87 frames per insert as is, 2.39 with one-character household ids, the
size of an integer key, on 2026-12-04); before version 7 the key was 36 characters of text
(2.28 as is). Uses the system SQLite through Python's sqlite3 module.

Usage: bench/wal-frames.py [inserts=40000] [batch=20]
Environment: SERVER_BIN (default: the release build, built when missing).
"""
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import uuid

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def server_bin():
    if os.environ.get("SERVER_BIN"):
        return os.environ["SERVER_BIN"]
    subprocess.run(["swift", "build", "-c", "release", "--product", "kidledger-server"], cwd=REPO, check=True,
                   stdout=sys.stderr)
    path = subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=REPO, check=True,
                          capture_output=True, text=True).stdout.strip()
    return os.path.join(path, "kidledger-server")


def fill(db, table, values):
    """Inserts a row into `table` with `values`, every other NOT NULL column without a default set to 0."""
    row = dict(values)
    for _, name, _, notnull, default, _ in db.execute(f"PRAGMA table_info({table})"):
        if notnull and default is None and name not in row:
            row[name] = 0
    names = ", ".join(row)
    db.execute(f"INSERT INTO {table} ({names}) VALUES ({', '.join('?' * len(row))})", list(row.values()))


def run(template, folder, variant, inserts, batch):
    path = os.path.join(folder, variant.replace(" ", "-").replace(",", "") + ".sqlite")
    shutil.copyfile(template, path)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA wal_autocheckpoint = 0")
    db.execute("PRAGMA foreign_keys = ON")
    db.execute("PRAGMA cache_size = -32768")
    if variant == "v7 id index":
        db.execute("CREATE UNIQUE INDEX transactions_id ON transactions(household_key, reversal_id)")
    if variant == "no per-household indexes":
        for index in ("transactions_child", "transactions_household", "transactions_feed"):
            db.execute(f"DROP INDEX {index}")
    blobs = variant == "blob ids"

    def key(u):  # an id as the variant stores it
        return u.bytes if blobs else str(u)

    owner = db.execute("SELECT id FROM accounts").fetchone()[0]
    households = sorted(str(uuid.uuid4()) for _ in range(2))
    ledger_key = {h: i + 1 for i, h in enumerate(households)}
    kids = {h: [key(uuid.uuid4()) for _ in range(11)] for h in households}
    db.execute("BEGIN IMMEDIATE")
    for h in households:
        fill(db, "households", {"id": h, "name": "Home", "currency": "EUR", "owner_account_id": owner, "change_tag": "v1",
                                "ledger_key": ledger_key[h]})
        for i, c in enumerate(kids[h]):
            fill(db, "children", {"id": c, "household_id": h, "name": f"Kid {i}", "sort_order": i,
                                  "modified_by": owner, "change_tag": "v1"})
    author = key(uuid.UUID(owner))
    seq = {h: 0 for h in households}

    def insert(h, c):
        seq[h] += 1
        u = uuid.uuid4()
        fill(db, "transactions", {"id": key(u), "household_key": ledger_key[h], "child_id": c, "amount_cents": 1, "note": "bench",
                                  "source": "api", "author_account_id": author, "seq": seq[h],
                                  "reversal_id": uuid.uuid5(uuid.NAMESPACE_OID, str(u)).bytes})

    posting, other = households
    for i in range(1200):
        insert(other, kids[other][i % 11])
    db.execute("COMMIT")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    frames = commits = 0
    child = kids[posting][0]
    for _ in range(0, inserts, batch):
        db.execute("BEGIN IMMEDIATE")
        for _ in range(batch):
            insert(posting, child)
        db.execute("UPDATE households SET seq = ? WHERE id = ?", (seq[posting], posting))
        db.execute("UPDATE children SET balance_cents = balance_cents + ? WHERE household_id = ? AND id = ?",
                   (batch, posting, child))
        db.execute("COMMIT")
        commits += 1
        if commits % 200 == 0:
            frames += db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1]
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    frames += db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1]
    db.close()
    return frames / (commits * batch)


def main():
    inserts = int(sys.argv[1]) if len(sys.argv) > 1 else 40000
    batch = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    with tempfile.TemporaryDirectory() as folder:
        subprocess.run([server_bin(), "accounts", "create", "--handle", "bench", "--name", "Bench",
                        "--data-dir", folder], check=True, stdout=subprocess.DEVNULL)
        template = os.path.join(folder, "kidledger.sqlite")
        db = sqlite3.connect(template)
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page = db.execute("PRAGMA page_size").fetchone()[0]
        db.close()
        print(f"{inserts} inserts, {batch} per commit, {page}-byte pages (SQLite {sqlite3.sqlite_version})")
        print(f"{'variant':28s} WAL frames per insert")
        for variant in ("as is", "v7 id index", "no per-household indexes", "blob ids"):
            print(f"{variant:28s} {run(template, folder, variant, inserts, batch):6.2f}", flush=True)


if __name__ == "__main__":
    main()
