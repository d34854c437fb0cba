// SPDX-License-Identifier: Apache-2.0 OR MIT
// Stream capture, graphs and stream-ordered allocation through the driver API, as CuPy
// and PyTorch use them: cuMemAllocAsync from the default pool, cuStreamBeginCapture_v2 of
// driver launches and copies, cuStreamIsCapturing, cuStreamEndCapture, cuGraphGetNodes,
// cuGraphInstantiateWithFlags, cuGraphUpload, cuGraphLaunch replayed three times,
// cuMemFreeAsync, and the pool's release threshold and trim.
#include <cuda.h>
#include <dlfcn.h>
#include "common.h"

__global__ void axpb(float *x, float a, float b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = a * x[i] + b;
}

#define CU(call)                                                                             \
    do {                                                                                     \
        CUresult r_ = (call);                                                                \
        if (r_ != CUDA_SUCCESS) {                                                            \
            printf("FAIL: %s:%d: %s -> %d\n", __FILE__, __LINE__, #call, (int)r_);           \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)

static void *lib;
template <typename F> static F sym(const char *name) {
    void *p = dlsym(lib, name);
    if (!p) {
        printf("FAIL: dlsym %s\n", name);
        exit(1);
    }
    return (F)p;
}
#define SYM(f, name) auto f##_ = sym<decltype(&f)>(name)

int main() {
    CHECK(cudaFree(0));
    lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib) {
        printf("FAIL: dlopen libcuda.so.1: %s\n", dlerror());
        return 1;
    }
    SYM(cuStreamCreate, "cuStreamCreate");
    SYM(cuStreamBeginCapture, "cuStreamBeginCapture_v2");
    SYM(cuStreamEndCapture, "cuStreamEndCapture");
    SYM(cuStreamIsCapturing, "cuStreamIsCapturing");
    SYM(cuStreamSynchronize, "cuStreamSynchronize");
    SYM(cuGraphGetNodes, "cuGraphGetNodes");
    SYM(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags");
    SYM(cuGraphUpload, "cuGraphUpload");
    SYM(cuGraphLaunch, "cuGraphLaunch");
    SYM(cuGraphExecDestroy, "cuGraphExecDestroy");
    SYM(cuGraphDestroy, "cuGraphDestroy");
    SYM(cuMemAllocAsync, "cuMemAllocAsync");
    SYM(cuMemFreeAsync, "cuMemFreeAsync");
    SYM(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
    SYM(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
    SYM(cuDeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool");
    SYM(cuMemPoolSetAttribute, "cuMemPoolSetAttribute");
    SYM(cuMemPoolGetAttribute, "cuMemPoolGetAttribute");
    SYM(cuMemPoolTrimTo, "cuMemPoolTrimTo");
    SYM(cuLaunchKernel, "cuLaunchKernel");

    CUstream s;
    CU(cuStreamCreate_(&s, CU_STREAM_NON_BLOCKING));
    const int n = 1000;
    CUdeviceptr x;
    CU(cuMemAllocAsync_(&x, n * sizeof(float), s));
    static float h[n], back[n];
    for (int i = 0; i < n; i++) h[i] = (float)i;
    CU(cuMemcpyHtoDAsync_(x, h, sizeof h, s));
    CU(cuStreamSynchronize_(s));

    CUfunction f;
    CHECK(cudaGetFuncBySymbol(&f, (const void *)axpb));
    float a = 2.0f, b = 1.0f;
    int nn = n;
    void *args[] = {&x, &a, &b, &nn};
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    CU(cuStreamIsCapturing_(s, &st));
    EXPECT(st == CU_STREAM_CAPTURE_STATUS_NONE);
    CU(cuStreamBeginCapture_(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CU(cuStreamIsCapturing_(s, &st));
    EXPECT(st == CU_STREAM_CAPTURE_STATUS_ACTIVE);
    CU(cuLaunchKernel_(f, (n + 127) / 128, 1, 1, 128, 1, 1, 0, s, args, nullptr));
    CU(cuLaunchKernel_(f, (n + 127) / 128, 1, 1, 128, 1, 1, 0, s, args, nullptr));
    CUgraph g;
    CU(cuStreamEndCapture_(s, &g));
    size_t nodes = 0;
    CU(cuGraphGetNodes_(g, nullptr, &nodes));
    EXPECT(nodes == 2);
    CUgraphExec e;
    CU(cuGraphInstantiateWithFlags_(&e, g, 0));
    CU(cuGraphUpload_(e, s));
    for (int k = 0; k < 3; k++) CU(cuGraphLaunch_(e, s));
    CU(cuMemcpyDtoHAsync_(back, x, sizeof back, s));
    CU(cuStreamSynchronize_(s));
    // Six times x -> 2x + 1.
    for (int i = 0; i < n; i++) {
        double v = i;
        for (int k = 0; k < 6; k++) v = 2 * v + 1;
        EXPECT(close_enough(back[i], v));
    }
    CU(cuGraphExecDestroy_(e));
    CU(cuGraphDestroy_(g));
    CU(cuMemFreeAsync_(x, s));
    CU(cuStreamSynchronize_(s));

    CUmemoryPool pool;
    CU(cuDeviceGetDefaultMemPool_(&pool, 0));
    cuuint64_t threshold = 1 << 20, got = 0;
    CU(cuMemPoolSetAttribute_(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
    CU(cuMemPoolGetAttribute_(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &got));
    EXPECT(got == threshold);
    CU(cuMemPoolTrimTo_(pool, 0));
    return finish();
}
