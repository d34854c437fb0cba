// SPDX-License-Identifier: Apache-2.0 OR MIT
// Why wmma stays interpreted on the CPU executor, in figures: one 256 x 256 x 256 GEMM of
// half inputs into float sums, once with warp matrix operations (each warp a 16 x 16 tile,
// 16 mma_sync along k; the CPU executor interprets it), once with the PTX CUTLASS's sm_80
// kernels use (tiles staged in shared memory, ldmatrix, two mma.sync m16n8k16 per step;
// interpreted too) and once with one thread per element and a plain loop of multiply-adds
// (compiled). All compute the same products; the program checks that they agree and prints
// "BENCH wmma_gemm <s>", "BENCH mma_gemm <s>" and "BENCH fma_gemm <s>".
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

__device__ unsigned smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

__global__ void mma_gemm(const half* a, const half* b, float* c) {
    __shared__ __align__(16) half sa[4][16][24], sb[4][16][24];
    int w = threadIdx.x / 32, lane = threadIdx.x % 32;
    int warp = blockIdx.x * 4 + w, tm = warp / (N / 16), tn = warp % (N / 16);
    float acc[2][4] = {};
    for (int k = 0; k < N; k += 16) {
        for (int i = lane; i < 256; i += 32) {
            sa[w][i / 16][i % 16] = a[(tm * 16 + i / 16) * N + k + i % 16];
            sb[w][i / 16][i % 16] = b[(k + i / 16) * N + tn * 16 + i % 16];
        }
        __syncwarp();
        unsigned fa[4], fb[4];
        int j = lane / 8, r = lane % 8;
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                     : "=r"(fa[0]), "=r"(fa[1]), "=r"(fa[2]), "=r"(fa[3])
                     : "r"(smem(&sa[w][r + 8 * (j % 2)][8 * (j / 2)])));
        // B's k rows 0-7 and 8-15 of columns 0-7, then of columns 8-15.
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                     : "=r"(fb[0]), "=r"(fb[1]), "=r"(fb[2]), "=r"(fb[3])
                     : "r"(smem(&sb[w][r + 8 * (j % 2)][8 * (j / 2)])));
        for (int n = 0; n < 2; n++)
            asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                         "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                         : "+f"(acc[n][0]), "+f"(acc[n][1]), "+f"(acc[n][2]), "+f"(acc[n][3])
                         : "r"(fa[0]), "r"(fa[1]), "r"(fa[2]), "r"(fa[3]), "r"(fb[2 * n]),
                           "r"(fb[2 * n + 1]));
        __syncwarp();
    }
    int g = lane / 4, t = lane % 4;
    for (int n = 0; n < 2; n++)
        for (int i = 0; i < 4; i++)
            c[(tm * 16 + g + 8 * (i / 2)) * N + tn * 16 + n * 8 + 2 * t + i % 2] = acc[n][i];
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
    float *c1, *c2, *c3;
    CHECK(cudaMalloc(&a, N * N * sizeof(half)));
    CHECK(cudaMalloc(&b, N * N * sizeof(half)));
    CHECK(cudaMalloc(&c1, N * N * sizeof(float)));
    CHECK(cudaMalloc(&c2, N * N * sizeof(float)));
    CHECK(cudaMalloc(&c3, N * N * sizeof(float)));
    CHECK(cudaMemcpy(a, ha, N * N * sizeof(half), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(b, hb, N * N * sizeof(half), cudaMemcpyHostToDevice));
    // 256 tiles, a warp each, four warps per block.
    bench("wmma_gemm", [&] { wmma_gemm<<<(N / 16) * (N / 16) / 4, 128>>>(a, b, c1); });
    bench("mma_gemm", [&] { mma_gemm<<<(N / 16) * (N / 16) / 4, 128>>>(a, b, c3); });
    bench("fma_gemm", [&] { fma_gemm<<<dim3(N / 16, N / 16), dim3(16, 16)>>>(a, b, c2); });
    float *r1 = (float*)malloc(N * N * sizeof(float)), *r2 = (float*)malloc(N * N * sizeof(float));
    float *r3 = (float*)malloc(N * N * sizeof(float));
    CHECK(cudaMemcpy(r1, c1, N * N * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(r2, c2, N * N * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(r3, c3, N * N * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < N * N; i++) {
        if (r1[i] != r2[i] || r3[i] != r2[i]) {
            fprintf(stderr, "element %d: wmma %g, mma %g, fma %g\n", i, r1[i], r3[i], r2[i]);
            return 1;
        }
    }
    return 0;
}
