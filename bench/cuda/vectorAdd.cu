// SPDX-License-Identifier: Apache-2.0 OR MIT
// vectorAdd of 2^24 floats in blocks of 256: the computation of bench/cpu-kernels.c's
// vector_add, as an ordinary CUDA program (three cudaMalloc'd buffers).
#include "common.h"

__global__ void vector_add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

int main() {
    const int n = 1 << 24;
    const size_t bytes = n * sizeof(float);
    float *a, *b, *c;
    CHECK(cudaMalloc(&a, bytes));
    CHECK(cudaMalloc(&b, bytes));
    CHECK(cudaMalloc(&c, bytes));
    CHECK(cudaMemset(a, 0, bytes));
    CHECK(cudaMemset(b, 0, bytes));
    bench("vectorAdd", [&] { vector_add<<<(n + 255) / 256, 256>>>(a, b, c, n); });
    return 0;
}
