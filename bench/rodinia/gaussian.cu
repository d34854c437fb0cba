// SPDX-License-Identifier: Apache-2.0 OR MIT
// Gaussian elimination: for each column, one kernel computes the multipliers of the rows
// below the pivot and a second updates those rows (matrix and right-hand side).
#include "cuda.h"
#include "gaussian.h"

__global__ void fan1(const float* a, float* m, int t) {
    int i = t + 1 + blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) return;
    m[i] = a[i * N + t] / a[t * N + t];
}

__global__ void fan2(float* a, float* b, const float* m, int t) {
    int j = t + blockIdx.x * blockDim.x + threadIdx.x;
    int i = t + 1 + blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= N || j >= N) return;
    a[i * N + j] -= m[i] * a[t * N + j];
    if (j == t) b[i] -= m[i] * b[t];
}

int main() {
    float *a, *b;
    make_system(&a, &b);
    float* d_a = to_device(a, N * N);
    float* d_b = to_device(b, N);
    float* d_m;
    CHECK(cudaMalloc(&d_m, sizeof(float) * N));
    double t0 = now();
    for (int t = 0; t < N - 1; t++) {
        int rows = N - 1 - t, cols = N - t;
        fan1<<<(rows + 255) / 256, 256>>>(d_a, d_m, t);
        dim3 block(16, 16), grid((cols + 15) / 16, (rows + 15) / 16);
        fan2<<<grid, block>>>(d_a, d_b, d_m, t);
    }
    CHECK(cudaDeviceSynchronize());
    double t = now() - t0;
    CHECK(cudaMemcpy(a, d_a, sizeof(float) * N * N, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(b, d_b, sizeof(float) * N, cudaMemcpyDeviceToHost));
    report("gaussian", t, solve_back(a, b));
    return 0;
}
