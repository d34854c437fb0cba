// SPDX-License-Identifier: Apache-2.0 OR MIT
// Page-locked host memory (cudaMallocHost, cudaHostAlloc) as the source and destination of
// copies: whole buffers and pieces at offsets, synchronous and asynchronous on two streams,
// 2-D copies with packed and pitched host rows, pinned and pageable memory in one program,
// many allocations freed and made again, and kernels between. Over a Unix socket this memory is
// shared with the backend and copies carry no bytes; the results must be the same.
#include "common.h"

__global__ void scale(float *p, int n, float a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = p[i] * a + 1.0f;
}

int main() {
    const int N = 3 << 20;  // 12 MiB of floats
    float *pin = nullptr, *out = nullptr;
    CHECK(cudaMallocHost(&pin, N * sizeof(float)));
    CHECK(cudaHostAlloc(&out, N * sizeof(float), cudaHostAllocDefault));
    for (int i = 0; i < N; i++) pin[i] = (float)(i % 1000);

    float *d = nullptr;
    CHECK(cudaMalloc(&d, N * sizeof(float)));
    CHECK(cudaMemcpy(d, pin, N * sizeof(float), cudaMemcpyHostToDevice));
    scale<<<(N + 255) / 256, 256>>>(d, N, 2.0f);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(out, d, N * sizeof(float), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < N; i++)
        if (out[i] != (float)(i % 1000) * 2.0f + 1.0f) bad++;
    EXPECT(bad == 0);

    // Pieces at offsets, both ways, on two streams.
    cudaStream_t s[2];
    for (auto &st : s) CHECK(cudaStreamCreate(&st));
    const int P = N / 4;
    for (int k = 0; k < 4; k++) {
        for (int i = 0; i < P; i++) pin[k * P + i] = (float)(k * 10 + i % 7);
        CHECK(cudaMemcpyAsync(d + k * P, pin + k * P, P * sizeof(float), cudaMemcpyHostToDevice,
                              s[k % 2]));
        scale<<<(P + 255) / 256, 256, 0, s[k % 2]>>>(d + k * P, P, 3.0f);
        CHECK(cudaMemcpyAsync(out + k * P, d + k * P, P * sizeof(float), cudaMemcpyDeviceToHost,
                              s[k % 2]));
    }
    for (auto &st : s) CHECK(cudaStreamSynchronize(st));
    bad = 0;
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < P; i++)
            if (out[k * P + i] != (float)(k * 10 + i % 7) * 3.0f + 1.0f) bad++;
    EXPECT(bad == 0);

    // An odd-sized piece at an odd byte offset.
    unsigned char *pb = (unsigned char *)pin, *ob = (unsigned char *)out;
    for (int i = 0; i < 1001; i++) pb[13 + i] = (unsigned char)(i * 7);
    CHECK(cudaMemcpy((unsigned char *)d + 5, pb + 13, 1001, cudaMemcpyHostToDevice));
    memset(ob, 0, 2048);
    CHECK(cudaMemcpy(ob + 3, (unsigned char *)d + 5, 1001, cudaMemcpyDeviceToHost));
    bad = 0;
    for (int i = 0; i < 1001; i++)
        if (ob[3 + i] != (unsigned char)(i * 7)) bad++;
    EXPECT(bad == 0 && ob[2] == 0 && ob[1004] == 0);

    // 2-D: packed host rows (width == pitch) and pitched ones.
    size_t dp = 0;
    float *d2 = nullptr;
    const int W = 100, H = 50;
    CHECK(cudaMallocPitch(&d2, &dp, W * sizeof(float), H));
    for (int i = 0; i < W * H; i++) pin[i] = (float)i;
    CHECK(cudaMemcpy2D(d2, dp, pin, W * sizeof(float), W * sizeof(float), H,
                       cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy2D(out, 2 * W * sizeof(float), d2, dp, W * sizeof(float), H,
                       cudaMemcpyDeviceToHost));
    bad = 0;
    for (int r = 0; r < H; r++)
        for (int c = 0; c < W; c++)
            if (out[r * 2 * W + c] != (float)(r * W + c)) bad++;
    EXPECT(bad == 0);
    CHECK(cudaMemcpy2DAsync(out, W * sizeof(float), d2, dp, W * sizeof(float), H,
                            cudaMemcpyDeviceToHost, s[0]));
    CHECK(cudaStreamSynchronize(s[0]));
    bad = 0;
    for (int i = 0; i < W * H; i++)
        if (out[i] != (float)i) bad++;
    EXPECT(bad == 0);

    // Pageable memory in, pinned memory out.
    float *small = nullptr;
    CHECK(cudaMallocHost(&small, 4096));
    float *both = (float *)malloc(8192);
    for (int i = 0; i < 2048; i++) both[i] = (float)-i;
    CHECK(cudaMemcpy(d, both, 8192, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(small, d + 1024, 4096, cudaMemcpyDeviceToHost));
    EXPECT(small[0] == -1024.0f && small[1023] == -2047.0f);

    // Freed and allocated again, many times (each one is a shared region).
    for (int k = 0; k < 64; k++) {
        int *t = nullptr;
        CHECK(cudaMallocHost(&t, 4096 * (k + 1)));
        t[k] = k;
        CHECK(cudaMemcpy(d, t, 4096 * (k + 1), cudaMemcpyHostToDevice));
        int got = -1;
        CHECK(cudaMemcpy(&got, (int *)d + k, sizeof(int), cudaMemcpyDeviceToHost));
        EXPECT(got == k);
        CHECK(cudaFreeHost(t));
    }

    free(both);
    CHECK(cudaFreeHost(small));
    CHECK(cudaFree(d2));
    CHECK(cudaFree(d));
    for (auto &st : s) CHECK(cudaStreamDestroy(st));
    CHECK(cudaFreeHost(out));
    CHECK(cudaFreeHost(pin));
    return finish();
}
