#!/usr/bin/env bash
# Checks POST /v1/app-store/notifications against Apple's app-store-server-library
# (SignedDataVerifier) and the entitlement token against PyJWT; see app-store-peer.py, which
# generates the test certificate chain it signs with. Both come from the project's .venv/
# (scripts/python-env.sh). Uses the server binary $KIDLEDGER_SERVER_BIN (default: the debug
# build). Ends with the line `app-store-peer: N passed, N failed`.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/python-env.sh
bin="${KIDLEDGER_SERVER_BIN:-$(swift build --show-bin-path)/kidledger-server}"
exec python scripts/app-store-peer.py "$bin"
