#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# Builds the vcuda guest kernel module (guest-driver/) against the pinned guest kernel
# (build-kernel.sh, built first if needed) and caches it by key:
#
#   eval "$(images/build-module.sh)"      # MODULE=<cache>/module-<key>/vcuda.ko, and the
#                                         # kernel's KDIR=, BZIMAGE=, KMAKE=, KPATH=
#
# The key hashes the kernel build directory's name (itself a hash of the kernel's inputs), this
# script's code and every file of guest-driver/ that goes into the build. The build runs in a
# private copy of guest-driver/, so the source tree stays clean. A warm kernel makes a changed
# module build in seconds.
#
#   images/build-module.sh --check        # lint only: clippy (the kernel's CLIPPY=1 lints) and
#                                         # compiler warnings are errors; prints nothing
source "$(dirname "$0")/lib.sh"
exec 3>&1 1>&2

kvars=$("$REPO_ROOT/images/build-kernel.sh")
eval "$kvars"
src=$REPO_ROOT/guest-driver
files=("$src"/Kbuild "$src"/*.rs "$src"/*.c)

if [ "${1:-}" = --check ]; then
    # clippy-driver of the kernel's rustc (bookworm-security).
    apt_install rust-web-clippy
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/vcuda-module-check.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    cp "${files[@]}" "$tmp/"
    # shellcheck disable=SC2086
    out=$(PATH="$KPATH:$PATH" make -s -C "$KDIR" M="$tmp" $KMAKE CLIPPY=1 CLIPPY_DRIVER=/usr/bin/clippy-driver \
        modules 2>&1) || { printf '%s\n' "$out"; die "the module does not build"; }
    if grep -qiE 'warning|error' <<<"$out"; then
        printf '%s\n' "$out"
        die "the module has warnings (above)"
    fi
    log "guest-driver: no clippy or compiler warnings"
    exit 0
fi
key=$(short_hash <(echo "$KDIR") <(script_code "$0") "${files[@]}")
dir=$VCUDA_CACHE/module-$key
cache_lock module
if [ ! -f "$dir/vcuda.ko" ]; then
    rm -rf "$dir.tmp"
    mkdir -p "$dir.tmp/build"
    cp "${files[@]}" "$dir.tmp/build/"
    log "building vcuda.ko against $KDIR"
    # shellcheck disable=SC2086
    PATH="$KPATH:$PATH" make -s -C "$KDIR" M="$dir.tmp/build" $KMAKE modules >&2 ||
        die "the module does not build (output above)"
    cp "$dir.tmp/build/vcuda.ko" "$dir.tmp/vcuda.ko"
    rm -rf "$dir.tmp/build"
    publish_dir "$dir"
    log "built $dir/vcuda.ko"
fi
{
    emit_var MODULE "$dir/vcuda.ko"
    printf '%s\n' "$kvars"
} >&3
