# SPDX-License-Identifier: Apache-2.0 OR MIT
"""CuPy from PyPI, unchanged, through vcuda: its extension modules carry NVIDIA's static
CUDA runtime, which drives vcuda's libcuda.so.1; kernels are compiled with NVRTC (to PTX
under `vcuda run --executor cpu`); matmul goes to vcuda's cuBLAS and cupy.random to vcuda's
cuRAND. Each result is checked against NumPy. Prints PASS."""
import numpy as np
import cupy as cp

failures = 0


def check(what, ok):
    global failures
    if not ok:
        failures += 1
        print(f"FAIL: {what}")


check("a device", cp.cuda.runtime.getDeviceCount() == 1)
# The runtime CuPy carries: 13xxx for cupy-cuda13x, 12xxx for cupy-cuda12x.
print(f"CUDA runtime {cp.cuda.runtime.runtimeGetVersion()}")

# Creation, elementwise kernels, reductions (CUB's device reduce for full reductions).
a = cp.arange(1000, dtype=cp.float32)
h = np.arange(1000, dtype=np.float32)
check("arange", np.array_equal(a.get(), h))
check("elementwise", np.allclose((a * 2 + 1).get(), h * 2 + 1))
check("sum", float(a.sum()) == float(h.sum()))
check("max", float(a.max()) == 999.0)
m = cp.arange(12, dtype=cp.float64).reshape(3, 4)
check("sum(axis=0)", m.sum(axis=0).get().tolist() == [12.0, 15.0, 18.0, 21.0])
check("mean(axis=1)", np.allclose(m.mean(axis=1).get(), [1.5, 5.5, 9.5]))

# User kernels: ElementwiseKernel, ReductionKernel, RawKernel (NVRTC).
sq = cp.ElementwiseKernel("float32 x", "float32 y", "y = x * x", "sq")
check("ElementwiseKernel", np.allclose(sq(a).get(), h * h))
l2 = cp.ReductionKernel("float32 x", "float32 y", "x * x", "a + b", "y = sqrt(a)", "0", "l2")
check("ReductionKernel", abs(float(l2(a[:10])) - float(np.sqrt((h[:10] ** 2).sum()))) < 1e-4)
raw = cp.RawKernel(r'''
extern "C" __global__ void axpy(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += a * x[i];
}''', "axpy")
y = cp.ones(1000, dtype=cp.float32)
raw((4,), (256,), (cp.float32(3.0), a, y, cp.int32(1000)))
check("RawKernel", np.allclose(y.get(), 1 + 3 * h))

# Sorting: CuPy's Thrust module, whose fat binary in cupy-cuda12x holds cubins for twelve
# GPU generations (72 MB; vcuda sends the device's and the PTX).
perm = np.random.default_rng(2).permutation(5000).astype(np.int32)
check("sort", np.array_equal(cp.sort(cp.asarray(perm)).get(), np.arange(5000, dtype=np.int32)))
check("argsort", np.array_equal(cp.argsort(cp.asarray(perm)).get(), np.argsort(perm)))

# cuBLAS (vcuda's) and cuRAND (vcuda's).
x = cp.asarray(np.random.default_rng(0).standard_normal((64, 48)), dtype=cp.float32)
w = cp.asarray(np.random.default_rng(1).standard_normal((48, 32)), dtype=cp.float32)
check("matmul", np.allclose((x @ w).get(), x.get() @ w.get(), atol=1e-4))
r = cp.random.default_rng(7).random(10000)
check("random in [0, 1)", bool(((r >= 0) & (r < 1)).all()) and 0.45 < float(r.mean()) < 0.55)
check("seeded random repeats", np.array_equal(cp.random.default_rng(7).random(5).get(), r[:5].get()))

# What vcuda does not provide fails clearly, naming the library.
try:
    cp.fft.fft(cp.ones(8, dtype=cp.complex64))
    check("cuFFT is missing", False)
except Exception as e:
    check(f"cuFFT's error names it: {e!r}", "cufft" in repr(e).lower())

print("PASS" if failures == 0 else f"FAIL: {failures} check(s) failed")
