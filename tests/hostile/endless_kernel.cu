// SPDX-License-Identifier: Apache-2.0 OR MIT
// Launches a kernel that never ends, says READY, then waits for it. The hostile tests either
// kill this program meanwhile (the backend must stop the kernel) or run the backend with
// --kernel-timeout (the wait must fail with cudaErrorLaunchTimeout).
#include <cstdio>
#include <cuda_runtime.h>

__global__ void spin(volatile int *flag) {
    while (*flag == 0) {
    }
}

int main() {
    int *flag = nullptr;
    if (cudaMalloc(&flag, sizeof(int)) != cudaSuccess || cudaMemset(flag, 0, sizeof(int)) != cudaSuccess) {
        printf("setup failed\n");
        return 3;
    }
    spin<<<64, 128>>>(flag);
    printf("READY\n");
    fflush(stdout);
    cudaError_t e = cudaDeviceSynchronize();
    printf("SYNC %s\n", cudaGetErrorName(e));
    return e == cudaSuccess ? 0 : 2;
}
