#!/usr/bin/env bash
# The whole test suite: the portability check, unit and real-socket tests (swift test), the
# server's tests again over PostgreSQL (scripts/test-postgres.sh), the scaled topology's smoke
# test (deploy/local-topology.sh: PostgreSQL, three servers, nginx), the OpenAPI contract tests
# (schemathesis) against a freshly built server over SQLite and one over PostgreSQL, the
# client-generator check (scripts/client-check.sh), the App Store peer check
# (scripts/app-store-peer.sh) and the ID token peer check (scripts/jwt-peer.sh). Installs what is
# missing first: Debian's C libraries, curl and jq, python3-venv, and the pinned Python tools
# into .venv/ (never the machine's Python).
#
# Every part runs, whatever the one before it answered (the server-dependent parts need the
# build); the run ends with what each part counted and one line
# `total: N passed, N failed, N skipped`.
# Exit status 0 when nothing failed. Logs and reports stay in .build/test-results/.
set -uo pipefail
cd "$(dirname "$0")/.."

apt_install() {
  echo "installing $*"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null; } || exit 1
}
need=()
for pc in sqlite3 libcrypto zlib; do pkg-config --exists "$pc" 2>/dev/null || need=(libsqlite3-dev libssl-dev zlib1g-dev pkg-config); done
for tool in curl jq; do command -v "$tool" >/dev/null 2>&1 || need+=("$tool"); done
[ ${#need[@]} -eq 0 ] || apt_install "${need[@]}"
. scripts/python-env.sh || { echo "could not install the Python test tools into .venv/" >&2; exit 1; }

# Apple's App Store certificates and signed data, which the JWS, subscription and App Store
# peer tests read, live in the project's shared folder beside this repository
# (../shared/vectors/app-store). Without it those tests fail: say so first and last.
vectors=../shared/vectors/app-store
vectors_note=""
if [ ! -f "$vectors/test-chain/testCA.pem" ]; then
  vectors_note="NOTE: $(cd .. && pwd)/shared/vectors/app-store is missing: the tests that read Apple's App Store vectors (JWS, certificate chain, subscriptions, App Store peer) fail without it. Put the project's shared/ folder beside this repository."
  echo "$vectors_note" >&2
fi

results=.build/test-results
mkdir -p "$results"
rm -f "$results"/*.log
summary=()
total_passed=0
total_failed=0
total_skipped=0
record() { # part passed failed [skipped]
  local skipped=${4:-0}
  summary+=("$(printf '%-12s %s passed, %s failed, %s skipped' "$1:" "$2" "$3" "$skipped")")
  total_passed=$((total_passed + $2))
  total_failed=$((total_failed + $3))
  total_skipped=$((total_skipped + skipped))
}
# Counts from a swift test log: XCTest's last "Executed N tests, with [S tests skipped and]
# F failures" (the whole run) and Swift Testing's "Test run with N tests … passed/failed …
# with K issues". A run that failed without a count of its own failures counts as one failure.
record_swift() { # part log status
  local passed=0 failed=0 skipped=0 line n s f
  line=$(grep -E 'Executed [0-9]+ tests?, with ([0-9]+ tests? skipped and )?[0-9]+ failures?' "$2" | tail -n 1)
  if [ -n "$line" ]; then
    n=$(sed -E 's/.*Executed ([0-9]+) tests?.*/\1/' <<<"$line")
    s=$(sed -nE 's/.*with ([0-9]+) tests? skipped.*/\1/p' <<<"$line"); s=${s:-0}
    f=$(sed -E 's/.* ([0-9]+) failures?.*/\1/' <<<"$line")
    passed=$((n - s - f)); failed=$f; skipped=$s
  fi
  line=$(grep -E 'Test run with [0-9]+ tests?' "$2" | tail -n 1)
  if [ -n "$line" ]; then
    n=$(sed -E 's/.*Test run with ([0-9]+) tests?.*/\1/' <<<"$line")
    f=0
    grep -q ' failed ' <<<"$line" && f=$(sed -nE 's/.* with ([0-9]+) issues?.*/\1/p' <<<"$line")
    f=${f:-1}; [ "$f" -le "$n" ] || f=$n
    passed=$((passed + n - f)); failed=$((failed + f))
  fi
  if [ "$3" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
  record "$1" "$passed" "$failed" "$skipped"
}

# Counts from a part that ends with the line `<part>: N passed, N failed`; a run that failed
# without counting its own failure counts as one.
record_line() { # part log status
  local line passed failed
  line=$(grep -E "^$1: [0-9]+ passed, [0-9]+ failed$" "$2" | tail -n 1)
  passed=$(sed -nE 's/^.*: ([0-9]+) passed.*/\1/p' <<<"$line"); passed=${passed:-0}
  failed=$(sed -nE 's/.* ([0-9]+) failed$/\1/p' <<<"$line"); failed=${failed:-0}
  if [ "$3" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
  record "$1" "$passed" "$failed"
}

bash scripts/check-portability.sh 2>&1 | tee "$results/portability.log"
if [ "${PIPESTATUS[0]}" -eq 0 ]; then record portability 1 0; else record portability 0 1; fi

swift build --build-tests 2>&1 | tee "$results/build.log"
built=${PIPESTATUS[0]}
if [ "$built" -ne 0 ]; then
  record build 0 1
else
  swift test --skip-build 2>&1 | tee "$results/swift-test.log"
  record_swift "swift test" "$results/swift-test.log" "${PIPESTATUS[0]}"
fi

# Contract test counts: one per operation from schemathesis's JUnit report; a run that
# failed otherwise (a setup step, a warning that fails the run, the server dying) counts as
# one more failure. No rerun: what failed once fails the suite.
record_contract() { # part report-folder status
  local passed failed
  read -r passed failed < <(python - "$2" <<'PY'
import glob, sys, xml.etree.ElementTree as ET
passed = failed = 0
for path in glob.glob(sys.argv[1] + "/junit-*.xml"):
    for case in ET.parse(path).iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        else:
            passed += 1
print(passed, failed)
PY
  )
  if [ "$3" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
  record "$1" "$passed" "$failed"
}

# The server's tests again with every test server over PostgreSQL (a throwaway cluster, a
# build with the trait), and the contract tests against a server over it.
pg_report=$PWD/$results/contract-postgres
rm -rf "$pg_report"
POSTGRES_CONTRACT_REPORT=$pg_report bash scripts/test-postgres.sh 2>&1 | tee "$results/postgres.log"
record_swift postgres "$results/postgres.log" "${PIPESTATUS[0]}"
record_contract contract-pg "$pg_report" "$(cat "$pg_report/exit-status" 2>/dev/null || echo 1)"

# The scaled topology (deploy/local-topology.sh): PostgreSQL, three servers of that build,
# nginx in front from the compose file's template, a smoke test through it.
pg_server_bin="$(swift build --traits Postgres --scratch-path .build-postgres --show-bin-path)/kidledger-server"
if [ -x "$pg_server_bin" ]; then
  SERVER_BIN=$pg_server_bin bash deploy/local-topology.sh 2>&1 | tee "$results/topology.log"
  record_line topology "$results/topology.log" "${PIPESTATUS[0]}"
else
  record topology 0 1
fi

if [ "$built" -eq 0 ]; then
  export KIDLEDGER_SERVER_BIN="$(swift build --show-bin-path)/kidledger-server"

  report=$PWD/$results/contract
  KIDLEDGER_CONTRACT_REPORT=$report bash scripts/contract-test.sh 2>&1 | tee "$results/contract.log"
  record_contract contract "$report" "${PIPESTATUS[0]}"

  bash scripts/client-check.sh 2>&1 | tee "$results/client.log"
  record_line client "$results/client.log" "${PIPESTATUS[0]}"

  # App Store notifications against Apple's own verifier, the entitlement token against PyJWT.
  bash scripts/app-store-peer.sh 2>&1 | tee "$results/app-store.log"
  record_line app-store-peer "$results/app-store.log" "${PIPESTATUS[0]}"

  # ID token verification (IDTokenKit) against PyJWT, forged tokens included.
  IDTOKEN_CHECK_BIN="$(swift build --show-bin-path)/idtoken-check" bash scripts/jwt-peer.sh 2>&1 | tee "$results/jwt-peer.log"
  record_line jwt-peer "$results/jwt-peer.log" "${PIPESTATUS[0]}"
fi

echo
echo "=== summary (logs in $results/) ==="
printf '%s\n' "${summary[@]}"
[ -z "$vectors_note" ] || echo "$vectors_note"
echo "total: $total_passed passed, $total_failed failed, $total_skipped skipped"
[ "$total_failed" -eq 0 ]
