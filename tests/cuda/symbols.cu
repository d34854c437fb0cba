// SPDX-License-Identifier: Apache-2.0 OR MIT
// __constant__ and __device__ variables: cudaMemcpyToSymbol/FromSymbol, symbol addresses,
// and kernels seeing the same bytes.
#include "common.h"

__constant__ float coef[16];
__constant__ int offset_c;
__device__ int counter;
__device__ double table[8] = {1, 2, 3, 4, 5, 6, 7, 8};

__global__ void apply(const float *in, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * coef[i % 16] + offset_c + (float)table[i % 8];
    if (i == 0) atomicAdd(&counter, 1);
}

int main() {
    float c[16];
    for (int i = 0; i < 16; i++) c[i] = 0.5f * i;
    CHECK(cudaMemcpyToSymbol(coef, c, sizeof c));
    int off = 100;
    CHECK(cudaMemcpyToSymbol(offset_c, &off, sizeof off));
    int zero = 0;
    CHECK(cudaMemcpyToSymbol(counter, &zero, sizeof zero));
    // Partial copy with an offset into an initialized __device__ array.
    double t5 = 50;
    CHECK(cudaMemcpyToSymbol(table, &t5, sizeof t5, 5 * sizeof(double)));
    double tb[8];
    CHECK(cudaMemcpyFromSymbol(tb, table, sizeof tb));
    EXPECT(tb[0] == 1 && tb[4] == 5 && tb[5] == 50 && tb[7] == 8);
    EXPECT_ERR(cudaMemcpyToSymbol(coef, c, sizeof c, 4), cudaErrorInvalidValue);
    EXPECT(cudaGetLastError() == cudaErrorInvalidValue);

    size_t sz = 0;
    CHECK(cudaGetSymbolSize(&sz, coef));
    EXPECT(sz == sizeof c);
    int *cp = nullptr;
    CHECK(cudaGetSymbolAddress((void **)&cp, counter));
    EXPECT(cp != nullptr);

    const int n = 1000;
    float h[n], g[n];
    for (int i = 0; i < n; i++) h[i] = (float)i;
    float *din, *dout;
    CHECK(cudaMalloc(&din, sizeof h));
    CHECK(cudaMalloc(&dout, sizeof h));
    CHECK(cudaMemcpy(din, h, sizeof h, cudaMemcpyHostToDevice));
    for (int rep = 0; rep < 3; rep++) apply<<<(n + 255) / 256, 256>>>(din, dout, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(g, dout, sizeof g, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < n; i++) {
        double tv = (i % 8 == 5) ? 50 : (i % 8) + 1;
        if (g[i] != (float)(h[i] * c[i % 16] + off + (float)tv)) bad++;
    }
    EXPECT(bad == 0);
    int cnt = 0;
    CHECK(cudaMemcpyFromSymbol(&cnt, counter, sizeof cnt));
    EXPECT(cnt == 3);
    // The symbol address is ordinary device memory.
    CHECK(cudaMemcpy(&cnt, cp, sizeof cnt, cudaMemcpyDeviceToHost));
    EXPECT(cnt == 3);
    // ... which cudaMemcpyDefault tells from host memory by its address, as CuPy's copies
    // into a RawModule's __constant__ array do.
    cudaPointerAttributes pa;
    CHECK(cudaPointerGetAttributes(&pa, cp));
    EXPECT(pa.type == cudaMemoryTypeDevice);
    float *coefp = nullptr;
    CHECK(cudaGetSymbolAddress((void **)&coefp, coef));
    CHECK(cudaPointerGetAttributes(&pa, coefp + 3));
    EXPECT(pa.type == cudaMemoryTypeDevice && pa.devicePointer == coefp + 3);
    float twice[16];
    for (int i = 0; i < 16; i++) twice[i] = 2.0f * c[i];
    CHECK(cudaMemcpy(din, twice, sizeof twice, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpyAsync(coefp, din, sizeof twice, cudaMemcpyDefault, 0));
    float back[16] = {0};
    CHECK(cudaMemcpy(back, coefp, sizeof back, cudaMemcpyDefault));
    CHECK(cudaMemcpyFromSymbol(c, coef, sizeof c));
    EXPECT(memcmp(back, twice, sizeof back) == 0 && memcmp(c, twice, sizeof c) == 0);
    CHECK(cudaFree(din));
    CHECK(cudaFree(dout));
    return finish();
}
