// SPDX-License-Identifier: Apache-2.0 OR MIT
// Double- and single-precision math library functions against the host's libm.
#include <vector>
#include "common.h"

__global__ void dmath(const double *x, double *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double v = x[i];
    y[8 * i + 0] = sin(v);
    y[8 * i + 1] = cos(v);
    y[8 * i + 2] = exp(v * 0.1);
    y[8 * i + 3] = log(v + 1.5);
    y[8 * i + 4] = sqrt(v + 2.0);
    y[8 * i + 5] = pow(v + 2.0, 1.7);
    y[8 * i + 6] = tanh(v * 0.3) + atan2(v, 3.0);
    y[8 * i + 7] = fma(v, 1.5, -0.25) / (v + 7.0);
}

__global__ void fmath(const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    y[4 * i + 0] = sinf(v) + cosf(v);
    y[4 * i + 1] = expf(v * 0.1f) * logf(v + 1.5f);
    y[4 * i + 2] = sqrtf(v + 2.0f) / (v + 3.0f);
    y[4 * i + 3] = powf(v + 2.0f, 0.5f);
}

int main() {
    const int n = 1000;
    std::vector<double> x(n), y(8 * n);
    std::vector<float> xf(n), yf(4 * n);
    for (int i = 0; i < n; i++) {
        x[i] = -1.0 + i * 0.0123;
        xf[i] = (float)x[i];
    }
    double *dx, *dy;
    float *fx, *fy;
    CHECK(cudaMalloc(&dx, n * 8));
    CHECK(cudaMalloc(&dy, 8 * n * 8));
    CHECK(cudaMalloc(&fx, n * 4));
    CHECK(cudaMalloc(&fy, 4 * n * 4));
    CHECK(cudaMemcpy(dx, x.data(), n * 8, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(fx, xf.data(), n * 4, cudaMemcpyHostToDevice));
    dmath<<<(n + 127) / 128, 128>>>(dx, dy, n);
    fmath<<<(n + 127) / 128, 128>>>(fx, fy, n);
    CHECK(cudaMemcpy(y.data(), dy, 8 * n * 8, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(yf.data(), fy, 4 * n * 4, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < n; i++) {
        double v = x[i];
        double r[8] = {sin(v), cos(v), exp(v * 0.1), log(v + 1.5), sqrt(v + 2.0), pow(v + 2.0, 1.7),
                       tanh(v * 0.3) + atan2(v, 3.0), fma(v, 1.5, -0.25) / (v + 7.0)};
        for (int k = 0; k < 8; k++)
            if (!close_enough(y[8 * i + k], r[k], 1e-13)) {
                if (bad++ < 5) printf("double f%d(%g): %.17g vs %.17g\n", k, v, y[8 * i + k], r[k]);
            }
        float vf = xf[i];
        float rf[4] = {sinf(vf) + cosf(vf), expf(vf * 0.1f) * logf(vf + 1.5f), sqrtf(vf + 2.0f) / (vf + 3.0f), powf(vf + 2.0f, 0.5f)};
        for (int k = 0; k < 4; k++)
            if (!close_enough(yf[4 * i + k], rf[k], 2e-6)) {
                if (bad++ < 5) printf("float f%d(%g): %.9g vs %.9g\n", k, vf, yf[4 * i + k], rf[k]);
            }
    }
    EXPECT(bad == 0);
    return finish();
}
