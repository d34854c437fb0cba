// SPDX-License-Identifier: Apache-2.0 OR MIT
// Asynchronous barriers in shared memory (PTX mbarrier, what cuda::barrier compiles to):
// arrive-then-wait over several phases with work between the arrival and the wait,
// arrive_drop (threads leaving the barrier, later phases complete without them), and
// init, arrive with a count, test_wait, try_wait.parity, pending_count and inval. Warps wait
// in loops for other warps' arrivals, and lanes of one warp for lanes of the same warp that
// took another branch, so the executor must let the others run.
// vcuda-test: nvcc=-arch=sm_90
#include "common.h"

__device__ unsigned long long mb_arrive(unsigned a) {
    unsigned long long st;
    asm volatile("mbarrier.arrive.shared.b64 %0, [%1];" : "=l"(st) : "r"(a) : "memory");
    return st;
}

__device__ void mb_wait(unsigned a, unsigned long long st) {
    unsigned done;
    do {
        asm volatile(
            "{ .reg .pred p; mbarrier.try_wait.shared.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
            : "=r"(done)
            : "r"(a), "l"(st)
            : "memory");
    } while (!done);
}

__device__ unsigned mb_parity_done(unsigned a, unsigned parity) {
    unsigned done;
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.shared.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
        : "=r"(done)
        : "r"(a), "r"(parity)
        : "memory");
    return done;
}

__device__ void mb_drop(unsigned a) {
    asm volatile("mbarrier.arrive_drop.shared.b64 _, [%0];" ::"r"(a) : "memory");
}

// Phases: each thread adds its left neighbour's value from the previous phase.
__global__ void phases(int *out, int rounds) {
    __shared__ unsigned long long bar;
    __shared__ int buf[2][256];
    unsigned a = (unsigned)__cvta_generic_to_shared(&bar);
    int t = threadIdx.x, n = blockDim.x;
    if (t == 0) asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(a), "r"(n) : "memory");
    __syncthreads();
    buf[0][t] = t;
    mb_wait(a, mb_arrive(a));
    for (int r = 0; r < rounds; r++) {
        int cur = r & 1;
        buf[cur ^ 1][t] = buf[cur][t] + buf[cur][(t + n - 1) % n];
        // Split phase: arrive, do independent work, then wait.
        unsigned long long tok = mb_arrive(a);
        volatile int spin = 0;
        for (int k = 0; k < (t % 7); k++) spin += k;
        mb_wait(a, tok);
    }
    out[blockIdx.x * n + t] = buf[rounds & 1][t];
}

// Half the threads drop out in the first phase; the others keep going.
__global__ void dropping(int *out) {
    __shared__ unsigned long long bar;
    __shared__ int count;
    unsigned a = (unsigned)__cvta_generic_to_shared(&bar);
    int t = threadIdx.x, n = blockDim.x;
    if (t == 0) {
        asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(a), "r"(n) : "memory");
        count = 0;
    }
    __syncthreads();
    atomicAdd(&count, 1);
    if (t % 2 == 1) {
        mb_drop(a);
        return;
    }
    mb_wait(a, mb_arrive(a));
    int first = count;  // every thread added before the first phase completed
    mb_wait(a, mb_arrive(a));  // completes with the n/2 that stayed
    atomicAdd(&count, 1);
    mb_wait(a, mb_arrive(a));
    out[t / 2] = first * 1000 + count;
}

// Half of a warp arrives and spins; the other half branches past that loop first, then
// arrives: the spinning lanes must let them run.
__global__ void divergent(int *out) {
    __shared__ unsigned long long bar;
    unsigned a = (unsigned)__cvta_generic_to_shared(&bar);
    if (threadIdx.x == 0) asm volatile("mbarrier.init.shared.b64 [%0], 32;" ::"r"(a));
    __syncthreads();
    int lane = threadIdx.x;
    asm volatile(
        "{\n"
        ".reg .pred p, q;\n .reg .b64 st;\n"
        "setp.ge.s32 q, %1, 16;\n"
        "@q bra LATE;\n"
        "mbarrier.arrive.shared.b64 st, [%0];\n"
        "WAIT1:\n"
        "mbarrier.try_wait.shared.b64 p, [%0], st;\n"
        "@!p bra WAIT1;\n"
        "bra DONE;\n"
        "LATE:\n"
        "mbarrier.arrive.shared.b64 st, [%0];\n"
        "WAIT2:\n"
        "mbarrier.try_wait.shared.b64 p, [%0], st;\n"
        "@!p bra WAIT2;\n"
        "DONE:\n"
        "}\n" ::"r"(a),
        "r"(lane)
        : "memory");
    out[lane] = lane + 1;
}

// The raw instructions.
__global__ void raw(unsigned long long *out) {
    __shared__ unsigned long long mbar;
    unsigned a = (unsigned)__cvta_generic_to_shared(&mbar);
    int t = threadIdx.x;
    if (t == 0) asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(a), "r"(4));
    __syncthreads();
    if (t == 0) {
        unsigned long long st;
        unsigned done, pending;
        // Three arrivals by one thread: the phase is still open.
        asm volatile("mbarrier.arrive.shared.b64 %0, [%1], 3;" : "=l"(st) : "r"(a));
        asm volatile("mbarrier.pending_count.b64 %0, %1;" : "=r"(pending) : "l"(st));
        asm volatile(
            "{ .reg .pred p; mbarrier.test_wait.shared.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
            : "=r"(done)
            : "r"(a), "l"(st));
        out[0] = pending;
        out[1] = done;
        // The fourth completes phase 0.
        asm volatile("mbarrier.arrive.shared.b64 %0, [%1];" : "=l"(st) : "r"(a));
        asm volatile(
            "{ .reg .pred p; mbarrier.test_wait.shared.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
            : "=r"(done)
            : "r"(a), "l"(st));
        out[2] = done;
        out[3] = mb_parity_done(a, 0);  // phase 0 (parity 0) complete
        out[4] = mb_parity_done(a, 1);  // phase 1 still open
        asm volatile("mbarrier.inval.shared.b64 [%0];" ::"r"(a));
    }
}

int main() {
    const int n = 256, blocks = 3, rounds = 5;
    int *out = nullptr;
    CHECK(cudaMalloc(&out, blocks * n * sizeof(int)));
    phases<<<blocks, n>>>(out, rounds);
    CHECK(cudaGetLastError());
    int h[blocks * n];
    CHECK(cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost));
    // Host reference.
    int ref[2][n];
    for (int t = 0; t < n; t++) ref[0][t] = t;
    for (int r = 0; r < rounds; r++)
        for (int t = 0; t < n; t++)
            ref[(r & 1) ^ 1][t] = ref[r & 1][t] + ref[r & 1][(t + n - 1) % n];
    int bad = 0;
    for (int b = 0; b < blocks; b++)
        for (int t = 0; t < n; t++)
            if (h[b * n + t] != ref[rounds & 1][t]) bad++;
    EXPECT(bad == 0);

    const int m = 128;
    dropping<<<1, m>>>(out);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(h, out, m / 2 * sizeof(int), cudaMemcpyDeviceToHost));
    bad = 0;
    for (int i = 0; i < m / 2; i++)
        if (h[i] != m * 1000 + m + m / 2) bad++;
    EXPECT(bad == 0);

    divergent<<<1, 32>>>(out);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(h, out, 32 * sizeof(int), cudaMemcpyDeviceToHost));
    bad = 0;
    for (int i = 0; i < 32; i++) bad += h[i] != i + 1;
    EXPECT(bad == 0);

    unsigned long long *r = nullptr, hr[5];
    CHECK(cudaMalloc(&r, sizeof hr));
    raw<<<1, 32>>>(r);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(hr, r, sizeof hr, cudaMemcpyDeviceToHost));
    // The state arrive returns is the barrier's before the arrival: 4 pending (an H100 says
    // so), not the 1 left after it.
    EXPECT(hr[0] == 4);
    EXPECT(hr[1] == 0);
    EXPECT(hr[2] == 1);
    EXPECT(hr[3] == 1);
    EXPECT(hr[4] == 0);
    CHECK(cudaFree(r));
    CHECK(cudaFree(out));
    return finish();
}
