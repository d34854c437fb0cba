#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# The CPU executor's kernels compiled vs interpreted vs C with OpenMP, in one run:
#   bash bench/cpu-executor.sh [--only NAME]
# Needs gcc with OpenMP (Debian: gcc, libgomp1).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -O2 -fopenmp "$root/bench/cpu-kernels.c" -o "$work/cpu-kernels"
cd "$root"
cargo run --quiet --release -p vcuda-ptx --example bench -- --cref "$work/cpu-kernels" "$@"
