// SPDX-License-Identifier: Apache-2.0 OR MIT
// vcuda-vm-test: executor=chain
// vcuda-vm-test: libs=cublas
// vcuda-vm-test: expect=migrate-cuda: PASS
// vcuda-vm-test: expect_err=(move 2)
// vcuda-vm-test: vm=--migrate-on migrate-at:
// vcuda-vm-test: args=24 150 3000
// Live migration on the CUDA executor (issue 39): the guest moves twice while a session of
// `--executor cuda` (a backend started with --cuda-migratable) holds device memory with
// holes between allocations, a module variable whose address it asked for, a non-blocking
// stream, events, an instantiated graph and a cuBLAS handle, and works on them step by step.
// Every result is checked against the host's. The VM test runs the CUDA executor over
// vcuda's own libcuda.so.1 and a CPU backend (the driver-API chain): the migration moves
// the CUDA executor's session, whose driver is vcuda's.
//
//   migrate_cuda [STEPS [SLEEP_MS [HOLD_MS]]]
//
// With HOLD_MS it prints "migrate-at: PHASE" and stays HOLD_MS there, for
// `vcuda vm run --migrate-on migrate-at:` to move the guest: before the first launch and
// while kernels run back to back.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <vector>

#define CK(x)                                                                                 \
    do {                                                                                      \
        cudaError_t e_ = (x);                                                                 \
        if (e_ != cudaSuccess) {                                                              \
            printf("%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));        \
            return 1;                                                                         \
        }                                                                                     \
    } while (0)
#define CKB(x)                                                                                \
    do {                                                                                      \
        if ((x) != CUBLAS_STATUS_SUCCESS) {                                                   \
            printf("%s:%d: %s failed\n", __FILE__, __LINE__, #x);                             \
            return 1;                                                                         \
        }                                                                                     \
    } while (0)

__device__ unsigned counter = 7;

__global__ void step(unsigned *a, int n, unsigned k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = a[i] * 2654435761u + k + counter;
}

__global__ void tick() { counter += 1; }

__global__ void spin(unsigned long long iters, unsigned *out) {
    unsigned x = 1;
    for (unsigned long long i = 0; i < iters; i++) x = x * 1664525u + 1013904223u;
    *out = x;
}

static void host_step(std::vector<unsigned> &a, unsigned k, unsigned c) {
    for (auto &v : a) v = v * 2654435761u + k + c;
}

static double now_ms() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
    int steps = argc > 1 ? atoi(argv[1]) : 24;
    int sleep_ms = argc > 2 ? atoi(argv[2]) : 150;
    int hold_ms = argc > 3 ? atoi(argv[3]) : 0;
    const int n = 4096, nx = 1024;

    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(cudaEventRecord(e0, s));

    // Allocations with holes between them (the freed ones), some sharing 2 MiB pages, one
    // spanning several.
    unsigned *a, *hole1, *spun, *hole2, *big;
    CK(cudaMalloc(&hole1, 1000));
    CK(cudaMalloc(&a, n * sizeof(unsigned)));
    CK(cudaMalloc(&hole2, 3 << 20));
    CK(cudaMalloc(&spun, sizeof(unsigned)));
    const size_t bigw = (5 << 20) / sizeof(unsigned);
    CK(cudaMalloc(&big, bigw * sizeof(unsigned)));
    CK(cudaFree(hole1));
    CK(cudaFree(hole2));
    std::vector<unsigned> ha(n), hbig(bigw);
    for (int i = 0; i < n; i++) ha[i] = i * 3;
    for (size_t i = 0; i < bigw; i++) hbig[i] = (unsigned)(i * 2246822519u);
    CK(cudaMemcpy(a, ha.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(big, hbig.data(), bigw * sizeof(unsigned), cudaMemcpyHostToDevice));

    std::vector<float> hx(nx), hy(nx, 0.0f);
    for (int i = 0; i < nx; i++) hx[i] = (float)i;
    float *x, *y;
    CK(cudaMalloc(&x, nx * sizeof(float)));
    CK(cudaMalloc(&y, nx * sizeof(float)));
    CK(cudaMemcpy(x, hx.data(), nx * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemset(y, 0, nx * sizeof(float)));
    cublasHandle_t blas;
    CKB(cublasCreate(&blas));
    CKB(cublasSetStream(blas, s));

    // The module variable, read through its symbol before the moves (its address known).
    unsigned c0 = 0;
    CK(cudaMemcpyFromSymbol(&c0, counter, sizeof(c0)));
    if (c0 != 7) {
        printf("migrate-cuda: counter starts at %u\n", c0);
        return 1;
    }

    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    tick<<<1, 1, 0, s>>>();
    step<<<(n + 255) / 256, 256, 0, s>>>(a, n, 1000);
    CK(cudaStreamEndCapture(s, &graph));
    CK(cudaGraphInstantiate(&exec, graph, 0));

    if (hold_ms) {
        printf("migrate-at: before-first-launch\n");
        fflush(stdout);
        usleep(hold_ms * 1000);
    }
    unsigned hcounter = 7;
    const float alpha = 0.5f;
    for (int k = 0; k < steps; k++) {
        step<<<(n + 255) / 256, 256, 0, s>>>(a, n, k);
        host_step(ha, k, hcounter);
        tick<<<1, 1, 0, s>>>();
        hcounter++;
        CK(cudaGraphLaunch(exec, s));
        hcounter++;
        host_step(ha, 1000, hcounter);
        CKB(cublasSaxpy(blas, nx, &alpha, x, 1, y, 1));
        for (int i = 0; i < nx; i++) hy[i] += alpha * hx[i];
        if (hold_ms && k == steps / 2) {
            printf("migrate-at: kernels\n");
            fflush(stdout);
            for (double t0 = now_ms(); now_ms() - t0 < hold_ms;) {
                spin<<<1, 1, 0, s>>>(2000000ull, spun);
                CK(cudaStreamSynchronize(s));
            }
        }
        std::vector<unsigned> got(n);
        CK(cudaMemcpyAsync(got.data(), a, n * sizeof(unsigned), cudaMemcpyDeviceToHost, s));
        CK(cudaStreamSynchronize(s));
        int wrong = 0;
        for (int i = 0; i < n; i++) wrong += got[i] != ha[i];
        if (wrong) {
            printf("migrate-cuda: step %d: %d words differ\n", k, wrong);
            return 1;
        }
        if (k % 8 == 0) printf("migrate-cuda: step %d\n", k);
        fflush(stdout);
        usleep(sleep_ms * 1000);
    }
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    float ms = -1;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    unsigned c1 = 0;
    CK(cudaMemcpyFromSymbol(&c1, counter, sizeof(c1)));
    std::vector<float> gy(nx);
    CK(cudaMemcpy(gy.data(), y, nx * sizeof(float), cudaMemcpyDeviceToHost));
    std::vector<unsigned> gbig(bigw);
    CK(cudaMemcpy(gbig.data(), big, bigw * sizeof(unsigned), cudaMemcpyDeviceToHost));
    int wrong = 0;
    for (int i = 0; i < nx; i++) wrong += gy[i] != hy[i];
    for (size_t i = 0; i < bigw; i++) wrong += gbig[i] != hbig[i];
    if (c1 != hcounter || wrong || ms < 0) {
        printf("migrate-cuda: counter %u (want %u), %d values differ, %.1f ms\n", c1, hcounter,
               wrong, ms);
        return 1;
    }
    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(graph));
    CKB(cublasDestroy(blas));
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    CK(cudaStreamDestroy(s));
    CK(cudaFree(a));
    CK(cudaFree(spun));
    CK(cudaFree(big));
    CK(cudaFree(x));
    CK(cudaFree(y));
    printf("migrate-cuda: PASS (%d steps, counter %u)\n", steps, c1);
    return 0;
}
