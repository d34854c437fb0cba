// SPDX-License-Identifier: Apache-2.0 OR MIT
// A translation unit of tests/cuda/rdc.cu: statistics in device variables, and a kernel.
#include "rdc.h"

__device__ unsigned g_count;
__device__ float g_max;

static __device__ int unit_tag() { return 3; }

__device__ void record(float x) {
    atomicAdd(&g_count, 1u);
    // Floats compare as signed integers when non-negative; shift to handle negatives.
    int bits = __float_as_int(x);
    int key = bits >= 0 ? bits : bits ^ 0x7fffffff;
    int *slot = (int *)&g_max;
    int old = *slot;
    while (true) {
        int okey = old >= 0 ? old : old ^ 0x7fffffff;
        if (okey >= key) break;
        int prev = atomicCAS(slot, old, bits);
        if (prev == old) break;
        old = prev;
    }
}

__device__ int stats_unit_tag() { return unit_tag() + clamp_add(0, 0); }

__global__ void reset_stats() {
    g_count = 0;
    g_max = -1e30f;
}
