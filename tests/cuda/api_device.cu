// SPDX-License-Identifier: Apache-2.0 OR MIT
// Device queries, attributes, flags, limits, versions and error strings; warpSize in a
// kernel (nvcc writes the predefined identifier WARP_SZ for it).
#include "common.h"

__global__ void warp_size(int *out) { out[threadIdx.x] = warpSize * 1000 + threadIdx.x % warpSize; }

int main() {
    int n = -1;
    CHECK(cudaGetDeviceCount(&n));
    EXPECT(n >= 1);
    int dev = -1;
    CHECK(cudaGetDevice(&dev));
    EXPECT(dev == 0);
    EXPECT_ERR(cudaSetDevice(n), cudaErrorInvalidDevice);
    EXPECT_ERR(cudaSetDevice(-1), cudaErrorInvalidDevice);
    EXPECT(cudaGetLastError() == cudaErrorInvalidDevice);
    EXPECT(cudaGetLastError() == cudaSuccess);
    CHECK(cudaSetDevice(0));

    cudaDeviceProp p;
    memset(&p, 0xab, sizeof p);
    CHECK(cudaGetDeviceProperties(&p, 0));
    printf("device: %s cc %d.%d, %d SMs, warp %d, %zu MiB\n", p.name, p.major, p.minor,
           p.multiProcessorCount, p.warpSize, p.totalGlobalMem >> 20);
    EXPECT(strlen(p.name) > 0 && strlen(p.name) < sizeof p.name);
    EXPECT(p.warpSize == 32);
    EXPECT(p.maxThreadsPerBlock >= 512);
    EXPECT(p.major >= 7);
    EXPECT(p.totalGlobalMem > 0);
    EXPECT(p.maxThreadsDim[0] >= 512 && p.maxGridSize[0] >= 65535);
    EXPECT(p.sharedMemPerBlock >= 48 * 1024);
    EXPECT_ERR(cudaGetDeviceProperties(&p, n), cudaErrorInvalidDevice);
    EXPECT_ERR(cudaGetDeviceProperties(nullptr, 0), cudaErrorInvalidValue);

    int v = 0;
    CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrWarpSize, 0));
    EXPECT(v == 32);
    CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrComputeCapabilityMajor, 0));
    EXPECT(v == p.major);
    CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, 0));
    EXPECT(v == p.multiProcessorCount);
    CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrMaxThreadsPerBlock, 0));
    EXPECT(v == p.maxThreadsPerBlock);
    EXPECT_ERR(cudaDeviceGetAttribute(&v, (cudaDeviceAttr)100000, 0), cudaErrorInvalidValue);
    EXPECT_ERR(cudaDeviceGetAttribute(&v, cudaDevAttrWarpSize, n), cudaErrorInvalidDevice);

    unsigned flags = 123;
    CHECK(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync));
    CHECK(cudaGetDeviceFlags(&flags));
    EXPECT((flags & cudaDeviceScheduleMask) == cudaDeviceScheduleBlockingSync);
    EXPECT_ERR(cudaSetDeviceFlags(0xffff0000u), cudaErrorInvalidValue);

    size_t lim = 0;
    CHECK(cudaDeviceGetLimit(&lim, cudaLimitPrintfFifoSize));
    EXPECT(lim > 0);
    CHECK(cudaDeviceSetLimit(cudaLimitPrintfFifoSize, 2 << 20));
    CHECK(cudaDeviceGetLimit(&lim, cudaLimitPrintfFifoSize));
    EXPECT(lim >= (2u << 20));
    CHECK(cudaDeviceSetLimit(cudaLimitStackSize, 4096));

    size_t fr = 0, tot = 0;
    CHECK(cudaMemGetInfo(&fr, &tot));
    EXPECT(tot > 0 && fr <= tot);

    int rt = 0, drv = 0;
    CHECK(cudaRuntimeGetVersion(&rt));
    CHECK(cudaDriverGetVersion(&drv));
    printf("runtime %d driver %d\n", rt, drv);
    EXPECT(rt >= 12000 && drv >= 12000);

    int lo = 1, hi = 1;
    CHECK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
    EXPECT(lo == 0 && hi < 0);
    int can = -1;
    CHECK(cudaDeviceCanAccessPeer(&can, 0, 0));
    EXPECT(can == 0);

    EXPECT(strcmp(cudaGetErrorString(cudaErrorMemoryAllocation), "out of memory") == 0);
    EXPECT(strcmp(cudaGetErrorName(cudaErrorInvalidValue), "cudaErrorInvalidValue") == 0);
    EXPECT(strcmp(cudaGetErrorName((cudaError_t)12345), "unrecognized error code") == 0);
    EXPECT(strcmp(cudaGetErrorString(cudaSuccess), "no error") == 0);

    CHECK(cudaDeviceSynchronize());
    CHECK(cudaDeviceReset());
    CHECK(cudaGetDeviceProperties(&p, 0));
    // The thread's last error (cudaSetDeviceFlags' above) survives the reset, as with
    // NVIDIA's runtime.
    EXPECT(cudaGetLastError() == cudaErrorInvalidValue);
    EXPECT(cudaPeekAtLastError() == cudaSuccess);

    int *w, hw[64];
    CHECK(cudaMalloc(&w, sizeof hw));
    warp_size<<<1, 64>>>(w);
    CHECK(cudaMemcpy(hw, w, sizeof hw, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 64; i++) EXPECT(hw[i] == p.warpSize * 1000 + i % p.warpSize);
    CHECK(cudaFree(w));

    // Limits and capabilities (NVIDIA's answers on an H100, CUDA 13.0).
    size_t max_w = 0;
    cudaChannelFormatDesc f1 = cudaCreateChannelDesc<float>(), f4 = cudaCreateChannelDesc<float4>();
    cudaChannelFormatDesc c1 = cudaCreateChannelDesc<char>(), d2 = cudaCreateChannelDesc<float2>();
    CHECK(cudaDeviceGetTexture1DLinearMaxWidth(&max_w, &f1, 0));
    EXPECT(max_w == (size_t)1 << 30);
    CHECK(cudaDeviceGetTexture1DLinearMaxWidth(&max_w, &c1, 0));
    EXPECT(max_w == (size_t)1 << 30);
    CHECK(cudaDeviceGetTexture1DLinearMaxWidth(&max_w, &d2, 0));
    EXPECT(max_w == (size_t)1 << 29);
    CHECK(cudaDeviceGetTexture1DLinearMaxWidth(&max_w, &f4, 0));
    EXPECT(max_w == (size_t)1 << 28);
    cudaChannelFormatDesc odd = cudaCreateChannelDesc(3, 0, 0, 0, cudaChannelFormatKindSigned);
    EXPECT_ERR(cudaDeviceGetTexture1DLinearMaxWidth(&max_w, &odd, 0),
               cudaErrorInvalidChannelDescriptor);
    EXPECT_ERR(cudaDeviceGetTexture1DLinearMaxWidth(nullptr, &f1, 0), cudaErrorInvalidValue);
    EXPECT_ERR(cudaDeviceGetTexture1DLinearMaxWidth(&max_w, &f1, 5), cudaErrorInvalidDevice);
    cudaArray_t arr;
    CHECK(cudaMallocArray(&arr, &f1, 64, 64));
    cudaArrayMemoryRequirements req = {};
    // Only arrays made with cudaArrayDeferredMapping have requirements.
    EXPECT_ERR(cudaArrayGetMemoryRequirements(&req, arr, 0), cudaErrorInvalidValue);
    CHECK(cudaFreeArray(arr));
#if CUDART_VERSION >= 13000
    cudaAtomicOperation ops[] = {cudaAtomicOperationIntegerAdd, cudaAtomicOperationCAS,
                                 cudaAtomicOperationFloatMax};
    unsigned caps[3] = {7, 7, 7};
    CHECK(cudaDeviceGetHostAtomicCapabilities(caps, ops, 3, 0));
    EXPECT(caps[0] == 0 && caps[1] == 0 && caps[2] == 0);
    EXPECT_ERR(cudaDeviceGetHostAtomicCapabilities(caps, ops, 0, 0), cudaErrorInvalidValue);
    EXPECT_ERR(cudaDeviceGetHostAtomicCapabilities(nullptr, ops, 1, 0), cudaErrorInvalidValue);
    cudaAtomicOperation unknown = (cudaAtomicOperation)99;
    EXPECT_ERR(cudaDeviceGetHostAtomicCapabilities(caps, &unknown, 1, 0), cudaErrorInvalidValue);
    EXPECT_ERR(cudaDeviceGetHostAtomicCapabilities(caps, ops, 1, 7), cudaErrorInvalidDevice);
    EXPECT_ERR(cudaDeviceGetP2PAtomicCapabilities(caps, ops, 3, 0, 0), cudaErrorInvalidDevice);
#endif
    cudaGetLastError();
    return finish();
}
