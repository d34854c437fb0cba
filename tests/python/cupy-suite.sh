#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# Runs CuPy's own test suite (tests/ of the cupy 14.2.0 source release on PyPI, the version
# of the cupy-cuda13x wheel images/cupy-venv.sh installs) through `vcuda run --executor
# cpu`, and prints pytest's summary: how many pass, fail, skip.
#
#   tests/python/cupy-suite.sh                       # the five modules README.md reports
#   tests/python/cupy-suite.sh cupy_tests/creation_tests/test_ranges.py -k arange
#
# Paths are relative to CuPy's tests/ directory. Environment: VCUDA (the vcuda binary;
# default target/debug/vcuda, built by `cargo build`), VCUDA_SUITE_TIMEOUT (seconds, default
# 3600), VCUDA_CUPY_CUDA (12: cupy-cuda12x instead of cupy-cuda13x).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
source "$repo/images/lib.sh"

URL=https://files.pythonhosted.org/packages/dc/10/059a92d40b161ea24607c9e41a75098812ca7021f2b565524f87beba15c9/cupy-14.2.0.tar.gz
SHA=cfed725e612178cfbdbf62f4a3a598b60edecbbca718c0d4580c21a16ae4a62c
dir=$VCUDA_CACHE/cupy-tests-${SHA:0:16}

py=$(bash "$repo/images/cupy-venv.sh" "${VCUDA_CUPY_CUDA:-13}")
# The lock covers the fetch only (a subshell): a suite running holds no lock, so several
# can run at once.
(
    cache_lock cupy-tests
    if [ ! -d "$dir/tests" ]; then
        log "fetching CuPy 14.2.0's tests into $dir"
        rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
        curl -fsSL --retry 3 -o "$dir.tmp/cupy.tar.gz" "$URL"
        echo "$SHA  $dir.tmp/cupy.tar.gz" | sha256sum -c --quiet || die "checksum mismatch: $URL"
        tar xzf "$dir.tmp/cupy.tar.gz" -C "$dir.tmp" --strip-components=1 cupy-14.2.0/tests
        rm "$dir.tmp/cupy.tar.gz"
        publish_dir "$dir"
    fi
)

vcuda=${VCUDA:-$repo/target/debug/vcuda}
[ -x "$vcuda" ] || die "$vcuda is missing: run cargo build (or set VCUDA)"
if [ $# -eq 0 ]; then
    set -- cupy_tests/core_tests cupy_tests/creation_tests cupy_tests/math_tests \
        cupy_tests/manipulation_tests cupy_tests/random_tests
fi
cd "$dir/tests"
# The library directory of this build, unless the caller chose one.
export VCUDA_LIB_DIR=${VCUDA_LIB_DIR:-$(dirname "$vcuda")}
# CuPy's tests find nvcc (test_raw.py and test_core.py ask its version while they are
# collected, and fail to load without it): the toolkit images/cuda-toolkit.sh installs.
if [ -z "${NVCC:-}" ]; then
    NVCC=$(bash "$repo/images/cuda-toolkit.sh")/bin/nvcc
    export NVCC
fi
# One device: CuPy's multi-GPU tests skip, as in CuPy's own CI on one GPU (they fail
# natively there too).
export CUPY_TEST_GPU_LIMIT=${CUPY_TEST_GPU_LIMIT:-1}
timeout "${VCUDA_SUITE_TIMEOUT:-3600}" "$vcuda" run --executor cpu -- \
    "$py" -m pytest -q -p no:cacheprovider -o addopts= "$@" 2>&1 | tail -n 40
