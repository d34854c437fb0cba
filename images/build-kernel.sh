#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# Builds the vcuda guest kernel (Linux 7.2.13 from Debian's linux-source-7.2, CONFIG_RUST=y,
# tinyconfig + images/kernel/vcuda.config, images/kernel/*.patch applied) and keeps the built
# tree so out-of-tree (Rust) modules build against it:
#
#   eval "$(images/build-kernel.sh)"
#   PATH="$KPATH:$PATH" make -C "$KDIR" M="$PWD" $KMAKE
#
# Prints exactly four lines on stdout: KDIR=, BZIMAGE=, KMAKE= (make variables selecting the
# toolchain) and KPATH= (a PATH prefix); logs go to stderr. The result is cached in
# $VCUDA_CACHE/kernel-7.2.13-<hash of this script's code + patches + fragment>/; bindgen-cli in
# $VCUDA_CACHE/bindgen-0.73.2/. VCUDA_JOBS (default 2) sets the build parallelism.
source "$(dirname "$0")/lib.sh"
exec 3>&1 1>&2

KVER=7.2.13
# Debian sid's arch:all source package; sid moves on, so the .deb is kept in the cache.
KDEB_PKG=linux-source-7.2=7.2.13-1
KDEB=linux-source-7.2_7.2.13-1_all.deb
KDEB_SHA256=30a8c5fc63f9028a62e6d7b3f7f43bee67425dbce2a05fceba83f9b87c92083d
BINDGEN_VERSION=0.73.2
LLVM_DIR=/usr/lib/llvm-22
# Toolchain (bookworm-security: rustc 1.96, LLVM 22; bookworm's clang 14 is too old for 7.2).
TOOL_DEPS=(build-essential make flex bison libelf-dev bc cpio xz-utils kmod
    rustc-web rust-web-src rustfmt-web clang-22 lld-22 llvm-22 libclang-22-dev)

KERNEL_DIR=$REPO_ROOT/images/kernel
FRAGMENT=$KERNEL_DIR/vcuda.config
PATCHES=("$KERNEL_DIR"/*.patch)
JOBS=${VCUDA_JOBS:-2}
key=$(short_hash <(script_code "$0") "${PATCHES[@]}" "$FRAGMENT")
dir=$VCUDA_CACHE/kernel-$KVER-$key
BINDGEN_ROOT=$VCUDA_CACHE/bindgen-$BINDGEN_VERSION
BINDGEN=$BINDGEN_ROOT/bin/bindgen

KMAKE=(LLVM=1 RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc HOSTRUSTC=/usr/bin/rustc "BINDGEN=$BINDGEN"
    "LIBCLANG_PATH=$LLVM_DIR/lib")
KPATH=$LLVM_DIR/bin

emit() {
    {
        emit_var KDIR "$dir"
        emit_var BZIMAGE "$dir/arch/x86/boot/bzImage"
        emit_var KMAKE "${KMAKE[*]}"
        emit_var KPATH "$KPATH"
    } >&3
    exit 0
}

# The toolchain is checked even on a cache hit: module builds need it.
apt_install "${TOOL_DEPS[@]}"
[ -f "$dir/.vcuda-built" ] && [ -x "$BINDGEN" ] && emit
# One build at a time; a second caller waits and then finds the result.
mkdir -p "$VCUDA_CACHE"
exec 8>"$VCUDA_CACHE/.kernel.lock"
flock 8
[ -f "$dir/.vcuda-built" ] && [ -x "$BINDGEN" ] && emit

export PATH=$KPATH:$PATH LIBCLANG_PATH=$LLVM_DIR/lib

# bindgen-cli, built once from crates.io with the locked dependency versions.
if [ ! -x "$BINDGEN" ]; then
    command -v cargo >/dev/null || apt_install cargo-web
    log "installing bindgen-cli $BINDGEN_VERSION into $BINDGEN_ROOT"
    rm -rf "$BINDGEN_ROOT.tmp"
    CARGO_TARGET_DIR=$BINDGEN_ROOT.tmp/target cargo install --locked -j "$JOBS" \
        "bindgen-cli@$BINDGEN_VERSION" --root "$BINDGEN_ROOT.tmp" >&2
    rm -rf "$BINDGEN_ROOT.tmp/target"
    publish_dir "$BINDGEN_ROOT"
fi
"$BINDGEN" --version | grep -q "$BINDGEN_VERSION" || die "unexpected bindgen: $("$BINDGEN" --version)"

[ -f "$dir/.vcuda-built" ] && emit

# The kernel source.
src=$VCUDA_CACHE/src/linux
mkdir -p "$src"
if [ ! -f "$src/$KDEB" ]; then
    (cd "$src" && apt_new download "$KDEB_PKG" >&2) || die "cannot download $KDEB_PKG (gone from sid? update the pin)"
fi
check_sha256 "$src/$KDEB" "$KDEB_SHA256"

# The kernel records absolute paths of the tree in generated files, so it is built where it will
# live; the .vcuda-built marker, written last, says it is complete.
work=$dir
rm -rf "$work"
mkdir -p "$work"
log "unpacking Linux $KVER into $work"
dpkg-deb --fsys-tarfile "$src/$KDEB" | tar -xO ./usr/src/linux-source-7.2.tar.xz | tar -xJ -C "$work" --strip-components=1
for p in "${PATCHES[@]}"; do
    patch -d "$work" -p1 --batch --forward <"$p" >&2 || die "$p does not apply"
done

cd "$work"
export KBUILD_BUILD_USER=vcuda KBUILD_BUILD_HOST=vcuda KBUILD_BUILD_TIMESTAMP="2026-01-01 00:00:00 UTC"
make -s "${KMAKE[@]}" rustavailable >&2 || die "the Rust toolchain is not usable for Linux $KVER"
make -s "${KMAKE[@]}" tinyconfig >&2
scripts/kconfig/merge_config.sh -m .config "$FRAGMENT" >&2
make -s "${KMAKE[@]}" olddefconfig >&2

# Every option the fragment asks for must have stuck.
bad=()
while IFS= read -r line; do
    case $line in
    CONFIG_*=*) grep -qxF "$line" .config || bad+=("$line (got: $(grep -E "^(# )?${line%%=*}[= ]" .config || echo unset))") ;;
    "# CONFIG_"*" is not set") o=${line#\# }; o=${o%% *}; grep -q "^$o=" .config && bad+=("$line (got: $(grep "^$o=" .config))") ;;
    esac
done <"$FRAGMENT"
[ ${#bad[@]} -eq 0 ] || die "options that did not stick after olddefconfig: $(printf '\n  %s' "${bad[@]}")"

log "building bzImage and modules with -j$JOBS"
make -j "$JOBS" "${KMAKE[@]}" bzImage modules >&2
[ -f arch/x86/boot/bzImage ] && [ -f Module.symvers ] && [ -f rust/kernel.o ] || die "build outputs missing"
# The bindings patch took effect.
grep -q 'pub fn virtqueue_add_sgs' rust/bindings/bindings_generated.rs || die "no virtio bindings generated"
cd /
touch "$dir/.vcuda-built"
log "built $dir ($(stat -c %s "$dir/arch/x86/boot/bzImage") byte bzImage)"
emit
