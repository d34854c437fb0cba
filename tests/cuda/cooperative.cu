// SPDX-License-Identifier: Apache-2.0 OR MIT
// Cooperative launches: cudaLaunchCooperativeKernel with cooperative groups' grid-wide
// barrier (grid.sync()) between the phases of a two-pass computation (a histogram, then a
// prefix sum over it, then a normalization that needs the grand total), sized with the
// occupancy calculator as CUDA's samples size them; the same kernel through
// cudaLaunchKernelEx's cooperative attribute and through the driver API's
// cuLaunchCooperativeKernel; a grid larger than the device holds at once fails with
// cudaErrorCooperativeLaunchTooLarge. Checked against a host reference.
#include <cuda.h>
#include "common.h"

#include <cooperative_groups.h>
namespace cg = cooperative_groups;

static const int BINS = 64;

__global__ void phases(const int *in, int n, int *hist, int *scan, float *norm) {
    cg::grid_group grid = cg::this_grid();
    // Phase 1: histogram of in[] % BINS.
    for (int i = grid.thread_rank(); i < n; i += grid.size()) atomicAdd(&hist[in[i] % BINS], 1);
    grid.sync();
    // Phase 2: block 0 scans the histogram (inclusive).
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        int acc = 0;
        for (int b = 0; b < BINS; b++) scan[b] = (acc += hist[b]);
    }
    grid.sync();
    // Phase 3: every thread normalizes with the total that phase 2 produced.
    for (int b = grid.thread_rank(); b < BINS; b += grid.size()) norm[b] = (float)scan[b] / scan[BINS - 1];
}

static int run(int blocks, int threads, const char *how) {
    const int n = 5000;
    int h_in[n];
    for (int i = 0; i < n; i++) h_in[i] = (i * 7919) % 1000;
    int *in, *hist, *scan;
    float *norm;
    CHECK(cudaMalloc(&in, sizeof h_in));
    CHECK(cudaMalloc(&hist, BINS * sizeof(int)));
    CHECK(cudaMalloc(&scan, BINS * sizeof(int)));
    CHECK(cudaMalloc(&norm, BINS * sizeof(float)));
    CHECK(cudaMemcpy(in, h_in, sizeof h_in, cudaMemcpyHostToDevice));
    CHECK(cudaMemset(hist, 0, BINS * sizeof(int)));
    int nn = n;
    void *args[] = {&in, &nn, &hist, &scan, &norm};
    if (!strcmp(how, "runtime")) {
        CHECK(cudaLaunchCooperativeKernel((void *)phases, blocks, threads, args, 0, 0));
    } else if (!strcmp(how, "ex")) {
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = dim3(blocks);
        cfg.blockDim = dim3(threads);
        cudaLaunchAttribute attr;
        attr.id = cudaLaunchAttributeCooperative;
        attr.val.cooperative = 1;
        cfg.attrs = &attr;
        cfg.numAttrs = 1;
        CHECK(cudaLaunchKernelEx(&cfg, phases, (const int *)in, nn, hist, scan, norm));
    } else if (!strcmp(how, "captured") || !strcmp(how, "node")) {
        // In a graph: a captured cooperative launch becomes a kernel node with the
        // cooperative attribute (as NVIDIA's runtime captures it), or a node is given it.
        cudaGraph_t g;
        cudaLaunchAttributeValue v = {};
        cudaGraphNode_t node;
        size_t count = 1;
        if (!strcmp(how, "captured")) {
            cudaStream_t s;
            CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
            CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
            CHECK(cudaLaunchCooperativeKernel((void *)phases, blocks, threads, args, 0, s));
            CHECK(cudaStreamEndCapture(s, &g));
            CHECK(cudaStreamDestroy(s));
            CHECK(cudaGraphGetNodes(g, &node, &count));
            EXPECT(count == 1);
        } else {
            CHECK(cudaGraphCreate(&g, 0));
            cudaKernelNodeParams kp = {};
            kp.func = (void *)phases;
            kp.gridDim = dim3(blocks);
            kp.blockDim = dim3(threads);
            kp.kernelParams = args;
            CHECK(cudaGraphAddKernelNode(&node, g, nullptr, 0, &kp));
            CHECK(cudaGraphKernelNodeGetAttribute(node, cudaLaunchAttributeCooperative, &v));
            EXPECT(v.cooperative == 0);
            v.cooperative = 1;
            CHECK(cudaGraphKernelNodeSetAttribute(node, cudaLaunchAttributeCooperative, &v));
            v = {};
        }
        CHECK(cudaGraphKernelNodeGetAttribute(node, cudaLaunchAttributeCooperative, &v));
        EXPECT(v.cooperative == 1);
        cudaGraphExec_t e;
        CHECK(cudaGraphInstantiate(&e, g, 0));
        CHECK(cudaGraphLaunch(e, 0));
        CHECK(cudaGraphExecDestroy(e));
        CHECK(cudaGraphDestroy(g));
    } else {
        cudaFunction_t f;
        CHECK(cudaGetFuncBySymbol(&f, (const void *)phases));
        void *p = nullptr;
        cudaDriverEntryPointQueryResult q;
        CHECK(cudaGetDriverEntryPoint("cuLaunchCooperativeKernel", &p, cudaEnableDefault, &q));
        auto launch = (decltype(&cuLaunchCooperativeKernel))p;
        EXPECT(launch((CUfunction)f, blocks, 1, 1, threads, 1, 1, 0, nullptr, args) == CUDA_SUCCESS);
    }
    CHECK(cudaDeviceSynchronize());
    int h_scan[BINS];
    float h_norm[BINS];
    CHECK(cudaMemcpy(h_scan, scan, sizeof h_scan, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(h_norm, norm, sizeof h_norm, cudaMemcpyDeviceToHost));
    int ref_hist[BINS] = {0}, acc = 0, bad = 0;
    for (int i = 0; i < n; i++) ref_hist[h_in[i] % BINS]++;
    for (int b = 0; b < BINS; b++) {
        acc += ref_hist[b];
        if (h_scan[b] != acc || h_norm[b] != (float)acc / n) bad++;
    }
    if (bad) printf("FAIL: %s launch of %d x %d: %d bins wrong\n", how, blocks, threads, bad);
    EXPECT(bad == 0);
    CHECK(cudaFree(in));
    CHECK(cudaFree(hist));
    CHECK(cudaFree(scan));
    CHECK(cudaFree(norm));
    return bad;
}

int main() {
    int dev = 0, coop = 0, sms = 0, per_sm = 0;
    CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
    if (!coop) {
        void *args[1] = {nullptr};
        EXPECT_ERR(cudaLaunchCooperativeKernel((void *)phases, 1, 32, args, 0, 0), cudaErrorNotSupported);
        printf("cooperative launches are not supported by this device\n");
        return finish();
    }
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    const int threads = 128;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, phases, threads, 0));
    EXPECT(per_sm > 0);
    int max_blocks = sms * per_sm;
    // As many blocks as fit at once (at most 16 here, to keep the CPU executor quick), and
    // a small grid.
    int blocks = max_blocks < 16 ? max_blocks : 16;
    run(blocks, threads, "runtime");
    run(1, threads, "runtime");
    run(blocks, 64, "ex");
    run(blocks, threads, "driver");
    run(blocks, threads, "captured");
    run(blocks, threads, "node");

    // Too large to be resident at once.
    int *p;
    CHECK(cudaMalloc(&p, 4));
    int nn = 0;
    void *args[] = {&p, &nn, &p, &p, &p};
    EXPECT_ERR(cudaLaunchCooperativeKernel((void *)phases, max_blocks + 1, threads, args, 0, 0),
               cudaErrorCooperativeLaunchTooLarge);
    cudaGetLastError();
    CHECK(cudaFree(p));
    printf("cooperative: %d SMs x %d blocks each, ran %d blocks\n", sms, per_sm, blocks);
    return finish();
}
