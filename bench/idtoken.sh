#!/usr/bin/env bash
# ID token verification CPU: RS256 and ES256 with the key cached (target ≤ 100 µs of server
# CPU), and refusals beside them (no refusal may cost more than an acceptance). Release build.
# Usage: bench/idtoken.sh [BATCHES=21] [PER_BATCH=500]   (a table, then one JSON line)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
scratch="${SCRATCH:-$repo/.build-idtoken-rel}"
(cd "$repo" && swift build -c release --scratch-path "$scratch" --product idtoken-bench >&2)
"$(cd "$repo" && swift build -c release --scratch-path "$scratch" --show-bin-path)/idtoken-bench" "${1:-21}" "${2:-500}"
