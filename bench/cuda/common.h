// SPDX-License-Identifier: Apache-2.0 OR MIT
// Shared by the CPU executor's real-path benchmark programs (bench/cpu-executor.sh): times
// LAUNCHES launches of a kernel with CUDA events after one warm-up launch, and prints
// "BENCH <name> <seconds per launch>".
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(x)                                                                       \
    do {                                                                               \
        cudaError_t e_ = (x);                                                          \
        if (e_ != cudaSuccess) {                                                       \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

static const int LAUNCHES = 3;

template <typename F>
static void bench(const char* name, F launch) {
    launch();
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    cudaEvent_t start, end;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&end));
    CHECK(cudaEventRecord(start));
    for (int i = 0; i < LAUNCHES; i++) launch();
    CHECK(cudaEventRecord(end));
    CHECK(cudaEventSynchronize(end));
    CHECK(cudaGetLastError());
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, end));
    printf("BENCH %s %.6f\n", name, ms / 1000.0 / LAUNCHES);
}
