// SPDX-License-Identifier: Apache-2.0 OR MIT
// Helpers shared by the vcuda end-to-end test programs. Each program checks its own
// results, prints "PASS" at the end and exits 0, or prints "FAIL: ..." and exits 1.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <cuda_runtime.h>
#include <dlfcn.h>

static int g_failures = 0;

// Whether this program runs on vcuda's CUDA runtime (libvcuda.so as libcudart), not on
// NVIDIA's static runtime linked into it (plain nvcc output, which reaches vcuda through
// its libcuda.so.1). Behaviour NVIDIA's runtime leaves undefined (it may crash) is checked
// only on vcuda's.
static inline bool vcuda_runtime() {
    Dl_info rt, self;
    if (!getenv("VCUDA_SOCKET") || !dladdr((void *)&cudaGetLastError, &rt) ||
        !dladdr((void *)&g_failures, &self))
        return false;
    return rt.dli_fbase != self.dli_fbase;
}

#define CHECK(call)                                                                          \
    do {                                                                                     \
        cudaError_t e_ = (call);                                                             \
        if (e_ != cudaSuccess) {                                                             \
            printf("FAIL: %s:%d: %s -> %s (%d)\n", __FILE__, __LINE__, #call,                \
                   cudaGetErrorName(e_), (int)e_);                                           \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)

// Expects a call to return a given error.
#define EXPECT_ERR(call, want)                                                               \
    do {                                                                                     \
        cudaError_t e_ = (call);                                                             \
        if (e_ != (want)) {                                                                  \
            printf("FAIL: %s:%d: %s -> %s (%d), expected %s\n", __FILE__, __LINE__, #call,   \
                   cudaGetErrorName(e_), (int)e_, cudaGetErrorName(want));                   \
            g_failures++;                                                                    \
        }                                                                                    \
    } while (0)

#define EXPECT(cond)                                                                         \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            printf("FAIL: %s:%d: %s\n", __FILE__, __LINE__, #cond);                          \
            g_failures++;                                                                    \
        }                                                                                    \
    } while (0)

static inline int finish() {
    if (g_failures) {
        printf("FAIL: %d check(s) failed\n", g_failures);
        return 1;
    }
    printf("PASS\n");
    return 0;
}

static inline bool close_enough(double a, double b, double rel = 1e-5) {
    return fabs(a - b) <= rel * fmax(1.0, fmax(fabs(a), fabs(b)));
}
