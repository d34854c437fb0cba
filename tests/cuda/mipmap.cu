// SPDX-License-Identifier: Apache-2.0 OR MIT
// Mipmapped arrays: cudaMallocMipmappedArray (the level count clamped to what the extent
// allows), cudaGetMipmappedArrayLevel (each level an array of its own, filled and read back
// with cudaMemcpy2DToArray / cudaMemcpy3D), and texture objects over them sampled with
// tex2DLod, tex2DGrad, tex2D, tex3DLod and tex2DLayeredLod: point and linear filtering
// between levels, the level bias and clamps, linear filtering within a level; resource
// views (a range of levels, a range of layers, another format). Texel (x, y)
// of level k holds 1000 k + 16 y + x, so every fetch is checked exactly against a host value
// (the weights used are multiples of 1/4).
#include "common.h"

struct Fetch {
    float x, y, lod;
    float gx, gy;  // tex2DGrad: gradients (gx, 0) along x and (0, gy) along y
};

__global__ void sample(cudaTextureObject_t t, const Fetch *f, float *out, int n, int form) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Fetch c = f[i];
    if (form == 0)
        out[i] = tex2DLod<float>(t, c.x, c.y, c.lod);
    else if (form == 1)
        out[i] = tex2DGrad<float>(t, c.x, c.y, make_float2(c.gx, 0), make_float2(0, c.gy));
    else
        out[i] = tex2D<float>(t, c.x, c.y);
}

__global__ void sample_3d(cudaTextureObject_t t, float *out) {
    // Level 1 of a 4 x 4 x 4 array is 2 x 2 x 2: texel (1, 0, 1) at its centre.
    out[0] = tex3DLod<float>(t, 0.75f, 0.25f, 0.75f, 1.0f);
}

__global__ void sample_layered(cudaTextureObject_t t, float *out) {
    // Level 1 of 8 x 8 layers is 4 x 4: texel (3, 2) of layer 2.
    out[0] = tex2DLayeredLod<float>(t, 3.5f / 4, 2.5f / 4, 2, 1.0f);
}

__global__ void bits(cudaTextureObject_t t, float x, float y, unsigned *out) {
    out[0] = tex2DLod<unsigned>(t, x, y, 0);
}

__global__ void sample_layered_view(cudaTextureObject_t t, float *out) {
    // Texel (3, 2) of the view's layer 1, level 0.
    out[0] = tex2DLayeredLod<float>(t, 3.5f / 4, 2.5f / 4, 1, 0.0f);
}

__global__ void levels(cudaTextureObject_t t, float *out) {
    // A texel-centre fetch of level 0 with no level of detail, for comparison.
    out[0] = tex2D<float>(t, 0.5f / 16, 0.5f / 8);
}

static float texel(int k, int x, int y) { return 1000.0f * k + 16 * y + x; }

static cudaTextureObject_t texture_of(cudaMipmappedArray_t m, cudaTextureFilterMode filter,
                                      cudaTextureFilterMode mip_filter, float bias, float lo,
                                      float hi, const cudaResourceViewDesc *view = nullptr) {
    cudaResourceDesc r = {};
    r.resType = cudaResourceTypeMipmappedArray;
    r.res.mipmap.mipmap = m;
    cudaTextureDesc d = {};
    d.addressMode[0] = d.addressMode[1] = d.addressMode[2] = cudaAddressModeClamp;
    d.filterMode = filter;
    d.readMode = cudaReadModeElementType;
    d.normalizedCoords = 1;
    d.mipmapFilterMode = mip_filter;
    d.mipmapLevelBias = bias;
    d.minMipmapLevelClamp = lo;
    d.maxMipmapLevelClamp = hi;
    cudaTextureObject_t t;
    CHECK(cudaCreateTextureObject(&t, &r, &d, view));
    return t;
}

static void run(cudaTextureObject_t t, const Fetch *f, float *out, int n, int form) {
    Fetch *df;
    float *dout;
    CHECK(cudaMalloc(&df, n * sizeof(Fetch)));
    CHECK(cudaMalloc(&dout, n * sizeof(float)));
    CHECK(cudaMemcpy(df, f, n * sizeof(Fetch), cudaMemcpyHostToDevice));
    sample<<<1, 64>>>(t, df, dout, n, form);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(out, dout, n * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaFree(df));
    CHECK(cudaFree(dout));
}

// Normalized coordinates of texel (x, y)'s centre in level k of a 16 x 8 level 0.
static float u(int k, int x) { return (x + 0.5f) / (16 >> k); }
static float v(int k, int y) { return (y + 0.5f) / (8 >> k); }

int main() {
    cudaChannelFormatDesc f = cudaCreateChannelDesc<float>();

    // 16 x 8 asks for 9 levels and gets 1 + floor(log2 16) = 5: 16x8, 8x4, 4x2, 2x1, 1x1.
    cudaMipmappedArray_t m;
    CHECK(cudaMallocMipmappedArray(&m, &f, make_cudaExtent(16, 8, 0), 9, 0));
    // Only mipmapped arrays made with cudaArrayDeferredMapping have requirements (as for
    // arrays; plain nvcc output asks libcuda.so.1).
    cudaArrayMemoryRequirements req = {};
    EXPECT_ERR(cudaMipmappedArrayGetMemoryRequirements(&req, m, 0), cudaErrorInvalidValue);
    const int L = 5;
    for (int k = 0; k < L; k++) {
        cudaArray_t a;
        CHECK(cudaGetMipmappedArrayLevel(&a, m, k));
        cudaChannelFormatDesc got;
        cudaExtent e;
        unsigned flags;
        CHECK(cudaArrayGetInfo(&got, &e, &flags, a));
        int w = 16 >> k, h = (8 >> k) > 0 ? (8 >> k) : 1;
        EXPECT(e.width == (size_t)w && e.height == (size_t)h && e.depth == 0);
        EXPECT(got.x == 32 && got.f == cudaChannelFormatKindFloat);
        float host[8][16];
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) host[y][x] = texel(k, x, y);
        CHECK(cudaMemcpy2DToArray(a, 0, 0, host, sizeof host[0], w * sizeof(float), h,
                                  cudaMemcpyHostToDevice));
    }
    cudaArray_t extra;
    EXPECT_ERR(cudaGetMipmappedArrayLevel(&extra, m, L), cudaErrorInvalidValue);
    cudaGetLastError();

    // Level 2 back, whole.
    {
        cudaArray_t a2;
        CHECK(cudaGetMipmappedArrayLevel(&a2, m, 2));
        float back[2][4];
        CHECK(cudaMemcpy2DFromArray(back, sizeof back[0], a2, 0, 0, 4 * sizeof(float), 2,
                                    cudaMemcpyDeviceToHost));
        for (int y = 0; y < 2; y++)
            for (int x = 0; x < 4; x++) EXPECT(back[y][x] == texel(2, x, y));
    }

    float out[16];
    // Point between levels: each level's texels at their centres; lod rounds to the nearest
    // level (1.4 -> 1, 2.6 -> 3), past the last clamps to it, below 0 is level 0.
    cudaTextureObject_t tp = texture_of(m, cudaFilterModePoint, cudaFilterModePoint, 0, 0, L - 1);
    {
        Fetch fs[] = {
            {u(0, 5), v(0, 3), 0},    {u(1, 2), v(1, 1), 1},     {u(2, 3), v(2, 1), 2},
            {u(3, 1), v(3, 0), 3},    {u(4, 0), v(4, 0), 4},     {u(1, 6), v(1, 3), 1.4f},
            {u(3, 1), v(3, 0), 2.6f}, {u(4, 0), v(4, 0), 9},     {u(0, 7), v(0, 2), -3},
        };
        float want[] = {
            texel(0, 5, 3), texel(1, 2, 1), texel(2, 3, 1), texel(3, 1, 0), texel(4, 0, 0),
            texel(1, 6, 3), texel(3, 1, 0), texel(4, 0, 0), texel(0, 7, 2),
        };
        int n = sizeof fs / sizeof fs[0];
        run(tp, fs, out, n, 0);
        for (int i = 0; i < n; i++) {
            if (out[i] != want[i]) printf("point %d: %g, want %g\n", i, out[i], want[i]);
            EXPECT(out[i] == want[i]);
        }
    }

    // Linear between levels at (0.03, 0.05): texel (0, 0) of levels 1 and 2.
    cudaTextureObject_t tl = texture_of(m, cudaFilterModePoint, cudaFilterModeLinear, 0, 0, L - 1);
    {
        Fetch fs[] = {{0.03f, 0.05f, 1.5f}, {0.03f, 0.05f, 1.25f}, {0.03f, 0.05f, 1.0f}};
        float want[] = {0.5f * texel(1, 0, 0) + 0.5f * texel(2, 0, 0),
                        0.75f * texel(1, 0, 0) + 0.25f * texel(2, 0, 0), texel(1, 0, 0)};
        run(tl, fs, out, 3, 0);
        for (int i = 0; i < 3; i++) {
            if (out[i] != want[i]) printf("linear %d: %g, want %g\n", i, out[i], want[i]);
            EXPECT(out[i] == want[i]);
        }
    }

    // Bias 1, clamps [0.25, 3]: lod 0 reads level 1, lod 9 level 3, lod -5 the lower clamp
    // (level 0, the nearest).
    cudaTextureObject_t tb = texture_of(m, cudaFilterModePoint, cudaFilterModePoint, 1, 0.25f, 3);
    {
        Fetch fs[] = {{u(1, 4), v(1, 2), 0}, {u(3, 1), v(3, 0), 9}, {u(0, 9), v(0, 6), -5}};
        float want[] = {texel(1, 4, 2), texel(3, 1, 0), texel(0, 9, 6)};
        run(tb, fs, out, 3, 0);
        for (int i = 0; i < 3; i++) {
            if (out[i] != want[i]) printf("bias %d: %g, want %g\n", i, out[i], want[i]);
            EXPECT(out[i] == want[i]);
        }
    }

    // Gradients in level 0's texels: one texel per step is level 0, four are level 2.
    {
        Fetch fs[] = {{u(0, 3), v(0, 3), 0, 1.0f / 16, 1.0f / 8},
                      {u(2, 1), v(2, 1), 0, 4.0f / 16, 0},
                      {u(1, 5), v(1, 2), 0, 0, 2.0f / 8}};
        float want[] = {texel(0, 3, 3), texel(2, 1, 1), texel(1, 5, 2)};
        run(tp, fs, out, 3, 1);
        for (int i = 0; i < 3; i++) {
            if (out[i] != want[i]) printf("grad %d: %g, want %g\n", i, out[i], want[i]);
            EXPECT(out[i] == want[i]);
        }
    }

    // tex2D has no level of detail: level 0 (after the bias: level 1 for tb).
    {
        Fetch f0[] = {{u(0, 4), v(0, 6), 0}};
        run(tp, f0, out, 1, 2);
        EXPECT(out[0] == texel(0, 4, 6));
        Fetch f1[] = {{u(1, 2), v(1, 3), 0}};
        run(tb, f1, out, 1, 2);
        EXPECT(out[0] == texel(1, 2, 3));
    }

    // Linear filtering within level 1: halfway between texels (0, 0) and (1, 0).
    cudaTextureObject_t tf = texture_of(m, cudaFilterModeLinear, cudaFilterModePoint, 0, 0, L - 1);
    {
        Fetch fs[] = {{1.0f / 8, 0.5f / 4, 1}};
        run(tf, fs, out, 1, 0);
        EXPECT(out[0] == 0.5f * texel(1, 0, 0) + 0.5f * texel(1, 1, 0));
    }

    // The object's resource is the mipmapped array.
    {
        cudaResourceDesc r;
        CHECK(cudaGetTextureObjectResourceDesc(&r, tp));
        EXPECT(r.resType == cudaResourceTypeMipmappedArray && r.res.mipmap.mipmap == m);
        cudaTextureDesc d;
        CHECK(cudaGetTextureObjectTextureDesc(&d, tb));
        EXPECT(d.mipmapLevelBias == 1 && d.minMipmapLevelClamp == 0.25f &&
               d.maxMipmapLevelClamp == 3);
    }

    // A view of levels 1 and 2: its level 0 is the array's level 1, and it ends at 2.
    cudaResourceViewDesc view = {};
    view.format = cudaResViewFormatNone;
    view.width = 16;
    view.height = 8;
    view.firstMipmapLevel = 1;
    view.lastMipmapLevel = 2;
    cudaTextureObject_t tv = texture_of(m, cudaFilterModePoint, cudaFilterModePoint, 0, 0, L - 1, &view);
    {
        Fetch fs[] = {{u(1, 3), v(1, 2), 0}, {u(2, 1), v(2, 1), 1}, {u(2, 2), v(2, 0), 3}};
        float want[] = {texel(1, 3, 2), texel(2, 1, 1), texel(2, 2, 0)};
        run(tv, fs, out, 3, 0);
        for (int i = 0; i < 3; i++) {
            if (out[i] != want[i]) printf("view %d: %g, want %g\n", i, out[i], want[i]);
            EXPECT(out[i] == want[i]);
        }
        cudaResourceViewDesc back;
        CHECK(cudaGetTextureObjectResourceViewDesc(&back, tv));
        EXPECT(back.firstMipmapLevel == 1 && back.lastMipmapLevel == 2 && back.width == 16);
        // Past the last level, or another extent: refused.
        cudaResourceViewDesc bad = view;
        bad.lastMipmapLevel = L;
        cudaResourceDesc r = {};
        r.resType = cudaResourceTypeMipmappedArray;
        r.res.mipmap.mipmap = m;
        cudaTextureDesc d = {};
        d.normalizedCoords = 1;
        cudaTextureObject_t none;
        EXPECT_ERR(cudaCreateTextureObject(&none, &r, &d, &bad), cudaErrorInvalidValue);
        bad = view;
        bad.width = 8;
        EXPECT_ERR(cudaCreateTextureObject(&none, &r, &d, &bad), cudaErrorInvalidValue);
        cudaGetLastError();
    }

    float *dout;
    CHECK(cudaMalloc(&dout, sizeof(float)));

    // The same texels as 32-bit unsigned integers: a float's bits.
    {
        cudaResourceViewDesc uv = view;
        uv.format = cudaResViewFormatUnsignedInt1;
        uv.firstMipmapLevel = uv.lastMipmapLevel = 0;
        cudaTextureObject_t tu = texture_of(m, cudaFilterModePoint, cudaFilterModePoint, 0, 0, 0, &uv);
        unsigned *du, got;
        CHECK(cudaMalloc(&du, sizeof(unsigned)));
        bits<<<1, 1>>>(tu, u(0, 6), v(0, 5), du);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpy(&got, du, sizeof got, cudaMemcpyDeviceToHost));
        float want = texel(0, 6, 5);
        unsigned want_bits;
        memcpy(&want_bits, &want, sizeof want_bits);
        EXPECT(got == want_bits);
        CHECK(cudaDestroyTextureObject(tu));
        CHECK(cudaFree(du));
    }

    // 3-D: 4 x 4 x 4, 3 levels; level 1 (2 x 2 x 2) filled with cudaMemcpy3D.
    {
        cudaMipmappedArray_t m3;
        CHECK(cudaMallocMipmappedArray(&m3, &f, make_cudaExtent(4, 4, 4), 3, 0));
        cudaArray_t a;
        CHECK(cudaGetMipmappedArrayLevel(&a, m3, 1));
        cudaExtent e;
        CHECK(cudaArrayGetInfo(nullptr, &e, nullptr, a));
        EXPECT(e.width == 2 && e.height == 2 && e.depth == 2);
        float host[2][2][2];
        for (int z = 0; z < 2; z++)
            for (int y = 0; y < 2; y++)
                for (int x = 0; x < 2; x++) host[z][y][x] = 100 * z + 10 * y + x;
        cudaMemcpy3DParms p = {};
        p.srcPtr = make_cudaPitchedPtr(host, 2 * sizeof(float), 2, 2);
        p.dstArray = a;
        p.extent = make_cudaExtent(2, 2, 2);
        p.kind = cudaMemcpyHostToDevice;
        CHECK(cudaMemcpy3D(&p));
        cudaTextureObject_t t3 = texture_of(m3, cudaFilterModePoint, cudaFilterModePoint, 0, 0, 2);
        sample_3d<<<1, 1>>>(t3, dout);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpy(out, dout, sizeof(float), cudaMemcpyDeviceToHost));
        EXPECT(out[0] == 101);
        CHECK(cudaDestroyTextureObject(t3));
        CHECK(cudaFreeMipmappedArray(m3));
    }

    // 2-D layered: 8 x 8, 3 layers, 2 levels; layers are not halved.
    {
        cudaMipmappedArray_t ml;
        CHECK(cudaMallocMipmappedArray(&ml, &f, make_cudaExtent(8, 8, 3), 2, cudaArrayLayered));
        cudaArray_t a;
        CHECK(cudaGetMipmappedArrayLevel(&a, ml, 1));
        cudaExtent e;
        CHECK(cudaArrayGetInfo(nullptr, &e, nullptr, a));
        EXPECT(e.width == 4 && e.height == 4 && e.depth == 3);
        float host[3][4][4];
        for (int l = 0; l < 3; l++)
            for (int y = 0; y < 4; y++)
                for (int x = 0; x < 4; x++) host[l][y][x] = 100 * l + 10 * y + x;
        cudaMemcpy3DParms p = {};
        p.srcPtr = make_cudaPitchedPtr(host, 4 * sizeof(float), 4, 4);
        p.dstArray = a;
        p.extent = make_cudaExtent(4, 4, 3);
        p.kind = cudaMemcpyHostToDevice;
        CHECK(cudaMemcpy3D(&p));
        cudaTextureObject_t tl2 = texture_of(ml, cudaFilterModePoint, cudaFilterModePoint, 0, 0, 1);
        sample_layered<<<1, 1>>>(tl2, dout);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpy(out, dout, sizeof(float), cudaMemcpyDeviceToHost));
        EXPECT(out[0] == 223);
        CHECK(cudaDestroyTextureObject(tl2));
        // A view of level 1, layers 1 and 2: its layer 1 is the array's layer 2.
        cudaResourceViewDesc lv = {};
        lv.width = 8;
        lv.height = 8;
        lv.depth = 3;
        lv.firstMipmapLevel = lv.lastMipmapLevel = 1;
        lv.firstLayer = 1;
        lv.lastLayer = 2;
        cudaTextureObject_t tl3 = texture_of(ml, cudaFilterModePoint, cudaFilterModePoint, 0, 0, 0, &lv);
        sample_layered_view<<<1, 1>>>(tl3, dout);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpy(out, dout, sizeof(float), cudaMemcpyDeviceToHost));
        EXPECT(out[0] == 223);
        CHECK(cudaDestroyTextureObject(tl3));
        CHECK(cudaFreeMipmappedArray(ml));
    }

    // Level 0 through tex2D matches its texel.
    levels<<<1, 1>>>(tp, dout);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(out, dout, sizeof(float), cudaMemcpyDeviceToHost));
    EXPECT(out[0] == texel(0, 0, 0));

    for (cudaTextureObject_t t : {tp, tl, tb, tf, tv}) CHECK(cudaDestroyTextureObject(t));
    CHECK(cudaFreeMipmappedArray(m));
    CHECK(cudaFree(dout));
    return finish();
}
