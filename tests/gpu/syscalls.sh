#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# The system calls NVIDIA's driver makes in vcuda's worker processes, for an allow-list
# seccomp filter in place of sandbox.rs's deny list (issue 38; tests/gpu/README.md, "Tenant
# isolation", step 1). On a lent GPU machine, with a kit (tests/gpu/kit.sh, which carries
# Debian's strace in tools/):
#
#   bash tests/gpu/syscalls.sh KIT PROGRAMS_DIR [PROGRAM...]
#
# starts a shared backend (`vcuda-backend serve --executor cuda`, sessions in worker
# processes, each sandboxed before its driver starts) under `strace -f`, runs the programs
# (built, in PROGRAMS_DIR) against it one after another, stops it, then (with the kit's
# guest image) runs two kit programs in `vcuda vm run`, whose vhost-user backend and its
# workers are traced the same way, and leaves in $OUT:
# syscalls.POLICY.trace.gz (every call of every process and thread; `scripts/syscall-sets.py`
# turns it into the set per process kind) and syscalls.POLICY.log.
set -u
# (VCUDA_CHECK_EXECUTOR=cpu: a dry run without a GPU. VCUDA_SYSCALLS_POLICY: the workers'
# --worker-seccomp, default deny-list, so that the trace shows every call the driver makes;
# allow-list checks the allow list, whose refusals show as EPERM.)
cd "$(dirname "$0")/../.." || exit 2
K=$(cd "${1:?kit}" && pwd) || exit 2
P=$(cd "${2:?programs}" && pwd) || exit 2
shift 2
OUT=${OUT:-$PWD/tests/gpu/results}
mkdir -p "$OUT"
STRACE=$K/tools/strace
[ -x "$STRACE" ] || { echo "syscalls.sh: no $STRACE (kit.sh packs it)" >&2; exit 2; }
POLICY=${VCUDA_SYSCALLS_POLICY:-deny-list}
W=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$W"' EXIT
LIB=$("$K/bin/vcuda" lib-dir)
exec >"$OUT/syscalls.$POLICY.log" 2>&1

# strace's own libraries (libunwind) only for strace: the backend gets the caller's.
env LD_LIBRARY_PATH="$K/tools/lib" "$STRACE" -f -qq -s 96 -o "$W/trace" \
    -E "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}" \
    "$K/bin/vcuda-backend" serve --executor "${VCUDA_CHECK_EXECUTOR:-cuda}" --isolation process \
    --worker-seccomp "$POLICY" --socket "$W/gpu.sock" 2>"$W/backend.log" &
TRACER=$!
for _ in $(seq 300); do [ -S "$W/gpu.sock" ] && break; sleep 0.1; done
[ -S "$W/gpu.sock" ] || { echo "the backend did not start"; cat "$W/backend.log"; exit 1; }
for n in "$@"; do
    [ -x "$P/$n" ] || continue
    t=$(date +%s%N)
    (cd "$P" && VCUDA_SOCKET=$W/gpu.sock LD_LIBRARY_PATH=$LIB timeout 60 "./$n") \
        >"$W/$n.out" 2>&1
    echo "$n: exit $?, $((($(date +%s%N) - t) / 1000000)) ms"
done
# strace -o blocks fatal signals: the backend itself is stopped, and strace exits once
# every tracee has.
kill -TERM $(pgrep -P "$TRACER") 2>/dev/null
for _ in $(seq 100); do kill -0 "$TRACER" 2>/dev/null || break; sleep 0.1; done
kill -KILL "$TRACER" 2>/dev/null
wait "$TRACER" 2>/dev/null
echo "trace: $(wc -l <"$W/trace") lines"
tail -5 "$W/backend.log"

# The vhost-user transport: with the kit's guest image, kit programs (VM_PROGRAMS, default
# vectorAdd and graphs) in `vcuda vm run`, its backend traced too. The wrapper passes
# vcuda vm run's SIGTERM on to the backend (strace -o blocks it).
if [ -f "$K/vm/image.env" ]; then
    cat >"$W/backend" <<WRAPPER
#!/bin/sh
env LD_LIBRARY_PATH="$K/tools/lib" "$STRACE" -f -qq -s 96 -o "$W/vm.trace.\$\$" \\
    -E "LD_LIBRARY_PATH=\${LD_LIBRARY_PATH:-}" "$K/bin/vcuda-backend" "\$@" \\
    --isolation process --worker-seccomp "$POLICY" &
t=\$!
trap 'kill -TERM \$(pgrep -P \$t) 2>/dev/null' TERM INT
while kill -0 \$t 2>/dev/null; do wait \$t; done
WRAPPER
    chmod +x "$W/backend"
    for n in ${VM_PROGRAMS:-vectorAdd graphs}; do
        [ -x "$K/progs/$n" ] || continue
        t=$(date +%s%N)
        (cd "$K/progs" && VCUDA_BACKEND=$W/backend timeout 120 "$K/bin/vcuda" vm run \
            --executor "${VCUDA_CHECK_EXECUTOR:-cuda}" --timeout 100 --image-dir "$K/vm" \
            "./$n") >"$W/$n.vm.out" 2>&1
        echo "$n in the VM: exit $?, $((($(date +%s%N) - t) / 1000000)) ms"
        tail -2 "$W/$n.vm.out"
    done
    cat "$W"/vm.trace.* >>"$W/trace" 2>/dev/null
    echo "with the VMs' backends: $(wc -l <"$W/trace") lines"
fi
gzip -c "$W/trace" >"$OUT/syscalls.$POLICY.trace.gz"
