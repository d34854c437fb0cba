#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# Caffe through vcuda: builds (or reuses, cached by key) Caffe with images/build-caffe.sh, then
# runs it unchanged through `vcuda run --executor cpu`: `caffe device_query` and LeNet's
# `caffe time` (forward and backward passes, cuBLAS and cuRAND included). Fails if either
# exits non-zero or does not print what it prints on a GPU.
#
#   tests/caffe/run.sh      # builds vcuda (debug) if needed; VCUDA_SKIP_CAFFE=1 skips
set -euo pipefail
cd "$(dirname "$0")/../.."
log() { printf '[caffe] %s\n' "$*" >&2; }
if [ "${VCUDA_SKIP_CAFFE:-0}" = 1 ]; then
    log "skipped (VCUDA_SKIP_CAFFE=1)"
    exit 0
fi
start=$SECONDS
prefix=$(bash images/build-caffe.sh | tail -1)
[ -x "$prefix/bin/caffe" ] || { log "images/build-caffe.sh gave no bin/caffe in '$prefix'"; exit 1; }
log "Caffe: $prefix ($((SECONDS - start)) s)"
target=${CARGO_TARGET_DIR:-$PWD/target}
vcuda=$target/debug/vcuda
[ -x "$vcuda" ] || cargo build -p vcuda-cli -p vcuda-backend -p vcuda-guest >&2
out=$(mktemp -d "${TMPDIR:-/tmp}/vcuda-caffe.XXXXXX")
trap 'rm -rf "$out"' EXIT

# Runs caffe with ARGS through vcuda; its output must contain every PATTERN (grep -E).
check() {
    local name=$1
    shift
    local patterns=()
    while [ "$1" != -- ]; do
        patterns+=("$1")
        shift
    done
    shift
    local t=$SECONDS
    if ! "$vcuda" run --executor cpu -- "$prefix/bin/caffe" "$@" >"$out/$name.log" 2>&1; then
        log "FAIL $name: exit status $? ($((SECONDS - t)) s); last lines:"
        tail -20 "$out/$name.log" >&2
        return 1
    fi
    for p in "${patterns[@]}"; do
        if ! grep -Eq "$p" "$out/$name.log"; then
            log "FAIL $name: no line matching '$p'; output:"
            tail -30 "$out/$name.log" >&2
            return 1
        fi
    done
    log "ok $name ($((SECONDS - t)) s): $(grep -E "${patterns[-1]}" "$out/$name.log" | tail -1 | sed 's/^.*\] //')"
}

check device_query 'Name: +vcuda' 'Major revision number: +9' -- device_query -gpu 0
check lenet_time 'Iteration: 2 forward-backward time' 'Average Forward-Backward: [0-9.]+ ms' -- \
    time -gpu 0 -iterations 2 -model "$prefix/examples/mnist/lenet.prototxt"
log "passed ($((SECONDS - start)) s in all)"
