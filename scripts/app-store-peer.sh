#!/usr/bin/env bash
# Checks POST /v1/app-store/notifications against Apple's app-store-server-library
# (SignedDataVerifier) and the entitlement token against PyJWT; see app-store-peer.py.
# Both come from the project's .venv/ (scripts/python-env.sh). Uses the server binary
# $KIDLEDGER_SERVER_BIN (default: the debug build) and the App Store test vectors in
# $APP_STORE_VECTORS (default: ../shared/vectors/app-store). Ends with the line
# `app-store-peer: N passed, N failed`.
set -euo pipefail
cd "$(dirname "$0")/.."
vectors="${APP_STORE_VECTORS:-../shared/vectors/app-store}"
if [ ! -f "$vectors/test-chain/testCA.pem" ]; then
  echo "app-store-peer: no test vectors in $vectors"
  echo "app-store-peer: 0 passed, 1 failed"
  exit 1
fi
. scripts/python-env.sh
bin="${KIDLEDGER_SERVER_BIN:-$(swift build --show-bin-path)/kidledger-server}"
exec python scripts/app-store-peer.py "$bin" "$vectors"
