#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# Issue 37's figures on a lent GPU, side by side in one run (about two minutes):
#
#   1. tests/gpu/bench/latency.cu and launch.cu natively, through `vcuda run` with the call
#      ring (the default), and through `vcuda run` on the socket alone (VCUDA_CALL_RING=0);
#   2. with a kit's guest image (tests/gpu/kit.sh; VCUDA_CHECK_KIT, default .gpukit), the
#      same two programs, built with the image, inside `vcuda vm run` (vhost-user);
#   3. a one-call program (cudaGetDeviceCount) natively, through `vcuda run` (its private
#      backend keeps the context it made at start: --warm-context first), and through
#      running shared backends: sessions on threads and in worker processes, each with
#      --warm-context off and always.
#
#   bash tests/gpu/call-ring-check.sh [BIN]      (from the repository root; BIN: the
#                                                 directory of vcuda and vcuda-backend,
#                                                 default target/release)
#
# Writes $OUT/call-ring.md (OUT: the device tool's folder; else tests/gpu/results). Without a
# GPU (VCUDA_CHECK_EXECUTOR=cpu) it runs the vcuda rows on the CPU executor and skips the
# native ones: a dry run of the script itself.
set -u
cd "$(dirname "$0")/../.." || exit 2
B=$(cd "${1:-target/release}" && pwd) || exit 2
EXECUTOR=${VCUDA_CHECK_EXECUTOR:-cuda}
OUT=${OUT:-$PWD/tests/gpu/results}
mkdir -p "$OUT"
REPORT=$OUT/call-ring.md
KIT=${VCUDA_CHECK_KIT:-.gpukit}
VM=0
[ -f "$KIT/vm/image.env" ] && [ -x "$KIT/progs/latency" ] && [ -x "$KIT/progs/launch" ] && VM=1
W=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$W"' EXIT
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
if [ ! -x "$NVCC" ]; then
    NVCC=$(bash images/cuda-toolkit.sh)/bin/nvcc
    LFLAGS=(-L"$(dirname "$NVCC")/../lib")
else
    LFLAGS=()
fi
NATIVE=0
ARGS=()
[ "$EXECUTOR" = cpu ] && ARGS=(--quick) # a dry run: small sizes
nvidia-smi -L >/dev/null 2>&1 && [ "$EXECUTOR" = cuda ] && NATIVE=1
cat >"$W/onecall.cu" <<'EOF'
#include <cuda_runtime.h>
int main() { int n = 0; return cudaGetDeviceCount(&n) == cudaSuccess && n > 0 ? 0 : 1; }
EOF
for p in latency launch; do
    "$NVCC" -O2 -cudart=shared -Itests/gpu/bench "${LFLAGS[@]}" "tests/gpu/bench/$p.cu" \
        -o "$W/$p" || exit 1
done
"$NVCC" -O2 -cudart=shared "${LFLAGS[@]}" "$W/onecall.cu" -o "$W/onecall" || exit 1
LIB=$("$B/vcuda" lib-dir)

{
    echo "# Call ring and warm start ($(date -u +%F), executor $EXECUTOR)"
    echo
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
    echo
    echo "## Calls: native, vcuda run with the call ring, vcuda run on the socket, in the VM (µs or /s)"
    echo
    echo "| measure | native | call ring | socket | VM |"
    echo "|---|---:|---:|---:|---:|"
} >"$REPORT"

# One column of BENCH values per variant, joined by measure name.
for p in latency launch; do
    if [ $NATIVE = 1 ]; then
        timeout 120 "$W/$p" "${ARGS[@]}" | grep '^BENCH' | grep -v ratio_ >"$W/$p.native"
    else
        : >"$W/$p.native"
    fi
    for ring in 1 0; do
        VCUDA_CALL_RING=$ring timeout 180 "$B/vcuda" run --executor "$EXECUTOR" -- "$W/$p" \
            "${ARGS[@]}" |
            grep '^BENCH' | grep -v ratio_ >"$W/$p.ring$ring"
    done
    : >"$W/$p.vm"
    if [ $VM = 1 ]; then
        (cd "$KIT/progs" && timeout 240 "$B/vcuda" vm run --executor "$EXECUTOR" --timeout 220 \
            --image-dir "$(cd ../vm && pwd)" "./$p" "${ARGS[@]}") 2>"$W/$p.vm.log" |
            grep '^BENCH' | grep -v ratio_ >"$W/$p.vm"
    fi
    awk '{ f = FILENAME ~ /native$/ ? 1 : FILENAME ~ /ring1$/ ? 2 : FILENAME ~ /ring0$/ ? 3 : 4
           v[f, $2] = $3; if (!($2 in seen)) { seen[$2] = 1; order[n++] = $2 } }
         END { for (i = 0; i < n; i++) { k = order[i]; printf "| %s", k
               for (f = 1; f <= 4; f++) printf " | %s", (f, k) in v ? v[f, k] : "-"
               print " |" } }' \
        "$W/$p.native" "$W/$p.ring1" "$W/$p.ring0" "$W/$p.vm" >>"$REPORT"
done

# Shared backends, side by side.
serve() { # NAME ARGS...
    local name=$1
    shift
    "$B/vcuda-backend" serve --executor "$EXECUTOR" --socket "$W/$name.sock" "$@" \
        2>"$W/$name.log" &
    for _ in $(seq 600); do [ -S "$W/$name.sock" ] && return 0; sleep 0.1; done
    echo "backend $name did not start" >&2
    return 1
}
serve t-off --isolation thread --warm-context off
serve t-always --isolation thread --warm-context always
serve p-off --isolation process --warm-context off
serve p-always --isolation process --warm-context always
sleep 5 # the warm context and worker are made
cmds=()
[ $NATIVE = 1 ] && cmds+=("$W/onecall")
cmds+=("$B/vcuda run --executor $EXECUTOR -- $W/onecall")
for s in t-off t-always p-off p-always; do
    cmds+=("env VCUDA_SOCKET=$W/$s.sock LD_LIBRARY_PATH=$LIB $W/onecall")
done
{
    echo
    echo "## A one-call program, wall time (median of 15 runs, ms)"
    echo
    echo '```'
    python3 bench/startup.py --runs 15 --rounds 2 -- "${cmds[@]}" /bin/true
    echo '```'
    echo
    echo "(rows: native if a GPU, vcuda run, then shared backends: threads off, threads"
    echo "always, worker processes off, worker processes always)"
} >>"$REPORT"
cp "$W"/*.vm.log "$OUT/" 2>/dev/null
cat "$REPORT"
