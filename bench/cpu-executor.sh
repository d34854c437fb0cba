#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# The CPU executor against the same computations in C with OpenMP (bench/cpu-kernels.c), in
# one run on the same cores, measured two ways:
#  - the path users run: ordinary CUDA programs (bench/cuda/*.cu: cudaMalloc'd buffers,
#    built with nvcc -cudart=shared) through `vcuda run --executor cpu`, each launch timed
#    with CUDA events after a warm-up (the best of RUNS runs of the program);
#  - the library-level harness (ptx/examples/bench.rs), which drives vcuda-ptx directly over
#    one arena: compiled and interpreted.
# The harness's table comes first, then both paths side by side with their ratios to C.
#
#   bash bench/cpu-executor.sh [--only NAME] [--compiled-only] [--runs N] [--debug]
#
#   --only NAME      vectorAdd, sgemm, reduction, stencil, histogram or gridsync (the real
#                    path has vectorAdd, sgemm and reduction, and gridsync: a cooperative
#                    launch's grid barrier against an OpenMP barrier)
#   --compiled-only  skip the harness's interpreted runs
#   --runs N         runs of each real-path program (default 3)
#   --debug          use the dev profile's build (what CI has) instead of a release build
# Needs gcc with OpenMP (Debian: gcc, libgomp1); the CUDA toolkit comes from
# images/cuda-toolkit.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

only= runs=3 profile=release harness_args=()
while [ $# -gt 0 ]; do
    case $1 in
    --only) only=$2; harness_args+=(--only "$2"); shift 2 ;;
    --compiled-only) harness_args+=(--compiled-only); shift ;;
    --runs) runs=$2; shift 2 ;;
    --debug) profile=debug; shift ;;
    -h | --help) sed -n '3,22p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -O2 -fopenmp bench/cpu-kernels.c -o "$work/cpu-kernels"

if [ "$profile" = release ]; then
    cargo build --quiet --release -p vcuda-cli -p vcuda-backend -p vcuda-guest
    cargo build --quiet --release -p vcuda-ptx --example bench
else
    # What tests/run.sh builds (so nothing is built again after it; building a few
    # packages alone would resolve their features anew and compile a second copy).
    cargo build --quiet --workspace --all-targets
fi
"target/$profile/examples/bench" --cref "$work/cpu-kernels" "${harness_args[@]}" |
    tee "$work/harness.md"

# The real path: each program prints "BENCH name seconds-per-launch".
toolkit=$(bash images/cuda-toolkit.sh)
vcuda=target/$profile/vcuda
for p in vectorAdd sgemm reduction gridsync; do
    [[ -z $only || $p == *"$only"* ]] || continue
    "$toolkit/bin/nvcc" -cudart=shared -O2 -std=c++17 -gencode 'arch=compute_90,code=[sm_90,compute_90]' \
        -Ibench/cuda -L"$toolkit/lib" "bench/cuda/$p.cu" -o "$work/$p"
    for ((r = 0; r < runs; r++)); do
        "$vcuda" run --executor cpu -- "$work/$p" | grep '^BENCH ' >>"$work/real.txt"
    done
done
[ -s "$work/real.txt" ] || exit 0

echo
echo "The same kernels on the path users run, beside the harness (seconds; real path: best of"
echo "$runs runs of the program, each the mean of 3 launches; $profile build):"
echo
echo "| kernel | C (gcc -O2 -fopenmp) | harness, compiled | vcuda run | harness / C | vcuda run / C | vcuda run / harness |"
echo "|---|---:|---:|---:|---:|---:|---:|"
awk -F'|' -v real="$work/real.txt" '
BEGIN {
    while ((getline line < real) > 0) {
        split(line, f, " ")
        if (!(f[2] in best) || f[3] + 0 < best[f[2]]) best[f[2]] = f[3] + 0
    }
}
# The harness rows, by their labels.
/^\| / {
    label = $2; gsub(/^ +| +$/, "", label)
    key = ""
    if (label ~ /^vectorAdd/) key = "vectorAdd"
    else if (label ~ /^SGEMM/) key = "sgemm"
    else if (label ~ /tree reduction/) key = "reduction"
    if (key == "" || !(key in best)) next
    c = $3 + 0; h = $4 + 0; v = best[key]
    printf "| %s | %.4f | %.4f | %.4f | %.1fx | %.1fx | %.1fx |\n", key, c, h, v, h / c, v / c, v / h
}' "$work/harness.md"

# Cooperative groups' grid barrier against an OpenMP barrier on the same cores.
if grep -q '^BENCH gridsync ' "$work/real.txt"; then
    c=$("$work/cpu-kernels" gridsync | awk '{print $2}')
    v=$(awk '$2 == "gridsync" {print $3}' "$work/real.txt" | sort -g | head -1)
    echo
    echo "A grid-wide barrier (grid.sync() in a cooperative launch, best of $runs runs of"
    echo "bench/cuda/gridsync.cu) against an OpenMP barrier (bench/cpu-kernels.c), microseconds:"
    echo
    echo "| barrier | C (omp barrier) | vcuda run | vcuda run / C |"
    echo "|---|---:|---:|---:|"
    awk -v c="$c" -v v="$v" 'BEGIN { printf "| gridsync | %.2f | %.2f | %.0fx |\n", c * 1e6, v * 1e6, v / c }'
fi
