#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# Builds the vcuda guest image: the guest kernel, the vcuda module, and a base initramfs with
# busybox, the C/C++ runtime that dynamically linked CUDA programs need (glibc, libstdc++,
# libgcc_s), libvcuda.so with its soname links in /usr/lib/vcuda (in ld.so.cache), vcuda.ko and
# images/guest/init. Also builds the patched QEMU. Everything is cached by key.
#
#   images/build-guest.sh [--lib-dir DIR] [--out DIR]
#
#   --lib-dir DIR   the libvcuda directory (`vcuda lib-dir`: libvcuda.so and its soname links);
#                   default: $CARGO_TARGET_DIR (or target/) release build, made with cargo
#   --out DIR       also copy the image (and write image.env there) into DIR, e.g. to use it
#                   later through VCUDA_IMAGE_DIR
#
# Prints VAR=value lines for eval: GUEST_DIR (the image directory), BZIMAGE, INITRAMFS,
# MANIFEST (every path in the base initramfs, one a line), MODULE, QEMU, QEMU_FIRMWARE. The
# image directory also holds image.env with the same lines (paths relative to it where the
# file lies inside it), which is what VCUDA_IMAGE_DIR points `vcuda vm run` at.
#
# A program runs when an archive with /vcuda/run (an executable) is appended to INITRAMFS
# (the kernel unpacks concatenated cpio archives); `vcuda vm run` does that. See
# images/README.md, "Booting the guest by hand".
source "$(dirname "$0")/lib.sh"
exec 3>&1 1>&2

lib_dir= out=
while [ $# -gt 0 ]; do
    case $1 in
    --lib-dir) [ $# -ge 2 ] || die "--lib-dir needs a value"; lib_dir=$2; shift 2 ;;
    --out) [ $# -ge 2 ] || die "--out needs a value"; out=$2; shift 2 ;;
    -h | --help) sed -n '2,/^$/s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
    *) die "unknown argument: $1" ;;
    esac
done

if [ -z "$lib_dir" ]; then
    target=${CARGO_TARGET_DIR:-$REPO_ROOT/target}
    if [ ! -f "$target/release/libvcuda.so" ]; then
        log "building libvcuda.so (cargo build --release -p vcuda-guest)"
        (cd "$REPO_ROOT" && cargo build --release -p vcuda-guest >&2) || die "cannot build libvcuda.so"
    fi
    lib_dir=$target/release
fi
lib=$lib_dir/libvcuda.so
[ -f "$lib" ] || die "no libvcuda.so in $lib_dir"
# The names programs load libvcuda.so by: the links next to it (`vcuda lib-dir`), at least
# libcudart.so.13 and libcudart.so.12; and the soname shims there (small libraries such as
# libcublas.so.13 that forward to libvcuda.so), copied as they are.
names=(libcudart.so.13 libcudart.so.12) shims=()
for f in "$lib_dir"/lib*.so*; do
    n=$(basename "$f")
    [ "$n" = libvcuda.so ] && continue
    if [ -L "$f" ] && [ "$(readlink -f "$f")" = "$(readlink -f "$lib")" ]; then
        names+=("$n")
    elif [ -f "$f" ]; then
        shims+=("$f")
    fi
done
mapfile -t names < <(printf '%s\n' "${names[@]}" | LC_ALL=C sort -u)

eval "$("$REPO_ROOT/images/build-qemu.sh")"
eval "$("$REPO_ROOT/images/build-module.sh")"   # also the kernel's KDIR, BZIMAGE

# The C/C++ runtime of dynamically linked CUDA programs (host paths, as ldd resolves them).
runtime=()
for soname in libstdc++.so.6 libgcc_s.so.1 libm.so.6 libc.so.6 libpthread.so.0 libdl.so.2 librt.so.1; do
    # (awk reads everything: an early exit would kill ldconfig with SIGPIPE under pipefail)
    p=$(/sbin/ldconfig -p | awk -v n="$soname" '$1 == n && /x86-64/ && !found { print $NF; found = 1 }')
    [ -n "$p" ] || die "cannot find $soname on this machine (install libstdc++6)"
    runtime+=("$p")
done

busybox=/bin/busybox   # the one build-initramfs.sh uses
case $(file -L "$busybox" 2>/dev/null) in
*'statically linked'*) ;;
*) busybox=$VCUDA_CACHE/busybox-static/bin/busybox ;;
esac
key_inputs=("$REPO_ROOT/images/guest/init" "$MODULE" "$lib" "$REPO_ROOT/images/build-initramfs.sh" "${shims[@]}")
[ -f "$busybox" ] && key_inputs+=("$busybox")
# The QEMU path names its cache key (version, patch): image.env records it, so a changed
# patch must make a new image.
key=$(short_hash <(script_code "$0") <(printf '%s\n' "$BZIMAGE" "$QEMU" "${names[@]}" "${shims[@]##*/}" "${runtime[@]}") \
    "${key_inputs[@]}" "${runtime[@]}")
dir=$VCUDA_CACHE/guest-$key

cache_lock guest
if [ ! -f "$dir/image.env" ]; then
    rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
    args=(--init "$REPO_ROOT/images/guest/init" --add "$MODULE:/lib/modules/vcuda.ko"
        --add "$lib:/usr/lib/vcuda/libvcuda.so" --ld-path /usr/lib/vcuda --add-libs-for "$lib")
    for n in "${names[@]}"; do args+=(--symlink "libvcuda.so:/usr/lib/vcuda/$n"); done
    for f in "${shims[@]}"; do args+=(--add "$f:/usr/lib/vcuda/${f##*/}"); done
    for p in "${runtime[@]}"; do args+=(--add "$p:$p" --add-libs-for "$p"); done
    printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$dir.tmp/passwd"
    printf 'root:x:0:\nnogroup:x:65534:\n' >"$dir.tmp/group"
    args+=(--add "$dir.tmp/passwd:/etc/passwd" --add "$dir.tmp/group:/etc/group")
    "$REPO_ROOT/images/build-initramfs.sh" "$dir.tmp/initramfs.cpio.gz" "${args[@]}"
    gzip -dc "$dir.tmp/initramfs.cpio.gz" | cpio -it --quiet | sed 's|^\./|/|; s|^\([^/]\)|/\1|' | LC_ALL=C sort >"$dir.tmp/manifest"
    rm "$dir.tmp/passwd" "$dir.tmp/group"
    cp "$BZIMAGE" "$dir.tmp/bzImage"
    cp "$MODULE" "$dir.tmp/vcuda.ko"
    {
        emit_var BZIMAGE bzImage
        emit_var INITRAMFS initramfs.cpio.gz
        emit_var MANIFEST manifest
        emit_var MODULE vcuda.ko
        emit_var QEMU "$QEMU"
        emit_var QEMU_FIRMWARE "$QEMU_FIRMWARE"
    } >"$dir.tmp/image.env"
    publish_dir "$dir"
    log "built $dir ($(stat -c %s "$dir/initramfs.cpio.gz") byte initramfs)"
fi

if [ -n "$out" ]; then
    mkdir -p "$out"
    cp "$dir"/{bzImage,initramfs.cpio.gz,manifest,vcuda.ko,image.env} "$out/"
    log "copied the image to $out"
fi
{
    emit_var GUEST_DIR "$dir"
    emit_var BZIMAGE "$dir/bzImage"
    emit_var INITRAMFS "$dir/initramfs.cpio.gz"
    emit_var MANIFEST "$dir/manifest"
    emit_var MODULE "$dir/vcuda.ko"
    emit_var QEMU "$QEMU"
    emit_var QEMU_FIRMWARE "$QEMU_FIRMWARE"
} >&3
