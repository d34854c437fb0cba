// SPDX-License-Identifier: Apache-2.0 OR MIT
// A shared-memory tree reduction of 2^24 floats, one partial sum per block of 256: the
// computation of bench/cpu-kernels.c's reduce, as an ordinary CUDA program.
#include "common.h"

__global__ void reduce(const float* in, float* out, int n) {
    __shared__ float s[256];
    int t = threadIdx.x, i = blockIdx.x * 256 + t;
    s[t] = i < n ? in[i] : 0.f;
    __syncthreads();
    for (int w = 128; w > 0; w >>= 1) {
        if (t < w) s[t] += s[t + w];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}

int main() {
    const int n = 1 << 24, blocks = n / 256;
    float *in, *out;
    CHECK(cudaMalloc(&in, n * sizeof(float)));
    CHECK(cudaMalloc(&out, blocks * sizeof(float)));
    CHECK(cudaMemset(in, 0, n * sizeof(float)));
    bench("reduction", [&] { reduce<<<blocks, 256>>>(in, out, n); });
    return 0;
}
