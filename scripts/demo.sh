#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# The main job: sets up, builds everything, compiles vectorAdd with nvcc and runs it
# unchanged through vcuda on the CPU executor (no GPU needed).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --release --workspace
ROOT=$(images/cuda-toolkit.sh)
out=target/release/cuda-demo
mkdir -p "$out"
"$ROOT/bin/nvcc" -cudart=shared -O2 -gencode 'arch=compute_90,code=[sm_90,compute_90]' \
    -Itests/cuda -L"$ROOT/lib" tests/cuda/vectorAdd.cu -o "$out/vectorAdd"
echo "+ target/release/vcuda run --executor cpu -- $out/vectorAdd"
target/release/vcuda run --executor cpu -- "$out/vectorAdd"
