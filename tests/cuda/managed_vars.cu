// SPDX-License-Identifier: Apache-2.0 OR MIT
// `__managed__` variables: initialized from the module (a scalar, an array and a struct),
// read and written by host code (through the pointer nvcc's host code gets from
// __cudaInitModule) and by kernels in place, with no copies: kernels see the host's writes
// after launch, the host sees the kernels' after cudaDeviceSynchronize. Where the device
// has no managed memory, the module's kernels fail with cudaErrorNotSupported.
#include "common.h"

struct Config {
    int add;
    double scale;
};

__managed__ int counter = 5;
__managed__ float table[64];
__managed__ Config cfg = {3, 1.5};

__global__ void update(int n) {
    int i = threadIdx.x;
    if (i < n) {
        table[i] = table[i] * (float)cfg.scale + cfg.add;
        atomicAdd(&counter, 1);
    }
}

__global__ void read_counter(int *out) { *out = counter; }

int main() {
    int managed = -1;
    CHECK(cudaDeviceGetAttribute(&managed, cudaDevAttrManagedMemory, 0));
    if (!managed) {
        printf("this device has no managed memory\n");
        update<<<1, 64>>>(64);
        EXPECT_ERR(cudaGetLastError(), cudaErrorNotSupported);
        return finish();
    }
    // Initial values from the module, before any kernel ran.
    EXPECT(counter == 5);
    EXPECT(cfg.add == 3 && cfg.scale == 1.5);
    for (int i = 0; i < 64; i++) EXPECT(table[i] == 0.0f);
    for (int i = 0; i < 64; i++) table[i] = (float)i;
    update<<<1, 64>>>(64);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    EXPECT(counter == 5 + 64);
    for (int i = 0; i < 64; i++) EXPECT(table[i] == i * 1.5f + 3);
    // The host's write is what the next kernel reads.
    counter = 1000;
    cfg.add = -1;
    int *d;
    CHECK(cudaMalloc(&d, sizeof(int)));
    read_counter<<<1, 1>>>(d);
    int got = 0;
    CHECK(cudaMemcpy(&got, d, sizeof got, cudaMemcpyDeviceToHost));
    EXPECT(got == 1000);
    update<<<1, 2>>>(2);
    CHECK(cudaDeviceSynchronize());
    EXPECT(table[1] == (1 * 1.5f + 3) * 1.5f - 1);
    EXPECT(counter == 1002);
    // The symbol calls name a managed variable too.
    int v = 7, w = 0;
    CHECK(cudaMemcpyToSymbol(counter, &v, sizeof v));
    EXPECT(counter == 7);
    CHECK(cudaMemcpyFromSymbol(&w, counter, sizeof w));
    EXPECT(w == 7);
    void *sa = nullptr;
    size_t ss = 0;
    CHECK(cudaGetSymbolAddress(&sa, table));
    CHECK(cudaGetSymbolSize(&ss, table));
    EXPECT(sa == (void *)&table[0] && ss == sizeof table);
    // The variable's address is managed memory.
    cudaPointerAttributes attr;
    CHECK(cudaPointerGetAttributes(&attr, &counter));
    EXPECT(attr.type == cudaMemoryTypeManaged);
    CHECK(cudaFree(d));
    return finish();
}
