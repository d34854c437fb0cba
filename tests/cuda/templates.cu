// SPDX-License-Identifier: Apache-2.0 OR MIT
// Templated kernels and device functions, instantiated for several types.
#include "common.h"

template <typename T> struct Plus { __device__ T operator()(T a, T b) const { return a + b; } };
template <typename T> struct Max { __device__ T operator()(T a, T b) const { return a > b ? a : b; } };

template <typename T, typename Op, int BLOCK>
__global__ void block_reduce(const T *x, T *out, int n, T init) {
    __shared__ T s[BLOCK];
    T v = init;
    for (int i = threadIdx.x; i < n; i += BLOCK) v = Op()(v, x[i]);
    s[threadIdx.x] = v;
    __syncthreads();
    for (int w = BLOCK / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) s[threadIdx.x] = Op()(s[threadIdx.x], s[threadIdx.x + w]);
        __syncthreads();
    }
    if (threadIdx.x == 0) *out = s[0];
}

template <typename T> T run(const T *h, int n, bool max) {
    T *d, *o, r;
    CHECK(cudaMalloc(&d, n * sizeof(T)));
    CHECK(cudaMalloc(&o, sizeof(T)));
    CHECK(cudaMemcpy(d, h, n * sizeof(T), cudaMemcpyHostToDevice));
    if (max) block_reduce<T, Max<T>, 128><<<1, 128>>>(d, o, n, h[0]);
    else block_reduce<T, Plus<T>, 64><<<1, 64>>>(d, o, n, T(0));
    CHECK(cudaMemcpy(&r, o, sizeof(T), cudaMemcpyDeviceToHost));
    return r;
}

int main() {
    const int n = 777;
    int hi[n];
    double hd[n];
    long long hl[n];
    long long si = 0, sl = 0;
    double sd = 0, md = -1e300;
    for (int i = 0; i < n; i++) {
        hi[i] = i % 100 - 40;
        hd[i] = (i % 37) * 0.25;
        hl[i] = (long long)i << 33;
        si += hi[i];
        sd += hd[i];
        sl += hl[i];
        md = hd[i] > md ? hd[i] : md;
    }
    EXPECT(run(hi, n, false) == si);
    EXPECT(run(hd, n, false) == sd);
    EXPECT(run(hl, n, false) == sl);
    EXPECT(run(hd, n, true) == md);
    EXPECT(run(hi, n, true) == 59);
    return finish();
}
