// SPDX-License-Identifier: Apache-2.0 OR MIT
// Three-dimensional memory: cudaMalloc3D (pitch alignment), cudaMemset3D over a sub-volume,
// cudaMemcpy3D host to device, device to device and device to host with source and
// destination positions, cudaMemcpy3DAsync on a stream, cudaMemcpy3DPeer, a 3-D copy
// captured into a graph as one node, and the errors for bad parameters. Checked against a
// host model of the volume.
#include "common.h"

static const int W = 37, H = 11, D = 5;  // elements (ints) per row, rows, slices

static int host_ref[D][H][W];

int main() {
    cudaExtent ext = make_cudaExtent(W * sizeof(int), H, D);
    cudaPitchedPtr dv;
    CHECK(cudaMalloc3D(&dv, ext));
    EXPECT(dv.ptr != nullptr);
    int align = 0;
    CHECK(cudaDeviceGetAttribute(&align, cudaDevAttrTexturePitchAlignment, 0));
    EXPECT(align > 0 && dv.pitch >= W * sizeof(int) && dv.pitch % align == 0);
    EXPECT(dv.xsize == W * sizeof(int) && dv.ysize == H);

    // Fill with 0x01 bytes, then 0xff over a sub-volume [x 2..10) x [y 3..8) x [z 1..4).
    CHECK(cudaMemset3D(dv, 0x01, ext));
    cudaPitchedPtr sub = dv;
    sub.ptr = (char *)dv.ptr + 1 * dv.pitch * H + 3 * dv.pitch + 2 * sizeof(int);
    CHECK(cudaMemset3D(sub, 0xff, make_cudaExtent(8 * sizeof(int), 5, 3)));
    for (int z = 0; z < D; z++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                bool in = x >= 2 && x < 10 && y >= 3 && y < 8 && z >= 1 && z < 4;
                host_ref[z][y][x] = in ? -1 : 0x01010101;
            }

    // Copy the whole volume back (tightly packed host buffer) and compare.
    static int back[D][H][W];
    cudaMemcpy3DParms p = {};
    p.srcPtr = dv;
    p.dstPtr = make_cudaPitchedPtr(back, W * sizeof(int), W * sizeof(int), H);
    p.extent = ext;
    p.kind = cudaMemcpyDeviceToHost;
    CHECK(cudaMemcpy3D(&p));
    EXPECT(memcmp(back, host_ref, sizeof back) == 0);

    // Host to device into a box at (x 4, y 2, z 1) of size 6 x 4 x 2, from a host box at
    // (x 1, y 1, z 0) of a differently shaped source.
    static int src[3][6][9];
    for (int z = 0; z < 3; z++)
        for (int y = 0; y < 6; y++)
            for (int x = 0; x < 9; x++) src[z][y][x] = 1000000 * z + 1000 * y + x;
    p = {};
    p.srcPtr = make_cudaPitchedPtr(src, 9 * sizeof(int), 9 * sizeof(int), 6);
    p.srcPos = make_cudaPos(1 * sizeof(int), 1, 0);
    p.dstPtr = dv;
    p.dstPos = make_cudaPos(4 * sizeof(int), 2, 1);
    p.extent = make_cudaExtent(6 * sizeof(int), 4, 2);
    p.kind = cudaMemcpyHostToDevice;
    CHECK(cudaMemcpy3D(&p));
    for (int z = 0; z < 2; z++)
        for (int y = 0; y < 4; y++)
            for (int x = 0; x < 6; x++) host_ref[1 + z][2 + y][4 + x] = src[z][1 + y][1 + x];

    // Device to device within another allocation, asynchronously on a stream: shift the
    // whole volume by one slice into a second volume (cudaMemcpyDefault).
    cudaPitchedPtr dv2;
    CHECK(cudaMalloc3D(&dv2, ext));
    CHECK(cudaMemset3D(dv2, 0, ext));
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    p = {};
    p.srcPtr = dv;
    p.dstPtr = dv2;
    p.dstPos = make_cudaPos(0, 0, 1);
    p.extent = make_cudaExtent(W * sizeof(int), H, D - 1);
    p.kind = cudaMemcpyDefault;
    CHECK(cudaMemcpy3DAsync(&p, s));
    CHECK(cudaStreamSynchronize(s));
    static int ref2[D][H][W];
    memset(ref2, 0, sizeof ref2);
    for (int z = 1; z < D; z++) memcpy(ref2[z], host_ref[z - 1], sizeof ref2[z]);

    // A peer copy goes between device memory (one device here); host memory is refused.
    cudaPitchedPtr dv3;
    CHECK(cudaMalloc3D(&dv3, ext));
    cudaMemcpy3DPeerParms pp = {};
    pp.srcPtr = dv2;
    pp.srcDevice = 0;
    pp.dstPtr = dv3;
    pp.dstDevice = 0;
    pp.extent = ext;
    CHECK(cudaMemcpy3DPeer(&pp));
    memset(back, 0, sizeof back);
    p = {};
    p.srcPtr = dv3;
    p.dstPtr = make_cudaPitchedPtr(back, W * sizeof(int), W * sizeof(int), H);
    p.extent = ext;
    p.kind = cudaMemcpyDeviceToHost;
    CHECK(cudaMemcpy3D(&p));
    EXPECT(memcmp(back, ref2, sizeof back) == 0);
    pp.dstPtr = make_cudaPitchedPtr(back, W * sizeof(int), W * sizeof(int), H);
    EXPECT_ERR(cudaMemcpy3DPeer(&pp), cudaErrorInvalidValue);
    pp.dstPtr = dv3;
    pp.srcDevice = 7;
    EXPECT_ERR(cudaMemcpy3DPeer(&pp), cudaErrorInvalidDevice);
    CHECK(cudaFree(dv3.ptr));

    // A captured 3-D copy is one graph node; replaying it copies again.
    cudaGraph_t g;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    p = {};
    p.srcPtr = dv;
    p.dstPtr = make_cudaPitchedPtr(back, W * sizeof(int), W * sizeof(int), H);
    p.extent = ext;
    p.kind = cudaMemcpyDeviceToHost;
    CHECK(cudaMemcpy3DAsync(&p, s));
    CHECK(cudaStreamEndCapture(s, &g));
    size_t nodes = 0;
    CHECK(cudaGraphGetNodes(g, nullptr, &nodes));
    EXPECT(nodes == 1);
    cudaGraphExec_t ge;
    CHECK(cudaGraphInstantiate(&ge, g, 0));
    memset(back, 0, sizeof back);
    CHECK(cudaGraphLaunch(ge, s));
    CHECK(cudaStreamSynchronize(s));
    EXPECT(memcmp(back, host_ref, sizeof back) == 0);
    CHECK(cudaGraphExecDestroy(ge));
    CHECK(cudaGraphDestroy(g));

    // Errors: a null block, a pitch smaller than the width. An empty copy does nothing.
    EXPECT_ERR(cudaMemcpy3D(nullptr), cudaErrorInvalidValue);
    p = {};
    p.srcPtr = dv;
    p.dstPtr = dv2;
    p.extent = make_cudaExtent(0, H, D);
    p.kind = cudaMemcpyDeviceToDevice;
    CHECK(cudaMemcpy3D(&p));
    p.extent = ext;
    p.dstPtr.pitch = 4;
    EXPECT_ERR(cudaMemcpy3D(&p), cudaErrorInvalidPitchValue);
    p.dstPtr = dv2;
    p.kind = (cudaMemcpyKind)42;
    EXPECT_ERR(cudaMemcpy3D(&p), cudaErrorInvalidMemcpyDirection);
    EXPECT_ERR(cudaMalloc3D(nullptr, ext), cudaErrorInvalidValue);

    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFree(dv.ptr));
    CHECK(cudaFree(dv2.ptr));
    return finish();
}
