// SPDX-License-Identifier: Apache-2.0 OR MIT
// Host<->device bandwidth sweep: cudaMemcpy of 4 KiB .. 256 MiB, pageable and pinned host
// memory, both directions. Median of several copies per size, reported in GB/s (1e9 B/s).
// The same run measures a plain host memcpy of each size, and prints each copy's ratio to
// it (`ratio_bw_*`: 1.0 = as fast as copying the bytes once in host memory).
#include <cstring>
#include "bench.h"

// `<a><b>_<n>KiB` or `..MiB`.
static void size_label(char *out, size_t len, const char *a, const char *b, size_t n) {
    if (n >= (1u << 20))
        snprintf(out, len, "%s%s_%zuMiB", a, b, n >> 20);
    else
        snprintf(out, len, "%s%s_%zuKiB", a, b, n >> 10);
}

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

    // The floor: one plain copy of the bytes in host memory, between two warm buffers.
    std::vector<unsigned char> other(max, 1);
    void *(*volatile copy)(void *, const void *, size_t) = memcpy;
    std::vector<double> floor_gbs;
    for (size_t n = 4096; n <= max; n *= 4) {
        int reps = (int)std::min<size_t>(100, std::max<size_t>(5, (64u << 20) / n));
        std::vector<double> t;
        for (int r = 0; r < reps + 1; r++) {
            double t0 = now_us();
            copy(other.data(), pageable.data(), n);
            double dt = now_us() - t0;
            if (r) t.push_back(dt);
        }
        floor_gbs.push_back(n / median(t) / 1e3);
        char name[64];
        size_label(name, sizeof name, "bw_memcpy", "", n);
        bench(name, floor_gbs.back(), "GB/s");
    }

    for (int k = 0; k < 2; k++) {
        const char *kind = k ? "pinned" : "pageable";
        unsigned char *h = k ? pinned : pageable.data();
        for (int dir = 0; dir < 2; dir++) {
            int step = 0;
            for (size_t n = 4096; n <= max; n *= 4, step++) {
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
                char what[32], name[64], ratio[80];
                snprintf(what, sizeof what, "bw_%s_%s", dir ? "d2h" : "h2d", kind);
                size_label(name, sizeof name, what, "", n);
                double gbs = n / median(t) / 1e3;
                bench(name, gbs, "GB/s");
                size_label(ratio, sizeof ratio, "ratio_", what, n);
                bench(ratio, gbs / floor_gbs[step], "x_memcpy");
            }
        }
    }
    CHECK(cudaFreeHost(pinned));
    CHECK(cudaFree(dev));
    printf("PASS\n");
    return 0;
}
