#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# The libvirt domains of deploy/libvirt/, run on the QEMU command lines libvirt itself yields
# for them (tests/vm/libvirt_domain.py, through `virsh domxml-to-native` with libvirt's
# embedded QEMU driver: no daemon):
# - vcuda-domain-direct.xml boots the guest `vcuda vm image` wrote for PROGRAM, which runs
#   through vcuda's device on a CPU-executor backend and must print PASS and exit 0;
# - vcuda-domain.xml (a disk image's domain) must start on that line with the device on its
#   PCI bus (no disk to boot: its disk is an empty file, and its network interface goes).
#
#   tests/vm/libvirt.sh BIN_DIR PROGRAM WORK     # BIN_DIR: vcuda and vcuda-backend
#
# Needs VCUDA_IMAGE_DIR (tests/vm/run.sh sets it). Installs Debian bookworm's
# libvirt-clients and libvirt-daemon-driver-qemu (six small packages) when missing.
set -euo pipefail
cd "$(dirname "$0")/../.."
source images/lib.sh
bin=$1 program=$2 work=$3
: "${VCUDA_IMAGE_DIR:?VCUDA_IMAGE_DIR must name the guest image}"

apt_install libvirt-clients libvirt-daemon-driver-qemu
qemu=$(sed -n 's/^QEMU=//p' "$VCUDA_IMAGE_DIR/image.env")
firmware=$(sed -n 's/^QEMU_FIRMWARE=//p' "$VCUDA_IMAGE_DIR/image.env")
[ -x "$qemu" ] || die "no QEMU in $VCUDA_IMAGE_DIR/image.env"

pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT
# Starts a vhost-user backend (CPU executor, two request queues as the domains say) on $1.
backend() {
    "$bin/vcuda-backend" vhost-user --socket "$1" --executor cpu --queues 2 >"$1.log" 2>&1 &
    pids+=($!)
    local i
    for i in $(seq 200); do
        [ -S "$1" ] && return 0
        sleep 0.05
    done
    die "the backend did not listen on $1: $(cat "$1.log")"
}

d=$work/direct
mkdir -p "$d"
"$bin/vcuda" vm image --out "$d/guest" -- "$program" >"$d/image.out"
backend "$d/vcuda.sock"
rc=0
python3 tests/vm/libvirt_domain.py --domain deploy/libvirt/vcuda-domain-direct.xml \
    --qemu "$qemu" --firmware "$firmware" --socket "$d/vcuda.sock" --work "$d" \
    --kernel "$d/guest/bzImage" --initrd "$d/guest/initrd" --console "$d/console.log" \
    --timeout "${VCUDA_VM_TIMEOUT:-300}" >"$d/run.out" 2>&1 || rc=$?
if [ $rc -ne 0 ] || ! tr -d '\r' <"$d/console.log" | grep -qx PASS ||
    ! grep -q 'VCUDA-GUEST: exit-status=0' "$d/console.log"; then
    log "the direct domain failed (exit status $rc):"
    tail -n 20 "$d/run.out" "$d/console.log" "$d/vcuda.sock.log" >&2 || true
    exit 1
fi
log "direct domain: $(grep -c . "$d/console.log") console lines, PASS, exit-status=0"

k=$work/disk
mkdir -p "$k"
backend "$k/vcuda.sock"
rc=0
python3 tests/vm/libvirt_domain.py --domain deploy/libvirt/vcuda-domain.xml --disk --probe \
    --qemu "$qemu" --firmware "$firmware" --socket "$k/vcuda.sock" --work "$k" \
    --timeout 120 >"$k/run.out" 2>&1 || rc=$?
if [ $rc -ne 0 ]; then
    log "the disk domain failed (exit status $rc):"
    tail -n 20 "$k/run.out" "$k/vcuda.sock.log" >&2 || true
    exit 1
fi
log "disk domain: $(tail -n 1 "$k/run.out")"
