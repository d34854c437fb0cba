// SPDX-License-Identifier: Apache-2.0 OR MIT
// Batched copies (CUDA 12.8+): cudaMemcpyBatchAsync with attribute groups, a source read
// during the call (a stack buffer changed right after it), copies in every direction, the
// driver API's cuMemcpyBatchAsync, and the argument checks.
#include <cuda.h>
#include <vector>
#include "common.h"

#if CUDART_VERSION >= 13000
int main() {
    const int N = 1000;
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    int *d1, *d2, *d3;
    CHECK(cudaMalloc(&d1, N * sizeof(int)));
    CHECK(cudaMalloc(&d2, N * sizeof(int)));
    CHECK(cudaMalloc(&d3, N * sizeof(int)));
    std::vector<int> a(N), b(N), back1(N), back2(N);
    for (int i = 0; i < N; i++) a[i] = 3 * i + 1, b[i] = -i;

    // Group 0 (copies 0-1): host to device, read in stream order. Group 1 (copies 2-3): a
    // stack buffer read during the call, and a device-to-device copy.
    int small[16];
    for (int i = 0; i < 16; i++) small[i] = 1000 + i;
    void *dsts[] = {d1, d2, d3, d3 + 16};
    const void *srcs[] = {a.data(), b.data(), small, d1 + 16};
    size_t sizes[] = {N * sizeof(int), N * sizeof(int), sizeof small, (N - 16) * sizeof(int)};
    cudaMemcpyAttributes attrs[2] = {};
    attrs[0].srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    attrs[1].srcAccessOrder = cudaMemcpySrcAccessOrderDuringApiCall;
    attrs[1].flags = cudaMemcpyFlagPreferOverlapWithCompute;
    size_t idxs[] = {0, 2};
    CHECK(cudaMemcpyBatchAsync(dsts, srcs, sizes, 4, attrs, idxs, 2, s));
    for (int i = 0; i < 16; i++) small[i] = -1;  // the call has read it
    // Device to host, one group.
    void *dsts2[] = {back1.data(), back2.data()};
    const void *srcs2[] = {d3, d2};
    size_t sizes2[] = {N * sizeof(int), N * sizeof(int)};
    size_t zero = 0;
    CHECK(cudaMemcpyBatchAsync(dsts2, srcs2, sizes2, 2, attrs, &zero, 1, s));
    CHECK(cudaStreamSynchronize(s));
    int bad = 0;
    for (int i = 0; i < N; i++) {
        int want = i < 16 ? 1000 + i : 3 * i + 1;
        bad += back1[i] != want;
        bad += back2[i] != -i;
    }
    EXPECT(bad == 0);

    // The driver API's form, device to device.
    void *p = nullptr;
    cudaDriverEntryPointQueryResult q;
    CHECK(cudaGetDriverEntryPoint("cuMemcpyBatchAsync", &p, cudaEnableDefault, &q));
    auto cu_batch = (decltype(&cuMemcpyBatchAsync_v2))p;
    CUdeviceptr cd[] = {(CUdeviceptr)d2}, cs[] = {(CUdeviceptr)d1};
    size_t csz[] = {N * sizeof(int)};
    CUmemcpyAttributes ca = {};
    ca.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    EXPECT(cu_batch(cd, cs, csz, 1, &ca, &zero, 1, (CUstream)s) == CUDA_SUCCESS);
    CHECK(cudaMemcpyAsync(back2.data(), d2, N * sizeof(int), cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    bad = 0;
    for (int i = 0; i < N; i++) bad += back2[i] != 3 * i + 1;
    EXPECT(bad == 0);

    // Argument checks: the legacy stream, no attributes, a first group not at 0, groups out
    // of order or past the batch, an access order left invalid.
    EXPECT_ERR(cudaMemcpyBatchAsync(dsts2, srcs2, sizes2, 2, attrs, &zero, 1, cudaStreamLegacy),
               cudaErrorInvalidValue);
    EXPECT_ERR(cudaMemcpyBatchAsync(dsts2, srcs2, sizes2, 2, attrs, &zero, 0, s),
               cudaErrorInvalidValue);
    size_t one = 1, backwards[] = {0, 0}, past[] = {0, 2};
    EXPECT_ERR(cudaMemcpyBatchAsync(dsts2, srcs2, sizes2, 2, attrs, &one, 1, s),
               cudaErrorInvalidValue);
    EXPECT_ERR(cudaMemcpyBatchAsync(dsts2, srcs2, sizes2, 2, attrs, backwards, 2, s),
               cudaErrorInvalidValue);
    EXPECT_ERR(cudaMemcpyBatchAsync(dsts2, srcs2, sizes2, 2, attrs, past, 2, s),
               cudaErrorInvalidValue);
    cudaMemcpyAttributes unset = {};
    EXPECT_ERR(cudaMemcpyBatchAsync(dsts2, srcs2, sizes2, 2, &unset, &zero, 1, s),
               cudaErrorInvalidValue);
    cudaGetLastError();

    CHECK(cudaFree(d1));
    CHECK(cudaFree(d2));
    CHECK(cudaFree(d3));
    CHECK(cudaStreamDestroy(s));
    return finish();
}
#else
int main() {
    printf("batched copies are CUDA 13's here\n");
    return finish();
}
#endif
