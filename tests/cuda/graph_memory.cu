// SPDX-License-Identifier: Apache-2.0 OR MIT
// Graph memory nodes: an explicit allocation node whose address kernels and copies in the
// same graph use, launched several times (the address stays the same), its parameters and
// the free node's; cudaMallocAsync/cudaFreeAsync captured into a graph as allocation and
// free nodes; one executable graph at a time for such a graph, none as a child graph; memory
// a launch allocated and nothing freed outlives its graph until the program frees it; the
// device's graph memory attributes while graphs hold memory and after they are gone.
#include "common.h"

__global__ void fill(int *p, int n, int v) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = v + i;
}

int main() {
    const int N = 4096;
    const size_t bytes = N * sizeof(int);
    int host[N];

    // Explicit: alloc -> fill -> copy back -> free.
    cudaGraph_t g;
    CHECK(cudaGraphCreate(&g, 0));
    cudaMemAllocNodeParams ap = {};
    ap.poolProps.allocType = cudaMemAllocationTypePinned;
    ap.poolProps.location.type = cudaMemLocationTypeDevice;
    ap.poolProps.location.id = 0;
    ap.bytesize = bytes;
    cudaGraphNode_t a, k, cp, fr;
    CHECK(cudaGraphAddMemAllocNode(&a, g, nullptr, 0, &ap));
    EXPECT(ap.dptr != nullptr);
    int *d = (int *)ap.dptr;
    int n = N, v = 100;
    void *args[] = {&d, &n, &v};
    cudaKernelNodeParams kp = {};
    kp.func = (void *)fill;
    kp.gridDim = dim3(N / 256);
    kp.blockDim = dim3(256);
    kp.kernelParams = args;
    CHECK(cudaGraphAddKernelNode(&k, g, &a, 1, &kp));
    CHECK(cudaGraphAddMemcpyNode1D(&cp, g, &k, 1, host, d, bytes, cudaMemcpyDeviceToHost));
    CHECK(cudaGraphAddMemFreeNode(&fr, g, &cp, 1, d));
    cudaGraphNodeType t;
    CHECK(cudaGraphNodeGetType(a, &t));
    EXPECT(t == cudaGraphNodeTypeMemAlloc);
    CHECK(cudaGraphNodeGetType(fr, &t));
    EXPECT(t == cudaGraphNodeTypeMemFree);
    cudaMemAllocNodeParams got = {};
    CHECK(cudaGraphMemAllocNodeGetParams(a, &got));
    EXPECT(got.dptr == d && got.bytesize == bytes);
    void *freed = nullptr;
    CHECK(cudaGraphMemFreeNodeGetParams(fr, &freed));
    EXPECT(freed == d);
    int dummy = 0;
    cudaGraphNode_t bad;
    EXPECT_ERR(cudaGraphAddMemFreeNode(&bad, g, nullptr, 0, &dummy), cudaErrorInvalidValue);
    cudaGetLastError();

    cudaGraphExec_t e, e2;
    CHECK(cudaGraphInstantiate(&e, g, 0));
    EXPECT_ERR(cudaGraphInstantiate(&e2, g, 0), cudaErrorNotSupported);
    cudaGraph_t parent;
    CHECK(cudaGraphCreate(&parent, 0));
    cudaGraphNode_t child;
    EXPECT_ERR(cudaGraphAddChildGraphNode(&child, parent, nullptr, 0, g), cudaErrorNotSupported);
    CHECK(cudaGraphDestroy(parent));
    cudaGetLastError();
    for (int round = 0; round < 3; round++) {
        memset(host, 0, sizeof host);
        CHECK(cudaGraphLaunch(e, 0));
        CHECK(cudaStreamSynchronize(0));
        int bad_n = 0;
        for (int i = 0; i < N; i++) bad_n += host[i] != 100 + i;
        EXPECT(bad_n == 0);
    }
    unsigned long long used = 0;
    CHECK(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemCurrent, &used));
    EXPECT(used >= bytes);

    // Captured: cudaMallocAsync/cudaFreeAsync become allocation and free nodes.
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaGraph_t cg;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    int *m = nullptr;
    CHECK(cudaMallocAsync((void **)&m, bytes, s));
    fill<<<N / 256, 256, 0, s>>>(m, N, 7);
    CHECK(cudaMemcpyAsync(host, m, bytes, cudaMemcpyDeviceToHost, s));
    CHECK(cudaFreeAsync(m, s));
    CHECK(cudaStreamEndCapture(s, &cg));
    size_t count = 0;
    CHECK(cudaGraphGetNodes(cg, nullptr, &count));
    EXPECT(count == 4);
    cudaGraphNode_t nodes[4];
    CHECK(cudaGraphGetNodes(cg, nodes, &count));
    int allocs = 0, frees = 0;
    for (size_t i = 0; i < count; i++) {
        CHECK(cudaGraphNodeGetType(nodes[i], &t));
        allocs += t == cudaGraphNodeTypeMemAlloc;
        frees += t == cudaGraphNodeTypeMemFree;
    }
    EXPECT(allocs == 1 && frees == 1);
    cudaGraphExec_t ce;
    CHECK(cudaGraphInstantiate(&ce, cg, 0));
    for (int round = 0; round < 2; round++) {
        memset(host, 0, sizeof host);
        CHECK(cudaGraphLaunch(ce, s));
        CHECK(cudaStreamSynchronize(s));
        int bad_n = 0;
        for (int i = 0; i < N; i++) bad_n += host[i] != 7 + i;
        EXPECT(bad_n == 0);
    }

    // An allocation no node frees outlives its graph once launched: the program frees it.
    cudaGraph_t lg;
    CHECK(cudaGraphCreate(&lg, 0));
    cudaGraphNode_t la;
    cudaMemAllocNodeParams lp = ap;
    lp.dptr = nullptr;
    CHECK(cudaGraphAddMemAllocNode(&la, lg, nullptr, 0, &lp));
    int *kept = (int *)lp.dptr;
    cudaGraphExec_t le;
    CHECK(cudaGraphInstantiate(&le, lg, 0));
    CHECK(cudaGraphLaunch(le, 0));
    CHECK(cudaStreamSynchronize(0));
    CHECK(cudaGraphExecDestroy(le));
    CHECK(cudaGraphDestroy(lg));
    CHECK(cudaMemset(kept, 0, bytes));
    fill<<<N / 256, 256>>>(kept, N, 3);
    CHECK(cudaMemcpy(host, kept, bytes, cudaMemcpyDeviceToHost));
    EXPECT(host[N - 1] == 3 + N - 1);
    CHECK(cudaFree(kept));

    // Once every graph and executable graph is gone, what they had stays reserved for later
    // graphs until it is trimmed. NVIDIA's runtime (CUDA 13.0, H100) then still counts it
    // used too, in its own granule (32 MiB here); vcuda counts no allocation used. Both
    // keep used within reserved, and a reset high watermark at the current value.
    CHECK(cudaGraphExecDestroy(e));
    CHECK(cudaGraphExecDestroy(ce));
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaGraphDestroy(cg));
    CHECK(cudaDeviceSynchronize());
    unsigned long long reserved = 0, high = 0;
    CHECK(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemCurrent, &used));
    CHECK(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrReservedMemCurrent, &reserved));
    EXPECT(used <= reserved);
    CHECK(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrReservedMemHigh, &high));
    EXPECT(high >= 2 * bytes && high >= reserved);
    // Resetting a high watermark sets it to the current value.
    unsigned long long zero = 0;
    CHECK(cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrReservedMemHigh, &zero));
    CHECK(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrReservedMemHigh, &high));
    EXPECT(high == reserved);
    CHECK(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &high));
    EXPECT(high >= 2 * bytes);
    CHECK(cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &zero));
    CHECK(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &high));
    EXPECT(high == used);
    // A new graph allocation may take the reserved memory; trimming gives the rest back.
    CHECK(cudaDeviceGraphMemTrim(0));
    unsigned long long after = 0;
    CHECK(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrReservedMemCurrent, &after));
    EXPECT(after <= reserved);
    CHECK(cudaStreamDestroy(s));
    return finish();
}
