// SPDX-License-Identifier: Apache-2.0 OR MIT
// Runtime calls no other test program makes, each once with ordinary arguments, so that the
// static runtime's route to them (NVIDIA's runtime inside the program, over libcuda.so.1)
// is run as well as vcuda's own: device choice and initialisation, cache configuration,
// array copies on a stream, a 3-D memset on a stream, peer copies within the device, the
// occupancy calculator with flags, pool access, and graph calls: 1-D and symbol copy nodes
// set on the graph and on the executable graph, memset and host nodes read and set, an
// executable graph's event-wait, host, memset and copy nodes set, instantiation with
// parameters, dependent nodes, edges removed, nodes destroyed, capture dependencies
// updated and a user object retained.
#include "common.h"

__device__ int sym[16];

__global__ void fill(int *p, int v) { p[threadIdx.x] = v; }

static int host_hits;
static void CUDART_CB hit(void *p) { *(int *)p += 1; }
static void CUDART_CB hit2(void *p) { *(int *)p += 2; }
static void CUDART_CB nothing(void *) {}

static void device_calls() {
    cudaDeviceProp want = {};
    want.major = 1;
    int dev = -1;
    CHECK(cudaChooseDevice(&dev, &want));
    EXPECT(dev == 0);
    CHECK(cudaInitDevice(0, 0, 0));
    CHECK(cudaSetDevice(0));
    cudaFuncCache c;
    CHECK(cudaDeviceSetCacheConfig(cudaFuncCachePreferShared));
    CHECK(cudaDeviceGetCacheConfig(&c));
    CHECK(cudaFuncSetCacheConfig(fill, cudaFuncCachePreferL1));
    CHECK(cudaDeviceSetCacheConfig(cudaFuncCachePreferNone));
    int blocks = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&blocks, fill, 128, 0,
                                                                 cudaOccupancyDefault));
    EXPECT(blocks > 0);
    // Disabling peer access that was never enabled (vcuda: one device, the current one).
    cudaError_t r = cudaDeviceDisablePeerAccess(0);
    EXPECT(r != cudaSuccess);
    if (getenv("VCUDA_SOCKET")) EXPECT(r == cudaErrorPeerAccessNotEnabled);
    cudaGetLastError();
}

static void copies() {
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    // An array filled and read back on a stream, row by row and whole.
    cudaChannelFormatDesc f = cudaCreateChannelDesc<int>();
    cudaArray_t a;
    CHECK(cudaMallocArray(&a, &f, 16, 4));
    cudaChannelFormatDesc got;
    CHECK(cudaGetChannelDesc(&got, a));
    EXPECT(got.x == 32 && got.f == cudaChannelFormatKindSigned);
    static int src[4][16], back[4][16], row[16];
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 16; x++) src[y][x] = y * 100 + x;
    CHECK(cudaMemcpy2DToArrayAsync(a, 0, 0, src, sizeof src[0], sizeof src[0], 4,
                                   cudaMemcpyHostToDevice, s));
    CHECK(cudaMemcpyFromArrayAsync(row, a, 0, 2, sizeof row, cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    for (int x = 0; x < 16; x++) EXPECT(row[x] == 200 + x);
    for (int x = 0; x < 16; x++) row[x] = -x;
    CHECK(cudaMemcpyToArrayAsync(a, 0, 3, row, sizeof row, cudaMemcpyHostToDevice, s));
    CHECK(cudaMemcpy2DFromArray(back, sizeof back[0], a, 0, 0, sizeof back[0], 4,
                                cudaMemcpyDeviceToHost));
    EXPECT(back[1][5] == 105 && back[3][7] == -7);
    CHECK(cudaFreeArray(a));

    // A 3-D memset on a stream, then peer copies within the device.
    cudaExtent e = make_cudaExtent(32, 4, 2);
    cudaPitchedPtr p;
    CHECK(cudaMalloc3D(&p, e));
    CHECK(cudaMemset3DAsync(p, 0x5a, e, s));
    char *lin, *lin2;
    CHECK(cudaMalloc(&lin, 64));
    CHECK(cudaMalloc(&lin2, 64));
    CHECK(cudaMemcpyPeerAsync(lin, 0, p.ptr, 0, 32, s));
    cudaMemcpy3DPeerParms pp = {};
    pp.srcPtr = p;
    pp.srcDevice = 0;
    pp.dstPtr = make_cudaPitchedPtr(lin2, 32, 32, 1);
    pp.dstDevice = 0;
    pp.extent = make_cudaExtent(32, 1, 1);
    CHECK(cudaMemcpy3DPeerAsync(&pp, s));
    CHECK(cudaStreamSynchronize(s));
    char h[32], h2[32];
    CHECK(cudaMemcpy(h, lin, 32, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(h2, lin2, 32, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 32; i++) EXPECT(h[i] == 0x5a && h2[i] == 0x5a);
    CHECK(cudaFree(p.ptr));
    CHECK(cudaFree(lin));
    CHECK(cudaFree(lin2));

    // The default pool's access, set as it is.
    cudaMemPool_t pool;
    CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
    cudaMemAccessDesc d = {};
    d.location.type = cudaMemLocationTypeDevice;
    d.location.id = 0;
    d.flags = cudaMemAccessFlagsProtReadWrite;
    CHECK(cudaMemPoolSetAccess(pool, &d, 1));
    CHECK(cudaStreamDestroy(s));
}

static void graphs() {
    int *buf, *buf2;
    CHECK(cudaMalloc(&buf, 16 * sizeof(int)));
    CHECK(cudaMalloc(&buf2, 16 * sizeof(int)));
    static int host[16], out[16];
    for (int i = 0; i < 16; i++) host[i] = i + 1;
    cudaGraph_t g;
    CHECK(cudaGraphCreate(&g, 0));
    // memset -> copy (1-D, device to device, later pointed at the symbol) -> host; an extra
    // node destroyed. (An executable graph's copy may change its operands, not their kind
    // of memory.)
    cudaGraphNode_t ms, cp, hn, extra, ev;
    cudaMemsetParams mp = {};
    mp.dst = buf;
    mp.value = 7;
    mp.elementSize = 4;
    mp.width = 16;
    mp.height = 1;
    CHECK(cudaGraphAddMemsetNode(&ms, g, nullptr, 0, &mp));
    cudaMemsetParams mg = {};
    CHECK(cudaGraphMemsetNodeGetParams(ms, &mg));
    EXPECT(mg.dst == buf && mg.value == 7 && mg.width == 16);
    mp.value = 9;
    CHECK(cudaGraphMemsetNodeSetParams(ms, &mp));
    CHECK(cudaGraphAddMemcpyNode1D(&cp, g, &ms, 1, buf2, buf, sizeof out,
                                   cudaMemcpyDeviceToDevice));
    CHECK(cudaGraphMemcpyNodeSetParams1D(cp, buf2, buf, sizeof out, cudaMemcpyDeviceToDevice));
    cudaHostNodeParams hp = {nothing, nullptr};
    CHECK(cudaGraphAddHostNode(&hn, g, &cp, 1, &hp));
    cudaHostNodeParams hg = {};
    CHECK(cudaGraphHostNodeGetParams(hn, &hg));
    EXPECT(hg.fn == nothing);
    hp = {hit, &host_hits};
    CHECK(cudaGraphHostNodeSetParams(hn, &hp));
    size_t n = 0;
#if CUDART_VERSION >= 13000
    CHECK(cudaGraphNodeGetDependentNodes(ms, nullptr, nullptr, &n));
#else
    CHECK(cudaGraphNodeGetDependentNodes(ms, nullptr, &n));
#endif
    EXPECT(n == 1);
    CHECK(cudaGraphAddEmptyNode(&extra, g, &hn, 1));
#if CUDART_VERSION >= 13000
    CHECK(cudaGraphRemoveDependencies(g, &hn, &extra, nullptr, 1));
#else
    CHECK(cudaGraphRemoveDependencies(g, &hn, &extra, 1));
#endif
    CHECK(cudaGraphDestroyNode(extra));
    cudaEvent_t e1, e2;
    CHECK(cudaEventCreate(&e1));
    CHECK(cudaEventCreate(&e2));
    CHECK(cudaEventRecord(e1, 0));
    CHECK(cudaEventRecord(e2, 0));
    CHECK(cudaGraphAddEventWaitNode(&ev, g, nullptr, 0, e1));

    cudaGraphInstantiateParams ip = {};
    cudaGraphExec_t x;
    CHECK(cudaGraphInstantiateWithParams(&x, g, &ip));
    EXPECT(ip.result_out == cudaGraphInstantiateSuccess);
    CHECK(cudaGraphLaunch(x, 0));
    CHECK(cudaStreamSynchronize(0));
    CHECK(cudaMemcpy(out, buf2, sizeof out, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 16; i++) EXPECT(out[i] == 9);
    EXPECT(host_hits == 1);

    // The executable graph's nodes changed in place.
    mp.value = 3;
    CHECK(cudaGraphExecMemsetNodeSetParams(x, ms, &mp));
    hp = {hit2, &host_hits};
    CHECK(cudaGraphExecHostNodeSetParams(x, hn, &hp));
    CHECK(cudaGraphExecEventWaitNodeSetEvent(x, ev, e2));
    CHECK(cudaGraphLaunch(x, 0));
    CHECK(cudaStreamSynchronize(0));
    CHECK(cudaMemcpy(out, buf2, sizeof out, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 16; i++) EXPECT(out[i] == 3);
    EXPECT(host_hits == 3);
    // The copy now lands in the symbol, then comes back through a 3-D copy node's setter.
    CHECK(cudaGraphExecMemcpyNodeSetParamsToSymbol(x, cp, sym, buf, sizeof sym, 0,
                                                   cudaMemcpyDeviceToDevice));
    CHECK(cudaGraphLaunch(x, 0));
    CHECK(cudaStreamSynchronize(0));
    int got[16];
    CHECK(cudaMemcpyFromSymbol(got, sym, sizeof got));
    for (int i = 0; i < 16; i++) EXPECT(got[i] == 3);
    cudaMemcpy3DParms c3 = {};
    c3.srcPtr = make_cudaPitchedPtr(buf, sizeof out, 16, 1);
    c3.dstPtr = make_cudaPitchedPtr(buf2, sizeof out, 16, 1);
    c3.extent = make_cudaExtent(sizeof out, 1, 1);
    c3.kind = cudaMemcpyDeviceToDevice;
    CHECK(cudaGraphExecMemcpyNodeSetParams(x, cp, &c3));
    CHECK(cudaGraphExecMemcpyNodeSetParams1D(x, cp, buf2, buf, sizeof out,
                                             cudaMemcpyDeviceToDevice));
    CHECK(cudaMemset(buf2, 0, sizeof out));
    CHECK(cudaGraphLaunch(x, 0));
    CHECK(cudaStreamSynchronize(0));
    CHECK(cudaMemcpy(out, buf2, sizeof out, cudaMemcpyDeviceToHost));
    EXPECT(out[5] == 3);
    // On the graph itself: the copy reads the symbol.
    CHECK(cudaGraphMemcpyNodeSetParamsFromSymbol(cp, buf2, sym, sizeof out, 0,
                                                 cudaMemcpyDeviceToDevice));
    CHECK(cudaGraphExecDestroy(x));

    // A user object retained and released by the program; the graph keeps none.
    cudaUserObject_t uo;
    CHECK(cudaUserObjectCreate(&uo, &host_hits, nothing, 1, cudaUserObjectNoDestructorSync));
    CHECK(cudaUserObjectRetain(uo, 2));
    CHECK(cudaUserObjectRelease(uo, 3));
    CHECK(cudaGraphDestroy(g));

    // Capture dependencies replaced by a node of the capture's own graph.
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    fill<<<1, 16, 0, s>>>(buf, 4);
    cudaStreamCaptureStatus st;
    cudaGraph_t cg;
    const cudaGraphNode_t *deps;
    size_t nd = 0;
#if CUDART_VERSION >= 13000
    CHECK(cudaStreamGetCaptureInfo(s, &st, nullptr, &cg, &deps, nullptr, &nd));
#else
    CHECK(cudaStreamGetCaptureInfo(s, &st, nullptr, &cg, &deps, &nd));
#endif
    EXPECT(st == cudaStreamCaptureStatusActive && nd == 1);
    cudaGraphNode_t first = nd ? deps[0] : nullptr;
    fill<<<1, 16, 0, s>>>(buf, 5);
    // The next work depends on the first launch only, as if the second were not there.
#if CUDART_VERSION >= 13000
    CHECK(cudaStreamUpdateCaptureDependencies(s, &first, nullptr, 1,
                                              cudaStreamSetCaptureDependencies));
#else
    CHECK(cudaStreamUpdateCaptureDependencies(s, &first, 1, cudaStreamSetCaptureDependencies));
#endif
    fill<<<1, 8, 0, s>>>(buf, 6);
    cudaGraph_t done;
    CHECK(cudaStreamEndCapture(s, &done));
    size_t roots = 0, nodes = 0;
    CHECK(cudaGraphGetRootNodes(done, nullptr, &roots));
    CHECK(cudaGraphGetNodes(done, nullptr, &nodes));
    EXPECT(roots == 1 && nodes == 3);
    CHECK(cudaGraphDestroy(done));
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaEventDestroy(e1));
    CHECK(cudaEventDestroy(e2));
    CHECK(cudaFree(buf));
    CHECK(cudaFree(buf2));
}

int main() {
    device_calls();
    copies();
    graphs();
    return finish();
}
