// SPDX-License-Identifier: Apache-2.0 OR MIT
// Stream-ordered memory pools: cudaMallocAsync/cudaFreeAsync from the default pool on two
// streams, a created pool, attributes (used/reserved, high-water marks, release threshold),
// trimming, destroying a pool with a block outstanding, and the errors CUDA gives.
#include "common.h"

__global__ void fill(int *p, int n, int v) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = v + i;
}

static uint64_t attr(cudaMemPool_t p, cudaMemPoolAttr a) {
    uint64_t v = 0;
    CHECK(cudaMemPoolGetAttribute(p, a, &v));
    return v;
}

static bool check_fill(const int *d, int n, int v) {
    int *h = (int *)malloc(n * sizeof(int));
    CHECK(cudaMemcpy(h, d, n * sizeof(int), cudaMemcpyDeviceToHost));
    bool ok = true;
    for (int i = 0; i < n; i++) ok &= h[i] == v + i;
    free(h);
    return ok;
}

int main() {
    int supported = 0;
    CHECK(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, 0));
    EXPECT(supported == 1);
    cudaMemPool_t def, cur;
    CHECK(cudaDeviceGetDefaultMemPool(&def, 0));
    CHECK(cudaDeviceGetMemPool(&cur, 0));
    EXPECT(def == cur);

    const int n = 1 << 16;
    cudaStream_t s1, s2;
    CHECK(cudaStreamCreate(&s1));
    CHECK(cudaStreamCreate(&s2));
    int *a, *b;
    CHECK(cudaMallocAsync(&a, n * sizeof(int), s1));
    CHECK(cudaMallocAsync(&b, n * sizeof(int), s2));
    fill<<<n / 256, 256, 0, s1>>>(a, n, 1);
    fill<<<n / 256, 256, 0, s2>>>(b, n, 100);
    CHECK(cudaStreamSynchronize(s1));
    CHECK(cudaStreamSynchronize(s2));
    EXPECT(check_fill(a, n, 1) && check_fill(b, n, 100));
    EXPECT(attr(def, cudaMemPoolAttrUsedMemCurrent) >= 2u * n * sizeof(int));
    EXPECT(attr(def, cudaMemPoolAttrReservedMemCurrent) >= attr(def, cudaMemPoolAttrUsedMemCurrent));

    // Freed in stream order, the block is reused on the same stream.
    CHECK(cudaFreeAsync(a, s1));
    EXPECT(attr(def, cudaMemPoolAttrUsedMemCurrent) < 2u * n * sizeof(int));
    int *a2;
    CHECK(cudaMallocAsync(&a2, n * sizeof(int), s1));
    EXPECT(a2 == a);
    fill<<<n / 256, 256, 0, s1>>>(a2, n, 7);
    CHECK(cudaFreeAsync(a2, s1));
    CHECK(cudaFreeAsync(b, s2));
    // Threshold 0: after a synchronization the pool gives its memory back.
    CHECK(cudaDeviceSynchronize());
    EXPECT(attr(def, cudaMemPoolAttrReservedMemCurrent) == 0);
    EXPECT(attr(def, cudaMemPoolAttrUsedMemCurrent) == 0);
    EXPECT(attr(def, cudaMemPoolAttrUsedMemHigh) >= 2u * n * sizeof(int));
    uint64_t zero = 0;
    CHECK(cudaMemPoolSetAttribute(def, cudaMemPoolAttrUsedMemHigh, &zero));
    EXPECT(attr(def, cudaMemPoolAttrUsedMemHigh) == 0);

    // A high threshold keeps it until trimmed.
    uint64_t keep = 64 << 20;
    CHECK(cudaMemPoolSetAttribute(def, cudaMemPoolAttrReleaseThreshold, &keep));
    EXPECT(attr(def, cudaMemPoolAttrReleaseThreshold) == keep);
    CHECK(cudaMallocAsync(&a, n * sizeof(int), s1));
    CHECK(cudaFreeAsync(a, s1));
    CHECK(cudaDeviceSynchronize());
    EXPECT(attr(def, cudaMemPoolAttrReservedMemCurrent) >= n * sizeof(int));
    CHECK(cudaMemPoolTrimTo(def, 0));
    EXPECT(attr(def, cudaMemPoolAttrReservedMemCurrent) == 0);

    // A created pool, as the device's current one, then destroyed with a block out.
    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    cudaMemPool_t mine;
    CHECK(cudaMemPoolCreate(&mine, &props));
    EXPECT(mine != def);
    CHECK(cudaDeviceSetMemPool(0, mine));
    int *c;
    CHECK(cudaMallocAsync(&c, 4096, s2));
    EXPECT(attr(mine, cudaMemPoolAttrUsedMemCurrent) == 4096);
    EXPECT(attr(def, cudaMemPoolAttrUsedMemCurrent) == 0);
    int *d;
    CHECK(cudaMallocFromPoolAsync(&d, 1000, def, s2));
    EXPECT(attr(def, cudaMemPoolAttrUsedMemCurrent) >= 1000);
    cudaMemAccessFlags flags;
    cudaMemLocation loc = {cudaMemLocationTypeDevice, 0};
    CHECK(cudaMemPoolGetAccess(&flags, mine, &loc));
    EXPECT(flags == cudaMemAccessFlagsProtReadWrite);
    CHECK(cudaMemPoolDestroy(mine));
    CHECK(cudaDeviceGetMemPool(&cur, 0));
    EXPECT(cur == def);
    fill<<<16, 256, 0, s2>>>(c, 1024, 3);
    CHECK(cudaStreamSynchronize(s2));
    EXPECT(check_fill(c, 1024, 3));
    CHECK(cudaFreeAsync(c, s2));
    CHECK(cudaFree(d));

    // Errors.
    EXPECT_ERR(cudaMemPoolDestroy(def), cudaErrorInvalidValue);
    EXPECT_ERR(cudaMallocFromPoolAsync(&d, 16, mine, s1), cudaErrorInvalidValue);
    props.location.id = 5;
    EXPECT_ERR(cudaMemPoolCreate(&mine, &props), cudaErrorInvalidValue);
    EXPECT_ERR(cudaMemPoolSetAttribute(def, cudaMemPoolAttrReservedMemCurrent, &zero), cudaErrorInvalidValue);
    cudaGetLastError();

    CHECK(cudaStreamSynchronize(s2));
    CHECK(cudaStreamDestroy(s1));
    CHECK(cudaStreamDestroy(s2));
    return finish();
}
