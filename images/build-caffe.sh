#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# Builds Caffe from Debian's `caffe` source package for the CUDA 13.0 toolkit of
# images/cuda-toolkit.sh: the `caffe` tool and libcaffe.so, linked against the shared
# libcudart.so.13, libcublas.so.13 and libcurand.so.10 (so vcuda can stand in for them), no
# cuDNN, kernels as sm_90 code plus compute_90 PTX (what vcuda's CPU executor runs).
#
#   prefix=$(images/build-caffe.sh | tail -1)
#   vcuda run --executor cpu -- "$prefix/bin/caffe" time -gpu 0 -iterations 2 \
#       -model "$prefix/examples/mnist/lenet.prototxt"
#
# Prints the install prefix, $VCUDA_CACHE/caffe-<Debian version>-<hash>/, as its last (only)
# line on stdout; logs go to stderr and to $VCUDA_CACHE/logs/caffe-<hash>.log. The prefix holds
# bin/caffe, lib/libcaffe.so.1.0.0 (bin/caffe finds it through its RUNPATH, $ORIGIN/../lib;
# the CUDA libraries come from LD_LIBRARY_PATH: `vcuda lib-dir`, or the toolkit's lib/ on a
# machine with a GPU), examples/ and models/ from the source tree (also reachable as
# share/caffe/examples and share/caffe/models), and BUILDINFO. The hash covers this script's
# code, the patches in images/caffe/ and the toolkit's cache key, so a change to any of them
# builds a new prefix.
#
# Source: Caffe is not in bookworm (it left testing before the release); the newest Debian
# upload, 1.0.0+git20180821.99bd997-8, is bullseye's. `apt-get source` fetches it through a
# deb-src-only list in the private apt directory ($VCUDA_CACHE/apt/sources-src.list, its own
# lists-src/ state, so the binary configuration of lib.sh is untouched); when bullseye has left
# deb.debian.org, the pinned files come from archive.debian.org or snapshot.debian.org instead.
# All files are checked by sha256 and kept in $VCUDA_CACHE/src/caffe/. The build dependencies
# are bookworm binaries (apt_install).
#
# Build: Debian's own CMake build (its quilt patches applied by dpkg-source -x), then
# images/caffe/*.patch in order; configured like debian/rules but with CUDA on and the optional
# parts the tool does not need off (Python, OpenCV, LevelDB, LMDB, HDF5), OpenBLAS for the CPU
# side; only the `caffe` tool and its library are built. VCUDA_JOBS (default: nproc) sets the
# parallelism; VCUDA_KEEP_BUILD=1 keeps a failed build tree ($prefix.tmp) for inspection.
source "$(dirname "$0")/lib.sh"
exec 3>&1 1>&2

CAFFE_DEB=1.0.0+git20180821.99bd997-8
CAFFE_SUITE=bullseye
CAFFE_FILES=(
    "c492f4893fc1ba1fb514b2d9b4763bc78dc93571ea24adc6e604eccbb93cdd64 caffe_1.0.0+git20180821.99bd997-8.dsc"
    "e0eb3f06794f7402c77b7dec8e8480273ee1a1bb192e9122b621a69d4147ad0c caffe_1.0.0+git20180821.99bd997.orig.tar.gz"
    "07cf073227494a6b07234e40cb5df91db566616593eef9baafdc4d06ad159f21 caffe_1.0.0+git20180821.99bd997-8.debian.tar.xz"
)
# Where the pinned files are, should `apt-get source` no longer find them (pool/main/c/caffe/).
CAFFE_POOLS=(
    http://deb.debian.org/debian
    http://archive.debian.org/debian
    https://snapshot.debian.org/archive/debian/20230101T000000Z
)
BUILD_DEPS=(build-essential cmake dpkg-dev patch libboost-system-dev libboost-thread-dev
    libboost-filesystem-dev libgflags-dev libgoogle-glog-dev libprotobuf-dev protobuf-compiler
    libopenblas-dev)
# CUDA_ARCH_BIN=90 gives sm_90 SASS (a real H100 runs it as is), CUDA_ARCH_PTX=90 the
# compute_90 PTX beside it. FindCUDA links the host objects with g++ against libcudart.so
# (CUDA_USE_STATIC_CUDA_RUNTIME=OFF): the equivalent of nvcc -cudart=shared.
CMAKE_ARGS=(-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DCPU_ONLY=OFF -DUSE_CUDNN=OFF
    -DUSE_NCCL=OFF -DBLAS=Open -DBUILD_python=OFF -DBUILD_python_layer=OFF -DBUILD_matlab=OFF
    -DBUILD_docs=OFF -DUSE_OPENCV=OFF -DUSE_LEVELDB=OFF -DUSE_LMDB=OFF -DUSE_HDF5=OFF
    -DCUDA_USE_STATIC_CUDA_RUNTIME=OFF -DCUDA_ARCH_NAME=Manual -DCUDA_ARCH_BIN=90 -DCUDA_ARCH_PTX=90
    -DCUDA_NVCC_FLAGS=-cudart=shared
    -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON "-DCMAKE_INSTALL_RPATH=\$ORIGIN/../lib"
    -DCMAKE_INSTALL_RPATH_USE_LINK_PATH=OFF)

PATCHES=("$REPO_ROOT"/images/caffe/*.patch)
[ -f "${PATCHES[0]}" ] || die "no patches in $REPO_ROOT/images/caffe/"
SRC=$VCUDA_CACHE/src/caffe
JOBS=${VCUDA_JOBS:-$(nproc)}

toolkit=$(bash "$REPO_ROOT/images/cuda-toolkit.sh") || die "the CUDA 13.0 toolkit is not available (images/cuda-toolkit.sh)"
[ -x "$toolkit/bin/nvcc" ] || die "images/cuda-toolkit.sh printed $toolkit, which has no bin/nvcc"
# The toolkit's cache directory name (cuda-13.0-<hash of its pins>) is its key.
toolkit_key=$(basename "$(dirname "$toolkit")")
key=$(short_hash <(script_code "$0") "${PATCHES[@]}" <(echo "$toolkit_key"))
dir=$VCUDA_CACHE/caffe-$CAFFE_DEB-$key
work=$dir.tmp
logf=$VCUDA_CACHE/logs/caffe-$key.log

cached() {
    if [ -x "$dir/bin/caffe" ]; then
        echo "$dir" >&3
        exit 0
    fi
}
cached
# One build at a time; a second caller waits here and then finds the first one's result.
cache_lock caffe
cached

# apt-get with a deb-src-only configuration of its own in the private apt directory, for
# `source` (lib.sh's sources.list has no deb-src lines, and apt_new's lists are for newer suites).
apt_src() {
    local list=$APT_PRIVATE/sources-src.list
    mkdir -p "$APT_PRIVATE/lists-src/partial" "$APT_PRIVATE/cache-src/archives/partial"
    _write_if_changed "$list" <<EOS
deb-src http://deb.debian.org/debian $CAFFE_SUITE main
EOS
    local o=(-o Dir::Etc::SourceList="$list" -o Dir::Etc::SourceParts=/dev/null
        -o Dir::State::Lists="$APT_PRIVATE/lists-src" -o Dir::Cache="$APT_PRIVATE/cache-src"
        -o APT::Sandbox::User=root)
    {
        flock 9
        if [ -z "$(find "$APT_PRIVATE/lists-src" -maxdepth 1 -name .updated -mmin -60 \
            -newer "$list" 2>/dev/null)" ]; then
            apt-get -q "${o[@]}" update >&2 && touch "$APT_PRIVATE/lists-src/.updated"
        fi
        apt-get -q "${o[@]}" "$@" >&2
    } 9>"$(_apt_lock)"
}

# True when every "sha file" entry is in $SRC with the recorded hash; dies on a mismatch.
have_files() {
    local e ok=0
    for e in "${CAFFE_FILES[@]}"; do
        [ -f "$SRC/${e#* }" ] || { ok=1; continue; }
        check_sha256 "$SRC/${e#* }" "${e%% *}"
    done
    return $ok
}

# Downloads the pinned files straight from a pool; each one is checked by have_files.
fetch_from_pool() {
    local base e f
    command -v curl >/dev/null || apt_install curl ca-certificates
    for base in "${CAFFE_POOLS[@]}"; do
        log "trying $base/pool/main/c/caffe/"
        for e in "${CAFFE_FILES[@]}"; do
            f=${e#* }
            [ -f "$SRC/$f" ] && continue
            if curl -fsSL --retry 2 -o "$SRC/$f.part" "$base/pool/main/c/caffe/$f"; then
                mv "$SRC/$f.part" "$SRC/$f"
            else
                rm -f "$SRC/$f.part"
            fi
        done
        have_files && return 0
    done
    return 1
}

fetch_source() {
    mkdir -p "$SRC"
    have_files && return 0
    log "downloading caffe $CAFFE_DEB ($CAFFE_SUITE) into $SRC"
    (cd "$SRC" && apt_src source --download-only "caffe=$CAFFE_DEB") ||
        log "warning: apt-get source caffe=$CAFFE_DEB failed (has $CAFFE_SUITE left deb.debian.org?)"
    have_files && return 0
    fetch_from_pool && return 0
    die "caffe $CAFFE_DEB is not downloadable from $CAFFE_SUITE or ${CAFFE_POOLS[*]}; update the pins in $0"
}

# Runs a build step with its output on stderr and in $logf; on failure shows where it stopped.
step() {
    local what=$1
    shift
    log "$what"
    printf '\n==> %s: %s\n' "$what" "$*" >>"$logf"
    if ! "$@" 2>&1 | tee -a "$logf" >&2; then
        die "$what failed (full log: $logf; VCUDA_KEEP_BUILD=1 keeps the build tree)"
    fi
}

# Dies unless the build is what this script promises: CUDA libraries linked dynamically, no
# toolkit directory in a RUNPATH, kernels embedded.
check_result() {
    local lib=$1 bin=$2 d needed sections paths
    needed=$(readelf -d "$lib" "$bin")
    for d in libcudart.so.13 libcublas.so.13 libcurand.so.10; do
        grep -q "(NEEDED).*\[$d\]" <<<"$needed" || die "$lib does not link $d dynamically"
    done
    paths=$(grep -E '\((RPATH|RUNPATH)\)' <<<"$needed" || true)
    # shellcheck disable=SC2016 # a literal $ORIGIN
    if grep -vq 'Library runpath: \[\$ORIGIN/\.\./lib\]$' <<<"$paths"; then
        die "$bin and $lib need the RUNPATH \$ORIGIN/../lib and no other; found: ${paths:-none}"
    fi
    sections=$(readelf -S "$lib")
    grep -q '\.nv_fatbin' <<<"$sections" || die "$lib has no .nv_fatbin section (no kernels)"
    grep -q 'NVCC flags for: sm_90 compute_90$' "$logf" || die "the kernels are not built for sm_90 + compute_90"
}

cleanup() {
    if [ -d "$work" ] && [ "${VCUDA_KEEP_BUILD:-0}" != 1 ]; then
        rm -rf "$work"
    fi
}
trap cleanup EXIT

apt_install "${BUILD_DEPS[@]}"
fetch_source

mkdir -p "$(dirname "$logf")"
: >"$logf"
rm -rf "$work"
mkdir -p "$work"
log "building Caffe $CAFFE_DEB with $toolkit_key in $work (log: $logf)"
start=$SECONDS
step "unpacking the Debian source (and its patches)" dpkg-source -x --no-copy "$SRC/${CAFFE_FILES[0]#* }" "$work/src"
for p in "${PATCHES[@]}"; do
    step "applying images/caffe/$(basename "$p")" patch -d "$work/src" -p1 --batch --forward -i "$p"
done
step "configuring (cmake)" cmake -S "$work/src" -B "$work/build" -DCUDA_TOOLKIT_ROOT_DIR="$toolkit" "${CMAKE_ARGS[@]}"
# Cuda.cmake looks for CUDA quietly and builds for the CPU alone when it finds none.
grep -q 'CUDA detected: 13\.' "$logf" || die "cmake did not find CUDA 13 under $toolkit (log: $logf)"
step "building caffe (-j$JOBS)" cmake --build "$work/build" --target caffe.bin -- -j"$JOBS"

mkdir -p "$work/bin" "$work/lib" "$work/share/caffe"
cp -P "$work/build/lib"/libcaffe.so* "$work/lib/"
cp "$work/build/tools/caffe" "$work/bin/caffe"
cp -r "$work/src/examples" "$work/src/models" "$work/"
ln -s ../../examples "$work/share/caffe/examples"
ln -s ../../models "$work/share/caffe/models"
check_result "$(readlink -f "$work/lib/libcaffe.so")" "$work/bin/caffe"
{
    printf 'caffe %s (Debian %s source package)\n' "$CAFFE_DEB" "$CAFFE_SUITE"
    printf 'toolkit %s (%s)\n' "$toolkit_key" "$("$toolkit/bin/nvcc" --version | tail -1)"
    printf 'patches %s\n' "$(cd "$REPO_ROOT/images/caffe" && echo *.patch)"
    printf 'cmake %s\n' "${CMAKE_ARGS[*]}"
    printf 'build %s s with -j%s\n' "$((SECONDS - start))" "$JOBS"
} >"$work/BUILDINFO"
rm -rf "$work/src" "$work/build"
publish_dir "$dir"
log "built $dir in $((SECONDS - start)) s"
echo "$dir" >&3
