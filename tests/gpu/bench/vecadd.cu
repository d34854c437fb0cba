// SPDX-License-Identifier: Apache-2.0 OR MIT
// vectorAdd in steady state: copy two vectors in, add, copy the result out; median time per
// iteration, plus the same with the kernel alone.
#include <cmath>
#include "bench.h"

__global__ void vectorAdd(const float *A, const float *B, float *C, int n) {
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n) C[i] = A[i] + B[i];
}

int main(int argc, char **argv) {
    int n = quick(argc, argv) ? (1 << 16) : (1 << 24);
    int iters = quick(argc, argv) ? 5 : 30;
    size_t size = (size_t)n * sizeof(float);
    std::vector<float> a(n), b(n), c(n);
    for (int i = 0; i < n; i++) {
        a[i] = (float)(i % 1000) * 0.5f;
        b[i] = (float)(i % 77);
    }
    float *da, *db, *dc;
    CHECK(cudaMalloc(&da, size));
    CHECK(cudaMalloc(&db, size));
    CHECK(cudaMalloc(&dc, size));
    int threads = 256, blocks = (n + threads - 1) / threads;
    std::vector<double> full, kernel;
    for (int it = 0; it < iters + 1; it++) {
        double t0 = now_us();
        CHECK(cudaMemcpy(da, a.data(), size, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(db, b.data(), size, cudaMemcpyHostToDevice));
        double t1 = now_us();
        vectorAdd<<<blocks, threads>>>(da, db, dc, n);
        CHECK(cudaDeviceSynchronize());
        double t2 = now_us();
        CHECK(cudaMemcpy(c.data(), dc, size, cudaMemcpyDeviceToHost));
        double t3 = now_us();
        if (it) {
            full.push_back(t3 - t0);
            kernel.push_back(t2 - t1);
        }
    }
    for (int i = 0; i < n; i++)
        if (fabsf(a[i] + b[i] - c[i]) > 1e-5f) {
            printf("FAIL: element %d\n", i);
            return 1;
        }
    printf("vectorAdd of %d elements ok\n", n);
    bench("vecadd_iteration", median(full) / 1e3, "ms");
    bench("vecadd_kernel_sync", median(kernel) / 1e3, "ms");
    CHECK(cudaFree(da));
    CHECK(cudaFree(db));
    CHECK(cudaFree(dc));
    printf("PASS\n");
    return 0;
}
