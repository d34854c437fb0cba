// vcuda-test: libs=cublas,curand
// SPDX-License-Identifier: Apache-2.0 OR MIT
// cuRAND through vcuda: uniform, normal, log-normal and Poisson statistics from device and
// host generators, per-seed determinism, offsets, Sobol points, and error codes. Prints
// PASS/FAIL lines and exits non-zero on failure.
#include <cuda_runtime.h>
#include <curand.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

static void check(bool ok, const char *what) {
    printf("%s %s\n", ok ? "PASS" : "FAIL", what);
    if (!ok) failures++;
}

#define CK(call)                                                                   \
    do {                                                                           \
        curandStatus_t s_ = (call);                                                \
        if (s_ != CURAND_STATUS_SUCCESS) {                                         \
            printf("FAIL %s:%d %s -> %d\n", __FILE__, __LINE__, #call, (int)s_); \
            exit(1);                                                               \
        }                                                                          \
    } while (0)

static void stats(const float *v, size_t n, double *mean, double *var) {
    double s = 0, s2 = 0;
    for (size_t i = 0; i < n; i++) {
        s += v[i];
        s2 += (double)v[i] * v[i];
    }
    *mean = s / n;
    *var = s2 / n - *mean * *mean;
}

static void test_device(curandRngType_t type, const char *name) {
    const size_t n = 1 << 16;
    float *d, *h = (float *)malloc(n * 4), *h2 = (float *)malloc(n * 4);
    cudaMalloc(&d, n * 4);
    curandGenerator_t g;
    CK(curandCreateGenerator(&g, type));
    CK(curandSetPseudoRandomGeneratorSeed(g, 1234));
    CK(curandGenerateUniform(g, d, n));
    cudaMemcpy(h, d, n * 4, cudaMemcpyDeviceToHost);
    double m, v;
    stats(h, n, &m, &v);
    bool in_range = true;
    for (size_t i = 0; i < n; i++) in_range &= h[i] > 0.0f && h[i] <= 1.0f;
    char what[128];
    snprintf(what, sizeof what, "%s uniform: mean %.4f var %.4f in (0,1]", name, m, v);
    check(in_range && fabs(m - 0.5) < 0.01 && fabs(v - 1.0 / 12) < 0.005, what);

    CK(curandGenerateNormal(g, d, n, 2.0f, 3.0f));
    cudaMemcpy(h, d, n * 4, cudaMemcpyDeviceToHost);
    stats(h, n, &m, &v);
    snprintf(what, sizeof what, "%s normal(2, 3): mean %.3f sd %.3f", name, m, sqrt(v));
    check(fabs(m - 2.0) < 0.05 && fabs(sqrt(v) - 3.0) < 0.05, what);

    // Same seed, same numbers: a second generator reproduces the first's first call. (As
    // in cuRAND, re-seeding keeps the offset, so the first generator would continue.)
    // The Mersenne Twister generators take no offset (cuRAND: CURAND_STATUS_TYPE_ERROR);
    // for them the comparison starts from a fresh generator.
    bool mt = type == CURAND_RNG_PSEUDO_MTGP32 || type == CURAND_RNG_PSEUDO_MT19937;
    if (mt) {
        snprintf(what, sizeof what, "%s refuses an offset", name);
        check(curandSetGeneratorOffset(g, 0) == CURAND_STATUS_TYPE_ERROR, what);
        CK(curandDestroyGenerator(g));
        CK(curandCreateGenerator(&g, type));
    }
    CK(curandSetPseudoRandomGeneratorSeed(g, 1234));
    if (!mt) CK(curandSetGeneratorOffset(g, 0));
    CK(curandGenerateUniform(g, d, n));
    cudaMemcpy(h, d, n * 4, cudaMemcpyDeviceToHost);
    curandGenerator_t g2;
    CK(curandCreateGenerator(&g2, type));
    CK(curandSetPseudoRandomGeneratorSeed(g2, 1234));
    CK(curandGenerateUniform(g2, d, n));
    cudaMemcpy(h2, d, n * 4, cudaMemcpyDeviceToHost);
    snprintf(what, sizeof what, "%s per-seed determinism", name);
    check(memcmp(h, h2, n * 4) == 0, what);
    CK(curandSetPseudoRandomGeneratorSeed(g2, 4321));
    CK(curandGenerateUniform(g2, d, n));
    cudaMemcpy(h2, d, n * 4, cudaMemcpyDeviceToHost);
    snprintf(what, sizeof what, "%s another seed differs", name);
    check(memcmp(h, h2, n * 4) != 0, what);
    CK(curandDestroyGenerator(g));
    CK(curandDestroyGenerator(g2));
    cudaFree(d);
    free(h);
    free(h2);
}

static void test_host_and_offset() {
    const size_t n = 4096 * 3;
    unsigned *a = (unsigned *)malloc(n * 4), *b = (unsigned *)malloc(n * 4);
    curandGenerator_t g;
    CK(curandCreateGeneratorHost(&g, CURAND_RNG_PSEUDO_XORWOW));
    CK(curandSetPseudoRandomGeneratorSeed(g, 1234));
    CK(curandGenerate(g, a, n));
    // cuRAND's XORWOW, seed 1234: these are NVIDIA's libcurand values.
    check(a[0] == 624778773u && a[1] == 3522650202u && a[4096] == 1867875844u,
          "host XORWOW matches cuRAND's sequence");
    // Offset k gives the sequence from element k on.
    CK(curandSetGeneratorOffset(g, 1000));
    CK(curandGenerate(g, b, 100));
    check(memcmp(a + 1000, b, 400) == 0, "generator offset");
    // Two calls continue the sequence of one.
    CK(curandSetGeneratorOffset(g, 0));
    CK(curandGenerate(g, b, 5000));
    CK(curandGenerate(g, b + 5000, n - 5000));
    check(memcmp(a, b, n * 4) == 0, "consecutive calls continue the sequence");
    double *ln = (double *)malloc(n * 8);
    CK(curandGenerateLogNormalDouble(g, ln, n, 0.0, 0.5));
    double s = 0;
    bool pos = true;
    for (size_t i = 0; i < n; i++) {
        s += log(ln[i]);
        pos &= ln[i] > 0;
    }
    check(pos && fabs(s / n) < 0.02, "host log-normal double");
    check(curandGenerateNormal(g, (float *)a, 3, 0, 1) == CURAND_STATUS_LENGTH_NOT_MULTIPLE,
          "odd normal count is CURAND_STATUS_LENGTH_NOT_MULTIPLE");
    check(curandGenerateLongLong(g, (unsigned long long *)a, 2) == CURAND_STATUS_TYPE_ERROR,
          "64-bit words from a 32-bit generator is CURAND_STATUS_TYPE_ERROR");
    CK(curandDestroyGenerator(g));
    // A destroyed generator: vcuda refuses it; with NVIDIA's library it is undefined.
    // (Said only if it fails, so the output matches a native run's.)
    if (getenv("VCUDA_SOCKET") && curandGenerate(g, a, 1) != CURAND_STATUS_NOT_INITIALIZED)
        check(false, "destroyed generator");
    free(a);
    free(b);
    free(ln);
}

static void test_poisson() {
    const size_t n = 1 << 15;
    unsigned *d, *h = (unsigned *)malloc(n * 4);
    cudaMalloc(&d, n * 4);
    curandGenerator_t g;
    CK(curandCreateGenerator(&g, CURAND_RNG_PSEUDO_PHILOX4_32_10));
    cudaStream_t st;
    cudaStreamCreate(&st);
    CK(curandSetStream(g, st));
    CK(curandGeneratePoisson(g, d, n, 4.5));
    cudaMemcpyAsync(h, d, n * 4, cudaMemcpyDeviceToHost, st);
    cudaStreamSynchronize(st);
    double s = 0, s2 = 0;
    for (size_t i = 0; i < n; i++) {
        s += h[i];
        s2 += (double)h[i] * h[i];
    }
    double m = s / n, v = s2 / n - m * m;
    char what[96];
    snprintf(what, sizeof what, "poisson(4.5) on a stream: mean %.3f var %.3f", m, v);
    check(fabs(m - 4.5) < 0.06 && fabs(v - 4.5) < 0.15, what);
    CK(curandDestroyGenerator(g));
    cudaStreamDestroy(st);
    cudaFree(d);
    free(h);
}

static void test_sobol() {
    const int dims = 3, per = 8;
    unsigned *d, h[dims * per];
    cudaMalloc(&d, sizeof h);
    curandGenerator_t g;
    CK(curandCreateGenerator(&g, CURAND_RNG_QUASI_SOBOL32));
    CK(curandSetQuasiRandomGeneratorDimensions(g, dims));
    check(curandGenerate(g, d, 10) == CURAND_STATUS_LENGTH_NOT_MULTIPLE,
          "sobol length must be a multiple of the dimensions");
    CK(curandGenerate(g, d, dims * per));
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    // Dimension 1 is van der Corput in Gray-code order; dimension 2 (s=1, m=1) starts
    // 0, 2^31, 2^30, 3*2^30 for cuRAND's Joe-Kuo direction numbers.
    const unsigned vdc[8] = {0, 0x80000000u, 0xc0000000u, 0x40000000u,
                             0x60000000u, 0xe0000000u, 0xa0000000u, 0x20000000u};
    check(memcmp(h, vdc, sizeof vdc) == 0, "sobol dimension 1");
    check(h[per] == 0 && h[per + 1] == 0x80000000u && h[per + 2] == 0x40000000u &&
              h[per + 3] == 0xc0000000u,
          "sobol dimension 2");
    float *df, hf[dims * per];
    cudaMalloc(&df, sizeof hf);
    CK(curandGenerateUniform(g, df, dims * per));
    cudaMemcpy(hf, df, sizeof hf, cudaMemcpyDeviceToHost);
    // The next 8 points of dimension 1: point 8 is 0.1875 in Gray-code order (as cuRAND).
    check(hf[0] > 0.18749f && hf[0] < 0.18751f && hf[per] > 0.31249f && hf[per] < 0.31251f,
          "sobol continues at point 8");
    CK(curandDestroyGenerator(g));
    cudaFree(d);
    cudaFree(df);
}

int main() {
    int v = 0;
    CK(curandGetVersion(&v));
    check(v >= 10000, "curandGetVersion");
    test_device(CURAND_RNG_PSEUDO_XORWOW, "xorwow");
    test_device(CURAND_RNG_PSEUDO_PHILOX4_32_10, "philox");
    test_device(CURAND_RNG_PSEUDO_MRG32K3A, "mrg32k3a");
    test_device(CURAND_RNG_PSEUDO_MTGP32, "mtgp32");
    test_host_and_offset();
    test_poisson();
    test_sobol();
    check(cudaDeviceSynchronize() == cudaSuccess, "no pending CUDA error");
    if (failures)
        printf("FAIL: %d failure(s)\n", failures);
    else
        printf("PASS\n");
    return failures ? 1 : 0;
}
