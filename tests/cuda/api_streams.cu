// SPDX-License-Identifier: Apache-2.0 OR MIT
// Streams and events: creation flags and priorities, ordering, queries, waits, timing,
// the legacy and per-thread default streams, and bad handles.
#include <vector>
#include "common.h"

int main() {
    const int N = 1 << 16;
    std::vector<float> h(N, 1.5f), g(N);
    float *d;
    CHECK(cudaMalloc(&d, N * sizeof(float)));

    cudaStream_t s1, s2, s3;
    CHECK(cudaStreamCreate(&s1));
    CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithPriority(&s3, cudaStreamDefault, -1));
    unsigned fl = 9;
    CHECK(cudaStreamGetFlags(s2, &fl));
    EXPECT(fl == cudaStreamNonBlocking);
    int prio = 0;
    CHECK(cudaStreamGetPriority(s3, &prio));
    EXPECT(prio == -1);
    EXPECT_ERR(cudaStreamCreateWithFlags(&s1, 0x80), cudaErrorInvalidValue);
    EXPECT(cudaGetLastError() == cudaErrorInvalidValue);

    cudaEvent_t a, b, c;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreateWithFlags(&b, cudaEventBlockingSync));
    CHECK(cudaEventCreateWithFlags(&c, cudaEventDisableTiming));
    CHECK(cudaEventQuery(a)); // never recorded: complete

    // Stream order: a copy chain on s1, an event, s2 waits for it.
    CHECK(cudaEventRecord(a, s1));
    CHECK(cudaMemcpyAsync(d, h.data(), N * sizeof(float), cudaMemcpyHostToDevice, s1));
    CHECK(cudaEventRecord(b, s1));
    CHECK(cudaStreamWaitEvent(s2, b, 0));
    CHECK(cudaMemcpyAsync(g.data(), d, N * sizeof(float), cudaMemcpyDeviceToHost, s2));
    CHECK(cudaStreamSynchronize(s2));
    EXPECT(g[N - 1] == 1.5f);
    CHECK(cudaEventSynchronize(b));
    CHECK(cudaEventQuery(b));
    cudaError_t q = cudaStreamQuery(s1);
    EXPECT(q == cudaSuccess || q == cudaErrorNotReady);
    CHECK(cudaStreamSynchronize(s1));
    CHECK(cudaStreamQuery(s1));
    EXPECT(cudaGetLastError() == cudaSuccess); // NotReady is not an error

    float ms = -1;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    EXPECT(ms >= 0.0f);
    CHECK(cudaEventRecord(c, s1));
    CHECK(cudaEventSynchronize(c));
    EXPECT_ERR(cudaEventElapsedTime(&ms, a, c), cudaErrorInvalidResourceHandle);
    cudaEvent_t never;
    CHECK(cudaEventCreate(&never));
    EXPECT_ERR(cudaEventElapsedTime(&ms, a, never), cudaErrorInvalidResourceHandle);

    // Legacy and per-thread default streams.
    CHECK(cudaMemsetAsync(d, 0, 64, cudaStreamLegacy));
    CHECK(cudaMemcpyAsync(g.data(), d, 64, cudaMemcpyDeviceToHost, cudaStreamPerThread));
    CHECK(cudaStreamSynchronize(cudaStreamPerThread));
    EXPECT(g[0] == 0.0f && g[15] == 0.0f && g[16] == 1.5f);
    CHECK(cudaEventRecord(a, 0));
    CHECK(cudaStreamSynchronize(0));
    CHECK(cudaEventRecordWithFlags(a, s1, 0));

    // Bad handles. vcuda refuses them; NVIDIA's runtime crashes on a destroyed stream
    // (undefined behaviour, SIGSEGV on an H100), so only under vcuda.
    CHECK(cudaStreamDestroy(s3));
    if (vcuda_runtime()) {
        EXPECT_ERR(cudaStreamSynchronize(s3), cudaErrorInvalidResourceHandle);
        EXPECT_ERR(cudaMemcpyAsync(g.data(), d, 4, cudaMemcpyDeviceToHost, s3),
                   cudaErrorInvalidResourceHandle);
        EXPECT_ERR(cudaStreamDestroy(s3), cudaErrorInvalidResourceHandle);
        EXPECT_ERR(cudaEventRecord(a, (cudaStream_t)0x1234560), cudaErrorInvalidResourceHandle);
    }
    CHECK(cudaEventDestroy(never));
    // A destroyed event: vcuda refuses it; NVIDIA's runtime uses it (a crash on an H100).
    if (vcuda_runtime()) {
        EXPECT_ERR(cudaEventSynchronize(never), cudaErrorInvalidResourceHandle);
        EXPECT_ERR(cudaEventDestroy(never), cudaErrorInvalidResourceHandle);
    }
    EXPECT_ERR(cudaEventCreateWithFlags(&never, 0x100), cudaErrorInvalidValue);

    CHECK(cudaEventDestroy(a));
    CHECK(cudaEventDestroy(b));
    CHECK(cudaEventDestroy(c));
    CHECK(cudaStreamDestroy(s1));
    CHECK(cudaStreamDestroy(s2));
    CHECK(cudaFree(d));
    CHECK(cudaDeviceSynchronize());
    return finish();
}
