// SPDX-License-Identifier: Apache-2.0 OR MIT
// vcuda-vm-test: executor=chain
// vcuda-vm-test: libs=cublas,curand
// vcuda-vm-test: expect=migrate-cuda: PASS
// vcuda-vm-test: expect_err=(move 2)
// vcuda-vm-test: vm=--migrate-on migrate-at:
// vcuda-vm-test: args=24 150 20000
// Live migration on the CUDA executor (issue 39): the guest moves twice while a session of
// `--executor cuda` (a backend started with --cuda-migratable) holds device memory with
// holes between allocations, a module variable whose address it asked for, a non-blocking
// stream, events, an instantiated graph, a cuBLAS handle, four cuRAND generators (a
// device XORWOW, a host Philox with an offset, a device Sobol in four dimensions, a device
// MTGP32), a CUDA array with a texture and a surface object over it (numbered past a hole a
// destroyed object left: kernels hold the numbers, which the move keeps), objects of the
// driver's virtual memory management API (a physical allocation mapped, accessible and
// released, written every step; another mapped nowhere across the moves), and works on
// them step by step. Every result is checked against the host's, and
// what the generators drew step by step across the moves against fresh generators drawing
// it all at once (the MTGP32, which cuRAND cannot skip ahead, in the same steps). The
// VM test runs the CUDA executor over vcuda's own libcuda.so.1 and a CPU backend (the
// driver-API chain): the migration moves the CUDA executor's session, whose driver is
// vcuda's (and whose cuRAND is vcuda's libcurand, so the offsets are the CPU executor's).
//
//   migrate_cuda [STEPS [SLEEP_MS [HOLD_MS]]]
//
// With HOLD_MS it prints "migrate-at: PHASE" and stays HOLD_MS there, for
// `vcuda vm run --migrate-on migrate-at:` to move the guest: before the first launch and
// while kernels run back to back.
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <curand.h>
#include <dlfcn.h>
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
#define CKR(x)                                                                                \
    do {                                                                                      \
        if ((x) != CURAND_STATUS_SUCCESS) {                                                   \
            printf("%s:%d: %s failed\n", __FILE__, __LINE__, #x);                             \
            return 1;                                                                         \
        }                                                                                     \
    } while (0)
#define CKD(x)                                                                                \
    do {                                                                                      \
        CUresult r_ = (x);                                                                    \
        if (r_ != CUDA_SUCCESS) {                                                             \
            printf("%s:%d: %s: CUresult %d\n", __FILE__, __LINE__, #x, (int)r_);              \
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

__device__ unsigned counter = 7;

__global__ void step(unsigned *a, int n, unsigned k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = a[i] * 2654435761u + k + counter;
}

__global__ void tick() { counter += 1; }

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

__global__ void spin(unsigned long long iters, unsigned *out) {
    unsigned x = 1;
    for (unsigned long long i = 0; i < iters; i++) x = x * 1664525u + 1013904223u;
    *out = x;
}

static void host_step(std::vector<unsigned> &a, unsigned k, unsigned c) {
    for (auto &v : a) v = v * 2654435761u + k + c;
}

// The generators of the test, set up alike for the stepwise draws and the fresh ones.
static int make_generators(curandGenerator_t g[4]) {
    CKR(curandCreateGenerator(&g[0], CURAND_RNG_PSEUDO_XORWOW));
    CKR(curandSetPseudoRandomGeneratorSeed(g[0], 1234));
    CKR(curandCreateGeneratorHost(&g[1], CURAND_RNG_PSEUDO_PHILOX4_32_10));
    CKR(curandSetPseudoRandomGeneratorSeed(g[1], 99));
    CKR(curandSetGeneratorOffset(g[1], 7));
    CKR(curandCreateGenerator(&g[2], CURAND_RNG_QUASI_SOBOL32));
    CKR(curandSetQuasiRandomGeneratorDimensions(g[2], 4));
    CKR(curandCreateGenerator(&g[3], CURAND_RNG_PSEUDO_MTGP32));
    CKR(curandSetPseudoRandomGeneratorSeed(g[3], 42));
    return 0;
}

static double now_ms() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

// What the generators drew step by step against fresh ones drawing it all in one go.
static int check_generators(curandGenerator_t gen[4], unsigned *words,
                            const std::vector<float> &normals, float *points, unsigned *mt,
                            int steps, int nw, int nn, int np, int dims, int nm) {
    size_t tw = (size_t)steps * nw, tn = (size_t)steps * nn, tp = (size_t)steps * np * dims;
    curandGenerator_t fresh[4];
    if (make_generators(fresh)) return 1;
    unsigned *all_w;
    float *all_p;
    CK(cudaMalloc(&all_w, tw * sizeof(unsigned)));
    CK(cudaMalloc(&all_p, tp * sizeof(float)));
    std::vector<float> want_n(tn);
    CKR(curandGenerate(fresh[0], all_w, tw));
    CKR(curandGenerateNormal(fresh[1], want_n.data(), tn, 1.0f, 2.0f));
    CKR(curandGenerateUniform(fresh[2], all_p, tp));
    size_t tm = (size_t)steps * nm;
    unsigned *all_m;
    CK(cudaMalloc(&all_m, tm * sizeof(unsigned)));
    for (int k = 0; k < steps; k++) CKR(curandGenerate(fresh[3], all_m + (size_t)k * nm, nm));
    std::vector<unsigned> got_m(tm), want_m(tm);
    CK(cudaMemcpy(got_m.data(), mt, tm * sizeof(unsigned), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(want_m.data(), all_m, tm * sizeof(unsigned), cudaMemcpyDeviceToHost));
    std::vector<unsigned> got_w(tw), want_w(tw);
    std::vector<float> got_p(tp), want_p(tp);
    CK(cudaMemcpy(got_w.data(), words, tw * sizeof(unsigned), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(want_w.data(), all_w, tw * sizeof(unsigned), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(got_p.data(), points, tp * sizeof(float), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(want_p.data(), all_p, tp * sizeof(float), cudaMemcpyDeviceToHost));
    size_t wrong_w = 0, wrong_n = 0, wrong_p = 0, wrong_m = 0;
    for (size_t i = 0; i < tw; i++) wrong_w += got_w[i] != want_w[i];
    for (size_t i = 0; i < tm; i++) wrong_m += got_m[i] != want_m[i];
    for (size_t i = 0; i < tn; i++) wrong_n += normals[i] != want_n[i];
    // Step k drew points [k * np, (k + 1) * np) of every dimension, dimension-major; the
    // single draw holds dimension d's points at [d * steps * np, (d + 1) * steps * np).
    for (int k = 0; k < steps; k++)
        for (int d = 0; d < dims; d++)
            for (int j = 0; j < np; j++)
                wrong_p += got_p[((size_t)k * dims + d) * np + j] !=
                           want_p[(size_t)d * steps * np + (size_t)k * np + j];
    if (wrong_w || wrong_n || wrong_p || wrong_m) {
        printf("migrate-cuda: generators differ from fresh ones: %zu words, %zu normals, %zu "
               "points, %zu MTGP32 words\n",
               wrong_w, wrong_n, wrong_p, wrong_m);
        return 1;
    }
    for (int i = 0; i < 4; i++) {
        CKR(curandDestroyGenerator(gen[i]));
        CKR(curandDestroyGenerator(fresh[i]));
    }
    CK(cudaFree(all_w));
    CK(cudaFree(all_p));
    CK(cudaFree(words));
    CK(cudaFree(points));
    CK(cudaFree(all_m));
    CK(cudaFree(mt));
    return 0;
}

int main(int argc, char **argv) {
    int steps = argc > 1 ? atoi(argv[1]) : 24;
    int sleep_ms = argc > 2 ? atoi(argv[2]) : 150;
    int hold_ms = argc > 3 ? atoi(argv[3]) : 0;
    const int n = 4096, nx = 1024;

    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(cudaEventRecord(e0, s));

    // Allocations with holes between them (the freed ones), some sharing 2 MiB pages, one
    // spanning several.
    unsigned *a, *hole1, *spun, *hole2, *big;
    CK(cudaMalloc(&hole1, 1000));
    CK(cudaMalloc(&a, n * sizeof(unsigned)));
    CK(cudaMalloc(&hole2, 3 << 20));
    CK(cudaMalloc(&spun, sizeof(unsigned)));
    const size_t bigw = (5 << 20) / sizeof(unsigned);
    CK(cudaMalloc(&big, bigw * sizeof(unsigned)));
    CK(cudaFree(hole1));
    CK(cudaFree(hole2));
    std::vector<unsigned> ha(n), hbig(bigw);
    for (int i = 0; i < n; i++) ha[i] = i * 3;
    for (size_t i = 0; i < bigw; i++) hbig[i] = (unsigned)(i * 2246822519u);
    CK(cudaMemcpy(a, ha.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(big, hbig.data(), bigw * sizeof(unsigned), cudaMemcpyHostToDevice));

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

    // A CUDA array, a texture object and a surface object over it, made after an object
    // destroyed since (a hole in the driver's numbers). Made before the module loads (at
    // its first use, below): over vcuda's libcuda.so.1 the array takes device addresses
    // from where the module's variable, whose address the guest knows, then goes, so the
    // move must make the two again in this order (MIGRATION.md).
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
    cudaTextureObject_t gone, tex;
    cudaSurfaceObject_t surf;
    CK(cudaCreateTextureObject(&gone, &res, &td, nullptr));
    CK(cudaCreateTextureObject(&tex, &res, &td, nullptr));
    CK(cudaCreateSurfaceObject(&surf, &res));
    CK(cudaDestroyTextureObject(gone));
    float *acc;
    CK(cudaMalloc(&acc, tw * th * sizeof(float)));
    CK(cudaMemset(acc, 0, tw * th * sizeof(float)));

    // The module variable, read through its symbol before the moves (its address known).
    unsigned c0 = 0;
    CK(cudaMemcpyFromSymbol(&c0, counter, sizeof(c0)));
    if (c0 != 7) {
        printf("migrate-cuda: counter starts at %u\n", c0);
        return 1;
    }

    // The driver's virtual memory management API (through libcuda.so.1, as NVIDIA's
    // vectorAddMMAP sample uses it): one physical allocation mapped into a reserved range,
    // accessible, its handle released (the mapping keeps it), which `stamp` writes every
    // step; another written through a mapping unmapped before the moves, so it is mapped
    // nowhere while they happen, and mapped again at the end.
    void *cu = dlopen("libcuda.so.1", RTLD_NOW);
    if (!cu) {
        printf("migrate-cuda: dlopen libcuda.so.1: %s\n", dlerror());
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
        printf("migrate-cuda: libcuda.so.1 lacks the virtual memory management API\n");
        return 1;
    }
    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t gran = 0;
    CKD(cuMemGetAllocationGranularity_(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CUmemAccessDesc vacc = {};
    vacc.location = prop.location;
    vacc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CUmemGenericAllocationHandle vh, vh2;
    CKD(cuMemCreate_(&vh, gran, &prop, 0));
    CKD(cuMemCreate_(&vh2, gran, &prop, 0));
    CUdeviceptr vva = 0, vvb = 0;
    CKD(cuMemAddressReserve_(&vva, gran, 0, 0, 0));
    CKD(cuMemAddressReserve_(&vvb, gran, 0, 0, 0));
    CKD(cuMemMap_(vva, gran, 0, vh, 0));
    CKD(cuMemSetAccess_(vva, gran, &vacc, 1));
    CKD(cuMemRelease_(vh));
    const int m = 2048;
    unsigned *vmm = (unsigned *)vva;
    std::vector<unsigned> hv(m), hv2(m);
    for (int i = 0; i < m; i++) hv[i] = 5u * i, hv2[i] = 0x9e3779b9u * i;
    CK(cudaMemcpy(vmm, hv.data(), m * sizeof(unsigned), cudaMemcpyHostToDevice));
    CKD(cuMemMap_(vvb, gran, 0, vh2, 0));
    CKD(cuMemSetAccess_(vvb, gran, &vacc, 1));
    CK(cudaMemcpy((void *)vvb, hv2.data(), m * sizeof(unsigned), cudaMemcpyHostToDevice));
    CKD(cuMemUnmap_(vvb, gran));

    // Per step: 512 words (XORWOW), 512 normal floats (Philox, host), 64 points of 4
    // dimensions (Sobol, dimension-major within each draw), 256 words (MTGP32).
    const int nw = 512, nn = 512, np = 64, dims = 4, nm = 256;
    curandGenerator_t gen[4];
    if (make_generators(gen)) return 1;
    CKR(curandSetStream(gen[0], s));
    CKR(curandSetStream(gen[2], s));
    CKR(curandSetStream(gen[3], s));
    unsigned *mt;
    CK(cudaMalloc(&mt, (size_t)steps * nm * sizeof(unsigned)));
    unsigned *words;
    float *points;
    CK(cudaMalloc(&words, (size_t)steps * nw * sizeof(unsigned)));
    CK(cudaMalloc(&points, (size_t)steps * np * dims * sizeof(float)));
    std::vector<float> normals((size_t)steps * nn);

    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    tick<<<1, 1, 0, s>>>();
    step<<<(n + 255) / 256, 256, 0, s>>>(a, n, 1000);
    CK(cudaStreamEndCapture(s, &graph));
    CK(cudaGraphInstantiate(&exec, graph, 0));

    if (hold_ms) {
        printf("migrate-at: before-first-launch\n");
        fflush(stdout);
        usleep(hold_ms * 1000);
    }
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
        CKR(curandGenerate(gen[0], words + (size_t)k * nw, nw));
        CKR(curandGenerateNormal(gen[1], normals.data() + (size_t)k * nn, nn, 1.0f, 2.0f));
        CKR(curandGenerateUniform(gen[2], points + (size_t)k * np * dims, np * dims));
        CKR(curandGenerate(gen[3], mt + (size_t)k * nm, nm));
        for (int i = 0; i < nx; i++) hy[i] += alpha * hx[i];
        texels<<<dim3(tw / 32, th), 32, 0, s>>>(tex, surf, acc, tw, th, (float)(k % 7));
        stamp<<<(m + 255) / 256, 256, 0, s>>>(vmm, m, k + 13);
        for (int i = 0; i < m; i++) hv[i] = hv[i] * 31u + k + 13 + i;
        for (int i = 0; i < tw * th; i++) {
            hacc[i] += harr[i];
            harr[i] += (float)(k % 7);
        }
        if (hold_ms && k == steps / 2) {
            printf("migrate-at: kernels\n");
            fflush(stdout);
            for (double t0 = now_ms(); now_ms() - t0 < hold_ms;) {
                spin<<<1, 1, 0, s>>>(2000000ull, spun);
                CK(cudaStreamSynchronize(s));
            }
        }
        std::vector<unsigned> got(n);
        CK(cudaMemcpyAsync(got.data(), a, n * sizeof(unsigned), cudaMemcpyDeviceToHost, s));
        CK(cudaStreamSynchronize(s));
        int wrong = 0;
        for (int i = 0; i < n; i++) wrong += got[i] != ha[i];
        if (wrong) {
            printf("migrate-cuda: step %d: %d words differ\n", k, wrong);
            return 1;
        }
        if (k % 8 == 0) printf("migrate-cuda: step %d\n", k);
        fflush(stdout);
        usleep(sleep_ms * 1000);
    }
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    float ms = -1;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    unsigned c1 = 0;
    CK(cudaMemcpyFromSymbol(&c1, counter, sizeof(c1)));
    std::vector<float> gy(nx);
    CK(cudaMemcpy(gy.data(), y, nx * sizeof(float), cudaMemcpyDeviceToHost));
    std::vector<unsigned> gbig(bigw);
    CK(cudaMemcpy(gbig.data(), big, bigw * sizeof(unsigned), cudaMemcpyDeviceToHost));
    int wrong = 0;
    for (int i = 0; i < nx; i++) wrong += gy[i] != hy[i];
    for (size_t i = 0; i < bigw; i++) wrong += gbig[i] != hbig[i];
    if (c1 != hcounter || wrong || ms < 0) {
        printf("migrate-cuda: counter %u (want %u), %d values differ, %.1f ms\n", c1, hcounter,
               wrong, ms);
        return 1;
    }
    if (check_generators(gen, words, normals, points, mt, steps, nw, nn, np, dims, nm)) return 1;
    std::vector<float> darr(tw * th), dacc(tw * th);
    CK(cudaMemcpy2DFromArray(darr.data(), tw * sizeof(float), arr, 0, 0, tw * sizeof(float), th,
                             cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(dacc.data(), acc, tw * th * sizeof(float), cudaMemcpyDeviceToHost));
    if (darr != harr || dacc != hacc) {
        printf("migrate-cuda: the CUDA array or what its texture read differs\n");
        return 1;
    }
    std::vector<unsigned> dv(m), dv2(m);
    CK(cudaMemcpy(dv.data(), vmm, m * sizeof(unsigned), cudaMemcpyDeviceToHost));
    CKD(cuMemMap_(vvb, gran, 0, vh2, 0));
    CKD(cuMemSetAccess_(vvb, gran, &vacc, 1));
    CK(cudaMemcpy(dv2.data(), (void *)vvb, m * sizeof(unsigned), cudaMemcpyDeviceToHost));
    if (dv != hv || dv2 != hv2) {
        printf("migrate-cuda: the virtual memory management API's memory differs\n");
        return 1;
    }
    CKD(cuMemUnmap_(vva, gran));
    CKD(cuMemUnmap_(vvb, gran));
    CKD(cuMemRelease_(vh2));
    CKD(cuMemAddressFree_(vva, gran));
    CKD(cuMemAddressFree_(vvb, gran));
    CK(cudaDestroyTextureObject(tex));
    CK(cudaDestroySurfaceObject(surf));
    CK(cudaFreeArray(arr));
    CK(cudaFree(acc));
    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(graph));
    CKB(cublasDestroy(blas));
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    CK(cudaStreamDestroy(s));
    CK(cudaFree(a));
    CK(cudaFree(spun));
    CK(cudaFree(big));
    CK(cudaFree(x));
    CK(cudaFree(y));
    printf("migrate-cuda: PASS (%d steps, counter %u)\n", steps, c1);
    return 0;
}
