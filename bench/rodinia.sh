#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# Rodinia's workloads on the CPU executor against the same algorithms in C with OpenMP, in
# one run on the same cores. bench/rodinia/ holds the project's own versions, written from
# the algorithms' published descriptions: each NAME.cu (an ordinary CUDA program, built with
# nvcc -cudart=shared and run through `vcuda run --executor cpu`) and NAME.c (gcc -O2
# -fopenmp) compute the same thing from the same inputs and print
# "BENCH NAME seconds checksum", the seconds those of the computation alone (kernels and
# what the host does between them; no set-up or transfers before or after). The script
# checks that both checksums agree (within 1e-6, relative: the CUDA build contracts
# multiply-adds), and prints per program the best of RUNS runs of each, their ratio, and
# the geometric mean of the ratios.
#
#   bash bench/rodinia.sh [--runs N] [--only NAME] [--debug]
#
#   --runs N     runs of each program (default 3)
#   --only NAME  one program (bfs, hotspot, lud, nw, pathfinder, srad, kmeans,
#                streamcluster, backprop, gaussian)
#   --debug      use the dev profile's build instead of a release build
# Needs gcc with OpenMP (Debian: gcc, libgomp1); the CUDA toolkit comes from
# images/cuda-toolkit.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

runs=3 only= profile=release
while [ $# -gt 0 ]; do
    case $1 in
    --runs) runs=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --debug) profile=debug; shift ;;
    -h | --help) sed -n '3,22p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done

programs=(bfs hotspot lud nw pathfinder srad kmeans streamcluster backprop gaussian)
if [ "$profile" = release ]; then
    cargo build --quiet --release -p vcuda-cli -p vcuda-backend -p vcuda-guest
else
    cargo build --quiet --workspace
fi
vcuda=target/$profile/vcuda
toolkit=$(bash images/cuda-toolkit.sh)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

chosen=()
for p in "${programs[@]}"; do
    [[ -z $only || $p == "$only" ]] || continue
    chosen+=("$p")
    gcc -O2 -fopenmp "bench/rodinia/$p.c" -o "$work/$p-c" -lm
    "$toolkit/bin/nvcc" -cudart=shared -O2 -std=c++17 \
        -gencode 'arch=compute_90,code=[sm_90,compute_90]' -L"$toolkit/lib" \
        "bench/rodinia/$p.cu" -o "$work/$p-cuda"
done
# Round by round over the programs, so that a program's runs are spread over the whole
# benchmark: this machine has periods of tens of seconds in which everything runs two to
# three times slower, which took all the runs of a program run back to back.
for ((r = 0; r < runs; r++)); do
    for p in "${chosen[@]}"; do
        "$work/$p-c" | grep '^BENCH ' | sed 's/^BENCH /C /' >>"$work/results.txt"
        "$vcuda" run --executor cpu -- "$work/$p-cuda" | grep '^BENCH ' |
            sed 's/^BENCH /V /' >>"$work/results.txt"
    done
done

echo "Rodinia's workloads: vcuda's CPU executor (vcuda run, $profile build) against C with"
echo "OpenMP on the same $(nproc) cores; seconds of the computation, best of $runs runs:"
echo
echo "| program | C (gcc -O2 -fopenmp) | vcuda run | vcuda / C | checksums |"
echo "|---|---:|---:|---:|---|"
awk '
{
    key = $1 " " $2
    if (!(key in best) || $3 + 0 < best[key]) best[key] = $3 + 0
    sum[key] = $4
    if (!($2 in seen)) { seen[$2] = 1; order[n++] = $2 }
}
END {
    logs = 0; m = 0; bad = 0; worst = 0
    for (k = 0; k < n; k++) {
        p = order[k]; c = best["C " p]; v = best["V " p]
        a = sum["C " p] + 0; b = sum["V " p] + 0
        d = a - b; if (d < 0) d = -d
        s = (a < 0 ? -a : a); ok = d <= 1e-6 * (s > 1 ? s : 1)
        if (!ok) bad++
        r = v / c; logs += log(r); m++
        if (r > worst) worst = r
        printf "| %s | %.4f | %.4f | %.1fx | %s |\n", p, c, v, r, ok ? "agree" : "DIFFER (" sum["C " p] " vs " sum["V " p] ")"
    }
    if (m > 0) printf "| geometric mean | | | %.1fx | |\n", exp(logs / m)
    printf "\nworst %.1fx; %d of %d checksums differ\n", worst, bad, m
    exit bad > 0
}' "$work/results.txt"
