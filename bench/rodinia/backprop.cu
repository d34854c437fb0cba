// SPDX-License-Identifier: Apache-2.0 OR MIT
// Back-propagation (see backprop.h): the forward pass as Rodinia's layerforward kernel
// (blocks of 16 inputs x 16 hidden units, each block's partial sums reduced in shared
// memory, the partials summed on the host), the weights adjusted by a second kernel.
#include "cuda.h"
#include "backprop.h"

#define TILE 16

__global__ void forward(const float* input, const float* w, float* partial) {
    __shared__ float in[TILE], prod[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;  // tx: hidden unit - 1, ty: input in the tile
    int i = 1 + blockIdx.x * TILE + ty;
    if (tx == 0) in[ty] = input[i];
    __syncthreads();
    prod[ty][tx] = w[WI(i, tx + 1)] * in[ty];
    __syncthreads();
    for (int s = TILE / 2; s > 0; s >>= 1) {
        if (ty < s) prod[ty][tx] += prod[ty + s][tx];
        __syncthreads();
    }
    if (ty == 0) partial[blockIdx.x * HID + tx] = prod[0][tx];
}

__global__ void adjust(float* w, float* dw, const float* input, const float* delta) {
    long k = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= (long)(IN + 1) * HID) return;
    int i = (int)(k / HID), j = (int)(k % HID) + 1;
    BP_ADJUST(w, dw, input, delta, i, j);
}

int main() {
    net n = make_net();
    size_t nw = (size_t)(IN + 1) * (HID + 1);
    float* d_in = to_device(n.input, IN + 1);
    float* d_w = to_device(n.w, nw);
    float* d_dw = to_device(n.dw, nw);
    float *d_partial, *d_delta;
    int blocks = IN / TILE;
    CHECK(cudaMalloc(&d_partial, sizeof(float) * blocks * HID));
    CHECK(cudaMalloc(&d_delta, sizeof(float) * (HID + 1)));
    float* partial = (float*)malloc(sizeof(float) * blocks * HID);
    float sums[HID + 1], delta[HID + 1];
    double t = now();
    for (int e = 0; e < EPOCHS; e++) {
        forward<<<blocks, dim3(TILE, TILE)>>>(d_in, d_w, d_partial);
        CHECK(cudaMemcpy(partial, d_partial, sizeof(float) * blocks * HID,
                         cudaMemcpyDeviceToHost));
        // The bias unit's weights (input 0) and the partials.
        float w0[HID + 1];
        CHECK(cudaMemcpy(w0, d_w, sizeof w0, cudaMemcpyDeviceToHost));
        for (int j = 1; j <= HID; j++) {
            float s = w0[j] * n.input[0];
            for (int b = 0; b < blocks; b++) s += partial[b * HID + j - 1];
            sums[j] = s;
        }
        backward(&n, sums, delta);
        CHECK(cudaMemcpy(d_delta, delta, sizeof delta, cudaMemcpyHostToDevice));
        long cells = (long)(IN + 1) * HID;
        adjust<<<(unsigned)((cells + 255) / 256), 256>>>(d_w, d_dw, d_in, d_delta);
    }
    CHECK(cudaDeviceSynchronize());
    t = now() - t;
    report("backprop", t, checksum(&n));
    return 0;
}
