// SPDX-License-Identifier: Apache-2.0 OR MIT
// Launch errors, an illegal address (sticky), and what cudaDeviceReset does after it.
#include "common.h"

__global__ void ok(int *p) { p[threadIdx.x] = threadIdx.x; }
__global__ void oob(int *p, long long off) { p[off] = 1; }

int main() {
    int *d;
    CHECK(cudaMalloc(&d, 256 * sizeof(int)));
    ok<<<1, 2048>>>(d);
    EXPECT(cudaGetLastError() == cudaErrorInvalidConfiguration);
    ok<<<0, 32>>>(d);
    EXPECT(cudaPeekAtLastError() == cudaErrorInvalidConfiguration);
    EXPECT(cudaGetLastError() == cudaErrorInvalidConfiguration);
    ok<<<1, dim3(32, 32, 2)>>>(d);
    EXPECT(cudaGetLastError() == cudaErrorInvalidConfiguration);
    if (getenv("VCUDA_SOCKET")) {
        // A made-up stream handle: vcuda refuses it; NVIDIA's runtime may crash on it
        // (undefined behaviour), so only under vcuda run.
        cudaStream_t bogus = (cudaStream_t)0x7777000;
        ok<<<1, 32, 0, bogus>>>(d);
        EXPECT(cudaGetLastError() == cudaErrorInvalidResourceHandle);
    }
    ok<<<1, 64>>>(d);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());

    // A store to the null page: asynchronous, then sticky. (Not an offset from `d`: on a
    // GPU whose kernels reach host memory (HMM) that address may be the process's own.)
    oob<<<1, 1>>>((int *)0x1000, 4);
    EXPECT(cudaDeviceSynchronize() == cudaErrorIllegalAddress);
    EXPECT(cudaGetLastError() == cudaErrorIllegalAddress);
    int h[4];
    EXPECT(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost) == cudaErrorIllegalAddress);
    void *p;
    EXPECT(cudaMalloc(&p, 16) == cudaErrorIllegalAddress);

    // CUDA documents such an error as leaving the process unusable ("the process must be
    // terminated and relaunched"): NVIDIA's driver then refuses a new context and the reset
    // fails with the same error (so does vcuda's CUDA executor). vcuda's CPU executor
    // recovers: old allocations are gone, new work runs.
    cudaError_t reset = cudaDeviceReset();
    if (reset != cudaSuccess) {
        EXPECT(reset == cudaErrorIllegalAddress);
        printf("reset: %s (the process must be relaunched)\n", cudaGetErrorName(reset));
        return finish();
    }
    // (The failed calls above left their error as the thread's last error, which a reset
    // does not clear.)
    EXPECT(cudaGetLastError() == cudaErrorIllegalAddress);
    CHECK(cudaGetLastError());
    CHECK(cudaMalloc(&d, 64 * sizeof(int)));
    ok<<<1, 64>>>(d);
    CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    EXPECT(h[3] == 3);
    return finish();
}
