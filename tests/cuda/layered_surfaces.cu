// SPDX-License-Identifier: Apache-2.0 OR MIT
// Surface objects over layered and cube-map CUDA arrays: kernels write every texel of a 2-D
// layered array (float2), a 1-D layered array (int), a cube map and a layered cube map (int)
// with surf2DLayeredwrite / surf1DLayeredwrite / surfCubemapwrite / surfCubemapLayeredwrite;
// the host reads them back with cudaMemcpy3D and checks each texel; kernels read them back
// with the matching read intrinsics, with the zero and clamp boundary modes at a layer and
// a coordinate past the end.
#include "common.h"

__global__ void write_2d_layered(cudaSurfaceObject_t s) {
    int x = threadIdx.x, y = threadIdx.y, l = blockIdx.x;
    surf2DLayeredwrite(make_float2(100.0f * l + 8 * y + x, -1.0f * l), s, x * (int)sizeof(float2), y, l);
}

// For texel (x, y) of layer l: its value; the value at layer l + 1 (zero past the last);
// at x + 1 with the layer clamped to the last.
__global__ void read_2d_layered(cudaSurfaceObject_t s, float2 *same, float2 *next, float2 *clamped,
                                int w, int h) {
    int x = threadIdx.x, y = threadIdx.y, l = blockIdx.x;
    int i = (l * h + y) * w + x;
    same[i] = surf2DLayeredread<float2>(s, x * (int)sizeof(float2), y, l);
    next[i] = surf2DLayeredread<float2>(s, x * (int)sizeof(float2), y, l + 1, cudaBoundaryModeZero);
    clamped[i] = surf2DLayeredread<float2>(s, (x + 1) * (int)sizeof(float2), y, l + 1, cudaBoundaryModeClamp);
}

__global__ void write_1d_layered(cudaSurfaceObject_t s) {
    int x = threadIdx.x, l = blockIdx.x;
    surf1DLayeredwrite(10 * x + l, s, x * (int)sizeof(int), l);
}

__global__ void read_1d_layered(cudaSurfaceObject_t s, int *out, int w) {
    int x = threadIdx.x, l = blockIdx.x;
    out[l * w + x] = surf1DLayeredread<int>(s, x * (int)sizeof(int), l);
}

// Face f of cube c (index 6 c + f) holds 1000 c + 100 f + 8 y + x.
__global__ void write_cube(cudaSurfaceObject_t s, int layered) {
    int x = threadIdx.x, y = threadIdx.y, i = blockIdx.x;
    int v = 1000 * (i / 6) + 100 * (i % 6) + 8 * y + x;
    if (layered)
        surfCubemapLayeredwrite(v, s, x * (int)sizeof(int), y, i);
    else
        surfCubemapwrite(v, s, x * (int)sizeof(int), y, i);
}

__global__ void read_cube(cudaSurfaceObject_t s, int *out, int layered, int w) {
    int x = threadIdx.x, y = threadIdx.y, i = blockIdx.x;
    int k = (i * w + y) * w + x;
    out[k] = layered ? surfCubemapLayeredread<int>(s, x * (int)sizeof(int), y, i)
                     : surfCubemapread<int>(s, x * (int)sizeof(int), y, i);
}

static cudaSurfaceObject_t surface_of(cudaArray_t a) {
    cudaResourceDesc r = {};
    r.resType = cudaResourceTypeArray;
    r.res.array.array = a;
    cudaSurfaceObject_t s;
    CHECK(cudaCreateSurfaceObject(&s, &r));
    return s;
}

template <typename T>
static void read_back(cudaArray_t a, T *host, int w, int h, int layers) {
    cudaMemcpy3DParms p = {};
    p.srcArray = a;
    p.dstPtr = make_cudaPitchedPtr(host, w * sizeof(T), w, h);
    p.extent = make_cudaExtent(w, h, layers);
    p.kind = cudaMemcpyDeviceToHost;
    CHECK(cudaMemcpy3D(&p));
}

static void test_2d_layered() {
    const int W = 8, H = 4, L = 3, N = W * H * L;
    cudaChannelFormatDesc f = cudaCreateChannelDesc<float2>();
    cudaArray_t a;
    CHECK(cudaMalloc3DArray(&a, &f, make_cudaExtent(W, H, L), cudaArrayLayered | cudaArraySurfaceLoadStore));
    cudaSurfaceObject_t s = surface_of(a);
    write_2d_layered<<<L, dim3(W, H)>>>(s);
    CHECK(cudaGetLastError());
    static float2 host[N];
    read_back(a, host, W, H, L);
    for (int l = 0; l < L; l++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                float2 v = host[(l * H + y) * W + x];
                EXPECT(v.x == 100.0f * l + 8 * y + x && v.y == -1.0f * l);
            }
    float2 *d;
    CHECK(cudaMalloc(&d, 3 * N * sizeof(float2)));
    read_2d_layered<<<L, dim3(W, H)>>>(s, d, d + N, d + 2 * N, W, H);
    CHECK(cudaGetLastError());
    static float2 r[3 * N];
    CHECK(cudaMemcpy(r, d, sizeof r, cudaMemcpyDeviceToHost));
    for (int l = 0; l < L; l++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                int i = (l * H + y) * W + x;
                EXPECT(r[i].x == host[i].x && r[i].y == host[i].y);
                float2 want = l + 1 < L ? host[i + W * H] : make_float2(0.0f, 0.0f);
                EXPECT(r[N + i].x == want.x && r[N + i].y == want.y);
                int cx = x + 1 < W ? x + 1 : W - 1, cl = l + 1 < L ? l + 1 : L - 1;
                float2 c = host[(cl * H + y) * W + cx];
                EXPECT(r[2 * N + i].x == c.x && r[2 * N + i].y == c.y);
            }
    CHECK(cudaFree(d));
    CHECK(cudaDestroySurfaceObject(s));
    CHECK(cudaFreeArray(a));
}

static void test_1d_layered() {
    const int W = 16, L = 5, N = W * L;
    cudaChannelFormatDesc f = cudaCreateChannelDesc<int>();
    cudaArray_t a;
    CHECK(cudaMalloc3DArray(&a, &f, make_cudaExtent(W, 0, L), cudaArrayLayered | cudaArraySurfaceLoadStore));
    cudaSurfaceObject_t s = surface_of(a);
    write_1d_layered<<<L, W>>>(s);
    CHECK(cudaGetLastError());
    int host[N];
    read_back(a, host, W, 1, L);
    for (int l = 0; l < L; l++)
        for (int x = 0; x < W; x++) EXPECT(host[l * W + x] == 10 * x + l);
    int *d, r[N];
    CHECK(cudaMalloc(&d, sizeof r));
    read_1d_layered<<<L, W>>>(s, d, W);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(r, d, sizeof r, cudaMemcpyDeviceToHost));
    EXPECT(memcmp(r, host, sizeof r) == 0);
    CHECK(cudaFree(d));
    CHECK(cudaDestroySurfaceObject(s));
    CHECK(cudaFreeArray(a));
}

static void test_cube(bool layered) {
    const int W = 4, FACES = layered ? 12 : 6, N = W * W * FACES;
    cudaChannelFormatDesc f = cudaCreateChannelDesc<int>();
    cudaArray_t a;
    unsigned flags = cudaArrayCubemap | cudaArraySurfaceLoadStore | (layered ? cudaArrayLayered : 0);
    CHECK(cudaMalloc3DArray(&a, &f, make_cudaExtent(W, W, FACES), flags));
    cudaSurfaceObject_t s = surface_of(a);
    write_cube<<<FACES, dim3(W, W)>>>(s, layered);
    CHECK(cudaGetLastError());
    static int host[2 * 6 * 4 * 4];
    read_back(a, host, W, W, FACES);
    for (int i = 0; i < FACES; i++)
        for (int y = 0; y < W; y++)
            for (int x = 0; x < W; x++)
                EXPECT(host[(i * W + y) * W + x] == 1000 * (i / 6) + 100 * (i % 6) + 8 * y + x);
    int *d;
    static int r[2 * 6 * 4 * 4];
    CHECK(cudaMalloc(&d, N * sizeof(int)));
    read_cube<<<FACES, dim3(W, W)>>>(s, d, layered, W);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(r, d, N * sizeof(int), cudaMemcpyDeviceToHost));
    EXPECT(memcmp(r, host, N * sizeof(int)) == 0);
    CHECK(cudaFree(d));
    CHECK(cudaDestroySurfaceObject(s));
    CHECK(cudaFreeArray(a));
}

int main() {
    test_2d_layered();
    test_1d_layered();
    test_cube(false);
    test_cube(true);
    CHECK(cudaDeviceSynchronize());
    return finish();
}
