// SPDX-License-Identifier: Apache-2.0 OR MIT
// Streamcluster's local search (see streamcluster.h): per candidate, a kernel computes each
// point's saving and a block's sum of them (shared memory, then one atomic per block); the
// host reads the total and, if the candidate opens, a second kernel switches the points. The
// coordinates are on the device dimension-major (`t[d * POINTS + i]`), as Rodinia's CUDA
// version lays them out, so that a warp's threads read consecutive words.
#include "cuda.h"
#include "streamcluster.h"

// The squared distance between points a and b in the dimension-major layout.
__device__ float dist_t(const float* t, long a, long b) {
    float s = 0;
    for (int d = 0; d < DIM; d++) {
        float x = t[(long)d * POINTS + a] - t[(long)d * POINTS + b];
        s += x * x;
    }
    return s;
}

__global__ void first(const float* p, float* cost, int* assign) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= POINTS) return;
    assign[i] = 0;
    cost[i] = dist_t(p, i, 0);
}

__global__ void gain(const float* p, const float* cost, float* save, double* total, long x) {
    __shared__ double s[256];
    int t = threadIdx.x, i = blockIdx.x * 256 + t;
    float v = 0;
    if (i < POINTS) {
        float d = dist_t(p, i, x);
        v = d < cost[i] ? cost[i] - d : 0.0f;
        save[i] = v;
    }
    s[t] = v;
    __syncthreads();
    for (int w = 128; w > 0; w >>= 1) {
        if (t < w) s[t] += s[t + w];
        __syncthreads();
    }
    if (t == 0) atomicAdd(total, s[0]);
}

__global__ void open(float* cost, int* assign, const float* save, long x) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= POINTS || save[i] <= 0) return;
    cost[i] -= save[i];
    assign[i] = (int)x;
}

int main() {
    float* h = make_points();
    float* ht = (float*)malloc(sizeof(float) * POINTS * DIM);
    for (long i = 0; i < POINTS; i++)
        for (int d = 0; d < DIM; d++) ht[(long)d * POINTS + i] = h[i * DIM + d];
    float* p = to_device(ht, (size_t)POINTS * DIM);
    float *cost, *save;
    int* assign;
    double* total;
    CHECK(cudaMalloc(&cost, sizeof(float) * POINTS));
    CHECK(cudaMalloc(&save, sizeof(float) * POINTS));
    CHECK(cudaMalloc(&assign, sizeof(int) * POINTS));
    CHECK(cudaMalloc(&total, sizeof(double)));
    int blocks = (POINTS + 255) / 256, opened = 1;
    double t = now();
    first<<<blocks, 256>>>(p, cost, assign);
    for (int k = 1; k < CANDIDATES; k++) {
        long x = SC_CANDIDATE(k);
        CHECK(cudaMemset(total, 0, sizeof(double)));
        gain<<<blocks, 256>>>(p, cost, save, total, x);
        double sum;
        CHECK(cudaMemcpy(&sum, total, sizeof sum, cudaMemcpyDeviceToHost));
        if (sum > OPEN_COST) {
            opened++;
            open<<<blocks, 256>>>(cost, assign, save, x);
        }
    }
    CHECK(cudaDeviceSynchronize());
    t = now() - t;
    float* hc = (float*)malloc(sizeof(float) * POINTS);
    int* ha = (int*)malloc(sizeof(int) * POINTS);
    CHECK(cudaMemcpy(hc, cost, sizeof(float) * POINTS, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(ha, assign, sizeof(int) * POINTS, cudaMemcpyDeviceToHost));
    report("streamcluster", t, checksum(opened, hc, ha));
    return 0;
}
