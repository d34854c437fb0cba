// SPDX-License-Identifier: Apache-2.0 OR MIT
// Shared by the kernel-module tests in tests/vm/cuda/: the /dev/vcuda ioctl ABI, failure
// counting, and a kernel that runs for a chosen time.
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>

// The ioctl ABI (protocol/src/ioctl.rs, guest-driver/abi.rs).
struct vcuda_seg {
    uint64_t addr, len;
    uint32_t dir, flags;
};
struct vcuda_submit {
    uint64_t ctrl_addr;
    uint32_t ctrl_len, reply_cap;
    uint64_t reply_addr, segs_addr;
    uint32_t n_segs, reply_len;
    uint64_t flags;
};
struct vcuda_config {
    uint32_t magic, protocol_version, num_request_queues, max_chain_descriptors, max_ctrl_len,
        features;
    uint64_t max_data_len;
};
struct vcuda_info {
    vcuda_config config;
    uint64_t session;
    uint32_t max_segs, abi_version;
};
struct vcuda_share {
    uint64_t addr, len, handle;
};
static_assert(sizeof(vcuda_share) == 24, "vcuda_share");
static_assert(sizeof(vcuda_seg) == 24, "vcuda_seg");
static_assert(sizeof(vcuda_submit) == 48, "vcuda_submit");
static_assert(sizeof(vcuda_info) == 48, "vcuda_info");
#define VCUDA_IOC_SUBMIT _IOWR('V', 1, struct vcuda_submit)
#define VCUDA_IOC_INFO _IOR('V', 2, struct vcuda_info)
#define VCUDA_IOC_SHARE _IOWR('V', 3, struct vcuda_share)
#define VCUDA_IOC_UNSHARE _IOW('V', 4, uint64_t)
enum { SEG_OUT = 1, SEG_IN = 2 };

// Failed checks, reported on stderr; a test exits non-zero if there were any.
static int failures;
#define CHECK(cond, ...)                                                                     \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                             \
            fprintf(stderr, __VA_ARGS__);                                                    \
            fputc('\n', stderr);                                                             \
            failures++;                                                                      \
        }                                                                                    \
    } while (0)
#define CUDA_OK(x)                                                                           \
    do {                                                                                     \
        cudaError_t e_ = (x);                                                                \
        CHECK(e_ == cudaSuccess, "%s: %s", #x, cudaGetErrorString(e_));                      \
    } while (0)

// Busy for `n` iterations (see spin_per_second).
__global__ void spin(unsigned long long n, float *out) {
    float x = threadIdx.x;
    for (unsigned long long i = 0; i < n; i++) x = x * 0.999f + 1.0f;
    if (threadIdx.x == 0) out[0] = x;
}

static double now() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

// Iterations of `spin` a second on this backend, timed over at least 0.2 s.
static unsigned long long spin_per_second() {
    float *d = nullptr;
    CUDA_OK(cudaMalloc(&d, 4));
    unsigned long long n = 20000;
    double t = 0;
    for (;;) {
        double t0 = now();
        spin<<<1, 32>>>(n, d);
        CUDA_OK(cudaDeviceSynchronize());
        t = now() - t0;
        if (t > 0.2 || n > (1ull << 40)) break;
        n *= 4;
    }
    cudaFree(d);
    return (unsigned long long)(n / t);
}

// A counter of /proc/vmstat, or -1.
static long vmstat(const char *key) {
    FILE *f = fopen("/proc/vmstat", "r");
    if (!f) return -1;
    char k[128];
    long v, r = -1;
    while (fscanf(f, "%127s %ld", k, &v) == 2)
        if (strcmp(k, key) == 0) r = v;
    fclose(f);
    return r;
}
