// SPDX-License-Identifier: Apache-2.0 OR MIT
// Reads a few elements past a buffer's end, as stencils with sloppy bounds do: on a GPU the
// bytes after an allocation (to its 512-byte granule and beyond, within the 2 MiB page)
// are mapped, so such a kernel runs and the values it reads there are unspecified. The
// program checks only the in-bounds results. With `vcuda run --memcheck` the same access
// is a fault (cudaErrorIllegalAddress): the program is then run with the argument
// `memcheck` and expects that error.
#include "common.h"

__global__ void sum3(const float *in, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        // in[i + 1] and in[i + 2] run past the end for the last two elements.
        float s = in[i] + in[i + 1] + in[i + 2];
        out[i] = i + 2 < n ? s : in[i];
    }
}

int main(int argc, char **argv) {
    bool memcheck = argc > 1 && !strcmp(argv[1], "memcheck");
    const int n = 1000;
    float h[n], o[n];
    for (int i = 0; i < n; i++) h[i] = (float)i;
    float *in, *out;
    CHECK(cudaMalloc(&in, n * sizeof(float)));
    CHECK(cudaMalloc(&out, n * sizeof(float)));
    CHECK(cudaMemcpy(in, h, sizeof h, cudaMemcpyHostToDevice));
    sum3<<<(n + 127) / 128, 128>>>(in, out, n);
    CHECK(cudaGetLastError());
    cudaError_t e = cudaDeviceSynchronize();
    if (memcheck) {
        EXPECT(e == cudaErrorIllegalAddress);
        printf("memcheck: %s\n", cudaGetErrorName(e));
        return finish();
    }
    CHECK(e);
    CHECK(cudaMemcpy(o, out, sizeof o, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < n; i++) {
        float want = i + 2 < n ? 3.0f * i + 3.0f : (float)i;
        if (o[i] != want) bad++;
    }
    EXPECT(bad == 0);
    CHECK(cudaFree(in));
    CHECK(cudaFree(out));
    return finish();
}
