#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# Smoke test of the vhost-user transport with the real, patched QEMU (issue 4): starts
# `vcuda-backend vhost-user`, starts QEMU (q35, TCG, memfd shared memory) with
# `-device vhost-user-cuda-pci`, and checks that the two negotiate.
#
#   tests/vm/qemu-smoke.sh [--no-guest]
#
# Without a guest kernel (--no-guest, or none cached) QEMU runs firmware only: the check is the
# start-up handshake (the backend answers GET_FEATURES and GET_PROTOCOL_FEATURES, QEMU shows the
# backend's features as the device's host features, the device is in `info pci` and
# `info qtree`, QEMU is still up after a few seconds). With the guest kernel (images/build-kernel.sh, used when cached; BZIMAGE=
# overrides) and tests/vm/smoke-init: the guest must see the PCI device; with a vcuda.ko
# (VCUDA_MODULE=, else the newest $VCUDA_CACHE/module-*/vcuda.ko) the driver binds, QEMU starts
# the device (the backend sees the memory table) and two open/close pairs of /dev/vcuda make
# OpenSession/CloseSession round trips. Exits non-zero on any failure; kills what it started.
# Environment: SMOKE_TIMEOUT (default 120 s), SMOKE_KEEP=1 (keep the logs), CARGO_TARGET_DIR, VCUDA_BACKEND (a built binary).
source "$(dirname "$0")/../../images/lib.sh"

guest=auto
case ${1:-} in
--no-guest) guest=no ;;
"") ;;
*) die "usage: $0 [--no-guest]" ;;
esac

eval "$("$REPO_ROOT/images/build-qemu.sh")"
if [ -z "${VCUDA_BACKEND:-}" ]; then
    log "building vcuda-backend"
    (cd "$REPO_ROOT" && cargo build -q -p vcuda-backend --bin vcuda-backend >&2)
    VCUDA_BACKEND=${CARGO_TARGET_DIR:-$REPO_ROOT/target}/debug/vcuda-backend
fi
[ -x "$VCUDA_BACKEND" ] || die "no backend binary at $VCUDA_BACKEND"

bzimage=${BZIMAGE:-}
if [ "$guest" = auto ] && [ -z "$bzimage" ]; then
    bzimage=$(ls -t "$VCUDA_CACHE"/kernel-*/arch/x86/boot/bzImage 2>/dev/null | head -n 1 || true)
fi
[ "$guest" = no ] && bzimage=
module=${VCUDA_MODULE:-$(ls -t "$VCUDA_CACHE"/module-*/vcuda.ko 2>/dev/null | head -n 1 || true)}

work=$(mktemp -d)
backend_pid= qemu_pid=
cleanup() {
    local rc=$?
    if [ -n "$qemu_pid" ]; then kill "$qemu_pid" 2>/dev/null || true; wait "$qemu_pid" 2>/dev/null || true; fi
    if [ -n "$backend_pid" ]; then kill "$backend_pid" 2>/dev/null || true; wait "$backend_pid" 2>/dev/null || true; fi
    if [ -n "${SMOKE_KEEP:-}" ]; then log "logs kept in $work"; else rm -rf "$work"; fi
    exit "$rc"
}
trap cleanup EXIT
fail() {
    log "FAILED: $*"
    log "--- backend log"; sed 's/^/  /' "$work/backend.log" >&2 || true
    log "--- guest console"; sed 's/^/  /' "$work/console.log" >&2 || true
    log "--- qemu"; sed 's/^/  /' "$work/qemu.log" >&2 || true
    exit 1
}
# Waits up to $2 seconds for a line matching $1 in file $3.
wait_for() {
    local n=0
    while ! grep -q -- "$1" "$3" 2>/dev/null; do
        n=$((n + 1))
        [ $n -le $(($2 * 10)) ] || return 1
        sleep 0.1
    done
}

sock=$work/vcuda.sock
RUST_LOG=${RUST_LOG:-info,vcuda_backend::vhost_user=debug} "$VCUDA_BACKEND" vhost-user \
    --socket "$sock" --queues 2 --executor cpu --cpu-memory-mib 256 >"$work/backend.log" 2>&1 &
backend_pid=$!
wait_for "vhost-user backend listening" 10 "$work/backend.log" || fail "the backend did not start"

fw=()
IFS=: read -r -a dirs <<<"$QEMU_FIRMWARE"
for d in "${dirs[@]}"; do fw+=(-L "$d"); done
boot=()
if [ -n "$bzimage" ]; then
    adds=()
    [ -n "$module" ] && adds=(--add "$module:/vcuda.ko")
    "$REPO_ROOT/images/build-initramfs.sh" "$work/initramfs.cpio.gz" \
        --init "$REPO_ROOT/tests/vm/smoke-init" "${adds[@]}"
    boot=(-kernel "$bzimage" -initrd "$work/initramfs.cpio.gz" -append "console=ttyS0 panic=-1")
    log "guest: $bzimage, module: ${module:-none}"
else
    log "no guest kernel: firmware only"
fi
"$QEMU" -machine q35,memory-backend=mem -accel tcg -cpu max -smp 2 -m 512M \
    -object memory-backend-memfd,id=mem,size=512M,share=on \
    -chardev socket,id=c0,path="$sock" -device vhost-user-cuda-pci,chardev=c0,num-request-queues=2 \
    -display none -nodefaults -serial file:"$work/console.log" -no-reboot \
    -monitor unix:"$work/monitor",server,nowait "${fw[@]}" "${boot[@]}" \
    </dev/null >"$work/qemu.log" 2>&1 &
qemu_pid=$!

# The start-up handshake at realize: GET_FEATURES, GET_PROTOCOL_FEATURES, SET_PROTOCOL_FEATURES,
# GET_QUEUE_NUM, SET_OWNER, ... (SET_FEATURES and the rings come when the driver sets DRIVER_OK).
wait_for "vhost-user frontend connected" 20 "$work/backend.log" || fail "QEMU did not connect"
wait_for "GET_PROTOCOL_FEATURES" 20 "$work/backend.log" || fail "no protocol feature negotiation"
monitor() {
    python3 - "$work/monitor" "$1" <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.settimeout(5)
s.sendall((sys.argv[2] + "\n").encode())
out, end = b"", time.time() + 5
while time.time() < end:
    try:
        b = s.recv(65536)
    except socket.timeout:
        break
    if not b:
        break
    out += b
    if out.count(b"(qemu)") >= 2:
        break
print(out.decode(errors="replace"))
PY
}
monitor "info pci" >"$work/pci.txt" || fail "no monitor"
grep -qi "1af4:1079" "$work/pci.txt" || fail "the device is not in info pci: $(cat "$work/pci.txt")"
# QEMU took the backend's feature offer (GET_FEATURES) as the device's host features.
monitor "info virtio-status /machine/peripheral-anon/device[0]/virtio-backend" >"$work/status.txt"
for f in VIRTIO_F_VERSION_1 VIRTIO_RING_F_EVENT_IDX VIRTIO_RING_F_INDIRECT_DESC; do
    grep -q "$f" "$work/status.txt" || fail "host features lack $f: $(cat "$work/status.txt")"
done
grep -q "num_vqs: *2" "$work/status.txt" || fail "not 2 queues: $(cat "$work/status.txt")"
log "handshake done; device 1af4:1079 present with the backend's features"

if [ -z "$bzimage" ]; then
    sleep 3
    kill -0 "$qemu_pid" 2>/dev/null || fail "QEMU exited"
    monitor "info qtree" | grep -q vhost-user-cuda || fail "no vhost-user-cuda in info qtree"
    grep -q "panicked\|ERROR" "$work/backend.log" && fail "backend errors"
    log "ok: QEMU and the backend negotiated (no guest)"
    exit 0
fi

wait_for "SMOKE: done" "${SMOKE_TIMEOUT:-120}" "$work/console.log" || fail "the guest did not finish"
grep -q "SMOKE: pci-device=yes" "$work/console.log" || fail "the guest does not see the device"
if [ -n "$module" ]; then
    grep -q "SMOKE: driver=bound" "$work/console.log" || fail "the driver did not bind"
    wait_for "virtio features acked" 5 "$work/backend.log" || fail "no SET_FEATURES after DRIVER_OK"
    wait_for "guest memory:" 5 "$work/backend.log" || fail "no memory table after DRIVER_OK"
    [ "$(grep -c "SMOKE: open-close=ok" "$work/console.log")" = 2 ] || fail "open/close of /dev/vcuda failed"
    [ "$(grep -c "session .* opened" "$work/backend.log")" = 2 ] || fail "the backend did not open 2 sessions"
    wait_for "session .* closed" 5 "$work/backend.log" || fail "the backend did not close the sessions"
fi
wait "$qemu_pid" 2>/dev/null || true
qemu_pid=
grep -q "panicked" "$work/backend.log" && fail "the backend panicked"
kill -0 "$backend_pid" 2>/dev/null || fail "the backend died"
log "ok: guest $(grep -o 'driver=[a-z-]*' "$work/console.log"), $(grep -c 'session .* opened' "$work/backend.log") sessions opened and closed"
