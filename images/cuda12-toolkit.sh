#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# Assembles a CUDA 12.4 nvcc (never installed into the system) to build test programs
# against the libcudart.so.12, libcublas.so.12 and libcurand.so.10 ABIs. Prints the
# toolkit root.
#
# From Debian trixie non-free's nvidia-cuda-toolkit .deb (nvcc, cicc, ptxas, fatbinary,
# nvlink, cudafe++) and the headers/libcudart/libdevice of PyPI's cu12 wheels.
# libcudadevrt.a (only in the 934 MB nvidia-cuda-dev .deb) is an empty archive: enough
# without -rdc. Every download is checked against the sha256 recorded here.
source "$(dirname "$0")/lib.sh"

DEB_URL=http://deb.debian.org/debian/pool/non-free/n/nvidia-cuda-toolkit/nvidia-cuda-toolkit_12.4.131~12.4.1-2_amd64.deb
DEB_SHA=cd5fe85aee38d108b315f408a688641478f2402622a10c677478eb7a6c4e5319
WHEELS=(
    "nvidia-cuda-runtime-cu12==12.4.127 64403288fa2136ee8e467cdc9c9427e0434110899d07c779f25b5c068934faa5"
    "nvidia-cuda-nvcc-cu12==12.4.131 e4c9a35435c3b0e36c6397c5696334c9ea6650e524736cbd1c5d345ea099bb04"
)
key=$(printf '%s\n' "$DEB_SHA" "${WHEELS[@]}" | short_hash)

# Downloads each "NAME==VERSION SHA256" wheel into $1/whl, checks its sha256 and unpacks it
# into $1/w.
fetch_wheels() {
    local t=$1 w spec sha f
    shift
    for w in "$@"; do
        spec=${w% *} sha=${w#* }
        python3 -m pip download -q --no-deps --disable-pip-version-check -d "$t/whl" "$spec" >&2
        f=$(ls "$t"/whl/"$(echo "${spec%%==*}" | tr - _)"-*.whl)
        echo "$sha  $f" | sha256sum -c --quiet || die "checksum mismatch: $spec"
        python3 -m zipfile -e "$f" "$t/w/"
    done
}
dir=$VCUDA_CACHE/cuda-12.4-$key
root=$dir/root

# One installer at a time (setup.sh, the Caffe and image builders and the VM tests may all
# ask at once): a second one would delete the first's half-made tree under it.
cache_lock cuda12
if [ ! -x "$root/bin/nvcc" ]; then
    log "assembling CUDA 12.4 into $dir"
    rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
    t=$dir.tmp
    curl -fsSL --retry 3 -o "$t/tk.deb" "$DEB_URL"
    echo "$DEB_SHA  $t/tk.deb" | sha256sum -c --quiet || die "checksum mismatch: $DEB_URL"
    dpkg-deb -x "$t/tk.deb" "$t/deb"
    fetch_wheels "$t" "${WHEELS[@]}"
    x=$t/deb/usr r=$t/root
    mkdir -p "$r"/{bin,include,lib,nvvm/bin,nvvm/libdevice}
    cp "$x/lib/nvidia-cuda-toolkit/bin/nvcc" "$x"/bin/{cudafe++,ptxas,fatbinary,nvlink,bin2c} "$r/bin/"
    cp -r "$x/lib/nvidia-cuda-toolkit/bin/crt" "$r/bin/"
    cp "$x/lib/nvidia-cuda-toolkit/bin/cicc" "$r/nvvm/bin/"
    cp "$t/w/nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc" "$r/nvvm/libdevice/"
    cp -rn "$t"/w/nvidia/cuda_runtime/include/* "$t"/w/nvidia/cuda_nvcc/include/* "$r/include/"
    cp "$t/w/nvidia/cuda_runtime/lib/libcudart.so.12" "$r/lib/"
    ln -sf libcudart.so.12 "$r/lib/libcudart.so"
    ar rcs "$r/lib/libcudadevrt.a"
    cat >"$r/bin/nvcc.profile" <<'EOP'
TOP              = $(_HERE_)/..
NVVMIR_LIBRARY_DIR = $(TOP)/nvvm/libdevice
LD_LIBRARY_PATH += $(TOP)/lib:
PATH            += $(TOP)/nvvm/bin:$(_HERE_):
INCLUDES        +=  "-I$(TOP)/include" $(_SPACE_)
LIBRARIES        =+ $(_SPACE_) "-L$(TOP)/lib"
EOP
    rm -rf "$t/tk.deb" "$t/deb" "$t/whl" "$t/w"
    publish_dir "$dir"
fi
# NVIDIA's static runtime (what plain `nvcc` links): the oldest cu12 runtime wheel that
# carries libcudart_static.a is 12.9's; objects from nvcc 12.4 link against it (CUDA's
# minor-version compatibility). Added to a toolkit assembled before it was needed too.
STATIC_WHEEL="nvidia-cuda-runtime-cu12==12.9.79 25bba2dfb01d48a9b59ca474a1ac43c6ebf7011f1b0b8cc44f54eb6ac48a96c3"
if [ ! -f "$root/lib/libcudart_static.a" ]; then
    log "adding the CUDA 12 static runtime to $root"
    t=$(mktemp -d "$dir.static.XXXXXX")
    fetch_wheels "$t" "$STATIC_WHEEL"
    cp "$t/w/nvidia/cuda_runtime/lib/libcudart_static.a" "$root/lib/.libcudart_static.a.$$"
    mv "$root/lib/.libcudart_static.a.$$" "$root/lib/libcudart_static.a"
    rm -rf "$t"
fi
# CCCL (Thrust, CUB, libcu++, and the `nv/target` header cuda_fp16.h needs), cuBLAS 12 and
# cuRAND 10 of the same CUDA 12.4 release: their headers, and NVIDIA's libraries to link
# against (programs built here load vcuda's in their place). 12.4.127's CCCL wheel was
# yanked as broken; .post1 replaces it. Added to a toolkit assembled before it was needed.
LIB_WHEELS=(
    "nvidia-cuda-cccl-cu12==12.4.127.post1 2027fa5fc75fbee703bf24e8275a40a605cf94a3e8fef8a7187897d49b34facb"
    "nvidia-cublas-cu12==12.4.5.8 2fc8da60df463fdefa81e323eef2e36489e1c94335b5358bcb38360adf75ac9b"
    "nvidia-curand-cu12==10.3.5.147 a88f583d4e0bb643c49743469964103aa59f7f708d862c3ddb0fc07f851e3b8b"
)
if [ ! -f "$root/lib/libcurand.so" ]; then
    log "adding CCCL, cuBLAS 12 and cuRAND 10 to $root"
    t=$(mktemp -d "$dir.libs.XXXXXX")
    fetch_wheels "$t" "${LIB_WHEELS[@]}"
    w=$t/w/nvidia
    cp -rn "$w"/cuda_cccl/include/* "$w"/cublas/include/* "$w"/curand/include/* "$root/include/"
    cp "$w"/cublas/lib/libcublas{,Lt}.so.12 "$w/curand/lib/libcurand.so.10" "$root/lib/"
    ln -sf libcublas.so.12 "$root/lib/libcublas.so"
    ln -sf libcublasLt.so.12 "$root/lib/libcublasLt.so"
    # Last: its presence marks the step done.
    ln -sf libcurand.so.10 "$root/lib/libcurand.so"
    rm -rf "$t"
fi
echo "$root"
