#!/usr/bin/env python3
"""Every statement the PostgreSQL backend sends stays within one household, or is named global.

    household_scope.py extract SERVER_LOG > STATEMENTS
        The distinct statements that sessions named `kidledger-server` (the storage's; the
        tests' own sessions are `kidledger`) ran, from a server log written with
        `log_statement = all` and `log_line_prefix = '%m [%p] %a: '`; one a line, whitespace
        collapsed.

    household_scope.py check STATEMENTS [SOURCES]
        Checks each statement (after checking the checker on statements known good and bad):
        every household table it names (households, children, transactions, participants,
        subscriptions, device_sync) is pinned to one household — `household_id = $n` (for
        households `id = $n`), or `= ANY($n)` for a set of them, or an equality on the
        household key with a table already pinned — and every row it inserts there names its
        household; else it carries `/* global: <name> */` with a name on GLOBAL below. DDL,
        transaction control and session statements are not about rows and pass. With SOURCES
        (the storage's folder, Sources/LedgerStoragePostgres), also checks that each SQL text in
        its Swift files (a string literal starting with SELECT, INSERT, UPDATE, DELETE or WITH;
        interpolations match anything) was sent during the run, so no statement escapes the
        rule by never running in a test. Prints each failure and `sharding: N passed, N failed`
        (N: distinct statements logged, and SQL texts of the sources).

A sharded PostgreSQL (Citus) distributing these tables by household_id routes a pinned
statement to one shard; a global one runs on every shard (docs/scaling.md).
"""
import re
import sys

# Tables distributed by household (their key column: the household's id).
HOUSEHOLD_TABLES = {"households": "id", "children": "household_id", "transactions": "household_id",
                    "participants": "household_id", "subscriptions": "household_id", "device_sync": "household_id"}

# The statements allowed to span households, by the name in their `/* global: … */` comment.
GLOBAL = {
    "households of an account": "an account's own households and memberships, invitations and quotas: by account",
    "subscriptions of a purchase": "the households an App Store purchase entitles, found from the purchase",
    "check": "kidledger-server check: every balance against every ledger",
}

NOT_ABOUT_ROWS = re.compile(
    r"^(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE|SET|SHOW|RESET|LISTEN|UNLISTEN|NOTIFY|DEALLOCATE|DISCARD|"
    r"CREATE|ALTER|DROP|COMMENT|GRANT|REVOKE|DO|ANALYZE|VACUUM|TRUNCATE)\b", re.I)
KEYWORDS = {"where", "join", "left", "right", "inner", "full", "cross", "on", "set", "order", "group", "using",
            "values", "limit", "for", "returning", "as", "natural", "union", "having", "window", "default",
            "select", "and", "or", "not", "exists", "in", "is", "when", "then", "else", "end", "outer", "lateral"}
TABLE = re.compile(r"\b(FROM|JOIN|UPDATE|INTO)\s+(" + "|".join(HOUSEHOLD_TABLES) + r")\b(?:\s+(?:AS\s+)?([a-z_]\w*))?",
                   re.I)
PARAM = r"(?:\$\d+(?:::[\w\[\]]+)*|ANY\s*\(\s*\$\d+(?:::[\w\[\]]+)*\s*\))"
GLOBAL_MARK = re.compile(r"/\*\s*global:\s*(.*?)\s*\*/")


def problems(sql):
    """Why `sql` is not scoped to a household (empty: it is)."""
    text = sql.strip()
    mark = GLOBAL_MARK.search(text)
    if mark:
        return [] if mark.group(1) in GLOBAL else [f"global statement '{mark.group(1)}' is not on the list of global statements"]
    if NOT_ABOUT_ROWS.match(text):
        return []
    occurrences = []  # (qualifier, key column, is the INSERT target)
    for m in TABLE.finditer(text):
        table, alias = m.group(2).lower(), (m.group(3) or "").lower()
        if alias in KEYWORDS:
            alias = ""
        occurrences.append((alias or table, HOUSEHOLD_TABLES[table], m.group(1).upper() == "INTO", m.start()))
    if not occurrences:
        return []
    pinned = set()
    for qualifier, key, into, start in occurrences:
        if into:
            # The inserted row names its household in the column list.
            cols = re.match(r"\s*INTO\s+\w+(?:\s+AS\s+\w+)?\s*\(([^)]*)\)", text[start:], re.I)
            if cols and key in [c.strip().lower() for c in cols.group(1).split(",")]:
                pinned.add(qualifier)
            continue
        own = rf"(?:\b{qualifier}\.|(?<![\w.])){key}\s*=\s*{PARAM}|{PARAM}\s*=\s*(?:\b{qualifier}\.|(?<![\w.])){key}\b"
        if re.search(own, text, re.I):
            pinned.add(qualifier)
    # Joins on the household key carry a pin from one table to the other.
    keys = {q: k for q, k, _, _ in occurrences}
    pairs = re.findall(r"\b(\w+)\.(\w+)\s*=\s*(\w+)\.(\w+)\b", text)
    changed = True
    while changed:
        changed = False
        for a, ac, b, bc in pairs:
            a, ac, b, bc = a.lower(), ac.lower(), b.lower(), bc.lower()
            if keys.get(a) == ac and keys.get(b) == bc and (a in pinned) != (b in pinned):
                pinned.update((a, b))
                changed = True
    return [f"{q} is not filtered by its household ({k} = $n)" for q, k, _, _ in occurrences if q not in pinned]


# The checker's own test: what it must accept and what it must refuse.
GOOD = [
    "SELECT seq FROM households WHERE id = $1 FOR NO KEY UPDATE",
    "SELECT a, b FROM children WHERE household_id = $1 AND id = $2",
    "SELECT x FROM households h LEFT JOIN participants p ON p.household_id = h.id AND p.account_id = $2 WHERE h.id = $1",
    "INSERT INTO transactions (household_id, id, amount_cents) VALUES ($1, $2, $3)",
    "UPDATE children SET balance_cents = balance_cents + $3 WHERE household_id = $1 AND id = $2",
    "SELECT id FROM households WHERE id = ANY($1::text::uuid[]) ORDER BY id FOR NO KEY UPDATE",
    "/* global: check */ SELECT count(*) FROM transactions",
    "SELECT 1 FROM tokens WHERE id = $1",
]
BAD = [
    "SELECT * FROM transactions WHERE id = $1",
    "SELECT count(*) FROM children",
    "DELETE FROM participants WHERE account_id = $1",
    "SELECT x FROM households h JOIN participants p ON p.household_id = h.id WHERE p.account_id = $1",
    "INSERT INTO children (id, name) VALUES ($1, $2)",
    "UPDATE transactions t SET note = $2 WHERE t.id = $1",
    "/* global: anything goes */ SELECT * FROM children",
    "SELECT * FROM children WHERE household_id = household_id",
]


def source_statements(folder):
    """(file, SQL text) of every SQL string literal in the Swift files of `folder` (migrations aside)."""
    import glob
    out = []
    for path in sorted(glob.glob(folder.rstrip("/") + "/*.swift")):
        if path.endswith("Schema.swift"):
            continue
        text = open(path).read()
        literals = re.findall(r'"""(.*?)"""', text, re.S) + re.findall(r'"((?:SELECT|INSERT|UPDATE|DELETE|WITH)\b[^"\n]*)"', text)
        for lit in literals:
            sql = " ".join(lit.split())
            if re.match(r"(\\\([^)]*\))?(/\*.*?\*/ )?(SELECT|INSERT|UPDATE|DELETE|WITH)\b", sql):
                out.append((path.rsplit("/", 1)[-1], sql))
    return out


def unsent(sources, statements):
    """The sources' SQL texts that no logged statement matches."""
    missing = []
    for name, sql in sources:
        pattern = ".*".join(re.escape(part) for part in re.split(r"\\\((?:[^()]|\([^()]*\))*\)", sql))
        if not any(re.search(pattern, s) for s in statements):
            missing.append((name, sql))
    return missing


def check(path, sources_folder=None):
    for sql in GOOD:
        if problems(sql):
            sys.exit(f"household_scope.py refuses a scoped statement: {sql}: {problems(sql)}")
    for sql in BAD:
        if not problems(sql):
            sys.exit(f"household_scope.py accepts an unscoped statement: {sql}")
    with open(path) as f:
        statements = [line.rstrip("\n") for line in f if line.strip()]
    failed = 0
    named = {}
    for sql in statements:
        why = problems(sql)
        if why:
            failed += 1
            print(f"FAIL {'; '.join(why)}: {sql}")
        mark = GLOBAL_MARK.search(sql)
        if mark:
            named[mark.group(1)] = named.get(mark.group(1), 0) + 1
    sources = source_statements(sources_folder) if sources_folder else []
    if sources_folder and not sources:
        print(f"FAIL no SQL found in {sources_folder}")
        failed += 1
    missing = unsent(sources, statements)
    for name, sql in missing:
        print(f"FAIL never sent during the run (no test runs it): {name}: {sql}")
    if sources:
        print(f"{len(sources) - len(missing)} of the {len(sources)} SQL texts in {sources_folder} were sent during the run")
    for name, n in sorted(named.items()):
        print(f"global '{name}': {n} statement{'s' if n > 1 else ''}")
    if not statements:
        print("FAIL no statements were logged")
        failed = 1
    failed_statements = failed
    failed += len(missing)
    print(f"sharding: {(len(statements) - failed_statements if statements else 0) + len(sources) - len(missing)} passed, "
          f"{failed} failed")
    return 1 if failed else 0


PREFIX = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \S+ \[\d+\] (.*?): (\w+):  (.*)$")
STATEMENT = re.compile(r"^(?:statement|execute [^:]+): (.*)$", re.S)


def extract(path, application="kidledger-server"):
    seen = {}
    entry = None

    def done(e):
        if e and e[0] == application and e[1] == "LOG":
            m = STATEMENT.match(e[2])
            if m:
                sql = " ".join(m.group(1).split())
                seen.setdefault(sql, None)

    with open(path, errors="replace") as f:
        for line in f:
            m = PREFIX.match(line.rstrip("\n"))
            if m:
                done(entry)
                entry = [m.group(1), m.group(2), m.group(3)]
            elif entry is not None:
                entry[2] += "\n" + line.rstrip("\n")
    done(entry)
    for sql in seen:
        print(sql)
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "extract":
        sys.exit(extract(sys.argv[2]))
    if len(sys.argv) in (3, 4) and sys.argv[1] == "check":
        sys.exit(check(*sys.argv[2:]))
    sys.exit(__doc__)
