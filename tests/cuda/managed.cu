// SPDX-License-Identifier: Apache-2.0 OR MIT
// Managed memory: a vector add on cudaMallocManaged arrays initialized on the host and read
// back after cudaDeviceSynchronize, with no cudaMemcpy; prefetch and advice calls (CUDA 12
// and 13 signatures), their argument checks and what cudaMemRangeGetAttribute(s) says of
// them; memset and copies on managed memory;
// stream attachment; pointer attributes; device attributes. Where the device has no managed
// memory, cudaMallocManaged fails with cudaErrorNotSupported.
#include "common.h"

__global__ void add(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

__global__ void scale(float *p, int n, float s) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] *= s;
}

int main() {
    int managed = -1, concurrent = -1;
    CHECK(cudaDeviceGetAttribute(&managed, cudaDevAttrManagedMemory, 0));
    CHECK(cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, 0));
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    EXPECT(prop.managedMemory == managed);
    const int N = 1 << 18;
    const size_t bytes = N * sizeof(float);
    float *a = nullptr, *b = nullptr, *c = nullptr;
    if (!managed) {
        printf("this device has no managed memory\n");
        EXPECT_ERR(cudaMallocManaged(&a, bytes), cudaErrorNotSupported);
        cudaGetLastError();
        return finish();
    }
    CHECK(cudaMallocManaged(&a, bytes));
    CHECK(cudaMallocManaged(&b, bytes, cudaMemAttachHost));
    CHECK(cudaMallocManaged(&c, bytes, cudaMemAttachGlobal));
    for (int i = 0; i < N; i++) {
        a[i] = (float)i;
        b[i] = (float)(2 * i);
    }

#if CUDART_VERSION >= 12020
    cudaMemLocation dev0 = {cudaMemLocationTypeDevice, 0};
    cudaMemLocation host = {cudaMemLocationTypeHost, 0};
    cudaMemLocation dev7 = {cudaMemLocationTypeDevice, 7};
#endif
#if CUDART_VERSION >= 13000
    CHECK(cudaMemAdvise(a, bytes, cudaMemAdviseSetReadMostly, dev0));
    CHECK(cudaMemAdvise(b, bytes, cudaMemAdviseSetPreferredLocation, dev0));
    CHECK(cudaMemAdvise(c, bytes, cudaMemAdviseSetAccessedBy, host));
    CHECK(cudaMemPrefetchAsync(a, bytes, dev0, 0, 0));
    CHECK(cudaMemPrefetchAsync(b, bytes, dev0, 0, 0));
    EXPECT_ERR(cudaMemPrefetchAsync(a, bytes, dev7, 0, 0), cudaErrorInvalidDevice);
    EXPECT_ERR(cudaMemAdvise(a, bytes, (cudaMemoryAdvise)99, dev0), cudaErrorInvalidValue);
#else
    CHECK(cudaMemAdvise(a, bytes, cudaMemAdviseSetReadMostly, 0));
    CHECK(cudaMemAdvise(b, bytes, cudaMemAdviseSetPreferredLocation, 0));
    CHECK(cudaMemAdvise(c, bytes, cudaMemAdviseSetAccessedBy, cudaCpuDeviceId));
    CHECK(cudaMemPrefetchAsync(a, bytes, 0, 0));
    CHECK(cudaMemPrefetchAsync(b, bytes, 0));
    CHECK(cudaMemPrefetchAsync_v2(b, bytes, dev0, 0, 0));
    CHECK(cudaMemAdvise_v2(a, bytes, cudaMemAdviseUnsetReadMostly, dev0));
    EXPECT_ERR(cudaMemPrefetchAsync(a, bytes, 7, 0), cudaErrorInvalidDevice);
    EXPECT_ERR(cudaMemAdvise(a, bytes, (cudaMemoryAdvise)99, 0), cudaErrorInvalidValue);
#endif
    cudaGetLastError();

    // What the advice and prefetches said, read back per range.
    int v = 7;
    CHECK(cudaMemRangeGetAttribute(&v, 4, cudaMemRangeAttributePreferredLocation, b, bytes));
    EXPECT(v == 0);
    CHECK(cudaMemRangeGetAttribute(&v, 4, cudaMemRangeAttributePreferredLocation, a, bytes));
    EXPECT(v == cudaInvalidDeviceId);
    CHECK(cudaMemRangeGetAttribute(&v, 4, cudaMemRangeAttributeLastPrefetchLocation, b, bytes));
    EXPECT(v == 0);
    CHECK(cudaMemRangeGetAttribute(&v, 4, cudaMemRangeAttributeLastPrefetchLocation, c, bytes));
    EXPECT(v == cudaInvalidDeviceId);
    int acc[3] = {0, 0, 0};
    CHECK(cudaMemRangeGetAttribute(acc, sizeof acc, cudaMemRangeAttributeAccessedBy, c, bytes));
    EXPECT(acc[0] == cudaCpuDeviceId && acc[1] == cudaInvalidDeviceId &&
           acc[2] == cudaInvalidDeviceId);
    CHECK(cudaMemRangeGetAttribute(&v, 4, cudaMemRangeAttributeReadMostly, a, bytes));
#if CUDART_VERSION >= 13000
    EXPECT(v == 1);
#else
    EXPECT(v == 0);  // unset again above
#endif
    CHECK(cudaMemRangeGetAttribute(&v, 4, cudaMemRangeAttributeReadMostly, a + 16, 64));
#if CUDART_VERSION >= 13000
    EXPECT(v == 1);  // part of a range with the advice
#endif
    EXPECT_ERR(cudaMemRangeGetAttribute(&v, 8, cudaMemRangeAttributeReadMostly, a, bytes),
               cudaErrorInvalidValue);
    int rm = -1, pl = -1;
    void *datas[2] = {&rm, &pl};
    size_t sizes[2] = {4, 4};
    cudaMemRangeAttribute attrs[2] = {cudaMemRangeAttributeReadMostly,
                                      cudaMemRangeAttributePreferredLocation};
    CHECK(cudaMemRangeGetAttributes(datas, sizes, attrs, 2, b, bytes));
    EXPECT(rm == 0 && pl == 0);
    cudaGetLastError();

    add<<<(N + 255) / 256, 256>>>(a, b, c, N);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    int bad = 0;
    for (int i = 0; i < N; i++)
        if (c[i] != (float)(3 * i)) bad++;
    EXPECT(bad == 0);

    // The host changes the inputs; a kernel on a stream the arrays are attached to sees it.
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    CHECK(cudaStreamAttachMemAsync(s, c, 0, cudaMemAttachSingle));
    for (int i = 0; i < N; i++) a[i] = 1.0f;
    add<<<(N + 255) / 256, 256, 0, s>>>(a, b, c, N);
    scale<<<(N + 255) / 256, 256, 0, s>>>(c, N, 0.5f);
    CHECK(cudaStreamSynchronize(s));
    bad = 0;
    for (int i = 0; i < N; i++)
        if (c[i] != (1.0f + (float)(2 * i)) * 0.5f) bad++;
    EXPECT(bad == 0);

    // Memset and copies on managed memory.
    CHECK(cudaMemset(c, 0, bytes));
    CHECK(cudaDeviceSynchronize());
    EXPECT(c[0] == 0.0f && c[N - 1] == 0.0f);
    float *d = nullptr;
    CHECK(cudaMalloc(&d, bytes));
    CHECK(cudaMemcpy(d, b, bytes, cudaMemcpyDefault));
    CHECK(cudaMemcpy(c, d, bytes, cudaMemcpyDeviceToDevice));
    CHECK(cudaDeviceSynchronize());
    EXPECT(c[12345] == (float)(2 * 12345));

    // Attributes.
    cudaPointerAttributes attr;
    CHECK(cudaPointerGetAttributes(&attr, a + 3));
    EXPECT(attr.type == cudaMemoryTypeManaged);
    EXPECT(attr.devicePointer == a + 3 && attr.hostPointer == a + 3);
    EXPECT(concurrent == 0 || concurrent == 1);

    // Argument checks.
    float *x = nullptr;
    CHECK(cudaMallocManaged(&x, 0));
    EXPECT(x == nullptr);
    EXPECT_ERR(cudaMallocManaged(&x, 64, 4), cudaErrorInvalidValue);
#if CUDART_VERSION >= 13000
    EXPECT_ERR(cudaMemPrefetchAsync(a, bytes + 4, dev0, 0, 0), cudaErrorInvalidValue);
#else
    EXPECT_ERR(cudaMemPrefetchAsync(a, bytes + 4, 0, 0), cudaErrorInvalidValue);
#endif
    cudaGetLastError();

    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFree(d));
    CHECK(cudaFree(a));
    CHECK(cudaFree(b));
    CHECK(cudaFree(c));
    EXPECT(cudaPointerGetAttributes(&attr, a) != cudaSuccess || attr.type != cudaMemoryTypeManaged);
    cudaGetLastError();
    return finish();
}
