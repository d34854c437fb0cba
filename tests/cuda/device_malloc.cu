// SPDX-License-Identifier: Apache-2.0 OR MIT
// Device-side malloc, free, new and delete: the heap size limit (cudaLimitMallocHeapSize,
// 8 MiB by default, set before the first use), allocations that outlive the kernel that
// made them and are freed by a later one, new[]/delete[] of objects with constructors, a
// request larger than the heap (NULL), and the heap's memory reused after frees.
#include "common.h"

__global__ void make(int **ptrs, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int len = i % 7 + 1;
    int *p = (int *)malloc(len * sizeof(int));
    if (p)
        for (int k = 0; k < len; k++) p[k] = i * 10 + k;
    ptrs[i] = p;
}

__global__ void sum_and_free(int **ptrs, long long *sums, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int *p = ptrs[i];
    long long s = -1;
    if (p) {
        s = 0;
        for (int k = 0; k < i % 7 + 1; k++) s += p[k];
        free(p);
    }
    sums[i] = s;
}

struct Point {
    int x, y;
    __device__ Point() : x(3), y(4) {}
    __device__ int dot() const { return x * x + y * y; }
};

__global__ void objects(int *out, unsigned long long *too_big) {
    Point *pts = new Point[5];
    int s = 0;
    for (int k = 0; k < 5; k++) s += pts[k].dot();
    delete[] pts;
    out[threadIdx.x] = s;
    // More than the whole heap: NULL.
    void *big = malloc(64u << 20);
    too_big[threadIdx.x] = (unsigned long long)big;
    free(big);  // free(NULL) does nothing
}

int main() {
    size_t heap = 0;
    CHECK(cudaDeviceGetLimit(&heap, cudaLimitMallocHeapSize));
    EXPECT(heap == 8u << 20);
    CHECK(cudaDeviceSetLimit(cudaLimitMallocHeapSize, 16u << 20));
    CHECK(cudaDeviceGetLimit(&heap, cudaLimitMallocHeapSize));
    EXPECT(heap == 16u << 20);

    const int n = 256;
    int **ptrs;
    long long *sums;
    CHECK(cudaMalloc(&ptrs, n * sizeof(int *)));
    CHECK(cudaMalloc(&sums, n * sizeof(long long)));
    // Twice: the second round reuses what the first freed.
    for (int round = 0; round < 2; round++) {
        make<<<n / 64, 64>>>(ptrs, n);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        sum_and_free<<<n / 64, 64>>>(ptrs, sums, n);
        CHECK(cudaGetLastError());
        long long h[n];
        CHECK(cudaMemcpy(h, sums, sizeof h, cudaMemcpyDeviceToHost));
        for (int i = 0; i < n; i++) {
            int len = i % 7 + 1;
            long long want = 0;
            for (int k = 0; k < len; k++) want += i * 10 + k;
            if (h[i] != want) printf("round %d thread %d: %lld, want %lld\n", round, i, h[i], want);
            EXPECT(h[i] == want);
        }
    }

    int *out;
    unsigned long long *big;
    CHECK(cudaMalloc(&out, 32 * sizeof(int)));
    CHECK(cudaMalloc(&big, 32 * sizeof(unsigned long long)));
    objects<<<1, 32>>>(out, big);
    CHECK(cudaGetLastError());
    int h[32];
    unsigned long long hb[32];
    CHECK(cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(hb, big, sizeof hb, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 32; i++) EXPECT(h[i] == 5 * 25 && hb[i] == 0);

    CHECK(cudaFree(ptrs));
    CHECK(cudaFree(sums));
    CHECK(cudaFree(out));
    CHECK(cudaFree(big));
    return finish();
}
