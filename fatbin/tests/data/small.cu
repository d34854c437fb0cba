// SPDX-License-Identifier: Apache-2.0 OR MIT
// A one-kernel fixture for the multi-arch, debug and CUDA 12.4 variants (see gen.sh).
__global__ void axpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

int main() {
    axpy<<<1, 32>>>(2.0f, nullptr, nullptr, 0);
    return 0;
}
