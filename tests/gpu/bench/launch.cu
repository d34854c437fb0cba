// SPDX-License-Identifier: Apache-2.0 OR MIT
// Launch throughput: empty kernels launched back to back on one stream, then one
// synchronization; reported as launches per second. Also a captured graph of eight empty
// kernels in a chain, launched back to back: graph launches per second.
#include "bench.h"

__global__ void empty() {}
__global__ void params8(const float *a, float *b, int n, int m, float x, double y, long long z,
                        unsigned u) {
    if (n < 0 && m < 0) b[0] = a[0] + x + (float)y + (float)z + (float)u;
}

template <class F>
static void rate(const char *name, int n, cudaStream_t s, F launch) {
    launch();
    CHECK(cudaStreamSynchronize(s));
    double t0 = now_us();
    for (int i = 0; i < n; i++) launch();
    CHECK(cudaStreamSynchronize(s));
    double dt = now_us() - t0;
    CHECK(cudaGetLastError());
    bench(name, n / dt * 1e6, "launches/s");
}

int main(int argc, char **argv) {
    int n = quick(argc, argv) ? 2000 : 200000;
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    float *a;
    CHECK(cudaMalloc(&a, 64));
    rate("launch_empty_1x1", n, s, [&] { empty<<<1, 1, 0, s>>>(); });
    rate("launch_empty_1x1_legacy", n, 0, [&] { empty<<<1, 1>>>(); });
    rate("launch_empty_1024x256", quick(argc, argv) ? 20 : n, s, [&] { empty<<<1024, 256, 0, s>>>(); });
    rate("launch_params8", n, s, [&] { params8<<<1, 32, 0, s>>>(a, a, 1, 2, 1.f, 2.0, 3, 4u); });
    cudaGraph_t g;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < 8; i++) empty<<<1, 1, 0, s>>>();
    CHECK(cudaStreamEndCapture(s, &g));
    cudaGraphExec_t e;
    CHECK(cudaGraphInstantiate(&e, g, 0));
    rate("graph_launch_8_kernels", n / 8, s, [&] { CHECK(cudaGraphLaunch(e, s)); });
    CHECK(cudaGraphExecDestroy(e));
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaFree(a));
    CHECK(cudaStreamDestroy(s));
    printf("PASS\n");
    return 0;
}
