#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# Assembles a gzip'd newc initramfs: busybox-static (with every applet linked, /bin/sh among
# them), /dev/console, the given /init, extra files, and the shared libraries that given binaries
# need (ldd-resolved, the ELF interpreter included).
#
#   images/build-initramfs.sh OUT.cpio.gz --init FILE [--add SRC:DEST ...] [--add-libs-for BINARY ...]
#                             [--symlink TARGET:LINK ...] [--ld-path DIR ...]
#
#   --init FILE           becomes /init (made executable)
#   --add SRC:DEST        copies a file or directory to DEST in the image (DEST ending in / means
#                         "into this directory"); the mode is kept
#   --add-libs-for BIN    copies the libraries BIN loads (as ldd resolves them on this machine) to
#                         the same absolute paths in the image; directories outside the standard
#                         library path go into the image's /etc/ld.so.conf and ld.so.cache
#   --symlink TARGET:LINK creates the symbolic link LINK (an absolute path in the image) -> TARGET
#   --ld-path DIR         adds DIR (a path in the image) to /etc/ld.so.conf and ld.so.cache
#
# BIN itself is not copied: --add it. The output is reproducible (sorted, owner 0, mtime 0).
# Nothing is printed on stdout.
source "$(dirname "$0")/lib.sh"
exec 3>&1 1>&2

usage() { sed -n '2,/^$/s/^# \{0,1\}//p' "$0" >&2; exit 2; }

[ $# -ge 1 ] || usage
out=$1
shift
init= adds=() libsfor=() links=() ldpaths=()
while [ $# -gt 0 ]; do
    case $1 in
    --init) [ $# -ge 2 ] || usage; init=$2; shift 2 ;;
    --add) [ $# -ge 2 ] || usage; adds+=("$2"); shift 2 ;;
    --add-libs-for) [ $# -ge 2 ] || usage; libsfor+=("$2"); shift 2 ;;
    --symlink) [ $# -ge 2 ] || usage; links+=("$2"); shift 2 ;;
    --ld-path) [ $# -ge 2 ] || usage; ldpaths+=("$2"); shift 2 ;;
    -h | --help) usage ;;
    *) die "unknown argument: $1" ;;
    esac
done
[ -n "$init" ] || die "--init FILE is required"
[ -f "$init" ] || die "no such init: $init"

# busybox-static: the installed one if it is static, else bookworm's package unpacked in the cache.
busybox=/bin/busybox
if ! { [ -x "$busybox" ] && file -L "$busybox" | grep -q 'statically linked'; }; then
    bbdir=$VCUDA_CACHE/busybox-static
    cache_lock busybox
    if [ ! -x "$bbdir/bin/busybox" ]; then
        rm -rf "$bbdir.tmp" && mkdir -p "$bbdir.tmp/deb"
        (cd "$bbdir.tmp/deb" && apt_download busybox-static) || die "cannot download busybox-static"
        dpkg-deb -x "$bbdir.tmp"/deb/busybox-static_*.deb "$bbdir.tmp/root"
        mkdir -p "$bbdir.tmp/bin" && mv "$bbdir.tmp/root/bin/busybox" "$bbdir.tmp/bin/"
        rm -rf "$bbdir.tmp/deb" "$bbdir.tmp/root"
        publish_dir "$bbdir"
    fi
    busybox=$bbdir/bin/busybox
fi
command -v cpio >/dev/null || apt_install cpio

root=$(mktemp -d "${TMPDIR:-/tmp}/vcuda-initramfs.XXXXXX")
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,dev,proc,sys,tmp,run,root,etc,lib,lib64}
chmod 1777 "$root/tmp"
cp "$busybox" "$root/bin/busybox"
for applet in $("$busybox" --list-full); do
    [ -e "$root/$applet" ] || ln -s /bin/busybox "$root/$applet"
done
[ -L "$root/bin/sh" ] || ln -s busybox "$root/bin/sh"
install -m 0755 "$init" "$root/init"
# The kernel opens /dev/console for /init before devtmpfs is mounted.
if [ "$(id -u)" = 0 ]; then
    mknod -m 600 "$root/dev/console" c 5 1
    mknod -m 666 "$root/dev/null" c 1 3
else
    log "warning: not root, /dev/console is not in the image (init has no console until it mounts devtmpfs)"
fi

for a in "${adds[@]}"; do
    src=${a%%:*} dest=${a#*:}
    [ "$src" != "$a" ] && [ -n "$dest" ] || die "--add needs SRC:DEST, got $a"
    [ -e "$src" ] || die "no such file: $src"
    case $dest in
    */) mkdir -p "$root/$dest" ;;
    *) mkdir -p "$root/$(dirname "$dest")" ;;
    esac
    cp -a -L "$src" "$root/$dest"
done

for l in "${links[@]}"; do
    target=${l%%:*} link=${l#*:}
    [ "$target" != "$l" ] && [ -n "$link" ] || die "--symlink needs TARGET:LINK, got $l"
    mkdir -p "$root/$(dirname "$link")"
    ln -sfn "$target" "$root/$link"
done

# Libraries: copy each ldd-resolved path (and the interpreter) to the same path in the image.
std_dirs=" /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu /lib /usr/lib /lib64 /usr/lib64 "
extra_dirs=("${ldpaths[@]}")
for bin in "${libsfor[@]}"; do
    [ -f "$bin" ] || die "no such binary: $bin"
    ldd_out=$(ldd "$bin" 2>&1) || {
        grep -q 'not a dynamic executable' <<<"$ldd_out" && continue
        die "ldd $bin failed: $ldd_out"
    }
    grep -q 'not found' <<<"$ldd_out" && die "unresolved libraries for $bin:"$'\n'"$(grep 'not found' <<<"$ldd_out")"
    for lib in $(awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' <<<"$ldd_out"); do
        [ -e "$root$lib" ] && continue
        mkdir -p "$root$(dirname "$lib")"
        cp -L "$lib" "$root$lib"
        d=$(dirname "$lib")
        case $std_dirs in *" $d "*) ;; *) extra_dirs+=("$d") ;; esac
    done
done
if [ ${#extra_dirs[@]} -gt 0 ]; then
    printf '%s\n' "${extra_dirs[@]}" | sort -u >"$root/etc/ld.so.conf"
    ldconfig -r "$root" 2>/dev/null || log "warning: ldconfig -r failed; set LD_LIBRARY_PATH in the guest"
fi

mkdir -p "$(dirname "$out")"
(cd "$root" && find . -mindepth 1 -exec touch -h -d @0 {} + &&
    find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --reproducible --quiet) | gzip -n >"$out.tmp"
mv "$out.tmp" "$out"
log "wrote $out ($(stat -c %s "$out") bytes)"
