#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# The VM tests: CUDA programs built with nvcc run unchanged inside a QEMU guest, through
# libvcuda.so, the vcuda kernel module (/dev/vcuda) and `vcuda-backend vhost-user` on the CPU
# executor, via `vcuda vm run --executor cpu`; and the kernel-module tests
# (tests/vm/cuda/module_abuse.cu: bad ioctl input, processes killed mid-call, pin leak check,
# rmmod afterwards).
#
#   tests/vm/run.sh            # builds what it needs, runs everything, exits non-zero on failure
#
# Lints the kernel module (images/build-module.sh --check). Builds: the vcuda CLI,
# vcuda-backend and libvcuda.so (cargo, profile $VCUDA_VM_PROFILE,
# default debug, in $CARGO_TARGET_DIR or target/); the guest image (images/build-guest.sh:
# kernel, QEMU, module, initramfs; cached in ~/.cache/vcuda, cold ~20 min, warm seconds); the
# test programs (CUDA 13.0 from images/cuda-toolkit.sh, and CUDA 12.4 from
# images/cuda12-toolkit.sh for a libcudart.so.12 subset; cached next to the cargo outputs).
#
# Programs: every tests/cuda/*.cu (their `// vcuda-test:` headers: expect=, args=, libs=,
# nvcc=, srcs=, arch=) and every tests/vm/cuda/*.cu (`// vcuda-vm-test:` headers: the same keys plus
# vm=FLAGS for `vcuda vm run`, expect_err= for lines it prints on stderr, and executor=chain:
# run the guest's backend with `--executor cuda` over vcuda's own libcuda.so.1 and a CPU
# backend on a Unix socket, the driver-API chain, for what must be tested on the CUDA
# executor without a GPU; every backend sees one device range, VCUDA_DEVICE_VA, which
# executor=chain-unpinned leaves out). A program passes if it exits 0 and prints every expect= line
# (and expect_err= line).
#
# Environment: VCUDA_VM_TESTS (a grep -E pattern selecting programs by name, e.g.
# VCUDA_VM_TESTS='^module_unbind$' for one test), VCUDA_VM_TIMEOUT (per program, default
# 300 s), VCUDA_IMAGE_DIR (use a prebuilt image), VCUDA_VM_CUDA12=0 (skip the CUDA 12 builds),
# VCUDA_VM_BUILT=1 (tests/run.sh: its debug workspace build is fresh, so skip the
# three-package build), VCUDA_VM_KEEP (keep the logs directory of every program).
#
# A failed program's logs are kept in $CARGO_TARGET_DIR/vm-logs/ (default target/vm-logs/):
# NAME.console (the guest's whole serial console: kernel log, oopses), NAME.out, NAME.err
# (the program's output, the backend's and QEMU's messages); their paths are printed, with
# the console from the first kernel warning on. A program that passes removes its old ones.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)
start_all=$SECONDS

log() { printf '[vm-tests] %s\n' "$*" >&2; }

profile=${VCUDA_VM_PROFILE:-debug}
target=${CARGO_TARGET_DIR:-$repo/target}
cargo_flags=()
[ "$profile" = release ] && cargo_flags+=(--release)
[ "$profile" = debug ] || [ "$profile" = release ] || { log "VCUDA_VM_PROFILE must be debug or release"; exit 2; }
if [ "${VCUDA_VM_BUILT:-0}" = 1 ] && [ "$profile" = debug ]; then
    # tests/run.sh has just built the whole workspace; building three packages alone would
    # resolve features without the dev-dependencies and compile a second copy of the backend.
    log "using the workspace build of vcuda, vcuda-backend and libvcuda.so"
else
    log "building vcuda, vcuda-backend and libvcuda.so ($profile)"
    cargo build "${cargo_flags[@]}" -p vcuda-cli -p vcuda-backend -p vcuda-guest >&2
fi
vcuda=$target/$profile/vcuda
lib_dir=$("$vcuda" lib-dir)

t=$SECONDS
if [ -z "${VCUDA_IMAGE_DIR:-}" ]; then
    log "linting the kernel module (clippy, warnings are errors)"
    bash images/build-module.sh --check
    log "building or reusing the guest image"
    guest_env=$(bash images/build-guest.sh --lib-dir "$lib_dir")
    VCUDA_IMAGE_DIR=$(sed -n 's/^GUEST_DIR=//p' <<<"$guest_env")
    export VCUDA_IMAGE_DIR
fi
log "guest image: $VCUDA_IMAGE_DIR ($((SECONDS - t)) s)"

work=$(mktemp -d "${TMPDIR:-/tmp}/vcuda-vm-tests.XXXXXX")
cleanup() { [ -n "${VCUDA_VM_KEEP:-}" ] && log "logs kept in $work" || rm -rf "$work"; }
trap cleanup EXIT

# Header lines of a program: "KEY=VALUE" for each `// <tag>: KEY=VALUE` at the top.
header() {
    local src=$1 tag=$2
    sed -n '/^\/\//!q; s|^// '"$tag"': *||p' "$src"
}
values() { sed -n "s/^$1=//p"; }

# Builds program $1 (source) with toolkit root $2 into $3; reuses a binary newer than its
# sources (the program, the shared headers and the files it includes).
build() {
    local src=$1 root=$2 exe=$3 tag=$4 cudart=${5:-shared}
    local h libs nvcc_flags srcs arch
    h=$(header "$src" "$tag")
    srcs=()
    while read -r f; do
        [ -n "$f" ] && srcs+=("$repo/tests/cuda/$f")
    done < <(values srcs <<<"$h" | tr ',' '\n' | sed 's/^ *//; s/ *$//')
    local newer=1 f
    # The shared headers, and what the program includes from tests/cuda/ (a VM test may
    # include a whole program, tests/vm/cuda/zero_copy_vm.cu does).
    local included=()
    while read -r f; do
        if [ -f "$(dirname "$src")/$f" ]; then included+=("$(dirname "$src")/$f"); fi
    done < <(sed -n 's/^#include "\(.*\)"/\1/p' "$src")
    for f in "$src" tests/cuda/*.h tests/vm/cuda/vm_test.h "${srcs[@]}" "${included[@]}"; do
        [ "$exe" -nt "$f" ] || newer=0
    done
    if [ -x "$exe" ] && [ "$newer" = 1 ]; then
        return 0
    fi
    libs=$(values libs <<<"$h" | tr ',' '\n' | sed 's/^ *//; s/ *$//; /^$/d; s/^/-l/' | tr '\n' ' ')
    nvcc_flags=$(values nvcc <<<"$h" | tr '\n' ' ')
    arch=$(values arch <<<"$h" | tail -n 1)
    arch=${arch:-90}
    mkdir -p "$(dirname "$exe")"
    # shellcheck disable=SC2086
    "$root/bin/nvcc" -cudart="$cudart" -O2 -std=c++17 -gencode "arch=compute_$arch,code=[sm_$arch,compute_$arch]" \
        -I"$repo/tests/cuda" -L"$root/lib" $nvcc_flags "$src" "${srcs[@]}" -o "$exe.tmp" $libs &&
        mv "$exe.tmp" "$exe"
}

cuda13=${VCUDA_CUDA_ROOT:-$(bash images/cuda-toolkit.sh)}
cuda12=
if [ "${VCUDA_VM_CUDA12:-1}" != 0 ]; then
    cuda12=${VCUDA_CUDA12_ROOT:-$(bash images/cuda12-toolkit.sh 2>/dev/null || true)}
    [ -n "$cuda12" ] || log "warning: the CUDA 12.4 toolkit is unavailable; skipping the libcudart.so.12 builds"
fi
bins=$target/vm-tests
vm_logs=$target/vm-logs
kernel_warning='BUG:|WARNING:|Oops|Call Trace|general protection|Kernel panic'

# name|source|toolkit|header tag|runtime linking (shared, or nvcc's default static)
cases=()
for src in tests/cuda/*.cu; do
    n=$(basename "$src" .cu)
    cases+=("$n|$src|$cuda13|vcuda-test|shared")
done
# Plain nvcc output: NVIDIA's static runtime in the program, reaching vcuda through the
# guest's libcuda.so.1 (its export tables).
for n in vectorAdd api_memory graphs cublas_basic driver_api; do
    [ -f "tests/cuda/$n.cu" ] && cases+=("$n-static|tests/cuda/$n.cu|$cuda13|vcuda-test|static")
done
# A CUDA 12 subset (the guest's libcudart.so.12, libcublas.so.12 and libcurand.so.10
# sonames, CUDA 12 structure layouts, CUDA 12.4's Thrust).
if [ -n "$cuda12" ]; then
    for n in vectorAdd api_memory api_streams cublas_basic thrust; do
        [ -f "tests/cuda/$n.cu" ] && cases+=("$n-cuda12|tests/cuda/$n.cu|$cuda12|vcuda-test|shared")
    done
    cases+=("vectorAdd-cuda12-static|tests/cuda/vectorAdd.cu|$cuda12|vcuda-test|static")
fi
for src in tests/vm/cuda/*.cu; do
    cases+=("$(basename "$src" .cu)|$src|$cuda13|vcuda-vm-test|shared")
done

timeout_s=${VCUDA_VM_TIMEOUT:-300}
pass=() fail=()

# The CPU backend behind executor=chain programs, started for the first of them.
chain_pid=
chain_sock=$work/chain-cpu.sock
stop_chain() { [ -z "$chain_pid" ] || kill "$chain_pid" 2>/dev/null || true; }
trap 'stop_chain; cleanup' EXIT
start_chain() {
    [ -n "$chain_pid" ] && return 0
    "$target/$profile/vcuda-backend" serve --socket "$chain_sock" --executor cpu \
        >"$work/chain-cpu.log" 2>&1 &
    chain_pid=$!
    for _ in $(seq 100); do
        [ -S "$chain_sock" ] && return 0
        sleep 0.1
    done
    log "the chain's CPU backend did not start:"
    sed 's/^/    | /' "$work/chain-cpu.log" >&2
    return 1
}
for c in "${cases[@]}"; do
    IFS='|' read -r name src root tag cudart <<<"$c"
    if [ -n "${VCUDA_VM_TESTS:-}" ] && ! grep -qE "$VCUDA_VM_TESTS" <<<"$name"; then
        continue
    fi
    exe=$bins/$name
    rm -f "$vm_logs/$name".{console,out,err}
    if ! build "$src" "$root" "$exe" "$tag" "$cudart" 2>"$work/$name.nvcc"; then
        log "FAIL $name: nvcc failed:"
        sed 's/^/    /' "$work/$name.nvcc" >&2
        fail+=("$name")
        continue
    fi
    h=$(header "$src" "$tag")
    mapfile -t expects < <(values expect <<<"$h")
    mapfile -t expects_err < <(values expect_err <<<"$h")
    read -r -a args <<<"$(values args <<<"$h" | tr '\n' ' ')"
    read -r -a vmflags <<<"$(values vm <<<"$h" | tr '\n' ' ')"
    run_env=() executor=cpu
    case "$(values executor <<<"$h")" in
    chain | chain-unpinned)
        start_chain || { fail+=("$name"); continue; }
        run_env=(LD_LIBRARY_PATH="$lib_dir" VCUDA_SOCKET="$chain_sock")
        # Every backend of a migration sees the same device addresses from the CPU backend
        # (chain-unpinned: each its own, so a session's addresses are taken elsewhere).
        [ "$(values executor <<<"$h")" = chain ] && run_env+=(VCUDA_DEVICE_VA=0x200000000000)
        executor=cuda
        ;;
    esac
    t=$SECONDS
    set +e
    env "${run_env[@]}" "$vcuda" vm run --executor "$executor" --timeout "$timeout_s" \
        --console-log "$work/$name.console" "${vmflags[@]}" -- "$exe" "${args[@]}" \
        >"$work/$name.out" 2>"$work/$name.err"
    rc=$?
    set -e
    why=
    [ $rc -eq 0 ] || why="exit status $rc"
    for e in "${expects[@]}"; do
        [ -z "$e" ] || grep -qF -- "$e" "$work/$name.out" || why="${why:+$why; }missing output line: $e"
    done
    for e in "${expects_err[@]}"; do
        [ -z "$e" ] || grep -qF -- "$e" "$work/$name.err" || why="${why:+$why; }missing line on stderr: $e"
    done
    if grep -qE "$kernel_warning" "$work/$name.console"; then
        why="${why:+$why; }kernel warning on the guest console"
    fi
    if [ -z "$why" ]; then
        log "ok   $name ($((SECONDS - t)) s)"
        pass+=("$name")
    else
        log "FAIL $name ($((SECONDS - t)) s): $why"
        for f in out err console; do
            [ -s "$work/$name.$f" ] || continue
            echo "    --- $f (last 30 lines)" >&2
            tail -n 30 "$work/$name.$f" | sed 's/^/    | /' >&2
        done
        # The kernel's report, which the last lines above may miss (an oops followed by a
        # hang), from a little before the first warning.
        first=$(grep -m 1 -nE "$kernel_warning" "$work/$name.console" | cut -d: -f1 || true)
        if [ -n "$first" ]; then
            from=$((first > 10 ? first - 10 : 1))
            echo "    --- console lines $from-$((from + 149)) (from just before the first kernel warning)" >&2
            sed -n "$from,$((from + 149))s/^/    | /p" "$work/$name.console" >&2
        fi
        mkdir -p "$vm_logs"
        for f in console out err; do
            [ -f "$work/$name.$f" ] || continue
            cp "$work/$name.$f" "$vm_logs/$name.$f"
            echo "    full $f: $vm_logs/$name.$f" >&2
        done
        fail+=("$name")
    fi
done

# Caffe's LeNet `caffe time` in the guest, its model file brought in with --add (Caffe from
# images/build-caffe.sh, which tests/caffe/run.sh built or found cached; skipped with
# VCUDA_SKIP_CAFFE=1, or when VCUDA_VM_TESTS selects programs).
if [ "${VCUDA_SKIP_CAFFE:-0}" != 1 ] && [ -z "${VCUDA_VM_TESTS:-}" ]; then
    t=$SECONDS
    caffe=$(bash images/build-caffe.sh 2>"$work/caffe.build" | tail -1) || caffe=
    if [ -z "$caffe" ]; then
        log "FAIL caffe_lenet: images/build-caffe.sh failed:"
        tail -n 20 "$work/caffe.build" | sed 's/^/    | /' >&2
        fail+=(caffe_lenet)
    else
        model=$caffe/examples/mnist/lenet.prototxt
        rc=0
        "$vcuda" vm run --executor cpu --timeout "$timeout_s" --add "$model" -- \
            "$caffe/bin/caffe" time -gpu 0 -iterations 2 -model "$model" \
            >"$work/caffe.out" 2>&1 || rc=$?
        if [ $rc -eq 0 ] && grep -q "Average Forward-Backward" "$work/caffe.out"; then
            log "ok   caffe_lenet ($((SECONDS - t)) s): $(grep -o 'Average Forward-Backward: .*' "$work/caffe.out")"
            pass+=(caffe_lenet)
        else
            log "FAIL caffe_lenet ($((SECONDS - t)) s): exit status $rc; last lines:"
            tail -n 30 "$work/caffe.out" | sed 's/^/    | /' >&2
            fail+=(caffe_lenet)
        fi
    fi
fi

# A Numba program (tests/python/numba_basic.py: @cuda.jit kernels, shared memory, atomics,
# streams, device arrays) in the guest, unchanged: the interpreter, its standard library and
# the virtualenv's packages (images/numba-venv.sh, as tests/tests/python.rs uses) brought in
# with --add. The virtualenv's pyvenv.cfg goes next to the guest's copy of the interpreter
# (/vcuda/bin), so Python takes /vcuda as its prefix and reads the packages' .pth files there,
# as in the virtualenv itself. Skipped with VCUDA_SKIP_NUMBA=1, or unless VCUDA_VM_TESTS
# selects "numba".
if [ "${VCUDA_SKIP_NUMBA:-0}" != 1 ] &&
    { [ -z "${VCUDA_VM_TESTS:-}" ] || grep -qE "$VCUDA_VM_TESTS" <<<numba_basic; }; then
    t=$SECONDS
    if ! py=$(bash images/numba-venv.sh 2>"$work/numba.venv"); then
        log "FAIL numba_basic: images/numba-venv.sh failed:"
        tail -n 20 "$work/numba.venv" | sed 's/^/    | /' >&2
        fail+=(numba_basic)
    else
        venv=$(dirname "$(dirname "$py")")
        interp=$(readlink -f "$py")
        stdlib=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')
        site=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
        guest_site=/vcuda/${site#"$venv"/}
        # At a fixed guest path: the guest mounts a fresh /tmp, where a checkout may live.
        script=$PWD/tests/python/numba_basic.py
        rc=0
        "$vcuda" vm run --executor cpu --memory 4G --timeout "$timeout_s" \
            --console-log "$work/numba_basic.console" -e PYTHONWARNINGS=ignore \
            --add "$stdlib" --add "$venv/pyvenv.cfg:/vcuda/pyvenv.cfg" --add "$site:$guest_site" \
            --add "$script:/vcuda/work/numba_basic.py" -- "$interp" /vcuda/work/numba_basic.py \
            >"$work/numba_basic.out" 2>&1 || rc=$?
        if [ $rc -eq 0 ] && grep -qx PASS "$work/numba_basic.out"; then
            log "ok   numba_basic ($((SECONDS - t)) s)"
            pass+=(numba_basic)
        else
            log "FAIL numba_basic ($((SECONDS - t)) s): exit status $rc; last lines:"
            tail -n 30 "$work/numba_basic.out" | sed 's/^/    | /' >&2
            mkdir -p "$vm_logs"
            cp "$work/numba_basic.out" "$work/numba_basic.console" "$vm_logs/" 2>/dev/null || true
            fail+=(numba_basic)
        fi
    fi
fi

# The libvirt domains of deploy/libvirt/ on the QEMU command lines libvirt yields for them
# (tests/vm/libvirt.sh): the direct one runs vectorAdd, the disk one starts with the device.
if { [ -z "${VCUDA_VM_TESTS:-}" ] || grep -qE "$VCUDA_VM_TESTS" <<<libvirt_domains; } &&
    [ -x "$bins/vectorAdd" ]; then
    t=$SECONDS
    if bash tests/vm/libvirt.sh "$target/$profile" "$bins/vectorAdd" "$work/libvirt" \
        >"$work/libvirt.out" 2>&1; then
        log "ok   libvirt_domains ($((SECONDS - t)) s)"
        pass+=(libvirt_domains)
    else
        log "FAIL libvirt_domains ($((SECONDS - t)) s); last lines:"
        tail -n 40 "$work/libvirt.out" | sed 's/^/    | /' >&2
        fail+=(libvirt_domains)
    fi
fi

log "${#pass[@]} passed, ${#fail[@]} failed, $((SECONDS - start_all)) s in all"
if [ ${#fail[@]} -gt 0 ]; then
    log "failed: ${fail[*]} (logs: $vm_logs/)"
    exit 1
fi
