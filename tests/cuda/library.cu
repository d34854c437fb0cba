// SPDX-License-Identifier: Apache-2.0 OR MIT
// The runtime's kernel handles and library API: cudaGetKernel (a registered kernel as a
// cudaKernel_t, which cudaLaunchKernel, cudaFuncGetAttributes and
// cudaKernelSetAttributeForDevice take, and which is the driver's CUkernel), and with CUDA
// 12.5+ cudaLibraryLoadData/LoadFromFile (PTX text), cudaLibraryGetKernelCount,
// cudaLibraryEnumerateKernels, cudaLibraryGetKernel, cudaLibraryGetGlobal and
// cudaLibraryUnload, the library's kernels launched with cudaLaunchKernel,
// cudaLaunchKernelEx and in a captured graph.
#include <unistd.h>
#include "common.h"

__global__ void twice(float *p, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] *= 2.0f;
}

#include "scale_add_ptx.h"

int main() {
    const int n = 1000;
    float host[n], back[n];
    for (int i = 0; i < n; i++) host[i] = (float)i;
    float *d = nullptr;
    CHECK(cudaMalloc(&d, sizeof host));
    CHECK(cudaMemcpy(d, host, sizeof host, cudaMemcpyHostToDevice));

    // cudaGetKernel: a registered kernel as a cudaKernel_t.
    cudaKernel_t k = nullptr;
    CHECK(cudaGetKernel(&k, (const void *)twice));
    EXPECT(k != nullptr);
    cudaKernel_t again = nullptr;
    CHECK(cudaGetKernel(&again, (const void *)twice));
    EXPECT(again == k);
    int nn = n;
    void *args[] = {&d, &nn};
    CHECK(cudaLaunchKernel((const void *)k, dim3((n + 127) / 128), dim3(128), args, 0, 0));
    CHECK(cudaMemcpy(back, d, sizeof back, cudaMemcpyDeviceToHost));
    EXPECT(back[0] == 0.0f && back[7] == 14.0f && back[n - 1] == 2.0f * (n - 1));
    cudaFuncAttributes fa;
    CHECK(cudaFuncGetAttributes(&fa, (const void *)k));
    EXPECT(fa.maxThreadsPerBlock > 0);
    // The architecture the kernel was compiled for (compute_90/sm_90 here), not the PTX ISA
    // version: CUB and Thrust pick their kernels by it.
    EXPECT(fa.ptxVersion == 90 && fa.binaryVersion == 90);
    // An attribute set through one handle reads back through both.
    CHECK(cudaFuncSetAttribute(twice, cudaFuncAttributeMaxDynamicSharedMemorySize, 2048));
    CHECK(cudaFuncGetAttributes(&fa, (const void *)k));
    EXPECT(fa.maxDynamicSharedSizeBytes == 2048);

#if CUDART_VERSION >= 12050
    cudaLibrary_t lib = nullptr;
    CHECK(cudaLibraryLoadData(&lib, PTX, nullptr, nullptr, 0, nullptr, nullptr, 0));
    unsigned count = 0;
    CHECK(cudaLibraryGetKernelCount(&count, lib));
    EXPECT(count == 2);
    cudaKernel_t ks[4] = {};
    CHECK(cudaLibraryEnumerateKernels(ks, 4, lib));
    EXPECT(ks[0] && ks[1] && ks[0] != ks[1] && !ks[2]);
    cudaKernel_t sa = nullptr, bump = nullptr;
    CHECK(cudaLibraryGetKernel(&sa, lib, "scale_add"));
    CHECK(cudaLibraryGetKernel(&bump, lib, "bump"));
    EXPECT((sa == ks[0] && bump == ks[1]) || (sa == ks[1] && bump == ks[0]));
    cudaKernel_t none = nullptr;
    EXPECT_ERR(cudaLibraryGetKernel(&none, lib, "no_such_kernel"), cudaErrorSymbolNotFound);
    cudaGetLastError();

    // Launched as cudaLaunchKernel and cudaLaunchKernelEx take it.
    CHECK(cudaMemcpy(d, host, sizeof host, cudaMemcpyHostToDevice));
    float a = 3.0f;
    unsigned un = n;
    void *sargs[] = {&d, &a, &un};
    CHECK(cudaLaunchKernel((const void *)sa, dim3((n + 127) / 128), dim3(128), sargs, 0, 0));
    CHECK(cudaMemcpy(back, d, sizeof back, cudaMemcpyDeviceToHost));
    EXPECT(back[0] == 1.0f && back[5] == 16.0f && back[n - 1] == 3.0f * (n - 1) + 1.0f);
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(3);
    cfg.blockDim = dim3(1);
    CHECK(cudaLaunchKernelExC(&cfg, (const void *)bump, nullptr));
    cudaFuncAttributes la;
    CHECK(cudaFuncGetAttributes(&la, (const void *)sa));
    EXPECT(la.maxThreadsPerBlock > 0 && la.numRegs >= 0);
    // (A kernel cudaFuncSetAttribute never touched: CUDA lets that call's values win.)
    CHECK(cudaKernelSetAttributeForDevice(sa, cudaFuncAttributeMaxDynamicSharedMemorySize, 1024, 0));
    CHECK(cudaFuncGetAttributes(&la, (const void *)sa));
    EXPECT(la.maxDynamicSharedSizeBytes == 1024);
    EXPECT_ERR(cudaKernelSetAttributeForDevice(sa, cudaFuncAttributeMaxDynamicSharedMemorySize, 1024, 99),
               cudaErrorInvalidDevice);
    cudaGetLastError();

    // Captured into a graph and launched twice.
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK(cudaLaunchKernel((const void *)bump, dim3(2), dim3(1), nullptr, 0, s));
    CHECK(cudaStreamEndCapture(s, &graph));
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaStreamSynchronize(s));

    // The library's variable counts 3 + 2 + 2 launches of bump's blocks.
    void *g = nullptr;
    size_t bytes = 0;
    CHECK(cudaLibraryGetGlobal(&g, &bytes, lib, "launches"));
    EXPECT(bytes == 4);
    unsigned launches = 0;
    CHECK(cudaMemcpy(&launches, g, 4, cudaMemcpyDeviceToHost));
    EXPECT(launches == 7);
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaLibraryUnload(lib));

    // From a file.
    char path[] = "/tmp/vcuda-library-XXXXXX";
    int fd = mkstemp(path);
    EXPECT(fd >= 0 && write(fd, PTX, strlen(PTX)) == (ssize_t)strlen(PTX));
    close(fd);
    cudaLibrary_t from_file = nullptr;
    CHECK(cudaLibraryLoadFromFile(&from_file, path, nullptr, nullptr, 0, nullptr, nullptr, 0));
    unlink(path);
    CHECK(cudaLibraryGetKernelCount(&count, from_file));
    EXPECT(count == 2);
    CHECK(cudaLibraryUnload(from_file));
    printf("library API: checked\n");
#endif
    CHECK(cudaFree(d));
    return finish();
}
