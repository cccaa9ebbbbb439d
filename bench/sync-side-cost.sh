#!/usr/bin/env bash
# What a durable WAL commit costs besides the CPU of the thread that makes it: the share of
# other CPUs it takes unseen. A fixed CPU-bound loop (bench/spin.c) runs on each CPU in
# turn, alone and then while bench/fsync-cost.c commits in a loop (`frames` WAL frames, one
# pwrite + fdatasync each) on a given CPU; the loop's CPU time per unit of work grows by
# what the commits take from its CPU without being charged to them (the disk's completion
# interrupts, handled on whichever thread runs there, and in a VM the exits around them).
# Prints, per spinner CPU, its slowdown and that cost in µs per commit, beside the
# committing thread's own CPU per commit. /proc/interrupts tells which CPU takes the data
# disk's interrupts.
#
# Usage: bench/sync-side-cost.sh [seconds=2] [frames=20] [sync-cpu=0] [dir=.]
set -euo pipefail
seconds="${1:-2}"; frames="${2:-20}"; sync_cpu="${3:-0}"; dir="${4:-.}"
here="$(cd "$(dirname "$0")" && pwd)"
command -v gcc >/dev/null || { echo "needs gcc" >&2; exit 1; }
tmp=$(mktemp -d "$dir/sync-side-cost.XXXXXX"); trap 'rm -rf "$tmp"' EXIT
gcc -O2 -o "$tmp/fsync-cost" "$here/fsync-cost.c"
gcc -O2 -o "$tmp/spin" "$here/spin.c"
# Wall time per commit alone, to size the commit loop to outlast the spinner.
wall=$(taskset -c "$sync_cpu" "$tmp/fsync-cost" "$tmp/f" "$frames" 500 buffered | awk '{print $4}')
iterations=$(python3 -c "print(int(($seconds + 1.0) / ($wall * 1e-6)))")
echo "commits of $frames frames on CPU $sync_cpu ($wall µs wall each alone); spinner ${seconds}s per CPU"
printf '%-12s %14s %14s %10s %22s %18s\n' "spinner CPU" "alone ms/M" "beside ms/M" "slowdown" "unseen µs per commit" "syncer's µs CPU"
for cpu in $(python3 -c "import os; print(' '.join(map(str, sorted(os.sched_getaffinity(0)))))"); do
    read -r alone _ _ < <(taskset -c "$cpu" "$tmp/spin" "$seconds")
    taskset -c "$sync_cpu" "$tmp/fsync-cost" "$tmp/f" "$frames" "$iterations" buffered > "$tmp/sync.txt" &
    syncer=$!
    sleep 0.3
    read -r beside spin_cpu _ < <(taskset -c "$cpu" "$tmp/spin" "$seconds")
    wait "$syncer"
    read -r wall_each cpu_each < <(awk '{print $4, $7}' "$tmp/sync.txt")
    # The spinner's extra CPU time over the commits made meanwhile.
    python3 - "$cpu" "$alone" "$beside" "$spin_cpu" "$seconds" "$wall_each" "$cpu_each" <<'PY'
import sys
cpu, alone, beside, spin_cpu, seconds, wall_each, cpu_each = sys.argv[1], *map(float, sys.argv[2:])
extra = spin_cpu * (1 - alone / beside)          # seconds of the spinner's CPU time that did no work
commits = seconds / (wall_each * 1e-6)
print(f"{cpu:<12} {alone:14.4f} {beside:14.4f} {100 * (beside / alone - 1):9.1f}% {1e6 * extra / commits:22.1f} {cpu_each:18.1f}")
PY
done
grep -iE "virtio.*req|nvme|ahci|xhci" /proc/interrupts 2>/dev/null | awk '{printf "interrupt %s", $1; for (i = 2; i <= NF; i++) printf " %s", $i; print ""}' | head -8 || true
