// SPDX-License-Identifier: Apache-2.0 OR MIT
// Launch errors, an illegal address (sticky until cudaDeviceReset), and recovery.
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
    cudaStream_t bogus = (cudaStream_t)0x7777000;
    ok<<<1, 32, 0, bogus>>>(d);
    EXPECT(cudaGetLastError() == cudaErrorInvalidResourceHandle);
    ok<<<1, 64>>>(d);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());

    // An out-of-bounds store: asynchronous, then sticky.
    oob<<<1, 1>>>(d, 1LL << 30);
    EXPECT(cudaDeviceSynchronize() == cudaErrorIllegalAddress);
    EXPECT(cudaGetLastError() == cudaErrorIllegalAddress);
    int h[4];
    EXPECT(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost) == cudaErrorIllegalAddress);
    void *p;
    EXPECT(cudaMalloc(&p, 16) == cudaErrorIllegalAddress);

    // A reset clears it; old allocations are gone.
    CHECK(cudaDeviceReset());
    CHECK(cudaGetLastError());
    CHECK(cudaMalloc(&d, 64 * sizeof(int)));
    ok<<<1, 64>>>(d);
    CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    EXPECT(h[3] == 3);
    return finish();
}
