// SPDX-License-Identifier: Apache-2.0 OR MIT
// Pathfinder: the cheapest path from the top row of a grid of costs to the bottom, moving one
// row down and at most one column aside per step (dynamic programming, one row at a time).
#include "cuda.h"
#include "pathfinder.h"

__global__ void step(const int* wall, const int* src, int* dst, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    int m = src[c];
    if (c > 0) m = min(m, src[c - 1]);
    if (c < cols - 1) m = min(m, src[c + 1]);
    dst[c] = wall[c] + m;
}

int main() {
    int* wall = make_wall();
    int* d_wall = to_device(wall, (size_t)ROWS * COLS);
    int *src, *dst;
    CHECK(cudaMalloc(&src, COLS * sizeof(int)));
    CHECK(cudaMalloc(&dst, COLS * sizeof(int)));
    CHECK(cudaMemcpy(src, wall, COLS * sizeof(int), cudaMemcpyHostToDevice));
    double t = now();
    for (int r = 1; r < ROWS; r++) {
        step<<<(COLS + 255) / 256, 256>>>(d_wall + (size_t)r * COLS, src, dst, COLS);
        int* s = src;
        src = dst;
        dst = s;
    }
    CHECK(cudaDeviceSynchronize());
    t = now() - t;
    int* last = (int*)malloc(COLS * sizeof(int));
    CHECK(cudaMemcpy(last, src, COLS * sizeof(int), cudaMemcpyDeviceToHost));
    report("pathfinder", t, checksum(last));
    return 0;
}
