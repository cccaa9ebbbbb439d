#!/usr/bin/env bash
# Checks POST /v1/app-store/notifications against Apple's app-store-server-library
# (SignedDataVerifier) and the entitlement token against PyJWT; see app-store-peer.py.
# Installs both into the project-local virtual environment .venv. Uses the server binary
# $KIDLEDGER_SERVER_BIN (default: the debug build) and the App Store test vectors in
# $APP_STORE_VECTORS (default: ../shared/vectors/app-store).
set -euo pipefail
cd "$(dirname "$0")/.."
vectors="${APP_STORE_VECTORS:-../shared/vectors/app-store}"
if [ ! -f "$vectors/test-chain/testCA.pem" ]; then
  echo "app-store-peer: no test vectors in $vectors"
  exit 1
fi
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv 2>/dev/null || {
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv
    python3 -m venv .venv
  }
fi
if ! .venv/bin/python -c "import appstoreserverlibrary, jwt, cryptography" 2>/dev/null; then
  .venv/bin/pip install -q "app-store-server-library>=3,<4" "PyJWT>=2.8,<3" cryptography
fi
bin="${KIDLEDGER_SERVER_BIN:-$(swift build --show-bin-path)/kidledger-server}"
exec .venv/bin/python scripts/app-store-peer.py "$bin" "$vectors"
