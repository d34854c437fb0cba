// SPDX-License-Identifier: Apache-2.0 OR MIT
// vcuda-test: nvcc=--default-stream per-thread
// A program built with the per-thread default stream: nvcc turns its runtime calls into
// the _ptsz/_ptds variants (symbol copies, 2-D memsets, async copies and memsets, launches,
// stream synchronization, stream-ordered allocation, stream queries and callbacks, driver
// entry points), each thread gets its own default stream, and results are the same as with
// the legacy stream.
#include <thread>
#include "common.h"

__constant__ float scale[4];
__device__ int bias;

__global__ void transform(float *a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = a[i] * scale[i % 4] + bias;
}

static int run(int seed) {
    const int n = 1000;
    float s[4] = {1.0f, 2.0f, 3.0f, 4.0f};
    int b = seed;
    float *d;
    CHECK(cudaMalloc(&d, n * sizeof(float)));
    CHECK(cudaMemcpyToSymbolAsync(scale, s, sizeof s, 0, cudaMemcpyHostToDevice, 0));
    CHECK(cudaMemcpyToSymbolAsync(bias, &b, sizeof b, 0, cudaMemcpyHostToDevice, 0));
    // Rows of 40 floats with a pitch of 50: 20 rows set to 0x3f800000 (1.0f) bytewise is
    // not 1.0f, so set bytes to 0 and fill through a copy instead.
    CHECK(cudaMemset2DAsync(d, 50 * sizeof(float), 0, 40 * sizeof(float), 20, 0));
    float *h = (float *)malloc(n * sizeof(float));
    for (int i = 0; i < n; i++) h[i] = (float)i;
    CHECK(cudaMemcpyAsync(d + 900, h + 900, 100 * sizeof(float), cudaMemcpyHostToDevice, 0));
    transform<<<(n + 127) / 128, 128>>>(d, n);
    CHECK(cudaGetLastError());
    int back_bias = -1;
    CHECK(cudaMemcpyFromSymbolAsync(&back_bias, bias, sizeof back_bias, 0, cudaMemcpyDeviceToHost, 0));
    CHECK(cudaStreamSynchronize(0));
    EXPECT(back_bias == seed);
    CHECK(cudaMemcpy(h, d, n * sizeof(float), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < n; i++) {
        int row = i / 50, col = i % 50;
        float base = i >= 900 ? (float)i : (row < 20 && col < 40) ? 0.0f : NAN;
        if (std::isnan(base)) continue; // never written: whatever cudaMalloc gave
        float want = base * s[i % 4] + seed;
        if (h[i] != want) bad++;
    }
    EXPECT(bad == 0);
    // The synchronous 2-D memset and symbol copies too.
    CHECK(cudaMemset2D(d, 8, 0x7f, 4, 3));
    unsigned char row[8];
    CHECK(cudaMemcpy(row, d + 2, 8, cudaMemcpyDeviceToHost));
    EXPECT(row[0] == 0x7f && row[3] == 0x7f);
    int got = 0;
    CHECK(cudaMemcpyFromSymbol(&got, bias, sizeof got));
    EXPECT(got == seed);
    // Stream-ordered allocation, stream queries and callbacks on the default stream.
    float *a = nullptr;
    CHECK(cudaMallocAsync(&a, 4096, 0));
    CHECK(cudaMemsetAsync(a, 0, 4096, 0));
    CHECK(cudaFreeAsync(a, 0));
    unsigned flags = 99;
    int prio = 99, dev = -1;
    CHECK(cudaStreamGetFlags(0, &flags));
    CHECK(cudaStreamGetPriority(0, &prio));
#if CUDART_VERSION >= 12080
    CHECK(cudaStreamGetDevice(0, &dev));
#else
    dev = 0;
#endif
    EXPECT(flags == 0 && prio == 0 && dev == 0);
    static thread_local int called;
    called = 0;
    CHECK(cudaStreamAddCallback(0, [](cudaStream_t, cudaError_t, void *p) { *(int *)p = 1; }, &called, 0));
    CHECK(cudaStreamSynchronize(0));
    EXPECT(called == 1);
    void *fn = nullptr;
    cudaDriverEntryPointQueryResult q;
    CHECK(cudaGetDriverEntryPoint("cuMemcpyHtoDAsync", &fn, cudaEnableDefault, &q));
    EXPECT(fn != nullptr && q == cudaDriverEntryPointSuccess);
    free(h);
    CHECK(cudaFree(d));
    return 0;
}

int main() {
    run(7);
    // Another host thread: its own per-thread default stream.
    std::thread t([] { run(11); });
    t.join();
    return finish();
}
