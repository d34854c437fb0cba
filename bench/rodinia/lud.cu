// SPDX-License-Identifier: Apache-2.0 OR MIT
// LU decomposition by 16 x 16 tiles (see lud.h): a diagonal kernel (one block), a perimeter
// kernel (a block per tile right of and below the diagonal one) and an internal kernel (a
// block per trailing tile, a tile product in shared memory) for each diagonal tile.
#include "cuda.h"
#include "lud.h"

#define A(i, j) a[(long)(i) * N + (j)]

__global__ void diagonal(float* a, int k) {
    __shared__ float s[BS][BS];
    int tx = threadIdx.x, ty = threadIdx.y;
    s[ty][tx] = A(k + ty, k + tx);
    __syncthreads();
    for (int p = 0; p < BS - 1; p++) {
        if (ty > p && tx == p) s[ty][p] /= s[p][p];
        __syncthreads();
        if (ty > p && tx > p) s[ty][tx] -= s[ty][p] * s[p][tx];
        __syncthreads();
    }
    A(k + ty, k + tx) = s[ty][tx];
}

// Block b < count: the tile right of the diagonal (U part); b >= count: the tile below (L).
__global__ void perimeter(float* a, int k, int count) {
    __shared__ float d[BS][BS], t[BS][BS];
    int tx = threadIdx.x, ty = threadIdx.y, b = blockIdx.x;
    bool right = b < count;
    int off = k + BS + (right ? b : b - count) * BS;
    d[ty][tx] = A(k + ty, k + tx);
    t[ty][tx] = right ? A(k + ty, off + tx) : A(off + ty, k + tx);
    __syncthreads();
    if (right) {
        // Column tx of the tile, forward substitution with L (unit diagonal).
        if (ty == 0)
            for (int i = 1; i < BS; i++) {
                float v = t[i][tx];
                for (int p = 0; p < i; p++) v -= d[i][p] * t[p][tx];
                t[i][tx] = v;
            }
    } else {
        // Row ty of the tile, against U.
        if (tx == 0)
            for (int p = 0; p < BS; p++) {
                float v = t[ty][p];
                for (int q = 0; q < p; q++) v -= t[ty][q] * d[q][p];
                t[ty][p] = v / d[p][p];
            }
    }
    __syncthreads();
    if (right)
        A(k + ty, off + tx) = t[ty][tx];
    else
        A(off + ty, k + tx) = t[ty][tx];
}

__global__ void internal(float* a, int k) {
    __shared__ float l[BS][BS], u[BS][BS];
    int tx = threadIdx.x, ty = threadIdx.y;
    int i = k + BS + blockIdx.y * BS + ty, j = k + BS + blockIdx.x * BS + tx;
    l[ty][tx] = A(i, k + tx);
    u[ty][tx] = A(k + ty, j);
    __syncthreads();
    float s = 0;
    for (int p = 0; p < BS; p++) s += l[ty][p] * u[p][tx];
    A(i, j) -= s;
}

int main() {
    float* h = make_matrix();
    float* a = to_device(h, (size_t)N * N);
    dim3 block(BS, BS);
    double t = now();
    for (int k = 0; k < N; k += BS) {
        diagonal<<<1, block>>>(a, k);
        int rest = (N - k - BS) / BS;
        if (rest == 0) break;
        perimeter<<<2 * rest, block>>>(a, k, rest);
        internal<<<dim3(rest, rest), block>>>(a, k);
    }
    CHECK(cudaDeviceSynchronize());
    t = now() - t;
    CHECK(cudaMemcpy(h, a, sizeof(float) * N * N, cudaMemcpyDeviceToHost));
    report("lud", t, checksum(h));
    return 0;
}
