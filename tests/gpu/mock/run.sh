#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# Tests the CUDA executor without a GPU, against tests/gpu/mock/libcuda.c: a libcuda.so.1
# built from NVIDIA's cuda.h prototypes that runs "device" work on host memory, late (at
# synchronization points), so missing waits show up as wrong data.
#
#   bash tests/gpu/mock/run.sh [--harness]
#
# 1. the executor's GPU tests (cargo test -p vcuda-backend executor::cuda) on the mock;
# 2. start-up failures: no device, stub library, driver too old, missing entry point;
# 3. with --harness, also tests/gpu/run.sh --executor cuda --no-native for the benchmarks
#    whose kernels may do nothing (the mock cannot run real ones); needs the release
#    binaries ($VCUDA_BIN, default $CARGO_TARGET_DIR/release).
# Needs cc and cuda.h ($CUDA_HOME/include, /usr/local/cuda/include, or the PyPI toolkit of
# images/cuda-toolkit.sh, installed on demand).
set -euo pipefail
cd "$(dirname "$0")/../../.."
HARNESS=0
[ "${1:-}" = --harness ] && HARNESS=1

INC=
for d in "${CUDA_HOME:-/nonexistent}/include" /usr/local/cuda/include; do
    [ -e "$d/cuda.h" ] && INC=$d && break
done
if [ -z "$INC" ]; then
    INC=$(bash images/cuda-toolkit.sh)/include
fi
DIR=$(mktemp -d "${TMPDIR:-/tmp}/vcuda-mock.XXXXXX")
trap 'rm -rf "$DIR"' EXIT
mkdir -p "$DIR/ok" "$DIR/old"
CFLAGS=(-shared -fPIC -O1 -g -Wall -Werror -Wno-unused-parameter -fvisibility=hidden -I"$INC")
cc "${CFLAGS[@]}" -o "$DIR/ok/libcuda.so.1" tests/gpu/mock/libcuda.c -lpthread
cc "${CFLAGS[@]}" -DVCUDA_MOCK_OLD -o "$DIR/old/libcuda.so.1" tests/gpu/mock/libcuda.c -lpthread
ln -s libcuda.so.1 "$DIR/ok/libcuda.so"
ln -s libcuda.so.1 "$DIR/old/libcuda.so"

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
echo "== executor tests on the mock driver"
LD_LIBRARY_PATH=$DIR/ok VCUDA_MOCK=1 cargo test -q -p vcuda-backend --lib executor::cuda -- \
    --test-threads=1 2>&1 | tee "$DIR/test.log"
if grep -q "skipping: no GPU" "$DIR/test.log"; then
    echo "FAIL: the tests did not find the mock driver" >&2
    exit 1
fi

echo "== a device whose kernels reach pageable memory (HMM)"
LD_LIBRARY_PATH=$DIR/ok VCUDA_MOCK=1 VCUDA_MOCK_HMM=1 cargo test -q -p vcuda-backend --lib \
    executor::cuda::tests::pageable_access -- --test-threads=1 --nocapture 2>&1 | tee "$DIR/hmm.log"
grep -q "sessions are exclusive" "$DIR/hmm.log" || { echo "FAIL: HMM not seen" >&2; exit 1; }

echo "== start-up failures"
cargo build -q -p vcuda-backend
BACKEND=$CARGO_TARGET_DIR/debug/vcuda-backend
expect_fail() { # lib-dir message env...
    local dir=$1 want=$2
    shift 2
    local out
    if out=$(env LD_LIBRARY_PATH="$dir" "$@" timeout 10 "$BACKEND" serve --executor cuda \
        --socket "$DIR/s.sock" 2>&1); then
        echo "FAIL: backend started ($want expected)" >&2
        exit 1
    fi
    if ! grep -qF "$want" <<<"$out"; then
        echo "FAIL: expected '$want', got: $out" >&2
        exit 1
    fi
    echo "ok: $want"
}
expect_fail /nonexistent "libcuda.so.1 not found"
expect_fail "$DIR/ok" "no CUDA device" VCUDA_MOCK_INIT=100
expect_fail "$DIR/ok" "stub library" VCUDA_MOCK_INIT=34
expect_fail "$DIR/ok" "supports CUDA 12.4, CUDA 12.8 or newer needed" VCUDA_MOCK_VERSION=12040
expect_fail "$DIR/old" "lacks cuEventElapsedTime_v2"
out=$(LD_LIBRARY_PATH=$DIR/ok timeout 3 "$BACKEND" serve --executor auto \
    --socket "$DIR/a.sock" 2>&1 || true)
grep -q "executor: cuda (auto)" <<<"$out" || { echo "FAIL: auto did not pick cuda: $out" >&2; exit 1; }
echo "ok: auto picks cuda"
out=$(LD_LIBRARY_PATH=/nonexistent timeout 3 "$BACKEND" serve --executor auto \
    --socket "$DIR/b.sock" 2>&1 || true)
grep -q "executor: cpu (auto" <<<"$out" || { echo "FAIL: auto did not fall back: $out" >&2; exit 1; }
echo "ok: auto falls back to cpu"
# Kernels that reach pageable memory (HMM): each tenant in its own worker process by
# default; with --isolation thread one session at a time.
out=$(LD_LIBRARY_PATH=$DIR/ok VCUDA_MOCK_HMM=1 timeout 3 "$BACKEND" serve --executor cuda \
    --socket "$DIR/h.sock" 2>&1 || true)
grep -q "pageable memory, HMM/ATS: only their own worker's" <<<"$out" \
    || { echo "FAIL: HMM with workers: $out" >&2; exit 1; }
echo "ok: HMM: a worker process per session"
out=$(LD_LIBRARY_PATH=$DIR/ok VCUDA_MOCK_HMM=1 timeout 3 "$BACKEND" serve --executor cuda \
    --isolation thread --socket "$DIR/t.sock" 2>&1 || true)
grep -q "serving one session at a time" <<<"$out" \
    || { echo "FAIL: HMM in one process: $out" >&2; exit 1; }
echo "ok: HMM: one session at a time in one process"
# With device printf captured, the readiness line still reaches the real stdout.
out=$(LD_LIBRARY_PATH=$DIR/ok timeout 5 "$BACKEND" serve --executor cuda --cuda-capture-printf \
    --notify-ready --socket "$DIR/r.sock" 2>/dev/null | head -1 || true)
[ "$out" = ready ] || { echo "FAIL: no ready line with printf capture: '$out'" >&2; exit 1; }
echo "ok: ready is said on stdout while printf is captured"

if [ $HARNESS = 1 ]; then
    echo "== harness against the mock (programs whose kernels may do nothing)"
    TK=()
    command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || TK=(--toolkit pypi)
    VCUDA_BIN=${VCUDA_BIN:-$(realpath "$CARGO_TARGET_DIR")/release} LD_LIBRARY_PATH=$DIR/ok \
        bash tests/gpu/run.sh --executor cuda --no-native --quick "${TK[@]}" \
        --only '^(bandwidth|latency|launch)$' --results "$DIR/results.md"
fi
echo "== mock driver tests passed"
