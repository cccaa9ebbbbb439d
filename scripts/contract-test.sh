#!/usr/bin/env bash
# Contract test: runs schemathesis against openapi.yaml and a live server, with every check.
#
#   scripts/contract-test.sh                 # starts its own server (no build)
#   scripts/contract-test.sh http://host:port  # tests a running server (registration open)
#
# Without a URL it starts $KIDLEDGER_SERVER_BIN (default .build/debug/kidledger-server)
# with `serve --host 127.0.0.1 --port <free> --data-dir <tmp>`, waits for its
# {"event":"listening",…} line, and stops it on exit.
#
# Before fuzzing it creates real data with curl — an account A (whose token schemathesis
# uses), a spare token of A, households H (main) and H2 (for the DELETE household test), a
# child and a transaction in H, a second account B invited to H — and hands the ids to
# schemathesis through a config file: path parameters are drawn from those ids most of the
# time and generated otherwise. Pinned for a bounded, meaningful run:
#   - DELETE /v1/tokens/{tokenId} only ever targets the spare token (never A's own);
#   - DELETE /v1/households/{id} only ever targets H2;
#   - `wait` on the change feed is always 0 (a generated wait would hold requests 60 s);
#   - `cursor` is always empty (the first page): a generated cursor is never one the list
#     gave out, which the contract answers with 422.
# Expected statuses widened where the contract answers a well-formed request by state,
# not by shape (documented in openapi.yaml): 410 for a generated `since`, 412 for a
# generated If-Match, 422 for undo-last with nothing left to undo, for inviting oneself, for a
# generated createdAt more than 24 hours ahead (clock_skew), and for a generated StoreKit JWS; the sync push reports invalid records per record in a 200 answer;
# 404 unknown_provider for sign-in and linking with identities (no provider is configured).
# a generated link code, recovery, account deletion or owner transfer is refused by state (404, 401, 422).
#
# Environment:
#   KIDLEDGER_SERVER_BIN          server binary (default .build/debug/kidledger-server)
#   KIDLEDGER_CONTRACT_EXAMPLES   max examples per operation and phase (default 20)
#   KIDLEDGER_CONTRACT_WORKERS    schemathesis workers (default 1). With more, worker threads
#                                 run ast.parse at once (Hypothesis describing a strategy), and
#                                 CPython 3.11 before 3.11.8 keeps the AST constructor's depth in
#                                 state all threads share (CPython gh-106905): a run could die
#                                 with "SystemError: AST constructor recursion depth mismatch".
#                                 One worker is also no slower on two cores.
#   KIDLEDGER_CONTRACT_SEED       fixed seed for a reproducible run (default random)
#   KIDLEDGER_CONTRACT_PHASES     schemathesis phases (default examples,coverage,fuzzing,stateful)
#   KIDLEDGER_CONTRACT_REPORT     folder for the JUnit report and the schemathesis configuration
#                                 (default .build/contract-report; emptied of both first)
#   KIDLEDGER_CONTRACT_ALLOW_RATE_LIMIT=1
#                                 do not fail a run that mostly got 429 (by default it fails:
#                                 the server must honour KIDLEDGER_AUTH_FAILURES_PER_MINUTE
#                                 and KIDLEDGER_REGISTRATIONS_PER_HOUR, which this script sets,
#                                 or a remote server must allow the failed authentications the
#                                 ignored_auth check makes and the accounts the run registers)
#
# Exit status: 0 when every check passed, non-zero otherwise.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SPEC=$REPO/openapi.yaml
EXAMPLES=${KIDLEDGER_CONTRACT_EXAMPLES:-20}
WORKERS=${KIDLEDGER_CONTRACT_WORKERS:-1}
PHASES=${KIDLEDGER_CONTRACT_PHASES:-examples,coverage,fuzzing,stateful}

die() { echo "contract-test: $*" >&2; exit 1; }
log() { echo "contract-test: $*" >&2; }

# schemathesis from the project's virtual environment (.venv/, made when missing).
. "$REPO/scripts/python-env.sh" || die "could not install the Python test tools into .venv/"
command -v schemathesis >/dev/null || die "schemathesis is not in .venv/ (scripts/python-requirements.txt)"
command -v curl >/dev/null || die "curl is required"
command -v jq >/dev/null || die "jq is required"
st_version=$(schemathesis --version | sed -n 's/.*version \([0-9][0-9.]*\).*/\1/p')
case "$st_version" in
    4.*) ;;
    *) die "schemathesis 4.x is required (found '${st_version:-unknown}'); this script uses its TOML config" ;;
esac

WORK=$(mktemp -d /tmp/kidledger-contract.XXXXXX)
SERVER_PID=""
cleanup() {
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -TERM "$SERVER_PID" 2>/dev/null || true
        for _ in $(seq 1 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$SERVER_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- the server ------------------------------------------------------------------------
if [ $# -ge 1 ]; then
    BASE=${1%/}
else
    BIN=${KIDLEDGER_SERVER_BIN:-$REPO/.build/debug/kidledger-server}
    [ -x "$BIN" ] || die "no server binary at $BIN (build it, or set KIDLEDGER_SERVER_BIN)"
    PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    mkdir -p "$WORK/data"
    # Subscriptions configured so their endpoints answer by the contract instead of 503.
    # The failed-authentication limit (default 30 a minute per address) is raised: the
    # ignored_auth check sends invalid tokens on purpose, all from 127.0.0.1. The quotas are
    # lifted (0) for the same reason: every generated account, household, child and
    # invitation comes from one address and one account (LimitsTests cover the quotas).
    (cd "$REPO" && export KIDLEDGER_AUTH_FAILURES_PER_MINUTE=1000000 KIDLEDGER_REGISTRATIONS_PER_HOUR=0 \
        KIDLEDGER_MAX_HOUSEHOLDS_PER_ACCOUNT=0 KIDLEDGER_MAX_CHILDREN_PER_HOUSEHOLD=0 \
        KIDLEDGER_MAX_PENDING_INVITATIONS_PER_INVITEE=0 KIDLEDGER_MAX_PENDING_INVITATIONS_PER_INVITER=0 \
        KIDLEDGER_MAX_PENDING_INVITATIONS_PER_INVITER_FOR_INVITEE=0 KIDLEDGER_FAILED_HANDLE_LOOKUPS_PER_MINUTE=0 \
        KIDLEDGER_TOKENS_PER_ACCOUNT=0 KIDLEDGER_LINK_CODE_FAILURES_PER_MINUTE=0 KIDLEDGER_RECOVERY_FAILURES_PER_MINUTE=0 \
        KIDLEDGER_RECOVERY_FAILURES_PER_HANDLE_PER_HOUR=0 && exec "$BIN" serve --host 127.0.0.1 --port "$PORT" --data-dir "$WORK/data" \
        --registration open --bundle-id com.example.kidledger --product-id com.example.kidledger.pro --app-apple-id 1234567890 \
        --openapi "$SPEC" --public-dir "$REPO/Public") >"$WORK/server.log" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 1 100); do
        grep -q '"event":"listening"' "$WORK/server.log" && break
        kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/server.log" >&2; die "the server exited before listening"; }
        sleep 0.1
    done
    grep -q '"event":"listening"' "$WORK/server.log" || { cat "$WORK/server.log" >&2; die "no listening line within 10 s"; }
    BASE=http://127.0.0.1:$PORT
    log "server $BIN on $BASE"
fi

# --- real data --------------------------------------------------------------------------
call() { # method path token body -> prints the body; fails unless 2xx
    local method=$1 path=$2 token=$3 body=${4:-}
    local args=(-sS -m 10 -X "$method" -o "$WORK/body" -w '%{http_code}' "$BASE$path")
    [ -n "$token" ] && args+=(-H "Authorization: Bearer $token")
    [ -n "$body" ] && args+=(-H 'Content-Type: application/json' --data-binary "$body")
    local code
    code=$(curl "${args[@]}") || die "$method $path: no answer"
    case "$code" in
        2??) cat "$WORK/body" ;;
        *) cat "$WORK/body" >&2; echo >&2; die "$method $path: HTTP $code during setup" ;;
    esac
}
suffix=$(date +%s)$$
A=$(call POST /v1/accounts "" "{\"handle\":\"ct-a-$suffix\",\"displayName\":\"Contract A\",\"deviceName\":\"schemathesis\"}")
TOKEN=$(jq -er .token.secret <<<"$A")
B=$(call POST /v1/accounts "" "{\"handle\":\"ct-b-$suffix\",\"displayName\":\"Contract B\"}")
B_ID=$(jq -er .account.id <<<"$B")
B_HANDLE=$(jq -er .account.handle <<<"$B")
SPARE_TOKEN_ID=$(call POST /v1/tokens "$TOKEN" '{"deviceName":"spare"}' | jq -er .id)
H=$(call POST /v1/households "$TOKEN" '{"name":"Contract household","currency":"EUR"}' | jq -er .id)
H2=$(call POST /v1/households "$TOKEN" '{"name":"Disposable household"}' | jq -er .id)
C=$(call POST "/v1/households/$H/children" "$TOKEN" '{"name":"Ada"}' | jq -er .id)
T=$(call POST "/v1/households/$H/children/$C/transactions" "$TOKEN" '{"amountCents":500,"note":"setup"}' | jq -er .transaction.id)
call POST "/v1/households/$H/children/$C/transactions" "$TOKEN" '{"amountCents":-200}' >/dev/null
# Sharing data is best effort: without it the sharing operations are fuzzed with generated ids.
INVITATION=$(python3 -c 'import uuid; print(uuid.uuid4())')
if (call POST "/v1/households/$H/share" "$TOKEN" >/dev/null) 2>"$WORK/share.err"; then
    INVITATION=$(call POST "/v1/households/$H/share/participants" "$TOKEN" \
        "{\"handle\":\"$B_HANDLE\",\"permission\":\"readOnly\"}" | jq -er .invitationId)
else
    log "warning: could not share the household ($(tail -n 1 "$WORK/share.err")); sharing ids are generated"
fi
log "data: household $H, child $C, transaction $T, participant $B_ID"

# --- schemathesis configuration ---------------------------------------------------------
# The configuration and the JUnit report are kept (not in the temporary folder), so every path
# schemathesis prints still exists after the run.
REPORT=${KIDLEDGER_CONTRACT_REPORT:-$REPO/.build/contract-report}
mkdir -p "$REPORT"
REPORT=$(cd "$REPORT" && pwd)
rm -f "$REPORT"/junit-*.xml "$REPORT"/schemathesis.toml
# "missing_auth" (an operation that only ever saw 401/403) is reported but does not fail the
# run: the stateful phase occasionally sees only 401s for the two DELETE operations, a
# sampling artefact rather than an API answer; every check still fails the run.
FAIL_ON='"unused_openapi_auth", "unsupported_regex", "unresolvable_reference", "base_url_mismatch"'
[ "${KIDLEDGER_CONTRACT_ALLOW_RATE_LIMIT:-0}" = 1 ] || FAIL_ON="$FAIL_ON, \"rate_limited\""
cat >"$REPORT/schemathesis.toml" <<EOF
workers = $WORKERS
request-timeout = 15

[warnings]
# A run that mostly hit the failed-authentication limit, or could not use the spec's
# auth or patterns, tested little: count it as failed.
fail-on = [$FAIL_ON]

[checks]
# Every check (the same as --checks all, which would override the per-operation switches below).
enabled = true

[generation]
max-examples = $EXAMPLES
database = "none"

[auth.openapi.bearerAuth]
bearer = "$TOKEN"

[checks.negative_data_rejection]
# Besides the defaults: 410 token_expired, 412 precondition_failed and 413 are rejections too.
expected-statuses = ["400", "401", "403", "404", "405", "406", "409", "410", "412", "413", "415", "422", "428", "429"]

[dictionaries.household]
values = ["$H"]
[dictionaries.child]
values = ["$C"]
[dictionaries.transaction]
values = ["$T"]
[dictionaries.participant]
values = ["$B_ID"]
[dictionaries.invitation]
values = ["$INVITATION"]

[parameters]
"path.id" = { dictionary = "household", probability = 0.8 }
"path.childId" = { dictionary = "child", probability = 0.8 }
"path.txId" = { dictionary = "transaction", probability = 0.8 }
"path.accountId" = { dictionary = "participant", probability = 0.8 }
"path.invitationId" = { dictionary = "invitation", probability = 0.5 }
"path.tokenId" = "$SPARE_TOKEN_ID"
"query.wait" = 0
"query.cursor" = ""

[[operations]]
include-operation-id = "deleteHousehold"
parameters = { "path.id" = "$H2" }

[[operations]]
include-operation-id = ["pullChanges", "pullChildChanges"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "401", "403", "404", "409", "410", "429"]

[[operations]]
include-operation-id = ["patchHousehold", "patchChild"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "401", "403", "404", "409", "412", "429"]

[[operations]]
# A generated createdAt may be more than 24 hours ahead of the server's clock (422 clock_skew):
# the contract refuses it by the clock, not by the request's shape.
include-operation-id = "createTransaction"
checks.positive_data_acceptance.expected-statuses = ["2xx", "401", "403", "404", "409", "422", "429"]

[[operations]]
# An approval may take the balance outside Int64 (422 balance_overflow): state, not shape.
include-operation-id = "approveRequest"
checks.positive_data_acceptance.expected-statuses = ["2xx", "401", "403", "404", "409", "422", "429"]

[[operations]]
include-operation-id = "undoLastTransaction"
checks.positive_data_acceptance.expected-statuses = ["2xx", "401", "403", "404", "409", "422", "429"]

[[operations]]
# What the schema cannot spell decides: a date must exist in the calendar (no 2027-02-30), a
# time zone must be one the IANA database names, and the kind decides whether `amountCents`
# or `rateBasisPoints` is required (422 validation_failed naming the field).
include-operation-id = ["createSchedule", "patchSchedule"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "401", "403", "404", "409", "412", "422", "429"]

[[operations]]
# The handle may be the caller's own (422 cannot_invite_self): state, not request shape.
include-operation-id = "inviteParticipant"
checks.positive_data_acceptance.expected-statuses = ["2xx", "401", "403", "404", "409", "422", "429"]

[[operations]]
# A well-formed JWS that the App Store did not sign is 422: its signature decides, not its shape.
include-operation-id = ["putSubscription", "postAppStoreNotification"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "401", "403", "404", "409", "422", "429"]

[[operations]]
# ensure_resource_availability calls any 404 right after a POST that created the parent a
# failure. These operations answer 404 by state or by body, as the contract says: a new
# household has no share (not_shared) and no subscription (no_subscription); an invitation
# names a handle nobody has (unknown_handle); a participant or invitation the link points at
# may since have been revoked, left, accepted or declined in the same scenario. DELETE of a
# household always targets H2 (above), not the household the scenario's POST created: once H2 is
# gone its 404 is right, but the check would blame the POST before it.
include-operation-id = ["deleteHousehold", "getShare", "deleteShare", "getSubscription", "deleteSubscription", "inviteParticipant",
                        "patchParticipant", "removeParticipant", "acceptInvitation", "declineInvitation"]
checks.ensure_resource_availability.enabled = false

[[operations]]
# This server offers no identity provider: every provider is 404 unknown_provider, by
# configuration rather than by the request's shape (a configured one answers 401 for a
# generated token, 404 identity_not_linked, 409 or 429 by state).
include-operation-id = ["signInWithIdentity", "linkIdentity"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "401", "403", "404", "409", "429"]

[[operations]]
# Answered by state, not by shape: a generated link code is unknown (404 link_code_invalid), a
# generated handle and recovery code fail (401 recovery_failed), a generated confirmHandle is
# not the account's (422 confirmation_mismatch; so DELETE /v1/me never deletes A), and the
# account a generated transfer names is not an accepted read-write participant (422
# not_a_participant; B was invited read-only and never accepted).
include-operation-id = ["redeemLinkCode", "recoverAccount", "deleteMe", "transferOwnership"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "401", "403", "404", "409", "422", "429"]

[[operations]]
include-operation-id = "pushChanges"
checks.negative_data_rejection.expected-statuses = ["200", "400", "401", "403", "404", "409", "413", "415", "422", "429"]
EOF

seed=()
[ -n "${KIDLEDGER_CONTRACT_SEED:-}" ] && seed=(--seed "$KIDLEDGER_CONTRACT_SEED")

log "schemathesis $st_version: all checks, phases $PHASES, at most $EXAMPLES examples per operation"
status=0
(cd "$WORK" && schemathesis --config-file "$REPORT/schemathesis.toml" run "$SPEC" \
    --url "$BASE" --phases "$PHASES" \
    --report junit --report-dir "$REPORT" --no-color "${seed[@]}") || status=$?

if [ -n "$SERVER_PID" ] && ! kill -0 "$SERVER_PID" 2>/dev/null; then
    grep -v '"event":"request"' "$WORK/server.log" | head -n 80 >&2
    die "the server died during the run"
fi
if [ "$status" -ne 0 ]; then
    if [ -n "$SERVER_PID" ]; then grep -v '"event":"request"' "$WORK/server.log" | tail -n 20 >&2 || true; fi
    die "schemathesis reported failures (exit $status)"
fi
log "passed"
