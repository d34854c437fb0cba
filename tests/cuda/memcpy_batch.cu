// SPDX-License-Identifier: Apache-2.0 OR MIT
// Batched copies (CUDA 12.8+): cudaMemcpyBatchAsync with attribute groups, a source read
// during the call (a stack buffer changed right after it), copies in every direction, the
// driver API's cuMemcpyBatchAsync, and the argument checks; 3-D batches
// (cudaMemcpy3DBatchAsync) between host, pitched device memory and an array.
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

    // 3-D batches: a host box into pitched device memory (rows and layers wider than the
    // copy), a device box into an array at an offset, and the array back to the host.
    {
        const size_t W = 8, H = 4, D = 3;  // the box, in ints
        std::vector<int> box(W * H * D), out(W * H * D, 0);
        for (size_t i = 0; i < box.size(); i++) box[i] = (int)(7 * i + 3);
        cudaPitchedPtr pd;
        CHECK(cudaMalloc3D(&pd, make_cudaExtent(16 * sizeof(int), 6, D)));
        cudaChannelFormatDesc fd = cudaCreateChannelDesc<int>();
        cudaArray_t arr;
        CHECK(cudaMalloc3DArray(&arr, &fd, make_cudaExtent(10, 5, 4)));
        cudaMemcpy3DBatchOp ops[3] = {};
        ops[0].src.type = cudaMemcpyOperandTypePointer;
        ops[0].src.op.ptr.ptr = box.data();
        ops[0].dst.type = cudaMemcpyOperandTypePointer;
        ops[0].dst.op.ptr.ptr = pd.ptr;
        ops[0].dst.op.ptr.rowLength = pd.pitch;  // elements are bytes between pointers
        ops[0].dst.op.ptr.layerHeight = 6;
        ops[0].extent = make_cudaExtent(W * sizeof(int), H, D);
        ops[0].srcAccessOrder = cudaMemcpySrcAccessOrderStream;
        CHECK(cudaMemcpy3DBatchAsync(1, ops, 0, s));
        ops[1].src.type = cudaMemcpyOperandTypePointer;
        ops[1].src.op.ptr.ptr = pd.ptr;
        ops[1].src.op.ptr.rowLength = pd.pitch / sizeof(int);  // in the array's elements
        ops[1].src.op.ptr.layerHeight = 6;
        ops[1].dst.type = cudaMemcpyOperandTypeArray;
        ops[1].dst.op.array.array = arr;
        ops[1].dst.op.array.offset = {1, 1, 1};
        ops[1].extent = make_cudaExtent(W, H, D);
        ops[1].srcAccessOrder = cudaMemcpySrcAccessOrderStream;
        ops[2].src.type = cudaMemcpyOperandTypeArray;
        ops[2].src.op.array.array = arr;
        ops[2].src.op.array.offset = {1, 1, 1};
        ops[2].dst.type = cudaMemcpyOperandTypePointer;
        ops[2].dst.op.ptr.ptr = out.data();
        ops[2].extent = make_cudaExtent(W, H, D);
        ops[2].srcAccessOrder = cudaMemcpySrcAccessOrderStream;
        // In two batches: copies within one batch may run in any order.
        CHECK(cudaMemcpy3DBatchAsync(1, &ops[1], 0, s));
        CHECK(cudaMemcpy3DBatchAsync(1, &ops[2], 0, s));
        CHECK(cudaStreamSynchronize(s));
        EXPECT(out == box);
        // Checks: the legacy stream, flags, an empty extent, an access order left invalid.
        EXPECT_ERR(cudaMemcpy3DBatchAsync(1, ops, 0, cudaStreamLegacy), cudaErrorInvalidValue);
        EXPECT_ERR(cudaMemcpy3DBatchAsync(1, ops, 1, s), cudaErrorInvalidValue);
        cudaMemcpy3DBatchOp bad_op = ops[0];
        bad_op.extent.depth = 0;
        EXPECT_ERR(cudaMemcpy3DBatchAsync(1, &bad_op, 0, s), cudaErrorInvalidValue);
        bad_op = ops[0];
        bad_op.srcAccessOrder = cudaMemcpySrcAccessOrderInvalid;
        EXPECT_ERR(cudaMemcpy3DBatchAsync(1, &bad_op, 0, s), cudaErrorInvalidValue);
        cudaGetLastError();
        CHECK(cudaFreeArray(arr));
        CHECK(cudaFree(pd.ptr));
    }

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
