// SPDX-License-Identifier: Apache-2.0 OR MIT
// Managed memory vs explicit copies, in one run. Each round the host writes an array, a
// kernel scales it, and the host sums the result: once with cudaMalloc and cudaMemcpy both
// ways (pageable host memory), once with cudaMallocManaged and no copies. Median round time
// of each per size, and their ratio (`ratio_managed_*`: managed / explicit, 1.0 = as fast).
#include "bench.h"

__global__ void scale(float *p, size_t n, float s) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    for (; i < n; i += (size_t)gridDim.x * blockDim.x) p[i] *= s;
}

static double fill_and_sum(float *p, size_t n, int round, bool fill) {
    double sum = 0;
    if (fill) {
        for (size_t i = 0; i < n; i++) p[i] = (float)((i + round) % 7);
    } else {
        for (size_t i = 0; i < n; i++) sum += p[i];
    }
    return sum;
}

static double expected(size_t n, int round) {
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += 2.0 * (double)((i + round) % 7);
    return sum;
}

int main(int argc, char **argv) {
    std::vector<size_t> sizes = {1u << 20, 16u << 20};
    if (!quick(argc, argv)) sizes.push_back(64u << 20);
    const int rounds = 7;
    for (size_t bytes : sizes) {
        size_t n = bytes / sizeof(float);
        std::vector<double> te, tm;
        float *dev = nullptr, *m = nullptr;
        std::vector<float> host(n);
        CHECK(cudaMalloc(&dev, bytes));
        CHECK(cudaMallocManaged(&m, bytes));
        for (int r = 0; r < rounds; r++) {
            double t0 = now_us();
            fill_and_sum(host.data(), n, r, true);
            CHECK(cudaMemcpy(dev, host.data(), bytes, cudaMemcpyHostToDevice));
            scale<<<256, 256>>>(dev, n, 2.0f);
            CHECK(cudaMemcpy(host.data(), dev, bytes, cudaMemcpyDeviceToHost));
            double se = fill_and_sum(host.data(), n, r, false);
            double t1 = now_us();
            fill_and_sum(m, n, r, true);
            scale<<<256, 256>>>(m, n, 2.0f);
            CHECK(cudaDeviceSynchronize());
            double sm = fill_and_sum(m, n, r, false);
            double t2 = now_us();
            double want = expected(n, r);
            if (se != want || sm != want) {
                printf("FAIL: size %zu round %d: sums %g (explicit) %g (managed), want %g\n",
                       bytes, r, se, sm, want);
                return 1;
            }
            te.push_back(t1 - t0);
            tm.push_back(t2 - t1);
        }
        char name[64];
        snprintf(name, sizeof name, "explicit_%zuMiB", bytes >> 20);
        bench(name, median(te), "us");
        snprintf(name, sizeof name, "managed_%zuMiB", bytes >> 20);
        bench(name, median(tm), "us");
        snprintf(name, sizeof name, "ratio_managed_%zuMiB", bytes >> 20);
        bench(name, median(tm) / median(te), "x");
        CHECK(cudaFree(dev));
        CHECK(cudaFree(m));
    }
    printf("managed vs explicit copies: ok\n");
    return 0;
}
