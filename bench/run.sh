#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# The benchmark harness: times commands natively (where a GPU exists) and through vcuda,
# with hyperfine, and writes a Markdown table of medians and ratios.
#
#   bash bench/run.sh [options] --suite NAME        a built-in suite
#   bash bench/run.sh [options] -- CMD [ARGS...]    any program (e.g. a Rodinia build)
#
# Options:
#   --transport LIST   socket, vm or both, comma-separated (default socket)
#   --executor E       the backend's executor: cpu, cuda or auto (default auto)
#   --runs N           timed runs per variant (default 10; the VM defaults to 3)
#   --warmup N         untimed runs first (default 1)
#   --out DIR          where the JSON exports and results.md go (default: a fresh directory
#                      under target/bench/)
#
# Suites: vectorAdd (tests/cuda/vectorAdd.cu), tests (every tests/cuda program), caffe
# (LeNet and AlexNet `caffe time`; images/build-caffe.sh builds Caffe, cached, ~10 min cold).
# In the VM the caffe suite's model files go into the guest with `vcuda vm run --add`.
#
# Native runs need an NVIDIA GPU and driver (`nvidia-smi -L` lists one); without them the
# table compares the transports with each other and says so. Programs are built with the
# CUDA 13.0 toolkit of images/cuda-toolkit.sh (`-cudart=shared`); vcuda's binaries are
# release builds (cargo build --release, done here if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
source images/lib.sh

transports=socket executor=auto runs= warmup=1 out= suite= cmd=()
while [ $# -gt 0 ]; do
    case $1 in
    --transport) transports=$2; shift 2 ;;
    --executor) executor=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --suite) suite=$2; shift 2 ;;
    --) shift; cmd=("$@"); break ;;
    -h | --help) sed -n '3,24p' "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
    esac
done
[ -n "$suite" ] || [ ${#cmd[@]} -gt 0 ] || die "give --suite NAME or -- CMD (see --help)"

command -v hyperfine >/dev/null || apt_install hyperfine
out=${out:-target/bench/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out/bin"
if [ ! -x target/release/vcuda ] || [ ! -x target/release/vcuda-backend ] ||
    [ ! -f target/release/libvcuda.so ]; then
    log "building vcuda (release)"
    cargo build --release -q -p vcuda-cli -p vcuda-backend -p vcuda-guest
fi
vcuda=$PWD/target/release/vcuda
export VCUDA_BACKEND=$PWD/target/release/vcuda-backend VCUDA_LIB_DIR=$PWD/target/release
native=0
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
    native=1
fi

# Builds tests/cuda/NAME.cu into $out/bin/NAME and prints its path.
build() {
    local name=$1 root libs=()
    root=$(bash images/cuda-toolkit.sh)
    for l in $(sed -n 's|^// vcuda-test: libs=||p' "tests/cuda/$name.cu" | tr ',' ' '); do
        libs+=("-l$l")
    done
    "$root/bin/nvcc" -cudart=shared -O2 -o "$out/bin/$name" "tests/cuda/$name.cu" \
        -I tests/cuda -L"$root/lib" "${libs[@]}" >&2
    echo "$out/bin/$name"
}

# Commands to time, one per line: NAME<TAB>COMMAND.
benches() {
    case $suite in
    "") printf 'command\t%s\n' "$(printf '%q ' "${cmd[@]}")" ;;
    vectorAdd) printf 'vectorAdd\t%s\n' "$(build vectorAdd)" ;;
    tests)
        for f in tests/cuda/*.cu; do
            n=$(basename "$f" .cu)
            a=$(sed -n 's|^// vcuda-test: args=||p' "$f")
            printf '%s\t%s %s\n' "$n" "$(build "$n")" "$a"
        done
        ;;
    caffe)
        prefix=$(bash images/build-caffe.sh 2>/dev/null | tail -1) ||
            die "Caffe does not build (bash images/build-caffe.sh)"
        # A third field: `vcuda vm run` options (the model file the guest needs).
        local lenet=$prefix/examples/mnist/lenet.prototxt
        local alexnet=$prefix/models/bvlc_alexnet/deploy.prototxt
        printf 'caffe LeNet\t%s time -model %s -gpu 0 -iterations 10\t--add %s\n' \
            "$prefix/bin/caffe" "$lenet" "$lenet"
        printf 'caffe AlexNet\t%s time -model %s -gpu 0 -iterations 2\t--add %s\n' \
            "$prefix/bin/caffe" "$alexnet" "$alexnet"
        ;;
    *) die "unknown suite $suite (vectorAdd, tests, caffe)" ;;
    esac
}

i=0
while IFS=$'\t' read -r name command vm_opts; do
    i=$((i + 1))
    args=(--warmup "$warmup" --export-json "$out/$i.json" --style basic)
    variants=()
    if [ $native = 1 ]; then
        variants+=(-n native "$command")
    fi
    IFS=, read -ra ts <<<"$transports"
    for t in "${ts[@]}"; do
        case $t in
        socket) variants+=(-n socket "$vcuda run --executor $executor -- $command") ;;
        vm) variants+=(-n vm "$vcuda vm run --executor $executor ${vm_opts:-} -- $command") ;;
        *) die "unknown transport $t" ;;
        esac
    done
    r=${runs:-10}
    [[ $transports == *vm* ]] && r=${runs:-3}
    log "$name: ${#variants[@]} variants x $r runs"
    printf '%s\n' "$name" >"$out/$i.name"
    hyperfine "${args[@]}" --runs "$r" "${variants[@]}" >&2
done < <(benches)

python3 - "$out" "$native" "$executor" >"$out/results.md" <<'PY'
import glob, json, os, sys
out, native, executor = sys.argv[1], sys.argv[2] == "1", sys.argv[3]
print(f"Medians of whole-program wall time (hyperfine), executor `{executor}`.\n")
if not native:
    print("No GPU here: native figures need one; ratios are against the first transport.\n")
print("| program | variant | median | ratio |")
print("|---|---|---:|---:|")
files = sorted(glob.glob(os.path.join(out, "*.json")), key=lambda p: int(os.path.basename(p)[:-5]))
for f in files:
    name = open(f[:-5] + ".name").read().strip()
    results = json.load(open(f))["results"]
    base = results[0]["median"]
    for r in results:
        print(f"| {name} | {r['command']} | {r['median'] * 1000:.1f} ms | {r['median'] / base:.2f}x |")
PY
cat "$out/results.md"
log "results in $out/results.md"
