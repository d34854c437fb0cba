#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# The test command: builds the workspace and runs every test (unit, protocol, backend,
# end-to-end CUDA programs through vcuda run, and the VM tests when their images can be
# built). Fails if the CUDA toolkit cannot be installed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export VCUDA_REQUIRE_CUDA=1
cargo build --workspace --all-targets
cargo test --workspace
# The CUDA executor against a mock libcuda.so.1 (no GPU here): waits, cancellation, start-up.
bash tests/gpu/mock/run.sh
# Caffe (images/build-caffe.sh, cached by key) unchanged through vcuda run: device_query and
# LeNet's `caffe time`.
bash tests/caffe/run.sh
if [ -x tests/vm/run.sh ] && [ "${VCUDA_SKIP_VM:-0}" != 1 ]; then
    VCUDA_VM_BUILT=1 bash tests/vm/run.sh
fi
