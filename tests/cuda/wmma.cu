// SPDX-License-Identifier: Apache-2.0 OR MIT
// Warp matrix multiply-accumulate (nvcuda::wmma): one warp computes D = A B + C for tiles of
// every element type the tensor cores take, loaded in row- and column-major layouts with
// leading dimensions wider than the tile, scaled element-wise in the accumulator fragment,
// and stored in both layouts. Checked against host products (integer and double results
// exactly; half, bf16 and tf32 inputs are exact in float here, so float sums agree to
// rounding).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>
#include "common.h"

using namespace nvcuda;

// Half inputs, float accumulator: A row-major (lda 24), B column-major (ldb 20), C loaded
// row-major, D = 2 (A B + C) stored column-major (ldd 18).
__global__ void half_gemm(const half *a, const half *b, const float *c, float *d) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::load_matrix_sync(fa, a, 24);
    wmma::load_matrix_sync(fb, b, 20);
    wmma::load_matrix_sync(fc, c, 16, wmma::mem_row_major);
    wmma::mma_sync(fc, fa, fb, fc);
    for (int i = 0; i < fc.num_elements; i++) fc.x[i] *= 2.0f;
    wmma::store_matrix_sync(d, fc, 18, wmma::mem_col_major);
}

// Half accumulator, 32 x 8 x 16.
__global__ void half_acc(const half *a, const half *b, half *d) {
    wmma::fragment<wmma::matrix_a, 32, 8, 16, half, wmma::col_major> fa;
    wmma::fragment<wmma::matrix_b, 32, 8, 16, half, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 32, 8, 16, half> fc;
    wmma::fill_fragment(fc, __float2half(1.0f));
    wmma::load_matrix_sync(fa, a, 32);
    wmma::load_matrix_sync(fb, b, 8);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(d, fc, 8, wmma::mem_row_major);
}

__global__ void bf16_gemm(const __nv_bfloat16 *a, const __nv_bfloat16 *b, float *d) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(d, fc, 16, wmma::mem_row_major);
}

__global__ void tf32_gemm(const float *a, const float *b, float *d) {
    wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> fc;
    wmma::fill_fragment(fc, 0.5f);
    wmma::load_matrix_sync(fa, a, 8);
    wmma::load_matrix_sync(fb, b, 8);
    for (int i = 0; i < fa.num_elements; i++) fa.x[i] = wmma::__float_to_tf32(fa.x[i]);
    for (int i = 0; i < fb.num_elements; i++) fb.x[i] = wmma::__float_to_tf32(fb.x[i]);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(d, fc, 16, wmma::mem_row_major);
}

__global__ void int8_gemm(const signed char *a, const signed char *b, const int *c, int *d) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, signed char, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, signed char, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, int> fc;
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::load_matrix_sync(fc, c, 16, wmma::mem_col_major);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(d, fc, 16, wmma::mem_row_major);
}

__global__ void double_gemm(const double *a, const double *b, double *d) {
    wmma::fragment<wmma::matrix_a, 8, 8, 4, double, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 8, 8, 4, double, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 8, 8, 4, double> fc;
    wmma::fill_fragment(fc, -1.0);
    wmma::load_matrix_sync(fa, a, 4);
    wmma::load_matrix_sync(fb, b, 4);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(d, fc, 8, wmma::mem_row_major);
}

template <typename T> static T *upload(const T *h, size_t n) {
    T *d;
    CHECK(cudaMalloc(&d, n * sizeof(T)));
    CHECK(cudaMemcpy(d, h, n * sizeof(T), cudaMemcpyHostToDevice));
    return d;
}

template <typename T> static void download(T *h, const T *d, size_t n) {
    CHECK(cudaMemcpy(h, d, n * sizeof(T), cudaMemcpyDeviceToHost));
}

// Small integers and quarters: exact in half, bf16, tf32 and float.
static float val(int i, int j, int s) { return ((i * 7 + j * 3 + s) % 9 - 4) * 0.25f; }

int main() {
    // half x half + float, 16 x 16 x 16.
    {
        static half a[16 * 24], b[16 * 20];
        static float af[16][16], bf[16][16], c[16 * 16], d[16 * 18];
        for (int i = 0; i < 16; i++)
            for (int k = 0; k < 16; k++) {
                af[i][k] = val(i, k, 1);
                a[i * 24 + k] = __float2half(af[i][k]);
                bf[k][i] = val(k, i, 2);  // B[k][j] with j = i
                b[i * 20 + k] = __float2half(bf[k][i]);  // column j = i
                c[i * 16 + k] = val(i, k, 3);
            }
        half *da = upload(a, 16 * 24), *db = upload(b, 16 * 20);
        float *dc = upload(c, 256), *dd;
        CHECK(cudaMalloc(&dd, sizeof d));
        half_gemm<<<1, 32>>>(da, db, dc, dd);
        CHECK(cudaGetLastError());
        download(d, dd, 16 * 18);
        int bad = 0;
        for (int i = 0; i < 16; i++)
            for (int j = 0; j < 16; j++) {
                float s = c[i * 16 + j];
                for (int k = 0; k < 16; k++) s += af[i][k] * bf[k][j];
                if (!close_enough(d[j * 18 + i], 2 * s)) bad++;
            }
        if (bad) printf("half_gemm: %d wrong\n", bad);
        EXPECT(bad == 0);
        CHECK(cudaFree(da));
        CHECK(cudaFree(db));
        CHECK(cudaFree(dc));
        CHECK(cudaFree(dd));
    }
    // Half accumulator, 32 x 8 x 16: A column-major (32 x 16), B row-major (16 x 8).
    {
        static half a[16 * 32], b[16 * 8], d[32 * 8];
        static float af[32][16], bf[16][8];
        for (int i = 0; i < 32; i++)
            for (int k = 0; k < 16; k++) {
                af[i][k] = val(i, k, 4);
                a[k * 32 + i] = __float2half(af[i][k]);
            }
        for (int k = 0; k < 16; k++)
            for (int j = 0; j < 8; j++) {
                bf[k][j] = val(k, j, 5);
                b[k * 8 + j] = __float2half(bf[k][j]);
            }
        half *da = upload(a, 16 * 32), *db = upload(b, 16 * 8), *dd;
        CHECK(cudaMalloc(&dd, sizeof d));
        half_acc<<<1, 32>>>(da, db, dd);
        CHECK(cudaGetLastError());
        download(d, dd, 32 * 8);
        int bad = 0;
        for (int i = 0; i < 32; i++)
            for (int j = 0; j < 8; j++) {
                float s = 1;
                for (int k = 0; k < 16; k++) s += af[i][k] * bf[k][j];
                if (__half2float(d[i * 8 + j]) != s) bad++;
            }
        if (bad) printf("half_acc: %d wrong\n", bad);
        EXPECT(bad == 0);
        CHECK(cudaFree(da));
        CHECK(cudaFree(db));
        CHECK(cudaFree(dd));
    }
    // bf16 and tf32.
    {
        static __nv_bfloat16 a[256], b[256];
        static float ft[16 * 8], gt[16 * 8], af[16][16], bf[16][16], d[256];
        for (int i = 0; i < 16; i++)
            for (int k = 0; k < 16; k++) {
                af[i][k] = val(i, k, 6);
                bf[i][k] = val(i, k, 7);
                a[i * 16 + k] = __float2bfloat16(af[i][k]);
                b[i * 16 + k] = __float2bfloat16(bf[i][k]);  // row-major B
            }
        __nv_bfloat16 *da = upload(a, 256), *db = upload(b, 256);
        float *dd;
        CHECK(cudaMalloc(&dd, sizeof d));
        bf16_gemm<<<1, 32>>>(da, db, dd);
        CHECK(cudaGetLastError());
        download(d, dd, 256);
        int bad = 0;
        for (int i = 0; i < 16; i++)
            for (int j = 0; j < 16; j++) {
                float s = 0;
                for (int k = 0; k < 16; k++) s += af[i][k] * bf[k][j];
                if (!close_enough(d[i * 16 + j], s)) bad++;
            }
        // tf32: A 16 x 8 row-major, B 8 x 16 column-major (ld 8 both).
        for (int i = 0; i < 16; i++)
            for (int k = 0; k < 8; k++) {
                ft[i * 8 + k] = val(i, k, 8);
                gt[i * 8 + k] = val(k, i, 9);  // column j = i of B
            }
        float *dft = upload(ft, 128), *dgt = upload(gt, 128);
        tf32_gemm<<<1, 32>>>(dft, dgt, dd);
        CHECK(cudaGetLastError());
        download(d, dd, 256);
        for (int i = 0; i < 16; i++)
            for (int j = 0; j < 16; j++) {
                float s = 0.5f;
                for (int k = 0; k < 8; k++) s += ft[i * 8 + k] * gt[j * 8 + k];
                if (!close_enough(d[i * 16 + j], s)) bad++;
            }
        if (bad) printf("bf16/tf32: %d wrong\n", bad);
        EXPECT(bad == 0);
        for (void *p : {(void *)da, (void *)db, (void *)dd, (void *)dft, (void *)dgt}) CHECK(cudaFree(p));
    }
    // int8 (exact), C column-major.
    {
        static signed char a[256], b[256];
        static int c[256], d[256];
        for (int i = 0; i < 256; i++) {
            a[i] = (signed char)((i * 37) % 255 - 127);
            b[i] = (signed char)((i * 53) % 255 - 127);
            c[i] = i * 1000 - 100000;
        }
        signed char *da = upload(a, 256), *db = upload(b, 256);
        int *dc = upload(c, 256), *dd;
        CHECK(cudaMalloc(&dd, sizeof d));
        int8_gemm<<<1, 32>>>(da, db, dc, dd);
        CHECK(cudaGetLastError());
        download(d, dd, 256);
        int bad = 0;
        for (int i = 0; i < 16; i++)
            for (int j = 0; j < 16; j++) {
                int s = c[j * 16 + i];
                for (int k = 0; k < 16; k++) s += a[i * 16 + k] * b[j * 16 + k];
                if (d[i * 16 + j] != s) bad++;
            }
        if (bad) printf("int8: %d wrong\n", bad);
        EXPECT(bad == 0);
        for (void *p : {(void *)da, (void *)db, (void *)dc, (void *)dd}) CHECK(cudaFree(p));
    }
    // double, 8 x 8 x 4 (exact).
    {
        static double a[32], b[32], d[64];
        for (int i = 0; i < 32; i++) {
            a[i] = i * 0.5 - 3;
            b[i] = 7 - i * 0.25;
        }
        double *da = upload(a, 32), *db = upload(b, 32), *dd;
        CHECK(cudaMalloc(&dd, sizeof d));
        double_gemm<<<1, 32>>>(da, db, dd);
        CHECK(cudaGetLastError());
        download(d, dd, 64);
        int bad = 0;
        for (int i = 0; i < 8; i++)
            for (int j = 0; j < 8; j++) {
                double s = -1;
                for (int k = 0; k < 4; k++) s += a[i * 4 + k] * b[j * 4 + k];
                if (d[i * 8 + j] != s) bad++;
            }
        if (bad) printf("double: %d wrong\n", bad);
        EXPECT(bad == 0);
        for (void *p : {(void *)da, (void *)db, (void *)dd}) CHECK(cudaFree(p));
    }
    return finish();
}
