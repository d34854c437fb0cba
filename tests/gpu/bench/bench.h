// SPDX-License-Identifier: Apache-2.0 OR MIT
// Helpers for the vcuda GPU benchmarks. Every measurement is printed as one line
//   BENCH <name> <value> <unit>
// which tests/gpu/run.sh treats as timing (it may differ between runs) and compares between
// the native run and the vcuda run. Everything else a benchmark prints must be identical.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(call)                                                                          \
    do {                                                                                     \
        cudaError_t e_ = (call);                                                             \
        if (e_ != cudaSuccess) {                                                             \
            printf("FAIL: %s:%d: %s -> %s (%d)\n", __FILE__, __LINE__, #call,                \
                   cudaGetErrorName(e_), (int)e_);                                           \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)

static inline double now_us() {
    using namespace std::chrono;
    return duration<double, std::micro>(steady_clock::now().time_since_epoch()).count();
}

static inline double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n == 0 ? 0.0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

static inline void bench(const char *name, double value, const char *unit) {
    printf("BENCH %s %.6g %s\n", name, value, unit);
    fflush(stdout);
}

// `--quick` anywhere on the command line: smaller problem sizes (CPU executor runs).
static inline bool quick(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (std::string(argv[i]) == "--quick") return true;
    return false;
}
