// SPDX-License-Identifier: Apache-2.0 OR MIT
// Copies 64 MiB to the device over and over until a call fails (the hostile test kills the
// backend meanwhile), then reports that error and the next call's, and exits with 2. With a
// SIGPIPE the program would die with status 141 instead.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

int main() {
    const size_t n = 64 << 20;
    char *h = static_cast<char *>(malloc(n));
    memset(h, 1, n);
    void *d = nullptr;
    if (cudaMalloc(&d, n) != cudaSuccess) {
        printf("cudaMalloc failed\n");
        return 3;
    }
    printf("READY\n");
    fflush(stdout);
    for (long i = 0; i < 1000000; i++) {
        cudaError_t e = cudaMemcpy(d, h, n, cudaMemcpyHostToDevice);
        if (e != cudaSuccess) {
            printf("ERROR %s\n", cudaGetErrorName(e));
            printf("AGAIN %s\n", cudaGetErrorName(cudaMemcpy(d, h, 16, cudaMemcpyHostToDevice)));
            printf("LAST %s\n", cudaGetErrorName(cudaGetLastError()));
            fflush(stdout);
            return 2;
        }
    }
    printf("never failed\n");
    return 0;
}
