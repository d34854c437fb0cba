// SPDX-License-Identifier: Apache-2.0 OR MIT
// CUDA graphs: stream capture of kernels, copies, memsets and host functions across two
// streams joined by events, replayed several times; an explicit graph (a diamond, a child
// graph), clone, node and edge queries, kernel parameter updates through
// cudaGraphExecKernelNodeSetParams and cudaGraphExecUpdate; the errors of capture.
#include <vector>
#include "common.h"

__global__ void scale_add(float *y, const float *x, float a, float b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + b;
}

__global__ void add_to(float *y, const float *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += x[i];
}

static int g_host_calls = 0;
static void CUDART_CB count_call(void *p) { ++*static_cast<int *>(p); }

static size_t node_count(cudaGraph_t g) {
    size_t n = 0;
    CHECK(cudaGraphGetNodes(g, nullptr, &n));
    return n;
}

static size_t edge_count(cudaGraph_t g) {
    size_t n = 0;
#if CUDART_VERSION >= 13000
    CHECK(cudaGraphGetEdges(g, nullptr, nullptr, nullptr, &n));
#else
    CHECK(cudaGraphGetEdges(g, nullptr, nullptr, &n));
#endif
    return n;
}

static cudaKernelNodeParams scale_params(void **args, int n) {
    cudaKernelNodeParams p = {};
    p.func = (void *)scale_add;
    p.gridDim = dim3((n + 255) / 256);
    p.blockDim = dim3(256);
    p.sharedMemBytes = 0;
    p.kernelParams = args;
    p.extra = nullptr;
    return p;
}

int main() {
    const int N = 1000;
    const size_t bytes = N * sizeof(float);
    const dim3 grid((N + 255) / 256), block(256);
    float *dx, *dy, *dz;
    CHECK(cudaMalloc(&dx, bytes));
    CHECK(cudaMalloc(&dy, bytes));
    CHECK(cudaMalloc(&dz, bytes));
    std::vector<float> in(N), out(N);
    cudaStream_t s1, s2, s3;
    CHECK(cudaStreamCreate(&s1));
    CHECK(cudaStreamCreate(&s2));
    CHECK(cudaStreamCreateWithFlags(&s3, cudaStreamNonBlocking));
    cudaEvent_t fork, join;
    CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    CHECK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));

    // --- Capture across two streams: y = 2x + 1 on s1; z = 0 + x, then a host function,
    // on s2; y += z on s1; copy back.
    cudaStreamCaptureStatus cst = cudaStreamCaptureStatusActive;
    CHECK(cudaStreamIsCapturing(s1, &cst));
    EXPECT(cst == cudaStreamCaptureStatusNone);
    CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
    CHECK(cudaStreamIsCapturing(s1, &cst));
    EXPECT(cst == cudaStreamCaptureStatusActive);
    CHECK(cudaMemcpyAsync(dx, in.data(), bytes, cudaMemcpyHostToDevice, s1));
    CHECK(cudaEventRecord(fork, s1));
    CHECK(cudaStreamWaitEvent(s2, fork, 0));
    CHECK(cudaStreamIsCapturing(s2, &cst));
    EXPECT(cst == cudaStreamCaptureStatusActive);
    scale_add<<<grid, block, 0, s1>>>(dy, dx, 2.0f, 1.0f, N);
    CHECK(cudaGetLastError());
    CHECK(cudaMemsetAsync(dz, 0, bytes, s2));
    add_to<<<grid, block, 0, s2>>>(dz, dx, N);
    CHECK(cudaLaunchHostFunc(s2, count_call, &g_host_calls));
    CHECK(cudaEventRecord(join, s2));
    CHECK(cudaStreamWaitEvent(s1, join, 0));
    {
        unsigned long long id = 0;
        cudaGraph_t cg = nullptr;
        const cudaGraphNode_t *deps = nullptr;
        size_t ndeps = 0;
#if CUDART_VERSION >= 13000
        CHECK(cudaStreamGetCaptureInfo(s1, &cst, &id, &cg, &deps, nullptr, &ndeps));
#else
        CHECK(cudaStreamGetCaptureInfo(s1, &cst, &id, &cg, &deps, &ndeps));
#endif
        EXPECT(cst == cudaStreamCaptureStatusActive);
        EXPECT(id != 0 && cg != nullptr);
        EXPECT(ndeps == 2 && deps != nullptr); // the kernel on s1, the host function on s2
    }
    add_to<<<grid, block, 0, s1>>>(dy, dz, N);
    CHECK(cudaMemcpyAsync(out.data(), dy, bytes, cudaMemcpyDeviceToHost, s1));
    EXPECT(g_host_calls == 0); // captured, not run
    cudaGraph_t captured = nullptr;
    CHECK(cudaStreamEndCapture(s1, &captured));
    EXPECT(captured != nullptr);
    CHECK(cudaStreamIsCapturing(s2, &cst));
    EXPECT(cst == cudaStreamCaptureStatusNone);
    EXPECT(node_count(captured) == 7);
    EXPECT(edge_count(captured) == 7);
    {
        size_t roots = 0;
        CHECK(cudaGraphGetRootNodes(captured, nullptr, &roots));
        EXPECT(roots == 1);
    }
    cudaGraphExec_t cexec;
    CHECK(cudaGraphInstantiate(&cexec, captured, 0));
    for (int iter = 0; iter < 3; iter++) {
        for (int i = 0; i < N; i++) in[i] = float(i % 97) + iter;
        std::fill(out.begin(), out.end(), -1.0f);
        CHECK(cudaGraphLaunch(cexec, s1));
        CHECK(cudaStreamSynchronize(s1));
        int bad = 0;
        for (int i = 0; i < N; i++) bad += out[i] != 3.0f * in[i] + 1.0f;
        EXPECT(bad == 0);
        EXPECT(g_host_calls == iter + 1);
    }
    CHECK(cudaGraphExecDestroy(cexec));
    CHECK(cudaGraphDestroy(captured));

    // --- An explicit diamond: A (memset x = 1.0f) -> B (y = 2x), C (z = 3x) -> D (y += z)
    // -> E (copy y back) -> F (child graph: copy y to x, then a host function).
    cudaGraph_t g;
    CHECK(cudaGraphCreate(&g, 0));
    cudaGraphNode_t A, B, C, D, E, F;
    cudaMemsetParams mp = {};
    mp.dst = dx;
    mp.value = 0x3f800000; // 1.0f
    mp.elementSize = 4;
    mp.width = N;
    mp.height = 1;
    CHECK(cudaGraphAddMemsetNode(&A, g, nullptr, 0, &mp));
    float a2 = 2.0f, a3 = 3.0f, zero = 0.0f;
    int n = N;
    void *argsB[] = {&dy, &dx, &a2, &zero, &n};
    void *argsC[] = {&dz, &dx, &a3, &zero, &n};
    cudaKernelNodeParams pB = scale_params(argsB, N), pC = scale_params(argsC, N);
    CHECK(cudaGraphAddKernelNode(&B, g, &A, 1, &pB));
    CHECK(cudaGraphAddKernelNode(&C, g, &A, 1, &pC));
    a2 = 100.0f; // the node keeps a copy of its arguments
    void *argsD[] = {&dy, &dz, &n};
    cudaKernelNodeParams pD = {};
    pD.func = (void *)add_to;
    pD.gridDim = grid;
    pD.blockDim = block;
    pD.kernelParams = argsD;
    CHECK(cudaGraphAddKernelNode(&D, g, nullptr, 0, &pD));
    cudaGraphNode_t from[] = {B, C}, to[] = {D, D};
#if CUDART_VERSION >= 13000
    CHECK(cudaGraphAddDependencies(g, from, to, nullptr, 2));
#else
    CHECK(cudaGraphAddDependencies(g, from, to, 2));
#endif
    CHECK(cudaGraphAddMemcpyNode1D(&E, g, &D, 1, out.data(), dy, bytes, cudaMemcpyDeviceToHost));
    cudaGraph_t child;
    CHECK(cudaGraphCreate(&child, 0));
    cudaGraphNode_t M, H;
    cudaMemcpy3DParms cp = {};
    cp.srcPtr = make_cudaPitchedPtr(dy, bytes, N, 1);
    cp.dstPtr = make_cudaPitchedPtr(dx, bytes, N, 1);
    cp.extent = make_cudaExtent(bytes, 1, 1);
    cp.kind = cudaMemcpyDeviceToDevice;
    CHECK(cudaGraphAddMemcpyNode(&M, child, nullptr, 0, &cp));
    int child_calls = 0;
    cudaHostNodeParams hp = {count_call, &child_calls};
    CHECK(cudaGraphAddHostNode(&H, child, &M, 1, &hp));
    CHECK(cudaGraphAddChildGraphNode(&F, g, &E, 1, child));
    CHECK(cudaGraphDestroy(child)); // the node holds its own copy
    EXPECT(node_count(g) == 6);
    EXPECT(edge_count(g) == 6);
    {
        cudaGraphNodeType t;
        CHECK(cudaGraphNodeGetType(F, &t));
        EXPECT(t == cudaGraphNodeTypeGraph);
        CHECK(cudaGraphNodeGetType(A, &t));
        EXPECT(t == cudaGraphNodeTypeMemset);
        CHECK(cudaGraphNodeGetType(B, &t));
        EXPECT(t == cudaGraphNodeTypeKernel);
        cudaGraph_t inner;
        CHECK(cudaGraphChildGraphNodeGetGraph(F, &inner));
        EXPECT(node_count(inner) == 2);
        cudaKernelNodeParams got = {};
        CHECK(cudaGraphKernelNodeGetParams(B, &got));
        EXPECT(got.func == (void *)scale_add && got.gridDim.x == grid.x && got.blockDim.x == 256);
        EXPECT(*(float *)got.kernelParams[2] == 2.0f);
        cudaGraphNode_t roots[4] = {};
        size_t nroots = 4;
        CHECK(cudaGraphGetRootNodes(g, roots, &nroots));
        EXPECT(nroots == 1 && roots[0] == A && roots[1] == nullptr);
    }
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, g, 0));
    auto run = [&](float want) {
        std::fill(out.begin(), out.end(), -1.0f);
        CHECK(cudaGraphLaunch(exec, s1));
        CHECK(cudaStreamSynchronize(s1));
        int bad = 0;
        for (int i = 0; i < N; i++) bad += out[i] != want;
        std::vector<float> back(N);
        CHECK(cudaMemcpy(back.data(), dx, bytes, cudaMemcpyDeviceToHost));
        for (int i = 0; i < N; i++) bad += back[i] != want; // the child's copy
        if (bad) printf("FAIL: expected %g, got %g (%d wrong)\n", want, out[0], bad);
        EXPECT(bad == 0);
    };
    run(5.0f); // 2 + 3
    EXPECT(child_calls == 1);

    // The executable graph's own kernel parameters.
    float a10 = 10.0f;
    void *argsB10[] = {&dy, &dx, &a10, &zero, &n};
    cudaKernelNodeParams pB10 = scale_params(argsB10, N);
    CHECK(cudaGraphExecKernelNodeSetParams(exec, B, &pB10));
    run(13.0f); // 10 + 3
    EXPECT(child_calls == 2);

    // A clone with other parameters, taken over by cudaGraphExecUpdate.
    cudaGraph_t g2;
    CHECK(cudaGraphClone(&g2, g));
    EXPECT(node_count(g2) == 6 && edge_count(g2) == 6);
    cudaGraphNode_t C2;
    CHECK(cudaGraphNodeFindInClone(&C2, C, g2));
    float a5 = 5.0f;
    void *argsC5[] = {&dz, &dx, &a5, &zero, &n};
    cudaKernelNodeParams pC5 = scale_params(argsC5, N);
    CHECK(cudaGraphKernelNodeSetParams(C2, &pC5));
    cudaGraphExecUpdateResultInfo info = {};
    CHECK(cudaGraphExecUpdate(exec, g2, &info));
    EXPECT(info.result == cudaGraphExecUpdateSuccess);
    run(7.0f); // 2 (the clone's B) + 5
    // After an update the nodes of the instantiated graph still name its steps.
    CHECK(cudaGraphExecKernelNodeSetParams(exec, B, &pB10));
    run(15.0f);

    // Another topology cannot update it; the executable graph stays as it was.
    cudaGraph_t g3;
    CHECK(cudaGraphCreate(&g3, 0));
    cudaGraphNode_t e1;
    CHECK(cudaGraphAddEmptyNode(&e1, g3, nullptr, 0));
    EXPECT_ERR(cudaGraphExecUpdate(exec, g3, &info), cudaErrorGraphExecUpdateFailure);
    EXPECT(info.result == cudaGraphExecUpdateErrorTopologyChanged);
    cudaGetLastError();
    run(15.0f);

    // A cycle cannot be instantiated.
    cudaGraphNode_t e2;
    CHECK(cudaGraphAddEmptyNode(&e2, g3, &e1, 1));
#if CUDART_VERSION >= 13000
    cudaError_t cyc = cudaGraphAddDependencies(g3, &e2, &e1, nullptr, 1);
#else
    cudaError_t cyc = cudaGraphAddDependencies(g3, &e2, &e1, 1);
#endif
    if (cyc == cudaSuccess) {
        cudaGraphExec_t bad;
        EXPECT(cudaGraphInstantiate(&bad, g3, 0) != cudaSuccess);
    }
    cudaGetLastError();

    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaGraphDestroy(g2));
    CHECK(cudaGraphDestroy(g3));

    // --- Errors.
    cudaGraph_t none = (cudaGraph_t)0x1;
    EXPECT_ERR(cudaStreamEndCapture(s1, &none), cudaErrorIllegalState);
    EXPECT_ERR(cudaStreamBeginCapture(0, cudaStreamCaptureModeGlobal),
               cudaErrorStreamCaptureUnsupported);
    CHECK(cudaStreamBeginCapture(s3, cudaStreamCaptureModeGlobal));
    EXPECT_ERR(cudaStreamBeginCapture(s3, cudaStreamCaptureModeGlobal), cudaErrorIllegalState);
    // A synchronous copy beside a non-blocking stream's capture is allowed, even in global
    // mode (NVIDIA's runtime, measured on an H100).
    CHECK(cudaMemcpy(out.data(), dy, bytes, cudaMemcpyDeviceToHost));
    CHECK(cudaStreamIsCapturing(s3, &cst));
    EXPECT(cst == cudaStreamCaptureStatusActive);
    cudaGraph_t kept = nullptr;
    CHECK(cudaStreamEndCapture(s3, &kept));
    CHECK(cudaGraphDestroy(kept));
    // While a blocking stream captures, it is legacy-stream work that would synchronize
    // with it: refused, and the capture is invalidated.
    CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
    EXPECT_ERR(cudaMemcpy(out.data(), dy, bytes, cudaMemcpyDeviceToHost),
               cudaErrorStreamCaptureImplicit);
    CHECK(cudaStreamIsCapturing(s1, &cst));
    EXPECT(cst == cudaStreamCaptureStatusInvalidated);
    EXPECT_ERR(cudaMemsetAsync(dz, 0, bytes, s1), cudaErrorStreamCaptureInvalidated);
    cudaGraph_t inval = (cudaGraph_t)0x1;
    EXPECT_ERR(cudaStreamEndCapture(s1, &inval), cudaErrorStreamCaptureInvalidated);
    EXPECT(inval == nullptr);
    CHECK(cudaStreamIsCapturing(s1, &cst));
    EXPECT(cst == cudaStreamCaptureStatusNone);

    // cudaMalloc is not permitted in global mode, but is in relaxed mode.
    float *extra = nullptr;
    CHECK(cudaStreamBeginCapture(s3, cudaStreamCaptureModeGlobal));
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
    EXPECT(mode == cudaStreamCaptureModeGlobal);
    CHECK(cudaMalloc(&extra, bytes));
    CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
    CHECK(cudaMemsetAsync(extra, 0, bytes, s3));
    // (Into a pointer of its own: NVIDIA's runtime writes it even as it refuses.)
    float *refused = nullptr;
    EXPECT_ERR(cudaMalloc(&refused, bytes), cudaErrorStreamCaptureUnsupported);
    cudaGraph_t gm = nullptr;
    EXPECT_ERR(cudaStreamEndCapture(s3, &gm), cudaErrorStreamCaptureInvalidated);
    CHECK(cudaFree(extra));

    // Synchronizing a capturing stream is not permitted.
    CHECK(cudaStreamBeginCapture(s3, cudaStreamCaptureModeRelaxed));
    EXPECT_ERR(cudaStreamSynchronize(s3), cudaErrorStreamCaptureUnsupported);
    EXPECT_ERR(cudaStreamEndCapture(s3, &gm), cudaErrorStreamCaptureInvalidated);

    // The legacy stream while a blocking stream captures (relaxed mode).
    CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeRelaxed));
    EXPECT_ERR(cudaMemcpy(out.data(), dy, bytes, cudaMemcpyDeviceToHost),
               cudaErrorStreamCaptureImplicit);
    EXPECT_ERR(cudaStreamEndCapture(s1, &gm), cudaErrorStreamCaptureInvalidated);

    // A fork that is not joined back.
    CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
    CHECK(cudaEventRecord(fork, s1));
    CHECK(cudaStreamWaitEvent(s2, fork, 0));
    CHECK(cudaMemsetAsync(dz, 0, bytes, s2));
    gm = (cudaGraph_t)0x1;
    EXPECT_ERR(cudaStreamEndCapture(s1, &gm), cudaErrorStreamCaptureUnjoined);
    EXPECT(gm == nullptr);
    CHECK(cudaStreamIsCapturing(s2, &cst));
    EXPECT(cst == cudaStreamCaptureStatusNone);
    cudaGetLastError();

    // Everything works as before.
    CHECK(cudaMemset(dz, 0, bytes));
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(dx));
    CHECK(cudaFree(dy));
    CHECK(cudaFree(dz));
    CHECK(cudaStreamDestroy(s1));
    CHECK(cudaStreamDestroy(s2));
    CHECK(cudaStreamDestroy(s3));
    CHECK(cudaEventDestroy(fork));
    CHECK(cudaEventDestroy(join));
    return finish();
}
