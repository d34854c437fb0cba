// SPDX-License-Identifier: Apache-2.0 OR MIT
// Hotspot: a thermal simulation of a chip, one kernel launch per time step over a 2-D grid.
#include "cuda.h"
#include "hotspot.h"

__global__ void step(const float* t, const float* p, float* out, coeffs k) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r >= ROWS || c >= COLS) return;
    out[r * COLS + c] = HOTSPOT_CELL(t, p, r, c, k);
}

int main() {
    float *temp, *power;
    make_input(&temp, &power);
    coeffs k = make_coeffs();
    float* a = to_device(temp, ROWS * COLS);
    float* p = to_device(power, ROWS * COLS);
    float* b;
    CHECK(cudaMalloc(&b, sizeof(float) * ROWS * COLS));
    dim3 block(16, 16), grid(COLS / 16, ROWS / 16);
    double t = now();
    for (int s = 0; s < STEPS; s++) {
        step<<<grid, block>>>(a, p, b, k);
        float* x = a;
        a = b;
        b = x;
    }
    CHECK(cudaDeviceSynchronize());
    t = now() - t;
    CHECK(cudaMemcpy(temp, a, sizeof(float) * ROWS * COLS, cudaMemcpyDeviceToHost));
    report("hotspot", t, checksum(temp));
    return 0;
}
