// SPDX-License-Identifier: Apache-2.0 OR MIT
// CUDA arrays, texture and surface objects through the driver API, as a program that mixes
// the runtime's kernels with driver calls does: cuArray3DCreate, cuMemcpy2D and cuMemcpy3D
// with CU_MEMORYTYPE_ARRAY, cuMemcpyHtoA/AtoH, cuArray3DGetDescriptor, cuTexObjectCreate
// (normalized floats from 8-bit texels without CU_TRSF_READ_AS_INTEGER), cuSurfObjectCreate,
// and a kernel launched with cuLaunchKernel that reads the one and writes the other; the
// objects' descriptors read back (cuTexObjectGetResourceDesc, cuTexObjectGetTextureDesc,
// cuSurfObjectGetResourceDesc); cuMemcpyAtoA between the first rows of two arrays; a
// mipmapped array (cuMipmappedArrayCreate, cuMipmappedArrayGetLevel) filled level by level
// and sampled with tex2DLod through a CU_RESOURCE_TYPE_MIPMAPPED_ARRAY texture.
#include <cuda.h>
#include <dlfcn.h>
#include "common.h"
#include "cu_check.h"

__global__ void lod(cudaTextureObject_t t, float *out) {
    int k = threadIdx.x;
    out[k] = tex2DLod<float>(t, 0.1f, 0.1f, (float)k);
}

__global__ void scale(cudaTextureObject_t t, cudaSurfaceObject_t s, int w, int h) {
    int x = threadIdx.x, y = blockIdx.x;
    if (x < w && y < h) {
        float4 v = tex2D<float4>(t, x + 0.5f, y + 0.5f);
        surf2Dwrite(v.x + v.y + v.z + v.w, s, x * (int)sizeof(float), y);
    }
}

static void *lib;
template <typename F> static F sym(const char *name) {
    void *p = dlsym(lib, name);
    if (!p) {
        printf("FAIL: dlsym %s\n", name);
        exit(1);
    }
    return (F)p;
}
// cuda.h defines the short names as their _v2 versions; look those up.
#define SYM(f, name) auto f##_ = sym<decltype(&f)>(name)

int main() {
    CHECK(cudaFree(0));  // the runtime's context, current for the driver calls too
    lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib) {
        printf("FAIL: dlopen libcuda.so.1: %s\n", dlerror());
        return 1;
    }
    SYM(cuArray3DCreate, "cuArray3DCreate_v2");
    SYM(cuArray3DGetDescriptor, "cuArray3DGetDescriptor_v2");
    SYM(cuArrayDestroy, "cuArrayDestroy");
    SYM(cuMemcpy2D, "cuMemcpy2D_v2");
    SYM(cuMemcpy3D, "cuMemcpy3D_v2");
    SYM(cuMemcpyHtoA, "cuMemcpyHtoA_v2");
    SYM(cuMemcpyAtoH, "cuMemcpyAtoH_v2");
    SYM(cuTexObjectCreate, "cuTexObjectCreate");
    SYM(cuTexObjectDestroy, "cuTexObjectDestroy");
    SYM(cuSurfObjectCreate, "cuSurfObjectCreate");
    SYM(cuSurfObjectDestroy, "cuSurfObjectDestroy");
    SYM(cuLaunchKernel, "cuLaunchKernel");
    SYM(cuCtxSynchronize, "cuCtxSynchronize");
    SYM(cuTexObjectGetResourceDesc, "cuTexObjectGetResourceDesc");
    SYM(cuTexObjectGetTextureDesc, "cuTexObjectGetTextureDesc");
    SYM(cuSurfObjectGetResourceDesc, "cuSurfObjectGetResourceDesc");
    SYM(cuMemcpyAtoA, "cuMemcpyAtoA_v2");
    SYM(cuMipmappedArrayCreate, "cuMipmappedArrayCreate");
    SYM(cuMipmappedArrayGetLevel, "cuMipmappedArrayGetLevel");
    SYM(cuMipmappedArrayDestroy, "cuMipmappedArrayDestroy");

    const int W = 12, H = 5;
    static unsigned char rgba[H][W][4];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            for (int k = 0; k < 4; k++) rgba[y][x][k] = (unsigned char)(x * 20 + y * 7 + k * 31);

    CUDA_ARRAY3D_DESCRIPTOR d = {};
    d.Width = W;
    d.Height = H;
    d.Format = CU_AD_FORMAT_UNSIGNED_INT8;
    d.NumChannels = 4;
    CUarray src;
    CU(cuArray3DCreate_(&src, &d));
    CUDA_ARRAY3D_DESCRIPTOR q = {};
    CU(cuArray3DGetDescriptor_(&q, src));
    EXPECT(q.Width == W && q.Height == H && q.Depth == 0 && q.Format == CU_AD_FORMAT_UNSIGNED_INT8 &&
           q.NumChannels == 4 && q.Flags == 0);
    // Rows 1-4 with cuMemcpy2D, row 0 with cuMemcpyHtoA in two pieces (a byte offset into
    // the array). The 1-D copies reach the first row only, as NVIDIA's driver has them.
    CUDA_MEMCPY2D c = {};
    c.srcMemoryType = CU_MEMORYTYPE_HOST;
    c.srcHost = rgba[1];
    c.srcPitch = W * 4;
    c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    c.dstArray = src;
    c.dstY = 1;
    c.WidthInBytes = W * 4;
    c.Height = H - 1;
    CU(cuMemcpy2D_(&c));
    CU(cuMemcpyHtoA_(src, 0, rgba[0], W * 2));
    CU(cuMemcpyHtoA_(src, W * 2, rgba[0][W / 2], W * 2));
    EXPECT(cuMemcpyHtoA_(src, W * 2, rgba[0][W / 2], W * 2 + 4) == CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuMemcpyHtoA_(src, W * 4, rgba[1], W * 4) == CUDA_ERROR_INVALID_VALUE);
    unsigned char row0[W][4] = {};
    CU(cuMemcpyAtoH_(row0, src, 0, sizeof row0));
    EXPECT(memcmp(row0, rgba[0], sizeof row0) == 0);
    EXPECT(cuMemcpyAtoH_(row0, src, 4, sizeof row0) == CUDA_ERROR_INVALID_VALUE);
    unsigned char back[H][W][4] = {};
    CUDA_MEMCPY2D b = {};
    b.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    b.srcArray = src;
    b.dstMemoryType = CU_MEMORYTYPE_HOST;
    b.dstHost = back;
    b.dstPitch = W * 4;
    b.WidthInBytes = W * 4;
    b.Height = H;
    CU(cuMemcpy2D_(&b));
    EXPECT(memcmp(back, rgba, sizeof back) == 0);

    CUDA_ARRAY3D_DESCRIPTOR sd = {};
    sd.Width = W;
    sd.Height = H;
    sd.Format = CU_AD_FORMAT_FLOAT;
    sd.NumChannels = 1;
    sd.Flags = CUDA_ARRAY3D_SURFACE_LDST;
    CUarray dst;
    CU(cuArray3DCreate_(&dst, &sd));

    CUDA_RESOURCE_DESC rd = {};
    rd.resType = CU_RESOURCE_TYPE_ARRAY;
    rd.res.array.hArray = src;
    CUDA_TEXTURE_DESC td = {};
    td.addressMode[0] = td.addressMode[1] = CU_TR_ADDRESS_MODE_CLAMP;
    td.filterMode = CU_TR_FILTER_MODE_POINT;
    td.flags = 0;  // 8-bit texels read as floats in [0, 1]
    CUtexObject tex;
    CU(cuTexObjectCreate_(&tex, &rd, &td, nullptr));
    CUDA_RESOURCE_DESC rs = {};
    rs.resType = CU_RESOURCE_TYPE_ARRAY;
    rs.res.array.hArray = dst;
    CUsurfObject surf;
    CU(cuSurfObjectCreate_(&surf, &rs));

    CUfunction f;
    CHECK(cudaGetFuncBySymbol(&f, (const void *)scale));
    int w = W, h = H;
    void *args[] = {&tex, &surf, &w, &h};
    CU(cuLaunchKernel_(f, H, 1, 1, W, 1, 1, 0, nullptr, args, nullptr));
    CU(cuCtxSynchronize_());

    static float out[H][W];
    CUDA_MEMCPY3D m = {};
    m.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    m.srcArray = dst;
    m.dstMemoryType = CU_MEMORYTYPE_HOST;
    m.dstHost = out;
    m.dstPitch = W * sizeof(float);
    m.dstHeight = H;
    m.WidthInBytes = W * sizeof(float);
    m.Height = H;
    m.Depth = 1;
    CU(cuMemcpy3D_(&m));
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            float want = 0;
            for (int k = 0; k < 4; k++) want += rgba[y][x][k] / 255.0f;
            EXPECT(close_enough(out[y][x], want));
        }

    // The descriptors the objects were made with.
    CUDA_RESOURCE_DESC qr;
    memset(&qr, 0xa5, sizeof qr);
    CU(cuTexObjectGetResourceDesc_(&qr, tex));
    EXPECT(qr.resType == CU_RESOURCE_TYPE_ARRAY && qr.res.array.hArray == src);
    CUDA_TEXTURE_DESC qt;
    memset(&qt, 0xa5, sizeof qt);
    CU(cuTexObjectGetTextureDesc_(&qt, tex));
    EXPECT(qt.addressMode[0] == CU_TR_ADDRESS_MODE_CLAMP && qt.filterMode == CU_TR_FILTER_MODE_POINT &&
           (qt.flags & (CU_TRSF_READ_AS_INTEGER | CU_TRSF_NORMALIZED_COORDINATES)) == 0);
    CU(cuSurfObjectGetResourceDesc_(&qr, surf));
    EXPECT(qr.resType == CU_RESOURCE_TYPE_ARRAY && qr.res.array.hArray == dst);
    // A handle that names no object: vcuda refuses; NVIDIA's driver is not asked.
    if (getenv("VCUDA_SOCKET")) EXPECT(cuTexObjectGetResourceDesc_(&qr, surf + 12345) != CUDA_SUCCESS);

    // cuMemcpyAtoA: texels 1..4 of src's first row (4 bytes each, as dst's floats) to
    // dst's first row at byte 8; whole elements within the first rows only.
    CU(cuMemcpyAtoA_(dst, 8, src, 4, 16));
    unsigned char drow[W][4];
    CU(cuMemcpyAtoH_(drow, dst, 0, sizeof drow));
    EXPECT(memcmp(drow[2], rgba[0][1], 16) == 0);
    EXPECT(cuMemcpyAtoA_(dst, 8, src, 4, 6) == CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuMemcpyAtoA_(dst, W * 4 - 4, src, 0, 8) == CUDA_ERROR_INVALID_VALUE);

    CU(cuTexObjectDestroy_(tex));
    CU(cuSurfObjectDestroy_(surf));
    CU(cuArrayDestroy_(src));
    CU(cuArrayDestroy_(dst));
    // Twice: vcuda refuses; NVIDIA's driver crashes (undefined behaviour), so only under vcuda.
    if (getenv("VCUDA_SOCKET")) EXPECT(cuArrayDestroy_(dst) != CUDA_SUCCESS);

    // A mipmapped 8 x 8 float array of 4 levels; every texel of level k holds k + 1.
    CUDA_ARRAY3D_DESCRIPTOR md = {};
    md.Width = 8;
    md.Height = 8;
    md.Format = CU_AD_FORMAT_FLOAT;
    md.NumChannels = 1;
    CUmipmappedArray mm;
    CU(cuMipmappedArrayCreate_(&mm, &md, 4));
    for (unsigned k = 0; k < 4; k++) {
        CUarray level;
        CU(cuMipmappedArrayGetLevel_(&level, mm, k));
        CUDA_ARRAY3D_DESCRIPTOR ld = {};
        CU(cuArray3DGetDescriptor_(&ld, level));
        EXPECT(ld.Width == (8u >> k) && ld.Height == (8u >> k) && ld.Format == CU_AD_FORMAT_FLOAT);
        float texels[64];
        for (float &v : texels) v = (float)(k + 1);
        CUDA_MEMCPY2D lc = {};
        lc.srcMemoryType = CU_MEMORYTYPE_HOST;
        lc.srcHost = texels;
        lc.srcPitch = (8 >> k) * sizeof(float);
        lc.dstMemoryType = CU_MEMORYTYPE_ARRAY;
        lc.dstArray = level;
        lc.WidthInBytes = (8 >> k) * sizeof(float);
        lc.Height = 8 >> k;
        CU(cuMemcpy2D_(&lc));
    }
    CUDA_RESOURCE_DESC mr = {};
    mr.resType = CU_RESOURCE_TYPE_MIPMAPPED_ARRAY;
    mr.res.mipmap.hMipmappedArray = mm;
    CUDA_TEXTURE_DESC mt = {};
    mt.addressMode[0] = mt.addressMode[1] = CU_TR_ADDRESS_MODE_CLAMP;
    mt.filterMode = CU_TR_FILTER_MODE_POINT;
    mt.mipmapFilterMode = CU_TR_FILTER_MODE_POINT;
    mt.maxMipmapLevelClamp = 3;
    mt.flags = CU_TRSF_NORMALIZED_COORDINATES;
    CUtexObject mtex;
    CU(cuTexObjectCreate_(&mtex, &mr, &mt, nullptr));
    CUDA_RESOURCE_DESC mq;
    CU(cuTexObjectGetResourceDesc_(&mq, mtex));
    EXPECT(mq.resType == CU_RESOURCE_TYPE_MIPMAPPED_ARRAY && mq.res.mipmap.hMipmappedArray == mm);
    CUDA_TEXTURE_DESC mqt;
    CU(cuTexObjectGetTextureDesc_(&mqt, mtex));
    EXPECT(mqt.maxMipmapLevelClamp == 3 && mqt.mipmapFilterMode == CU_TR_FILTER_MODE_POINT &&
           (mqt.flags & CU_TRSF_NORMALIZED_COORDINATES));
    float *dl;
    CHECK(cudaMalloc(&dl, 4 * sizeof(float)));
    void *largs[] = {&mtex, &dl};
    CUfunction lf;
    CHECK(cudaGetFuncBySymbol(&lf, (const void *)lod));
    CU(cuLaunchKernel_(lf, 1, 1, 1, 4, 1, 1, 0, nullptr, largs, nullptr));
    float levels[4];
    CHECK(cudaMemcpy(levels, dl, sizeof levels, cudaMemcpyDeviceToHost));
    for (int k = 0; k < 4; k++) EXPECT(levels[k] == k + 1);
    CU(cuTexObjectDestroy_(mtex));
    CU(cuMipmappedArrayDestroy_(mm));
    CHECK(cudaFree(dl));
    return finish();
}
