// SPDX-License-Identifier: Apache-2.0 OR MIT
// Why wmma stays interpreted on the CPU executor, in figures: one 256 x 256 x 256 GEMM of
// half inputs into float sums, once with warp matrix operations (each warp a 16 x 16 tile,
// 16 mma_sync along k; the CPU executor interprets it) and once with one thread per element
// and a plain loop of multiply-adds (compiled). Both compute the same products; the program
// checks that they agree and prints "BENCH wmma_gemm <s>" and "BENCH fma_gemm <s>".
#include <cuda_fp16.h>
#include <mma.h>
#include "common.h"

using namespace nvcuda;

static const int N = 256;

__global__ void wmma_gemm(const half* a, const half* b, float* c) {
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int tm = warp / (N / 16), tn = warp % (N / 16);
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    for (int k = 0; k < N; k += 16) {
        wmma::load_matrix_sync(fa, a + tm * 16 * N + k, N);
        wmma::load_matrix_sync(fb, b + k * N + tn * 16, N);
        wmma::mma_sync(fc, fa, fb, fc);
    }
    wmma::store_matrix_sync(c + tm * 16 * N + tn * 16, fc, N, wmma::mem_row_major);
}

__global__ void fma_gemm(const half* a, const half* b, float* c) {
    int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    float s = 0.0f;
    for (int k = 0; k < N; k++) s += __half2float(a[row * N + k]) * __half2float(b[k * N + col]);
    c[row * N + col] = s;
}

int main() {
    half *ha = (half*)malloc(N * N * sizeof(half)), *hb = (half*)malloc(N * N * sizeof(half));
    // Small integers: every product and sum is exact in float, whatever the order.
    for (int i = 0; i < N * N; i++) {
        ha[i] = __float2half((float)(i % 7 - 3));
        hb[i] = __float2half((float)(i % 5 - 2));
    }
    half *a, *b;
    float *c1, *c2;
    CHECK(cudaMalloc(&a, N * N * sizeof(half)));
    CHECK(cudaMalloc(&b, N * N * sizeof(half)));
    CHECK(cudaMalloc(&c1, N * N * sizeof(float)));
    CHECK(cudaMalloc(&c2, N * N * sizeof(float)));
    CHECK(cudaMemcpy(a, ha, N * N * sizeof(half), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(b, hb, N * N * sizeof(half), cudaMemcpyHostToDevice));
    // 256 tiles, a warp each, four warps per block.
    bench("wmma_gemm", [&] { wmma_gemm<<<(N / 16) * (N / 16) / 4, 128>>>(a, b, c1); });
    bench("fma_gemm", [&] { fma_gemm<<<dim3(N / 16, N / 16), dim3(16, 16)>>>(a, b, c2); });
    float *r1 = (float*)malloc(N * N * sizeof(float)), *r2 = (float*)malloc(N * N * sizeof(float));
    CHECK(cudaMemcpy(r1, c1, N * N * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(r2, c2, N * N * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < N * N; i++) {
        if (r1[i] != r2[i]) {
            fprintf(stderr, "element %d: wmma %g, fma %g\n", i, r1[i], r2[i]);
            return 1;
        }
    }
    return 0;
}
