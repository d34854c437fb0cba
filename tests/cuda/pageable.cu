// SPDX-License-Identifier: Apache-2.0 OR MIT
// Pageable host memory (malloc, std::vector) as the source and destination of copies big
// enough to go through vcuda's staging region on a Unix socket: larger than that region
// (several pieces), 2-D copies with pitched host rows and rows longer than the region,
// asynchronous copies on a stream with a kernel between, odd sizes and offsets, and four
// threads copying at once (only one can hold the region; the others copy inline), and
// copies that fail as a whole.
#include <thread>
#include <vector>
#include "common.h"

__global__ void add(unsigned *p, size_t n, unsigned v) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) p[i] += v;
}

static unsigned pattern(size_t i, unsigned seed) { return (unsigned)(i * 2654435761u) ^ seed; }

static int round_trip(size_t n, unsigned seed) {
    std::vector<unsigned> h(n), back(n);
    for (size_t i = 0; i < n; i++) h[i] = pattern(i, seed);
    unsigned *d = nullptr;
    CHECK(cudaMalloc(&d, n * sizeof(unsigned)));
    CHECK(cudaMemcpy(d, h.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice));
    add<<<(unsigned)((n + 255) / 256), 256>>>(d, n, 5);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(back.data(), d, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
    CHECK(cudaFree(d));
    int bad = 0;
    for (size_t i = 0; i < n; i++)
        if (back[i] != pattern(i, seed) + 5) bad++;
    return bad;
}

int main() {
    // 40 MiB: more than the staging region's 16 MiB, so three pieces each way.
    EXPECT(round_trip(10u << 20, 1) == 0);
    // Just over the smallest staged copy, and one byte-odd copy at odd offsets.
    EXPECT(round_trip((32u << 10) / 4 + 1, 2) == 0);
    {
        const size_t n = (1u << 20) + 3;
        std::vector<unsigned char> h(n + 7), back(n + 9, 0);
        for (size_t i = 0; i < h.size(); i++) h[i] = (unsigned char)(i * 13);
        unsigned char *d = nullptr;
        CHECK(cudaMalloc(&d, n + 16));
        CHECK(cudaMemcpy(d + 5, h.data() + 7, n, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(back.data() + 9, d + 5, n, cudaMemcpyDeviceToHost));
        int bad = 0;
        for (size_t i = 0; i < n; i++)
            if (back[9 + i] != h[7 + i]) bad++;
        EXPECT(bad == 0 && back[8] == 0);
        CHECK(cudaFree(d));
    }

    // 2-D with pitched host rows: 300 rows of 1000 floats, host pitch 1100 floats.
    {
        const int W = 1000, H = 300, HP = 1100;
        std::vector<float> h((size_t)HP * H), back((size_t)HP * H, -1.0f);
        for (size_t i = 0; i < h.size(); i++) h[i] = (float)(i % 4099);
        float *d = nullptr;
        size_t dp = 0;
        CHECK(cudaMallocPitch(&d, &dp, W * sizeof(float), H));
        CHECK(cudaMemcpy2D(d, dp, h.data(), HP * sizeof(float), W * sizeof(float), H,
                           cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy2D(back.data(), HP * sizeof(float), d, dp, W * sizeof(float), H,
                           cudaMemcpyDeviceToHost));
        int bad = 0;
        for (int r = 0; r < H; r++)
            for (int c = 0; c < HP; c++) {
                float want = c < W ? h[(size_t)r * HP + c] : -1.0f;
                if (back[(size_t)r * HP + c] != want) bad++;
            }
        EXPECT(bad == 0);
        CHECK(cudaFree(d));
    }

    // 2-D rows longer than the staging region: 2 rows of 20 MiB + 12 bytes.
    {
        const size_t W = (20u << 20) + 12, HP = W + 4096;
        std::vector<unsigned char> h(HP * 2), back(HP * 2, 0);
        for (size_t i = 0; i < h.size(); i++) h[i] = (unsigned char)(i * 31 + 7);
        unsigned char *d = nullptr;
        size_t dp = 0;
        CHECK(cudaMallocPitch((void **)&d, &dp, W, 2));
        CHECK(cudaMemcpy2D(d, dp, h.data(), HP, W, 2, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy2D(back.data(), HP, d, dp, W, 2, cudaMemcpyDeviceToHost));
        int bad = 0;
        for (size_t r = 0; r < 2; r++)
            for (size_t c = 0; c < HP; c++)
                if (back[r * HP + c] != (c < W ? h[r * HP + c] : 0)) bad++;
        EXPECT(bad == 0);
        CHECK(cudaFree(d));
    }

    // Asynchronous copies of pageable memory on a stream, a kernel between; the source may
    // be overwritten as soon as the copy returns (CUDA stages pageable memory).
    {
        const size_t n = 3u << 20;
        std::vector<unsigned> h(n), back(n);
        for (size_t i = 0; i < n; i++) h[i] = pattern(i, 3);
        unsigned *d = nullptr;
        cudaStream_t s;
        CHECK(cudaStreamCreate(&s));
        CHECK(cudaMalloc(&d, n * sizeof(unsigned)));
        CHECK(cudaMemcpyAsync(d, h.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice, s));
        for (size_t i = 0; i < n; i++) h[i] = 0;
        add<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(d, n, 9);
        CHECK(cudaMemcpyAsync(back.data(), d, n * sizeof(unsigned), cudaMemcpyDeviceToHost, s));
        CHECK(cudaStreamSynchronize(s));
        int bad = 0;
        for (size_t i = 0; i < n; i++)
            if (back[i] != pattern(i, 3) + 9) bad++;
        EXPECT(bad == 0);
        CHECK(cudaFree(d));
        CHECK(cudaStreamDestroy(s));
    }

    // Four threads at once.
    {
        std::vector<int> bad(4, -1);
        std::vector<std::thread> ts;
        for (int t = 0; t < 4; t++)
            ts.emplace_back([t, &bad] {
                int b = 0;
                for (int k = 0; k < 5; k++) b += round_trip((1u << 20) + t * 1000 + k, 100 + t);
                bad[t] = b;
            });
        for (auto &t : ts) t.join();
        for (int t = 0; t < 4; t++) EXPECT(bad[t] == 0);
    }

    // A copy to a device address that is not allocated still fails as it should.
    {
        std::vector<char> h(1 << 20, 1);
        unsigned char *d = nullptr;
        CHECK(cudaMalloc(&d, 4096));
        EXPECT_ERR(cudaMemcpy(d + 8192, h.data(), h.size(), cudaMemcpyHostToDevice),
                   cudaErrorInvalidValue);
        EXPECT_ERR(cudaMemcpy(h.data(), d, h.size(), cudaMemcpyDeviceToHost),
                   cudaErrorInvalidValue);
        cudaGetLastError();
        CHECK(cudaFree(d));
    }
    // Longer than its device allocation, by the last of several pieces: the copy fails as
    // a whole, and nothing of it lands.
    {
        const size_t n = 8u << 20;
        std::vector<unsigned char> h(n, 7), back(n, 1);
        unsigned char *d = nullptr;
        CHECK(cudaMalloc(&d, 6u << 20));
        CHECK(cudaMemset(d, 0, 6u << 20));
        EXPECT_ERR(cudaMemcpy(d, h.data(), n, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
        EXPECT_ERR(cudaMemcpy(back.data(), d, n, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
        cudaGetLastError();
        unsigned char first = 9;
        CHECK(cudaMemcpy(&first, d, 1, cudaMemcpyDeviceToHost));
        EXPECT(first == 0 && back[0] == 1);
        CHECK(cudaFree(d));
    }
    return finish();
}
