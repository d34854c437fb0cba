// SPDX-License-Identifier: Apache-2.0 OR MIT
// A 16x16-tiled SGEMM of 512x512 matrices: the computation of bench/cpu-kernels.c's sgemm,
// as an ordinary CUDA program.
#include "common.h"

#define TILE 16

__global__ void sgemm(const float* a, const float* b, float* c, int n) {
    __shared__ float as[TILE][TILE], bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.f;
    for (int k0 = 0; k0 < n; k0 += TILE) {
        as[threadIdx.y][threadIdx.x] = a[row * n + k0 + threadIdx.x];
        bs[threadIdx.y][threadIdx.x] = b[(k0 + threadIdx.y) * n + col];
        __syncthreads();
        for (int k = 0; k < TILE; k++) acc += as[threadIdx.y][k] * bs[k][threadIdx.x];
        __syncthreads();
    }
    c[row * n + col] = acc;
}

int main() {
    const int n = 512;
    const size_t bytes = n * n * sizeof(float);
    float *a, *b, *c;
    CHECK(cudaMalloc(&a, bytes));
    CHECK(cudaMalloc(&b, bytes));
    CHECK(cudaMalloc(&c, bytes));
    CHECK(cudaMemset(a, 0, bytes));
    CHECK(cudaMemset(b, 0, bytes));
    dim3 block(TILE, TILE), grid(n / TILE, n / TILE);
    bench("sgemm", [&] { sgemm<<<grid, block>>>(a, b, c, n); });
    return 0;
}
