// SPDX-License-Identifier: Apache-2.0 OR MIT
// Many host threads, each with its own streams, device, last error and kernels; and work
// one thread submits that another, told so through host memory, synchronizes and reads.
#include <atomic>
#include <thread>
#include <vector>
#include "common.h"

__global__ void scale(float *x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * a + (float)i;
}

static int worker(int id) {
    const int n = 4096 + id * 100;
    std::vector<float> h(n), g(n);
    for (int i = 0; i < n; i++) h[i] = (float)(i % 17) + id;
    cudaStream_t s;
    if (cudaStreamCreate(&s) != cudaSuccess) return 1;
    float *d;
    if (cudaMalloc(&d, n * sizeof(float)) != cudaSuccess) return 2;
    for (int rep = 0; rep < 3; rep++) {
        cudaMemcpyAsync(d, h.data(), n * sizeof(float), cudaMemcpyHostToDevice, s);
        scale<<<(n + 127) / 128, 128, 0, s>>>(d, 2.0f, n);
        cudaMemcpyAsync(g.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost, s);
        if (cudaStreamSynchronize(s) != cudaSuccess) return 3;
        for (int i = 0; i < n; i++)
            if (g[i] != h[i] * 2.0f + (float)i) return 4;
    }
    // The last error is per thread: this thread's failure is not seen by others.
    void *p;
    if (cudaMalloc(&p, (size_t)1 << 50) != cudaErrorMemoryAllocation) return 5;
    if (cudaGetLastError() != cudaErrorMemoryAllocation) return 6;
    cudaFree(d);
    cudaStreamDestroy(s);
    return 0;
}

__global__ void fill(int *x, int v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = v + i;
}

// Thread A launches into a shared stream and then tells thread B (a host atomic, no CUDA
// call in between); B synchronizes that stream and must find A's work done: a launch that
// returned before B's call started is ordered before it.
static int handoff() {
    const int n = 1000;
    cudaStream_t s;
    int *d;
    if (cudaStreamCreate(&s) != cudaSuccess || cudaMalloc(&d, n * sizeof(int)) != cudaSuccess)
        return 1;
    int bad = 0;
    for (int round = 0; round < 50; round++) {
        std::atomic<int> launched{0};
        std::thread a([&] {
            fill<<<(n + 255) / 256, 256, 0, s>>>(d, round * 7, n);
            launched.store(1);
        });
        std::thread b([&] {
            while (!launched.load()) {
            }
            std::vector<int> h(n);
            if (cudaStreamSynchronize(s) != cudaSuccess ||
                cudaMemcpy(h.data(), d, n * sizeof(int), cudaMemcpyDeviceToHost) != cudaSuccess) {
                bad++;
                return;
            }
            for (int i = 0; i < n; i++)
                if (h[i] != round * 7 + i) {
                    bad++;
                    return;
                }
        });
        a.join();
        b.join();
    }
    cudaFree(d);
    cudaStreamDestroy(s);
    return bad ? 2 : 0;
}

int main() {
    EXPECT(handoff() == 0);
    const int T = 8;
    std::vector<std::thread> ts;
    std::vector<int> rc(T, -1);
    for (int t = 0; t < T; t++) ts.emplace_back([t, &rc] { rc[t] = worker(t); });
    for (auto &t : ts) t.join();
    for (int t = 0; t < T; t++) {
        if (rc[t] != 0) printf("thread %d failed at step %d\n", t, rc[t]);
        EXPECT(rc[t] == 0);
    }
    EXPECT(cudaGetLastError() == cudaSuccess);
    CHECK(cudaDeviceSynchronize());
    return finish();
}
