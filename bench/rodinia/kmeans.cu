// SPDX-License-Identifier: Apache-2.0 OR MIT
// k-means: the assignment of points to their nearest centre on the device, the centres'
// update on the host (as Rodinia's CUDA version), ITERATIONS times. The points are on the
// device feature-major (`t[f * POINTS + i]`), as Rodinia lays them out, so that a warp's
// threads read consecutive words.
#include "cuda.h"
#include "kmeans.h"

__global__ void assign(const float* t, const float* centres, int* member) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= POINTS) return;
    int best = 0;
    float bd = 3.4e38f;
    for (int c = 0; c < K; c++) {
        float d = 0;
        for (int f = 0; f < FEATURES; f++) {
            float x = t[(long)f * POINTS + i] - centres[c * FEATURES + f];
            d += x * x;
        }
        if (d < bd) {
            bd = d;
            best = c;
        }
    }
    member[i] = best;
}

int main() {
    float* p = make_points();
    float centres[K * FEATURES];
    first_centres(p, centres);
    int* member = (int*)malloc(sizeof(int) * POINTS);
    float* pt = (float*)malloc(sizeof(float) * POINTS * FEATURES);
    for (long i = 0; i < POINTS; i++)
        for (int f = 0; f < FEATURES; f++) pt[(long)f * POINTS + i] = p[i * FEATURES + f];
    float* d_p = to_device(pt, (size_t)POINTS * FEATURES);
    float* d_c;
    int* d_member;
    CHECK(cudaMalloc(&d_c, sizeof centres));
    CHECK(cudaMalloc(&d_member, sizeof(int) * POINTS));
    double t = now();
    for (int it = 0; it < ITERATIONS; it++) {
        CHECK(cudaMemcpy(d_c, centres, sizeof centres, cudaMemcpyHostToDevice));
        assign<<<(POINTS + 255) / 256, 256>>>(d_p, d_c, d_member);
        CHECK(cudaMemcpy(member, d_member, sizeof(int) * POINTS, cudaMemcpyDeviceToHost));
        update_centres(p, member, centres);
    }
    t = now() - t;
    report("kmeans", t, checksum(member, centres));
    return 0;
}
