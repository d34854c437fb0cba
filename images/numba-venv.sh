#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# Installs Numba's CUDA target (numba-cuda from PyPI, with CUDA 13 NVRTC/NVVM wheels and
# numpy; with argument 12, CUDA 12's) into a cached virtualenv, for the Python tests
# (tests/python/). No GPU is needed. Prints the venv's python.
#
#   PY=$(images/numba-venv.sh) && vcuda run -- "$PY" tests/python/numba_basic.py
#   PY=$(images/numba-venv.sh --tests)    # also what numba-cuda's own tests import
#                                         # (tests/python/numba-suite.sh)
#   PY=$(images/numba-venv.sh 12)         # numba-cuda[cu12]
#
# As pip installs it, nvJitLink included: under `vcuda run` (and in the VM) vcuda's own
# libnvJitLink.so.13 is preloaded, which cuda-pathfinder takes over the wheel's, and it keeps
# Numba's PTX (guest-lib/src/abi/nvjitlink.rs).
source "$(dirname "$0")/lib.sh"

cuda=13 tests=
for a in "$@"; do
    case $a in
    --tests) tests=1 ;;
    12 | 13) cuda=$a ;;
    *) die "usage: $0 [--tests] [13|12]" ;;
    esac
done
PKGS=("numba-cuda[cu$cuda]==0.30.4")
name=numba
[ "$cuda" = 13 ] || name=numba-cu$cuda
if [ -n "$tests" ]; then
    PKGS+=(pytest pytest-timeout cffi psutil filecheck ml_dtypes)
    name=$name-tests
fi
key=$(printf '%s\n' "${PKGS[@]}" | cat - <(script_code "$0") | short_hash)
dir=$VCUDA_CACHE/$name-$key
PY=${VCUDA_PYTHON:-/usr/bin/python3}

cache_lock numba
if [ ! -x "$dir/venv/bin/python" ]; then
    log "installing ${PKGS[*]} into $dir"
    rm -rf "$dir.tmp"
    if ! "$PY" -m venv "$dir.tmp/venv" 2>/dev/null; then
        apt_install python3-venv
        "$PY" -m venv "$dir.tmp/venv"
    fi
    "$dir.tmp/venv/bin/python" -m pip install -q --disable-pip-version-check "${PKGS[@]}" >&2 ||
        die "pip install ${PKGS[*]} failed"
    "$dir.tmp/venv/bin/python" -c 'import numba.cuda, numpy' ||
        die "numba-cuda does not import"
    publish_dir "$dir"
fi
echo "$dir/venv/bin/python"
