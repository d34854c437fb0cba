#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# Installs Numba's CUDA target (numba-cuda from PyPI, with CUDA 13 NVRTC/NVVM wheels and
# numpy) into a cached virtualenv, for the Python tests (tests/python/). No GPU is needed.
# Prints the venv's python.
#
#   PY=$(images/numba-venv.sh) && vcuda run -- "$PY" tests/python/numba_basic.py
#   PY=$(images/numba-venv.sh --tests)    # also what numba-cuda's own tests import
#                                         # (tests/python/numba-suite.sh)
#
# As pip installs it, nvJitLink included: under `vcuda run` (and in the VM) vcuda's own
# libnvJitLink.so.13 is preloaded, which cuda-pathfinder takes over the wheel's, and it keeps
# Numba's PTX (guest-lib/src/abi/nvjitlink.rs).
source "$(dirname "$0")/lib.sh"

PKGS=('numba-cuda[cu13]==0.30.4')
name=numba
if [ "${1:-}" = --tests ]; then
    PKGS+=(pytest pytest-timeout cffi psutil filecheck ml_dtypes)
    name=numba-tests
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
