// SPDX-License-Identifier: Apache-2.0 OR MIT
// Host<->device bandwidth sweep: cudaMemcpy of 4 KiB .. 256 MiB, pageable and pinned host
// memory, both directions. Median of several copies per size, reported in GB/s (1e9 B/s).
#include <cstring>
#include "bench.h"

int main(int argc, char **argv) {
    size_t max = quick(argc, argv) ? (16u << 20) : (256u << 20);
    unsigned char *dev, *pinned;
    CHECK(cudaMalloc(&dev, max));
    CHECK(cudaMallocHost(&pinned, max));
    std::vector<unsigned char> pageable(max);
    for (size_t i = 0; i < max; i++) pageable[i] = (unsigned char)(i * 7 + 3);
    memcpy(pinned, pageable.data(), max);

    // Correctness first: a round trip through each kind of memory.
    for (int k = 0; k < 2; k++) {
        unsigned char *h = k ? pinned : pageable.data();
        std::vector<unsigned char> back(max);
        CHECK(cudaMemcpy(dev, h, max, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(back.data(), dev, max, cudaMemcpyDeviceToHost));
        if (memcmp(back.data(), pageable.data(), max) != 0) {
            printf("FAIL: %s round trip differs\n", k ? "pinned" : "pageable");
            return 1;
        }
    }
    printf("round trips ok\n");

    for (int k = 0; k < 2; k++) {
        const char *kind = k ? "pinned" : "pageable";
        unsigned char *h = k ? pinned : pageable.data();
        for (int dir = 0; dir < 2; dir++) {
            for (size_t n = 4096; n <= max; n *= 4) {
                int reps = (int)std::min<size_t>(100, std::max<size_t>(5, (64u << 20) / n));
                std::vector<double> t;
                for (int r = 0; r < reps + 1; r++) {
                    double t0 = now_us();
                    if (dir == 0)
                        CHECK(cudaMemcpy(dev, h, n, cudaMemcpyHostToDevice));
                    else
                        CHECK(cudaMemcpy(h, dev, n, cudaMemcpyDeviceToHost));
                    double dt = now_us() - t0;
                    if (r) t.push_back(dt);  // the first one warms up
                }
                char name[64];
                if (n >= (1u << 20))
                    snprintf(name, sizeof name, "bw_%s_%s_%zuMiB", dir ? "d2h" : "h2d", kind, n >> 20);
                else
                    snprintf(name, sizeof name, "bw_%s_%s_%zuKiB", dir ? "d2h" : "h2d", kind, n >> 10);
                bench(name, n / median(t) / 1e3, "GB/s");
            }
        }
    }
    CHECK(cudaFreeHost(pinned));
    CHECK(cudaFree(dev));
    printf("PASS\n");
    return 0;
}
