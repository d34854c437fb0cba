// SPDX-License-Identifier: Apache-2.0 OR MIT
// A child forked after CUDA started must not use its parent's CUDA state: every call there
// answers an initialization error (cudaErrorInitializationError, CUDA_ERROR_NOT_INITIALIZED:
// both 3), while the parent goes on working.
#include <cuda.h>
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>
#include "common.h"

__global__ void fill(int *p, int v) { p[threadIdx.x] = v + threadIdx.x; }

int main() {
    int *d;
    CHECK(cudaMalloc(&d, 64 * sizeof(int)));
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int *e = nullptr;
        int bad = 0;
        if (cudaMalloc(&e, 16) != cudaErrorInitializationError) bad |= 1;
        CUdeviceptr p = 0;
        void *lib = dlopen("libcuda.so.1", RTLD_NOW);
        auto alloc = lib ? (decltype(&cuMemAlloc))dlsym(lib, "cuMemAlloc_v2") : nullptr;
        if (!alloc || alloc(&p, 16) != CUDA_ERROR_NOT_INITIALIZED) bad |= 2;
        _exit(bad);
    }
    EXPECT(pid > 0);
    int status = -1;
    EXPECT(waitpid(pid, &status, 0) == pid);
    EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0))
        printf("FAIL: the child's calls did not all fail with 3 (mask %d)\n", WEXITSTATUS(status));
    // The parent's session is intact.
    fill<<<1, 64>>>(d, 100);
    int h[64];
    CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    EXPECT(h[0] == 100 && h[63] == 163);
    CHECK(cudaFree(d));
    return finish();
}
