// SPDX-License-Identifier: Apache-2.0 OR MIT
// Stream attributes and identity, and the runtime's hint-only configuration calls: an L2
// access policy window set on a stream (validated against the device's limit), read back,
// copied to another stream, forgotten when the stream is destroyed; synchronization policy,
// memory synchronization domains, priority; stream ids; shared memory bank configuration;
// cudaDeviceGetByPCIBusId round-tripping cudaDeviceGetPCIBusId; cudaSetValidDevices;
// cudaOccupancyAvailableDynamicSMemPerBlock against the occupancy calculator. Work on a
// stream with attributes set still runs.
#include "common.h"

__global__ void fill(int *p, int v) { p[threadIdx.x] = v + threadIdx.x; }

__global__ void uses_shared(int *p) {
    extern __shared__ int dyn[];
    __shared__ int fixed[256];
    fixed[threadIdx.x] = threadIdx.x;
    dyn[threadIdx.x] = fixed[threadIdx.x] * 2;
    p[threadIdx.x] = dyn[threadIdx.x];
}

int main() {
    cudaStream_t a, b;
    CHECK(cudaStreamCreate(&a));
    CHECK(cudaStreamCreate(&b));
    int *d;
    CHECK(cudaMalloc(&d, 1 << 20));

    int max_window = 0;
    CHECK(cudaDeviceGetAttribute(&max_window, cudaDevAttrMaxAccessPolicyWindowSize, 0));

    // Defaults.
    cudaStreamAttrValue v;
    memset(&v, 0x5a, sizeof v);
    CHECK(cudaStreamGetAttribute(a, cudaStreamAttributeAccessPolicyWindow, &v));
    EXPECT(v.accessPolicyWindow.base_ptr == nullptr && v.accessPolicyWindow.num_bytes == 0);
    CHECK(cudaStreamGetAttribute(a, cudaStreamAttributeSynchronizationPolicy, &v));
    // A policy never set reads -1 (NVIDIA's runtime, CUDA 13.0, H100).
    EXPECT((int)v.syncPolicy == -1);

    // An access policy window within the device's limit, read back and copied.
    cudaStreamAttrValue w = {};
    w.accessPolicyWindow.base_ptr = d;
    w.accessPolicyWindow.num_bytes = max_window > 0 ? (size_t)max_window / 2 : 0;
    w.accessPolicyWindow.hitRatio = 0.6f;
    w.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    w.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    CHECK(cudaStreamSetAttribute(a, cudaStreamAttributeAccessPolicyWindow, &w));
    memset(&v, 0, sizeof v);
    CHECK(cudaStreamGetAttribute(a, cudaStreamAttributeAccessPolicyWindow, &v));
    EXPECT(v.accessPolicyWindow.base_ptr == d);
    EXPECT(v.accessPolicyWindow.num_bytes == w.accessPolicyWindow.num_bytes);
    EXPECT(v.accessPolicyWindow.hitRatio == 0.6f);
    EXPECT(v.accessPolicyWindow.hitProp == cudaAccessPropertyPersisting);
    CHECK(cudaStreamCopyAttributes(b, a));
    memset(&v, 0, sizeof v);
    CHECK(cudaStreamGetAttribute(b, cudaStreamAttributeAccessPolicyWindow, &v));
    EXPECT(v.accessPolicyWindow.base_ptr == d);

    // Invalid windows.
    cudaStreamAttrValue bad = w;
    bad.accessPolicyWindow.hitRatio = 1.5f;
    EXPECT_ERR(cudaStreamSetAttribute(a, cudaStreamAttributeAccessPolicyWindow, &bad), cudaErrorInvalidValue);
    bad = w;
    bad.accessPolicyWindow.num_bytes = (size_t)max_window + 1;
    EXPECT_ERR(cudaStreamSetAttribute(a, cudaStreamAttributeAccessPolicyWindow, &bad), cudaErrorInvalidValue);
    bad = w;
    bad.accessPolicyWindow.missProp = cudaAccessPropertyPersisting;
    EXPECT_ERR(cudaStreamSetAttribute(a, cudaStreamAttributeAccessPolicyWindow, &bad), cudaErrorInvalidValue);

    // Synchronization policy and memory synchronization domain.
    v = {};
    v.syncPolicy = cudaSyncPolicyBlockingSync;
    CHECK(cudaStreamSetAttribute(a, cudaStreamAttributeSynchronizationPolicy, &v));
    v = {};
    CHECK(cudaStreamGetAttribute(a, cudaStreamAttributeSynchronizationPolicy, &v));
    EXPECT(v.syncPolicy == cudaSyncPolicyBlockingSync);
    v = {};
    v.syncPolicy = (cudaSynchronizationPolicy)9;
    EXPECT_ERR(cudaStreamSetAttribute(a, cudaStreamAttributeSynchronizationPolicy, &v), cudaErrorInvalidValue);
    v = {};
    CHECK(cudaStreamGetAttribute(a, cudaLaunchAttributeMemSyncDomainMap, &v));
    EXPECT(v.memSyncDomainMap.default_ == 0 && v.memSyncDomainMap.remote == 1);
    v = {};
    v.memSyncDomain = cudaLaunchMemSyncDomainRemote;
    CHECK(cudaStreamSetAttribute(a, cudaLaunchAttributeMemSyncDomain, &v));

    // Priority reads the stream's own.
    int lo = 0, hi = 0;
    CHECK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
    cudaStream_t prio;
    CHECK(cudaStreamCreateWithPriority(&prio, cudaStreamNonBlocking, hi));
    v = {};
    CHECK(cudaStreamGetAttribute(prio, cudaLaunchAttributePriority, &v));
    EXPECT(v.priority == hi);

    // Attributes that streams do not have, and bad streams.
    EXPECT_ERR(cudaStreamGetAttribute(a, cudaLaunchAttributeCooperative, &v), cudaErrorInvalidValue);
    // A null value: NVIDIA's runtime crashes (SIGSEGV on an H100), so only under vcuda.
    if (vcuda_runtime())
        EXPECT_ERR(cudaStreamSetAttribute(a, cudaStreamAttributeAccessPolicyWindow, nullptr),
                   cudaErrorInvalidValue);

    // Work still runs on the stream. (The expected failures above set the last error.)
    EXPECT(cudaGetLastError() == cudaErrorInvalidValue);
    fill<<<1, 64, 0, a>>>(d, 100);
    CHECK(cudaGetLastError());
    int h[64];
    CHECK(cudaMemcpyAsync(h, d, sizeof h, cudaMemcpyDeviceToHost, a));
    CHECK(cudaStreamSynchronize(a));
    EXPECT(h[0] == 100 && h[63] == 163);

    // Ids: distinct per stream, stable.
    unsigned long long ia = 0, ib = 0, ia2 = 0;
    CHECK(cudaStreamGetId(a, &ia));
    CHECK(cudaStreamGetId(b, &ib));
    CHECK(cudaStreamGetId(a, &ia2));
    EXPECT(ia != ib && ia == ia2);
    EXPECT_ERR(cudaStreamGetId(a, nullptr), cudaErrorInvalidValue);

    // A destroyed stream's attributes do not leak into a new one.
    CHECK(cudaStreamDestroy(b));
    CHECK(cudaStreamCreate(&b));
    v = {};
    CHECK(cudaStreamGetAttribute(b, cudaStreamAttributeAccessPolicyWindow, &v));
    EXPECT(v.accessPolicyWindow.base_ptr == nullptr);
    CHECK(cudaCtxResetPersistingL2Cache());

    // Shared memory bank configuration (deprecated; fixed at four bytes).
    cudaSharedMemConfig cfg;
    CHECK(cudaDeviceGetSharedMemConfig(&cfg));
    EXPECT(cfg == cudaSharedMemBankSizeFourByte);
    CHECK(cudaDeviceSetSharedMemConfig(cudaSharedMemBankSizeEightByte));
    CHECK(cudaFuncSetSharedMemConfig(fill, cudaSharedMemBankSizeDefault));
    EXPECT_ERR(cudaDeviceSetSharedMemConfig((cudaSharedMemConfig)7), cudaErrorInvalidValue);

    // PCI bus id round trip.
    char bus[32];
    CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, 0));
    int dev = -1;
    CHECK(cudaDeviceGetByPCIBusId(&dev, bus));
    EXPECT(dev == 0);
    EXPECT_ERR(cudaDeviceGetByPCIBusId(&dev, "not a bus id"), cudaErrorInvalidValue);
    EXPECT_ERR(cudaDeviceGetByPCIBusId(&dev, "ffff:ff:1f.0"), cudaErrorInvalidDevice);

    int valid[1] = {0};
    CHECK(cudaSetValidDevices(valid, 1));
    valid[0] = 9;
    EXPECT_ERR(cudaSetValidDevices(valid, 1), cudaErrorInvalidDevice);

    // Available dynamic shared memory: with that much, the occupancy calculator still fits
    // the blocks asked for; with a byte more than a lone block can have, none.
    size_t avail = 0;
    CHECK(cudaOccupancyAvailableDynamicSMemPerBlock(&avail, uses_shared, 2, 256));
    EXPECT(avail > 0);
    int blocks = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, uses_shared, 256, avail));
    EXPECT(blocks >= 2);
    uses_shared<<<1, 256, 1024>>>(d);
    CHECK(cudaDeviceSynchronize());
    EXPECT_ERR(cudaOccupancyAvailableDynamicSMemPerBlock(&avail, uses_shared, 0, 256), cudaErrorInvalidValue);
    printf("window max %d, ids %llu %llu, bus %s, dynamic smem for 2 blocks %zu\n", max_window,
           ia, ib, bus, avail);

    CHECK(cudaStreamDestroy(a));
    CHECK(cudaStreamDestroy(b));
    CHECK(cudaStreamDestroy(prio));
    CHECK(cudaFree(d));
    return finish();
}
