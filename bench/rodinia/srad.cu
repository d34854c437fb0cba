// SPDX-License-Identifier: Apache-2.0 OR MIT
// SRAD (see srad.h): per iteration a reduction kernel for the image's statistics, a kernel
// for the coefficients and one for the diffusion.
#include "cuda.h"
#include "srad.h"

__global__ void stats(const float* J, double* out) {
    __shared__ double s[256], s2[256];
    int t = threadIdx.x;
    double a = 0, b = 0;
    for (long i = blockIdx.x * 256L + t; i < (long)ROWS * COLS; i += 256L * gridDim.x) {
        a += J[i];
        b += (double)J[i] * J[i];
    }
    s[t] = a;
    s2[t] = b;
    __syncthreads();
    for (int w = 128; w > 0; w >>= 1) {
        if (t < w) {
            s[t] += s[t + w];
            s2[t] += s2[t + w];
        }
        __syncthreads();
    }
    if (t == 0) {
        atomicAdd(&out[0], s[0]);
        atomicAdd(&out[1], s2[0]);
    }
}

__global__ void coeff(const float* J, float* dN, float* dS, float* dW, float* dE, float* C,
                      float q0sqr) {
    int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r >= ROWS || c >= COLS) return;
    int k = r * COLS + c;
    SRAD_COEFF(J, r, c, q0sqr, dN[k], dS[k], dW[k], dE[k], C[k]);
}

__global__ void diffuse(float* J, const float* dN, const float* dS, const float* dW,
                        const float* dE, const float* C) {
    int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r >= ROWS || c >= COLS) return;
    int k = r * COLS + c;
    float d = C[k] * dN[k] + C[SRAD_S(r) * COLS + c] * dS[k] + C[k] * dW[k] +
              C[r * COLS + SRAD_E(c)] * dE[k];
    J[k] += 0.25f * LAMBDA * d;
}

int main() {
    float* h = make_image();
    size_t n = (size_t)ROWS * COLS;
    float* J = to_device(h, n);
    float *dN, *dS, *dW, *dE, *C;
    double* st;
    for (float** p : {&dN, &dS, &dW, &dE, &C}) CHECK(cudaMalloc(p, sizeof(float) * n));
    CHECK(cudaMalloc(&st, 2 * sizeof(double)));
    dim3 block(16, 16), grid(COLS / 16, ROWS / 16);
    double t = now();
    for (int it = 0; it < ITERATIONS; it++) {
        CHECK(cudaMemset(st, 0, 2 * sizeof(double)));
        stats<<<64, 256>>>(J, st);
        double s[2];
        CHECK(cudaMemcpy(s, st, sizeof s, cudaMemcpyDeviceToHost));
        float q0sqr = q0sqr_of(s[0], s[1]);
        coeff<<<grid, block>>>(J, dN, dS, dW, dE, C, q0sqr);
        diffuse<<<grid, block>>>(J, dN, dS, dW, dE, C);
    }
    CHECK(cudaDeviceSynchronize());
    t = now() - t;
    CHECK(cudaMemcpy(h, J, sizeof(float) * n, cudaMemcpyDeviceToHost));
    report("srad", t, checksum(h));
    return 0;
}
