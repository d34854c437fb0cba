// SPDX-License-Identifier: Apache-2.0 OR MIT
// cudaLaunchKernelEx with launch attributes, kernel names, a runtime kernel launched through
// the driver API (cudaGetFuncBySymbol + cuLaunchKernel from cudaGetDriverEntryPoint),
// programmatic dependent launch (a producer that triggers its dependents, a consumer that
// waits for its grid dependency, a programmatic event), and the single device's peer-access
// answers.
#include <cuda.h>
#include <cstring>
#include "common.h"

__global__ void add_k(int *p, int n, int k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] += k;
}

__global__ void produce(int *p, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = i;
    cudaTriggerProgrammaticLaunchCompletion();
}

__global__ void consume(const int *p, int *q, int n) {
    // Waits until the producer's writes are visible (it may have started before).
    cudaGridDependencySynchronize();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) q[i] = p[i] * 2;
}

static bool all_equal(const int *d, int n, int v) {
    int h[1024];
    CHECK(cudaMemcpy(h, d, n * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++)
        if (h[i] != v) return false;
    return true;
}

int main() {
    const int n = 1024;
    int *d;
    CHECK(cudaMalloc(&d, n * sizeof(int)));
    CHECK(cudaMemset(d, 0, n * sizeof(int)));

    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(n / 128);
    cfg.blockDim = dim3(128);
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributePriority;
    attr[0].val.priority = 0;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    CHECK(cudaLaunchKernelEx(&cfg, add_k, d, n, 5));
    CHECK(cudaDeviceSynchronize());
    EXPECT(all_equal(d, n, 5));
    // A cooperative launch where the device supports them (tests/cuda/cooperative.cu
    // covers grid-wide synchronization).
    int coop = 0;
    CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, 0));
    attr[0].id = cudaLaunchAttributeCooperative;
    attr[0].val.cooperative = 1;
    if (coop) {
        CHECK(cudaLaunchKernelEx(&cfg, add_k, d, n, 1));
        CHECK(cudaDeviceSynchronize());
        EXPECT(all_equal(d, n, 6));
        CHECK(cudaLaunchKernelEx(&cfg, add_k, d, n, -1));
    } else {
        EXPECT_ERR(cudaLaunchKernelEx(&cfg, add_k, d, n, 1), cudaErrorNotSupported);
    }
    // Clusters where the device offers them (NVIDIA's H100 does, and so do vcuda's;
    // tests/cuda/cluster.cu covers what a cluster's blocks share).
    int clusters = 0;
    CHECK(cudaDeviceGetAttribute(&clusters, cudaDevAttrClusterLaunch, 0));
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = 2;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    if (clusters) {
        CHECK(cudaLaunchKernelEx(&cfg, add_k, d, n, 1));
        CHECK(cudaDeviceSynchronize());
        EXPECT(all_equal(d, n, 6));
        CHECK(cudaLaunchKernelEx(&cfg, add_k, d, n, -1));
    } else {
        EXPECT_ERR(cudaLaunchKernelEx(&cfg, add_k, d, n, 1), cudaErrorNotSupported);
    }
    cudaGetLastError();

    // Programmatic dependent launch: the consumer may overlap the producer and waits for it
    // in the kernel; a programmatic event fires once the producer's blocks have triggered.
    {
        int *q;
        CHECK(cudaMalloc(&q, n * sizeof(int)));
        cudaStream_t s;
        CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        cudaEvent_t done;
        CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
        cudaLaunchConfig_t pc = cfg;
        pc.stream = s;
        cudaLaunchAttribute pa[1];
        pa[0].id = cudaLaunchAttributeProgrammaticEvent;
        pa[0].val.programmaticEvent.event = done;
        pa[0].val.programmaticEvent.flags = 0;
        pa[0].val.programmaticEvent.triggerAtBlockStart = 0;
        pc.attrs = pa;
        pc.numAttrs = 1;
        CHECK(cudaLaunchKernelEx(&pc, produce, d, n));
        pa[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        pa[0].val.programmaticStreamSerializationAllowed = 1;
        CHECK(cudaLaunchKernelEx(&pc, consume, (const int *)d, q, n));
        CHECK(cudaEventSynchronize(done));
        CHECK(cudaStreamSynchronize(s));
        int h[n];
        CHECK(cudaMemcpy(h, q, sizeof h, cudaMemcpyDeviceToHost));
        bool ok = true;
        for (int i = 0; i < n; i++) ok &= h[i] == 2 * i;
        EXPECT(ok);
        CHECK(cudaMemset(d, 0, n * sizeof(int)));
        add_k<<<n / 128, 128>>>(d, n, 5);
        CHECK(cudaEventDestroy(done));
        CHECK(cudaStreamDestroy(s));
        CHECK(cudaFree(q));
    }

#if CUDART_VERSION >= 12040
    // The kernel's parameter layout.
    size_t off = 99, size = 99;
    CHECK(cudaFuncGetParamInfo((const void *)add_k, 1, &off, &size));
    EXPECT(off == 8 && size == 4);
    CHECK(cudaFuncGetParamInfo((const void *)add_k, 0, &off, &size));
    EXPECT(off == 0 && size == 8);
    EXPECT_ERR(cudaFuncGetParamInfo((const void *)add_k, 3, &off, &size), cudaErrorInvalidValue);
    cudaGetLastError();
#endif
    const char *name = nullptr;
    CHECK(cudaFuncGetName(&name, (const void *)add_k));
    EXPECT(name && strstr(name, "add_k") != nullptr);

    // The runtime's kernel, launched through the driver API.
    cudaFunction_t f;
    CHECK(cudaGetFuncBySymbol(&f, (const void *)add_k));
    void *p = nullptr;
    cudaDriverEntryPointQueryResult q;
    CHECK(cudaGetDriverEntryPoint("cuLaunchKernel", &p, cudaEnableDefault, &q));
    auto launch = (decltype(&cuLaunchKernel))p;
    int nn = n, k = 2;
    void *args[] = {&d, &nn, &k};
    EXPECT(launch((CUfunction)f, n / 128, 1, 1, 128, 1, 1, 0, nullptr, args, nullptr) == CUDA_SUCCESS);
    CHECK(cudaDeviceSynchronize());
    EXPECT(all_equal(d, n, 7));

    // One device: no peers.
    int can = -1;
    // As NVIDIA's runtime answers on a one-GPU machine (measured on an H100).
    CHECK(cudaDeviceCanAccessPeer(&can, 0, 0));
    EXPECT(can == 0);
    EXPECT_ERR(cudaDeviceEnablePeerAccess(0, 0), cudaErrorPeerAccessUnsupported);
    EXPECT_ERR(cudaDeviceEnablePeerAccess(1, 0), cudaErrorInvalidDevice);
    cudaGetLastError();

    CHECK(cudaFree(d));
    return finish();
}
