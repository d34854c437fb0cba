// SPDX-License-Identifier: Apache-2.0 OR MIT
// Reductions: warp shuffles, shared-memory atomics, 32- and 64-bit global atomics,
// atomicCAS loops, vote functions.
#include <vector>
#include "common.h"

__device__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
    return v;
}

__global__ void reduce_shfl(const float *x, float *out, int n) {
    __shared__ float partial[32];
    float v = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) v += x[i];
    v = warp_sum(v);
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < blockDim.x / 32 ? partial[lane] : 0;
        v = warp_sum(v);
        if (lane == 0) atomicAdd(out, v);
    }
}

__global__ void count_atomics(const int *x, int n, unsigned long long *sum64, int *maxv, unsigned *shared_total) {
    __shared__ unsigned block_count;
    if (threadIdx.x == 0) block_count = 0;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(sum64, (unsigned long long)x[i] << 20);
        atomicMax(maxv, x[i]);
        atomicAdd(&block_count, 1u);
    }
    __syncthreads();
    if (threadIdx.x == 0) atomicAdd(shared_total, block_count);
}

__device__ double atomic_add_cas(double *addr, double v) {
    unsigned long long *p = (unsigned long long *)addr, old = *p, assumed;
    do {
        assumed = old;
        old = atomicCAS(p, assumed, __double_as_longlong(v + __longlong_as_double(assumed)));
    } while (assumed != old);
    return __longlong_as_double(old);
}

__global__ void cas_sum(const int *x, int n, double *out, unsigned *ballots) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomic_add_cas(out, (double)x[i]);
    unsigned b = __ballot_sync(0xffffffff, i < n && (x[i] & 1));
    if (threadIdx.x % 32 == 0 && i < n) atomicAdd(ballots, __popc(b));
    if (__all_sync(0xffffffff, i >= n) && threadIdx.x % 32 == 0) atomicAdd(ballots + 1, 1u);
}

int main() {
    const int n = 100003;
    std::vector<float> xf(n);
    std::vector<int> xi(n);
    double want = 0;
    long long want64 = 0;
    unsigned odd = 0;
    int mx = -1;
    for (int i = 0; i < n; i++) {
        xf[i] = (float)(i % 10);
        xi[i] = (i * 37) % 1001;
        want += xf[i];
        want64 += (long long)xi[i] << 20;
        odd += xi[i] & 1;
        mx = xi[i] > mx ? xi[i] : mx;
    }
    float *dxf, *dout;
    int *dxi, *dmax;
    unsigned long long *d64;
    unsigned *dtot, *dballot;
    double *dsum;
    CHECK(cudaMalloc(&dxf, n * 4));
    CHECK(cudaMalloc(&dxi, n * 4));
    CHECK(cudaMalloc(&dout, 4));
    CHECK(cudaMalloc(&d64, 8));
    CHECK(cudaMalloc(&dmax, 4));
    CHECK(cudaMalloc(&dtot, 4));
    CHECK(cudaMalloc(&dsum, 8));
    CHECK(cudaMalloc(&dballot, 8));
    CHECK(cudaMemcpy(dxf, xf.data(), n * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dxi, xi.data(), n * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemset(dout, 0, 4));
    CHECK(cudaMemset(d64, 0, 8));
    CHECK(cudaMemset(dmax, 0xff, 4));
    CHECK(cudaMemset(dtot, 0, 4));
    CHECK(cudaMemset(dsum, 0, 8));
    CHECK(cudaMemset(dballot, 0, 8));
    reduce_shfl<<<40, 256>>>(dxf, dout, n);
    count_atomics<<<(n + 255) / 256, 256>>>(dxi, n, d64, dmax, dtot);
    cas_sum<<<(n + 127) / 128, 128>>>(dxi, n, dsum, dballot);
    float got;
    unsigned long long got64;
    int gotmax;
    unsigned gottot, gotballot[2];
    double gotsum;
    CHECK(cudaMemcpy(&got, dout, 4, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&got64, d64, 8, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&gotmax, dmax, 4, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&gottot, dtot, 4, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&gotsum, dsum, 8, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(gotballot, dballot, 8, cudaMemcpyDeviceToHost));
    printf("shfl sum %.1f (want %.1f), sum64 %llu, max %d, count %u, cas %.1f, odd %u\n", got, want, got64, gotmax, gottot, gotsum, gotballot[0]);
    EXPECT(got == (float)want);
    EXPECT(got64 == (unsigned long long)want64);
    EXPECT(gotmax == mx);
    EXPECT(gottot == (unsigned)n);
    long long wsum = 0;
    for (int v : xi) wsum += v;
    EXPECT(gotsum == (double)wsum);
    EXPECT(gotballot[0] == odd);
    EXPECT(gotballot[1] > 0);
    return finish();
}
