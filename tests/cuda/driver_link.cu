// SPDX-License-Identifier: Apache-2.0 OR MIT
// The driver API's JIT linker over several PTX modules that call into each other (an
// `.extern` function and variable resolved across modules, as Numba and cuda.core link
// their PTX with libraries), and the per-thread default stream entry points that
// cuGetProcAddress returns with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM (`_ptsz`):
// stream 0 there is the calling thread's default stream.
#include <cuda.h>
#include <dlfcn.h>
#include <thread>
#include "common.h"
#include "cu_check.h"

// Module A: the kernel, calling `twice` and reading `bias`, both defined in module B.
static const char *PTX_A = R"(
.version 7.0
.target sm_50
.address_size 64
.extern .func (.param .b32 r) twice(.param .b32 x);
.extern .global .align 4 .u32 bias;
.visible .entry apply(.param .u64 p, .param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<10>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [p];
    ld.param.u32 %r2, [n];
    mov.u32 %r3, %ctaid.x;
    mov.u32 %r4, %ntid.x;
    mov.u32 %r5, %tid.x;
    mad.lo.s32 %r1, %r3, %r4, %r5;
    setp.ge.u32 %p1, %r1, %r2;
    @%p1 bra DONE;
    {
    .param .b32 a0;
    .param .b32 r0;
    st.param.b32 [a0], %r1;
    call.uni (r0), twice, (a0);
    ld.param.b32 %r6, [r0];
    }
    ld.global.u32 %r7, [bias];
    add.s32 %r8, %r6, %r7;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r8;
DONE:
    ret;
}
)";

// Module B: the library.
static const char *PTX_B = R"(
.version 7.0
.target sm_50
.address_size 64
.visible .global .align 4 .u32 bias = 7;
.visible .func (.param .b32 r) twice(.param .b32 x)
{
    .reg .b32 %r<3>;
    ld.param.u32 %r1, [x];
    shl.b32 %r2, %r1, 1;
    st.param.u32 [r], %r2;
    ret;
}
)";

typedef CUresult (*GetProc)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
static GetProc get_proc;

template <typename F> static F sym(const char *name, cuuint64_t flags = CU_GET_PROC_ADDRESS_DEFAULT) {
    void *p = nullptr;
    CUdriverProcAddressQueryResult q;
    CUresult r = get_proc(name, &p, CUDA_VERSION, flags, &q);
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
    auto cuInit_ = sym<decltype(&cuInit)>("cuInit");
    auto cuDeviceGet_ = sym<decltype(&cuDeviceGet)>("cuDeviceGet");
    auto cuDevicePrimaryCtxRetain_ = sym<decltype(&cuDevicePrimaryCtxRetain)>("cuDevicePrimaryCtxRetain");
    auto cuCtxSetCurrent_ = sym<decltype(&cuCtxSetCurrent)>("cuCtxSetCurrent");
    auto cuLinkCreate_ = sym<decltype(&cuLinkCreate)>("cuLinkCreate");
    auto cuLinkAddData_ = sym<decltype(&cuLinkAddData)>("cuLinkAddData");
    auto cuLinkComplete_ = sym<decltype(&cuLinkComplete)>("cuLinkComplete");
    auto cuLinkDestroy_ = sym<decltype(&cuLinkDestroy)>("cuLinkDestroy");
    auto cuModuleLoadData_ = sym<decltype(&cuModuleLoadData)>("cuModuleLoadData");
    auto cuModuleGetFunction_ = sym<decltype(&cuModuleGetFunction)>("cuModuleGetFunction");
    auto cuModuleGetGlobal_ = sym<decltype(&cuModuleGetGlobal)>("cuModuleGetGlobal");
    auto cuModuleUnload_ = sym<decltype(&cuModuleUnload)>("cuModuleUnload");
    auto cuMemAlloc_ = sym<decltype(&cuMemAlloc)>("cuMemAlloc");
    auto cuMemFree_ = sym<decltype(&cuMemFree)>("cuMemFree");
    const cuuint64_t PT = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    auto launch_pt = sym<decltype(&cuLaunchKernel)>("cuLaunchKernel", PT);
    auto memset_pt = sym<decltype(&cuMemsetD32Async)>("cuMemsetD32Async", PT);
    auto dtoh_pt = sym<decltype(&cuMemcpyDtoHAsync)>("cuMemcpyDtoHAsync", PT);
    auto sync_pt = sym<decltype(&cuStreamSynchronize)>("cuStreamSynchronize", PT);
    auto query_pt = sym<decltype(&cuStreamQuery)>("cuStreamQuery", PT);

    CU(cuInit_(0));
    CUdevice dev;
    CU(cuDeviceGet_(&dev, 0));
    CUcontext ctx;
    CU(cuDevicePrimaryCtxRetain_(&ctx, dev));
    CU(cuCtxSetCurrent_(ctx));

    // Link the two modules; the kernel's calls and loads resolve into module B.
    CUlinkState link;
    CU(cuLinkCreate_(0, nullptr, nullptr, &link));
    CU(cuLinkAddData_(link, CU_JIT_INPUT_PTX, (void *)PTX_A, strlen(PTX_A) + 1, "a.ptx", 0, nullptr, nullptr));
    CU(cuLinkAddData_(link, CU_JIT_INPUT_PTX, (void *)PTX_B, strlen(PTX_B) + 1, "b.ptx", 0, nullptr, nullptr));
    void *image = nullptr;
    size_t image_size = 0;
    CU(cuLinkComplete_(link, &image, &image_size));
    CUmodule mod;
    CU(cuModuleLoadData_(&mod, image));
    CU(cuLinkDestroy_(link));
    CUfunction apply;
    CU(cuModuleGetFunction_(&apply, mod, "apply"));
    CUdeviceptr bias;
    size_t bias_size = 0;
    CU(cuModuleGetGlobal_(&bias, &bias_size, mod, "bias"));
    EXPECT(bias_size == 4);

    // Launch and copy on the per-thread default stream (stream 0 of the _ptsz entry points),
    // from this thread and from another one.
    const unsigned n = 1000;
    auto run = [&](unsigned *out) {
        CU(cuCtxSetCurrent_(ctx));
        CUdeviceptr d;
        CU(cuMemAlloc_(&d, n * 4));
        CU(memset_pt(d, 0xdeadbeef, n, 0));
        unsigned nn = n;
        void *params[] = {&d, &nn};
        CU(launch_pt(apply, (n + 127) / 128, 1, 1, 128, 1, 1, 0, 0, params, nullptr));
        CU(dtoh_pt(out, d, n * 4, 0));
        CU(sync_pt(0));
        CU(query_pt(0));
        CU(cuMemFree_(d));
    };
    static unsigned a[n], b[n];
    run(a);
    std::thread t([&] { run(b); });
    t.join();
    int bad = 0;
    for (unsigned i = 0; i < n; i++) {
        if ((a[i] != 2 * i + 7 || b[i] != 2 * i + 7) && bad++ < 5)
            printf("FAIL: out[%u] = %u / %u, want %u\n", i, a[i], b[i], 2 * i + 7);
    }
    EXPECT(bad == 0);

    CU(cuModuleUnload_(mod));
    // (The linked image's size is the linker's business: NVIDIA's and vcuda's differ.)
    EXPECT(image_size > 0);
    printf("linked; out[999] = %u\n", a[n - 1]);
    return finish();
}
