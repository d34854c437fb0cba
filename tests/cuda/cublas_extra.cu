// vcuda-test: libs=cublas,curand
// SPDX-License-Identifier: Apache-2.0 OR MIT
// More cuBLAS through vcuda: GemmEx with half inputs, pointer-array batched GEMM, batched
// LU factorization and solve, complex GEMM and dot products, SYRK, SYMV, GER, ROT, SWAP,
// ISAMIN, math mode, and a loop of GEMMs posted without round trips. Checked against host
// references; prints PASS/FAIL lines and exits non-zero on failure.
#include <cublas_v2.h>
#include <cuComplex.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int failures = 0;

static void check(bool ok, const char *what) {
    printf("%s %s\n", ok ? "PASS" : "FAIL", what);
    if (!ok) failures++;
}

#define CK(call)                                                                    \
    do {                                                                            \
        cublasStatus_t s_ = (call);                                                 \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                          \
            printf("FAIL %s:%d %s -> %d\n", __FILE__, __LINE__, #call, (int)s_);  \
            exit(1);                                                                \
        }                                                                           \
    } while (0)

template <class T> static T *dev(const T *h, size_t n) {
    T *d;
    cudaMalloc(&d, n * sizeof(T));
    cudaMemcpy(d, h, n * sizeof(T), cudaMemcpyHostToDevice);
    return d;
}

template <class T> static void host(T *h, const T *d, size_t n) {
    cudaMemcpy(h, d, n * sizeof(T), cudaMemcpyDeviceToHost);
}

static void test_gemm_ex_half(cublasHandle_t h) {
    const int m = 4, n = 3, k = 5;
    __half A[m * k], B[k * n];
    float Af[m * k], Bf[k * n], C[m * n];
    for (int i = 0; i < m * k; i++) Af[i] = (float)((i * 7) % 11) / 4 - 1;
    for (int i = 0; i < k * n; i++) Bf[i] = (float)((i * 5) % 9) / 2 - 2;
    for (int i = 0; i < m * k; i++) A[i] = __float2half(Af[i]);
    for (int i = 0; i < k * n; i++) B[i] = __float2half(Bf[i]);
    __half *dA = dev(A, m * k), *dB = dev(B, k * n);
    float *dC;
    cudaMalloc(&dC, sizeof C);
    float one = 1, zero = 0;
    CK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, dA, CUDA_R_16F, m, dB, CUDA_R_16F,
                    k, &zero, dC, CUDA_R_32F, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    host(C, dC, m * n);
    bool ok = true;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            float s = 0;
            for (int p = 0; p < k; p++) s += Af[i + p * m] * Bf[p + j * k];
            ok &= fabsf(C[i + j * m] - s) < 1e-4f;
        }
    check(ok, "gemmEx f16 x f16 -> f32");
    // A combination an executor may lack (bf16 inputs): either it runs, or cuBLAS says
    // CUBLAS_STATUS_NOT_SUPPORTED right away; never a success that fails later.
    cublasStatus_t st = cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, dA, CUDA_R_16BF,
                                     m, dB, CUDA_R_16BF, k, &zero, dC, CUDA_R_32F, m,
                                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    check(st == CUBLAS_STATUS_NOT_SUPPORTED ||
              (st == CUBLAS_STATUS_SUCCESS && cudaDeviceSynchronize() == cudaSuccess),
          "gemmEx bf16: runs or is CUBLAS_STATUS_NOT_SUPPORTED");
    cudaFree(dA);
    cudaFree(dB);
    cudaFree(dC);
}

static void test_batched_lu(cublasHandle_t h) {
    const int n = 3, batch = 2;
    double A[batch][n * n] = {{4, 2, 1, 2, 5, 3, 1, 3, 6}, {1, 4, 7, 2, 5, 8, 3, 6, 10}};
    double X[batch][n] = {{1, -1, 2}, {0.5, 2, -3}};
    double B[batch][n];
    for (int b = 0; b < batch; b++)
        for (int i = 0; i < n; i++) {
            B[b][i] = 0;
            for (int j = 0; j < n; j++) B[b][i] += A[b][i + j * n] * X[b][j];
        }
    double *dA[batch], *dB[batch];
    for (int b = 0; b < batch; b++) {
        dA[b] = dev(A[b], n * n);
        dB[b] = dev(B[b], n);
    }
    double **dAarr = dev(dA, batch), **dBarr = dev(dB, batch);
    int *piv, *info;
    cudaMalloc(&piv, n * batch * sizeof(int));
    cudaMalloc(&info, batch * sizeof(int));
    CK(cublasDgetrfBatched(h, n, dAarr, n, piv, info, batch));
    int hinfo[batch], sinfo = -1;
    host(hinfo, info, batch);
    check(hinfo[0] == 0 && hinfo[1] == 0, "dgetrfBatched info");
    CK(cublasDgetrsBatched(h, CUBLAS_OP_N, n, 1, (const double *const *)dAarr, n, piv, dBarr, n,
                           &sinfo, batch));
    bool ok = sinfo == 0;
    for (int b = 0; b < batch; b++) {
        double x[n];
        host(x, dB[b], n);
        for (int i = 0; i < n; i++) ok &= fabs(x[i] - X[b][i]) < 1e-12;
    }
    check(ok, "dgetrsBatched solves both systems");
}

static void test_complex(cublasHandle_t h) {
    const int n = 3;
    cuComplex A[n * n], B[n * n], C[n * n];
    for (int i = 0; i < n * n; i++) {
        A[i] = make_cuComplex(i * 0.5f, 1 - i * 0.25f);
        B[i] = make_cuComplex(1 + i, -0.5f * i);
    }
    cuComplex *dA = dev(A, n * n), *dB = dev(B, n * n), *dC;
    cudaMalloc(&dC, sizeof C);
    cuComplex one = make_cuComplex(1, 0), zero = make_cuComplex(0, 0);
    CK(cublasCgemm(h, CUBLAS_OP_C, CUBLAS_OP_N, n, n, n, &one, dA, n, dB, n, &zero, dC, n));
    host(C, dC, n * n);
    bool ok = true;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++) {
            cuComplex s = zero;
            for (int p = 0; p < n; p++) s = cuCaddf(s, cuCmulf(cuConjf(A[p + i * n]), B[p + j * n]));
            ok &= cuCabsf(cuCsubf(s, C[i + j * n])) < 1e-4f;
        }
    check(ok, "cgemm with a conjugate transpose");
    cuDoubleComplex x[4], y[4], d;
    for (int i = 0; i < 4; i++) {
        x[i] = make_cuDoubleComplex(i, 1);
        y[i] = make_cuDoubleComplex(2, -i);
    }
    cuDoubleComplex *dx = dev(x, 4), *dy = dev(y, 4);
    CK(cublasZdotc(h, 4, dx, 1, dy, 1, &d));
    cuDoubleComplex r = make_cuDoubleComplex(0, 0);
    for (int i = 0; i < 4; i++) r = cuCadd(r, cuCmul(cuConj(x[i]), y[i]));
    check(cuCabs(cuCsub(r, d)) < 1e-12, "zdotc");
}

static void test_level2(cublasHandle_t h) {
    const int n = 4;
    float A[n * n], x[n], y[n], out[n * n];
    for (int i = 0; i < n * n; i++) A[i] = (float)(i % 5) - 2;
    for (int i = 0; i < n; i++) {
        x[i] = i + 1.0f;
        y[i] = 1.0f - i;
    }
    float *dA = dev(A, n * n), *dx = dev(x, n), *dy = dev(y, n), *dK;
    cudaMalloc(&dK, sizeof out);
    float one = 1, zero = 0, half = 0.5f;
    CK(cublasSsymv(h, CUBLAS_FILL_MODE_UPPER, n, &one, dA, n, dx, 1, &half, dy, 1));
    float got[n];
    host(got, dy, n);
    bool ok = true;
    for (int i = 0; i < n; i++) {
        float s = 0.5f * y[i];
        for (int j = 0; j < n; j++) s += (i <= j ? A[i + j * n] : A[j + i * n]) * x[j];
        ok &= fabsf(s - got[i]) < 1e-5f;
    }
    check(ok, "ssymv upper");
    CK(cublasSger(h, n, n, &one, dx, 1, dx, 1, dA, n));
    host(out, dA, n * n);
    ok = true;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++) ok &= fabsf(out[i + j * n] - (A[i + j * n] + x[i] * x[j])) < 1e-5f;
    check(ok, "sger");
    CK(cublasSsyrk(h, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T, n, n, &one, dA, n, &zero, dK, n));
    float K[n * n];
    host(K, dK, n * n);
    ok = true;
    for (int j = 0; j < n; j++)
        for (int i = j; i < n; i++) {
            float s = 0;
            for (int p = 0; p < n; p++) s += out[p + i * n] * out[p + j * n];
            ok &= fabsf(s - K[i + j * n]) < 1e-3f;
        }
    check(ok, "ssyrk lower, transposed");
    float c = 0.6f, s = 0.8f;
    CK(cublasSrot(h, n, dx, 1, dy, 1, &c, &s));
    float rx[n], ry[n];
    host(rx, dx, n);
    host(ry, dy, n);
    ok = true;
    for (int i = 0; i < n; i++) ok &= fabsf(rx[i] - (c * x[i] + s * got[i])) < 1e-5f &&
                                      fabsf(ry[i] - (c * got[i] - s * x[i])) < 1e-5f;
    check(ok, "srot");
    CK(cublasSswap(h, n, dx, 1, dy, 1));
    float sx[n];
    host(sx, dx, n);
    check(sx[2] == ry[2], "sswap");
    int imin = 0;
    CK(cublasIsamin(h, n, dx, 1, &imin));
    int best = 0;
    for (int i = 1; i < n; i++)
        if (fabsf(ry[i]) < fabsf(ry[best])) best = i;
    check(imin == best + 1, "isamin");
}

static void test_batched_and_loop(cublasHandle_t h) {
    const int n = 8, batch = 4;
    float *mats[3][batch];
    float hm[n * n];
    for (int i = 0; i < n * n; i++) hm[i] = (i % 3) - 1.0f;
    for (int b = 0; b < batch; b++)
        for (int t = 0; t < 3; t++) mats[t][b] = dev(hm, n * n);
    float **a = dev(mats[0], batch), **b = dev(mats[1], batch), **c = dev(mats[2], batch);
    float one = 1, zero = 0;
    CK(cublasSgemmBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, (const float **)a, n,
                          (const float **)b, n, &zero, c, n, batch));
    float out[n * n];
    host(out, mats[2][batch - 1], n * n);
    bool ok = true;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++) {
            float s = 0;
            for (int p = 0; p < n; p++) s += hm[i + p * n] * hm[p + j * n];
            ok &= fabsf(s - out[i + j * n]) < 1e-5f;
        }
    check(ok, "sgemmBatched with pointer arrays");
    CK(cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH));
    cublasMath_t mode;
    CK(cublasGetMathMode(h, &mode));
    check(mode == CUBLAS_TF32_TENSOR_OP_MATH, "math mode round trip");
    // 200 GEMMs: each is posted without waiting for the backend.
    cudaEvent_t t0, t1;
    cudaEventCreate(&t0);
    cudaEventCreate(&t1);
    cudaEventRecord(t0);
    for (int i = 0; i < 200; i++)
        CK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, mats[0][0], n, mats[1][0], n,
                       &zero, mats[2][0], n));
    cudaEventRecord(t1);
    cudaEventSynchronize(t1);
    host(out, mats[2][0], n * n);
    check(ok && fabsf(out[0] - hm[0] * hm[0] - hm[8] * hm[1] - hm[16] * hm[2] - hm[24] * hm[3] -
                      hm[32] * hm[4] - hm[40] * hm[5] - hm[48] * hm[6] - hm[56] * hm[7]) < 1e-5f,
          "200 posted sgemms");
}

int main() {
    cublasHandle_t h;
    CK(cublasCreate(&h));
    test_gemm_ex_half(h);
    test_batched_lu(h);
    test_complex(h);
    test_level2(h);
    test_batched_and_loop(h);
    CK(cublasDestroy(h));
    check(cudaDeviceSynchronize() == cudaSuccess, "no pending CUDA error");
    if (failures)
        printf("FAIL: %d failure(s)\n", failures);
    else
        printf("PASS\n");
    return failures ? 1 : 0;
}
