#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# Builds qemu-system-x86_64 with qemu-patches/0001-vhost-user-cuda-pci.patch (the
# vhost-user-cuda-pci device) and a minimal device set, plus the firmware it needs.
#
#   eval "$(images/build-qemu.sh)"
#   $QEMU -L "${QEMU_FIRMWARE//:/ -L }" ...      # or one -L per colon-separated dir
#
# Prints exactly two lines on stdout: QEMU=<binary> and QEMU_FIRMWARE=<dir:dir>; logs go to
# stderr. The result is cached in $VCUDA_CACHE/qemu-<version>-<hash of this script's code + patch>/;
# the pinned source and firmware files are kept in $VCUDA_CACHE/src/ and checked by sha256.
# VCUDA_JOBS (default 2) sets the build parallelism.
source "$(dirname "$0")/lib.sh"
exec 3>&1 1>&2

# Primary source: Debian trixie's complete source package (dpkg-source applies Debian's patches,
# among them skip-unpack-edk2-blobs and disable-pycotap, which the stripped +ds tarball needs).
QEMU_VERSION=10.0.13
QEMU_DEB=1:10.0.13+ds-0+deb13u1
QEMU_FILES=(
    "a426c892e5369058c3423816c8625bc8010bb5a58ece57261f62b64ee4d765ad qemu_10.0.13+ds-0+deb13u1.dsc"
    "6a0888e806c2ffc0c5f0733e974f9aea55491950d3c47c98669c8b236dde59ae qemu_10.0.13+ds.orig.tar.xz"
    "da73c092f5684c551b0334d675eb16a3dec91e1edea94759cfb1102fa4a0364e qemu_10.0.13+ds-0+deb13u1.debian.tar.xz"
)
# Fallback when the trixie point release has left the archive: bookworm-backports' 10.0.2 orig
# tarball (its .dsc and .debian.tar.xz are not published); the two Debian fixes it needs are
# applied by prepare_fallback below.
FALLBACK_VERSION=10.0.2
FALLBACK_DEB=1:10.0.2+ds-2+deb13u1~bpo12+1
FALLBACK_FILES=(
    "0901da33844a331bf8b3602b9c1fbd178e60b737c8e3ade678255bd090c9b9f1 qemu_10.0.2+ds.orig.tar.xz"
)
# Firmware (arch:all, bookworm-backports), unpacked with dpkg-deb -x, never installed.
FIRMWARE_DEBS=(
    "48390d0a534c66d11789e39518aa219773a9d3677b29fe1af8799dfb563ec713 seabios=1.16.3-2~bpo12+1
        seabios_1.16.3-2~bpo12+1_all.deb"
    "2d831088187087013b3fcbd19bdfb955b182a2d5a08f6dafa0ad1c6d2007fb4e qemu-system-data=1:10.0.2+ds-2+deb13u1~bpo12+1
        qemu-system-data_1%3a10.0.2+ds-2+deb13u1~bpo12+1_all.deb"
)
BUILD_DEPS=(build-essential pkg-config ninja-build flex bison libglib2.0-dev zlib1g-dev python3-venv dpkg-dev
    xz-utils meson/bookworm-backports python3-pycotap/bookworm-backports)
CONFIGURE=(--python=/usr/bin/python3 --target-list=x86_64-softmmu --without-default-features
    --without-default-devices --with-devices-x86_64=vcuda --enable-kvm --enable-tcg --enable-vhost-user
    --disable-docs --disable-tools --disable-guest-agent --disable-user --disable-linux-user
    --disable-bsd-user --disable-werror --disable-download --disable-install-blobs)

PATCH=$REPO_ROOT/qemu-patches/0001-vhost-user-cuda-pci.patch
SRC=$VCUDA_CACHE/src/qemu
JOBS=${VCUDA_JOBS:-2}
key=$(short_hash <(script_code "$0") "$PATCH")

emit() {
    local d=$1
    emit_var QEMU "$d/bin/qemu-system-x86_64" >&3
    emit_var QEMU_FIRMWARE "$d/firmware/usr/share/qemu:$d/firmware/usr/share/seabios" >&3
    exit 0
}

cached() {
    local v
    for v in "$QEMU_VERSION" "$FALLBACK_VERSION"; do
        [ -x "$VCUDA_CACHE/qemu-$v-$key/bin/qemu-system-x86_64" ] && emit "$VCUDA_CACHE/qemu-$v-$key"
    done
    return 0
}
cached
# One build at a time; a second caller waits and then finds the result.
mkdir -p "$VCUDA_CACHE"
exec 8>"$VCUDA_CACHE/.qemu.lock"
flock 8
cached

# True when every "sha file" entry is present in $SRC with the recorded hash; dies on a mismatch.
have_files() {
    local e ok=0
    for e in "$@"; do
        [ -f "$SRC/${e#* }" ] || { ok=1; continue; }
        check_sha256 "$SRC/${e#* }" "${e%% *}"
    done
    return $ok
}

# Fetches the pinned source files: the trixie package, else the backports tarball.
# Sets VERSION and KIND.
fetch_source() {
    mkdir -p "$SRC"
    if have_files "${QEMU_FILES[@]}" ||
        { (cd "$SRC" && apt_new source --download-only "qemu=$QEMU_DEB" >&2) && have_files "${QEMU_FILES[@]}"; }; then
        VERSION=$QEMU_VERSION KIND=primary
        return
    fi
    log "warning: qemu $QEMU_DEB is not downloadable, falling back to $FALLBACK_DEB"
    if have_files "${FALLBACK_FILES[@]}" ||
        { (cd "$SRC" && apt_new source --download-only --tar-only "qemu=$FALLBACK_DEB" >&2) &&
            have_files "${FALLBACK_FILES[@]}"; }; then
        VERSION=$FALLBACK_VERSION KIND=fallback
        return
    fi
    die "no pinned QEMU source is downloadable; update the pins in $0"
}

# Unpacks the fallback tarball into $1 and makes the two changes Debian's patches make for a
# tarball stripped of blobs and bundled wheels.
prepare_fallback() {
    tar -xf "$SRC/${FALLBACK_FILES[0]#* }" -C "$(dirname "$1")"
    mv "$(dirname "$1")/qemu-$FALLBACK_VERSION" "$1"
    # The edk2 firmware blobs are not in the tarball: do not unpack them.
    sed -i 's/^if unpack_edk2_blobs$/if unpack_edk2_blobs and false/' "$1/pc-bios/meson.build"
    grep -q '^if unpack_edk2_blobs and false$' "$1/pc-bios/meson.build" || die "edk2 fix did not apply"
    # pycotap (functional tests only) comes from python3-pycotap; no wheel is bundled.
    sed -i 's/^pycotap = /#pycotap = /' "$1/pythondeps.toml"
}

fetch_firmware() {
    local fw=$VCUDA_CACHE/src/firmware sha pkg deb
    mkdir -p "$fw" "$1"
    for e in "${FIRMWARE_DEBS[@]}"; do
        read -r -d "" sha pkg deb <<<"$e" || true
        [ -f "$fw/$deb" ] || (cd "$fw" && apt_download "$pkg") || die "cannot download $pkg"
        check_sha256 "$fw/$deb" "$sha"
        dpkg-deb -x "$fw/$deb" "$1"
    done
    [ -f "$1/usr/share/seabios/bios-256k.bin" ] || die "firmware: bios-256k.bin missing"
}

apt_install "${BUILD_DEPS[@]}"
# apt_install skips a package that is installed at all: make sure meson is the backport.
if ! dpkg --compare-versions "$(dpkg-query -W -f='${Version}' meson)" ge 1.5; then
    {
        flock 9
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=600 \
            -o Dir::Etc::SourceList="$APT_PRIVATE/sources.list" -o Dir::Etc::SourceParts=/dev/null \
            -o Dir::State::Lists="$APT_PRIVATE/lists" meson/bookworm-backports
    } 9>"$(_apt_lock)"
fi

fetch_source
dir=$VCUDA_CACHE/qemu-$VERSION-$key
work=$dir.tmp
rm -rf "$work"
mkdir -p "$work/bin"
log "building QEMU $VERSION ($KIND source) in $work"
if [ "$KIND" = primary ]; then
    dpkg-source -x "$SRC/${QEMU_FILES[0]#* }" "$work/src" >&2
else
    prepare_fallback "$work/src"
fi
patch -d "$work/src" -p1 --batch --forward <"$PATCH" || die "the patch does not apply to QEMU $VERSION"
mkdir "$work/src/build"
(cd "$work/src/build" && ../configure "${CONFIGURE[@]}" && ninja -j "$JOBS" qemu-system-x86_64) >&2
cp "$work/src/build/qemu-system-x86_64" "$work/bin/"
fetch_firmware "$work/firmware"
"$work/bin/qemu-system-x86_64" -device help | grep -q '^name "vhost-user-cuda-pci"' ||
    die "the built QEMU has no vhost-user-cuda-pci device"
printf 'qemu %s (%s source)\nconfigure %s\n' "$VERSION" "$KIND" "${CONFIGURE[*]}" >"$work/BUILDINFO"
rm -rf "$work/src"
publish_dir "$dir"
log "built $dir"
emit "$dir"
