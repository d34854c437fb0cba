#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# Installs what building and testing vcuda needs on a Debian bookworm machine with a Rust
# toolchain: a few Debian packages (libopenblas-dev: the CPU executor's cuBLAS; g++: libFuzzer,
# which fuzz/run.sh compiles) and the CUDA 13.0 toolkit from PyPI (cached). Idempotent.
source "$(dirname "$0")/../images/lib.sh"

pkgs=(python3-venv binutils pkg-config libopenblas-dev g++)
apt_install "${pkgs[@]}"
command -v cargo >/dev/null || die "cargo not found: install Rust (https://rustup.rs)"
"$REPO_ROOT/images/cuda-toolkit.sh" >/dev/null
"$REPO_ROOT/images/cuda12-toolkit.sh" >/dev/null
