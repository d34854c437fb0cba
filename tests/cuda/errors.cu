// SPDX-License-Identifier: Apache-2.0 OR MIT
// Launch errors, an illegal address (sticky), and what cudaDeviceReset does after it.
#include "common.h"

__global__ void ok(int *p) { p[threadIdx.x] = threadIdx.x; }
__global__ void oob(int *p, long long off) { p[off] = 1; }
// An instruction vcuda's CPU executor does not run (a GPU does: a surface reduction):
// there the launch fails asynchronously with cudaErrorNotSupported, which is not sticky.
__global__ void unsupported(int *p, unsigned long long surface) {
    asm volatile("sured.b.add.1d.u32.trap [%0, {%1}], %2;" ::"l"(surface), "r"(0), "r"(1)
                 : "memory");
    p[threadIdx.x] = 1;
}

// The first pageable copy big enough for vcuda's staging region, right after a kernel failed
// asynchronously: the library shares the region with its own call, which must leave the
// pending error for the copy to report (it used to take it, drop it and give up staging).
static void async_error_survives_staging(int *d) {
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    if (!vcuda_runtime() || strcmp(prop.name, "vcuda CPU reference device") != 0)
        return;
    const size_t n = 64 << 10;
    char *dev;
    CHECK(cudaMalloc(&dev, n));
    static char src[64 << 10], back[64 << 10];
    for (size_t i = 0; i < n; i++) src[i] = (char)(i * 7);
    unsupported<<<1, 32>>>(d, 0);
    EXPECT(cudaGetLastError() == cudaSuccess);
    EXPECT(cudaMemcpy(dev, src, n, cudaMemcpyHostToDevice) == cudaErrorNotSupported);
    EXPECT(cudaGetLastError() == cudaErrorNotSupported);
    // Not sticky: copies work again, through the staging region.
    CHECK(cudaMemcpy(dev, src, n, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(back, dev, n, cudaMemcpyDeviceToHost));
    EXPECT(memcmp(src, back, n) == 0);
    CHECK(cudaFree(dev));
}

// A launch configuration the device cannot run: CUDA 12's runtime calls it an invalid
// configuration, CUDA 13.0's an invalid value (measured on an H100, driver 580).
#if CUDART_VERSION >= 13000
static const cudaError_t bad_config = cudaErrorInvalidValue;
#else
static const cudaError_t bad_config = cudaErrorInvalidConfiguration;
#endif

int main() {
    int *d;
    CHECK(cudaMalloc(&d, 256 * sizeof(int)));
    ok<<<1, 2048>>>(d);
    EXPECT(cudaGetLastError() == bad_config);
    ok<<<0, 32>>>(d);
    EXPECT(cudaPeekAtLastError() == bad_config);
    EXPECT(cudaGetLastError() == bad_config);
    ok<<<1, dim3(32, 32, 2)>>>(d);
    EXPECT(cudaGetLastError() == bad_config);
    ok<<<dim3(1, 70000), 32>>>(d);
    EXPECT(cudaGetLastError() == bad_config);
    if (vcuda_runtime()) {
        // A made-up stream handle: vcuda refuses it; NVIDIA's runtime may crash on it
        // (undefined behaviour), so only under vcuda run.
        cudaStream_t bogus = (cudaStream_t)0x7777000;
        ok<<<1, 32, 0, bogus>>>(d);
        EXPECT(cudaGetLastError() == cudaErrorInvalidResourceHandle);
    }
    ok<<<1, 64>>>(d);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    async_error_survives_staging(d);

    // A store to the null page: asynchronous, then sticky. (Not an offset from `d`: on a
    // GPU whose kernels reach host memory (HMM) that address may be the process's own.)
    oob<<<1, 1>>>((int *)0x1000, 4);
    EXPECT(cudaDeviceSynchronize() == cudaErrorIllegalAddress);
    EXPECT(cudaGetLastError() == cudaErrorIllegalAddress);
    int h[4];
    EXPECT(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost) == cudaErrorIllegalAddress);
    void *p;
    EXPECT(cudaMalloc(&p, 16) == cudaErrorIllegalAddress);
    // The driver API sees the same fault: a new context is refused (NVIDIA's driver fails
    // the reset of another context so; vcuda's libcuda.so.1 answers with the fault).
    if (void *lib = dlopen("libcuda.so.1", RTLD_NOW)) {
        typedef int (*CtxCreate)(void **, unsigned, int);
        auto create = (CtxCreate)dlsym(lib, "cuCtxCreate_v2");
        void *ctx = nullptr;
        int r = create ? create(&ctx, 0, 0) : -1;
        EXPECT(r != 0);
        if (getenv("VCUDA_SOCKET")) EXPECT(r == 700);
    }

    // CUDA documents such an error as leaving the process unusable ("the process must be
    // terminated and relaunched"). vcuda's CUDA executor fails the reset with the same error;
    // NVIDIA's runtime (13.0, H100, driver 580) resets, then answers every call with
    // cudaErrorDevicesUnavailable. vcuda's CPU executor recovers: old allocations are gone,
    // new work runs.
    cudaError_t reset = cudaDeviceReset();
    if (reset != cudaSuccess) {
        EXPECT(reset == cudaErrorIllegalAddress);
        printf("reset: the process must be relaunched\n");
        return finish();
    }
    // (The failed calls above left their error as the thread's last error, which a reset
    // does not clear.)
    EXPECT(cudaGetLastError() == cudaErrorIllegalAddress);
    CHECK(cudaGetLastError());
    cudaError_t m = cudaMalloc(&d, 64 * sizeof(int));
    if (m == cudaErrorDevicesUnavailable) {
        printf("reset: the process must be relaunched\n");
        return finish();
    }
    CHECK(m);
    ok<<<1, 64>>>(d);
    CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    EXPECT(h[3] == 3);
    return finish();
}
