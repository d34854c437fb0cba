// vcuda-test: libs=cublas,curand
// SPDX-License-Identifier: Apache-2.0 OR MIT
// cuBLAS through vcuda: SGEMM (transposes, odd shapes, strided batches), Set/GetMatrix,
// DAXPY, DDOT, DNRM2 and ISAMAX in host and device pointer modes, GEAM, TRSM, streams.
// Every result is checked against a host reference; prints PASS/FAIL lines and exits
// non-zero on failure.
#include <cublas_v2.h>
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

static float frand(unsigned *s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) & 0xffff) / 65536.0f - 0.5f;
}

// C = alpha op(A) op(B) + beta C, column-major, on the host.
static void ref_sgemm(int ta, int tb, int m, int n, int k, float alpha, const float *A, int lda,
                      const float *B, int ldb, float beta, float *C, int ldc) {
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double acc = 0;
            for (int p = 0; p < k; p++) {
                float a = ta ? A[p + i * lda] : A[i + p * lda];
                float b = tb ? B[j + p * ldb] : B[p + j * ldb];
                acc += (double)a * b;
            }
            C[i + j * ldc] = (float)(alpha * acc + beta * C[i + j * ldc]);
        }
}

static bool close_all(const float *a, const float *b, int n, float tol) {
    for (int i = 0; i < n; i++)
        if (fabsf(a[i] - b[i]) > tol * (1.0f + fabsf(b[i]))) {
            printf("  mismatch at %d: %g vs %g\n", i, a[i], b[i]);
            return false;
        }
    return true;
}

static void test_sgemm(cublasHandle_t h, int ta, int tb, int m, int n, int k) {
    unsigned seed = 7 + m * 31 + n * 17 + k + ta * 5 + tb * 3;
    int lda = (ta ? k : m) + 3, ldb = (tb ? n : k) + 1, ldc = m + 2;
    int asz = lda * (ta ? m : k), bsz = ldb * (tb ? k : n), csz = ldc * n;
    float *A = (float *)malloc(asz * 4), *B = (float *)malloc(bsz * 4);
    float *C = (float *)malloc(csz * 4), *R = (float *)malloc(csz * 4);
    for (int i = 0; i < asz; i++) A[i] = frand(&seed);
    for (int i = 0; i < bsz; i++) B[i] = frand(&seed);
    for (int i = 0; i < csz; i++) C[i] = R[i] = frand(&seed);
    float *dA, *dB, *dC;
    cudaMalloc(&dA, asz * 4);
    cudaMalloc(&dB, bsz * 4);
    cudaMalloc(&dC, csz * 4);
    CK(cublasSetMatrix(ta ? k : m, ta ? m : k, 4, A, lda, dA, lda));
    CK(cublasSetMatrix(tb ? n : k, tb ? k : n, 4, B, ldb, dB, ldb));
    CK(cublasSetMatrix(m, n, 4, C, ldc, dC, ldc));
    float alpha = 1.5f, beta = -0.5f;
    CK(cublasSgemm(h, ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k,
                   &alpha, dA, lda, dB, ldb, &beta, dC, ldc));
    // GetMatrix copies only the m x n block: the padding rows must stay as they were.
    CK(cublasGetMatrix(m, n, 4, dC, ldc, C, ldc));
    ref_sgemm(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, R, ldc);
    char what[96];
    snprintf(what, sizeof what, "sgemm %c%c %dx%dx%d", ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k);
    check(close_all(C, R, csz, 1e-4f), what);
    cudaFree(dA);
    cudaFree(dB);
    cudaFree(dC);
    free(A);
    free(B);
    free(C);
    free(R);
}

static void test_strided_batched(cublasHandle_t h) {
    const int m = 5, n = 3, k = 4, batch = 3;
    const long long sa = m * k + 2, sb = k * n, sc = m * n + 1;
    float A[batch * (m * k + 2)], B[batch * k * n], C[batch * (m * n + 1)], R[batch * (m * n + 1)];
    unsigned s = 99;
    for (float &v : A) v = frand(&s);
    for (float &v : B) v = frand(&s);
    for (int i = 0; i < (int)(sizeof C / 4); i++) C[i] = R[i] = 0;
    float *dA, *dB, *dC;
    cudaMalloc(&dA, sizeof A);
    cudaMalloc(&dB, sizeof B);
    cudaMalloc(&dC, sizeof C);
    cudaMemcpy(dA, A, sizeof A, cudaMemcpyHostToDevice);
    cudaMemcpy(dB, B, sizeof B, cudaMemcpyHostToDevice);
    cudaMemcpy(dC, C, sizeof C, cudaMemcpyHostToDevice);
    float one = 1, zero = 0;
    CK(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, dA, m, sa, dB, k, sb,
                                 &zero, dC, m, sc, batch));
    cudaMemcpy(C, dC, sizeof C, cudaMemcpyDeviceToHost);
    for (int b = 0; b < batch; b++)
        ref_sgemm(0, 0, m, n, k, 1, A + b * sa, m, B + b * sb, k, 0, R + b * sc, m);
    check(close_all(C, R, sizeof C / 4, 1e-5f), "sgemm strided batched");
    // The same through cublasGemmEx with f32 everywhere.
    cudaMemset(dC, 0, sizeof C);
    CK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, dA, CUDA_R_32F, m, dB, CUDA_R_32F,
                    k, &zero, dC, CUDA_R_32F, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    cudaMemcpy(C, dC, m * n * 4, cudaMemcpyDeviceToHost);
    check(close_all(C, R, m * n, 1e-5f), "gemmEx f32");
    cudaFree(dA);
    cudaFree(dB);
    cudaFree(dC);
}

static void test_level1(cublasHandle_t h) {
    const int n = 1000;
    double x[n], y[n];
    for (int i = 0; i < n; i++) {
        x[i] = sin(i * 0.1);
        y[i] = cos(i * 0.07);
    }
    double *dx, *dy, *dres;
    cudaMalloc(&dx, sizeof x);
    cudaMalloc(&dy, sizeof y);
    cudaMalloc(&dres, 2 * sizeof(double));
    CK(cublasSetVector(n, 8, x, 1, dx, 1));
    CK(cublasSetVector(n, 8, y, 1, dy, 1));
    double alpha = 2.5;
    CK(cublasDaxpy(h, n, &alpha, dx, 1, dy, 1));
    double out[n];
    CK(cublasGetVector(n, 8, dy, 1, out, 1));
    bool ok = true;
    for (int i = 0; i < n; i++) ok &= fabs(out[i] - (2.5 * x[i] + y[i])) < 1e-12;
    check(ok, "daxpy");
    for (int i = 0; i < n; i++) y[i] = out[i];

    double dot = 0, ref = 0, nrm = 0;
    for (int i = 0; i < n; i++) ref += x[i] * y[i];
    CK(cublasDdot(h, n, dx, 1, dy, 1, &dot));
    check(fabs(dot - ref) < 1e-9 * fabs(ref), "ddot host pointer mode");
    double rn = 0;
    for (int i = 0; i < n; i += 3) rn += x[i] * x[i];
    rn = sqrt(rn);
    CK(cublasDnrm2(h, (n + 2) / 3, dx, 3, &nrm));
    check(fabs(nrm - rn) < 1e-12 * rn, "dnrm2 host pointer mode, incx 3");

    // Device pointer mode: results go to device memory, scalars come from it.
    CK(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_DEVICE));
    CK(cublasDdot(h, n, dx, 1, dy, 1, dres));
    CK(cublasDnrm2(h, (n + 2) / 3, dx, 3, dres + 1));
    double res[2] = {0, 0};
    cudaMemcpy(res, dres, sizeof res, cudaMemcpyDeviceToHost);
    check(fabs(res[0] - ref) < 1e-9 * fabs(ref), "ddot device pointer mode");
    check(fabs(res[1] - rn) < 1e-12 * rn, "dnrm2 device pointer mode");
    double two = 2.0;
    cudaMemcpy(dres, &two, 8, cudaMemcpyHostToDevice);
    CK(cublasDscal(h, n, dres, dx, 1));
    CK(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
    cublasPointerMode_t pm;
    CK(cublasGetPointerMode(h, &pm));
    check(pm == CUBLAS_POINTER_MODE_HOST, "pointer mode round trip");
    CK(cublasGetVector(n, 8, dx, 1, out, 1));
    ok = true;
    for (int i = 0; i < n; i++) ok &= out[i] == 2 * x[i];
    check(ok, "dscal with a device scalar");

    int idx = -1;
    CK(cublasIdamax(h, n, dx, 1, &idx));
    int best = 0;
    for (int i = 1; i < n; i++)
        if (fabs(x[i]) > fabs(x[best])) best = i;
    check(idx == best + 1, "idamax (1-based)");
    double asum = 0, rasum = 0;
    for (int i = 0; i < n; i++) rasum += fabs(2 * x[i]);
    CK(cublasDasum(h, n, dx, 1, &asum));
    check(fabs(asum - rasum) < 1e-9 * rasum, "dasum");
    cudaFree(dx);
    cudaFree(dy);
    cudaFree(dres);
}

static void test_geam_trsm(cublasHandle_t h, cudaStream_t st) {
    const int m = 4, n = 3;
    float A[m * m], B[m * n], C[m * n], X[m * n];
    unsigned s = 5;
    for (int j = 0; j < m; j++)
        for (int i = 0; i < m; i++) A[i + j * m] = i == j ? 2.0f + i : (i > j ? frand(&s) : 0.0f);
    for (float &v : B) v = frand(&s);
    float *dA, *dB, *dC;
    cudaMalloc(&dA, sizeof A);
    cudaMalloc(&dB, sizeof B);
    cudaMalloc(&dC, sizeof C);
    CK(cublasSetStream(h, st));
    cudaStream_t got;
    CK(cublasGetStream(h, &got));
    check(got == st, "set/get stream");
    CK(cublasSetMatrixAsync(m, m, 4, A, m, dA, m, st));
    CK(cublasSetMatrixAsync(m, n, 4, B, m, dB, m, st));
    // C = 2 B^T^T - B = B, through geam with transposes on both sides.
    float two = 2, minus = -1, one = 1;
    CK(cublasSgeam(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, &two, dB, m, &minus, dB, m, dC, m));
    // Solve L X = B in place (lower triangular).
    CK(cublasStrsm(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT,
                   m, n, &one, dA, m, dC, m));
    CK(cublasGetMatrixAsync(m, n, 4, dC, m, X, m, st));
    cudaStreamSynchronize(st);
    // Check L X == B.
    bool ok = true;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            float acc = 0;
            for (int p = 0; p <= i; p++) acc += A[i + p * m] * X[p + j * m];
            ok &= fabsf(acc - B[i + j * m]) < 1e-5f;
        }
    check(ok, "geam + strsm on a stream");
    CK(cublasSetStream(h, 0));
    cudaFree(dA);
    cudaFree(dB);
    cudaFree(dC);
}

int main() {
    cublasHandle_t h;
    CK(cublasCreate(&h));
    int version = 0;
    CK(cublasGetVersion(h, &version));
    check(version >= 120000, "cublasGetVersion");
    const int shapes[][3] = {{1, 1, 1}, {7, 5, 3}, {33, 17, 65}, {64, 64, 64}, {3, 129, 2}};
    for (auto &s : shapes)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) test_sgemm(h, ta, tb, s[0], s[1], s[2]);
    test_strided_batched(h);
    test_level1(h);
    cudaStream_t st;
    cudaStreamCreate(&st);
    test_geam_trsm(h, st);
    cudaStreamDestroy(st);
    // Argument errors come back as cuBLAS does report them.
    float one = 1;
    check(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, NULL, 2, NULL, 4, &one, NULL, 4) ==
              CUBLAS_STATUS_INVALID_VALUE,
          "lda < m is CUBLAS_STATUS_INVALID_VALUE");
    CK(cublasDestroy(h));
    // A destroyed handle: vcuda refuses it; with NVIDIA's library it is undefined.
    // (Said only if it fails, so the output matches a native run's.)
    if (getenv("VCUDA_SOCKET") && cublasSetStream(h, 0) != CUBLAS_STATUS_NOT_INITIALIZED)
        check(false, "destroyed handle");
    check(cudaDeviceSynchronize() == cudaSuccess, "no pending CUDA error");
    if (failures)
        printf("FAIL: %d failure(s)\n", failures);
    else
        printf("PASS\n");
    return failures ? 1 : 0;
}
