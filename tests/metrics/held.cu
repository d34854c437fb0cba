// SPDX-License-Identifier: Apache-2.0 OR MIT
// vcuda-test: expect=held 4194304 bytes
// The metrics test's program: it allocates and fills device memory, copies it back, and
// holds it until a line (or the end) arrives on its standard input, so the test can scrape
// the backend's metrics while the session lives.
#include <cstdio>
#include <cstdlib>

__global__ void fill(float *p, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) p[i] = 1.0f;
}

int main() {
    const size_t n = 1 << 20;
    float *d = nullptr;
    if (cudaMalloc(&d, n * sizeof(float)) != cudaSuccess) return 1;
    fill<<<(n + 255) / 256, 256>>>(d, n);
    float *h = (float *)malloc(n * sizeof(float));
    if (!h || cudaMemcpy(h, d, n * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess)
        return 1;
    if (h[n - 1] != 1.0f) return 1;
    printf("held %zu bytes\n", n * sizeof(float));
    fflush(stdout);
    getchar();
    cudaFree(d);
    printf("freed\n");
    return 0;
}
