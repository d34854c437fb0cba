// SPDX-License-Identifier: Apache-2.0 OR MIT
// Graphs of device work launched many times: an explicit graph with independent branches
// (two fills, then two ordered adds), a device-to-device copy, a memset, a child graph and
// an empty join node; launches before and after kernel parameter updates and with a node
// turned off; a captured fork-join graph (two streams joined by events) uploaded before its
// launches; a captured graph that copies from and to page-locked memory, launched after the
// host changed its input. Every result is checked against the host's arithmetic. Through
// vcuda such graphs go to the backend whole and a launch is one message. Prints the time per launch
// of the captured graph (a BENCH line).
#include <chrono>
#include <vector>
#include "common.h"

__global__ void fill(float *x, float v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = v + i % 7;
}

__global__ void add_to(float *y, const float *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += x[i];
}

__global__ void scale(float *x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}

static const int N = 1 << 14;
static const int T = 256;

static cudaGraphNode_t kernel_node(cudaGraph_t g, const cudaGraphNode_t *deps, size_t nd,
                                   void *func, void **args) {
    cudaKernelNodeParams p = {};
    p.func = func;
    p.gridDim = dim3((N + T - 1) / T);
    p.blockDim = dim3(T);
    p.kernelParams = args;
    cudaGraphNode_t node;
    CHECK(cudaGraphAddKernelNode(&node, g, deps, nd, &p));
    return node;
}

// z[i] = s * ((va + i%7) * on_a + (vb + i%7) * on_b)
static bool check_z(const float *dz, float va, float vb, float s, bool on_b) {
    std::vector<float> z(N);
    CHECK(cudaMemcpy(z.data(), dz, N * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; i++) {
        float want = s * ((va + i % 7) + (on_b ? vb + i % 7 : 0.0f));
        if (!close_enough(z[i], want)) {
            printf("FAIL: z[%d] = %g, want %g\n", i, z[i], want);
            return false;
        }
    }
    return true;
}

int main() {
    float *a, *b, *y, *z;
    size_t bytes = N * sizeof(float);
    CHECK(cudaMalloc(&a, bytes));
    CHECK(cudaMalloc(&b, bytes));
    CHECK(cudaMalloc(&y, bytes));
    CHECK(cudaMalloc(&z, bytes));
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    int n = N;

    // The explicit graph:
    //   fill a (va)   fill b (vb)   memset y
    //        \            |            /
    //         +---- add y += a -------+
    //                     |
    //               add y += b   (after fill b too)
    //                     |
    //               copy z <- y
    //                     |
    //         child graph: scale z by s
    //                     |
    //                 empty join
    cudaGraph_t g;
    CHECK(cudaGraphCreate(&g, 0));
    float va = 1.0f, vb = 2.0f, sc = 3.0f;
    void *fa_args[] = {&a, &va, &n};
    void *fb_args[] = {&b, &vb, &n};
    void *ya_args[] = {&y, &a, &n};
    void *yb_args[] = {&y, &b, &n};
    cudaGraphNode_t fa = kernel_node(g, nullptr, 0, (void *)fill, fa_args);
    cudaGraphNode_t fb = kernel_node(g, nullptr, 0, (void *)fill, fb_args);
    cudaMemsetParams mp = {};
    mp.dst = y;
    mp.value = 0;
    mp.elementSize = 4;
    mp.width = N;
    mp.height = 1;
    cudaGraphNode_t ms;
    CHECK(cudaGraphAddMemsetNode(&ms, g, nullptr, 0, &mp));
    cudaGraphNode_t d1[] = {fa, ms};
    cudaGraphNode_t ya = kernel_node(g, d1, 2, (void *)add_to, ya_args);
    cudaGraphNode_t d2[] = {ya, fb};
    cudaGraphNode_t yb = kernel_node(g, d2, 2, (void *)add_to, yb_args);
    cudaGraphNode_t cp;
    CHECK(cudaGraphAddMemcpyNode1D(&cp, g, &yb, 1, z, y, bytes, cudaMemcpyDeviceToDevice));
    cudaGraph_t child;
    CHECK(cudaGraphCreate(&child, 0));
    void *sc_args[] = {&z, &sc, &n};
    kernel_node(child, nullptr, 0, (void *)scale, sc_args);
    cudaGraphNode_t ch;
    CHECK(cudaGraphAddChildGraphNode(&ch, g, &cp, 1, child));
    cudaGraphNode_t join;
    CHECK(cudaGraphAddEmptyNode(&join, g, &ch, 1));

    cudaGraphExec_t e;
    CHECK(cudaGraphInstantiate(&e, g, 0));
    for (int i = 0; i < 20; i++) CHECK(cudaGraphLaunch(e, s));
    CHECK(cudaStreamSynchronize(s));
    EXPECT(check_z(z, va, vb, sc, true));

    // New parameters for fill a: the next launch replays, the one after goes whole again.
    float va2 = 5.0f;
    void *fa2_args[] = {&a, &va2, &n};
    cudaKernelNodeParams p = {};
    p.func = (void *)fill;
    p.gridDim = dim3((N + T - 1) / T);
    p.blockDim = dim3(T);
    p.kernelParams = fa2_args;
    CHECK(cudaGraphExecKernelNodeSetParams(e, fa, &p));
    CHECK(cudaGraphLaunch(e, s));
    CHECK(cudaStreamSynchronize(s));
    EXPECT(check_z(z, va2, vb, sc, true));
    for (int i = 0; i < 5; i++) CHECK(cudaGraphLaunch(e, s));
    CHECK(cudaStreamSynchronize(s));
    EXPECT(check_z(z, va2, vb, sc, true));

    // Turn the second add off, then on again.
    CHECK(cudaGraphNodeSetEnabled(e, yb, 0));
    CHECK(cudaGraphLaunch(e, s));
    CHECK(cudaGraphLaunch(e, s));
    CHECK(cudaStreamSynchronize(s));
    EXPECT(check_z(z, va2, vb, sc, false));
    CHECK(cudaGraphNodeSetEnabled(e, yb, 1));
    CHECK(cudaGraphLaunch(e, s));
    CHECK(cudaGraphLaunch(e, s));
    CHECK(cudaStreamSynchronize(s));
    EXPECT(check_z(z, va2, vb, sc, true));

    // The graph itself is unchanged by the executable graph's updates.
    cudaGraphExec_t e2;
    CHECK(cudaGraphInstantiate(&e2, g, 0));
    CHECK(cudaGraphUpload(e2, s));
    CHECK(cudaGraphLaunch(e2, s));
    CHECK(cudaStreamSynchronize(s));
    EXPECT(check_z(z, va, vb, sc, true));
    CHECK(cudaGraphExecDestroy(e2));

    // A captured fork-join: s fills a, s2 fills b, both added into y after a memset, y
    // scaled and copied to z.
    cudaStream_t s2;
    CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    cudaEvent_t fork, joined;
    CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    CHECK(cudaEventCreateWithFlags(&joined, cudaEventDisableTiming));
    dim3 grid((N + T - 1) / T);
    float vc = 4.0f, vd = 6.0f, s3 = 0.5f;
    cudaGraph_t cap;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK(cudaEventRecord(fork, s));
    CHECK(cudaStreamWaitEvent(s2, fork, 0));
    fill<<<grid, T, 0, s>>>(a, vc, N);
    fill<<<grid, T, 0, s2>>>(b, vd, N);
    CHECK(cudaEventRecord(joined, s2));
    CHECK(cudaMemsetAsync(y, 0, bytes, s));
    add_to<<<grid, T, 0, s>>>(y, a, N);
    CHECK(cudaStreamWaitEvent(s, joined, 0));
    add_to<<<grid, T, 0, s>>>(y, b, N);
    CHECK(cudaMemcpyAsync(z, y, bytes, cudaMemcpyDeviceToDevice, s));
    scale<<<grid, T, 0, s>>>(z, s3, N);
    CHECK(cudaStreamEndCapture(s, &cap));
    cudaGraphExec_t ce;
    CHECK(cudaGraphInstantiate(&ce, cap, 0));
    CHECK(cudaGraphUpload(ce, s));
    CHECK(cudaGraphLaunch(ce, s));
    CHECK(cudaStreamSynchronize(s));
    EXPECT(check_z(z, vc, vd, s3, true));

    // Time per launch.
    const int reps = 200;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; i++) CHECK(cudaGraphLaunch(ce, s));
    CHECK(cudaStreamSynchronize(s));
    auto t1 = std::chrono::steady_clock::now();
    EXPECT(check_z(z, vc, vd, s3, true));
    double us = std::chrono::duration<double, std::micro>(t1 - t0).count() / reps;
    printf("BENCH graph_launch_7_nodes %.2f us\n", us);

    // Copies from and to page-locked memory in a graph: the input is read when the graph
    // runs, the output written then.
    float *hin, *hout;
    CHECK(cudaMallocHost(&hin, bytes));
    CHECK(cudaMallocHost(&hout, bytes));
    cudaGraph_t io;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK(cudaMemcpyAsync(a, hin, bytes, cudaMemcpyHostToDevice, s));
    scale<<<grid, T, 0, s>>>(a, 2.0f, N);
    CHECK(cudaMemcpyAsync(hout, a, bytes, cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamEndCapture(s, &io));
    cudaGraphExec_t ie;
    CHECK(cudaGraphInstantiate(&ie, io, 0));
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N; i++) hin[i] = round * 10.0f + i % 5;
        CHECK(cudaGraphLaunch(ie, s));
        CHECK(cudaStreamSynchronize(s));
        bool ok = true;
        for (int i = 0; i < N; i++) ok = ok && hout[i] == 2.0f * (round * 10.0f + i % 5);
        EXPECT(ok);
    }
    CHECK(cudaGraphExecDestroy(ie));
    CHECK(cudaGraphDestroy(io));
    CHECK(cudaFreeHost(hin));
    CHECK(cudaFreeHost(hout));

    CHECK(cudaGraphExecDestroy(ce));
    CHECK(cudaGraphExecDestroy(e));
    CHECK(cudaGraphDestroy(cap));
    CHECK(cudaGraphDestroy(child));
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaEventDestroy(fork));
    CHECK(cudaEventDestroy(joined));
    CHECK(cudaStreamDestroy(s2));
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFree(a));
    CHECK(cudaFree(b));
    CHECK(cudaFree(y));
    CHECK(cudaFree(z));
    return finish();
}
