// SPDX-License-Identifier: Apache-2.0 OR MIT
// Cooperative groups' grid-wide barrier: a cooperative launch as large as the occupancy
// calculator allows (256 threads a block) that does nothing but SYNCS grid.sync() calls, after
// a warm-up launch; prints "BENCH gridsync <seconds per grid.sync()>". bench/cpu-kernels.c
// times an OpenMP barrier on the same cores beside it (bench/cpu-executor.sh).
#include <cooperative_groups.h>
#include "common.h"

namespace cg = cooperative_groups;

static const int SYNCS = 2000;

__global__ void syncs(int* count, int n) {
    cg::grid_group g = cg::this_grid();
    for (int i = 0; i < n; i++) {
        if (g.thread_rank() == 0) *count += 1;
        g.sync();
    }
}

int main() {
    int* count;
    CHECK(cudaMalloc(&count, sizeof(int)));
    CHECK(cudaMemset(count, 0, sizeof(int)));
    int sms = 0, per_sm = 0;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, syncs, 256, 0));
    int blocks = sms * per_sm, n = SYNCS;
    void* args[] = {&count, &n};
    auto launch = [&] {
        CHECK(cudaLaunchCooperativeKernel((void*)syncs, blocks, 256, args, 0, 0));
    };
    launch();
    CHECK(cudaDeviceSynchronize());
    cudaEvent_t start, end;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&end));
    CHECK(cudaEventRecord(start));
    launch();
    CHECK(cudaEventRecord(end));
    CHECK(cudaEventSynchronize(end));
    int got = 0;
    CHECK(cudaMemcpy(&got, count, sizeof(int), cudaMemcpyDeviceToHost));
    if (got != 2 * SYNCS) {
        fprintf(stderr, "gridsync: counted %d, expected %d\n", got, 2 * SYNCS);
        return 1;
    }
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, end));
    printf("BENCH gridsync %.9f\n", ms / 1000.0 / SYNCS);
    fprintf(stderr, "gridsync: %d blocks of 256 threads\n", blocks);
    return 0;
}
