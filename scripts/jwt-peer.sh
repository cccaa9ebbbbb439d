#!/usr/bin/env bash
# Cross-checks IDTokenKit's ID token verification against PyJWT on every variant of a token,
# valid and forged (see jwt-peer.py). PyJWT and cryptography come from the project's .venv/
# (scripts/python-env.sh). Uses $IDTOKEN_CHECK_BIN, else builds the idtoken-check product
# (debug). Ends with the line `jwt-peer: N passed, N failed`.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/python-env.sh
if [ -z "${IDTOKEN_CHECK_BIN:-}" ]; then
  if ! swift build --product idtoken-check >&2; then
    echo "jwt-peer: 0 passed, 1 failed"
    exit 1
  fi
  IDTOKEN_CHECK_BIN="$(swift build --show-bin-path)/idtoken-check"
fi
exec python scripts/jwt-peer.py "$IDTOKEN_CHECK_BIN"
