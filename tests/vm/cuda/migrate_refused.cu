// SPDX-License-Identifier: Apache-2.0 OR MIT
// vcuda-vm-test: expect=migrate-refused: PASS
// vcuda-vm-test: expect_err=cannot migrate a texture or surface object whose array or memory is gone
// vcuda-vm-test: expect_err=the guest runs on where it was
// vcuda-vm-test: vm=--migrate-after 6
// A migration that cannot carry a session (a texture object over memory freed since: using
// it is undefined on a GPU too, and it cannot be made again on the other side) fails
// cleanly:
// `vcuda vm run --migrate-after` reports why, and the program runs on at the source with
// its state intact, every result checked.
#include <cuda_runtime.h>
#include <stdio.h>
#include <unistd.h>

#define CK(x)                                                                                 \
    do {                                                                                      \
        cudaError_t e_ = (x);                                                                 \
        if (e_ != cudaSuccess) {                                                              \
            printf("%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));        \
            return 1;                                                                         \
        }                                                                                     \
    } while (0)

__global__ void add(unsigned *a, int n, unsigned k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] += k;
}

int main() {
    const int n = 1024, steps = 80;
    unsigned h[n], *d;
    CK(cudaMalloc(&d, n * sizeof(unsigned)));
    float *gone;
    CK(cudaMalloc(&gone, 4096));
    cudaResourceDesc res = {};
    res.resType = cudaResourceTypeLinear;
    res.res.linear.devPtr = gone;
    res.res.linear.desc = cudaCreateChannelDesc<float>();
    res.res.linear.sizeInBytes = 4096;
    cudaTextureDesc td = {};
    td.readMode = cudaReadModeElementType;
    cudaTextureObject_t tex;
    CK(cudaCreateTextureObject(&tex, &res, &td, nullptr));
    CK(cudaFree(gone));
    CK(cudaMemset(d, 0, n * sizeof(unsigned)));
    int bad = 0;
    for (int k = 1; k <= steps; k++) {
        add<<<(n + 255) / 256, 256>>>(d, n, k);
        CK(cudaMemcpy(h, d, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
        unsigned want = k * (k + 1) / 2;
        for (int i = 0; i < n; i++) bad += h[i] != want;
        usleep(250 * 1000);
    }
    CK(cudaFree(d));
    printf("migrate-refused: %s\n", bad ? "FAIL" : "PASS");
    return bad ? 1 : 0;
}
