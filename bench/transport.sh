#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# The transport benchmark, on any machine (no GPU): builds tests/gpu/bench/latency.cu and
# bandwidth.cu with the PyPI CUDA toolkit and runs them through `vcuda run --executor cpu`
# (socket transport, the CPU executor's device heap). Each program measures its own
# floor in the same run (a 64-byte Unix-socket ping-pong; a host memcpy of each size) and
# prints every call's and copy's ratio to it; this script collects the ratios in a
# Markdown table, through the call ring and on the socket alone side by side.
#
#   bash bench/transport.sh [--quick] [--rounds N] [--vhost-user] [--vcuda PATH]
#
#   --quick        fewer repetitions, copies up to 16 MiB (else 256 MiB)
#   --rounds N     run each program N times, alternated, and report the median (default 1)
#   --vhost-user   also run the in-process vhost-user benchmark
#                  (cargo bench -p vcuda-backend --bench vhost_user -- --quick)
#   --vcuda PATH   the vcuda binary (default: target/release/vcuda, else target/debug/vcuda)
set -euo pipefail
cd "$(dirname "$0")/.."

QUICK=
ROUNDS=1
VHOST=0
VCUDA=
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) QUICK=--quick ;;
        --rounds) ROUNDS=$2; shift ;;
        --vhost-user) VHOST=1 ;;
        --vcuda) VCUDA=$2; shift ;;
        *) echo "usage: bash bench/transport.sh [--quick] [--rounds N] [--vhost-user] [--vcuda PATH]" >&2; exit 2 ;;
    esac
    shift
done
if [ -z "$VCUDA" ]; then
    for v in target/release/vcuda target/debug/vcuda; do
        if [ -x "$v" ]; then VCUDA=$v; break; fi
    done
fi
[ -n "$VCUDA" ] || { echo "no vcuda binary: cargo build first" >&2; exit 2; }

ROOT=$(bash images/cuda-toolkit.sh)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for p in latency bandwidth; do
    "$ROOT/bin/nvcc" -cudart=shared -O2 -gencode 'arch=compute_90,code=[sm_90,compute_90]' \
        -Itests/gpu/bench -L"$ROOT/lib" "tests/gpu/bench/$p.cu" -o "$work/$p"
done

echo "machine: $(nproc) cores, $(uptime | sed 's/.*load/load/'); vcuda: $VCUDA"
# Each program with the call ring (the default) and on the socket alone (VCUDA_CALL_RING=0),
# alternated in every round.
for r in $(seq "$ROUNDS"); do
    for p in latency bandwidth; do
        for ring in 1 0; do
            VCUDA_CALL_RING=$ring "$VCUDA" run --executor cpu -- "$work/$p" $QUICK |
                grep '^BENCH ratio_' | sed "s/^BENCH /$ring /" >>"$work/ratios"
        done
    done
done
echo
echo "| measure | call ring: ratio (median of $ROUNDS) | socket only | unit |"
echo "|---|---:|---:|---|"
# Median per measure and mode, in the order the programs print them.
awk '{ v[$2, $1] = v[$2, $1] " " $3; u[$2] = $4; if (!($2 in seen)) { seen[$2] = 1; order[n++] = $2 } }
     function med(s,    a, m, x, y, t) {
       m = split(substr(s, 2), a, " ");
       for (x = 1; x <= m; x++) for (y = x + 1; y <= m; y++) if (a[y] + 0 < a[x] + 0) { t = a[x]; a[x] = a[y]; a[y] = t }
       return (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
     }
     END {
       for (i = 0; i < n; i++) {
         k = order[i];
         printf "| %s | %.3g | %.3g | %s |\n", substr(k, 7), med(v[k, 1]), med(v[k, 0]), u[k]
       }
     }' "$work/ratios"

if [ "$VHOST" = 1 ]; then
    echo
    cargo bench -p vcuda-backend --bench vhost_user -- --quick
fi
