#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# Packs what a lent GPU machine needs to check vcuda there, into a folder of the checkout that
# git ignores (default .gpukit/), so that a device tool can carry it with the tree:
#
#   bin/   vcuda, vcuda-backend, libvcuda.so (release, without debug information) and
#          backend-tests (the backend's unit tests, likewise: `backend-tests executor::cuda`)
#   tools/ Debian's strace with its libunwind (tests/gpu/syscalls.sh)
#   vm/    the guest image (images/build-guest.sh) with the patched QEMU, its firmware and
#          the libraries it needs that a GPU image may lack (glib, pcre2), image.env's paths
#          relative to vm/ (device-check.sh fixes QEMU_FIRMWARE there)
#   progs/ the test programs device-check.sh runs in the VM (some also as NAME.static, with
#          nvcc's default static runtime) and call-ring-check.sh's benchmarks, built here with
#          the PyPI toolkit (images/cuda-toolkit.sh): the guest carries this machine's C library,
#          which programs built on a newer system (the GPU machine's) cannot start with
#
#   bash tests/gpu/kit.sh [--no-vm] [DIR]      (from the repository root)
#
# Then, on the GPU machine, from the repository root: `bash tests/gpu/device-check.sh DIR`
# (OUT=folder for results). The kit is about 50 MiB (29 without the VM).
set -euo pipefail
cd "$(dirname "$0")/../.."

VM=1
KIT=.gpukit
# What device-check.sh runs in the VM (programs without arguments).
VM_PROGRAMS="vectorAdd matmul saxpy pinned pageable api_streams graphs managed mapped textures
    cublas_basic curand_basic driver_api mempool zero_copy vmm library memcpy_batch driver_graphs mipmap device_malloc wmma"
# ... and also built with nvcc's default static runtime (PROGRAM.static).
VM_STATIC="vectorAdd matmul cublas_basic curand_basic graphs driver_api"
while [ $# -gt 0 ]; do
    case $1 in
        --no-vm) VM=0 ;;
        -h | --help) sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) KIT=$1 ;;
    esac
    shift
done
case $KIT in
    /* | ../*) echo "kit.sh: the kit must be a folder inside the checkout" >&2; exit 2 ;;
esac
git check-ignore -q "$KIT" || {
    echo "kit.sh: $KIT is not ignored by git; add /$KIT/ to .git/info/exclude" >&2
    exit 2
}

cargo build --release -p vcuda-cli -p vcuda-backend -p vcuda-guest >&2
tests_bin=$(cargo test --release -p vcuda-backend --lib --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json, sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "vcuda_backend":
        print(m["executable"])' | tail -1)
[ -n "$tests_bin" ] || { echo "kit.sh: no backend test binary" >&2; exit 1; }

rm -rf "$KIT/bin" "$KIT/vm" "$KIT/progs"
mkdir -p "$KIT/bin"
# Debug information goes; symbols stay (about 1.5 MiB each), so a debugger's backtrace on
# the GPU machine names vcuda's frames, not only the driver's.
for f in vcuda vcuda-backend libvcuda.so; do
    strip --strip-debug -o "$KIT/bin/$f" "target/release/$f"
done
strip --strip-debug -o "$KIT/bin/backend-tests" "$tests_bin"

# Debian's strace and the libunwind it needs (a GPU machine may lack both), for
# tests/gpu/syscalls.sh.
rm -rf "$KIT/tools"
mkdir -p "$KIT/tools/lib"
debs=$(mktemp -d)
(cd "$debs" && apt-get download strace libunwind8 >/dev/null 2>&1) || {
    echo "kit.sh: cannot download strace from Debian" >&2
    exit 1
}
for d in "$debs"/*.deb; do dpkg-deb -x "$d" "$debs/x"; done
cp "$debs/x/usr/bin/strace" "$KIT/tools/"
cp -L "$debs"/x/usr/lib/x86_64-linux-gnu/libunwind{,-ptrace,-x86_64}.so.* "$KIT/tools/lib/" 2>/dev/null
rm -rf "$debs"

if [ "$VM" = 1 ]; then
    # The guest image with this libvcuda.so (its soname links are made in a scratch copy,
    # since links into the kit would point at this machine's paths).
    lib=$(mktemp -d)
    trap 'rm -rf "$lib"' EXIT
    cp "$KIT/bin/libvcuda.so" "$KIT/bin/vcuda" "$lib/"
    "$lib/vcuda" lib-dir >/dev/null
    bash images/build-guest.sh --lib-dir "$lib" --out "$KIT/vm" >/dev/null
    # shellcheck disable=SC1091
    eval "$(grep -E '^(QEMU|QEMU_FIRMWARE)=' "$KIT/vm/image.env")"
    strip -o "$KIT/vm/qemu-system-x86_64" "$QEMU"
    mkdir -p "$KIT/vm/firmware/qemu" "$KIT/vm/firmware/seabios" "$KIT/vm/lib"
    IFS=: read -r qemu_share seabios_share <<<"$QEMU_FIRMWARE"
    for f in kvmvapic.bin linuxboot.bin linuxboot_dma.bin multiboot.bin multiboot_dma.bin pvh.bin; do
        cp "$qemu_share/$f" "$KIT/vm/firmware/qemu/"
    done
    cp -L "$seabios_share"/*.bin "$KIT/vm/firmware/seabios/"
    for l in libglib-2.0.so.0 libpcre2-8.so.0; do
        p=$(ldd "$QEMU" | awk -v l="$l" '$1 == l { print $3 }')
        [ -n "$p" ] && cp -L "$p" "$KIT/vm/lib/"
    done
    sed -i 's#^QEMU=.*#QEMU=qemu-system-x86_64#' "$KIT/vm/image.env"

    root=$(bash images/cuda-toolkit.sh)
    mkdir -p "$KIT/progs"
    build() { # SOURCE OUTPUT CUDART
        local libs=() l
        for l in $(sed -n 's#^// vcuda-test: libs=##p' "$1" | tr ',' ' '); do
            libs+=("-l$l")
        done
        "$root/bin/nvcc" -cudart="$3" -O2 -std=c++17 \
            -gencode 'arch=compute_90,code=[sm_90,compute_90]' -Itests/cuda -Itests/gpu/bench \
            -L"$root/lib" -o "$2" "$1" "${libs[@]}" >&2
    }
    for n in $VM_PROGRAMS; do
        build "tests/cuda/$n.cu" "$KIT/progs/$n" shared
    done
    # nvcc's default runtime, linked into the program (it reaches vcuda's libcuda.so.1).
    for n in $VM_STATIC; do
        build "tests/cuda/$n.cu" "$KIT/progs/$n.static" static
    done
    # call-ring-check.sh's benchmarks, in the VM.
    for n in latency launch; do
        build "tests/gpu/bench/$n.cu" "$KIT/progs/$n" shared
    done
fi
du -sh "$KIT" >&2
