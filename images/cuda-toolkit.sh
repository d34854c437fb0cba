#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# Installs the CUDA 13.0 toolkit (nvcc, headers, libcudart, cuBLAS, cuRAND) from PyPI into a
# cached virtualenv. No GPU is needed. Prints the toolkit root (bin/nvcc, include/, lib/).
#
#   ROOT=$(images/cuda-toolkit.sh) && $ROOT/bin/nvcc -cudart=shared -L$ROOT/lib ...
source "$(dirname "$0")/lib.sh"

PKGS=(
    nvidia-cuda-nvcc==13.0.88
    nvidia-cuda-runtime==13.0.96
    nvidia-cuda-crt==13.0.88
    nvidia-nvvm==13.0.88
    nvidia-cuda-cccl==13.0.85
    nvidia-cublas==13.0.2.14
    nvidia-curand==10.4.0.35
)
key=$(printf '%s\n' "${PKGS[@]}" | short_hash)
dir=$VCUDA_CACHE/cuda-13.0-$key
PY=${VCUDA_PYTHON:-/usr/bin/python3}

# One installer at a time (setup.sh, the Caffe and image builders and the VM tests may all
# ask at once): a second one would delete the first's half-made tree under it.
cache_lock cuda13
if [ ! -x "$dir/root/bin/nvcc" ]; then
    log "installing CUDA 13.0 toolkit into $dir"
    rm -rf "$dir.tmp"
    if ! "$PY" -m venv "$dir.tmp/venv" 2>/dev/null; then
        apt_install python3-venv
        "$PY" -m venv "$dir.tmp/venv"
    fi
    "$dir.tmp/venv/bin/pip" install -q --disable-pip-version-check "${PKGS[@]}" >&2
    site=$(echo "$dir.tmp"/venv/lib/python3*/site-packages/nvidia/cu13)
    [ -x "$site/bin/nvcc" ] || die "nvcc not found under $site"
    # The wheels install into one tree; give it a stable name and the unversioned links nvcc -l needs.
    ln -s "${site#"$dir.tmp"/}" "$dir.tmp/root"
    for l in cudart cublas cublasLt curand; do
        so=$(cd "$site/lib" && ls lib$l.so.* 2>/dev/null | sort | head -1) || true
        [ -n "$so" ] && ln -sf "$so" "$site/lib/lib$l.so"
    done
    publish_dir "$dir"
    # The venv records its absolute path; recreate the root link after the move.
    site=$(echo "$dir"/venv/lib/python3*/site-packages/nvidia/cu13)
    ln -sfn "$site" "$dir/root"
fi
echo "$dir/root"
