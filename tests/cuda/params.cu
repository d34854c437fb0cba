// SPDX-License-Identifier: Apache-2.0 OR MIT
// Kernel parameters: scalars of every width, structs by value, __grid_constant__, large
// (> 4 KiB) parameter buffers, pointers inside structs.
#include "common.h"

struct S12 { float a; int b; short c; char d; };
struct Big { int v[1200]; };
struct WithPtr { int *p; int n; double scale; };

__global__ void mixed(float *out, char c, short s, int i, long long l, float f, double d, S12 st, unsigned char u8) {
    out[0] = c; out[1] = s; out[2] = i; out[3] = (float)l; out[4] = f; out[5] = (float)d;
    out[6] = st.a; out[7] = st.b; out[8] = st.c; out[9] = st.d; out[10] = u8;
}

__global__ void big(Big b, int k, int *out) {
    int t = threadIdx.x;
    out[t] = b.v[t] + b.v[1199 - t] + k;
}

__global__ void gconst(const __grid_constant__ S12 s, float *out) {
    const S12 *p = &s;  // taking the address of a grid constant
    out[threadIdx.x] = p->a * threadIdx.x + p->b;
}

__global__ void withptr(WithPtr w) {
    int i = threadIdx.x;
    if (i < w.n) w.p[i] = (int)(w.p[i] * w.scale);
}

int main() {
    float *out;
    CHECK(cudaMalloc(&out, 64 * sizeof(float)));
    S12 st = {2.5f, -7, 300, 'x'};
    mixed<<<1, 1>>>(out, -5, -300, 123456, 1LL << 40, 1.25f, -2.5, st, 250);
    float h[64];
    CHECK(cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost));
    EXPECT(h[0] == -5 && h[1] == -300 && h[2] == 123456 && h[3] == (float)(1LL << 40));
    EXPECT(h[4] == 1.25f && h[5] == -2.5f && h[6] == 2.5f && h[7] == -7 && h[8] == 300 && h[9] == 'x' && h[10] == 250);

    Big b;
    for (int i = 0; i < 1200; i++) b.v[i] = i * 3;
    int *dout;
    CHECK(cudaMalloc(&dout, 512 * sizeof(int)));
    big<<<1, 512>>>(b, 11, dout);
    int r[512];
    CHECK(cudaMemcpy(r, dout, sizeof r, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int t = 0; t < 512; t++) bad += r[t] != t * 3 + (1199 - t) * 3 + 11;
    EXPECT(bad == 0);

    gconst<<<1, 32>>>(st, out);
    CHECK(cudaMemcpy(h, out, 32 * sizeof(float), cudaMemcpyDeviceToHost));
    EXPECT(h[0] == -7 && h[31] == 2.5f * 31 - 7);

    int vals[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    CHECK(cudaMemcpy(dout, vals, sizeof vals, cudaMemcpyHostToDevice));
    WithPtr w = {dout, 10, 3.0};
    withptr<<<1, 32>>>(w);
    CHECK(cudaMemcpy(vals, dout, sizeof vals, cudaMemcpyDeviceToHost));
    EXPECT(vals[0] == 3 && vals[9] == 30);
    return finish();
}
