#!/usr/bin/env bash
# CPU and wall time of one durable WAL commit by the way it is made durable (see
# bench/fsync-cost.c), for several commit sizes, in a file under the data folder's
# filesystem (default: a temporary folder under the current directory).
#
# Usage: bench/fsync-cost.sh [iterations=2000] [frames="1 4 16 32 64"] [dir=.]
set -euo pipefail
iterations="${1:-2000}"; frames="${2:-1 4 16 32 64}"; dir="${3:-.}"
here="$(cd "$(dirname "$0")" && pwd)"
command -v gcc >/dev/null || { echo "needs gcc" >&2; exit 1; }
tmp=$(mktemp -d "$dir/fsync-cost.XXXXXX"); trap 'rm -rf "$tmp"' EXIT
gcc -O2 -o "$tmp/fsync-cost" "$here/fsync-cost.c"
echo "filesystem: $(df -T "$tmp" | awk 'NR==2 {print $2}'); $iterations commits each"
for mode in buffered rwf-dsync o-dsync o-direct nosync; do
    for n in $frames; do "$tmp/fsync-cost" "$tmp/f" "$n" "$iterations" "$mode"; done
done
