// SPDX-License-Identifier: Apache-2.0 OR MIT
// The driver's virtual memory management API as NVIDIA's vectorAddMMAP sample uses it:
// physical allocations (cuMemCreate) mapped side by side into one reserved range
// (cuMemAddressReserve, cuMemMap), made accessible (cuMemSetAccess), used by kernels and
// runtime copies as one buffer; the handles released while mapped; one allocation mapped
// at a second address (cuMemRetainAllocationHandle) showing the same bytes; queries
// (granularity, access, properties) and errors; everything unmapped and freed.
#include <cuda.h>
#include <dlfcn.h>
#include <vector>
#include "common.h"
#include "cu_check.h"

__global__ void fill(float *p, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = (float)(i % 1000) + 0.5f;
}

template <typename F> static F sym(void *lib, const char *name) {
    F f = (F)dlsym(lib, name);
    if (!f) {
        printf("FAIL: no %s in libcuda.so.1\n", name);
        exit(1);
    }
    return f;
}

int main() {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib) {
        printf("FAIL: dlopen libcuda.so.1: %s\n", dlerror());
        return 1;
    }
    auto cuMemGetAllocationGranularity_ =
        sym<decltype(&cuMemGetAllocationGranularity)>(lib, "cuMemGetAllocationGranularity");
    auto cuMemCreate_ = sym<decltype(&cuMemCreate)>(lib, "cuMemCreate");
    auto cuMemRelease_ = sym<decltype(&cuMemRelease)>(lib, "cuMemRelease");
    auto cuMemAddressReserve_ = sym<decltype(&cuMemAddressReserve)>(lib, "cuMemAddressReserve");
    auto cuMemAddressFree_ = sym<decltype(&cuMemAddressFree)>(lib, "cuMemAddressFree");
    auto cuMemMap_ = sym<decltype(&cuMemMap)>(lib, "cuMemMap");
    auto cuMemUnmap_ = sym<decltype(&cuMemUnmap)>(lib, "cuMemUnmap");
    auto cuMemSetAccess_ = sym<decltype(&cuMemSetAccess)>(lib, "cuMemSetAccess");
    auto cuMemGetAccess_ = sym<decltype(&cuMemGetAccess)>(lib, "cuMemGetAccess");
    auto cuMemRetainAllocationHandle_ =
        sym<decltype(&cuMemRetainAllocationHandle)>(lib, "cuMemRetainAllocationHandle");
    auto cuMemGetAllocationPropertiesFromHandle_ = sym<decltype(&cuMemGetAllocationPropertiesFromHandle)>(
        lib, "cuMemGetAllocationPropertiesFromHandle");

    CHECK(cudaFree(0));  // the runtime's primary context, current for the driver calls
    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t gran = 0;
    CU(cuMemGetAllocationGranularity_(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    EXPECT(gran > 0 && (gran & (gran - 1)) == 0);
    const size_t chunk = gran;

    // Two physical allocations, side by side in one reserved range.
    CUmemGenericAllocationHandle h[2];
    CU(cuMemCreate_(&h[0], chunk, &prop, 0));
    CU(cuMemCreate_(&h[1], chunk, &prop, 0));
    CUdeviceptr va = 0;
    CU(cuMemAddressReserve_(&va, 2 * chunk, 0, 0, 0));
    EXPECT(va != 0 && va % gran == 0);
    CU(cuMemMap_(va, chunk, 0, h[0], 0));
    CU(cuMemMap_(va + chunk, chunk, 0, h[1], 0));
    CUmemAccessDesc acc = {};
    acc.location = prop.location;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CU(cuMemSetAccess_(va, 2 * chunk, &acc, 1));
    unsigned long long flags = 0;
    CU(cuMemGetAccess_(&flags, &prop.location, va + chunk + 4));
    EXPECT(flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    // The mappings keep the memory: the handles can go now.
    CU(cuMemRelease_(h[0]));
    CU(cuMemRelease_(h[1]));

    // One buffer for kernels and runtime copies, across both allocations.
    const size_t n = 2 * chunk / sizeof(float);
    fill<<<128, 256>>>((float *)va, n);
    CHECK(cudaDeviceSynchronize());
    std::vector<float> back(n);
    CHECK(cudaMemcpy(back.data(), (void *)va, 2 * chunk, cudaMemcpyDeviceToHost));
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += back[i] != (float)(i % 1000) + 0.5f;
    EXPECT(bad == 0);
    // A copy across the boundary of the two allocations, and a memset across it.
    float pair[2] = {};
    CHECK(cudaMemcpy(pair, (void *)(va + chunk - 4), 8, cudaMemcpyDeviceToHost));
    EXPECT(pair[0] == (float)((chunk / 4 - 1) % 1000) + 0.5f);
    EXPECT(pair[1] == (float)((chunk / 4) % 1000) + 0.5f);
    CHECK(cudaMemset((void *)(va + chunk - 4), 0, 8));
    CHECK(cudaMemcpy(pair, (void *)(va + chunk - 4), 8, cudaMemcpyDeviceToHost));
    EXPECT(pair[0] == 0.0f && pair[1] == 0.0f);
    CHECK(cudaMemcpy((void *)(va + chunk - 4), &back[chunk / 4 - 1], 8, cudaMemcpyHostToDevice));
    float one = 0;
    CHECK(cudaMemcpy(&one, (void *)(va + chunk), 4, cudaMemcpyDefault));
    EXPECT(one == (float)((chunk / 4) % 1000) + 0.5f);
    cudaPointerAttributes pa;
    CHECK(cudaPointerGetAttributes(&pa, (void *)(va + chunk + 8)));
    EXPECT(pa.type == cudaMemoryTypeDevice);

    // The second allocation at a second address shows the same bytes.
    CUmemGenericAllocationHandle r;
    CU(cuMemRetainAllocationHandle_(&r, (void *)(va + chunk + 100)));
    CUmemAllocationProp got = {};
    CU(cuMemGetAllocationPropertiesFromHandle_(&got, r));
    EXPECT(got.type == CU_MEM_ALLOCATION_TYPE_PINNED && got.location.id == 0);
    CUdeviceptr va2 = 0;
    CU(cuMemAddressReserve_(&va2, chunk, 0, 0, 0));
    CU(cuMemMap_(va2, chunk, 0, r, 0));
    CU(cuMemSetAccess_(va2, chunk, &acc, 1));
    CU(cuMemRelease_(r));
    float x = 0;
    CHECK(cudaMemcpy(&x, (void *)(va2 + 40), 4, cudaMemcpyDeviceToHost));
    EXPECT(x == (float)((chunk / 4 + 10) % 1000) + 0.5f);
    CHECK(cudaMemset((void *)va2, 0, 64));
    CHECK(cudaMemcpy(&x, (void *)(va + chunk + 4), 4, cudaMemcpyDeviceToHost));
    EXPECT(x == 0.0f);

    // Errors: a size off the granularity, half a mapping.
    CUmemGenericAllocationHandle odd;
    EXPECT(cuMemCreate_(&odd, chunk + 1, &prop, 0) == CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuMemUnmap_(va, chunk / 2) == CUDA_ERROR_INVALID_VALUE);

    // Unmapped and freed: the addresses are no longer device memory.
    CU(cuMemUnmap_(va2, chunk));
    CU(cuMemAddressFree_(va2, chunk));
    CU(cuMemUnmap_(va, 2 * chunk));
    CU(cuMemAddressFree_(va, 2 * chunk));
    CHECK(cudaPointerGetAttributes(&pa, (void *)(va + 8)));
    EXPECT(pa.type == cudaMemoryTypeUnregistered);
    return finish();
}
