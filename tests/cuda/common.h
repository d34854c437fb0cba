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

static int g_failures = 0;

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
