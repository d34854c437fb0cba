#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# Installs vcuda on this host as a system service:
#   binaries    PREFIX/bin/vcuda, PREFIX/bin/vcuda-backend
#   library     PREFIX/lib/vcuda/libvcuda.so (and its soname links, made by `vcuda lib-dir`)
#   systemd     /etc/systemd/system/vcuda-backend.{socket,service}, vcuda-vhost@.service,
#               and with --executor cpu the drop-ins that run the CPU executor without devices
#   users       /etc/sysusers.d/vcuda.conf (user and group vcuda),
#               /etc/tmpfiles.d/vcuda.conf (/run/vcuda, /run/vcuda/vm)
# then creates the user and directories, and enables and starts vcuda-backend.socket.
#
#   sudo deploy/install.sh [--executor auto|cuda|cpu] [--prefix /usr/local]
#                          [--bin-dir target/release] [--root DIR] [--no-start]
#
# --root DIR stages everything under DIR and starts nothing (packaging, and the check in
# deploy/check.sh). Users of the backend join group vcuda and set
# VCUDA_SOCKET=/run/vcuda/vcuda.sock.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
prefix=/usr/local
bin_dir=$repo/target/release
root=
executor=auto
start=1
while [ $# -gt 0 ]; do
    case $1 in
        --prefix) prefix=$2; shift 2 ;;
        --bin-dir) bin_dir=$2; shift 2 ;;
        --root) root=$2; start=0; shift 2 ;;
        --executor) executor=$2; shift 2 ;;
        --no-start) start=0; shift ;;
        -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "install.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
case $executor in auto|cuda|cpu) ;; *) echo "install.sh: --executor auto, cuda or cpu" >&2; exit 2 ;; esac
case $prefix in /*) ;; *) echo "install.sh: --prefix must be absolute" >&2; exit 2 ;; esac
for f in vcuda vcuda-backend libvcuda.so; do
    if [ ! -f "$bin_dir/$f" ]; then
        echo "install.sh: $bin_dir/$f missing; build first: cargo build --release" >&2
        exit 1
    fi
done
if [ -z "$root" ] && [ "$(id -u)" != 0 ]; then
    echo "install.sh: run as root (or stage with --root DIR)" >&2
    exit 1
fi

dest=${root%/}
install -d "$dest$prefix/bin" "$dest$prefix/lib/vcuda" "$dest/etc/systemd/system" \
    "$dest/etc/sysusers.d" "$dest/etc/tmpfiles.d"
install -m 0755 "$bin_dir/vcuda" "$bin_dir/vcuda-backend" "$dest$prefix/bin/"
install -m 0644 "$bin_dir/libvcuda.so" "$dest$prefix/lib/vcuda/"
for u in vcuda-backend.socket vcuda-backend.service vcuda-vhost@.service; do
    sed "s|/usr/local/bin/|$prefix/bin/|g; s|^Environment=VCUDA_EXECUTOR=auto|Environment=VCUDA_EXECUTOR=$executor|" \
        "$here/systemd/$u" >"$dest/etc/systemd/system/$u"
    chmod 0644 "$dest/etc/systemd/system/$u"
done
for u in vcuda-backend.service vcuda-vhost@.service; do
    if [ "$executor" = cpu ]; then
        install -d "$dest/etc/systemd/system/$u.d"
        install -m 0644 "$here/systemd/cpu-executor.conf" "$dest/etc/systemd/system/$u.d/"
    else
        rm -f "$dest/etc/systemd/system/$u.d/cpu-executor.conf"
    fi
done
install -m 0644 "$here/systemd/sysusers.conf" "$dest/etc/sysusers.d/vcuda.conf"
install -m 0644 "$here/systemd/tmpfiles.conf" "$dest/etc/tmpfiles.d/vcuda.conf"
echo "installed under ${root:-/} (prefix $prefix, executor $executor)"

if [ "$start" = 1 ]; then
    systemd-sysusers /etc/sysusers.d/vcuda.conf
    systemd-tmpfiles --create /etc/tmpfiles.d/vcuda.conf
    # The soname links (libcudart.so.13, libcublas.so.13, ...) beside libvcuda.so.
    "$prefix/bin/vcuda" lib-dir >/dev/null
    systemctl daemon-reload
    systemctl enable --now vcuda-backend.socket
    echo "vcuda-backend.socket is listening on /run/vcuda/vcuda.sock; add users to group vcuda"
fi
