// SPDX-License-Identifier: Apache-2.0 OR MIT
// Layered and cube-map CUDA arrays: a 2-D layered array and a 1-D layered array filled with
// cudaMemcpy3D and read back, sampled per layer with tex2DLayered / tex1DLayered (point and
// linear filtering, the layer index clamped); a cube map sampled with texCubemap in
// directions whose face and face coordinates are known, and a layered cube map with
// texCubemapLayered. Checked against host values (linear weights exactly 1/2).
#include "common.h"

__global__ void sample_2d_layered(cudaTextureObject_t t, const float3 *c, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex2DLayered<float>(t, c[i].x, c[i].y, (int)c[i].z);
}

__global__ void sample_1d_layered(cudaTextureObject_t t, const float2 *c, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex1DLayered<float>(t, c[i].x, (int)c[i].y);
}

__global__ void sample_cube(cudaTextureObject_t t, const float4 *c, float *out, int n, int layered) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = layered ? texCubemapLayered<float>(t, c[i].x, c[i].y, c[i].z, (int)c[i].w)
                     : texCubemap<float>(t, c[i].x, c[i].y, c[i].z);
}

static cudaTextureObject_t texture_of(cudaArray_t a, cudaTextureFilterMode filter, bool normalized) {
    cudaResourceDesc r = {};
    r.resType = cudaResourceTypeArray;
    r.res.array.array = a;
    cudaTextureDesc d = {};
    d.addressMode[0] = d.addressMode[1] = d.addressMode[2] = cudaAddressModeClamp;
    d.filterMode = filter;
    d.readMode = cudaReadModeElementType;
    d.normalizedCoords = normalized;
    cudaTextureObject_t t;
    CHECK(cudaCreateTextureObject(&t, &r, &d, nullptr));
    return t;
}

template <typename C>
static void run(void (*k)(cudaTextureObject_t, const C *, float *, int), cudaTextureObject_t t,
                const C *coords, float *out, int n) {
    C *dc;
    float *dout;
    CHECK(cudaMalloc(&dc, n * sizeof(C)));
    CHECK(cudaMalloc(&dout, n * sizeof(float)));
    CHECK(cudaMemcpy(dc, coords, n * sizeof(C), cudaMemcpyHostToDevice));
    k<<<1, 64>>>(t, dc, dout, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(out, dout, n * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaFree(dc));
    CHECK(cudaFree(dout));
}

int main() {
    cudaChannelFormatDesc f = cudaCreateChannelDesc<float>();

    // 2-D layered: 8 x 4 texels, 3 layers; texel (x, y) of layer l holds 100 l + 8 y + x.
    const int W = 8, H = 4, L = 3;
    float host[L][H][W], back[L][H][W];
    for (int l = 0; l < L; l++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) host[l][y][x] = 100.0f * l + 8 * y + x;
    cudaArray_t a;
    CHECK(cudaMalloc3DArray(&a, &f, make_cudaExtent(W, H, L), cudaArrayLayered));
    cudaChannelFormatDesc gd;
    cudaExtent ge;
    unsigned gf = 0;
    CHECK(cudaArrayGetInfo(&gd, &ge, &gf, a));
    EXPECT(ge.width == W && ge.height == H && ge.depth == L && (gf & cudaArrayLayered));
    cudaMemcpy3DParms p = {};
    p.srcPtr = make_cudaPitchedPtr(host, W * sizeof(float), W, H);
    p.dstArray = a;
    p.extent = make_cudaExtent(W, H, L);
    p.kind = cudaMemcpyHostToDevice;
    CHECK(cudaMemcpy3D(&p));
    cudaMemcpy3DParms q = {};
    q.srcArray = a;
    q.dstPtr = make_cudaPitchedPtr(back, W * sizeof(float), W, H);
    q.extent = make_cudaExtent(W, H, L);
    q.kind = cudaMemcpyDeviceToHost;
    CHECK(cudaMemcpy3D(&q));
    EXPECT(memcmp(host, back, sizeof host) == 0);

    cudaTextureObject_t tp = texture_of(a, cudaFilterModePoint, false);
    cudaTextureObject_t tl = texture_of(a, cudaFilterModeLinear, false);
    float3 c2[] = {{0.5f, 0.5f, 0}, {3.5f, 2.5f, 1}, {7.5f, 3.5f, 2},
                   {2.5f, 1.5f, 7} /* layer clamped to 2 */,
                   {1.5f, 0.5f, -3} /* unsigned: clamped to 2 too (as on an H100) */};
    float want2[] = {0, 108 + 11, 200 + 31, 200 + 10, 200 + 1};
    float r[8];
    run(sample_2d_layered, tp, c2, r, 5);
    for (int i = 0; i < 5; i++) {
        if (r[i] != want2[i]) printf("layered sample %d: %g, expected %g\n", i, r[i], want2[i]);
        EXPECT(r[i] == want2[i]);
    }
    // Linear: halfway between texel centers, within the layer only.
    float3 cl[] = {{1.0f, 0.5f, 1}, {2.5f, 2.0f, 2}};
    run(sample_2d_layered, tl, cl, r, 2);
    EXPECT(close_enough(r[0], 100 + 0.5f));
    EXPECT(close_enough(r[1], 200 + 8 * 1.5f + 2));

    // 1-D layered: 16 texels, 2 layers (extent height 0).
    float h1[2][16];
    for (int l = 0; l < 2; l++)
        for (int x = 0; x < 16; x++) h1[l][x] = 1000.0f * l + x;
    cudaArray_t a1;
    CHECK(cudaMalloc3DArray(&a1, &f, make_cudaExtent(16, 0, 2), cudaArrayLayered));
    cudaMemcpy3DParms p1 = {};
    p1.srcPtr = make_cudaPitchedPtr(h1, 16 * sizeof(float), 16, 1);
    p1.dstArray = a1;
    p1.extent = make_cudaExtent(16, 1, 2);
    p1.kind = cudaMemcpyHostToDevice;
    CHECK(cudaMemcpy3D(&p1));
    cudaTextureObject_t t1 = texture_of(a1, cudaFilterModePoint, false);
    float2 c1[] = {{0.5f, 0}, {15.5f, 1}, {4.5f, 1}};
    run(sample_1d_layered, t1, c1, r, 3);
    EXPECT(r[0] == 0 && r[1] == 1015 && r[2] == 1004);

    // Cube map: 4 x 4 faces; texel (x, y) of face f holds 1000 (f + 1) + 4 y + x.
    const int S = 4;
    float hc[2][6][S][S];
    for (int l = 0; l < 2; l++)
        for (int fc = 0; fc < 6; fc++)
            for (int y = 0; y < S; y++)
                for (int x = 0; x < S; x++) hc[l][fc][y][x] = 10000.0f * l + 1000 * (fc + 1) + 4 * y + x;
    cudaArray_t ac;
    CHECK(cudaMalloc3DArray(&ac, &f, make_cudaExtent(S, S, 6), cudaArrayCubemap));
    cudaMemcpy3DParms pc = {};
    pc.srcPtr = make_cudaPitchedPtr(hc[0], S * sizeof(float), S, S);
    pc.dstArray = ac;
    pc.extent = make_cudaExtent(S, S, 6);
    pc.kind = cudaMemcpyHostToDevice;
    CHECK(cudaMemcpy3D(&pc));
    cudaTextureObject_t tc = texture_of(ac, cudaFilterModePoint, true);
    // Face and (s, t) from the major axis: +x: (-z, -y), -x: (z, -y), +y: (x, z), -y: (x, -z),
    // +z: (x, -y), -z: (-x, -y); texel = floor((s/|m| + 1) / 2 * 4).
    float4 cc[] = {
        {1, 0, 0, 0},        // +x, s = t = 1/2: texel (2, 2)
        {1, -0.5f, 0.5f, 0}, // +x, s = (-0.5 + 1)/2 -> 1, t = (0.5 + 1)/2 -> 3
        {-1, 0.9f, -0.9f, 0},// -x, s = (-0.9+1)/2 -> 0, t = (-0.9+1)/2 -> 0
        {0.2f, 1, 0.6f, 0},  // +y, s -> 2, t = (0.6+1)/2 -> 3
        {0.2f, -1, 0.6f, 0}, // -y, s -> 2, t = (-0.6+1)/2 -> 0
        {-0.6f, 0.6f, 1, 0}, // +z, s -> 0, t = (-0.6+1)/2 -> 0
        {-0.6f, 0.6f, -1, 0},// -z, s = (0.6+1)/2 -> 3, t -> 0
    };
    float wantc[] = {1000 + 10, 1000 + 13, 2000 + 0, 3000 + 14, 4000 + 2, 5000 + 0, 6000 + 3};
    float *dout;
    float4 *dcc;
    CHECK(cudaMalloc(&dout, 16 * sizeof(float)));
    CHECK(cudaMalloc(&dcc, sizeof cc));
    CHECK(cudaMemcpy(dcc, cc, sizeof cc, cudaMemcpyHostToDevice));
    sample_cube<<<1, 32>>>(tc, dcc, dout, 7, 0);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(r, dout, 7 * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < 7; i++) {
        if (r[i] != wantc[i]) printf("cube %d: %g, want %g\n", i, r[i], wantc[i]);
        EXPECT(r[i] == wantc[i]);
    }

    // Layered cube map: two cubes; layer 1 adds 10000.
    cudaArray_t acl;
    CHECK(cudaMalloc3DArray(&acl, &f, make_cudaExtent(S, S, 12), cudaArrayCubemap | cudaArrayLayered));
    pc.srcPtr = make_cudaPitchedPtr(hc, S * sizeof(float), S, S);
    pc.dstArray = acl;
    pc.extent = make_cudaExtent(S, S, 12);
    CHECK(cudaMemcpy3D(&pc));
    cudaTextureObject_t tcl = texture_of(acl, cudaFilterModePoint, true);
    float4 ccl[] = {{1, 0, 0, 1}, {0.2f, -1, 0.6f, 0}};
    CHECK(cudaMemcpy(dcc, ccl, sizeof ccl, cudaMemcpyHostToDevice));
    sample_cube<<<1, 32>>>(tcl, dcc, dout, 2, 1);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(r, dout, 2 * sizeof(float), cudaMemcpyDeviceToHost));
    EXPECT(r[0] == 11010 && r[1] == 4002);

    // Bad shapes: a cube map's faces are square and six; layers need a depth.
    cudaArray_t bad;
    EXPECT_ERR(cudaMalloc3DArray(&bad, &f, make_cudaExtent(4, 5, 6), cudaArrayCubemap), cudaErrorInvalidValue);
    EXPECT_ERR(cudaMalloc3DArray(&bad, &f, make_cudaExtent(4, 4, 5), cudaArrayCubemap), cudaErrorInvalidValue);
    EXPECT_ERR(cudaMalloc3DArray(&bad, &f, make_cudaExtent(4, 4, 0), cudaArrayLayered), cudaErrorInvalidValue);
    cudaGetLastError();

    for (cudaTextureObject_t t : {tp, tl, t1, tc, tcl}) CHECK(cudaDestroyTextureObject(t));
    for (cudaArray_t x : {a, a1, ac, acl}) CHECK(cudaFreeArray(x));
    CHECK(cudaFree(dout));
    CHECK(cudaFree(dcc));
    return finish();
}
