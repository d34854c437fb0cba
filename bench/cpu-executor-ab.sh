#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# Two builds of the CPU executor's benchmark (ptx/examples/bench.rs, compiled code only)
# alternated ROUNDS times on the same cores, next to the C reference; prints, per kernel, the
# best and the median seconds of each and their ratios to C. This VM's speed drifts between
# runs, so one side-by-side run is not enough to compare two builds:
#   bash bench/cpu-executor-ab.sh OLD_BENCH NEW_BENCH [ROUNDS]   (default 6 rounds)
# where each *_BENCH is a copy of target/release/examples/bench built at that revision
# (`cargo build --release -p vcuda-ptx --example bench`). Needs gcc with OpenMP.
set -euo pipefail
if [[ $# -lt 2 ]]; then
    sed -n '3,9p' "$0" >&2
    exit 2
fi
old=$1 new=$2 rounds=${3:-6}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -O2 -fopenmp "$root/bench/cpu-kernels.c" -o "$work/cpu-kernels"
for ((i = 0; i < rounds; i++)); do
    for side in old new; do
        bin=$old
        [[ $side == new ]] && bin=$new
        "$bin" --cref "$work/cpu-kernels" --compiled-only |
            awk -F'|' -v side="$side" '/^\| / && !/^\| kernel/ && !/^\|---/ {
                gsub(/^ +| +$/, "", $2); print side "\t" $2 "\t" $3 + 0 "\t" $4 + 0 }'
    done
done >"$work/runs.tsv"
# Best and median of each column per kernel and side.
awk -F'\t' '
function median(s,   n, a, i, j, t) {
    n = split(s, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function best(s,   n, a, i, m) {
    n = split(s, a, " "); m = a[1]
    for (i = 2; i <= n; i++) if (a[i] < m) m = a[i]
    return m
}
{
    if (!($2 in seen)) { seen[$2] = 1; order[++nk] = $2 }
    c[$2] = c[$2] " " $3
    t[$2, $1] = t[$2, $1] " " $4
}
END {
    print "| kernel | C best / median (s) | old best / median (s) | new best / median (s) | old / C | new / C |"
    print "|---|---:|---:|---:|---:|---:|"
    for (i = 1; i <= nk; i++) {
        k = order[i]
        cb = best(c[k]); cm = median(c[k])
        ob = best(t[k, "old"]); om = median(t[k, "old"])
        nb = best(t[k, "new"]); nm = median(t[k, "new"])
        printf "| %s | %.4f / %.4f | %.4f / %.4f | %.4f / %.4f | %.1fx / %.1fx | %.1fx / %.1fx |\n",
            k, cb, cm, ob, om, nb, nm, ob / cb, om / cm, nb / cb, nm / cm
    }
}' "$work/runs.tsv"
