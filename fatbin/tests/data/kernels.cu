// SPDX-License-Identifier: Apache-2.0 OR MIT
// Fixture kernels for vcuda-fatbin's tests (see gen.sh).
#include <cstdio>

struct S12 { float a, b, c; };
struct Big { char bytes[1200]; };
struct Huge { double v[600]; };  // 4800 bytes: > 4 KB

__global__ void mixed(float* p, int i, float f, S12 s, double d) {
    p[threadIdx.x] = i + f + s.a + s.b + s.c + (float)d;
}

__global__ void big(Big b, int n) { if (threadIdx.x < n) b.bytes[0]++; }

__global__ void gconst(const __grid_constant__ S12 s, float* out) { out[0] = s.a + s.c; }

__global__ void noparams() { }

__global__ void huge(Huge h, float* out) { out[0] = (float)h.v[599]; }

template <typename T, int N>
__global__ void tmpl(T* out, T v) { out[N] = v; }

extern "C" __global__ void plainc(char c, short s, long long ll, unsigned char* out) {
    out[0] = c + s + (char)ll;
}

__global__ void __launch_bounds__(128, 2) bounded(int* out) {
    __shared__ int tile[64];
    tile[threadIdx.x % 64] = threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = tile[(threadIdx.x + 1) % 64];
}

__device__ float dev_scale[16];
__constant__ int const_table[32];

int main() {
    tmpl<float, 3><<<1, 1>>>(nullptr, 1.0f);
    tmpl<double, 1><<<1, 1>>>(nullptr, 2.0);
    printf("fixture\n");
    return 0;
}
