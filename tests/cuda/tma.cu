// SPDX-License-Identifier: Apache-2.0 OR MIT
// Hopper's tensor memory accelerator the way CUTLASS-style kernels use it: tensor maps made
// with cuTensorMapEncodeTiled and cuTensorMapReplaceAddress (found with
// cudaGetDriverEntryPoint) and passed as __grid_constant__ parameters; cp.async.bulk.tensor
// loads completing on an mbarrier's transaction count, two phases per kernel (boxes partly
// and wholly out of bounds, zero and NaN fill, a traversal stride, the 128-byte swizzle); a
// bulk tensor store that leaves out-of-bounds elements alone; plain cp.async.bulk both ways;
// and a map changed in a kernel with tensormap.replace, published to global memory with
// tensormap.cp_fenceproxy and used from there. The driver's argument checks too.
// vcuda-test: arch=90a
#include <cuda.h>
#include "common.h"

#define W 100
#define H 30
#define PITCH 128 // floats per row: 512 bytes
#define BX 32
#define BY 8
#define BOX (BX * BY)

typedef CUresult (*EncodeTiled)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
                                const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,
                                const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,
                                CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
typedef CUresult (*ReplaceAddress)(CUtensorMap *, void *);

__device__ unsigned sa(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

__device__ void bar_init(unsigned b, unsigned n) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(b), "r"(n) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

__device__ void bar_expect(unsigned b, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b), "r"(bytes)
                 : "memory");
}

__device__ void bar_wait(unsigned b, unsigned parity) {
    unsigned done;
    do {
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; "
                     "selp.u32 %0, 1, 0, p; }"
                     : "=r"(done)
                     : "r"(b), "r"(parity)
                     : "memory");
    } while (!done);
}

// Two box loads through `map` (a parameter's or global memory's address), one phase of the
// barrier each, each box copied out raw (swizzled as it landed) after sentinels of -1.
__device__ void load_two(const void *map, int x0, int y0, int x1, int y1, unsigned bytes,
                         float *out) {
    __shared__ alignas(1024) float box[BOX];
    __shared__ alignas(8) unsigned long long bar;
    unsigned b = sa(&bar);
    if (threadIdx.x == 0) bar_init(b, 1);
    for (int k = 0; k < 2; k++) {
        for (int i = threadIdx.x; i < BOX; i += blockDim.x) box[i] = -1.0f;
        __syncthreads();
        if (threadIdx.x == 0) {
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
            bar_expect(b, bytes);
            asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::"
                         "complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(sa(box)),
                         "l"(map), "r"(k ? x1 : x0), "r"(k ? y1 : y0), "r"(b)
                         : "memory");
        }
        bar_wait(b, k);
        for (int i = threadIdx.x; i < BOX; i += blockDim.x) out[k * BOX + i] = box[i];
        __syncthreads();
    }
}

__global__ void load_box(const __grid_constant__ CUtensorMap map, int x0, int y0, int x1,
                         int y1, unsigned bytes, float *out) {
    load_two(&map, x0, y0, x1, y1, bytes, out);
}

__global__ void load_box_global(const CUtensorMap *map, int x0, int y0, int x1, int y1,
                                unsigned bytes, float *out) {
    asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" ::"l"(map) : "memory");
    load_two(map, x0, y0, x1, y1, bytes, out);
}

__global__ void store_box(const __grid_constant__ CUtensorMap map, int x, int y) {
    __shared__ alignas(128) float box[BOX];
    for (int i = threadIdx.x; i < BOX; i += blockDim.x) box[i] = 100000.0f + i;
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], "
                     "[%3];" ::"l"(&map),
                     "r"(x), "r"(y), "r"(sa(box))
                     : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
}

// Global -> shared with an mbarrier, doubled, shared -> global in a bulk group.
__global__ void bulk_round_trip(const float *src, float *dst, unsigned bytes) {
    __shared__ alignas(128) float buf[256];
    __shared__ alignas(8) unsigned long long bar;
    unsigned b = sa(&bar);
    if (threadIdx.x == 0) bar_init(b, 1);
    __syncthreads();
    if (threadIdx.x == 0) {
        bar_expect(b, bytes);
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], "
                     "[%1], %2, [%3];" ::"r"(sa(buf)),
                     "l"(src), "r"(bytes), "r"(b)
                     : "memory");
    }
    bar_wait(b, 0);
    for (unsigned i = threadIdx.x; i < bytes / 4; i += blockDim.x) buf[i] *= 2.0f;
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst),
                     "r"(sa(buf)), "r"(bytes)
                     : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
}

// Copies `map` into shared memory, points it at `base` with `rows` rows there, and publishes
// it at `gmap` (one warp).
__global__ void replace_map(const __grid_constant__ CUtensorMap map, CUtensorMap *gmap,
                            const float *base, unsigned rows) {
    __shared__ alignas(128) CUtensorMap sm;
    if (threadIdx.x < 16)
        ((unsigned long long *)&sm)[threadIdx.x] =
            ((const unsigned long long *)&map)[threadIdx.x];
    __syncwarp();
    if (threadIdx.x == 0) {
        asm volatile("tensormap.replace.tile.global_address.shared::cta.b1024.b64 [%0], %1;" ::"r"(
                         sa(&sm)),
                     "l"(base)
                     : "memory");
        asm volatile("tensormap.replace.tile.global_dim.shared::cta.b1024.b32 [%0], 1, %1;" ::"r"(
                         sa(&sm)),
                     "r"(rows)
                     : "memory");
        // Rank minus one: 2, as it was.
        asm volatile("tensormap.replace.tile.rank.shared::cta.b1024.b32 [%0], 1;" ::"r"(sa(&sm))
                     : "memory");
    }
    __syncwarp();
    asm volatile("tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync."
                 "aligned [%0], [%1], 128;" ::"l"(gmap),
                 "r"(sa(&sm))
                 : "memory");
}

// What a load of the box at (x, y) leaves in shared memory (see load_two): `ys` the
// traversal stride of rows, `rows` the tensor's rows.
static void expect_box(const char *what, const float *t, int rows, int x, int y, int ys,
                       bool swizzle, bool nan, const float *got) {
    float want[BOX];
    for (int i = 0; i < BOX; i++) want[i] = -1.0f;
    int n = (BY + ys - 1) / ys;
    for (int r = 0; r < n; r++)
        for (int c = 0; c < BX; c++) {
            int gx = x + c, gy = y + r * ys;
            bool in = gx >= 0 && gx < W && gy >= 0 && gy < rows;
            float v = in ? t[gy * PITCH + gx] : (nan ? NAN : 0.0f);
            unsigned off = (r * BX + c) * 4;
            if (swizzle) off ^= ((off >> 7) & 7) << 4;
            want[off / 4] = v;
        }
    int bad = 0;
    for (int i = 0; i < BOX; i++) {
        bool ok = std::isnan(want[i]) ? std::isnan(got[i]) : got[i] == want[i];
        if (!ok && bad++ < 3)
            printf("%s: element %d is %g, expected %g\n", what, i, got[i], want[i]);
    }
    EXPECT(bad == 0);
}

static void *entry(const char *name) {
    void *p = nullptr;
    cudaDriverEntryPointQueryResult q;
#if CUDART_VERSION >= 12050
    CHECK(cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &q));
#else
    CHECK(cudaGetDriverEntryPoint(name, &p, cudaEnableDefault, &q));
#endif
    EXPECT(q == cudaDriverEntryPointSuccess && p);
    return p;
}

int main() {
    EncodeTiled encode = (EncodeTiled)entry("cuTensorMapEncodeTiled");
    ReplaceAddress replace = (ReplaceAddress)entry("cuTensorMapReplaceAddress");

    const size_t bytes = PITCH * H * sizeof(float);
    float *ha = (float *)malloc(bytes), *hb = (float *)malloc(bytes), *hc = (float *)malloc(bytes);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < PITCH; x++) {
            ha[y * PITCH + x] = x < W ? y * 1000.0f + x + 0.5f : -7.0f;
            hb[y * PITCH + x] = ha[y * PITCH + x] + 500000.0f;
        }
    float *a, *b, *c, *out, *dst;
    CUtensorMap *gmap;
    CHECK(cudaMalloc(&a, bytes));
    CHECK(cudaMalloc(&b, bytes));
    CHECK(cudaMalloc(&c, bytes));
    CHECK(cudaMalloc(&out, 2 * BOX * sizeof(float)));
    CHECK(cudaMalloc(&dst, 256 * sizeof(float)));
    CHECK(cudaMalloc(&gmap, sizeof(CUtensorMap)));
    CHECK(cudaMemcpy(a, ha, bytes, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(b, hb, bytes, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(c, ha, bytes, cudaMemcpyHostToDevice));

    cuuint64_t dims[2] = {W, H}, strides[1] = {PITCH * sizeof(float)};
    cuuint32_t box[2] = {BX, BY}, es1[2] = {1, 1}, es2[2] = {1, 2};
    auto make = [&](CUtensorMap *m, void *base, const cuuint32_t *es, CUtensorMapSwizzle sw,
                    CUtensorMapFloatOOBfill fill) {
        return encode(m, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, base, dims, strides, box, es,
                      CU_TENSOR_MAP_INTERLEAVE_NONE, sw, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, fill);
    };
    CUtensorMap plain, swizzled, strided, moved;
    EXPECT(make(&plain, a, es1, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) ==
           CUDA_SUCCESS);
    EXPECT(make(&swizzled, a, es1, CU_TENSOR_MAP_SWIZZLE_128B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS);
    EXPECT(make(&strided, a, es2, CU_TENSOR_MAP_SWIZZLE_NONE,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA) == CUDA_SUCCESS);
    moved = plain;
    EXPECT(replace(&moved, b) == CUDA_SUCCESS);

    float got[2 * BOX];
    const unsigned full = BOX * sizeof(float);
    auto run = [&](const CUtensorMap &m, int x0, int y0, int x1, int y1, unsigned n) {
        load_box<<<1, 64>>>(m, x0, y0, x1, y1, n, out);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpy(got, out, sizeof got, cudaMemcpyDeviceToHost));
    };
    // Inside, then past the right and bottom edges.
    run(plain, 0, 0, 96, 24, full);
    expect_box("plain (0,0)", ha, H, 0, 0, 1, false, false, got);
    expect_box("plain (96,24)", ha, H, 96, 24, 1, false, false, got + BOX);
    // Before the left and top edges, then wholly outside (the whole box still counts).
    run(plain, -16, -2, 200, 100, full);
    expect_box("plain (-16,-2)", ha, H, -16, -2, 1, false, false, got);
    expect_box("plain (200,100)", ha, H, 200, 100, 1, false, false, got + BOX);
    run(swizzled, 32, 8, 80, 26, full);
    expect_box("swizzled (32,8)", ha, H, 32, 8, 1, true, false, got);
    expect_box("swizzled (80,26)", ha, H, 80, 26, 1, true, false, got + BOX);
    // Every other row: half the box's bytes; NaN past the edges.
    run(strided, 0, 0, 90, 20, full / 2);
    expect_box("strided (0,0)", ha, H, 0, 0, 2, false, true, got);
    expect_box("strided (90,20)", ha, H, 90, 20, 2, false, true, got + BOX);
    run(moved, 0, 0, 96, 24, full);
    expect_box("moved (0,0)", hb, H, 0, 0, 1, false, false, got);
    expect_box("moved (96,24)", hb, H, 96, 24, 1, false, false, got + BOX);

    // A map rewritten by a kernel: tensor b, 20 rows.
    replace_map<<<1, 32>>>(plain, gmap, b, 20);
    CHECK(cudaGetLastError());
    load_box_global<<<1, 64>>>(gmap, 64, 16, 0, 12, full, out);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(got, out, sizeof got, cudaMemcpyDeviceToHost));
    expect_box("replaced (64,16)", hb, 20, 64, 16, 1, false, false, got);
    expect_box("replaced (0,12)", hb, 20, 0, 12, 1, false, false, got + BOX);

    // A store past the right and bottom edges writes the box's in-bounds part only.
    CUtensorMap to_c;
    EXPECT(make(&to_c, c, es1, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) ==
           CUDA_SUCCESS);
    store_box<<<1, 64>>>(to_c, 80, 26);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(hc, c, bytes, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < PITCH; x++) {
            bool in = x >= 80 && x < W && y >= 26;
            float want = in ? 100000.0f + (y - 26) * BX + (x - 80) : ha[y * PITCH + x];
            bad += hc[y * PITCH + x] != want;
        }
    EXPECT(bad == 0);

    bulk_round_trip<<<1, 64>>>(a, dst, 1024);
    CHECK(cudaGetLastError());
    float hd[256];
    CHECK(cudaMemcpy(hd, dst, sizeof hd, cudaMemcpyDeviceToHost));
    bad = 0;
    for (int i = 0; i < 256; i++) bad += hd[i] != 2.0f * ha[i];
    EXPECT(bad == 0);

    // The driver's checks.
    CUtensorMap m;
    const CUresult inval = CUDA_ERROR_INVALID_VALUE;
    EXPECT(make(&m, (char *)a + 4, es1, CU_TENSOR_MAP_SWIZZLE_NONE,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == inval);
    cuuint32_t wide[2] = {64, BY}, tall[2] = {BX, 257}, odd[2] = {3, BY}, es9[2] = {1, 9};
    cuuint64_t skew[1] = {PITCH * sizeof(float) + 4};
    auto raw = [&](cuuint32_t rank, const cuuint64_t *st, const cuuint32_t *bx,
                   const cuuint32_t *es, CUtensorMapSwizzle sw) {
        return encode(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, rank, a, dims, st, bx, es,
                      CU_TENSOR_MAP_INTERLEAVE_NONE, sw, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    };
    EXPECT(raw(2, strides, wide, es1, CU_TENSOR_MAP_SWIZZLE_NONE) == CUDA_SUCCESS);
    EXPECT(raw(2, strides, wide, es1, CU_TENSOR_MAP_SWIZZLE_128B) == inval);
    EXPECT(raw(2, strides, tall, es1, CU_TENSOR_MAP_SWIZZLE_NONE) == inval);
    EXPECT(raw(2, strides, odd, es1, CU_TENSOR_MAP_SWIZZLE_NONE) == inval);
    EXPECT(raw(2, strides, box, es9, CU_TENSOR_MAP_SWIZZLE_NONE) == inval);
    EXPECT(raw(2, skew, box, es1, CU_TENSOR_MAP_SWIZZLE_NONE) == inval);
    EXPECT(raw(0, strides, box, es1, CU_TENSOR_MAP_SWIZZLE_NONE) == inval);
    EXPECT(raw(6, strides, box, es1, CU_TENSOR_MAP_SWIZZLE_NONE) == inval);
    EXPECT(encode(&m, CU_TENSOR_MAP_DATA_TYPE_INT32, 2, a, dims, strides, box, es1,
                  CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                  CU_TENSOR_MAP_L2_PROMOTION_NONE,
                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA) == inval);
    EXPECT(replace(&moved, (char *)b + 8) == inval);

    CHECK(cudaFree(a));
    CHECK(cudaFree(b));
    CHECK(cudaFree(c));
    CHECK(cudaFree(out));
    CHECK(cudaFree(dst));
    CHECK(cudaFree(gmap));
    free(ha);
    free(hb);
    free(hc);
    return finish();
}
