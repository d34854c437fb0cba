#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# Live migration's cost (issue 39): `vcuda vm run --migrate-after` moves a running guest to a
# second QEMU and backend on this machine, and prints QEMU's downtime and total time and the
# bytes it moved; the backends print the device state's size and the time to save and load
# it. Measured side by side in one run:
#
#   - a guest with no CUDA session (the program is /bin/sleep: RAM and devices only), the
#     baseline every VM pays;
#   - tests/vm/cuda/migrate.cu (device memory, module variable, stream, events, graph,
#     cuBLAS, cuRAND, a kernel running every 8th step) with 0, 64 and 256 MiB more device
#     memory of numbers that do not compress, each with the backends' pre-copy of device
#     memory (the default, "pc") and without it (`--no-precopy`, "nopc").
#
#   bash bench/migrate.sh [--extra "0 64 256"] [--precopy "on off"] [--after SECONDS]
#                         [--rounds R] [--vcuda-bin DIR]
#
# Prints one line per run and a table; the goal (issue 39) is a downtime of at most 1 s plus
# the device bytes at 10 GB/s. The CPU executor holds device memory in host memory, so this
# measures vcuda's part (save, transfer through QEMU's stream, load) and QEMU's; on a GPU the
# device-to-host copies come on top. Under TCG (no /dev/kvm) the guest is slow, not the
# migration. Needs the PyPI CUDA toolkit (images/cuda-toolkit.sh) and the guest image
# (built on first use, as tests/vm/run.sh does).
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRA="0 64 256"
AFTER=8
ROUNDS=1
BIN=
PRECOPY="on off"
while [ $# -gt 0 ]; do
    case "$1" in
        --extra) EXTRA=$2; shift ;;
        --after) AFTER=$2; shift ;;
        --rounds) ROUNDS=$2; shift ;;
        --precopy) PRECOPY=$2; shift ;;
        --vcuda-bin) BIN=$2; shift ;;
        *) echo "usage: bash bench/migrate.sh [--extra \"MIB ...\"] [--precopy \"on off\"] [--after S] [--rounds R] [--vcuda-bin DIR]" >&2; exit 2 ;;
    esac
    shift
done
if [ -z "$BIN" ]; then
    for d in target/release target/debug; do
        if [ -x "$d/vcuda-backend" ] && [ -x "$d/vcuda" ]; then BIN=$d; break; fi
    done
fi
[ -n "$BIN" ] || { echo "no vcuda and vcuda-backend: cargo build first" >&2; exit 2; }
ROOT=$(bash images/cuda-toolkit.sh)
work=$(mktemp -d "${TMPDIR:-/tmp}/vcuda-migrate.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$ROOT/bin/nvcc" -cudart=shared -O2 -gencode 'arch=compute_90,code=[sm_90,compute_90]' \
    -L"$ROOT/lib" tests/vm/cuda/migrate.cu -lcublas -lcurand -o "$work/migrate"

# run NAME PRECOPY MIB ARGS...: one migration (PRECOPY on or off, MIB of device memory
# beyond the program's own); prints "NAME mib downtime_ms total_ms bytes state_bytes
# ahead_bytes save_ms load_ms".
run() {
    local name=$1 pc=$2 mib=$3
    shift 3
    local flags=()
    [ "$pc" = on ] || flags=(--no-precopy)
    if ! "$BIN/vcuda" vm run --executor cpu --timeout 600 --migrate-after "$AFTER" "${flags[@]}" -- "$@" \
        >"$work/out" 2>"$work/err"; then
        echo "FAIL $name: exit status $? (stderr below)" >&2
        tail -20 "$work/err" >&2
        return 1
    fi
    local line
    line=$(grep -m1 'vcuda vm: migrated at' "$work/err") || {
        echo "FAIL $name: no migration (the program ended first? raise its length)" >&2
        return 1
    }
    local down total bytes state save load ahead
    down=$(sed -n 's/.*downtime \([0-9]*\) ms.*/\1/p' <<<"$line")
    total=$(sed -n 's/.*total \([0-9]*\) ms.*/\1/p' <<<"$line")
    bytes=$(sed -n 's/.*, \([0-9]*\) bytes moved.*/\1/p' <<<"$line")
    state=$(sed -n 's/.*device state saved: \([0-9]*\) bytes.*/\1/p' "$work/err" | head -1)
    save=$(sed -n 's/.*device state saved: [0-9]* bytes in \([0-9.]*\) ms.*/\1/p' "$work/err" | head -1)
    load=$(sed -n 's/.*device state loaded: [0-9]* sessions in \([0-9.]*\) ms.*/\1/p' "$work/err" | head -1)
    ahead=$(sed -n 's/.*pre-copy: \([0-9]*\) bytes of device memory held by the destination.*/\1/p' "$work/err" | head -1)
    echo "$name $mib ${down:-?} ${total:-?} ${bytes:-?} ${state:-0} ${ahead:-0} ${save:-0} ${load:-0}"
}

results=()
for r in $(seq "$ROUNDS"); do
    results+=("$(run "no-cuda" off 0 /bin/sleep $((AFTER + 8)))")
    for mib in $EXTRA; do
        for pc in $PRECOPY; do
            # 60 steps of 250 ms: the program is mid-run when the migration comes.
            results+=("$(run "cuda+${mib}MiB-$([ "$pc" = on ] && echo pc || echo nopc)" "$pc" \
                "$mib" "$work/migrate" 60 250 20000000 "$mib")")
        done
    done
    echo "round $r done" >&2
done
printf '\n%-19s %12s %10s %14s %14s %14s %9s %9s %8s\n' run downtime_ms total_ms stream_bytes \
    state_bytes ahead_bytes save_ms load_ms goal_ms
for l in "${results[@]}"; do
    read -r name mib down total bytes state ahead save load <<<"$l"
    # Goal: 1 s plus the device bytes at 10 GB/s (the extra memory; the program's own is
    # under 1 MiB).
    goal=$(awk -v m="$mib" 'BEGIN { printf "%.0f", 1000 + m * 1048576 / 1e7 }')
    printf '%-19s %12s %10s %14s %14s %14s %9s %9s %8s\n' "$name" "$down" "$total" "$bytes" \
        "$state" "$ahead" "$save" "$load" "$goal"
done
