// SPDX-License-Identifier: Apache-2.0 OR MIT
// Host callbacks, stream-ordered allocation, occupancy, peer copies, PCI bus id, profiler
// markers, and an entry point vcuda does not implement (it must fail honestly, never fake
// success).
#include <vector>
#include "common.h"

// cuda_profiler_api.h (not in the toolkit wheels the tests build with) declares these.
extern "C" cudaError_t cudaProfilerStart(void);
extern "C" cudaError_t cudaProfilerStop(void);

__global__ void fill(int *p, int v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = v + i;
}

static void CUDART_CB host_fn(void *arg) { *(int *)arg += 1; }
static void CUDART_CB stream_cb(cudaStream_t, cudaError_t status, void *arg) { *(int *)arg = 100 + (int)status; }

int main() {
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    int *d = nullptr;
    CHECK(cudaMallocAsync(&d, 1024 * sizeof(int), s));
    fill<<<4, 256, 0, s>>>(d, 7, 1024);
    int counter = 0, cbv = 0;
    CHECK(cudaLaunchHostFunc(s, host_fn, &counter));
    CHECK(cudaStreamAddCallback(s, stream_cb, &cbv, 0));
    std::vector<int> h(1024);
    CHECK(cudaMemcpyAsync(h.data(), d, 1024 * sizeof(int), cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    EXPECT(counter == 1 && cbv == 100);
    EXPECT(h[0] == 7 && h[1023] == 1030);

    int *e;
    CHECK(cudaMalloc(&e, 1024 * sizeof(int)));
    CHECK(cudaMemcpyPeer(e, 0, d, 0, 1024 * sizeof(int)));
    CHECK(cudaMemcpy(h.data(), e, 16, cudaMemcpyDeviceToHost));
    EXPECT(h[3] == 10);
    CHECK(cudaFreeAsync(d, s));
    CHECK(cudaStreamSynchronize(s));
    EXPECT_ERR(cudaFree(d), cudaErrorInvalidValue);

    int blocks = -1;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, fill, 256, 0));
    EXPECT(blocks >= 1 && blocks <= 32);
    int min_grid = 0, block_size = 0;
    CHECK(cudaOccupancyMaxPotentialBlockSize(&min_grid, &block_size, fill, 0, 0));
    EXPECT(block_size >= 32 && block_size <= 1024 && min_grid >= 1);

    // Profiler markers succeed (nothing to profile, but never an error).
    CHECK(cudaProfilerStart());
    CHECK(cudaProfilerStop());

    char bus[32];
    CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, 0));
    EXPECT(strlen(bus) == 12 && bus[4] == ':' && bus[7] == ':');

    // Nothing to flush, but the call works (as natively on an H100).
    CHECK(cudaDeviceFlushGPUDirectRDMAWrites(cudaFlushGPUDirectRDMAWritesTargetCurrentDevice,
                                             cudaFlushGPUDirectRDMAWritesToOwner));
    if (vcuda_runtime()) {
        // Unimplemented: an honest error, recorded as the last error. (Only under vcuda:
        // NVIDIA's runtime implements it.)
        cudaArraySparseProperties sp;
        cudaArray_t arr;
        cudaChannelFormatDesc fd = cudaCreateChannelDesc<float>();
        CHECK(cudaMallocArray(&arr, &fd, 16, 16));
        EXPECT_ERR(cudaArrayGetSparseProperties(&sp, arr), cudaErrorNotSupported);
        EXPECT(cudaGetLastError() == cudaErrorNotSupported);
        CHECK(cudaFreeArray(arr));
    }

    CHECK(cudaFree(e));
    CHECK(cudaStreamDestroy(s));
    return finish();
}
