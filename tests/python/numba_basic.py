# SPDX-License-Identifier: Apache-2.0 OR MIT
"""A Numba CUDA program (numba-cuda from PyPI) run unchanged through vcuda: @cuda.jit
kernels, shared memory and barriers, atomics, streams, device arrays and host transfers,
and a grid group's sync() (a cooperative launch linked with libcudadevrt.a). With nvJitLink installed (as pip installs numba-cuda[cu13]) kernels link as LTO-IR, and a
kernel compiled with debug=True links as PTX. Prints PASS when every result matches
numpy's."""
import numpy as np
from numba import cuda, float32, int32


@cuda.jit
def saxpy(a, x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]


@cuda.jit
def block_sums(x, out):
    # A shared-memory tree reduction per block.
    buf = cuda.shared.array(128, dtype=float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    buf[t] = x[i] if i < x.size else 0.0
    cuda.syncthreads()
    s = 64
    while s > 0:
        if t < s:
            buf[t] += buf[t + s]
        cuda.syncthreads()
        s //= 2
    if t == 0:
        out[cuda.blockIdx.x] = buf[0]


@cuda.jit
def histogram(values, bins):
    i = cuda.grid(1)
    if i < values.size:
        cuda.atomic.add(bins, values[i] % bins.size, int32(1))


@cuda.jit(debug=True, opt=False)
def scale_debug(x, out):
    # debug=True turns Numba's LTO off: the kernel links as PTX.
    i = cuda.grid(1)
    if i < out.size:
        out[i] = 3.0 * x[i]


@cuda.jit
def grid_phases(slots, sums):
    # Each block writes its slot; after the grid-wide barrier every block reads them all.
    g = cuda.cg.this_grid()
    b = cuda.blockIdx.x
    if cuda.threadIdx.x == 0:
        slots[b] = b + 1
    g.sync()
    if cuda.threadIdx.x == 0:
        s = 0
        for i in range(cuda.gridDim.x):
            s += slots[i]
        sums[b] = s


def main():
    n = 4096
    rng = np.random.default_rng(7)
    x = rng.random(n, dtype=np.float32)
    y = rng.random(n, dtype=np.float32)

    stream = cuda.stream()
    dx = cuda.to_device(x, stream=stream)
    dy = cuda.to_device(y, stream=stream)
    dout = cuda.device_array_like(x, stream=stream)
    saxpy[n // 128, 128, stream](np.float32(2.5), dx, dy, dout)
    out = dout.copy_to_host(stream=stream)
    stream.synchronize()
    assert np.allclose(out, 2.5 * x + y, rtol=1e-6), "saxpy"

    sums = cuda.device_array(n // 128, dtype=np.float32)
    block_sums[n // 128, 128](dx, sums)
    got = sums.copy_to_host()
    want = x.reshape(-1, 128).sum(axis=1)
    assert np.allclose(got, want, rtol=1e-5), "block sums"

    values = rng.integers(0, 1000, size=n, dtype=np.int32)
    bins = cuda.to_device(np.zeros(16, dtype=np.int32))
    histogram[n // 256, 256](cuda.to_device(values), bins)
    assert (bins.copy_to_host() == np.bincount(values % 16, minlength=16)).all(), "histogram"

    dscaled = cuda.device_array_like(x)
    scale_debug[n // 128, 128](dx, dscaled)
    assert np.allclose(dscaled.copy_to_host(), 3.0 * x, rtol=1e-6), "debug kernel"

    blocks = 4
    slots = cuda.to_device(np.zeros(blocks, dtype=np.int32))
    totals = cuda.to_device(np.zeros(blocks, dtype=np.int32))
    grid_phases[blocks, 64](slots, totals)
    assert (totals.copy_to_host() == blocks * (blocks + 1) // 2).all(), "grid sync"

    print("PASS")


if __name__ == "__main__":
    main()
