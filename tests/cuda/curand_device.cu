// vcuda-test: libs=curand
// vcuda-test: expect=curand device API: all checks passed
// SPDX-License-Identifier: Apache-2.0 OR MIT
// cuRAND's device API (curand_kernel.h) in kernels, with the host library's discrete
// distributions: Philox and XORWOW states from curand_init, uniform and normal numbers,
// curand_poisson, and curand_discrete on distributions from curandCreatePoissonDistribution
// (a square histogram for small lambda, a normal approximation above 2000), checked by
// their statistics and per-seed determinism; the error codes of the distribution calls.
#include <cuda_runtime.h>
#include <curand.h>
#include <curand_kernel.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

static int failures = 0;

static void check(bool ok, const char *what) {
    printf("%s %s\n", ok ? "PASS" : "FAIL", what);
    if (!ok) failures++;
}

// A check made only under vcuda: silent when it passes, so the output matches a native run's.
static void check_vcuda(bool ok, const char *what) {
    if (!ok) check(false, what);
}

#define CUDA(call)                                                                         \
    do {                                                                                   \
        cudaError_t e_ = (call);                                                           \
        if (e_ != cudaSuccess) {                                                           \
            printf("FAIL %s:%d %s -> %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

static const int THREADS = 128, PER = 64, N = THREADS * PER;

__global__ void discrete(curandDiscreteDistribution_t d, unsigned *out, unsigned long long seed) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    curandStatePhilox4_32_10_t s;
    curand_init(seed, t, 0, &s);
    for (int i = 0; i < PER; i++) out[t * PER + i] = curand_discrete(&s, d);
}

__global__ void poisson(double lambda, unsigned *out, unsigned long long seed) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    curandStatePhilox4_32_10_t s;
    curand_init(seed, t, 0, &s);
    for (int i = 0; i < PER; i++) out[t * PER + i] = curand_poisson(&s, lambda);
}

__global__ void philox_uniform_normal(float *u, float *n, unsigned long long seed) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    curandStatePhilox4_32_10_t s;
    curand_init(seed, t, 0, &s);
    for (int i = 0; i < PER; i++) {
        u[t * PER + i] = curand_uniform(&s);
        n[t * PER + i] = curand_normal(&s);
    }
}

// XORWOW's curand_init skips ahead by subsequence with precomputed matrices (large
// __device__ tables): a few threads only.
__global__ void xorwow_uniform(float *u, int per, unsigned long long seed) {
    int t = threadIdx.x;
    curandState s;
    curand_init(seed, t, 0, &s);
    for (int i = 0; i < per; i++) u[t * per + i] = curand_uniform(&s);
}

static void stats(const std::vector<double> &v, double *mean, double *var) {
    double s = 0, s2 = 0;
    for (double x : v) s += x;
    *mean = s / v.size();
    for (double x : v) s2 += (x - *mean) * (x - *mean);
    *var = s2 / (v.size() - 1);
}

static std::vector<double> fetch_u32(const unsigned *d, int n) {
    std::vector<unsigned> h(n);
    CUDA(cudaMemcpy(h.data(), d, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
    return std::vector<double>(h.begin(), h.end());
}

static std::vector<double> fetch_f32(const float *d, int n) {
    std::vector<float> h(n);
    CUDA(cudaMemcpy(h.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost));
    return std::vector<double>(h.begin(), h.end());
}

// Mean within 5 standard errors, variance within 10% (N = 8192 samples). The figures are
// printed only on failure: native runs (tests/gpu/run.sh compares outputs) draw from
// NVIDIA's own tables.
static void check_moments(const std::vector<double> &v, double mean, double var, const char *what) {
    double m, s2;
    stats(v, &m, &s2);
    bool ok = fabs(m - mean) <= 5 * sqrt(var / v.size()) && fabs(s2 - var) <= 0.1 * var;
    if (!ok) printf("%s: mean %.4f (want %.4f), variance %.4f (want %.4f)\n", what, m, mean, s2, var);
    check(ok, what);
}

int main() {
    unsigned *d_out, *d_out2;
    float *d_u, *d_n;
    CUDA(cudaMalloc(&d_out, N * sizeof(unsigned)));
    CUDA(cudaMalloc(&d_out2, N * sizeof(unsigned)));
    CUDA(cudaMalloc(&d_u, N * sizeof(float)));
    CUDA(cudaMalloc(&d_n, N * sizeof(float)));

    // Discrete Poisson distributions: the square histogram (lambda <= 2000) and the normal
    // approximation (above).
    const double lambdas[] = {0.5, 4.5, 150.0, 5000.0};
    for (double lambda : lambdas) {
        curandDiscreteDistribution_t dist = nullptr;
        curandStatus_t st = curandCreatePoissonDistribution(lambda, &dist);
        char what[128];
        snprintf(what, sizeof what, "curandCreatePoissonDistribution(%g)", lambda);
        check(st == CURAND_STATUS_SUCCESS && dist != nullptr, what);
        if (st != CURAND_STATUS_SUCCESS) continue;
        discrete<<<THREADS / 64, 64>>>(dist, d_out, 42);
        CUDA(cudaGetLastError());
        snprintf(what, sizeof what, "curand_discrete, Poisson(%g)", lambda);
        std::vector<double> v = fetch_u32(d_out, N);
        check_moments(v, lambda, lambda, what);
        if (lambda == 4.5) {
            // The same seed gives the same numbers; another seed others.
            discrete<<<THREADS / 64, 64>>>(dist, d_out2, 42);
            check(fetch_u32(d_out2, N) == v, "curand_discrete: same seed, same numbers");
            discrete<<<THREADS / 64, 64>>>(dist, d_out2, 43);
            check(fetch_u32(d_out2, N) != v, "curand_discrete: another seed, other numbers");
            // P(X = 0) = e^-4.5 = 0.0111.
            double zeros = 0;
            for (double x : v) zeros += x == 0;
            double p0 = exp(-4.5), se = sqrt(p0 * (1 - p0) / N);
            check(fabs(zeros / N - p0) <= 5 * se, "curand_discrete: P(X = 0) for lambda 4.5");
        }
        check(curandDestroyDistribution(dist) == CURAND_STATUS_SUCCESS, "curandDestroyDistribution");
        // Twice: vcuda refuses; NVIDIA's cuRAND frees it again (a crash on an H100).
        if (getenv("VCUDA_SOCKET"))
            check_vcuda(curandDestroyDistribution(dist) == CURAND_STATUS_NOT_INITIALIZED,
                  "curandDestroyDistribution twice: CURAND_STATUS_NOT_INITIALIZED");
    }

    // The distribution calls' errors.
    curandDiscreteDistribution_t dist = nullptr;
    check(curandCreatePoissonDistribution(0.0, &dist) == CURAND_STATUS_OUT_OF_RANGE,
          "lambda 0: CURAND_STATUS_OUT_OF_RANGE");
    check(curandCreatePoissonDistribution(-3.0, &dist) == CURAND_STATUS_OUT_OF_RANGE,
          "lambda -3: CURAND_STATUS_OUT_OF_RANGE");
    // NaN passes cuRAND's range check (CUDA 13.0 on an H100, measured).
    check(curandCreatePoissonDistribution(NAN, &dist) == CURAND_STATUS_SUCCESS,
          "lambda NaN: accepted");
    check(curandDestroyDistribution(dist) == CURAND_STATUS_SUCCESS, "lambda NaN: destroyed");
    check(curandCreatePoissonDistribution(400001.0, &dist) == CURAND_STATUS_OUT_OF_RANGE,
          "lambda 400001: CURAND_STATUS_OUT_OF_RANGE");
    check(curandCreatePoissonDistribution(3.0, nullptr) == CURAND_STATUS_NOT_INITIALIZED,
          "null output: CURAND_STATUS_NOT_INITIALIZED");
    // What is no distribution: vcuda refuses it; NVIDIA's cuRAND frees it (a crash on an
    // H100).
    if (getenv("VCUDA_SOCKET"))
        check_vcuda(curandDestroyDistribution((curandDiscreteDistribution_t)d_out) ==
                  CURAND_STATUS_NOT_INITIALIZED,
              "destroying what is no distribution: CURAND_STATUS_NOT_INITIALIZED");

    // curand_poisson with lambda as an argument (Knuth's method below 64).
    poisson<<<THREADS / 64, 64>>>(10.0, d_out, 7);
    CUDA(cudaGetLastError());
    check_moments(fetch_u32(d_out, N), 10.0, 10.0, "curand_poisson(10)");

    // Philox uniforms in (0, 1] and standard normals.
    philox_uniform_normal<<<THREADS / 64, 64>>>(d_u, d_n, 1234);
    CUDA(cudaGetLastError());
    std::vector<double> u = fetch_f32(d_u, N);
    bool in_range = true;
    for (double x : u) in_range = in_range && x > 0 && x <= 1;
    check(in_range, "curand_uniform (Philox): every number in (0, 1]");
    check_moments(u, 0.5, 1.0 / 12, "curand_uniform (Philox)");
    check_moments(fetch_f32(d_n, N), 0.0, 1.0, "curand_normal (Philox)");

    // XORWOW: 8 subsequences of 1024.
    xorwow_uniform<<<1, 8>>>(d_u, N / 8, 99);
    CUDA(cudaGetLastError());
    check_moments(fetch_f32(d_u, N), 0.5, 1.0 / 12, "curand_uniform (XORWOW, 8 subsequences)");

    CUDA(cudaFree(d_out));
    CUDA(cudaFree(d_out2));
    CUDA(cudaFree(d_u));
    CUDA(cudaFree(d_n));
    if (failures) {
        printf("FAIL: %d failure(s)\n", failures);
        return 1;
    }
    printf("curand device API: all checks passed\nPASS\n");
    return 0;
}
