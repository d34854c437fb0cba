// SPDX-License-Identifier: Apache-2.0 OR MIT
// Shared by the test programs that call the driver API: CU(call) fails the program (exit 1)
// with the call and its CUresult unless it returns CUDA_SUCCESS.
#pragma once
#include <cuda.h>
#include <cstdio>
#include <cstdlib>

#define CU(call)                                                                             \
    do {                                                                                     \
        CUresult r_ = (call);                                                                \
        if (r_ != CUDA_SUCCESS) {                                                            \
            printf("FAIL: %s:%d: %s -> %d\n", __FILE__, __LINE__, #call, (int)r_);           \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)
