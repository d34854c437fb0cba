#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# Boots the guest kernel under the patched QEMU (TCG, memfd-backed shared guest memory as the
# vhost-user device will need, but no vcuda device) with a busybox initramfs whose /init
# (images/smoke/init) reports and powers off. Builds QEMU and the kernel first if needed.
# The serial console goes to stderr; stdout gets one line with the timings. Fails if /init did
# not finish within the timeout (SMOKE_TIMEOUT, default 120 s).
source "$(dirname "$0")/lib.sh"

eval "$("$REPO_ROOT/images/build-qemu.sh")"
eval "$("$REPO_ROOT/images/build-kernel.sh")"
work=$VCUDA_CACHE/smoke
mkdir -p "$work"
"$REPO_ROOT/images/build-initramfs.sh" "$work/initramfs.cpio.gz" --init "$REPO_ROOT/images/smoke/init"

fw=()
IFS=: read -r -a dirs <<<"$QEMU_FIRMWARE"
for d in "${dirs[@]}"; do fw+=(-L "$d"); done

log "booting $BZIMAGE"
start=$(date +%s.%N)
seen=
while IFS= read -r line; do
    printf '%s\n' "$line" >&2
    case $line in *"vcuda-smoke: done"*) seen=$(date +%s.%N) ;; esac
done < <(timeout "${SMOKE_TIMEOUT:-120}" "$QEMU" -machine q35,memory-backend=mem -accel tcg -cpu max -smp 2 -m 512M \
    -object memory-backend-memfd,id=mem,size=512M,share=on -nographic -nodefaults -serial stdio -no-reboot \
    "${fw[@]}" -kernel "$BZIMAGE" -initrd "$work/initramfs.cpio.gz" -append "console=ttyS0 panic=-1" \
    </dev/null 2>&1)
end=$(date +%s.%N)
[ -n "$seen" ] || die "the guest did not reach the end of /init"
printf 'smoke-boot: ok, /init done after %.1f s, QEMU exited after %.1f s\n' \
    "$(echo "$seen - $start" | bc)" "$(echo "$end - $start" | bc)"
