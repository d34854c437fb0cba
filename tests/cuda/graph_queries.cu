// SPDX-License-Identifier: Apache-2.0 OR MIT
// Runtime calls that plain nvcc output (NVIDIA's static runtime) answers through the
// driver API in libcuda.so.1: event nodes' events read and pointed at other events, an
// executable graph's flags, a copy node's parameters read back and set again, peer
// attributes of the one device and, with CUDA 13, the memory pool of a location
// (cudaMemGetDefaultMemPool, cudaMemGetMemPool, cudaMemSetMemPool).
#include "common.h"

__global__ void add(int *p, int v) { p[threadIdx.x] += v; }

static void event_nodes() {
    cudaEvent_t e1, e2, got = nullptr;
    CHECK(cudaEventCreate(&e1));
    CHECK(cudaEventCreate(&e2));
    cudaGraph_t g;
    CHECK(cudaGraphCreate(&g, 0));
    cudaGraphNode_t rec, wait;
    CHECK(cudaGraphAddEventRecordNode(&rec, g, nullptr, 0, e1));
    CHECK(cudaGraphAddEventWaitNode(&wait, g, &rec, 1, e1));
    CHECK(cudaGraphEventRecordNodeGetEvent(rec, &got));
    EXPECT(got == e1);
    CHECK(cudaGraphEventRecordNodeSetEvent(rec, e2));
    CHECK(cudaGraphEventRecordNodeGetEvent(rec, &got));
    EXPECT(got == e2);
    CHECK(cudaGraphEventWaitNodeGetEvent(wait, &got));
    EXPECT(got == e1);
    CHECK(cudaGraphEventWaitNodeSetEvent(wait, e2));
    CHECK(cudaGraphEventWaitNodeGetEvent(wait, &got));
    EXPECT(got == e2);
    // A node of the other kind.
    EXPECT_ERR(cudaGraphEventRecordNodeGetEvent(wait, &got), cudaErrorInvalidValue);
    EXPECT_ERR(cudaGraphEventWaitNodeGetEvent(rec, &got), cudaErrorInvalidValue);

    // An executable graph's flags are those it was made with.
    cudaGraphExec_t x0, x1;
    unsigned long long flags = 99;
    CHECK(cudaGraphInstantiate(&x0, g, 0));
    CHECK(cudaGraphExecGetFlags(x0, &flags));
    EXPECT(flags == 0);
    CHECK(cudaGraphInstantiateWithFlags(&x1, g, cudaGraphInstantiateFlagAutoFreeOnLaunch));
    CHECK(cudaGraphExecGetFlags(x1, &flags));
    EXPECT(flags == cudaGraphInstantiateFlagAutoFreeOnLaunch);
    // Both run: the record node records e2, the wait node waits for it.
    CHECK(cudaGraphLaunch(x0, 0));
    CHECK(cudaGraphLaunch(x1, 0));
    CHECK(cudaStreamSynchronize(0));
    CHECK(cudaEventQuery(e2));
    CHECK(cudaGraphExecDestroy(x0));
    CHECK(cudaGraphExecDestroy(x1));
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaEventDestroy(e1));
    CHECK(cudaEventDestroy(e2));
}

// A 1-D copy node and a pitched 3-D one, read back, set again from what was read, and run.
static void copy_nodes() {
    const int n = 64, w = 16, h = 4, d = 2;
    static int host[n], rows[d][h][w], back[d][h + 1][w];
    for (int i = 0; i < n; i++) host[i] = i;
    for (int z = 0; z < d; z++)
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) rows[z][y][x] = 1000 * z + 100 * y + x;
    int *lin;
    CHECK(cudaMalloc(&lin, n * sizeof(int)));
    // One row more than the copy, which lands from the second row on.
    cudaExtent vol = make_cudaExtent(w * sizeof(int), h + 1, d);
    cudaPitchedPtr dp;
    CHECK(cudaMalloc3D(&dp, vol));
    CHECK(cudaMemset3D(dp, 0, vol));

    cudaGraph_t g;
    CHECK(cudaGraphCreate(&g, 0));
    cudaGraphNode_t one, three, k;
    CHECK(cudaGraphAddMemcpyNode1D(&one, g, nullptr, 0, lin, host, n * sizeof(int),
                                   cudaMemcpyHostToDevice));
    cudaKernelNodeParams kp = {};
    int *arg = lin;
    int v = 5;
    void *args[] = {&arg, &v};
    kp.func = (void *)add;
    kp.gridDim = dim3(1);
    kp.blockDim = dim3(n);
    kp.kernelParams = args;
    CHECK(cudaGraphAddKernelNode(&k, g, &one, 1, &kp));
    cudaMemcpy3DParms in = {};
    in.srcPtr = make_cudaPitchedPtr(rows, w * sizeof(int), w, h);
    in.dstPtr = dp;
    in.dstPos = make_cudaPos(0, 1, 0);
    in.extent = make_cudaExtent(w * sizeof(int), h, d);
    in.kind = cudaMemcpyHostToDevice;
    CHECK(cudaGraphAddMemcpyNode(&three, g, nullptr, 0, &in));

    cudaMemcpy3DParms p;
    memset(&p, 0xff, sizeof p);
    CHECK(cudaGraphMemcpyNodeGetParams(one, &p));
    EXPECT(p.srcPtr.ptr == host);
    EXPECT(p.dstPtr.ptr == lin);
    EXPECT(p.srcArray == nullptr && p.dstArray == nullptr);
    EXPECT(p.extent.width == n * sizeof(int) && p.extent.height == 1 && p.extent.depth == 1);
    CHECK(cudaGraphMemcpyNodeSetParams(one, &p));

    memset(&p, 0xff, sizeof p);
    CHECK(cudaGraphMemcpyNodeGetParams(three, &p));
    EXPECT(p.srcPtr.ptr == rows && p.srcPtr.pitch == w * sizeof(int) && p.srcPtr.ysize == h);
    EXPECT(p.dstPtr.ptr == dp.ptr && p.dstPtr.pitch == dp.pitch && p.dstPtr.ysize == h + 1);
    EXPECT(p.srcPos.x == 0 && p.srcPos.y == 0 && p.srcPos.z == 0);
    EXPECT(p.dstPos.x == 0 && p.dstPos.y == 1 && p.dstPos.z == 0);
    EXPECT(p.extent.width == w * sizeof(int) && p.extent.height == h && p.extent.depth == d);
    CHECK(cudaGraphMemcpyNodeSetParams(three, &p));
    // Not a copy node.
    EXPECT_ERR(cudaGraphMemcpyNodeGetParams(k, &p), cudaErrorInvalidValue);

    cudaGraphExec_t x;
    CHECK(cudaGraphInstantiate(&x, g, 0));
    CHECK(cudaGraphLaunch(x, 0));
    CHECK(cudaStreamSynchronize(0));
    int got[n];
    CHECK(cudaMemcpy(got, lin, sizeof got, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) EXPECT(got[i] == i + 5);
    cudaMemcpy3DParms out = {};
    out.srcPtr = dp;
    out.dstPtr = make_cudaPitchedPtr(back, w * sizeof(int), w, h + 1);
    out.extent = vol;
    out.kind = cudaMemcpyDeviceToHost;
    CHECK(cudaMemcpy3D(&out));
    for (int z = 0; z < d; z++)
        for (int y = 0; y <= h; y++)
            for (int x0 = 0; x0 < w; x0++)
                EXPECT(back[z][y][x0] == (y == 0 ? 0 : rows[z][y - 1][x0]));
    CHECK(cudaGraphExecDestroy(x));
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaFree(lin));
    CHECK(cudaFree(dp.ptr));
}

static void peers() {
    int count = 0, v = 7;
    CHECK(cudaGetDeviceCount(&count));
    // A device and itself is not a peer pair; past the last device is no device.
    EXPECT_ERR(cudaDeviceGetP2PAttribute(&v, cudaDevP2PAttrAccessSupported, 0, 0),
               cudaErrorInvalidDevice);
    EXPECT_ERR(cudaDeviceGetP2PAttribute(&v, cudaDevP2PAttrAccessSupported, 0, count),
               cudaErrorInvalidDevice);
    EXPECT(v == 7);
}

static void location_pools() {
#if CUDART_VERSION >= 13000
    cudaMemLocation loc = {};
    loc.type = cudaMemLocationTypeDevice;
    loc.id = 0;
    cudaMemPool_t def, cur, dev, mine;
    CHECK(cudaMemGetDefaultMemPool(&def, &loc, cudaMemAllocationTypePinned));
    CHECK(cudaDeviceGetDefaultMemPool(&dev, 0));
    EXPECT(def == dev);
    CHECK(cudaMemGetMemPool(&cur, &loc, cudaMemAllocationTypePinned));
    EXPECT(cur == def);
    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.location = loc;
    CHECK(cudaMemPoolCreate(&mine, &props));
    CHECK(cudaMemSetMemPool(&loc, cudaMemAllocationTypePinned, mine));
    CHECK(cudaMemGetMemPool(&cur, &loc, cudaMemAllocationTypePinned));
    EXPECT(cur == mine);
    CHECK(cudaDeviceGetMemPool(&dev, 0));
    EXPECT(dev == mine);
    // The default pool stays the default.
    CHECK(cudaMemGetDefaultMemPool(&cur, &loc, cudaMemAllocationTypePinned));
    EXPECT(cur == def);
    void *a;
    CHECK(cudaMallocAsync(&a, 4096, 0));
    CHECK(cudaMemsetAsync(a, 1, 4096, 0));
    CHECK(cudaFreeAsync(a, 0));
    CHECK(cudaStreamSynchronize(0));
    CHECK(cudaMemSetMemPool(&loc, cudaMemAllocationTypePinned, def));
    CHECK(cudaMemPoolDestroy(mine));
    EXPECT_ERR(cudaMemGetDefaultMemPool(&cur, nullptr, cudaMemAllocationTypePinned),
               cudaErrorInvalidValue);
#endif
}

int main() {
    event_nodes();
    copy_nodes();
    peers();
    location_pools();
    return finish();
}
