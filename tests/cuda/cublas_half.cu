// vcuda-test: libs=cublas
// Half precision in cuBLAS: cublasHgemm, cublasHgemmStridedBatched and cublasHgemmBatched
// (__half operands and scalars, CUBLAS_COMPUTE_16F), and cublasGemmEx /
// cublasGemmStridedBatchedEx with CUDA_R_16F and CUDA_R_16BF inputs and outputs of the same
// type or CUDA_R_32F, each checked against a float reference computed here. The inputs are
// multiples of 0.5 in [-2, 2], so every product and partial sum is exact in half precision;
// bfloat16 outputs round to 8 significant bits.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <vector>
#include "common.h"

#define CB(call)                                                                             \
    do {                                                                                     \
        cublasStatus_t s_ = (call);                                                          \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                   \
            printf("FAIL: %s:%d: %s -> %d\n", __FILE__, __LINE__, #call, (int)s_);           \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)

static const int M = 33, N = 17, K = 32, BATCH = 3;

// C = alpha * A * B^T + beta * C, column-major; A is M x K (lda M), B is N x K (ldb N).
static void reference(const std::vector<float> &a, const std::vector<float> &b,
                      std::vector<float> &c, float alpha, float beta) {
    for (int j = 0; j < N; j++)
        for (int i = 0; i < M; i++) {
            float s = 0;
            for (int p = 0; p < K; p++) s += a[i + p * M] * b[j + p * N];
            c[i + j * M] = alpha * s + beta * c[i + j * M];
        }
}

static float value(int i, int salt) { return (float)(((i * 7 + salt * 13) % 9) - 4) * 0.5f; }

// Compares `got` with `want`: exact for half, within bfloat16 rounding otherwise.
static int mismatches(const std::vector<float> &got, const std::vector<float> &want, float tol) {
    int bad = 0;
    for (size_t i = 0; i < got.size(); i++) {
        float d = fabsf(got[i] - want[i]);
        if (d > tol * fmaxf(1.0f, fabsf(want[i]))) {
            if (bad < 3) printf("  [%zu] %f, expected %f\n", i, got[i], want[i]);
            bad++;
        }
    }
    return bad;
}

template <typename T> static std::vector<T> convert(const std::vector<float> &v);
template <> std::vector<__half> convert(const std::vector<float> &v) {
    std::vector<__half> o(v.size());
    for (size_t i = 0; i < v.size(); i++) o[i] = __float2half(v[i]);
    return o;
}
template <> std::vector<__nv_bfloat16> convert(const std::vector<float> &v) {
    std::vector<__nv_bfloat16> o(v.size());
    for (size_t i = 0; i < v.size(); i++) o[i] = __float2bfloat16(v[i]);
    return o;
}
static float to_float(__half h) { return __half2float(h); }
static float to_float(__nv_bfloat16 h) { return __bfloat162float(h); }

template <typename T> static T *upload(const std::vector<T> &v) {
    T *d;
    CHECK(cudaMalloc(&d, v.size() * sizeof(T)));
    CHECK(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
    return d;
}

template <typename T> static std::vector<float> download(const T *d, size_t n) {
    std::vector<T> h(n);
    CHECK(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
    std::vector<float> o(n);
    for (size_t i = 0; i < n; i++) o[i] = to_float(h[i]);
    return o;
}

static std::vector<float> download_f32(const float *d, size_t n) {
    std::vector<float> o(n);
    CHECK(cudaMemcpy(o.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost));
    return o;
}

int main() {
    cublasHandle_t h;
    CB(cublasCreate(&h));
    std::vector<float> a(M * K * BATCH), b(N * K * BATCH), c0(M * N * BATCH);
    for (size_t i = 0; i < a.size(); i++) a[i] = value((int)i, 1);
    for (size_t i = 0; i < b.size(); i++) b[i] = value((int)i, 2);
    for (size_t i = 0; i < c0.size(); i++) c0[i] = value((int)i, 3);
    const float alpha = 1.0f, beta = 0.5f;
    // The reference, per batch entry.
    std::vector<float> want(c0);
    for (int e = 0; e < BATCH; e++) {
        std::vector<float> ae(a.begin() + e * M * K, a.begin() + (e + 1) * M * K);
        std::vector<float> be(b.begin() + e * N * K, b.begin() + (e + 1) * N * K);
        std::vector<float> ce(c0.begin() + e * M * N, c0.begin() + (e + 1) * M * N);
        reference(ae, be, ce, alpha, beta);
        std::copy(ce.begin(), ce.end(), want.begin() + e * M * N);
    }
    std::vector<float> want0(want.begin(), want.begin() + M * N);

    // cublasHgemm, __half scalars.
    __half *da = upload(convert<__half>(a)), *db = upload(convert<__half>(b));
    __half *dc = upload(convert<__half>(c0));
    __half ha = __float2half(alpha), hb = __float2half(beta);
    CB(cublasHgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, M, N, K, &ha, da, M, db, N, &hb, dc, M));
    EXPECT(mismatches(download(dc, M * N), want0, 1e-3f) == 0);

    // cublasHgemmStridedBatched over all BATCH entries.
    CHECK(cudaMemcpy(dc, convert<__half>(c0).data(), c0.size() * sizeof(__half), cudaMemcpyHostToDevice));
    CB(cublasHgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_T, M, N, K, &ha, da, M, M * K, db, N,
                                 N * K, &hb, dc, M, M * N, BATCH));
    EXPECT(mismatches(download(dc, c0.size()), want, 1e-3f) == 0);

    // cublasHgemmBatched: the same through arrays of device pointers.
    CHECK(cudaMemcpy(dc, convert<__half>(c0).data(), c0.size() * sizeof(__half), cudaMemcpyHostToDevice));
    const __half *pa[BATCH], *pb[BATCH];
    __half *pc[BATCH];
    for (int e = 0; e < BATCH; e++) {
        pa[e] = da + e * M * K;
        pb[e] = db + e * N * K;
        pc[e] = dc + e * M * N;
    }
    const __half **dpa;
    const __half **dpb;
    __half **dpc;
    CHECK(cudaMalloc(&dpa, sizeof pa));
    CHECK(cudaMalloc(&dpb, sizeof pb));
    CHECK(cudaMalloc(&dpc, sizeof pc));
    CHECK(cudaMemcpy(dpa, pa, sizeof pa, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dpb, pb, sizeof pb, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dpc, pc, sizeof pc, cudaMemcpyHostToDevice));
    CB(cublasHgemmBatched(h, CUBLAS_OP_N, CUBLAS_OP_T, M, N, K, &ha, dpa, M, dpb, N, &hb, dpc, M,
                          BATCH));
    EXPECT(mismatches(download(dc, c0.size()), want, 1e-3f) == 0);

    // GemmEx: __half inputs, float output, float compute and scalars.
    float *df = upload(c0);
    CB(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_T, M, N, K, &alpha, da, CUDA_R_16F, M, db,
                    CUDA_R_16F, N, &beta, df, CUDA_R_32F, M, CUBLAS_COMPUTE_32F,
                    CUBLAS_GEMM_DEFAULT));
    EXPECT(mismatches(download_f32(df, M * N), want0, 1e-5f) == 0);

    // GemmEx: bfloat16 inputs, bfloat16 and float outputs.
    __nv_bfloat16 *ba = upload(convert<__nv_bfloat16>(a)), *bb = upload(convert<__nv_bfloat16>(b));
    __nv_bfloat16 *bc = upload(convert<__nv_bfloat16>(c0));
    CB(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_T, M, N, K, &alpha, ba, CUDA_R_16BF, M, bb,
                    CUDA_R_16BF, N, &beta, bc, CUDA_R_16BF, M, CUBLAS_COMPUTE_32F,
                    CUBLAS_GEMM_DEFAULT));
    EXPECT(mismatches(download(bc, M * N), want0, 1.0f / 128) == 0);
    CHECK(cudaMemcpy(df, c0.data(), M * N * sizeof(float), cudaMemcpyHostToDevice));
    CB(cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_T, M, N, K, &alpha, ba, CUDA_R_16BF,
                                  M, M * K, bb, CUDA_R_16BF, N, N * K, &beta, df, CUDA_R_32F, M,
                                  M * N, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    EXPECT(mismatches(download_f32(df, M * N), want0, 1e-5f) == 0);

    // A combination cuBLAS does not offer: bfloat16 with 16-bit compute.
    EXPECT(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_T, M, N, K, &ha, ba, CUDA_R_16BF, M, bb,
                        CUDA_R_16BF, N, &hb, bc, CUDA_R_16BF, M, CUBLAS_COMPUTE_16F,
                        CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS);

    CB(cublasDestroy(h));
    for (void *p : {(void *)da, (void *)db, (void *)dc, (void *)df, (void *)ba, (void *)bb,
                    (void *)bc, (void *)dpa, (void *)dpb, (void *)dpc})
        CHECK(cudaFree(p));
    return finish();
}
