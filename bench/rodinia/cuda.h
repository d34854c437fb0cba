// SPDX-License-Identifier: Apache-2.0 OR MIT
// The CUDA versions' helpers: error checks and a wall-clock timer around the computation
// (its kernels, from the first launch to the last synchronization).
#pragma once
#include <chrono>
#include <cuda_runtime.h>
#include "common.h"

#define CHECK(x)                                                                          \
    do {                                                                                  \
        cudaError_t e_ = (x);                                                             \
        if (e_ != cudaSuccess) {                                                          \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));    \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

static inline double now(void) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

template <typename T>
static T* to_device(const T* h, size_t n) {
    T* d;
    CHECK(cudaMalloc(&d, n * sizeof(T)));
    CHECK(cudaMemcpy(d, h, n * sizeof(T), cudaMemcpyHostToDevice));
    return d;
}
