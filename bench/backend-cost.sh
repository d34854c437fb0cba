#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# The backend's CPU time per posted call (issue 37: decode, dispatch and the executor's call
# for a posted launch), measured from outside on the path users run: a running
# `vcuda-backend serve` (one session thread, no spinning between messages), the nvcc-built
# tests/gpu/bench/post_cost.cu through libvcuda, and the backend's user + system CPU time
# from /proc before and after. Two runs with different call counts are subtracted, so the
# session's start (Hello, module load) and end drop out:
#
#   per call = (cpu(n_big) - cpu(n_small)) / (n_big - n_small)       (each call: a launch
#                                                                     and a memset)
#
#   bash bench/backend-cost.sh [--calls N] [--rounds R] [--vcuda-bin DIR]
#
# Executors: the CPU executor (an empty kernel of one thread runs on the CPU: that is "the
# driver's own" work there) and, when cc and cuda.h are at hand, the CUDA executor on the
# mock driver of tests/gpu/mock (whose launches only queue), each with the call ring and
# with VCUDA_CALL_RING=0. Needs the PyPI CUDA toolkit (images/cuda-toolkit.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
CALLS=200000
ROUNDS=3
BIN=
while [ $# -gt 0 ]; do
    case "$1" in
        --calls) CALLS=$2; shift ;;
        --rounds) ROUNDS=$2; shift ;;
        --vcuda-bin) BIN=$2; shift ;;
        *) echo "usage: bash bench/backend-cost.sh [--calls N] [--rounds R] [--vcuda-bin DIR]" >&2; exit 2 ;;
    esac
    shift
done
if [ -z "$BIN" ]; then
    for d in target/release target/debug; do
        if [ -x "$d/vcuda-backend" ]; then BIN=$d; break; fi
    done
fi
[ -n "$BIN" ] || { echo "no vcuda-backend: cargo build first" >&2; exit 2; }
ROOT=$(bash images/cuda-toolkit.sh)
work=$(mktemp -d "${TMPDIR:-/tmp}/vcuda-cost.XXXXXX")
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
"$ROOT/bin/nvcc" -cudart=shared -O2 -gencode 'arch=compute_90,code=[sm_90,compute_90]' \
    -Itests/gpu/bench -L"$ROOT/lib" tests/gpu/bench/post_cost.cu -o "$work/post_cost"
LIB=$("$BIN/vcuda" lib-dir)

executors=(cpu)
if command -v cc >/dev/null && [ -e "$ROOT/include/cuda.h" ]; then
    mkdir -p "$work/mock"
    cc -shared -fPIC -O2 -Wno-unused-parameter -fvisibility=hidden -I"$ROOT/include" \
        -o "$work/mock/libcuda.so.1" tests/gpu/mock/libcuda.c -lpthread
    executors+=(cuda-mock)
fi

# User + system CPU time of process $1, in clock ticks.
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
HZ=$(getconf CLK_TCK)

echo "machine: $(nproc) cores, $(uptime | sed 's/.*load/load/'); binaries: $BIN; calls: $CALLS"
echo
echo "| executor | transport | backend CPU per call (µs), rounds | program time per launch / memset (µs) |"
echo "|---|---|---|---|"
for ex in "${executors[@]}"; do
    for ring in 1 0; do
        sock=$work/$ex-$ring.sock
        if [ "$ex" = cpu ]; then
            "$BIN/vcuda-backend" serve --executor cpu --isolation thread --spin-us 0 \
                --socket "$sock" 2>"$work/backend.log" &
        else
            LD_LIBRARY_PATH=$work/mock "$BIN/vcuda-backend" serve --executor cuda \
                --isolation thread --spin-us 0 --socket "$sock" 2>"$work/backend.log" &
        fi
        pid=$!
        for _ in $(seq 200); do [ -S "$sock" ] && break; sleep 0.05; done
        run() {
            VCUDA_SOCKET=$sock VCUDA_CALL_RING=$ring LD_LIBRARY_PATH=$LIB \
                "$work/post_cost" "$1"
        }
        per=()
        prog=
        for _ in $(seq "$ROUNDS"); do
            a=$(ticks $pid); run 1000 >/dev/null; b=$(ticks $pid)
            out=$(run "$CALLS"); c=$(ticks $pid)
            grep -q PASS <<<"$out" || { echo "FAIL: $out" >&2; cat "$work/backend.log" >&2; exit 1; }
            per+=("$(awk -v s=$((b - a)) -v l=$((c - b)) -v n="$CALLS" -v hz="$HZ" \
                'BEGIN { printf "%.2f", (l - s) / hz * 1e6 / (2 * (n - 1000)) }')")
            prog=$(awk '/^BENCH post_launch_program/ { l = $3 } /^BENCH post_memset_program/ { m = $3 }
                END { printf "%.2f / %.2f", l, m }' <<<"$out")
        done
        kill $pid; wait $pid 2>/dev/null || true
        t=$([ "$ring" = 1 ] && echo "call ring" || echo "socket")
        echo "| $ex | $t | ${per[*]} | $prog |"
    done
done
