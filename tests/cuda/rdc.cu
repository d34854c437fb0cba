// vcuda-test: nvcc=-rdc=true -gencode arch=compute_80,code=sm_80
// vcuda-test: srcs=rdc/scale.cu,rdc/stats.cu
// vcuda-test: expect=PASS
// SPDX-License-Identifier: Apache-2.0 OR MIT
// Separate compilation (nvcc -rdc=true): device code spread over three translation units.
// Kernels here call extern __device__ functions defined in rdc/scale.cu and rdc/stats.cu,
// read and write extern __device__ variables defined there (also through
// cudaMemcpyTo/FromSymbol and cudaGetSymbolAddress from this unit), and each unit has its
// own static helper of the same name and an inline function all of them use. The program
// registers one device-linked image (its units' PTX is what the CPU executor links). Built
// for sm_80 too: the library sends the image and units without the sm_80 cubins, which no
// device of the session runs, and the rest must still load and link.
#include "common.h"
#include "rdc/rdc.h"

// Same name as the static helpers of the other units: each unit must call its own.
static __device__ int unit_tag() { return 1; }

__global__ void apply(float *p, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        p[i] = scale(p[i]) + clamp_add(0, unit_tag());
        record(p[i]);
    }
}

__global__ void tags(int *out) {
    out[0] = unit_tag();
    out[1] = scale_unit_tag();
    out[2] = stats_unit_tag();
}

// A kernel defined in another unit, launched from here.
__global__ void reset_stats();

int main() {
    const int n = 1000;
    float h[n];
    for (int i = 0; i < n; i++) h[i] = (float)(i % 17) - 8.0f;
    float *d;
    CHECK(cudaMalloc(&d, sizeof h));
    CHECK(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice));

    float factor = 3.0f;
    CHECK(cudaMemcpyToSymbol(g_factor, &factor, sizeof factor));
    reset_stats<<<1, 1>>>();
    CHECK(cudaGetLastError());
    apply<<<(n + 127) / 128, 128>>>(d, n);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());

    float out[n];
    CHECK(cudaMemcpy(out, d, sizeof out, cudaMemcpyDeviceToHost));
    int bad = 0;
    float want_max = -1e30f;
    for (int i = 0; i < n; i++) {
        float want = h[i] * 3.0f + 1.0f;
        if (out[i] != want && bad++ < 5) printf("FAIL: out[%d] = %g, want %g\n", i, out[i], want);
        want_max = fmaxf(want_max, want);
    }
    EXPECT(bad == 0);

    unsigned count = 0;
    float got_max = 0;
    CHECK(cudaMemcpyFromSymbol(&count, g_count, sizeof count));
    CHECK(cudaMemcpyFromSymbol(&got_max, g_max, sizeof got_max));
    EXPECT(count == (unsigned)n);
    EXPECT(got_max == want_max);
    void *addr = nullptr;
    CHECK(cudaGetSymbolAddress(&addr, g_count));
    EXPECT(addr != nullptr);

    int *dt, ht[3] = {0, 0, 0};
    CHECK(cudaMalloc(&dt, sizeof ht));
    tags<<<1, 1>>>(dt);
    CHECK(cudaMemcpy(ht, dt, sizeof ht, cudaMemcpyDeviceToHost));
    EXPECT(ht[0] == 1 && ht[1] == 2 && ht[2] == 3);
    printf("count %u max %g tags %d %d %d\n", count, got_max, ht[0], ht[1], ht[2]);
    CHECK(cudaFree(d));
    CHECK(cudaFree(dt));
    return finish();
}
