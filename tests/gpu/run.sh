#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# The GPU harness: builds the CUDA test programs (tests/cuda/*.cu) and the benchmarks
# (tests/gpu/bench/*.cu) with this machine's nvcc, runs each natively (real libcudart and
# GPU) and through vcuda (`vcuda run --executor cuda`), compares their output, then
# benchmarks native against vcuda and writes the ratios to a Markdown file.
#
#   bash tests/gpu/run.sh [options]          (from the repository root)
#
# Needs: target/release/{vcuda,vcuda-backend,libvcuda.so} (built elsewhere and copied, or
# `cargo build --release`), nvcc (PATH, $NVCC, /usr/local/cuda, or --toolkit pypi for the
# PyPI toolkit of images/cuda-toolkit.sh), a GPU for the native runs. hyperfine is used
# when present.
#
# Options:
#   --executor cuda|cpu   backend executor for the vcuda runs (default cuda;
#                         $VCUDA_HARNESS_EXECUTOR). cpu implies --no-native.
#   --no-native           no native runs (no GPU here): programs must pass on their own,
#                         benchmarks report vcuda numbers without ratios.
#   --quick               smaller benchmark sizes (implied by --executor cpu).
#   --no-bench            correctness only.
#   --only REGEX          only programs whose name matches.
#   --toolkit pypi        build with images/cuda-toolkit.sh's nvcc.
#   --cudart static|shared  how the programs link CUDA's runtime (default shared;
#                         static is nvcc's own default: NVIDIA's runtime inside the
#                         program, which then reaches vcuda through vcuda's libcuda.so.1).
#   --results FILE        where to write the Markdown results (default
#                         $OUT/gpu-results.md if $OUT is set, else
#                         tests/gpu/results/gpu-results.md).
#   --runs N              repetitions for whole-program timings (default 10).
#   --keep DIR            keep the built programs and the native runs' output in DIR
#                         (DIR/NAME, DIR/NAME.native), e.g. to run them in a VM afterwards.
#
# Lines a program prints that start with "BENCH " (benchmark results), "TIME" or "TIMING"
# may differ between the native and the vcuda run; every other line must be identical
# ($VCUDA_HARNESS_VOLATILE overrides that pattern, an extended regex).
# Exit status: 0 when every program built and every comparison passed.
set -uo pipefail

cd "$(dirname "$0")/../.." || exit 2
REPO=$PWD

EXECUTOR=${VCUDA_HARNESS_EXECUTOR:-cuda}
NATIVE=auto
QUICK=0
BENCH=1
ONLY=.
TOOLKIT=
RUNS=10
RESULTS=
KEEP=
CUDART=${VCUDA_HARNESS_CUDART:-shared}
VOLATILE=${VCUDA_HARNESS_VOLATILE:-'^(BENCH |TIME|TIMING)'}
BIN=${VCUDA_BIN:-$REPO/target/release}

while [ $# -gt 0 ]; do
    case $1 in
        --executor) EXECUTOR=$2; shift ;;
        --no-native) NATIVE=0 ;;
        --native) NATIVE=1 ;;
        --quick) QUICK=1 ;;
        --no-bench) BENCH=0 ;;
        --only) ONLY=$2; shift ;;
        --toolkit) TOOLKIT=$2; shift ;;
        --results) RESULTS=$2; shift ;;
        --runs) RUNS=$2; shift ;;
        --keep) KEEP=$2; shift ;;
        --cudart) CUDART=$2; shift ;;
        -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
case $EXECUTOR in
    cuda) ;;
    cpu) [ "$NATIVE" = auto ] && NATIVE=0; QUICK=1 ;;
    *) echo "run.sh: --executor must be cuda or cpu" >&2; exit 2 ;;
esac
case $CUDART in
    shared | static) ;;
    *) echo "run.sh: --cudart must be shared or static" >&2; exit 2 ;;
esac

log() { printf '== %s\n' "$*" >&2; }
die() { printf 'run.sh: %s\n' "$*" >&2; exit 2; }

# --- Tools -------------------------------------------------------------------------------

CUDA_LIB=
if [ "$TOOLKIT" = pypi ]; then
    ROOT=$(bash images/cuda-toolkit.sh) || die "cannot install the PyPI CUDA toolkit"
    NVCC=$ROOT/bin/nvcc
    CUDA_LIB=$ROOT/lib
else
    NVCC=${NVCC:-$(command -v nvcc || true)}
    [ -z "$NVCC" ] && [ -x /usr/local/cuda/bin/nvcc ] && NVCC=/usr/local/cuda/bin/nvcc
    [ -n "$NVCC" ] || die "nvcc not found (PATH, \$NVCC, /usr/local/cuda; or --toolkit pypi)"
    for d in "$(dirname "$NVCC")/../lib64" "$(dirname "$NVCC")/../lib"; do
        if [ -e "$d/libcudart.so" ]; then CUDA_LIB=$(cd "$d" && pwd); break; fi
    done
fi
for f in vcuda vcuda-backend libvcuda.so; do
    [ -e "$BIN/$f" ] || die "$BIN/$f missing (cargo build --release, or set VCUDA_BIN)"
done
BIN=$(cd "$BIN" && pwd)  # the programs run in another directory
VCUDA=$BIN/vcuda

if [ "$NATIVE" = auto ]; then
    if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
        NATIVE=1
    else
        NATIVE=0
        log "no GPU found (nvidia-smi): vcuda runs only"
    fi
fi

OUTDIR=${OUT:-$REPO/tests/gpu/results}
[ -n "$RESULTS" ] || RESULTS=$OUTDIR/gpu-results.md
WORK=$(mktemp -d "${TMPDIR:-/tmp}/vcuda-gpu.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/bin" "$WORK/log" "$(dirname "$RESULTS")"

# Device printf comes back to the program (see the CUDA executor's documentation).
export VCUDA_CUDA_CAPTURE_PRINTF=1
# A program's run time bound, seconds.
TIMEOUT=${VCUDA_HARNESS_TIMEOUT:-600}

# Command prefixes: natively (the toolkit's libcudart, not ours) and through vcuda.
NATIVE_CMD=()
[ -n "$CUDA_LIB" ] && NATIVE_CMD=(env "LD_LIBRARY_PATH=$CUDA_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
VCUDA_CMD=("$VCUDA" run --executor "$EXECUTOR" --)

# --- Build -------------------------------------------------------------------------------

log "nvcc: $NVCC ($("$NVCC" --version | tail -1))"
SOURCES=()
for s in tests/cuda/*.cu tests/gpu/bench/*.cu; do
    [ -e "$s" ] || continue
    n=$(basename "$s" .cu)
    [[ $n =~ $ONLY ]] && SOURCES+=("$s")
done
[ ${#SOURCES[@]} -gt 0 ] || die "no programs match '$ONLY'"

# Reads a program's `// vcuda-test: KEY=VALUE` header lines (as tests/src/lib.rs does):
# SPEC_LIBS, SPEC_NVCC, SPEC_ARGS, SPEC_EXPECT, SPEC_ARCH.
spec() {
    SPEC_LIBS=() SPEC_NVCC=() SPEC_ARGS=() SPEC_EXPECT=() SPEC_ARCH=90
    local line kv k v parts
    while IFS= read -r line; do
        [[ $line == //* ]] || break
        [[ $line == "// vcuda-test:"* ]] || continue
        kv=${line#// vcuda-test:}
        kv=${kv#"${kv%%[![:space:]]*}"}
        k=${kv%%=*}
        v=
        [[ $kv == *=* ]] && v=${kv#*=}
        case $k in
            libs) IFS=, read -ra parts <<<"$v"; SPEC_LIBS+=("${parts[@]}") ;;
            nvcc) read -ra parts <<<"$v"; SPEC_NVCC+=("${parts[@]}") ;;
            args) read -ra parts <<<"$v"; SPEC_ARGS+=("${parts[@]}") ;;
            expect) SPEC_EXPECT+=("$v") ;;
            arch) SPEC_ARCH=${v//[[:space:]]/} ;;
        esac
    done <"$1"
}

build_one() {
    local src=$1 name
    name=$(basename "$src" .cu)
    spec "$src"
    "$NVCC" -cudart="$CUDART" -O2 -std=c++17 \
        -gencode "arch=compute_$SPEC_ARCH,code=[sm_$SPEC_ARCH,compute_$SPEC_ARCH]" \
        -Itests/cuda -Itests/gpu/bench ${CUDA_LIB:+-L"$CUDA_LIB"} "${SPEC_NVCC[@]}" \
        -o "$WORK/bin/$name" "$src" "${SPEC_LIBS[@]/#/-l}" >"$WORK/log/$name.build" 2>&1
}

JOBS=$(nproc 2>/dev/null || echo 2)
log "building ${#SOURCES[@]} programs ($JOBS at a time)"
declare -A BUILT=()
running=0
for s in "${SOURCES[@]}"; do
    build_one "$s" &
    running=$((running + 1))
    if [ $running -ge "$JOBS" ]; then wait -n; running=$((running - 1)); fi
done
wait
for s in "${SOURCES[@]}"; do
    n=$(basename "$s" .cu)
    if [ -x "$WORK/bin/$n" ]; then
        BUILT[$n]=1
    else
        log "BUILD FAILED: $n"
        sed 's/^/    /' "$WORK/log/$n.build" >&2
    fi
done

# --- Correctness ---------------------------------------------------------------------------

# Runs a program, output (stdout + stderr) to $2, exit status to $2.rc.
run_to() {
    local out=$1
    shift
    (cd "$WORK/bin" && timeout "$TIMEOUT" "$@") >"$out" 2>&1
    echo $? >"$out.rc"
}

# Output without the lines allowed to differ.
stable() { grep -Ev "$VOLATILE" "$1" || true; }

FAILS=0
RESULT_ROWS=()
BENCH_ARGS=()
[ "$QUICK" = 1 ] && BENCH_ARGS=(--quick)
for s in "${SOURCES[@]}"; do
    n=$(basename "$s" .cu)
    if [ -z "${BUILT[$n]:-}" ]; then
        RESULT_ROWS+=("| $n | build failed | |")
        FAILS=$((FAILS + 1))
        continue
    fi
    # Benchmarks are checked in the benchmark phase (they would run twice otherwise).
    if [[ $s == tests/gpu/bench/* ]] && [ "$BENCH" = 1 ]; then continue; fi
    spec "$s"
    args=("${SPEC_ARGS[@]}")
    [[ $s == tests/gpu/bench/* ]] && args+=("${BENCH_ARGS[@]}")
    run_to "$WORK/log/$n.vcuda" "${VCUDA_CMD[@]}" "./$n" "${args[@]}"
    vrc=$(cat "$WORK/log/$n.vcuda.rc")
    verdict=pass
    detail=
    if [ "$NATIVE" = 1 ]; then
        run_to "$WORK/log/$n.native" "${NATIVE_CMD[@]}" "./$n" "${args[@]}"
        nrc=$(cat "$WORK/log/$n.native.rc")
        if [ "$nrc" != "$vrc" ]; then
            verdict=FAIL
            detail="exit $nrc native, $vrc vcuda"
        elif ! diff <(stable "$WORK/log/$n.native") <(stable "$WORK/log/$n.vcuda") \
            >"$WORK/log/$n.diff"; then
            verdict=FAIL
            detail="output differs"
        elif [ "$nrc" != 0 ]; then
            verdict=FAIL
            detail="exit $nrc in both"
        fi
    elif [ "$vrc" != 0 ]; then
        verdict=FAIL
        detail="exit $vrc"
    fi
    for e in "${SPEC_EXPECT[@]}"; do
        if [ $verdict = pass ] && ! grep -qF -- "$e" "$WORK/log/$n.vcuda"; then
            verdict=FAIL
            detail="no line '$e'"
        fi
    done
    if [ $verdict = pass ]; then
        log "ok    $n"
    else
        FAILS=$((FAILS + 1))
        log "FAIL  $n: $detail"
        [ -s "$WORK/log/$n.diff" ] && sed 's/^/    /' "$WORK/log/$n.diff" | head -40 >&2
        [ -s "$WORK/log/$n.diff" ] || tail -20 "$WORK/log/$n.vcuda" | sed 's/^/    /' >&2
    fi
    RESULT_ROWS+=("| $n | $verdict | $detail |")
done

# --- Benchmarks ----------------------------------------------------------------------------

# "name value unit" lines from BENCH lines.
bench_lines() { awk '$1 == "BENCH" { print $2, $3, $4 }' "$1"; }

# Wall time of a whole program run, median of $RUNS, in ms (hyperfine when present).
wall_ms() {
    local label=$1
    shift
    if command -v hyperfine >/dev/null; then
        (cd "$WORK/bin" && hyperfine --style none --warmup 1 --runs "$RUNS" \
            --export-json "$WORK/log/$label.json" -- "$(printf '%q ' "$@")") >/dev/null 2>&1 &&
            python3 - "$WORK/log/$label.json" <<'EOF' && return
import json, sys
print("%.3f" % (json.load(open(sys.argv[1]))["results"][0]["median"] * 1e3))
EOF
    fi
    local times=() i t0 t1
    for ((i = 0; i <= RUNS; i++)); do
        t0=$(date +%s%N)
        (cd "$WORK/bin" && "$@") >/dev/null 2>&1
        t1=$(date +%s%N)
        [ $i -gt 0 ] && times+=($(((t1 - t0) / 1000)))
    done
    printf '%s\n' "${times[@]}" | sort -n | awk '{ a[NR] = $1 } END {
        m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2; printf "%.3f\n", m / 1000 }'
}

BENCH_ROWS=()
add_row() { # name unit native vcuda
    local ratio=n/a
    if [ "$3" != - ] && [ "$4" != - ]; then
        ratio=$(awk -v n="$3" -v v="$4" 'BEGIN { if (n > 0) printf "%.3f", v / n; else print "n/a" }')
    fi
    BENCH_ROWS+=("| $1 | $2 | $3 | $4 | $ratio |")
    printf '   %-40s %12s %12s %8s  %s\n' "$1" "$3" "$4" "$ratio" "$2" >&2
}

if [ "$BENCH" = 1 ]; then
    log "benchmarks (native, vcuda --executor $EXECUTOR, vcuda/native)"
    for s in "${SOURCES[@]}"; do
        [[ $s == tests/gpu/bench/* ]] || continue
        n=$(basename "$s" .cu)
        [ -n "${BUILT[$n]:-}" ] || continue
        run_to "$WORK/log/$n.vcuda" "${VCUDA_CMD[@]}" "./$n" "${BENCH_ARGS[@]}"
        if [ "$(cat "$WORK/log/$n.vcuda.rc")" != 0 ]; then
            log "FAIL  $n through vcuda"
            tail -20 "$WORK/log/$n.vcuda" | sed 's/^/    /' >&2
            FAILS=$((FAILS + 1))
            RESULT_ROWS+=("| $n | FAIL | exit $(cat "$WORK/log/$n.vcuda.rc") through vcuda |")
            continue
        fi
        : >"$WORK/log/$n.native"
        if [ "$NATIVE" = 1 ]; then
            run_to "$WORK/log/$n.native" "${NATIVE_CMD[@]}" "./$n" "${BENCH_ARGS[@]}"
            if ! diff <(stable "$WORK/log/$n.native") <(stable "$WORK/log/$n.vcuda") \
                >"$WORK/log/$n.diff"; then
                log "FAIL  $n: output differs"
                sed 's/^/    /' "$WORK/log/$n.diff" | head -20 >&2
                FAILS=$((FAILS + 1))
                RESULT_ROWS+=("| $n | FAIL | output differs |")
                continue
            fi
        fi
        RESULT_ROWS+=("| $n | pass | |")
        while read -r name value unit; do
            nv=$(bench_lines "$WORK/log/$n.native" | awk -v k="$name" '$1 == k { print $2 }')
            add_row "$name" "$unit" "${nv:--}" "$value"
        done < <(bench_lines "$WORK/log/$n.vcuda")
    done
    # Whole programs, start-up included.
    for n in vectorAdd vecadd; do
        [ -n "${BUILT[$n]:-}" ] || continue
        args=()
        [ $n = vecadd ] && args=("${BENCH_ARGS[@]}")
        v=$(wall_ms "$n-vcuda" "${VCUDA_CMD[@]}" "./$n" "${args[@]}")
        nv=-
        [ "$NATIVE" = 1 ] && nv=$(wall_ms "$n-native" "${NATIVE_CMD[@]}" "./$n" "${args[@]}")
        add_row "wall_${n}_program" ms "$nv" "$v"
    done
fi

# --- Results -------------------------------------------------------------------------------

{
    echo "# vcuda GPU harness results"
    echo
    echo "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "- commit: $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "- runtime: -cudart=$CUDART"
    echo "- executor: $EXECUTOR; native runs: $([ "$NATIVE" = 1 ] && echo yes || echo no)$([ "$QUICK" = 1 ] && echo '; quick sizes')"
    echo "- nvcc: $("$NVCC" --version | tail -1)"
    if command -v nvidia-smi >/dev/null; then
        echo "- GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)"
    fi
    echo "- host: $(uname -srm), $(nproc) CPUs"
    echo
    echo "## Correctness"
    echo
    echo "| program | result | detail |"
    echo "|---|---|---|"
    printf '%s\n' "${RESULT_ROWS[@]}"
    if [ "$BENCH" = 1 ]; then
        echo
        echo "## Benchmarks"
        echo
        echo "ratio = vcuda / native: for GB/s and launches/s the fraction of native throughput"
        echo "(higher is better), for us and ms the slowdown (lower is better)."
        echo
        echo "| benchmark | unit | native | vcuda | ratio |"
        echo "|---|---|---|---|---|"
        printf '%s\n' "${BENCH_ROWS[@]}"
    fi
} >"$RESULTS"
rm -rf "$(dirname "$RESULTS")/logs" && cp -r "$WORK/log" "$(dirname "$RESULTS")/logs"
if [ -n "$KEEP" ]; then
    mkdir -p "$KEEP" && cp -p "$WORK"/bin/* "$KEEP"/ &&
        for f in "$WORK"/log/*.native; do [ -e "$f" ] && cp -p "$f" "$KEEP"/; done
fi
log "results: $RESULTS"
if [ $FAILS -gt 0 ]; then
    log "$FAILS failure(s)"
    exit 1
fi
log "all passed"
