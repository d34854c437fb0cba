// SPDX-License-Identifier: Apache-2.0 OR MIT
// Separate compilation fixture, part A (see gen.sh).
__device__ float helper(float x);

__global__ void rdc_kernel(float* out, int n) {
    if (threadIdx.x < n) out[threadIdx.x] = helper((float)threadIdx.x);
}

int main() { return 0; }
