// SPDX-License-Identifier: Apache-2.0 OR MIT
// vectorAdd, as in the CUDA samples.
#include <vector>
#include "common.h"

__global__ void vectorAdd(const float *A, const float *B, float *C, int n) {
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n) C[i] = A[i] + B[i] + 0.0f;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 50000;
    size_t size = n * sizeof(float);
    std::vector<float> a(n), b(n), c(n);
    srand(1);
    for (int i = 0; i < n; i++) {
        a[i] = rand() / (float)RAND_MAX;
        b[i] = rand() / (float)RAND_MAX;
    }
    float *da, *db, *dc;
    CHECK(cudaMalloc(&da, size));
    CHECK(cudaMalloc(&db, size));
    CHECK(cudaMalloc(&dc, size));
    CHECK(cudaMemcpy(da, a.data(), size, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(db, b.data(), size, cudaMemcpyHostToDevice));
    int threads = 256, blocks = (n + threads - 1) / threads;
    printf("CUDA kernel launch with %d blocks of %d threads\n", blocks, threads);
    vectorAdd<<<blocks, threads>>>(da, db, dc, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(c.data(), dc, size, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++)
        if (fabsf(a[i] + b[i] - c[i]) > 1e-5f) {
            printf("FAIL: element %d: %f + %f != %f\n", i, a[i], b[i], c[i]);
            return 1;
        }
    CHECK(cudaFree(da));
    CHECK(cudaFree(db));
    CHECK(cudaFree(dc));
    return finish();
}
