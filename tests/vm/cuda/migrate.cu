// SPDX-License-Identifier: Apache-2.0 OR MIT
// vcuda-vm-test: libs=cublas,curand
// vcuda-vm-test: expect=migrate: PASS
// vcuda-vm-test: expect_err=(move 3)
// vcuda-vm-test: expect_err=bytes of device memory received ahead
// vcuda-vm-test: vm=--migrate-on migrate-at:
// vcuda-vm-test: args=100 250 20000000 0 8000
// Live migration (issue 39): builds device state of many kinds (device memory, a module
// variable, a non-blocking stream, events, a captured and instantiated graph, a cuBLAS
// handle, a cuRAND generator, page-locked, mapped and managed memory, memory from the stream
// pool, a CUDA array read through a texture object and written through a surface object,
// memory of the driver's virtual memory management API mapped into a reserved range, its
// handle released), then works on it step
// by step, sleeping between steps, while `vcuda vm run --migrate-after` moves the guest to a
// second QEMU and backend. Every result is checked against the host's: the kernels' and
// cuBLAS's arithmetic step by step (kernels writing mapped and managed memory included), and
// the generator's numbers against a fresh generator of the same seed at the end, which shows
// the moved one went on where it stood. The VM test moves the guest three times, at the
// three phases below; its 100 steps make the program outlast the last migration, which
// takes seconds under TCG on a busy machine.
//
//   migrate [STEPS [SLEEP_MS [SPIN_ITERS [EXTRA_MIB [HOLD_MS]]]]]
//           (defaults 40, 250, 20000000, 0, 0)
//
// EXTRA_MIB more MiB of device memory hold numbers that do not compress, checked at the end
// (bench/migrate.sh moves guests with more and less device memory this way). With HOLD_MS,
// the program prints "migrate-at: PHASE" and then stays HOLD_MS in that phase, for
// `vcuda vm run --migrate-on migrate-at:` to move the guest there: before the first
// launch (sleeping), running kernels back to back, and copying back and forth (the
// migration's switchover, seconds after it starts under TCG, falls inside the phase).
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <curand.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <vector>

#define CK(x)                                                                                 \
    do {                                                                                      \
        cudaError_t e_ = (x);                                                                 \
        if (e_ != cudaSuccess) {                                                              \
            printf("%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));        \
            return 1;                                                                         \
        }                                                                                     \
    } while (0)
#define CKB(x)                                                                                \
    do {                                                                                      \
        if ((x) != CUBLAS_STATUS_SUCCESS) {                                                   \
            printf("%s:%d: %s failed\n", __FILE__, __LINE__, #x);                             \
            return 1;                                                                         \
        }                                                                                     \
    } while (0)
#define CKD(x)                                                                                \
    do {                                                                                      \
        CUresult e_ = (x);                                                                    \
        if (e_ != CUDA_SUCCESS) {                                                             \
            printf("%s:%d: %s: CUresult %d\n", __FILE__, __LINE__, #x, (int)e_);              \
            return 1;                                                                         \
        }                                                                                     \
    } while (0)
#define CKR(x)                                                                                \
    do {                                                                                      \
        if ((x) != CURAND_STATUS_SUCCESS) {                                                   \
            printf("%s:%d: %s failed\n", __FILE__, __LINE__, #x);                             \
            return 1;                                                                         \
        }                                                                                     \
    } while (0)

__device__ unsigned counter = 7;

__global__ void step(unsigned *a, int n, unsigned k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = a[i] * 2654435761u + k + counter;
}

__global__ void tick() { counter += 1; }

// A kernel that runs a while (a migration may find it running).
__global__ void spin(unsigned long long iters, unsigned *out) {
    unsigned x = 1;
    for (unsigned long long i = 0; i < iters; i++) x = x * 1664525u + 1013904223u;
    *out = x;
}

__device__ unsigned mix(size_t i) {
    unsigned x = (unsigned)i * 2246822519u + 374761393u;
    x ^= x >> 15;
    x *= 2654435761u;
    return x ^ (x >> 13);
}

__global__ void fill(unsigned *p, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = mix(i);
}

__global__ void check(const unsigned *p, size_t n, unsigned *bad) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        if (p[i] != mix(i)) atomicAdd(bad, 1u);
}

__global__ void stamp(unsigned *p, int n, unsigned k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = p[i] * 31u + k + i;
}

// Adds each texel of the array (through a texture object) to `acc` and writes it back
// plus k (through a surface object).
__global__ void texels(cudaTextureObject_t t, cudaSurfaceObject_t sf, float *acc, int w, int h,
                       float k) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x < w && y < h) {
        float v = tex2D<float>(t, x + 0.5f, y + 0.5f);
        acc[y * w + x] += v;
        surf2Dwrite(v + k, sf, x * (int)sizeof(float), y);
    }
}

static void host_step(std::vector<unsigned> &a, unsigned k, unsigned counter) {
    for (auto &v : a) v = v * 2654435761u + k + counter;
}

static double now_ms() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

// Stays `ms` in a phase: kernels back to back (each a few hundred ms on the CPU executor),
// or copies of 8 MiB to the device and back, each checked. Non-zero on a wrong result.
static int hold(cudaStream_t s, unsigned *spun, int ms, bool kernels) {
    printf("migrate-at: %s\n", kernels ? "kernels" : "copies");
    fflush(stdout);
    const size_t words = 2 << 20;
    std::vector<unsigned> up(words), down(words);
    unsigned *dev;
    CK(cudaMalloc(&dev, words * sizeof(unsigned)));
    unsigned round = 0;
    for (double t0 = now_ms(); now_ms() - t0 < ms; round++) {
        if (kernels) {
            spin<<<1, 1, 0, s>>>(1000000000ull, spun);
            CK(cudaStreamSynchronize(s));
            continue;
        }
        for (size_t i = 0; i < words; i++) up[i] = (unsigned)i * 7u + round;
        CK(cudaMemcpyAsync(dev, up.data(), words * sizeof(unsigned), cudaMemcpyHostToDevice, s));
        CK(cudaMemcpyAsync(down.data(), dev, words * sizeof(unsigned), cudaMemcpyDeviceToHost, s));
        CK(cudaStreamSynchronize(s));
        if (down != up) {
            printf("migrate: copy round %u came back wrong\n", round);
            return 1;
        }
    }
    CK(cudaFree(dev));
    return 0;
}

int main(int argc, char **argv) {
    int steps = argc > 1 ? atoi(argv[1]) : 40;
    int sleep_ms = argc > 2 ? atoi(argv[2]) : 250;
    unsigned long long spin_iters = argc > 3 ? strtoull(argv[3], 0, 10) : 20000000ull;
    size_t extra_words = (argc > 4 ? strtoull(argv[4], 0, 10) : 0) << 18;
    int hold_ms = argc > 5 ? atoi(argv[5]) : 0;
    const int n = 4096, nx = 1024, nr = 256;

    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(cudaEventRecord(e0, s));

    std::vector<unsigned> ha(n);
    for (int i = 0; i < n; i++) ha[i] = i * 3;
    unsigned *a, *spun;
    CK(cudaMalloc(&a, n * sizeof(unsigned)));
    CK(cudaMalloc(&spun, sizeof(unsigned)));
    CK(cudaMemcpy(a, ha.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice));

    std::vector<float> hx(nx), hy(nx, 0.0f);
    for (int i = 0; i < nx; i++) hx[i] = (float)i;
    float *x, *y;
    CK(cudaMalloc(&x, nx * sizeof(float)));
    CK(cudaMalloc(&y, nx * sizeof(float)));
    CK(cudaMemcpy(x, hx.data(), nx * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemset(y, 0, nx * sizeof(float)));
    cublasHandle_t blas;
    CKB(cublasCreate(&blas));
    CKB(cublasSetStream(blas, s));

    curandGenerator_t gen;
    CKR(curandCreateGenerator(&gen, CURAND_RNG_PSEUDO_XORWOW));
    CKR(curandSetPseudoRandomGeneratorSeed(gen, 1234));
    CKR(curandSetStream(gen, s));
    unsigned *r;
    CK(cudaMalloc(&r, nr * sizeof(unsigned)));
    std::vector<unsigned> drawn;

    unsigned *extra = nullptr;
    if (extra_words) {
        CK(cudaMalloc(&extra, extra_words * sizeof(unsigned)));
        fill<<<256, 256>>>(extra, extra_words);
        CK(cudaDeviceSynchronize());
    }

    // Page-locked memory for copies, mapped memory kernels write in place, managed memory.
    const int m = 2048;
    unsigned *pinned, *mapped_h, *mapped_d, *managed;
    CK(cudaMallocHost(&pinned, n * sizeof(unsigned)));
    CK(cudaHostAlloc(&mapped_h, m * sizeof(unsigned), cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer(&mapped_d, mapped_h, 0));
    CK(cudaMallocManaged(&managed, m * sizeof(unsigned)));
    std::vector<unsigned> hm(m), hg(m);
    for (int i = 0; i < m; i++) mapped_h[i] = hm[i] = i, managed[i] = hg[i] = 2 * i;

    // Memory from the stream-ordered pool, a copy of `a` after each step.
    unsigned *pooled;
    CK(cudaMallocAsync(&pooled, n * sizeof(unsigned), s));

    // A CUDA array, a texture object and a surface object over it.
    const int tw = 64, th = 16;
    std::vector<float> harr(tw * th), hacc(tw * th, 0.0f);
    for (int i = 0; i < tw * th; i++) harr[i] = (float)(i % tw + 100 * (i / tw));
    cudaChannelFormatDesc fdesc = cudaCreateChannelDesc<float>();
    cudaArray_t arr;
    CK(cudaMallocArray(&arr, &fdesc, tw, th, cudaArraySurfaceLoadStore));
    CK(cudaMemcpy2DToArray(arr, 0, 0, harr.data(), tw * sizeof(float), tw * sizeof(float), th,
                           cudaMemcpyHostToDevice));
    cudaResourceDesc res = {};
    res.resType = cudaResourceTypeArray;
    res.res.array.array = arr;
    cudaTextureDesc td = {};
    td.addressMode[0] = td.addressMode[1] = cudaAddressModeClamp;
    td.filterMode = cudaFilterModePoint;
    td.readMode = cudaReadModeElementType;
    cudaTextureObject_t tex;
    cudaSurfaceObject_t surf;
    CK(cudaCreateTextureObject(&tex, &res, &td, nullptr));
    CK(cudaCreateSurfaceObject(&surf, &res));
    float *acc;
    CK(cudaMalloc(&acc, tw * th * sizeof(float)));

    // The driver's virtual memory management API (through libcuda.so.1, as NVIDIA's
    // vectorAddMMAP sample uses it): a physical allocation mapped into a reserved range,
    // made accessible, its handle released (the mapping keeps it); `stamp` writes it.
    void *cu = dlopen("libcuda.so.1", RTLD_NOW);
    if (!cu) {
        printf("migrate: dlopen libcuda.so.1: %s\n", dlerror());
        return 1;
    }
#define CU_SYM(f) auto f##_ = (decltype(&f))dlsym(cu, #f)
    CU_SYM(cuMemGetAllocationGranularity);
    CU_SYM(cuMemCreate);
    CU_SYM(cuMemRelease);
    CU_SYM(cuMemAddressReserve);
    CU_SYM(cuMemAddressFree);
    CU_SYM(cuMemMap);
    CU_SYM(cuMemUnmap);
    CU_SYM(cuMemSetAccess);
#undef CU_SYM
    if (!cuMemGetAllocationGranularity_ || !cuMemCreate_ || !cuMemRelease_ ||
        !cuMemAddressReserve_ || !cuMemAddressFree_ || !cuMemMap_ || !cuMemUnmap_ ||
        !cuMemSetAccess_) {
        printf("migrate: libcuda.so.1 lacks the virtual memory management API\n");
        return 1;
    }
    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t gran = 0;
    CKD(cuMemGetAllocationGranularity_(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CUmemGenericAllocationHandle vh;
    CKD(cuMemCreate_(&vh, gran, &prop, 0));
    CUdeviceptr vva = 0;
    CKD(cuMemAddressReserve_(&vva, gran, 0, 0, 0));
    CKD(cuMemMap_(vva, gran, 0, vh, 0));
    CUmemAccessDesc vacc = {};
    vacc.location = prop.location;
    vacc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CKD(cuMemSetAccess_(vva, gran, &vacc, 1));
    CKD(cuMemRelease_(vh));
    unsigned *vmm = (unsigned *)vva;
    std::vector<unsigned> hv(m);
    for (int i = 0; i < m; i++) hv[i] = 5u * i;
    CK(cudaMemcpy(vmm, hv.data(), m * sizeof(unsigned), cudaMemcpyHostToDevice));
    CK(cudaMemset(acc, 0, tw * th * sizeof(float)));

    // A graph: tick, then a step with k = 1000.
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    tick<<<1, 1, 0, s>>>();
    step<<<(n + 255) / 256, 256, 0, s>>>(a, n, 1000);
    CK(cudaStreamEndCapture(s, &graph));
    CK(cudaGraphInstantiate(&exec, graph, 0));

    // Before the first launch: a pause a migration may fall in.
    if (hold_ms) {
        printf("migrate-at: before-first-launch\n");
        fflush(stdout);
        usleep(hold_ms * 1000);
    }
    usleep(sleep_ms * 1000);
    unsigned hcounter = 7;
    const float alpha = 0.5f;
    for (int k = 0; k < steps; k++) {
        step<<<(n + 255) / 256, 256, 0, s>>>(a, n, k);
        host_step(ha, k, hcounter);
        tick<<<1, 1, 0, s>>>();
        hcounter++;
        CK(cudaGraphLaunch(exec, s));
        hcounter++;
        host_step(ha, 1000, hcounter);
        CKB(cublasSaxpy(blas, nx, &alpha, x, 1, y, 1));
        for (int i = 0; i < nx; i++) hy[i] += alpha * hx[i];
        stamp<<<(m + 255) / 256, 256, 0, s>>>(mapped_d, m, k);
        stamp<<<(m + 255) / 256, 256, 0, s>>>(managed, m, k + 7);
        stamp<<<(m + 255) / 256, 256, 0, s>>>(vmm, m, k + 13);
        for (int i = 0; i < m; i++) hm[i] = hm[i] * 31u + k + i, hg[i] = hg[i] * 31u + k + 7 + i;
        for (int i = 0; i < m; i++) hv[i] = hv[i] * 31u + k + 13 + i;
        texels<<<dim3(tw / 32, th), 32, 0, s>>>(tex, surf, acc, tw, th, (float)(k % 7));
        for (int i = 0; i < tw * th; i++) hacc[i] += harr[i], harr[i] += (float)(k % 7);
        CKR(curandGenerate(gen, r, nr));
        std::vector<unsigned> part(nr);
        CK(cudaMemcpyAsync(part.data(), r, nr * sizeof(unsigned), cudaMemcpyDeviceToHost, s));
        if (k % 8 == 4) spin<<<1, 1, 0, s>>>(spin_iters, spun);
        if (hold_ms && k == steps / 4 && hold(s, spun, hold_ms, true)) return 1;
        if (hold_ms && k == steps / 2 && hold(s, spun, hold_ms, false)) return 1;
        CK(cudaMemcpyAsync(pooled, a, n * sizeof(unsigned), cudaMemcpyDeviceToDevice, s));
        CK(cudaMemcpyAsync(pinned, pooled, n * sizeof(unsigned), cudaMemcpyDeviceToHost, s));
        CK(cudaStreamSynchronize(s));
        drawn.insert(drawn.end(), part.begin(), part.end());
        int wrong = 0;
        for (int i = 0; i < n; i++) wrong += pinned[i] != ha[i];
        for (int i = 0; i < m; i++) wrong += (mapped_h[i] != hm[i]) + (managed[i] != hg[i]);
        if (wrong) {
            printf("migrate: step %d: %d words of page-locked, mapped or managed memory differ\n",
                   k, wrong);
            return 1;
        }
        if (k % 10 == 0) printf("migrate: step %d\n", k);
        fflush(stdout);
        usleep(sleep_ms * 1000);
    }
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    float ms = -1;
    CK(cudaEventElapsedTime(&ms, e0, e1));

    int bad = 0;
    std::vector<unsigned> da(n);
    CK(cudaMemcpy(da.data(), a, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) bad += da[i] != ha[i];
    if (bad) printf("migrate: %d of %d words of device memory differ\n", bad, n);
    unsigned dcounter = 0;
    CK(cudaMemcpyFromSymbol(&dcounter, counter, sizeof(unsigned)));
    if (dcounter != hcounter) {
        printf("migrate: module variable %u, expected %u\n", dcounter, hcounter);
        bad++;
    }
    std::vector<float> dy(nx);
    CK(cudaMemcpy(dy.data(), y, nx * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < nx; i++)
        if (dy[i] != hy[i]) {
            printf("migrate: saxpy y[%d] = %g, expected %g\n", i, dy[i], hy[i]);
            bad++;
            break;
        }
    std::vector<unsigned> dv(m);
    CK(cudaMemcpy(dv.data(), vmm, m * sizeof(unsigned), cudaMemcpyDeviceToHost));
    if (dv != hv) {
        printf("migrate: the virtual memory management API's memory differs\n");
        bad++;
    }
    CKD(cuMemUnmap_(vva, gran));
    CKD(cuMemAddressFree_(vva, gran));
    std::vector<float> darr(tw * th), dacc(tw * th);
    CK(cudaMemcpy2DFromArray(darr.data(), tw * sizeof(float), arr, 0, 0, tw * sizeof(float), th,
                             cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(dacc.data(), acc, tw * th * sizeof(float), cudaMemcpyDeviceToHost));
    if (darr != harr || dacc != hacc) {
        printf("migrate: the CUDA array or what its texture read differs\n");
        bad++;
    }
    // A fresh generator of the same seed draws the same numbers in one go.
    curandGenerator_t fresh;
    CKR(curandCreateGenerator(&fresh, CURAND_RNG_PSEUDO_XORWOW));
    CKR(curandSetPseudoRandomGeneratorSeed(fresh, 1234));
    unsigned *all;
    size_t total = (size_t)steps * nr;
    CK(cudaMalloc(&all, total * sizeof(unsigned)));
    CKR(curandGenerate(fresh, all, total));
    std::vector<unsigned> want(total);
    CK(cudaMemcpy(want.data(), all, total * sizeof(unsigned), cudaMemcpyDeviceToHost));
    if (want != drawn) {
        printf("migrate: the generator's numbers differ from a fresh generator's\n");
        bad++;
    }
    if (extra) {
        unsigned *dbad, nbad = 0;
        CK(cudaMalloc(&dbad, sizeof(unsigned)));
        CK(cudaMemset(dbad, 0, sizeof(unsigned)));
        check<<<256, 256>>>(extra, extra_words, dbad);
        CK(cudaMemcpy(&nbad, dbad, sizeof(unsigned), cudaMemcpyDeviceToHost));
        if (nbad) {
            printf("migrate: %u of %zu words of the extra device memory differ\n", nbad,
                   extra_words);
            bad++;
        }
    }
    if (!(ms >= 0)) {
        printf("migrate: elapsed time %g ms\n", ms);
        bad++;
    }
    CKR(curandDestroyGenerator(fresh));
    CKR(curandDestroyGenerator(gen));
    CKB(cublasDestroy(blas));
    CK(cudaDestroyTextureObject(tex));
    CK(cudaDestroySurfaceObject(surf));
    CK(cudaFreeArray(arr));
    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(graph));
    CK(cudaFreeAsync(pooled, s));
    CK(cudaStreamSynchronize(s));
    CK(cudaStreamDestroy(s));
    CK(cudaFreeHost(pinned));
    CK(cudaFreeHost(mapped_h));
    CK(cudaFree(managed));
    printf("migrate: %s (%d steps, %.0f ms between the events)\n", bad ? "FAIL" : "PASS", steps,
           ms);
    return bad ? 1 : 0;
}
