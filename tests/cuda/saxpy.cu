// SPDX-License-Identifier: Apache-2.0 OR MIT
// saxpy with a grid-stride loop.
#include <vector>
#include "common.h"

__global__ void saxpy(int n, float a, const float *__restrict__ x, float *__restrict__ y) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        y[i] = a * x[i] + y[i];
}

int main() {
    const int n = 1 << 18;
    std::vector<float> x(n), y(n), r(n);
    for (int i = 0; i < n; i++) {
        x[i] = 0.001f * i;
        y[i] = 2.0f - 0.0005f * i;
    }
    float *dx, *dy;
    CHECK(cudaMalloc(&dx, n * sizeof(float)));
    CHECK(cudaMalloc(&dy, n * sizeof(float)));
    CHECK(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dy, y.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    saxpy<<<64, 256>>>(n, 3.0f, dx, dy);
    CHECK(cudaMemcpy(r.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
    int bad = 0;
    // The device contracts a * x + y into one fma.
    for (int i = 0; i < n; i++) bad += r[i] != fmaf(3.0f, x[i], y[i]);
    EXPECT(bad == 0);
    CHECK(cudaFree(dx));
    CHECK(cudaFree(dy));
    return finish();
}
