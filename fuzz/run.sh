#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# A short fuzz run of every target, as CI does it:
#
#   bash fuzz/run.sh [SECONDS_PER_TARGET]     (default 20)
#
# Builds the cargo-fuzz targets of fuzz/ with libFuzzer's coverage instrumentation on the
# stable toolchain (the flags cargo-fuzz passes, without a sanitizer, which needs nightly;
# debug assertions and overflow checks on), then runs each for SECONDS over its corpus in
# fuzz/corpus/<target>/ (kept in the repository) and its seeds. Inputs found on the way go
# to a private temporary directory, not into the repository. A crash, panic, timeout or
# out-of-memory fails the run, printing the input that caused it and the command that
# reproduces it. `cargo +nightly fuzz run TARGET` works as well, for longer runs with
# AddressSanitizer.
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-20}
triple=$(rustc -vV | sed -n 's/^host: //p')
export CARGO_TARGET_DIR=${VCUDA_FUZZ_TARGET_DIR:-$PWD/../target/fuzz}
flags=(
    --cfg fuzzing
    -Cpasses=sancov-module
    -Cllvm-args=-sanitizer-coverage-level=4
    -Cllvm-args=-sanitizer-coverage-inline-8bit-counters
    -Cllvm-args=-sanitizer-coverage-pc-table
    -Cllvm-args=-sanitizer-coverage-trace-compares
    -Cdebug-assertions
    -Coverflow-checks
)
# --target keeps the instrumentation out of build scripts and proc macros.
RUSTFLAGS="${flags[*]}" cargo build --release --locked --bins --target "$triple"
bin=$CARGO_TARGET_DIR/$triple/release
work=$(mktemp -d "${TMPDIR:-/tmp}/vcuda-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Extra read-only seed directories per target.
seeds() {
    case $1 in
    fatbin) echo ../fatbin/tests/data ;;
    vhost_queue) echo seeds/vhost_queue ;;
    esac
}

status=0
for t in fatbin protocol session vhost_queue call_ring device_state precopy; do
    mkdir -p "$work/$t" "$work/crashes"
    # shellcheck disable=SC2046 # seeds prints zero or one directory
    if ! "$bin/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$work/crashes/$t-" \
        "$work/$t" "corpus/$t" $(seeds "$t") >"$work/$t.log" 2>&1; then
        status=1
        tail -40 "$work/$t.log"
        for a in "$work/crashes/$t-"*; do
            [ -e "$a" ] || continue
            keep=$CARGO_TARGET_DIR/crashes
            mkdir -p "$keep"
            cp "$a" "$keep/"
            echo "FAIL: $t: input saved as $keep/$(basename "$a") (base64 below)"
            base64 -w 76 "$a" | head -40
            echo "reproduce: $bin/$t $keep/$(basename "$a")"
        done
        continue
    fi
    runs=$(sed -n 's/.*stat::number_of_executed_units: *//p' "$work/$t.log" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$work/$t.log" | tail -1)
    echo "fuzz $t: ${runs:-?} inputs in ${secs}s, $cov, no failure"
done
exit $status
