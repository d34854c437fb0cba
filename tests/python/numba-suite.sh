#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# Runs numba-cuda's own tests (numba.cuda.tests, installed with numba-cuda[cu13] 0.30.4 by
# images/numba-venv.sh --tests, nvJitLink included) through `vcuda run --executor cpu`, and
# prints pytest's summary: how many pass, fail, skip.
#
#   tests/python/numba-suite.sh                      # cudadrv and cudapy, as README.md reports
#   tests/python/numba-suite.sh numba.cuda.tests.cudapy.test_atomics -k add
#
# Arguments are pytest's, with test packages or modules named as Python modules (--pyargs).
# Environment: VCUDA (the vcuda binary; default target/debug/vcuda, built by `cargo
# build`), VCUDA_SUITE_TIMEOUT (seconds for the whole run, default 7200),
# VCUDA_TEST_TIMEOUT (seconds per test, default 300: a test that hangs fails),
# VCUDA_NUMBA_CUDA (12: numba-cuda[cu12] instead of numba-cuda[cu13]).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
source "$repo/images/lib.sh"

py=$(bash "$repo/images/numba-venv.sh" --tests "${VCUDA_NUMBA_CUDA:-13}")
vcuda=${VCUDA:-$repo/target/debug/vcuda}
[ -x "$vcuda" ] || die "$vcuda is missing: run cargo build (or set VCUDA)"
if [ $# -eq 0 ]; then
    set -- numba.cuda.tests.cudadrv numba.cuda.tests.cudapy
fi
export VCUDA_LIB_DIR=${VCUDA_LIB_DIR:-$(dirname "$vcuda")}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
# Warnings are left as Python shows them: numba-cuda's tests check some of them
# (test_print's "cannot print more than 32 items"), and a notice is not a failure.
# What numba-cuda's repository conftest.py gives its tests (not in the wheel).
export PYTHONPATH=$repo/tests/python${PYTHONPATH:+:$PYTHONPATH}
timeout "${VCUDA_SUITE_TIMEOUT:-7200}" "$vcuda" run --executor cpu -- \
    "$py" -m pytest -q -p no:cacheprovider -p numba_pytest_plugin -o addopts= \
    -o consider_namespace_packages=true \
    --timeout "${VCUDA_TEST_TIMEOUT:-300}" -rfE --import-mode=importlib --pyargs "$@" 2>&1 |
    tail -n 80
