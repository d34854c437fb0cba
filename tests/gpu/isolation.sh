#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# Tenant isolation on a real GPU (tests/gpu/README.md, "Tenant isolation"): a shared
# `vcuda-backend serve --executor cuda` whose sessions run in sandboxed worker processes
# (the default), checked with NVIDIA's driver:
#
#   1. the host: driver, HMM (uvm_disable_hmm), persistence and compute mode;
#   2. every tests/cuda program through the shared backend (each in its own worker under the
#      seccomp filters, without capabilities): run.sh --no-native against it;
#   3. a worker's sandbox as the driver sees it (Seccomp, CapEff, NoNewPrivs of the worker
#      serving tests/hostile/endless_kernel.cu), and that killing the program ends the
#      worker and frees its context (nvidia-smi's compute apps);
#   4. two programs at once: one faults (an illegal address, sticky) while the other runs
#      streams.cu; the other must pass;
#   5. the cost of a worker: a one-call program through a shared backend with
#      --isolation process and --isolation thread (hyperfine, or 20 runs each).
#
#   bash tests/gpu/isolation.sh        (from the repository root; results under $OUT or
#                                       tests/gpu/results)
# Needs: $VCUDA_BIN (default target/release) with vcuda, vcuda-backend, libvcuda.so; nvcc.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
BIN=${VCUDA_BIN:-$PWD/target/release}
OUTDIR=${OUT:-$PWD/tests/gpu/results}
mkdir -p "$OUTDIR"
REPORT=$OUTDIR/isolation.txt
: >"$REPORT"
say() { printf '%s\n' "$*" | tee -a "$REPORT" >&2; }
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
CUDA_LIB=
for d in "$(dirname "$NVCC")/../lib64" "$(dirname "$NVCC")/../lib"; do
    if [ -e "$d/libcudart.so" ]; then CUDA_LIB=$(cd "$d" && pwd); break; fi
done
NVCC_FLAGS=(-cudart=shared -gencode 'arch=compute_90,code=[sm_90,compute_90]' ${CUDA_LIB:+-L"$CUDA_LIB"})
WORK=$(mktemp -d "${TMPDIR:-/tmp}/vcuda-iso.XXXXXX")
BACKENDS=()
cleanup() {
    for p in "${BACKENDS[@]}"; do kill "$p" 2>/dev/null; done
    rm -rf "$WORK"
}
trap cleanup EXIT
export VCUDA_LIB_DIR=$BIN

say "== 1. host"
nvidia-smi --query-gpu=name,driver_version,persistence_mode,compute_mode --format=csv,noheader \
    2>&1 | tee -a "$REPORT" >&2
say "uvm_disable_hmm: $(cat /sys/module/nvidia_uvm/parameters/uvm_disable_hmm 2>&1)"
say "ptrace_scope: $(cat /proc/sys/kernel/yama/ptrace_scope 2>&1)"
say "kernel: $(uname -r)"

# A shared backend (workers by default) on $1, log $2, extra arguments after.
serve() {
    local sock=$1 log=$2
    shift 2
    VCUDA_CUDA_CAPTURE_PRINTF=1 RUST_LOG=info "$BIN/vcuda-backend" serve --executor cuda \
        --notify-ready --socket "$sock" "$@" >"$WORK/ready.$$" 2>"$log" &
    BACKENDS+=($!)
    local i
    for i in $(seq 300); do
        grep -q ready "$WORK/ready.$$" 2>/dev/null && return 0
        sleep 0.1
    done
    say "backend on $sock did not start:"
    tail -20 "$log" | tee -a "$REPORT" >&2
    return 1
}
GPU_SOCK=$WORK/gpu.sock
# No worker started ahead of connections: the checks below find a session's worker as the
# backend's child, and step 5 measures what a worker costs (call-ring-check.sh measures
# workers and contexts made ahead).
serve "$GPU_SOCK" "$OUTDIR/backend.log" --warm-context off || exit 1
BACKEND_PID=${BACKENDS[0]}
grep -E "worker|pageable|CUDA executor" "$OUTDIR/backend.log" | head -5 | tee -a "$REPORT" >&2

say "== 2. every tests/cuda program, each in a worker of the shared backend"
VCUDA_SOCKET=$GPU_SOCK timeout 240 bash tests/gpu/run.sh --no-native --no-bench --quick \
    --results "$OUTDIR/workers.md" >"$OUTDIR/workers.log" 2>&1
say "run.sh exit $?; $(grep -c '^== ok' "$OUTDIR/workers.log") ok, $(grep -c '^== FAIL' "$OUTDIR/workers.log") failed"
grep '^== FAIL' -A6 "$OUTDIR/workers.log" | head -60 | tee -a "$REPORT" >&2

say "== 3. a worker's sandbox, and killing its program"
"$NVCC" "${NVCC_FLAGS[@]}" -o "$WORK/endless" tests/hostile/endless_kernel.cu 2>&1 | tail -3
VCUDA_SOCKET=$GPU_SOCK "$BIN/vcuda" run -- "$WORK/endless" >"$WORK/endless.out" 2>&1 &
PROG=$!
for i in $(seq 100); do grep -q READY "$WORK/endless.out" && break; sleep 0.1; done
W=$(pgrep -P "$BACKEND_PID" | head -1)
say "program $PROG ready: $(grep -c READY "$WORK/endless.out"), worker: ${W:-none}"
if [ -n "$W" ]; then
    grep -E '^(Seccomp|NoNewPrivs|CapEff|CapBnd):' "/proc/$W/status" | tr '\n' ' ' | tee -a "$REPORT" >&2
    echo | tee -a "$REPORT" >&2
fi
say "compute apps while it runs: $(nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader | tr '\n' ';')"
T0=$(date +%s%N)
# The program itself (vcuda run waits for it), then vcuda run.
pkill -9 -f -- "$WORK/endless"
kill -9 "$PROG" 2>/dev/null
for i in $(seq 150); do
    [ -n "$W" ] && [ -e "/proc/$W" ] || break
    sleep 0.1
done
T1=$(date +%s%N)
say "worker gone $(((T1 - T0) / 1000000)) ms after the program was killed: $([ -n "$W" ] && [ -e "/proc/$W" ] && echo NO || echo yes)"
sleep 1
say "compute apps after: '$(nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader | tr '\n' ';')'"

say "== 4. a fault in one worker, another program beside it"
cat >"$WORK/fault.cu" <<'EOF'
#include <cstdio>
#include <cuda_runtime.h>
__global__ void bad(int *p) { p[threadIdx.x] = 1; }
int main() {
    bad<<<1, 32>>>((int *)0x10);
    cudaError_t e = cudaDeviceSynchronize();
    printf("FAULT %s then %s\n", cudaGetErrorName(e), cudaGetErrorName(cudaMalloc((void **)&e, 4)));
    return e == cudaErrorIllegalAddress ? 0 : 1;
}
EOF
"$NVCC" "${NVCC_FLAGS[@]}" -o "$WORK/fault" "$WORK/fault.cu" 2>&1 | tail -3
"$NVCC" "${NVCC_FLAGS[@]}" -Itests/cuda -o "$WORK/streams" tests/cuda/api_streams.cu 2>&1 | tail -3
ok=0
for round in 1 2 3; do
    VCUDA_SOCKET=$GPU_SOCK "$BIN/vcuda" run -- "$WORK/streams" >"$WORK/streams.$round" 2>&1 &
    S=$!
    VCUDA_SOCKET=$GPU_SOCK "$BIN/vcuda" run -- "$WORK/fault" >"$WORK/fault.$round" 2>&1
    f=$?
    wait $S
    s=$?
    say "round $round: fault program exit $f ($(tail -1 "$WORK/fault.$round")), streams exit $s"
    [ $s = 0 ] && ok=$((ok + 1))
done
say "streams passed $ok of 3 beside a faulting program"

say "== 5. the cost of a worker (one-call program, shared backends side by side)"
cat >"$WORK/onecall.cu" <<'EOF'
#include <cstdio>
#include <cuda_runtime.h>
int main() { int n = 0; return cudaGetDeviceCount(&n) == cudaSuccess && n > 0 ? 0 : 1; }
EOF
"$NVCC" "${NVCC_FLAGS[@]}" -o "$WORK/onecall" "$WORK/onecall.cu" 2>&1 | tail -3
serve "$WORK/thread.sock" "$OUTDIR/backend-thread.log" --isolation thread --warm-context off || exit 1
LIBDIR=$("$BIN/vcuda" lib-dir)
A="env VCUDA_SOCKET=$WORK/thread.sock LD_LIBRARY_PATH=$LIBDIR $WORK/onecall"
B="env VCUDA_SOCKET=$GPU_SOCK LD_LIBRARY_PATH=$LIBDIR $WORK/onecall"
if command -v hyperfine >/dev/null; then
    hyperfine -N -w 2 -r 20 "$A" "$B" 2>&1 | tee -a "$REPORT" >&2
else
    for c in "$A" "$B"; do
        t0=$(date +%s%N)
        for i in $(seq 20); do $c >/dev/null 2>&1; done
        t1=$(date +%s%N)
        say "$(((t1 - t0) / 20000)) us per run: $c"
    done
fi
grep -cE "ERROR|panicked" "$OUTDIR/backend.log" | sed 's/^/error lines in the shared backend log: /' | tee -a "$REPORT" >&2
exit 0
