// SPDX-License-Identifier: Apache-2.0 OR MIT
// The CUDA driver API as a JIT-compiling program uses it: libcuda.so.1 opened at run time,
// entry points found with cuGetProcAddress_v2 (as cuda-python does) and with the runtime's
// cudaGetDriverEntryPoint, a module loaded from PTX text, launches with kernelParams and
// with a packed `extra` buffer, and pointers and streams shared with the runtime.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <unistd.h>
#include "common.h"
#include "cu_check.h"

#include "scale_add_ptx.h"

typedef CUresult (*GetProc)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
static GetProc get_proc;

template <typename F> static F sym(const char *name) {
    void *p = nullptr;
    CUdriverProcAddressQueryResult q;
    // The variants of this program's cuda.h (13.0, or 12.4 for the CUDA 12 build).
    CUresult r = get_proc(name, &p, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &q);
    if (r != CUDA_SUCCESS || q != CU_GET_PROC_ADDRESS_SUCCESS || !p) {
        printf("FAIL: cuGetProcAddress(%s) -> %d/%d\n", name, (int)r, (int)q);
        exit(1);
    }
    return (F)p;
}

int main() {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib) {
        printf("FAIL: dlopen libcuda.so.1: %s\n", dlerror());
        return 1;
    }
    get_proc = (GetProc)dlsym(lib, "cuGetProcAddress_v2");
    EXPECT(get_proc != nullptr);
    // cuda.h: a name the driver lacks is no error; the query result says so.
    {
        void *p = (void *)1;
        CUdriverProcAddressQueryResult q;
        EXPECT(get_proc("cuNoSuchFunction", &p, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &q) == CUDA_SUCCESS);
        EXPECT(p == nullptr && q == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    }
    // cudaProfiler.h's entry points are found too (NVIDIA's static runtime looks them up).
    auto cuProfilerStart_ = sym<CUresult (*)(void)>("cuProfilerStart");
    auto cuInit_ = sym<decltype(&cuInit)>("cuInit");
    auto cuDeviceGet_ = sym<decltype(&cuDeviceGet)>("cuDeviceGet");
    auto cuDeviceGetName_ = sym<decltype(&cuDeviceGetName)>("cuDeviceGetName");
    auto cuDeviceGetAttribute_ = sym<decltype(&cuDeviceGetAttribute)>("cuDeviceGetAttribute");
    auto cuDevicePrimaryCtxRetain_ = sym<decltype(&cuDevicePrimaryCtxRetain)>("cuDevicePrimaryCtxRetain");
    auto cuCtxSetCurrent_ = sym<decltype(&cuCtxSetCurrent)>("cuCtxSetCurrent");
    auto cuCtxGetCurrent_ = sym<decltype(&cuCtxGetCurrent)>("cuCtxGetCurrent");
    auto cuModuleLoadData_ = sym<decltype(&cuModuleLoadData)>("cuModuleLoadData");
    auto cuModuleGetFunction_ = sym<decltype(&cuModuleGetFunction)>("cuModuleGetFunction");
    auto cuModuleGetGlobal_ = sym<decltype(&cuModuleGetGlobal)>("cuModuleGetGlobal");
    auto cuFuncGetParamInfo_ = sym<decltype(&cuFuncGetParamInfo)>("cuFuncGetParamInfo");
    auto cuMemAlloc_ = sym<decltype(&cuMemAlloc)>("cuMemAlloc");
    auto cuMemFree_ = sym<decltype(&cuMemFree)>("cuMemFree");
    auto cuMemcpyHtoD_ = sym<decltype(&cuMemcpyHtoD)>("cuMemcpyHtoD");
    auto cuMemcpyDtoH_ = sym<decltype(&cuMemcpyDtoH)>("cuMemcpyDtoH");
    auto cuMemsetD32_ = sym<decltype(&cuMemsetD32)>("cuMemsetD32");
    auto cuLaunchKernel_ = sym<decltype(&cuLaunchKernel)>("cuLaunchKernel");
#if CUDA_VERSION >= 13000
    // At 13.0, cuCtxSynchronize is the variant that names its context.
    auto cuCtxSynchronize_ = sym<PFN_cuCtxSynchronize_v13000>("cuCtxSynchronize");
#define CTX_SYNC() cuCtxSynchronize_(nullptr)
#else
    auto cuCtxSynchronize_ = sym<decltype(&cuCtxSynchronize)>("cuCtxSynchronize");
#define CTX_SYNC() cuCtxSynchronize_()
#endif
    auto cuGetErrorName_ = sym<decltype(&cuGetErrorName)>("cuGetErrorName");
    auto cuModuleUnload_ = sym<decltype(&cuModuleUnload)>("cuModuleUnload");

    CU(cuInit_(0));
    CU(cuProfilerStart_());
    CUdevice dev;
    CU(cuDeviceGet_(&dev, 0));
    char name[256];
    CU(cuDeviceGetName_(name, sizeof name, dev));
    int warp = 0;
    CU(cuDeviceGetAttribute_(&warp, CU_DEVICE_ATTRIBUTE_WARP_SIZE, dev));
    EXPECT(warp == 32);
    CUcontext ctx, cur;
    CU(cuDevicePrimaryCtxRetain_(&ctx, dev));
    CU(cuCtxSetCurrent_(ctx));
    CU(cuCtxGetCurrent_(&cur));
    EXPECT(cur == ctx);

    CUmodule mod;
    CU(cuModuleLoadData_(&mod, PTX));
    CUfunction f;
    CU(cuModuleGetFunction_(&f, mod, "scale_add"));
    size_t off = 0, size = 0;
    CU(cuFuncGetParamInfo_(f, 1, &off, &size));
    EXPECT(off == 8 && size == 4);
    CUfunction none;
    EXPECT(cuModuleGetFunction_(&none, mod, "nope") == CUDA_ERROR_NOT_FOUND);
#if CUDA_VERSION >= 12040
    // The module's kernels, enumerated, and their names.
    auto cuModuleGetFunctionCount_ =
        sym<decltype(&cuModuleGetFunctionCount)>("cuModuleGetFunctionCount");
    auto cuModuleEnumerateFunctions_ =
        sym<decltype(&cuModuleEnumerateFunctions)>("cuModuleEnumerateFunctions");
    auto cuFuncGetName_ = sym<decltype(&cuFuncGetName)>("cuFuncGetName");
    unsigned nfuncs = 0;
    CU(cuModuleGetFunctionCount_(&nfuncs, mod));
    EXPECT(nfuncs == 2);
    CUfunction listed[3] = {};
    CU(cuModuleEnumerateFunctions_(listed, 3, mod));
    EXPECT(listed[0] != nullptr && listed[1] != nullptr && listed[2] == nullptr);
    const char *fname = nullptr, *fname2 = nullptr;
    CU(cuFuncGetName_(&fname, listed[0]));
    CU(cuFuncGetName_(&fname2, listed[1]));
    EXPECT(fname && fname2 &&
           ((strcmp(fname, "scale_add") == 0 && strcmp(fname2, "bump") == 0) ||
            (strcmp(fname, "bump") == 0 && strcmp(fname2, "scale_add") == 0)));
    CU(cuFuncGetName_(&fname, f));
    EXPECT(fname && strcmp(fname, "scale_add") == 0);
#endif
    CUdeviceptr launches;
    size_t lsize;
    CU(cuModuleGetGlobal_(&launches, &lsize, mod, "launches"));
    EXPECT(lsize == 4);
    {
        // A module's variable is device memory to the runtime too: cudaMemcpyDefault
        // finds its direction by the address (CuPy's RawModule.get_global copies).
        cudaPointerAttributes pa;
        CHECK(cudaPointerGetAttributes(&pa, (void *)launches));
        EXPECT(pa.type == cudaMemoryTypeDevice);
        unsigned seven = 7, got = 0;
        CHECK(cudaMemcpy((void *)launches, &seven, 4, cudaMemcpyDefault));
        CU(cuMemcpyDtoH_(&got, launches, 4));
        EXPECT(got == 7);
        CUdeviceptr tmp;
        CU(cuMemAlloc_(&tmp, 4));
        CHECK(cudaMemcpy((void *)tmp, (void *)launches, 4, cudaMemcpyDefault));
        got = 0;
        CU(cuMemcpyDtoH_(&got, tmp, 4));
        EXPECT(got == 7);
        CU(cuMemFree_(tmp));
        unsigned zero = 0;
        CHECK(cudaMemcpy((void *)launches, &zero, 4, cudaMemcpyDefault));
    }

    const unsigned n = 1000;
    float h[n];
    for (unsigned i = 0; i < n; i++) h[i] = (float)i;
    CUdeviceptr d;
    CU(cuMemAlloc_(&d, n * sizeof(float)));
    CU(cuMemcpyHtoD_(d, h, sizeof h));
    // kernelParams: one pointer per parameter.
    float a = 2.0f;
    unsigned nn = n;
    void *params[] = {&d, &a, &nn};
    CU(cuLaunchKernel_(f, (n + 127) / 128, 1, 1, 128, 1, 1, 0, nullptr, params, nullptr));
    // extra: the packed parameter buffer, on a stream made by the runtime.
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    struct {
        CUdeviceptr p;
        float a;
        unsigned n;
    } packed = {d, 0.5f, n};
    size_t packed_size = sizeof packed;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE,
                     &packed_size, CU_LAUNCH_PARAM_END};
    CU(cuLaunchKernel_(f, (n + 127) / 128, 1, 1, 128, 1, 1, 0, (CUstream)s, nullptr, extra));
    CHECK(cudaStreamSynchronize(s));
    CU(CTX_SYNC());
    float back[n];
    // The driver's pointer works with the runtime.
    CHECK(cudaMemcpy(back, (void *)d, sizeof back, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (unsigned i = 0; i < n; i++)
        if (back[i] != (i * 2.0f + 1.0f) * 0.5f + 1.0f) bad++;
    EXPECT(bad == 0);
    CU(cuMemsetD32_(d, 0x3f800000u, n));
    CU(cuMemcpyDtoH_(back, d, sizeof back));
    EXPECT(back[0] == 1.0f && back[n - 1] == 1.0f);

    // The runtime's route to the same entry points.
    void *p = nullptr;
    cudaDriverEntryPointQueryResult q;
    CHECK(cudaGetDriverEntryPoint("cuMemAlloc", &p, cudaEnableDefault, &q));
    EXPECT(q == cudaDriverEntryPointSuccess && p == (void *)cuMemAlloc_);
    // Not an error for the runtime (NVIDIA's says success): the query result tells.
    CHECK(cudaGetDriverEntryPoint("cuNoSuchFunction", &p, cudaEnableDefault, &q));
    EXPECT(q == cudaDriverEntryPointSymbolNotFound && p == nullptr);
    cudaGetLastError();

    const char *en = nullptr;
    CU(cuGetErrorName_(CUDA_ERROR_OUT_OF_MEMORY, &en));
    EXPECT(en && strcmp(en, "CUDA_ERROR_OUT_OF_MEMORY") == 0);
    EXPECT(cuGetErrorName_((CUresult)12345, &en) == CUDA_ERROR_INVALID_VALUE);
    // An entry point vcuda does not implement says so (NVIDIA's driver implements it).
    auto coredump = sym<decltype(&cuCoredumpGetAttributeGlobal)>("cuCoredumpGetAttributeGlobal");
    int on = 0;
    size_t on_size = sizeof on;
    CUresult dr = coredump(CU_COREDUMP_ENABLE_ON_EXCEPTION, &on, &on_size);
    EXPECT(dr == CUDA_ERROR_NOT_SUPPORTED || (!getenv("VCUDA_SOCKET") && dr == CUDA_SUCCESS));

    // Address ranges and pointer attributes of driver allocations.
    auto cuMemGetAddressRange_ = sym<decltype(&cuMemGetAddressRange)>("cuMemGetAddressRange");
    auto cuPointerGetAttribute_ = sym<decltype(&cuPointerGetAttribute)>("cuPointerGetAttribute");
    CUdeviceptr base;
    size_t range;
    CU(cuMemGetAddressRange_(&base, &range, d + 100));
    EXPECT(base == d && range == n * sizeof(float));
    unsigned mtype = 0;
    CU(cuPointerGetAttribute_(&mtype, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d));
    EXPECT(mtype == CU_MEMORYTYPE_DEVICE);
    int major = 0, minor = -1;
    auto cuDeviceComputeCapability_ = sym<decltype(&cuDeviceComputeCapability)>("cuDeviceComputeCapability");
    CU(cuDeviceComputeCapability_(&major, &minor, dev));
    EXPECT(major >= 5 && minor >= 0);

    // A host function in stream order.
    auto cuLaunchHostFunc_ = sym<decltype(&cuLaunchHostFunc)>("cuLaunchHostFunc");
    static int host_calls = 0;
    CU(cuLaunchHostFunc_((CUstream)s, [](void *p) { ++*(int *)p; }, &host_calls));
    CHECK(cudaStreamSynchronize(s));
    EXPECT(host_calls == 1);

    // A stream callback, in stream order, with the stream's status.
    auto cuStreamAddCallback_ = sym<decltype(&cuStreamAddCallback)>("cuStreamAddCallback");
    static int cb_calls = 0;
    static CUresult cb_status = CUDA_ERROR_UNKNOWN;
    CU(cuStreamAddCallback_((CUstream)s, [](CUstream, CUresult st, void *p) { ++*(int *)p; cb_status = st; }, &cb_calls, 0));
    CHECK(cudaStreamSynchronize(s));
    EXPECT(cb_calls == 1 && cb_status == CUDA_SUCCESS);

    // Several pointer attributes at once.
    auto cuPointerGetAttributes_ = sym<decltype(&cuPointerGetAttributes)>("cuPointerGetAttributes");
    CUpointer_attribute pattrs[2] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
    unsigned ptype = 0;
    int pord = -1;
    void *pdata[2] = {&ptype, &pord};
    CU(cuPointerGetAttributes_(2, pattrs, pdata, d));
    EXPECT(ptype == CU_MEMORYTYPE_DEVICE && pord == 0);

    // Peer copies between two contexts' memory (one device: the primary context twice).
    auto cuMemcpyPeer_ = sym<decltype(&cuMemcpyPeer)>("cuMemcpyPeer");
    auto cuMemcpyPeerAsync_ = sym<decltype(&cuMemcpyPeerAsync)>("cuMemcpyPeerAsync");
    CUdeviceptr d2;
    CU(cuMemAlloc_(&d2, n * sizeof(float)));
    CU(cuMemsetD32_(d2, 0, n));
    CU(cuMemcpyPeer_(d2, ctx, d, ctx, n * sizeof(float)));
    float peer[n];
    CU(cuMemcpyDtoH_(peer, d2, sizeof peer));
    float orig[n];
    CU(cuMemcpyDtoH_(orig, d, sizeof orig));
    EXPECT(memcmp(peer, orig, sizeof peer) == 0);
    CU(cuMemsetD32_(d2, 0, n));
    CU(cuMemcpyPeerAsync_(d2, ctx, d, ctx, n * sizeof(float), (CUstream)s));
    CHECK(cudaStreamSynchronize(s));
    CU(cuMemcpyDtoH_(peer, d2, sizeof peer));
    EXPECT(memcmp(peer, orig, sizeof peer) == 0);
    auto cuMemcpy3DPeer_ = sym<decltype(&cuMemcpy3DPeer)>("cuMemcpy3DPeer");
    CUDA_MEMCPY3D_PEER p3 = {};
    p3.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    p3.srcDevice = d;
    p3.srcContext = ctx;
    p3.srcPitch = 10 * sizeof(float);
    p3.srcHeight = 10;
    p3.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    p3.dstDevice = d2;
    p3.dstContext = ctx;
    p3.dstPitch = 10 * sizeof(float);
    p3.dstHeight = 10;
    p3.WidthInBytes = 10 * sizeof(float);
    p3.Height = 10;
    p3.Depth = n / 100;
    CU(cuMemsetD32_(d2, 0, n));
    CU(cuMemcpy3DPeer_(&p3));
    CU(cuMemcpyDtoH_(peer, d2, sizeof peer));
    EXPECT(memcmp(peer, orig, sizeof peer) == 0);
    CU(cuMemFree_(d2));

    // Unified copies (the direction from the addresses), stream queries, event timing.
    auto cuMemcpy_ = sym<decltype(&cuMemcpy)>("cuMemcpy");
    auto cuMemcpyAsync_ = sym<decltype(&cuMemcpyAsync)>("cuMemcpyAsync");
    float ubuf[n];
    CU(cuMemcpy_((CUdeviceptr)ubuf, d, sizeof ubuf));
    EXPECT(memcmp(ubuf, orig, sizeof ubuf) == 0);
    memset(ubuf, 0, sizeof ubuf);
    CU(cuMemcpyAsync_((CUdeviceptr)ubuf, d, sizeof ubuf, (CUstream)s));
    CHECK(cudaStreamSynchronize(s));
    EXPECT(memcmp(ubuf, orig, sizeof ubuf) == 0);
    auto cuStreamGetPriority_ = sym<decltype(&cuStreamGetPriority)>("cuStreamGetPriority");
    auto cuStreamGetFlags_ = sym<decltype(&cuStreamGetFlags)>("cuStreamGetFlags");
    int prio = 99;
    unsigned sflags = 99;
    CU(cuStreamGetPriority_((CUstream)s, &prio));
    CU(cuStreamGetFlags_((CUstream)s, &sflags));
    EXPECT(prio <= 0 && sflags == 0);
    // Stream ids and attributes: the runtime's, through the driver.
    auto cuStreamGetId_ = sym<decltype(&cuStreamGetId)>("cuStreamGetId");
    unsigned long long sid = 0, rid = 1;
    CU(cuStreamGetId_((CUstream)s, &sid));
    CHECK(cudaStreamGetId(s, &rid));
    EXPECT(sid == rid);
    auto cuStreamSetAttribute_ = sym<decltype(&cuStreamSetAttribute)>("cuStreamSetAttribute");
    auto cuStreamGetAttribute_ = sym<decltype(&cuStreamGetAttribute)>("cuStreamGetAttribute");
    auto cuStreamCopyAttributes_ = sym<decltype(&cuStreamCopyAttributes)>("cuStreamCopyAttributes");
    CUstreamAttrValue sv = {};
    sv.syncPolicy = CU_SYNC_POLICY_YIELD;
    CU(cuStreamSetAttribute_((CUstream)s, CU_STREAM_ATTRIBUTE_SYNCHRONIZATION_POLICY, &sv));
    cudaStream_t s2;
    CHECK(cudaStreamCreate(&s2));
    CU(cuStreamCopyAttributes_((CUstream)s2, (CUstream)s));
    CUstreamAttrValue got = {};
    CU(cuStreamGetAttribute_((CUstream)s2, CU_STREAM_ATTRIBUTE_SYNCHRONIZATION_POLICY, &got));
    EXPECT(got.syncPolicy == CU_SYNC_POLICY_YIELD);
    CHECK(cudaStreamDestroy(s2));
    // Limits and capabilities (NVIDIA's answers on an H100, driver 580).
    auto cuDeviceGetTexture1DLinearMaxWidth_ =
        sym<decltype(&cuDeviceGetTexture1DLinearMaxWidth)>("cuDeviceGetTexture1DLinearMaxWidth");
    size_t lw = 0;
    CU(cuDeviceGetTexture1DLinearMaxWidth_(&lw, CU_AD_FORMAT_FLOAT, 4, dev));
    EXPECT(lw == (size_t)1 << 28);
    CU(cuDeviceGetTexture1DLinearMaxWidth_(&lw, CU_AD_FORMAT_UNSIGNED_INT8, 1, dev));
    EXPECT(lw == (size_t)1 << 30);
#if CUDA_VERSION >= 13000
    auto cuDeviceGetHostAtomicCapabilities_ =
        sym<decltype(&cuDeviceGetHostAtomicCapabilities)>("cuDeviceGetHostAtomicCapabilities");
    CUatomicOperation aops[] = {CU_ATOMIC_OPERATION_INTEGER_ADD, CU_ATOMIC_OPERATION_FLOAT_ADD};
    unsigned acaps[2] = {5, 5};
    CU(cuDeviceGetHostAtomicCapabilities_(acaps, aops, 2, dev));
    EXPECT(acaps[0] == 0 && acaps[1] == 0);
#endif
    auto cuEventElapsedTime_ = sym<decltype(&cuEventElapsedTime)>("cuEventElapsedTime");
    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    CHECK(cudaEventRecord(e0, s));
    CHECK(cudaEventRecord(e1, s));
    CHECK(cudaEventSynchronize(e1));
    float ms = -1;
    CU(cuEventElapsedTime_(&ms, (CUevent)e0, (CUevent)e1));
    EXPECT(ms >= 0);
    CHECK(cudaEventDestroy(e0));
    CHECK(cudaEventDestroy(e1));
    auto cuFuncSetCacheConfig_ = sym<decltype(&cuFuncSetCacheConfig)>("cuFuncSetCacheConfig");
    CU(cuFuncSetCacheConfig_(f, CU_FUNC_CACHE_PREFER_SHARED));

    // The occupancy calculator on a CUfunction.
    auto cuOccupancyMaxActiveBlocksPerMultiprocessor_ =
        sym<decltype(&cuOccupancyMaxActiveBlocksPerMultiprocessor)>("cuOccupancyMaxActiveBlocksPerMultiprocessor");
    auto cuOccupancyMaxPotentialBlockSize_ =
        sym<decltype(&cuOccupancyMaxPotentialBlockSize)>("cuOccupancyMaxPotentialBlockSize");
    auto cuOccupancyAvailableDynamicSMemPerBlock_ =
        sym<decltype(&cuOccupancyAvailableDynamicSMemPerBlock)>("cuOccupancyAvailableDynamicSMemPerBlock");
    int per_sm = 0, min_grid = 0, best = 0, sms = 0;
    CU(cuDeviceGetAttribute_(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
    CU(cuOccupancyMaxActiveBlocksPerMultiprocessor_(&per_sm, f, 128, 0));
    EXPECT(per_sm > 0);
    CU(cuOccupancyMaxPotentialBlockSize_(&min_grid, &best, f, nullptr, 0, 0));
    EXPECT(best >= 32 && best <= 1024 && best % 32 == 0);
    int at_best = 0;
    CU(cuOccupancyMaxActiveBlocksPerMultiprocessor_(&at_best, f, best, 0));
    EXPECT(at_best * best >= per_sm * 128 && min_grid == at_best * sms);
    CU(cuOccupancyMaxPotentialBlockSize_(&min_grid, &best, f, nullptr, 0, 64));
    EXPECT(best > 0 && best <= 64);
    size_t dyn = 0;
    CU(cuOccupancyAvailableDynamicSMemPerBlock_(&dyn, f, 1, 128));
    EXPECT(dyn > 0);

    // The JIT linker and the library API, as cuda-python's cuda.core uses them, and an
    // extended launch.
    auto cuLinkCreate_ = sym<decltype(&cuLinkCreate)>("cuLinkCreate");
    auto cuLinkAddData_ = sym<decltype(&cuLinkAddData)>("cuLinkAddData");
    auto cuLinkComplete_ = sym<decltype(&cuLinkComplete)>("cuLinkComplete");
    auto cuLinkDestroy_ = sym<decltype(&cuLinkDestroy)>("cuLinkDestroy");
    auto cuLibraryLoadData_ = sym<decltype(&cuLibraryLoadData)>("cuLibraryLoadData");
    auto cuLibraryGetKernel_ = sym<decltype(&cuLibraryGetKernel)>("cuLibraryGetKernel");
    auto cuLibraryUnload_ = sym<decltype(&cuLibraryUnload)>("cuLibraryUnload");
    auto cuLaunchKernelEx_ = sym<decltype(&cuLaunchKernelEx)>("cuLaunchKernelEx");
    CUlinkState link;
    CU(cuLinkCreate_(0, nullptr, nullptr, &link));
    CU(cuLinkAddData_(link, CU_JIT_INPUT_PTX, (void *)PTX, strlen(PTX) + 1, "k.ptx", 0, nullptr, nullptr));
    void *image = nullptr;
    size_t image_size = 0;
    CU(cuLinkComplete_(link, &image, &image_size));
    EXPECT(image && image_size > 0);
    CUlibrary library;
    CU(cuLibraryLoadData_(&library, image, nullptr, nullptr, 0, nullptr, nullptr, 0));
    CU(cuLinkDestroy_(link));
    CUkernel kernel;
    CU(cuLibraryGetKernel_(&kernel, library, "scale_add"));
#if CUDA_VERSION >= 12040
    auto cuLibraryGetKernelCount_ =
        sym<decltype(&cuLibraryGetKernelCount)>("cuLibraryGetKernelCount");
    auto cuLibraryEnumerateKernels_ =
        sym<decltype(&cuLibraryEnumerateKernels)>("cuLibraryEnumerateKernels");
    auto cuKernelGetName_ = sym<decltype(&cuKernelGetName)>("cuKernelGetName");
    unsigned nkernels = 0;
    CU(cuLibraryGetKernelCount_(&nkernels, library));
    EXPECT(nkernels == 2);
    CUkernel klist[2] = {};
    CU(cuLibraryEnumerateKernels_(klist, 2, library));
    EXPECT(klist[0] != nullptr && klist[1] != nullptr);
    const char *kname = nullptr;
    CU(cuKernelGetName_(&kname, kernel));
    EXPECT(kname && strcmp(kname, "scale_add") == 0);
#endif
#if CUDA_VERSION >= 12050
    auto cuKernelGetLibrary_ = sym<decltype(&cuKernelGetLibrary)>("cuKernelGetLibrary");
    CUlibrary owner = nullptr;
    CU(cuKernelGetLibrary_(&owner, kernel));
    EXPECT(owner == library);
#endif
    CU(cuMemsetD32_(d, 0, n));
    CUlaunchAttribute attr;
    memset(&attr, 0, sizeof attr);
    attr.id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
    CUlaunchConfig cfg = {};
    cfg.gridDimX = (n + 127) / 128;
    cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = 128;
    cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    float three = 3.0f;
    void *params2[] = {&d, &three, &nn};
    CU(cuLaunchKernelEx_(&cfg, (CUfunction)kernel, params2, nullptr));
    CU(cuMemcpyDtoH_(back, d, sizeof back));
    EXPECT(back[0] == 1.0f && back[n - 1] == 1.0f);
    // A cooperative launch where the device supports them, the honest refusal elsewhere.
    int coop = 0;
    CU(cuDeviceGetAttribute_(&coop, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, dev));
    attr.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attr.value.cooperative = 1;
    CUresult cr = cuLaunchKernelEx_(&cfg, (CUfunction)kernel, params2, nullptr);
    EXPECT(coop ? cr == CUDA_SUCCESS : cr == CUDA_ERROR_NOT_SUPPORTED);
    // Cluster occupancy of the kernel in clusters of two, where the device has clusters.
    int has_clusters = 0;
    CU(cuDeviceGetAttribute_(&has_clusters, CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, dev));
    if (has_clusters) {
        auto cuOccupancyMaxActiveClusters_ =
            sym<decltype(&cuOccupancyMaxActiveClusters)>("cuOccupancyMaxActiveClusters");
        auto cuOccupancyMaxPotentialClusterSize_ = sym<decltype(&cuOccupancyMaxPotentialClusterSize)>(
            "cuOccupancyMaxPotentialClusterSize");
        attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        attr.value.clusterDim.x = 2;
        attr.value.clusterDim.y = attr.value.clusterDim.z = 1;
        int active = 0, largest = 0;
        CU(cuOccupancyMaxActiveClusters_(&active, (CUfunction)kernel, &cfg));
        CU(cuOccupancyMaxPotentialClusterSize_(&largest, (CUfunction)kernel, &cfg));
        EXPECT(active >= 1);
        EXPECT(largest >= 2 && largest <= 16);
    }
    CU(cuLibraryUnload_(library));

    // A module from a file.
    auto cuModuleLoad_ = sym<decltype(&cuModuleLoad)>("cuModuleLoad");
    char path[] = "/tmp/vcuda-driver-api-XXXXXX";
    int fd = mkstemp(path);
    EXPECT(fd >= 0 && write(fd, PTX, strlen(PTX)) == (ssize_t)strlen(PTX));
    close(fd);
    CUmodule from_file;
    CU(cuModuleLoad_(&from_file, path));
    unlink(path);
    CU(cuModuleUnload_(from_file));

    // Managed and mapped memory where the device supports them (the CPU executor over a
    // Unix socket), and the honest refusal where it does not.
    auto cuMemAllocManaged_ = sym<decltype(&cuMemAllocManaged)>("cuMemAllocManaged");
    auto cuMemHostAlloc_ = sym<decltype(&cuMemHostAlloc)>("cuMemHostAlloc");
    auto cuMemHostGetDevicePointer_ =
        sym<decltype(&cuMemHostGetDevicePointer)>("cuMemHostGetDevicePointer");
    auto cuMemHostGetFlags_ = sym<decltype(&cuMemHostGetFlags)>("cuMemHostGetFlags");
    auto cuMemFreeHost_ = sym<decltype(&cuMemFreeHost)>("cuMemFreeHost");
    int managed = -1, can_map = -1;
    CU(cuDeviceGetAttribute_(&managed, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, dev));
    CU(cuDeviceGetAttribute_(&can_map, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, dev));
    CUdeviceptr m;
    if (managed) {
        CU(cuMemAllocManaged_(&m, n * sizeof(float), CU_MEM_ATTACH_GLOBAL));
        float *mh = (float *)m;
        for (unsigned i = 0; i < n; ++i) mh[i] = (float)i;
        CU(cuMemcpyDtoH_(back, m, sizeof back));
        EXPECT(back[0] == 0.0f && back[n - 1] == (float)(n - 1));
#if CUDA_VERSION >= 13000
        // Advice and prefetches (CUDA 13's location forms), read back.
        auto cuMemAdvise_ = sym<decltype(&cuMemAdvise)>("cuMemAdvise");
        auto cuMemPrefetchAsync_ = sym<decltype(&cuMemPrefetchAsync)>("cuMemPrefetchAsync");
        auto cuMemRangeGetAttribute_ =
            sym<decltype(&cuMemRangeGetAttribute)>("cuMemRangeGetAttribute");
        CUmemLocation loc = {};
        loc.type = CU_MEM_LOCATION_TYPE_DEVICE;
        loc.id = 0;
        CU(cuMemAdvise_(m, n * sizeof(float), CU_MEM_ADVISE_SET_PREFERRED_LOCATION, loc));
        CU(cuMemPrefetchAsync_(m, n * sizeof(float), loc, 0, 0));
        int where = -7;
        CU(cuMemRangeGetAttribute_(&where, 4, CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, m,
                                   n * sizeof(float)));
        EXPECT(where == 0);
        where = -7;
        CU(cuMemRangeGetAttribute_(&where, 4, CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, m,
                                   n * sizeof(float)));
        EXPECT(where == 0);
#endif
        CU(cuMemFree_(m));
    } else {
        EXPECT(cuMemAllocManaged_(&m, 64, CU_MEM_ATTACH_GLOBAL) == CUDA_ERROR_NOT_SUPPORTED);
    }
    void *hp = nullptr;
    CU(cuMemHostAlloc_(&hp, 4096, CU_MEMHOSTALLOC_DEVICEMAP));
    unsigned hflags = 0;
    CU(cuMemHostGetFlags_(&hflags, hp));
    EXPECT(hflags & CU_MEMHOSTALLOC_DEVICEMAP || !can_map);
    CUdeviceptr hd = 0;
    CUresult hr = cuMemHostGetDevicePointer_(&hd, hp, 0);
    if (can_map) {
        EXPECT(hr == CUDA_SUCCESS && hd == (CUdeviceptr)hp);
    } else {
        EXPECT(hr != CUDA_SUCCESS);
    }
    CU(cuMemFreeHost_(hp));

    CU(cuMemFree_(d));
    CU(cuModuleUnload_(mod));
    CHECK(cudaStreamDestroy(s));

    // A fat binary larger than one vcuda request carries (64 MiB: here 65 MiB of PTX, one
    // empty kernel and blanks), in the wrapper nvcc's host code registers, as NVIDIA's
    // static runtime passes it on: a GPU's driver may load it; vcuda refuses it with
    // CUDA_ERROR_INVALID_IMAGE. Either way the program goes on (vcuda used to send it, and
    // the backend closed the session).
    {
        const size_t text = (size_t)65 << 20, at = 16 + 80;
        unsigned char *fb = (unsigned char *)calloc(1, at + text);
        EXPECT(fb != nullptr);
        auto put = [](unsigned char *p, uint64_t v, int n) { memcpy(p, &v, n); };
        put(fb, 0xBA55ED50u, 4);          // fat binary: magic, version 1, header 16 bytes
        put(fb + 4, 1, 2);
        put(fb + 6, 16, 2);
        put(fb + 8, 80 + text, 8);
        unsigned char *e = fb + 16;       // one PTX entry for sm_90, as nvcc writes it
        put(e, 1, 2);
        put(e + 4, 80, 4);
        put(e + 8, text, 8);
        put(e + 0x14, 64, 4);
        put(e + 0x1a, 8, 2);
        put(e + 0x1c, 90, 4);
        put(e + 0x28, 0x11, 8);
        put(e + 64, 72, 4);
        char *ptx = (char *)fb + at;
        const char *head = ".version 8.0\n.target sm_90\n.address_size 64\n"
                           ".visible .entry big_noop() { ret; }\n";
        memcpy(ptx, head, strlen(head));
        memset(ptx + strlen(head), ' ', text - strlen(head) - 2);
        ptx[text - 2] = '\n';
        struct { int magic, version; const void *data; void *file; } wrapper = {0x466243B1, 1, fb, nullptr};
        CUmodule big = nullptr;
        CUresult r = cuModuleLoadData_(&big, &wrapper);
        if (getenv("VCUDA_SOCKET")) EXPECT(r == CUDA_ERROR_INVALID_IMAGE);  // vcuda run
        if (r == CUDA_SUCCESS) CU(cuModuleUnload_(big));
        free(fb);
        int *after;
        CHECK(cudaMalloc(&after, 64));
        CHECK(cudaMemset(after, 0, 64));
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaFree(after));
    }

    // Popping the current context leaves none current (Numba's reset pops until
    // cuCtxGetCurrent says NULL); setting it again brings it back.
    auto cuCtxPopCurrent_ = sym<decltype(&cuCtxPopCurrent)>("cuCtxPopCurrent");
    CUcontext before = nullptr, popped = nullptr, after = (CUcontext)1;
    CU(cuCtxGetCurrent_(&before));
    EXPECT(before != nullptr);
    CU(cuCtxPopCurrent_(&popped));
    EXPECT(popped == before);
    CU(cuCtxGetCurrent_(&after));
    EXPECT(after == nullptr);
    CU(cuCtxSetCurrent_(before));
    CU(cuCtxGetCurrent_(&after));
    EXPECT(after == before);
    return finish();
}
