#!/usr/bin/env bash
# Client generators on openapi.yaml: openapi-python-client (a typed client) and
# datamodel-code-generator (pydantic models), at the versions pinned in
# scripts/python-requirements.txt, must keep every operation and every answer typed with no
# warning; then the generated client walks through the API against a real server on an
# ephemeral loopback port. Generates into .build/openapi-clients/. See scripts/client_check.py.
#
#   scripts/client-check.sh     # KIDLEDGER_SERVER_BIN: server binary (default .build/debug/kidledger-server)
#
# Ends with `client: N passed, N failed`; exit status 0 when every check passed.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/python-env.sh
exec python scripts/client_check.py
