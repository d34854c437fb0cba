// SPDX-License-Identifier: Apache-2.0 OR MIT
// Stream capture, graphs and stream-ordered allocation through the driver API, as CuPy
// and PyTorch use them: cuMemAllocAsync from the default pool, cuStreamBeginCapture_v2 of
// driver launches and copies, cuStreamIsCapturing, cuStreamEndCapture, cuGraphGetNodes,
// cuGraphInstantiateWithFlags, cuGraphUpload, cuGraphLaunch replayed three times,
// cuMemFreeAsync, and the pool's release threshold and trim. Then a graph built node by
// node: memset, kernel (both CUDA_KERNEL_NODE_PARAMS layouts; parameters read, set and set
// in an executable graph), memcpy (parameters read back) and host nodes,
// dependencies added afterwards, edges, root nodes and node types, cloned, instantiated
// and launched twice; instantiated and updated again through the forms of
// cuGraphInstantiate and cuGraphExecUpdate that CUDA 11 and 10.2 declared.
#include <cuda.h>
#include <dlfcn.h>
#include "common.h"
#include "cu_check.h"

__global__ void axpb(float *x, float a, float b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = a * x[i] + b;
}

static void *lib;
template <typename F> static F sym(const char *name) {
    void *p = dlsym(lib, name);
    if (!p) {
        printf("FAIL: dlsym %s\n", name);
        exit(1);
    }
    return (F)p;
}
#define SYM(f, name) auto f##_ = sym<decltype(&f)>(name)

static int host_calls;
static void CUDA_CB count_call(void *p) { *(int *)p += 1; }

// The explicit graph-building calls.
static void explicit_graph(CUfunction f, CUstream s) {
    SYM(cuGraphCreate, "cuGraphCreate");
    SYM(cuGraphAddMemsetNode, "cuGraphAddMemsetNode");
    SYM(cuGraphAddKernelNode, "cuGraphAddKernelNode_v2");
    SYM(cuGraphAddMemcpyNode, "cuGraphAddMemcpyNode");
    SYM(cuGraphAddHostNode, "cuGraphAddHostNode");
    SYM(cuGraphAddEmptyNode, "cuGraphAddEmptyNode");
    SYM(cuGraphGetRootNodes, "cuGraphGetRootNodes");
    SYM(cuGraphNodeGetType, "cuGraphNodeGetType");
    SYM(cuGraphClone, "cuGraphClone");
    SYM(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags");
    SYM(cuGraphLaunch, "cuGraphLaunch");
    SYM(cuGraphExecDestroy, "cuGraphExecDestroy");
    SYM(cuGraphDestroy, "cuGraphDestroy");
    SYM(cuStreamSynchronize, "cuStreamSynchronize");
    SYM(cuCtxGetCurrent, "cuCtxGetCurrent");
    SYM(cuMemAlloc, "cuMemAlloc_v2");
    SYM(cuMemFree, "cuMemFree_v2");
    typedef CUresult (*AddKernelV1)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                    const CUDA_KERNEL_NODE_PARAMS_v1 *);
    typedef CUresult (*AddDepsV1)(CUgraph, const CUgraphNode *, const CUgraphNode *, size_t);
    auto add_kernel_v1 = sym<AddKernelV1>("cuGraphAddKernelNode");
    auto add_deps_v1 = sym<AddDepsV1>("cuGraphAddDependencies");
    // (CUDA 12.3+; the headers before 13.0 name the older form cuGraphGetEdges.)
    typedef CUresult (*GetEdgesV2)(CUgraph, CUgraphNode *, CUgraphNode *, void *, size_t *);
    auto cuGraphGetEdges_ = sym<GetEdgesV2>("cuGraphGetEdges_v2");

    const int n = 4096;
    CUcontext ctx;
    CU(cuCtxGetCurrent_(&ctx));
    CUdeviceptr y;
    CU(cuMemAlloc_(&y, n * sizeof(float)));
    static float hy[n];
    CUgraph g;
    CU(cuGraphCreate_(&g, 0));
    // y = 1.0 (as 32-bit words) -> y = 2y + 1 -> y = 0.5y + 0 -> host -> count.
    CUDA_MEMSET_NODE_PARAMS ms = {};
    ms.dst = y;
    ms.value = 0x3f800000u;
    ms.elementSize = 4;
    ms.width = n;
    ms.height = 1;
    CUgraphNode set, k1, k2, copy, call, empty;
    CU(cuGraphAddMemsetNode_(&set, g, nullptr, 0, &ms, ctx));
    float a = 2.0f, b = 1.0f, half = 0.5f, zero = 0.0f;
    int nn = n;
    void *args1[] = {&y, &a, &b, &nn};
    // A launch of `f` over the n elements with `args`.
    auto kernel_params = [&](void **args) {
        CUDA_KERNEL_NODE_PARAMS p = {};
        p.func = f;
        p.gridDimX = n / 256;
        p.gridDimY = p.gridDimZ = 1;
        p.blockDimX = 256;
        p.blockDimY = p.blockDimZ = 1;
        p.kernelParams = args;
        return p;
    };
    CUDA_KERNEL_NODE_PARAMS kp = kernel_params(args1);
    // Without dependencies; the edge from the memset is added below.
    CU(cuGraphAddKernelNode_(&k1, g, nullptr, 0, &kp));
    CU(add_deps_v1(g, &set, &k1, 1));
    void *args2[] = {&y, &half, &zero, &nn};
    CUDA_KERNEL_NODE_PARAMS_v1 kp1 = {};
    kp1.func = f;
    kp1.gridDimX = n / 256;
    kp1.gridDimY = kp1.gridDimZ = 1;
    kp1.blockDimX = 256;
    kp1.blockDimY = kp1.blockDimZ = 1;
    kp1.kernelParams = args2;
    CU(add_kernel_v1(&k2, g, &k1, 1, &kp1));
    CUDA_MEMCPY3D cp = {};
    cp.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    cp.srcDevice = y;
    cp.dstMemoryType = CU_MEMORYTYPE_HOST;
    cp.dstHost = hy;
    cp.WidthInBytes = n * sizeof(float);
    cp.Height = 1;
    cp.Depth = 1;
    CU(cuGraphAddMemcpyNode_(&copy, g, &k2, 1, &cp, ctx));
    CUDA_HOST_NODE_PARAMS hp = {count_call, &host_calls};
    CU(cuGraphAddHostNode_(&call, g, &copy, 1, &hp));
    CU(cuGraphAddEmptyNode_(&empty, g, &call, 1));

    size_t edges = 0, roots = 0;
    CU(cuGraphGetEdges_(g, nullptr, nullptr, nullptr, &edges));
    EXPECT(edges == 5);
    CU(cuGraphGetRootNodes_(g, nullptr, &roots));
    EXPECT(roots == 1);
    CUgraphNode root;
    roots = 1;
    CU(cuGraphGetRootNodes_(g, &root, &roots));
    EXPECT(root == set);
    CUgraphNodeType t;
    CU(cuGraphNodeGetType_(k2, &t));
    EXPECT(t == CU_GRAPH_NODE_TYPE_KERNEL);
    CU(cuGraphNodeGetType_(copy, &t));
    EXPECT(t == CU_GRAPH_NODE_TYPE_MEMCPY);
    CU(cuGraphNodeGetType_(call, &t));
    EXPECT(t == CU_GRAPH_NODE_TYPE_HOST);

    // A kernel node's parameters read back, and set (the same values here).
    SYM(cuGraphKernelNodeGetParams, "cuGraphKernelNodeGetParams_v2");
    SYM(cuGraphKernelNodeSetParams, "cuGraphKernelNodeSetParams_v2");
    SYM(cuGraphExecKernelNodeSetParams, "cuGraphExecKernelNodeSetParams_v2");
    SYM(cuGraphNodeFindInClone, "cuGraphNodeFindInClone");
    SYM(cuGraphMemsetNodeGetParams, "cuGraphMemsetNodeGetParams");
    CUDA_KERNEL_NODE_PARAMS got = {};
    CU(cuGraphKernelNodeGetParams_(k2, &got));
    EXPECT(got.func == f && got.gridDimX == n / 256 && got.blockDimX == 256);
    EXPECT(got.kernelParams && *(float *)got.kernelParams[1] == 0.5f);
    CU(cuGraphKernelNodeSetParams_(k2, &got));
    CUDA_MEMSET_NODE_PARAMS msg = {};
    CU(cuGraphMemsetNodeGetParams_(set, &msg));
    EXPECT(msg.dst == y && msg.value == 0x3f800000u && msg.width == (size_t)n);
    EXPECT(cuGraphKernelNodeGetParams_(set, &got) == CUDA_ERROR_INVALID_VALUE);
    // A copy node's parameters: the memory types as declared.
    SYM(cuGraphMemcpyNodeGetParams, "cuGraphMemcpyNodeGetParams");
    CUDA_MEMCPY3D cpg;
    memset(&cpg, 0xff, sizeof cpg);
    CU(cuGraphMemcpyNodeGetParams_(copy, &cpg));
    EXPECT(cpg.srcMemoryType == CU_MEMORYTYPE_DEVICE && cpg.srcDevice == y);
    EXPECT(cpg.dstMemoryType == CU_MEMORYTYPE_HOST && cpg.dstHost == hy);
    EXPECT(cpg.WidthInBytes == n * sizeof(float) && cpg.Height == 1 && cpg.Depth == 1);
    EXPECT(cpg.srcXInBytes == 0 && cpg.srcY == 0 && cpg.dstZ == 0 && cpg.srcLOD == 0);
    EXPECT(cpg.srcArray == nullptr && cpg.dstArray == nullptr);
    EXPECT(cuGraphMemcpyNodeGetParams_(set, &cpg) == CUDA_ERROR_INVALID_VALUE);

    CUgraph c;
    CU(cuGraphClone_(&c, g));
    CUgraphNode k2c;
    CU(cuGraphNodeFindInClone_(&k2c, k2, c));
    CU(cuGraphDestroy_(g));
    CUgraphExec e;
    CU(cuGraphInstantiateWithFlags_(&e, c, 0));
    for (int k = 0; k < 2; k++) {
        memset(hy, 0, sizeof hy);
        CU(cuGraphLaunch_(e, s));
        CU(cuStreamSynchronize_(s));
        for (int i = 0; i < n; i++) EXPECT(hy[i] == 1.5f);
    }
    EXPECT(host_calls == 2);
    // The executable graph's second kernel now adds 1 instead of 0: y = 0.5 * 3 + 1.
    float one = 1.0f;
    void *args3[] = {&y, &half, &one, &nn};
    CUDA_KERNEL_NODE_PARAMS kp3 = kernel_params(args3);
    CU(cuGraphExecKernelNodeSetParams_(e, k2c, &kp3));
    memset(hy, 0, sizeof hy);
    CU(cuGraphLaunch_(e, s));
    CU(cuStreamSynchronize_(s));
    for (int i = 0; i < n; i++) EXPECT(hy[i] == 2.5f);
    EXPECT(host_calls == 3);

    // CUDA 11's cuGraphInstantiate (an error node and a log) and CUDA 10.2's
    // cuGraphExecUpdate (an error node and a result), as cuGetProcAddress hands them out to
    // programs built for those versions.
    typedef CUresult (*GetProc)(const char *, void **, int, cuuint64_t,
                                CUdriverProcAddressQueryResult *);
    typedef CUresult (*InstantiateV11)(CUgraphExec *, CUgraph, CUgraphNode *, char *, size_t);
    typedef CUresult (*UpdateV10)(CUgraphExec, CUgraph, CUgraphNode *, CUgraphExecUpdateResult *);
    auto get_proc = sym<GetProc>("cuGetProcAddress_v2");
    void *inst = nullptr, *upd = nullptr;
    CUdriverProcAddressQueryResult q;
    CU(get_proc("cuGraphInstantiate", &inst, 11000, CU_GET_PROC_ADDRESS_DEFAULT, &q));
    CU(get_proc("cuGraphExecUpdate", &upd, 10020, CU_GET_PROC_ADDRESS_DEFAULT, &q));
    EXPECT(inst && upd);
    CUgraphExec old;
    CUgraphNode err_node;
    char log[64];
    CU(((InstantiateV11)inst)(&old, c, &err_node, log, sizeof log));
    CUgraphExecUpdateResult res = (CUgraphExecUpdateResult)99;
    CU(((UpdateV10)upd)(old, c, &err_node, &res));
    EXPECT(res == CU_GRAPH_EXEC_UPDATE_SUCCESS);
    memset(hy, 0, sizeof hy);
    CU(cuGraphLaunch_(old, s));
    CU(cuStreamSynchronize_(s));
    for (int i = 0; i < n; i++) EXPECT(hy[i] == 1.5f);
    EXPECT(host_calls == 4);
    CU(cuGraphExecDestroy_(old));
    CU(cuGraphExecDestroy_(e));
    CU(cuGraphDestroy_(c));
    CU(cuMemFree_(y));
}

int main() {
    CHECK(cudaFree(0));
    lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib) {
        printf("FAIL: dlopen libcuda.so.1: %s\n", dlerror());
        return 1;
    }
    SYM(cuStreamCreate, "cuStreamCreate");
    SYM(cuStreamBeginCapture, "cuStreamBeginCapture_v2");
    SYM(cuStreamEndCapture, "cuStreamEndCapture");
    SYM(cuStreamIsCapturing, "cuStreamIsCapturing");
    SYM(cuStreamSynchronize, "cuStreamSynchronize");
    SYM(cuGraphGetNodes, "cuGraphGetNodes");
    SYM(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags");
    SYM(cuGraphUpload, "cuGraphUpload");
    SYM(cuGraphLaunch, "cuGraphLaunch");
    SYM(cuGraphExecDestroy, "cuGraphExecDestroy");
    SYM(cuGraphDestroy, "cuGraphDestroy");
    SYM(cuMemAllocAsync, "cuMemAllocAsync");
    // The forms of CUDA 11.3 (the header's names point at later ones).
    auto cuStreamGetCaptureInfo_ = sym<CUresult (*)(CUstream, CUstreamCaptureStatus *, cuuint64_t *,
                                                    CUgraph *, const CUgraphNode **, size_t *)>(
        "cuStreamGetCaptureInfo_v2");
    auto cuStreamUpdateCaptureDependencies_ =
        sym<CUresult (*)(CUstream, CUgraphNode *, size_t, unsigned)>(
            "cuStreamUpdateCaptureDependencies");
    SYM(cuThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode");
    SYM(cuMemFreeAsync, "cuMemFreeAsync");
    SYM(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
    SYM(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
    SYM(cuDeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool");
    SYM(cuMemPoolSetAttribute, "cuMemPoolSetAttribute");
    SYM(cuMemPoolGetAttribute, "cuMemPoolGetAttribute");
    SYM(cuMemPoolTrimTo, "cuMemPoolTrimTo");
    SYM(cuLaunchKernel, "cuLaunchKernel");

    CUstream s;
    CU(cuStreamCreate_(&s, CU_STREAM_NON_BLOCKING));
    const int n = 1000;
    CUdeviceptr x;
    CU(cuMemAllocAsync_(&x, n * sizeof(float), s));
    static float h[n], back[n];
    for (int i = 0; i < n; i++) h[i] = (float)i;
    CU(cuMemcpyHtoDAsync_(x, h, sizeof h, s));
    CU(cuStreamSynchronize_(s));

    CUfunction f;
    CHECK(cudaGetFuncBySymbol(&f, (const void *)axpb));
    float a = 2.0f, b = 1.0f;
    int nn = n;
    void *args[] = {&x, &a, &b, &nn};
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    CU(cuStreamIsCapturing_(s, &st));
    EXPECT(st == CU_STREAM_CAPTURE_STATUS_NONE);
    CU(cuStreamBeginCapture_(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CU(cuStreamIsCapturing_(s, &st));
    EXPECT(st == CU_STREAM_CAPTURE_STATUS_ACTIVE);
    CU(cuLaunchKernel_(f, (n + 127) / 128, 1, 1, 128, 1, 1, 0, s, args, nullptr));
    // What the capture holds so far: one node, which the next one depends on.
    cuuint64_t cid = 0;
    CUgraph cg = nullptr;
    const CUgraphNode *cdeps = nullptr;
    size_t ndeps = 0;
    CU(cuStreamGetCaptureInfo_(s, &st, &cid, &cg, &cdeps, &ndeps));
    EXPECT(st == CU_STREAM_CAPTURE_STATUS_ACTIVE && cid != 0 && cg != nullptr && ndeps == 1);
    CUgraphNode first = ndeps == 1 ? cdeps[0] : nullptr;
    // Set again to that same node (a no-op), as a library that rewires a capture would.
    CU(cuStreamUpdateCaptureDependencies_(s, &first, 1, CU_STREAM_SET_CAPTURE_DEPENDENCIES));
    CU(cuLaunchKernel_(f, (n + 127) / 128, 1, 1, 128, 1, 1, 0, s, args, nullptr));
    // The thread's capture mode, exchanged and put back.
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    CU(cuThreadExchangeStreamCaptureMode_(&mode));
    EXPECT(mode == CU_STREAM_CAPTURE_MODE_GLOBAL);
    CU(cuThreadExchangeStreamCaptureMode_(&mode));
    EXPECT(mode == CU_STREAM_CAPTURE_MODE_RELAXED);
    CUgraph g;
    CU(cuStreamEndCapture_(s, &g));
    size_t nodes = 0;
    CU(cuGraphGetNodes_(g, nullptr, &nodes));
    EXPECT(nodes == 2);
    CUgraphExec e;
    CU(cuGraphInstantiateWithFlags_(&e, g, 0));
    CU(cuGraphUpload_(e, s));
    for (int k = 0; k < 3; k++) CU(cuGraphLaunch_(e, s));
    CU(cuMemcpyDtoHAsync_(back, x, sizeof back, s));
    CU(cuStreamSynchronize_(s));
    // Six times x -> 2x + 1.
    for (int i = 0; i < n; i++) {
        double v = i;
        for (int k = 0; k < 6; k++) v = 2 * v + 1;
        EXPECT(close_enough(back[i], v));
    }
    CU(cuGraphExecDestroy_(e));
    CU(cuGraphDestroy_(g));
    CU(cuMemFreeAsync_(x, s));
    CU(cuStreamSynchronize_(s));

    explicit_graph(f, s);

    CUmemoryPool pool;
    CU(cuDeviceGetDefaultMemPool_(&pool, 0));
    cuuint64_t threshold = 1 << 20, got = 0;
    CU(cuMemPoolSetAttribute_(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
    CU(cuMemPoolGetAttribute_(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &got));
    EXPECT(got == threshold);
    CU(cuMemPoolTrimTo_(pool, 0));
    return finish();
}
