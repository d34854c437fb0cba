#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# One pass of checks on a lent GPU machine, sized for a short loan (about 4 minutes after the
# machine starts), with the kit tests/gpu/kit.sh packed here and carried along:
#
#   1. the CUDA executor's own GPU tests (`backend-tests executor::cuda`);
#   2. every test program natively and through `vcuda run --executor cuda`
#      (tests/gpu/run.sh --no-bench), built twice: with -cudart=shared and with nvcc's
#      default static runtime (NVIDIA's runtime inside the program, reaching vcuda through
#      vcuda's libcuda.so.1);
#   3. with the kit's guest image: its test programs (built where the image was: the guest
#      carries that machine's C library) inside `vcuda vm run --executor cuda` (vhost-user),
#      some also with --register-guest-memory, some also built with the static runtime,
#      compared with their native run;
#   4. beside the VM lane, tests/gpu/syscalls.sh: the system calls of worker processes;
#   5. after them, tests/gpu/call-ring-check.sh: small calls and a one-call program natively
#      and through vcuda (call ring or socket, warm contexts and workers or not), about two
#      minutes, into call-ring.md.
# The first three run side by side (the machine has 16 cores; the GPU is shared between
# them).
#
#   bash tests/gpu/device-check.sh [KIT]        (from the repository root; KIT: .gpukit)
#
# Results go to $OUT (the device tool's folder; else tests/gpu/results): check.log, unit.log,
# gpu-results.md, harness.log (gpu-results-static.md, harness-static.log) and logs.tgz (every program's output). Each step has a time
# bound, and the VM step stops starting programs after VCUDA_CHECK_BUDGET seconds (300).
# For a dry run without a GPU: VCUDA_CHECK_EXECUTOR=cpu (and VCUDA_CHECK_ONLY=REGEX, the
# programs to run).
set -u
cd "$(dirname "$0")/../.." || exit 2
K=$(cd "${1:-.gpukit}" && pwd) || exit 2
B=$K/bin
OUT=${OUT:-$PWD/tests/gpu/results}
BUDGET=${VCUDA_CHECK_BUDGET:-300}
EXECUTOR=${VCUDA_CHECK_EXECUTOR:-cuda}
ONLY=${VCUDA_CHECK_ONLY:-.}
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
exec > >(tee "$OUT/check.log") 2>&1
T0=$(date +%s)
el() { echo "== $(($(date +%s) - T0))s: $*"; }
WORK=$(mktemp -d)
el start
nvidia-smi --query-gpu=name,driver_version,persistence_mode --format=csv,noheader
uname -r
ls -l /dev/kvm 2>&1
chmod +x "$B"/*

# The executor's tests run beside the programs (their own processes and contexts).
el "unit tests (executor::cuda), beside the programs"
(
    timeout 150 "$B/backend-tests" executor::cuda >"$OUT/unit.log" 2>&1
    echo "unit tests: exit $?" >>"$OUT/unit.log"
) &
UNIT=$!

V=$K/vm
VM=0
[ -f "$V/image.env" ] && [ -d "$K/progs" ] && VM=1
mkdir -p "$WORK/vm" "$WORK/keep"
touch "$WORK/vm/runs"
# Runs PROGRAM in the VM (MODE plain, or reg: guest RAM registered with the driver); its
# output is compared with the native run once the harness has made that.
vm_one() { # MODE PROGRAM
    local mode=$1 n=$2 pre=() t ms rc
    [ "$mode" = reg ] && pre=(env "VCUDA_BACKEND=$WORK/reg")
    t=$(date +%s%N)
    (cd "$K/progs" && "${pre[@]}" timeout 150 "$B/vcuda" vm run --executor "$EXECUTOR" \
        --timeout 140 --image-dir "$V" --console-log "$WORK/vm/$n.$mode.console" \
        -e VCUDA_CUDA_CAPTURE_PRINTF=1 "./$n") >"$WORK/vm/$n.$mode" 2>&1
    rc=$?
    ms=$((($(date +%s%N) - t) / 1000000))
    echo "$mode $n $rc $ms" >>"$WORK/vm/runs"
}
if [ $VM = 1 ]; then
    # The VM lane runs beside the harness (KVM and 16 cores; the GPU is shared).
    el "programs in the VM, beside the programs natively and through vcuda"
    sed -i "s#^QEMU_FIRMWARE=.*#QEMU_FIRMWARE=$V/firmware/qemu:$V/firmware/seabios#" "$V/image.env"
    chmod +x "$V/qemu-system-x86_64" "$K"/progs/*
    ldd "$V/qemu-system-x86_64" | grep -q 'not found' && export LD_LIBRARY_PATH=$V/lib
    printf '#!/bin/sh\nexec %s "$@" --register-guest-memory\n' "$B/vcuda-backend" >"$WORK/reg"
    chmod +x "$WORK/reg"
    (
        for n in zero_copy vmm library memcpy_batch driver_graphs vectorAdd matmul saxpy \
            pinned pageable api_streams graphs managed mapped textures cublas_basic \
            curand_basic driver_api mempool; do
            [ -x "$K/progs/$n" ] && [ $(($(date +%s) - T0)) -lt "$BUDGET" ] && vm_one plain "$n"
        done
        for n in zero_copy vectorAdd pageable managed cublas_basic; do
            [ -x "$K/progs/$n" ] && [ $(($(date +%s) - T0)) -lt $((BUDGET + 30)) ] &&
                vm_one reg "$n"
        done
        for p in "$K"/progs/*.static; do
            [ -x "$p" ] && [ $(($(date +%s) - T0)) -lt $((BUDGET + 30)) ] &&
                vm_one plain "$(basename "$p")"
        done
    ) &
    VMLANE=$!
fi

el "programs, native and through vcuda (static runtime beside)"
(
    VCUDA_BIN=$B VCUDA_HARNESS_TIMEOUT=60 timeout 300 bash tests/gpu/run.sh --no-bench \
        --executor "$EXECUTOR" --only "$ONLY" --results "$WORK/hs/gpu-results-static.md" \
        --cudart static >"$WORK/hs.log" 2>&1
    echo "harness (static runtime): exit $?" >>"$WORK/hs.log"
) &
STATIC=$!
VCUDA_BIN=$B VCUDA_HARNESS_TIMEOUT=60 timeout 300 bash tests/gpu/run.sh --no-bench \
    --executor "$EXECUTOR" --only "$ONLY" --results "$WORK/h/gpu-results.md" \
    --keep "$WORK/keep" >"$WORK/h.log" 2>&1
echo "harness: exit $?"
grep -E '^== (FAIL|BUILD|[0-9]+ fail|all)' "$WORK/h.log"
cp "$WORK/h.log" "$OUT/harness.log"
cp "$WORK/h/gpu-results.md" "$OUT/" 2>/dev/null
# The driver's system calls in worker processes (tests/gpu/syscalls.sh), beside the VM lane:
# every call under the deny list, then the allow list checked.
(
    for policy in deny-list allow-list; do
        OUT=$OUT VCUDA_SYSCALLS_POLICY=$policy timeout 150 bash tests/gpu/syscalls.sh "$K" \
            "$WORK/keep" vectorAdd matmul cublas_basic curand_basic graphs api_streams \
            managed mapped zero_copy driver_api mempool textures vmm device_malloc library
        echo "syscalls ($policy): exit $?" >>"$OUT/syscalls.$policy.log"
    done
) &
SYSCALLS=$!
wait "$STATIC"
el "programs with the static runtime"
grep -E '^== (FAIL|BUILD|[0-9]+ fail|all)|^harness' "$WORK/hs.log"
cp "$WORK/hs.log" "$OUT/harness-static.log"
cp "$WORK/hs/gpu-results-static.md" "$OUT/" 2>/dev/null
wait "$UNIT"
el "unit tests"
grep -E "^unit tests: exit|test result|FAILED|panicked" "$OUT/unit.log" | head -20

if [ $VM = 1 ]; then
    wait "$VMLANE"
    el "programs in the VM"
    while read -r mode n rc ms; do
        verdict=same
        base=${n%.static}
        [ -f "$WORK/keep/$base.native" ] || echo PASS >"$WORK/keep/$base.native" # no native run
        # The backend's warnings (its log) are not the program's output.
        diff <(grep -Ev '^(BENCH |TIME|TIMING)' "$WORK/keep/$base.native") \
            <(grep -Ev '^(BENCH |TIME|TIMING|\[[-0-9T:Z]+ (WARN|INFO))' "$WORK/vm/$n.$mode") \
            >"$WORK/vm/$n.$mode.diff" || verdict=DIFFERS
        echo "vm $mode $n: exit $rc, ${ms} ms, output $verdict"
        [ $verdict = same ] || head -6 "$WORK/vm/$n.$mode.diff"
    done <"$WORK/vm/runs"
fi
wait "$SYSCALLS"
el "system calls traced"
cat "$OUT"/syscalls.*.log
for policy in deny-list allow-list; do
    python3 scripts/syscall-sets.py "$OUT/syscalls.$policy.trace.gz" >"$OUT/syscalls.$policy.txt" 2>&1
    echo "-- $policy (EPERM: refused)"
    grep -E '^##|EPERM|seccomp filter' "$OUT/syscalls.$policy.txt"
done
el "call ring and warm start, native vs vcuda side by side (call-ring-check.sh)"
OUT=$OUT VCUDA_CHECK_EXECUTOR=$EXECUTOR VCUDA_CHECK_KIT=$K timeout 300 \
    bash tests/gpu/call-ring-check.sh "$B" \
    >"$OUT/call-ring.log" 2>&1
echo "call ring check: exit $?"
el done
mkdir -p "$WORK/h/logs"
tar czf "$OUT/logs.tgz" -C "$WORK" h/logs hs/logs vm 2>/dev/null
rm -rf "$WORK"
