// SPDX-License-Identifier: Apache-2.0 OR MIT
// CUDA arrays, texture objects and surface objects: 1-D, 2-D and 3-D arrays filled with
// cudaMemcpy2DToArray, cudaMemcpyToArray and cudaMemcpy3D (and read back the same ways);
// textures over linear, pitched and array memory with point and linear filtering,
// normalized coordinates, the clamp, wrap, mirror and border address modes and
// cudaReadModeNormalizedFloat; surfaces written and read by kernels with byte x coordinates
// and the clamp and zero boundary modes; descriptor queries; tex2DLod and tex2DGrad on a
// texture of one level. Checked against a host model of the GPU's sampling (coordinates
// chosen so that the interpolation weights are exact in the hardware's 8-bit fraction).
#include "common.h"

// cudaMemcpyToArray and cudaMemcpyFromArray are deprecated, and tested here on purpose.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

__global__ void fetch_linear(cudaTextureObject_t t, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex1Dfetch<float>(t, i);
}

__global__ void sample_2d(cudaTextureObject_t t, const float2 *c, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex2D<float>(t, c[i].x, c[i].y);
}

// A level of detail and gradients that would pick a smaller level of a mipmapped texture.
__global__ void sample_2d_lod(cudaTextureObject_t t, const float2 *c, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = tex2DLod<float>(t, c[i].x, c[i].y, 1.5f);
    out[n + i] = tex2DGrad<float>(t, c[i].x, c[i].y, make_float2(4.0f, 0.0f), make_float2(0.0f, 4.0f));
}

__global__ void sample_1d(cudaTextureObject_t t, const float *c, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex1D<float>(t, c[i]);
}

__global__ void sample_rgba8(cudaTextureObject_t t, float4 *out, int w, int h) {
    int x = threadIdx.x, y = blockIdx.x;
    if (x < w && y < h) out[y * w + x] = tex2D<float4>(t, x + 0.5f, y + 0.5f);
}

__global__ void sample_int(cudaTextureObject_t t, const float2 *c, int *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex2D<int>(t, c[i].x, c[i].y);
}

__global__ void sample_3d(cudaTextureObject_t t, float *out, int w, int h, int d) {
    int x = threadIdx.x, y = threadIdx.y, z = blockIdx.x;
    if (x < w && y < h && z < d) out[(z * h + y) * w + x] = tex3D<float>(t, x + 0.5f, y + 0.5f, z + 0.5f);
}

__global__ void surf_write(cudaSurfaceObject_t s, int w, int h) {
    int x = threadIdx.x, y = blockIdx.x;
    if (x < w && y < h) surf2Dwrite(x * 1000 + y, s, x * (int)sizeof(int), y);
}

// Reads the right neighbour: clamped at the last column, zero past it.
__global__ void surf_read(cudaSurfaceObject_t s, int *clamped, int *zeroed, int w, int h) {
    int x = threadIdx.x, y = blockIdx.x;
    if (x < w && y < h) {
        clamped[y * w + x] = surf2Dread<int>(s, (x + 1) * (int)sizeof(int), y, cudaBoundaryModeClamp);
        zeroed[y * w + x] = surf2Dread<int>(s, (x + 1) * (int)sizeof(int), y, cudaBoundaryModeZero);
    }
}

__global__ void surf_1d(cudaSurfaceObject_t s, int n) {
    int i = threadIdx.x;
    if (i < n) surf1Dwrite((float)i * 0.25f, s, i * (int)sizeof(float));
}

static const int W = 8, H = 8;

static float texel(int x, int y) { return (float)(x * x) + 3.0f * y + 0.5f * (x * y % 5); }

// The host model: address mode on integer texel coordinates.
static int address(int i, int n, cudaTextureAddressMode m, bool *border) {
    switch (m) {
    case cudaAddressModeWrap: return ((i % n) + n) % n;
    case cudaAddressModeMirror: {
        int p = ((i % (2 * n)) + 2 * n) % (2 * n);
        return p < n ? p : 2 * n - 1 - p;
    }
    case cudaAddressModeBorder:
        if (i < 0 || i >= n) *border = true;
        return i;
    default: return i < 0 ? 0 : (i >= n ? n - 1 : i);
    }
}

static float fetch(int x, int y, cudaTextureAddressMode m) {
    bool border = false;
    int ax = address(x, W, m, &border), ay = address(y, H, m, &border);
    return border ? 0.0f : texel(ax, ay);
}

// Bilinear filtering as the GPU does it (weights exact for the coordinates used here).
static float bilinear(float x, float y, bool normalized, cudaTextureAddressMode m) {
    if (normalized) {
        if (m == cudaAddressModeWrap) { x -= floorf(x); y -= floorf(y); }
        x *= W;
        y *= H;
    }
    float xb = x - 0.5f, yb = y - 0.5f;
    int i = (int)floorf(xb), j = (int)floorf(yb);
    float a = xb - floorf(xb), b = yb - floorf(yb);
    return (1 - a) * (1 - b) * fetch(i, j, m) + a * (1 - b) * fetch(i + 1, j, m) +
           (1 - a) * b * fetch(i, j + 1, m) + a * b * fetch(i + 1, j + 1, m);
}

static cudaTextureObject_t make_tex(cudaArray_t a, cudaTextureAddressMode m, cudaTextureFilterMode f,
                                    bool normalized, cudaTextureReadMode read = cudaReadModeElementType) {
    cudaResourceDesc rd = {};
    rd.resType = cudaResourceTypeArray;
    rd.res.array.array = a;
    cudaTextureDesc td = {};
    td.addressMode[0] = td.addressMode[1] = td.addressMode[2] = m;
    td.filterMode = f;
    td.readMode = read;
    td.normalizedCoords = normalized;
    cudaTextureObject_t t = 0;
    CHECK(cudaCreateTextureObject(&t, &rd, &td, nullptr));
    return t;
}

static void test_linear() {
    const int n = 1000;
    float h[n], back[n];
    for (int i = 0; i < n; i++) h[i] = i * 0.5f - 3;
    float *d, *out;
    CHECK(cudaMalloc(&d, n * sizeof(float)));
    CHECK(cudaMalloc(&out, n * sizeof(float)));
    CHECK(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice));
    cudaResourceDesc rd = {};
    rd.resType = cudaResourceTypeLinear;
    rd.res.linear.devPtr = d;
    rd.res.linear.desc = cudaCreateChannelDesc<float>();
    rd.res.linear.sizeInBytes = n * sizeof(float);
    cudaTextureDesc td = {};
    td.readMode = cudaReadModeElementType;
    cudaTextureObject_t t;
    CHECK(cudaCreateTextureObject(&t, &rd, &td, nullptr));
    fetch_linear<<<(n + 127) / 128, 128>>>(t, out, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(back, out, sizeof back, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) EXPECT(back[i] == h[i]);
    cudaResourceDesc q = {};
    CHECK(cudaGetTextureObjectResourceDesc(&q, t));
    EXPECT(q.resType == cudaResourceTypeLinear && q.res.linear.devPtr == d &&
           q.res.linear.sizeInBytes == n * sizeof(float) && q.res.linear.desc.x == 32);
    CHECK(cudaDestroyTextureObject(t));
    // A misaligned base is refused, as by the real runtime.
    rd.res.linear.devPtr = d + 1;
    EXPECT_ERR(cudaCreateTextureObject(&t, &rd, &td, nullptr), cudaErrorInvalidValue);
    EXPECT(cudaGetLastError() == cudaErrorInvalidValue);
    CHECK(cudaFree(d));
    CHECK(cudaFree(out));
}

static void test_2d() {
    float h[H][W];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) h[y][x] = texel(x, y);
    cudaChannelFormatDesc fd = cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindFloat);
    EXPECT(fd.x == 32 && fd.y == 0 && fd.f == cudaChannelFormatKindFloat);
    cudaArray_t a;
    CHECK(cudaMallocArray(&a, &fd, W, H));
    // Two halves: rows 0-2 from a padded host buffer, rows 3-5 from device memory.
    float padded[3][W + 3];
    for (int y = 0; y < 3; y++)
        for (int x = 0; x < W; x++) padded[y][x] = h[y][x];
    CHECK(cudaMemcpy2DToArray(a, 0, 0, padded, sizeof padded[0], W * sizeof(float), 3, cudaMemcpyHostToDevice));
    float *dh;
    CHECK(cudaMalloc(&dh, sizeof h));
    CHECK(cudaMemcpy(dh, h, sizeof h, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy2DToArray(a, 0, 3, dh + 3 * W, W * sizeof(float), W * sizeof(float), H - 3, cudaMemcpyDeviceToDevice));

    cudaChannelFormatDesc qd;
    cudaExtent qe;
    unsigned qf = 7;
    CHECK(cudaArrayGetInfo(&qd, &qe, &qf, a));
    EXPECT(qd.x == 32 && qd.f == cudaChannelFormatKindFloat && qe.width == W && qe.height == H &&
           qe.depth == 0 && qf == 0);

    // Read back a sub-box both ways.
    float box[4][3] = {};
    CHECK(cudaMemcpy2DFromArray(box, sizeof box[0], a, 2 * sizeof(float), 1, 3 * sizeof(float), 4, cudaMemcpyDeviceToHost));
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 3; x++) EXPECT(box[y][x] == h[y + 1][x + 2]);
    float *dbox;
    CHECK(cudaMalloc(&dbox, sizeof box));
    CHECK(cudaMemcpy2DFromArrayAsync(dbox, 3 * sizeof(float), a, 2 * sizeof(float), 1, 3 * sizeof(float), 4, cudaMemcpyDefault, 0));
    float box2[4][3] = {};
    CHECK(cudaMemcpy(box2, dbox, sizeof box2, cudaMemcpyDeviceToHost));
    EXPECT(memcmp(box, box2, sizeof box) == 0);
    // Out of the array: refused.
    EXPECT_ERR(cudaMemcpy2DFromArray(box, sizeof box[0], a, 6 * sizeof(float), 0, 3 * sizeof(float), 1, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
    EXPECT_ERR(cudaMemcpy2DToArray(a, 0, 6, padded, sizeof padded[0], W * sizeof(float), 3, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
    EXPECT(cudaGetLastError() == cudaErrorInvalidValue);  // and clears it

    // Sample points: fractions of texels in steps of 1/8 (exact 8-bit weights).
    const int n = 12;
    float2 c[n] = {{0.5f, 0.5f}, {1.0f, 1.0f}, {3.625f, 2.125f}, {7.75f, 5.875f}, {0.0f, 0.0f},
                   {-1.25f, 2.5f}, {8.5f, 3.375f}, {4.5f, 9.0f}, {2.875f, 0.25f}, {6.0f, 4.0f},
                   {5.5f, 2.5f}, {1.125f, 4.75f}};
    float2 cn[n];
    for (int i = 0; i < n; i++) cn[i] = make_float2(c[i].x / W, c[i].y / H);
    float2 *dc;
    float *dout;
    CHECK(cudaMalloc(&dc, sizeof c));
    CHECK(cudaMalloc(&dout, n * sizeof(float)));
    struct { cudaTextureAddressMode m; bool normalized; } cases[] = {
        {cudaAddressModeClamp, false}, {cudaAddressModeBorder, false},
        {cudaAddressModeClamp, true}, {cudaAddressModeWrap, true}};
    for (auto &k : cases) {
        cudaTextureObject_t t = make_tex(a, k.m, cudaFilterModeLinear, k.normalized);
        CHECK(cudaMemcpy(dc, k.normalized ? cn : c, sizeof c, cudaMemcpyHostToDevice));
        sample_2d<<<1, 32>>>(t, dc, dout, n);
        CHECK(cudaGetLastError());
        float out[n];
        CHECK(cudaMemcpy(out, dout, sizeof out, cudaMemcpyDeviceToHost));
        for (int i = 0; i < n; i++) {
            float want = bilinear(k.normalized ? cn[i].x : c[i].x, k.normalized ? cn[i].y : c[i].y,
                                  k.normalized, k.m);
            if (!close_enough(out[i], want)) {
                printf("FAIL: mode %d normalized %d at (%g, %g): got %g, want %g\n", (int)k.m,
                       (int)k.normalized, c[i].x, c[i].y, out[i], want);
                g_failures++;
            }
        }
        CHECK(cudaDestroyTextureObject(t));
    }
    // A texture of one level (an array's): tex2DLod and tex2DGrad sample that level whatever
    // the level of detail.
    {
        cudaTextureObject_t t = make_tex(a, cudaAddressModeClamp, cudaFilterModeLinear, false);
        CHECK(cudaMemcpy(dc, c, sizeof c, cudaMemcpyHostToDevice));
        float *dl;
        CHECK(cudaMalloc(&dl, 2 * n * sizeof(float)));
        sample_2d_lod<<<1, 32>>>(t, dc, dl, n);
        CHECK(cudaGetLastError());
        float l[2 * n];
        CHECK(cudaMemcpy(l, dl, sizeof l, cudaMemcpyDeviceToHost));
        for (int i = 0; i < n; i++) {
            float want = bilinear(c[i].x, c[i].y, false, cudaAddressModeClamp);
            EXPECT(close_enough(l[i], want) && close_enough(l[n + i], want));
        }
        CHECK(cudaFree(dl));
        CHECK(cudaDestroyTextureObject(t));
    }
    // Point filtering picks texel floor(x).
    cudaTextureObject_t tp = make_tex(a, cudaAddressModeClamp, cudaFilterModePoint, false);
    CHECK(cudaMemcpy(dc, c, sizeof c, cudaMemcpyHostToDevice));
    sample_2d<<<1, 32>>>(tp, dc, dout, n);
    float out[n];
    CHECK(cudaMemcpy(out, dout, sizeof out, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++)
        EXPECT(out[i] == fetch((int)floorf(c[i].x), (int)floorf(c[i].y), cudaAddressModeClamp));
    CHECK(cudaDestroyTextureObject(tp));
    // Mirror (normalized coordinates only), point filtering, away from texel boundaries.
    float2 cm[4] = {{1.3f, 0.2f}, {-0.4f, 1.9f}, {2.55f, -1.05f}, {0.45f, 0.6f}};
    CHECK(cudaMemcpy(dc, cm, sizeof cm, cudaMemcpyHostToDevice));
    cudaTextureObject_t tm = make_tex(a, cudaAddressModeMirror, cudaFilterModePoint, true);
    sample_2d<<<1, 32>>>(tm, dc, dout, 4);
    CHECK(cudaMemcpy(out, dout, 4 * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < 4; i++)
        EXPECT(out[i] == fetch((int)floorf(cm[i].x * W), (int)floorf(cm[i].y * H), cudaAddressModeMirror));
    CHECK(cudaDestroyTextureObject(tm));

    CHECK(cudaFreeArray(a));
    CHECK(cudaFreeArray(nullptr));
    CHECK(cudaFree(dh));
    CHECK(cudaFree(dbox));
    CHECK(cudaFree(dc));
    CHECK(cudaFree(dout));
}

static void test_1d_array() {
    const int n = 64;
    float h[n];
    for (int i = 0; i < n; i++) h[i] = (float)(i * 3 % 17);
    cudaChannelFormatDesc fd = cudaCreateChannelDesc<float>();
    cudaArray_t a;
    CHECK(cudaMallocArray(&a, &fd, n));
    CHECK(cudaMemcpy2DToArray(a, 0, 0, h, n * sizeof(float), n * sizeof(float), 1, cudaMemcpyHostToDevice));
    cudaTextureObject_t t = make_tex(a, cudaAddressModeClamp, cudaFilterModeLinear, false);
    float c[5] = {0.5f, 1.0f, 10.25f, 63.5f, 70.0f};
    float *dc, *dout;
    CHECK(cudaMalloc(&dc, sizeof c));
    CHECK(cudaMalloc(&dout, sizeof c));
    CHECK(cudaMemcpy(dc, c, sizeof c, cudaMemcpyHostToDevice));
    sample_1d<<<1, 32>>>(t, dc, dout, 5);
    float out[5];
    CHECK(cudaMemcpy(out, dout, sizeof out, cudaMemcpyDeviceToHost));
    EXPECT(out[0] == h[0]);
    EXPECT(close_enough(out[1], 0.5f * h[0] + 0.5f * h[1]));
    EXPECT(close_enough(out[2], 0.25f * h[9] + 0.75f * h[10]));
    EXPECT(out[3] == h[63] && out[4] == h[63]);
    CHECK(cudaDestroyTextureObject(t));
    CHECK(cudaFreeArray(a));
    CHECK(cudaFree(dc));
    CHECK(cudaFree(dout));
}

static void test_rgba8_and_int() {
    // uchar4 read as normalized floats.
    unsigned char px[H][W][4];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            for (int k = 0; k < 4; k++) px[y][x][k] = (unsigned char)(x * 37 + y * 11 + k * 60);
    cudaChannelFormatDesc fd = cudaCreateChannelDesc<uchar4>();
    cudaArray_t a;
    CHECK(cudaMallocArray(&a, &fd, W, H));
    // The deprecated linear copy spanning rows.
    CHECK(cudaMemcpyToArray(a, 0, 0, px, sizeof px, cudaMemcpyHostToDevice));
    unsigned char back[H][W][4] = {};
    CHECK(cudaMemcpyFromArray(back, a, 0, 0, sizeof back, cudaMemcpyDeviceToHost));
    EXPECT(memcmp(px, back, sizeof px) == 0);
    cudaTextureObject_t t = make_tex(a, cudaAddressModeClamp, cudaFilterModePoint, false, cudaReadModeNormalizedFloat);
    float4 *dout;
    CHECK(cudaMalloc(&dout, W * H * sizeof(float4)));
    sample_rgba8<<<H, W>>>(t, dout, W, H);
    static float4 out[H * W];
    CHECK(cudaMemcpy(out, dout, sizeof out, cudaMemcpyDeviceToHost));
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            float4 v = out[y * W + x];
            EXPECT(close_enough(v.x, px[y][x][0] / 255.0f) && close_enough(v.y, px[y][x][1] / 255.0f) &&
                   close_enough(v.z, px[y][x][2] / 255.0f) && close_enough(v.w, px[y][x][3] / 255.0f));
        }
    CHECK(cudaDestroyTextureObject(t));
    CHECK(cudaFreeArray(a));
    CHECK(cudaFree(dout));

    // Signed integers, border mode: outside reads 0.
    int hi[H][W];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) hi[y][x] = (x - 4) * 1000 + y;
    fd = cudaCreateChannelDesc<int>();
    CHECK(cudaMallocArray(&a, &fd, W, H));
    CHECK(cudaMemcpy2DToArray(a, 0, 0, hi, W * sizeof(int), W * sizeof(int), H, cudaMemcpyHostToDevice));
    t = make_tex(a, cudaAddressModeBorder, cudaFilterModePoint, false);
    float2 c[6] = {{0.5f, 0.5f}, {7.9f, 5.1f}, {-0.5f, 1.0f}, {8.0f, 1.0f}, {3.0f, 8.0f}, {4.2f, 2.7f}};
    int want[6] = {hi[0][0], hi[5][7], 0, 0, 0, hi[2][4]};
    float2 *dc;
    int *di;
    CHECK(cudaMalloc(&dc, sizeof c));
    CHECK(cudaMalloc(&di, sizeof want));
    CHECK(cudaMemcpy(dc, c, sizeof c, cudaMemcpyHostToDevice));
    sample_int<<<1, 32>>>(t, dc, di, 6);
    int got[6];
    CHECK(cudaMemcpy(got, di, sizeof got, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 6; i++) EXPECT(got[i] == want[i]);
    CHECK(cudaDestroyTextureObject(t));
    CHECK(cudaFreeArray(a));
    CHECK(cudaFree(dc));
    CHECK(cudaFree(di));
}

static void test_pitch2d() {
    float *d;
    size_t pitch;
    CHECK(cudaMallocPitch(&d, &pitch, W * sizeof(float), H));
    float h[H][W];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) h[y][x] = texel(x, y);
    CHECK(cudaMemcpy2D(d, pitch, h, W * sizeof(float), W * sizeof(float), H, cudaMemcpyHostToDevice));
    cudaResourceDesc rd = {};
    rd.resType = cudaResourceTypePitch2D;
    rd.res.pitch2D.devPtr = d;
    rd.res.pitch2D.desc = cudaCreateChannelDesc<float>();
    rd.res.pitch2D.width = W;
    rd.res.pitch2D.height = H;
    rd.res.pitch2D.pitchInBytes = pitch;
    cudaTextureDesc td = {};
    td.filterMode = cudaFilterModeLinear;
    td.addressMode[0] = td.addressMode[1] = cudaAddressModeClamp;
    cudaTextureObject_t t;
    CHECK(cudaCreateTextureObject(&t, &rd, &td, nullptr));
    float2 c[3] = {{2.5f, 3.5f}, {3.0f, 1.0f}, {6.75f, 4.25f}};
    float2 *dc;
    float *dout;
    CHECK(cudaMalloc(&dc, sizeof c));
    CHECK(cudaMalloc(&dout, 3 * sizeof(float)));
    CHECK(cudaMemcpy(dc, c, sizeof c, cudaMemcpyHostToDevice));
    sample_2d<<<1, 32>>>(t, dc, dout, 3);
    float out[3];
    CHECK(cudaMemcpy(out, dout, sizeof out, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 3; i++) EXPECT(close_enough(out[i], bilinear(c[i].x, c[i].y, false, cudaAddressModeClamp)));
    CHECK(cudaDestroyTextureObject(t));
    // A pitch that is not a multiple of the texture pitch alignment is refused.
    rd.res.pitch2D.pitchInBytes = W * sizeof(float) + 4;
    EXPECT_ERR(cudaCreateTextureObject(&t, &rd, &td, nullptr), cudaErrorInvalidValue);
    EXPECT(cudaGetLastError() == cudaErrorInvalidValue);
    CHECK(cudaFree(d));
    CHECK(cudaFree(dc));
    CHECK(cudaFree(dout));
}

static void test_3d() {
    const int w = 5, h = 4, dd = 3;
    static float v[dd][h][w], back[dd][h][w];
    for (int z = 0; z < dd; z++)
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) v[z][y][x] = x + 10 * y + 100 * z;
    cudaChannelFormatDesc fd = cudaCreateChannelDesc<float>();
    cudaArray_t a;
    CHECK(cudaMalloc3DArray(&a, &fd, make_cudaExtent(w, h, dd)));
    cudaMemcpy3DParms p = {};
    p.srcPtr = make_cudaPitchedPtr(v, w * sizeof(float), w, h);
    p.dstArray = a;
    p.extent = make_cudaExtent(w, h, dd);
    p.kind = cudaMemcpyHostToDevice;
    CHECK(cudaMemcpy3D(&p));
    cudaTextureObject_t t = make_tex(a, cudaAddressModeClamp, cudaFilterModePoint, false);
    float *dout;
    CHECK(cudaMalloc(&dout, sizeof v));
    sample_3d<<<dd, dim3(w, h)>>>(t, dout, w, h, dd);
    CHECK(cudaMemcpy(back, dout, sizeof back, cudaMemcpyDeviceToHost));
    EXPECT(memcmp(v, back, sizeof v) == 0);
    // Back out of the array: the slice z = 1..2, rows 1..3, columns 2..4, into a host box.
    static float box[2][3][3];
    cudaMemcpy3DParms q = {};
    q.srcArray = a;
    q.srcPos = make_cudaPos(2, 1, 1);
    q.dstPtr = make_cudaPitchedPtr(box, 3 * sizeof(float), 3, 3);
    q.extent = make_cudaExtent(3, 3, 2);
    q.kind = cudaMemcpyDeviceToHost;
    CHECK(cudaMemcpy3D(&q));
    for (int z = 0; z < 2; z++)
        for (int y = 0; y < 3; y++)
            for (int x = 0; x < 3; x++) EXPECT(box[z][y][x] == v[z + 1][y + 1][x + 2]);
    CHECK(cudaDestroyTextureObject(t));
    CHECK(cudaFreeArray(a));
    CHECK(cudaFree(dout));
}

static void test_surfaces() {
    cudaChannelFormatDesc fd = cudaCreateChannelDesc<int>();
    cudaArray_t a;
    CHECK(cudaMallocArray(&a, &fd, W, H, cudaArraySurfaceLoadStore));
    unsigned flags = 0;
    CHECK(cudaArrayGetInfo(nullptr, nullptr, &flags, a));
    EXPECT(flags == cudaArraySurfaceLoadStore);
    cudaResourceDesc rd = {};
    rd.resType = cudaResourceTypeArray;
    rd.res.array.array = a;
    cudaSurfaceObject_t s;
    CHECK(cudaCreateSurfaceObject(&s, &rd));
    surf_write<<<H, W>>>(s, W, H);
    CHECK(cudaGetLastError());
    int back[H][W];
    CHECK(cudaMemcpy2DFromArray(back, W * sizeof(int), a, 0, 0, W * sizeof(int), H, cudaMemcpyDeviceToHost));
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) EXPECT(back[y][x] == x * 1000 + y);
    int *dc, *dz;
    CHECK(cudaMalloc(&dc, sizeof back));
    CHECK(cudaMalloc(&dz, sizeof back));
    surf_read<<<H, W>>>(s, dc, dz, W, H);
    CHECK(cudaGetLastError());
    int clamped[H][W], zeroed[H][W];
    CHECK(cudaMemcpy(clamped, dc, sizeof clamped, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(zeroed, dz, sizeof zeroed, cudaMemcpyDeviceToHost));
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            int nx = x + 1 < W ? x + 1 : W - 1;
            EXPECT(clamped[y][x] == nx * 1000 + y);
            EXPECT(zeroed[y][x] == (x + 1 < W ? (x + 1) * 1000 + y : 0));
        }
    cudaResourceDesc q = {};
    CHECK(cudaGetSurfaceObjectResourceDesc(&q, s));
    EXPECT(q.resType == cudaResourceTypeArray && q.res.array.array == a);
    CHECK(cudaDestroySurfaceObject(s));

    // Array to array.
    cudaArray_t b;
    CHECK(cudaMallocArray(&b, &fd, W, H));
    CHECK(cudaMemcpy2DArrayToArray(b, 0, 0, a, 0, 0, W * sizeof(int), H));
    int back2[H][W];
    CHECK(cudaMemcpy2DFromArray(back2, W * sizeof(int), b, 0, 0, W * sizeof(int), H, cudaMemcpyDeviceToHost));
    EXPECT(memcmp(back, back2, sizeof back) == 0);
    // The deprecated linear form: from (2, 1) in a, to (1, 3) in a narrower array c, across
    // rows of both (positions in bytes, rows of W and W - 2 ints).
    cudaArray_t c;
    CHECK(cudaMallocArray(&c, &fd, W - 2, H));
    CHECK(cudaMemset2D(dc, (W - 2) * sizeof(int), 0, (W - 2) * sizeof(int), H));
    CHECK(cudaMemcpy2DToArray(c, 0, 0, dc, (W - 2) * sizeof(int), (W - 2) * sizeof(int), H,
                              cudaMemcpyDeviceToDevice));
    const int n = 2 * W + 3;  // ints
    CHECK(cudaMemcpyArrayToArray(c, 1 * sizeof(int), 3, a, 2 * sizeof(int), 1, n * sizeof(int),
                                 cudaMemcpyDeviceToDevice));
    static int back3[H][W - 2];
    CHECK(cudaMemcpy2DFromArray(back3, (W - 2) * sizeof(int), c, 0, 0, (W - 2) * sizeof(int), H,
                                cudaMemcpyDeviceToHost));
    for (int k = 0; k < n; k++) {
        int sx = (2 + k) % W, sy = 1 + (2 + k) / W;
        int dx = (1 + k) % (W - 2), dy = 3 + (1 + k) / (W - 2);
        EXPECT(back3[dy][dx] == back[sy][sx]);
    }
    EXPECT(back3[3][0] == 0);  // before the destination's origin
    EXPECT_ERR(cudaMemcpyArrayToArray(c, (W - 1) * sizeof(int), 0, a, 0, 0, 4,
                                      cudaMemcpyDeviceToDevice),
               cudaErrorInvalidValue);
    CHECK(cudaFreeArray(c));
    CHECK(cudaFreeArray(b));
    CHECK(cudaFreeArray(a));

    // A 1-D float surface.
    fd = cudaCreateChannelDesc<float>();
    CHECK(cudaMallocArray(&a, &fd, 40, 0, cudaArraySurfaceLoadStore));
    rd.res.array.array = a;
    CHECK(cudaCreateSurfaceObject(&s, &rd));
    surf_1d<<<1, 40>>>(s, 40);
    float f[40];
    CHECK(cudaMemcpy2DFromArray(f, sizeof f, a, 0, 0, sizeof f, 1, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 40; i++) EXPECT(f[i] == i * 0.25f);
    CHECK(cudaDestroySurfaceObject(s));
    CHECK(cudaFreeArray(a));
    CHECK(cudaFree(dc));
    CHECK(cudaFree(dz));
}

int main() {
    test_linear();
    test_2d();
    test_1d_array();
    test_rgba8_and_int();
    test_pitch2d();
    test_3d();
    test_surfaces();
    CHECK(cudaDeviceSynchronize());
    return finish();
}
