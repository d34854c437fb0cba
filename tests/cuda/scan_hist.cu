// SPDX-License-Identifier: Apache-2.0 OR MIT
// Block-level inclusive scan (shared memory, Hillis-Steele) and a histogram with
// shared-memory atomics.
#include <vector>
#include "common.h"

__global__ void scan_block(const int *in, int *out, int *block_sums, int n) {
    extern __shared__ int buf[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    buf[threadIdx.x] = i < n ? in[i] : 0;
    __syncthreads();
    for (int off = 1; off < blockDim.x; off <<= 1) {
        int v = threadIdx.x >= off ? buf[threadIdx.x - off] : 0;
        __syncthreads();
        buf[threadIdx.x] += v;
        __syncthreads();
    }
    if (i < n) out[i] = buf[threadIdx.x];
    if (threadIdx.x == blockDim.x - 1) block_sums[blockIdx.x] = buf[threadIdx.x];
}

__global__ void add_offsets(int *out, const int *block_sums, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (blockIdx.x == 0 || i >= n) return;
    int off = 0;
    for (int b = 0; b < blockIdx.x; b++) off += block_sums[b];
    out[i] += off;
}

__global__ void histogram(const unsigned char *data, int n, unsigned *hist) {
    __shared__ unsigned local[256];
    for (int b = threadIdx.x; b < 256; b += blockDim.x) local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&local[data[i]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += blockDim.x) atomicAdd(&hist[b], local[b]);
}

int main() {
    const int n = 10000, B = 256, nb = (n + B - 1) / B;
    std::vector<int> in(n), out(n);
    for (int i = 0; i < n; i++) in[i] = (i * 31) % 7 - 3;
    int *din, *dout, *dsums;
    CHECK(cudaMalloc(&din, n * 4));
    CHECK(cudaMalloc(&dout, n * 4));
    CHECK(cudaMalloc(&dsums, nb * 4));
    CHECK(cudaMemcpy(din, in.data(), n * 4, cudaMemcpyHostToDevice));
    scan_block<<<nb, B, B * sizeof(int)>>>(din, dout, dsums, n);
    add_offsets<<<nb, B>>>(dout, dsums, n);
    CHECK(cudaMemcpy(out.data(), dout, n * 4, cudaMemcpyDeviceToHost));
    int acc = 0, bad = 0;
    for (int i = 0; i < n; i++) {
        acc += in[i];
        bad += out[i] != acc;
    }
    EXPECT(bad == 0);

    const int m = 1 << 20;
    std::vector<unsigned char> data(m);
    std::vector<unsigned> want(256, 0), got(256);
    for (int i = 0; i < m; i++) {
        data[i] = (unsigned char)((i * 2654435761u) >> 24);
        want[data[i]]++;
    }
    unsigned char *dd;
    unsigned *dh;
    CHECK(cudaMalloc(&dd, m));
    CHECK(cudaMalloc(&dh, 256 * 4));
    CHECK(cudaMemcpy(dd, data.data(), m, cudaMemcpyHostToDevice));
    CHECK(cudaMemset(dh, 0, 256 * 4));
    histogram<<<32, 256>>>(dd, m, dh);
    CHECK(cudaMemcpy(got.data(), dh, 256 * 4, cudaMemcpyDeviceToHost));
    EXPECT(got == want);
    return finish();
}
