#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# Installs CuPy (cupy-cuda13x from PyPI, or cupy-cuda12x with argument 12) with the NVRTC
# and runtime-header wheels it compiles its kernels with, into a cached virtualenv, for the
# Python tests (tests/python/) and CuPy's own test suite (pytest;
# tests/python/cupy-suite.sh). No GPU is needed. Prints the venv's python.
#
#   PY=$(images/cupy-venv.sh) && vcuda run --executor cpu -- "$PY" tests/python/cupy_basic.py
#   PY=$(images/cupy-venv.sh 12)    # CUDA 12: libcublas.so.12, libcurand.so.10
#
# Not CuPy's `[ctk]` extra: its cuBLAS, cuRAND, cuFFT, cuSPARSE and cuSOLVER wheels (1.7
# GB) are NVIDIA's machine code; vcuda provides libcublas and libcurand itself, and CuPy
# reports the others as missing when a program asks for them.
source "$(dirname "$0")/lib.sh"

case ${1:-13} in
13) PKGS=('cupy-cuda13x==14.2.0' 'nvidia-cuda-nvrtc==13.5.37' 'nvidia-cuda-runtime==13.5.37') ;;
12) PKGS=('cupy-cuda12x==14.2.0' 'nvidia-cuda-nvrtc-cu12==12.9.86' 'nvidia-cuda-runtime-cu12==12.9.79') ;;
*) die "usage: $0 [13|12]" ;;
esac
PKGS+=('numpy==2.4.6' 'pytest==8.4.2')
key=$(printf '%s\n' "${PKGS[@]}" | cat - <(script_code "$0") | short_hash)
dir=$VCUDA_CACHE/cupy-$key
PY=${VCUDA_PYTHON:-/usr/bin/python3}

cache_lock cupy
if [ ! -x "$dir/venv/bin/python" ]; then
    log "installing ${PKGS[*]} into $dir"
    rm -rf "$dir.tmp"
    if ! "$PY" -m venv "$dir.tmp/venv" 2>/dev/null; then
        apt_install python3-venv
        "$PY" -m venv "$dir.tmp/venv"
    fi
    "$dir.tmp/venv/bin/python" -m pip install -q --disable-pip-version-check "${PKGS[@]}" >&2 ||
        die "pip install ${PKGS[*]} failed"
    "$dir.tmp/venv/bin/python" -c 'import cupy, numpy' || die "cupy does not import"
    publish_dir "$dir"
fi
echo "$dir/venv/bin/python"
