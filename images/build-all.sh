#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# Builds every image piece, stage by stage; with -j the steps of a stage run in parallel.
#
#   images/build-all.sh [-j]
#   eval "$(images/build-all.sh -j)"      # QEMU=, QEMU_FIRMWARE=, KDIR=, BZIMAGE=, KMAKE=, KPATH=, MODULE=
#
# Each step's log goes to $VCUDA_CACHE/logs/<step>.log; the VAR=value lines the steps print are
# collected in $VCUDA_CACHE/images.env and printed on stdout. A step of a later stage sees the
# variables of the earlier ones in its environment.
# With -j every parallel step gets VCUDA_JOBS=1 (unless set), so the whole run uses about two
# cores; without it each step uses VCUDA_JOBS=2.
source "$(dirname "$0")/lib.sh"
exec 3>&1 1>&2

# One line per stage: "step=script ..." (scripts in images/, each printing VAR=value lines).
# The guest initramfs (build-guest.sh) also needs libvcuda.so from cargo: `vcuda vm run` and
# tests/vm/run.sh build it.
STAGES=(
    "kernel=build-kernel.sh qemu=build-qemu.sh"
    "module=build-module.sh"
)

parallel=
case ${1:-} in
-j) parallel=1 ;;
"") ;;
*) die "usage: $0 [-j]" ;;
esac

logs=$VCUDA_CACHE/logs
env_file=$VCUDA_CACHE/images.env
mkdir -p "$logs"
: >"$env_file.tmp"

run_step() {
    local name=$1 script=$2 start=$SECONDS
    if VCUDA_JOBS=${VCUDA_JOBS:-$([ -n "$parallel" ] && echo 1 || echo 2)} \
        "$REPO_ROOT/images/$script" >"$logs/$name.out" 2>"$logs/$name.log"; then
        log "$name: done in $((SECONDS - start)) s (log: $logs/$name.log)"
    else
        log "$name: FAILED after $((SECONDS - start)) s; last lines of $logs/$name.log:"
        tail -n 20 "$logs/$name.log" >&2
        return 1
    fi
}

for stage in "${STAGES[@]}"; do
    pids=() names=()
    for step in $stage; do
        name=${step%%=*} script=${step#*=}
        log "$name: running $script"
        if [ -n "$parallel" ]; then
            run_step "$name" "$script" &
            pids+=($!) names+=("$name")
        else
            run_step "$name" "$script" || die "$name failed"
            names+=("$name")
        fi
    done
    failed=0
    for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
    [ $failed = 0 ] || die "a step failed (logs in $logs)"
    for name in "${names[@]}"; do
        cat "$logs/$name.out" >>"$env_file.tmp"
        set -a
        # shellcheck disable=SC1090
        source "$logs/$name.out"
        set +a
    done
done

mv "$env_file.tmp" "$env_file"
log "results (also in $env_file):"
sed 's/^/  /' "$env_file" >&2
cat "$env_file" >&3
