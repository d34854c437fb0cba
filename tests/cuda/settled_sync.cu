// SPDX-License-Identifier: Apache-2.0 OR MIT
// Synchronizing and querying a stream right after a call that left it idle (a copy from it
// to the host, a synchronize): vcuda answers those without a round trip while no request was
// made since, by any thread. This program checks that every kind of request in between
// still makes the synchronize wait: work posted by the same thread, work on the stream from
// another thread, and that errors still reach a synchronize answered that way.
//
// "Waited" is seen through mapped host memory: a slow kernel writes a flag there last, and
// the host reads it right after the synchronize returns, before any other call.
#include <atomic>
#include <thread>
#include "common.h"

__device__ unsigned long long now_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// Spins for `ns` nanoseconds, then writes `value` to device memory and to the mapped flag.
__global__ void slow_write(int *dev, volatile int *flag, int value, unsigned long long ns) {
    unsigned long long t0 = now_ns();
    while (now_ns() - t0 < ns) {
    }
    *dev = value;
    __threadfence_system();
    *flag = value;
}

__global__ void write_value(int *dev, int value) { *dev = value; }

// A store to the null page (see errors.cu).
__global__ void fault(int *p) { *(volatile int *)p = 1; }

static const unsigned long long SLOW_NS = 30ull * 1000 * 1000;  // 30 ms

int main() {
    int can = 0;
    CHECK(cudaDeviceGetAttribute(&can, cudaDevAttrCanMapHostMemory, 0));
    int *box = nullptr, *dbox = nullptr, *dev = nullptr, host = 0;
    if (can) {
        CHECK(cudaHostAlloc(&box, 4096, cudaHostAllocMapped));
        CHECK(cudaHostGetDevicePointer((void **)&dbox, box, 0));
    } else {
        // Without mapped memory the flag is device memory: the checks then see only the
        // values copied back, which stream order makes right anyway.
        CHECK(cudaMalloc(&dbox, 4096));
    }
    volatile int *flag = box;
    CHECK(cudaMalloc(&dev, sizeof(int)));
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

    // 1. Repeated synchronizes and queries of an idle stream succeed.
    CHECK(cudaStreamSynchronize(s));
    for (int i = 0; i < 1000; i++) {
        CHECK(cudaStreamSynchronize(s));
        CHECK(cudaStreamQuery(s));
    }

    // 2. A copy to the host leaves the stream idle; a launch after it must be waited for.
    write_value<<<1, 1, 0, s>>>(dev, 1);
    CHECK(cudaMemcpyAsync(&host, dev, sizeof(int), cudaMemcpyDeviceToHost, s));
    EXPECT(host == 1);
    if (flag)
        *flag = 0;
    slow_write<<<1, 1, 0, s>>>(dev, dbox, 2, SLOW_NS);
    CHECK(cudaStreamSynchronize(s));
    if (flag)
        EXPECT(*flag == 2);
    CHECK(cudaMemcpy(&host, dev, sizeof(int), cudaMemcpyDeviceToHost));
    EXPECT(host == 2);

    // 3. The same after a synchronous copy on the legacy stream, with a query.
    CHECK(cudaMemcpy(&host, dev, sizeof(int), cudaMemcpyDeviceToHost));
    if (flag)
        *flag = 0;
    slow_write<<<1, 1>>>(dev, dbox, 3, SLOW_NS);
    cudaError_t q;
    while ((q = cudaStreamQuery(0)) == cudaErrorNotReady) {
    }
    CHECK(q);
    if (flag)
        EXPECT(*flag == 3);

    // 4. Work another thread puts on the stream after this thread saw it idle.
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaMemcpyAsync(&host, dev, sizeof(int), cudaMemcpyDeviceToHost, s));
    if (flag)
        *flag = 0;
    std::thread other([&] { slow_write<<<1, 1, 0, s>>>(dev, dbox, 4, SLOW_NS); });
    other.join();
    CHECK(cudaStreamSynchronize(s));
    if (flag)
        EXPECT(*flag == 4);
    CHECK(cudaMemcpyAsync(&host, dev, sizeof(int), cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    EXPECT(host == 4);

    // 5. An event recorded after the stream went idle is waited for like any work.
    cudaEvent_t e;
    CHECK(cudaEventCreate(&e));
    CHECK(cudaEventRecord(e, s));
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaEventQuery(e));
    CHECK(cudaEventDestroy(e));

    // 6. A fault on another stream after this one went idle reaches its synchronize once
    // the process has seen it.
    cudaStream_t t;
    CHECK(cudaStreamCreateWithFlags(&t, cudaStreamNonBlocking));
    CHECK(cudaStreamSynchronize(s));
    fault<<<1, 1, 0, t>>>((int *)0x1000);
    EXPECT_ERR(cudaStreamSynchronize(t), cudaErrorIllegalAddress);
    EXPECT_ERR(cudaStreamSynchronize(s), cudaErrorIllegalAddress);
    EXPECT_ERR(cudaStreamQuery(s), cudaErrorIllegalAddress);
    return finish();
}
