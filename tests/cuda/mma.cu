// SPDX-License-Identifier: Apache-2.0 OR MIT
// Tensor-core PTX as CUTLASS's sm_80 GEMMs and flash-attention kernels write it, in inline
// assembly: a half GEMM whose warps load shared-memory tiles with ldmatrix (.x4 for A,
// .x2.trans for B) and accumulate with mma.sync m16n8k16, keeping the accumulators in the
// architected fragment layout; fragments built by hand from that layout for bf16, tf32,
// e4m3, int8 (.satfinite) and double; stmatrix and movmatrix (sm_90). Checked against host
// products (exact: every input is a small multiple of a quarter).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include "common.h"

__device__ unsigned smem(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

__device__ void ldsm_x4(unsigned *r, const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem(p)));
}

__device__ void ldsm_x2_trans(unsigned *r, const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];"
                 : "=r"(r[0]), "=r"(r[1])
                 : "r"(smem(p)));
}

__device__ void mma_f16(float *d, const unsigned *a, const unsigned *b) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

#define GM 64
#define GN 64
#define GK 64
#define TK 32

// C (64 x 64) = A (64 x K, row-major) B (K x 64, row-major): four warps, warp w the rows
// 16w..16w+15, eight 16 x 8 accumulator tiles each. Padded rows keep ldmatrix's 16-byte
// alignment.
__global__ void hgemm(const half *A, const half *B, float *C) {
    __shared__ __align__(16) half sa[GM][TK + 8];
    __shared__ __align__(16) half sb[TK][GN + 8];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    float acc[8][4] = {};
    for (int k0 = 0; k0 < GK; k0 += TK) {
        for (int i = threadIdx.x; i < GM * TK; i += blockDim.x)
            sa[i / TK][i % TK] = A[(i / TK) * GK + k0 + i % TK];
        for (int i = threadIdx.x; i < TK * GN; i += blockDim.x)
            sb[i / GN][i % GN] = B[(k0 + i / GN) * GN + i % GN];
        __syncthreads();
        for (int kk = 0; kk < TK; kk += 16) {
            // A's four 8 x 8 blocks: rows +0/+8 for matrices 0 and 1, columns +8 for 2 and 3.
            int j = lane / 8, r = lane % 8;
            unsigned a[4];
            ldsm_x4(a, &sa[16 * warp + r + 8 * (j % 2)][kk + 8 * (j / 2)]);
            for (int nt = 0; nt < 8; nt++) {
                unsigned b[2];
                ldsm_x2_trans(b, &sb[kk + lane % 16][nt * 8]);
                mma_f16(acc[nt], a, b);
            }
        }
        __syncthreads();
    }
    int g = lane / 4, t = lane % 4;
    for (int nt = 0; nt < 8; nt++)
        for (int i = 0; i < 4; i++)
            C[(16 * warp + g + 8 * (i / 2)) * GN + nt * 8 + 2 * t + i % 2] = acc[nt][i];
}

// One warp, one m16n8 tile: fragments built from global memory in the ISA's layout.
// a: 16 x K, b: K x 8, both row-major; c, d: 16 x 8. `e` elements to a 32-bit register.
template <typename T, int K, int E>
__device__ void frag_a(unsigned *r, const T *a) {
    int g = threadIdx.x / 4, t = threadIdx.x % 4;
    for (int reg = 0; reg < K / 2 / E; reg++) {
        unsigned v = 0;
        for (int s = 0; s < E; s++) {
            int row = g + 8 * (reg % 2), col = (reg / 2) * 4 * E + t * E + s;
            unsigned bits = 0;
            memcpy(&bits, &a[row * K + col], sizeof(T));
            v |= bits << (s * 8 * sizeof(T));
        }
        r[reg] = v;
    }
}

template <typename T, int K, int E>
__device__ void frag_b(unsigned *r, const T *b) {
    int g = threadIdx.x / 4, t = threadIdx.x % 4;
    for (int reg = 0; reg < K / 4 / E; reg++) {
        unsigned v = 0;
        for (int s = 0; s < E; s++) {
            unsigned bits = 0;
            memcpy(&bits, &b[(4 * E * reg + t * E + s) * 8 + g], sizeof(T));
            v |= bits << (s * 8 * sizeof(T));
        }
        r[reg] = v;
    }
}

// Element i of the 16 x 8 accumulator a lane holds.
__device__ int c_index(int i) {
    int g = threadIdx.x / 4, t = threadIdx.x % 4;
    return (g + 8 * (i / 2)) * 8 + 2 * t + i % 2;
}

__global__ void bf16_tile(const __nv_bfloat16 *a, const __nv_bfloat16 *b, float *d) {
    unsigned fa[4], fb[2];
    frag_a<__nv_bfloat16, 16, 2>(fa, a);
    frag_b<__nv_bfloat16, 16, 2>(fb, b);
    float acc[4] = {1, 1, 1, 1};
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
                 : "r"(fa[0]), "r"(fa[1]), "r"(fa[2]), "r"(fa[3]), "r"(fb[0]), "r"(fb[1]));
    for (int i = 0; i < 4; i++) d[c_index(i)] = acc[i];
}

__global__ void tf32_tile(const float *a, const float *b, float *d) {
    unsigned fa[4], fb[2];
    frag_a<float, 8, 1>(fa, a);
    frag_b<float, 8, 1>(fb, b);
    float acc[4] = {};
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
                 : "r"(fa[0]), "r"(fa[1]), "r"(fa[2]), "r"(fa[3]), "r"(fb[0]), "r"(fb[1]));
    for (int i = 0; i < 4; i++) d[c_index(i)] = acc[i];
}

__global__ void e4m3_tile(const __nv_fp8_e4m3 *a, const __nv_fp8_e4m3 *b, float *d) {
    unsigned fa[4], fb[2];
    frag_a<__nv_fp8_e4m3, 32, 4>(fa, a);
    frag_b<__nv_fp8_e4m3, 32, 4>(fb, b);
    float acc[4] = {};
    asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
                 : "r"(fa[0]), "r"(fa[1]), "r"(fa[2]), "r"(fa[3]), "r"(fb[0]), "r"(fb[1]));
    for (int i = 0; i < 4; i++) d[c_index(i)] = acc[i];
}

__global__ void s8_tile(const signed char *a, const signed char *b, const int *c, int *d) {
    unsigned fa[4], fb[2];
    frag_a<signed char, 32, 4>(fa, a);
    frag_b<signed char, 32, 4>(fb, b);
    int acc[4];
    for (int i = 0; i < 4; i++) acc[i] = c[c_index(i)];
    asm volatile("mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+r"(acc[0]), "+r"(acc[1]), "+r"(acc[2]), "+r"(acc[3])
                 : "r"(fa[0]), "r"(fa[1]), "r"(fa[2]), "r"(fa[3]), "r"(fb[0]), "r"(fb[1]));
    for (int i = 0; i < 4; i++) d[c_index(i)] = acc[i];
}

// m8n8k4 of doubles: A (8 x 4), B (4 x 8), D = A B - 1.
__global__ void f64_tile(const double *a, const double *b, double *d) {
    int g = threadIdx.x / 4, t = threadIdx.x % 4;
    double d0 = -1, d1 = -1;
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};"
                 : "+d"(d0), "+d"(d1)
                 : "d"(a[g * 4 + t]), "d"(b[t * 8 + g]));
    d[g * 8 + 2 * t] = d0;
    d[g * 8 + 2 * t + 1] = d1;
}

// Two 8 x 8 matrices of 16-bit values: loads them, transposes the second with movmatrix,
// and stores both transposed with stmatrix.trans: out holds (m0)^T then m1.
__global__ void transpose_pair(const unsigned short *in, unsigned short *out) {
    __shared__ __align__(16) unsigned short s[2][8][8];
    int lane = threadIdx.x;
    for (int i = lane; i < 128; i += 32) s[i / 64][(i / 8) % 8][i % 8] = in[i];
    __syncwarp();
    unsigned r[2];
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];"
                 : "=r"(r[0]), "=r"(r[1])
                 : "r"(smem(&s[lane / 8 % 2][lane % 8][0])));
    asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %0;" : "+r"(r[1]));
    __syncwarp();
    asm volatile("stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%0], {%1, %2};" ::"r"(
                     smem(&s[lane / 8 % 2][lane % 8][0])),
                 "r"(r[0]), "r"(r[1])
                 : "memory");
    __syncwarp();
    for (int i = lane; i < 128; i += 32) out[i] = s[i / 64][(i / 8) % 8][i % 8];
}

template <typename T> static T *upload(const T *h, size_t n) {
    T *d;
    CHECK(cudaMalloc(&d, n * sizeof(T)));
    CHECK(cudaMemcpy(d, h, n * sizeof(T), cudaMemcpyHostToDevice));
    return d;
}

template <typename T> static void download(T *h, const T *d, size_t n) {
    CHECK(cudaMemcpy(h, d, n * sizeof(T), cudaMemcpyDeviceToHost));
    CHECK(cudaFree((void *)d));
}

// Quarters in [-1, 1]: exact in every input type here, e4m3 included.
static float val(int i, int j, int s) { return ((i * 7 + j * 3 + s) % 9 - 4) * 0.25f; }

// The host's 16 x 8 product of a (16 x k) and b (k x 8), plus c.
static void product(const float *a, const float *b, float c, int k, float *d) {
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 8; j++) {
            float s = c;
            for (int x = 0; x < k; x++) s += a[i * k + x] * b[x * 8 + j];
            d[i * 8 + j] = s;
        }
}

static int mismatches(const float *got, const float *want, int n) {
    int bad = 0;
    for (int i = 0; i < n; i++) bad += got[i] != want[i];
    return bad;
}

int main() {
    {
        static half a[GM * GK], b[GK * GN];
        static float af[GM * GK], bf[GK * GN], c[GM * GN];
        for (int i = 0; i < GM * GK; i++) a[i] = __float2half(af[i] = val(i / GK, i % GK, 1));
        for (int i = 0; i < GK * GN; i++) b[i] = __float2half(bf[i] = val(i / GN, i % GN, 2));
        half *da = upload(a, GM * GK), *db = upload(b, GK * GN);
        float *dc;
        CHECK(cudaMalloc(&dc, sizeof c));
        hgemm<<<1, 128>>>(da, db, dc);
        CHECK(cudaGetLastError());
        download(c, dc, GM * GN);
        int bad = 0;
        for (int i = 0; i < GM; i++)
            for (int j = 0; j < GN; j++) {
                float s = 0;
                for (int k = 0; k < GK; k++) s += af[i * GK + k] * bf[k * GN + j];
                bad += c[i * GN + j] != s;
            }
        if (bad) printf("hgemm: %d of %d wrong\n", bad, GM * GN);
        EXPECT(bad == 0);
        CHECK(cudaFree(da));
        CHECK(cudaFree(db));
    }
    {
        static __nv_bfloat16 a[16 * 16], b[16 * 8];
        static float af[16 * 16], bf[16 * 8], d[128], want[128];
        for (int i = 0; i < 256; i++) a[i] = __float2bfloat16(af[i] = val(i / 16, i % 16, 3));
        for (int i = 0; i < 128; i++) b[i] = __float2bfloat16(bf[i] = val(i / 8, i % 8, 4));
        float *dd;
        CHECK(cudaMalloc(&dd, sizeof d));
        bf16_tile<<<1, 32>>>(upload(a, 256), upload(b, 128), dd);
        CHECK(cudaGetLastError());
        download(d, dd, 128);
        product(af, bf, 1, 16, want);
        EXPECT(mismatches(d, want, 128) == 0);
    }
    {
        // The tensor cores read tf32: the low 13 mantissa bits given here are ignored.
        static float a[16 * 8], b[8 * 8], af[16 * 8], d[128], want[128];
        for (int i = 0; i < 128; i++) {
            af[i] = val(i / 8, i % 8, 5);
            unsigned bits;
            memcpy(&bits, &af[i], 4);
            bits |= af[i] != 0 ? (i * 37) & 0x1fff : 0;
            memcpy(&a[i], &bits, 4);
        }
        for (int i = 0; i < 64; i++) b[i] = val(i / 8, i % 8, 6);
        float *dd;
        CHECK(cudaMalloc(&dd, sizeof d));
        tf32_tile<<<1, 32>>>(upload(a, 128), upload(b, 64), dd);
        CHECK(cudaGetLastError());
        download(d, dd, 128);
        product(af, b, 0, 8, want);
        EXPECT(mismatches(d, want, 128) == 0);
    }
    {
        static __nv_fp8_e4m3 a[16 * 32], b[32 * 8];
        static float af[16 * 32], bf[32 * 8], d[128], want[128];
        for (int i = 0; i < 512; i++) a[i] = __nv_fp8_e4m3(af[i] = val(i / 32, i % 32, 7));
        for (int i = 0; i < 256; i++) b[i] = __nv_fp8_e4m3(bf[i] = val(i / 8, i % 8, 8));
        float *dd;
        CHECK(cudaMalloc(&dd, sizeof d));
        e4m3_tile<<<1, 32>>>(upload(a, 512), upload(b, 256), dd);
        CHECK(cudaGetLastError());
        download(d, dd, 128);
        product(af, bf, 0, 32, want);
        EXPECT(mismatches(d, want, 128) == 0);
    }
    {
        // Accumulators near the ends of int: .satfinite clamps instead of wrapping.
        static signed char a[16 * 32], b[32 * 8];
        static int c[128], d[128];
        for (int i = 0; i < 512; i++) a[i] = (signed char)(i * 37 % 256);
        for (int i = 0; i < 256; i++) b[i] = (signed char)(i * 53 % 256);
        for (int i = 0; i < 128; i++) c[i] = i % 3 == 0 ? 2147483000 : i % 3 == 1 ? -2147483000 : i;
        int *dd;
        CHECK(cudaMalloc(&dd, sizeof d));
        s8_tile<<<1, 32>>>(upload(a, 512), upload(b, 256), upload(c, 128), dd);
        CHECK(cudaGetLastError());
        download(d, dd, 128);
        int bad = 0;
        for (int i = 0; i < 16; i++)
            for (int j = 0; j < 8; j++) {
                long long s = c[i * 8 + j];
                for (int x = 0; x < 32; x++) s += (long long)a[i * 32 + x] * b[x * 8 + j];
                s = s > 2147483647LL ? 2147483647LL : s < -2147483648LL ? -2147483648LL : s;
                bad += d[i * 8 + j] != (int)s;
            }
        if (bad) printf("s8_tile: %d wrong\n", bad);
        EXPECT(bad == 0);
    }
    {
        static double a[32], b[32], d[64];
        for (int i = 0; i < 32; i++) a[i] = val(i / 4, i % 4, 9), b[i] = val(i / 8, i % 8, 10);
        double *dd;
        CHECK(cudaMalloc(&dd, sizeof d));
        f64_tile<<<1, 32>>>(upload(a, 32), upload(b, 32), dd);
        CHECK(cudaGetLastError());
        download(d, dd, 64);
        int bad = 0;
        for (int i = 0; i < 8; i++)
            for (int j = 0; j < 8; j++) {
                double s = -1;
                for (int x = 0; x < 4; x++) s += a[i * 4 + x] * b[x * 8 + j];
                bad += d[i * 8 + j] != s;
            }
        EXPECT(bad == 0);
    }
    {
        static unsigned short in[128], out[128];
        for (int i = 0; i < 128; i++) in[i] = (unsigned short)(i * 3 + 1000);
        unsigned short *dout;
        CHECK(cudaMalloc(&dout, sizeof out));
        transpose_pair<<<1, 32>>>(upload(in, 128), dout);
        CHECK(cudaGetLastError());
        download(out, dout, 128);
        int bad = 0;
        for (int r = 0; r < 8; r++)
            for (int c = 0; c < 8; c++) {
                bad += out[r * 8 + c] != in[c * 8 + r];             // m0 transposed
                bad += out[64 + r * 8 + c] != in[64 + r * 8 + c];   // m1 transposed twice
            }
        if (bad) printf("transpose_pair: %d wrong\n", bad);
        EXPECT(bad == 0);
    }
    CHECK(cudaDeviceSynchronize());
    return finish();
}
