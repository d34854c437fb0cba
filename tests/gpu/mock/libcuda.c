// SPDX-License-Identifier: Apache-2.0 OR MIT
// A mock libcuda.so.1 for testing the CUDA executor on machines without a GPU.
//
// It implements, with NVIDIA's own prototypes from cuda.h (so a signature mismatch does not
// compile), every driver entry point the executor calls, on host memory:
//  - device memory is host memory; every device range must lie in an allocation of the
//    current context, else CUDA_ERROR_INVALID_VALUE (and a line on stderr);
//  - work is queued per context and runs only at synchronization points (stream/event/
//    context synchronize, a query, a synchronous copy), like a GPU that is always late;
//  - copies from and to page-locked memory (cuMemHostAlloc, cuMemHostRegister) read and
//    write the host memory only when the queue runs, so a caller that reuses or releases
//    such memory before waiting sees corrupted data; pageable memory follows the real
//    driver's rules (host to device: copied before returning; device to host: synchronous);
//  - kernels: "add1(float *p, int n)" adds 1 to n floats; "crash" makes the context's next
//    synchronization fail with CUDA_ERROR_ILLEGAL_ADDRESS (sticky); other names do nothing;
//    "nope" does not exist; "tick" adds 1 to its module's u32 variable "counter". Module
//    variables: any name but "nope", 4 bytes each, one per name and module, starting at the
//    value the image's PTX gives ("name = 7") or 0;
//  - virtual memory management (cuMemAddressReserve, cuMemCreate, cuMemMap, cuMemSetAccess
//    and their undoing) on mmap: a reservation is inaccessible host address space (taken at
//    the hint if free), a physical allocation a memfd, a mapping the memfd mapped there;
//    mapped ranges are device memory once made read-write, reached across mappings.
// Environment: VCUDA_MOCK_INIT=<CUresult> makes cuInit fail; VCUDA_MOCK_VERSION=<n> sets
// cuDriverGetVersion; VCUDA_MOCK_HMM=1 reports pageable memory access (HMM). A kernel named
// `crash` fails its context with a sticky error, `endless` never ends; vcuda_mock_dma_copies()
// counts copies from or to page-locked memory (one DMA each on a GPU),
// vcuda_mock_last_cluster() gives the cluster shape of the last cuLaunchKernelEx; the
// cluster occupancy calls answer for a 132-multiprocessor device. Built with
// -DVCUDA_MOCK_OLD it lacks cuEventElapsedTime_v2.
#define _GNU_SOURCE
#include <cuda.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

static pthread_mutex_t L = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

enum { A_DEV, A_HOST, A_REG, A_VMM };
typedef struct Phys Phys;
typedef struct Alloc {
    uintptr_t base;
    size_t len;
    CUcontext ctx;
    int kind;
    Phys *phys;    // A_VMM: the physical allocation mapped here
    int access;    // A_VMM: made read-write with cuMemSetAccess
    struct Alloc *next;
} Alloc;

enum { OP_COPY, OP_MEMSET, OP_EVENT, OP_ADD1, OP_ENDLESS, OP_TICK };
typedef struct Op {
    int kind;
    unsigned char *dst;
    const unsigned char *src;
    size_t width, height, dpitch, spitch;
    unsigned char *owned;
    CUevent ev;
    unsigned value;
    int es;
    struct Op *next;
} Op;

struct CUctx_st {
    int magic;
    CUresult sticky;
    Op *head, *tail;
    size_t limits[16];
    int primary_refs;
};
struct CUstream_st { CUcontext ctx; };
struct CUevent_st { CUcontext ctx; int pending; int done; double ms; unsigned flags; };
typedef struct Global { char name[64]; uintptr_t addr; struct Global *next; } Global;
struct CUmod_st { CUcontext ctx; unsigned char *image; size_t image_len; Global *globals; };
struct CUfunc_st { CUcontext ctx; CUmodule mod; char name[64]; };

static Alloc *allocs;
static __thread CUcontext cur;
// Copies whose host side is page-locked: each is one DMA on a real GPU.
static unsigned long dma_copies;
static struct CUctx_st primary;

static void complain(const char *what, uintptr_t p, size_t n) {
    fprintf(stderr, "mock libcuda: %s: %#lx+%zu\n", what, (unsigned long)p, n);
}

static Alloc *find(uintptr_t p, size_t n, int kind, CUcontext ctx) {
    for (Alloc *a = allocs; a; a = a->next)
        if (a->kind == kind && (!ctx || a->ctx == ctx) && p >= a->base && p - a->base <= a->len &&
            n <= a->len - (p - a->base))
            return a;
    return NULL;
}

// Whether [p, p + n) lies in read-write mappings of physical allocations, one after another.
static int vmm_covers(uintptr_t p, size_t n) {
    while (n) {
        Alloc *a = find(p, 1, A_VMM, NULL);
        if (!a || !a->access) return 0;
        size_t here = a->base + a->len - p;
        if (here >= n) return 1;
        p += here;
        n -= here;
    }
    return 1;
}

static int pinned(const void *p, size_t n) {
    return find((uintptr_t)p, n, A_HOST, NULL) || find((uintptr_t)p, n, A_REG, NULL);
}

// A device region of `height` rows of `width` bytes, `pitch` apart, in the current context.
static int dev_ok(CUdeviceptr p, size_t pitch, size_t width, size_t height) {
    if (width == 0 || height == 0) return 1;
    size_t span = (height - 1) * pitch + width;
    if (find(p, span, A_DEV, cur) || vmm_covers(p, span)) return 1;
    // Host memory registered for the device is reached in place (unified addressing).
    if (find(p, span, A_REG, NULL)) return 1;
    complain("device range outside the context's allocations", p, span);
    return 0;
}

static void push(Op o) {
    Op *n = malloc(sizeof *n);
    *n = o;
    n->next = NULL;
    if (cur->tail) cur->tail->next = n; else cur->head = n;
    cur->tail = n;
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void run(Op *o) {
    switch (o->kind) {
    case OP_COPY:
        for (size_t r = 0; r < o->height; r++)
            memcpy(o->dst + r * o->dpitch, o->src + r * o->spitch, o->width);
        break;
    case OP_MEMSET:
        for (size_t r = 0; r < o->height; r++)
            for (size_t i = 0; i < o->width; i++)
                memcpy(o->dst + r * o->dpitch + i * o->es, &o->value, o->es);
        break;
    case OP_EVENT:
        o->ev->pending--;
        o->ev->done = 1;
        o->ev->ms = now_ms();
        break;
    case OP_ADD1:
        for (size_t i = 0; i < o->width; i++) ((float *)o->dst)[i] += 1.0f;
        break;
    case OP_TICK:
        (*(uint32_t *)o->dst)++;
        break;
    }
    free(o->owned);
}

// Runs queued work, up to and including the record of `upto` if given. An endless kernel
// never finishes: the work from it on stays queued until the context is destroyed.
static void flush(CUcontext c, CUevent upto) {
    while (c->head && c->head->kind != OP_ENDLESS) {
        Op *o = c->head;
        c->head = o->next;
        if (!c->head) c->tail = NULL;
        int last = o->kind == OP_EVENT && o->ev == upto;
        run(o);
        free(o);
        if (last) return;
    }
}

// A blocking wait behind an endless kernel: a real driver would never return; the mock
// gives up after a while, so a test that waits this way fails instead of hanging.
static int stuck(CUcontext c) {
    if (!c->head || c->head->kind != OP_ENDLESS) return 0;
    fprintf(stderr, "mock libcuda: blocking wait behind an endless kernel\n");
    pthread_mutex_unlock(&L);
    sleep(5);
    pthread_mutex_lock(&L);
    return 1;
}

static void drop_queue(CUcontext c) {
    while (c->head) {
        Op *o = c->head;
        c->head = o->next;
        free(o->owned);
        free(o);
    }
    c->tail = NULL;
}

#define ENTER                                                                                \
    pthread_mutex_lock(&L);                                                                  \
    CUresult r_ = CUDA_SUCCESS;                                                              \
    if (!cur) { r_ = CUDA_ERROR_INVALID_CONTEXT; goto out; }                                 \
    if (cur->sticky) { r_ = cur->sticky; goto out; }
#define FAIL(code) do { r_ = (code); goto out; } while (0)
#define LEAVE out: pthread_mutex_unlock(&L); return r_;

// Not a driver entry point: how many DMA copies were issued so far (tests read it).
EXPORT unsigned long vcuda_mock_dma_copies(void) {
    pthread_mutex_lock(&L);
    unsigned long n = dma_copies;
    pthread_mutex_unlock(&L);
    return n;
}

EXPORT CUresult cuInit(unsigned flags) {
    const char *e = getenv("VCUDA_MOCK_INIT");
    if (flags) return CUDA_ERROR_INVALID_VALUE;
    return e ? (CUresult)atoi(e) : CUDA_SUCCESS;
}

EXPORT CUresult cuDriverGetVersion(int *v) {
    const char *e = getenv("VCUDA_MOCK_VERSION");
    *v = e ? atoi(e) : 13000;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGetErrorName(CUresult e, const char **s) {
    switch (e) {
    case CUDA_SUCCESS: *s = "CUDA_SUCCESS"; break;
    case CUDA_ERROR_INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; break;
    case CUDA_ERROR_NO_DEVICE: *s = "CUDA_ERROR_NO_DEVICE"; break;
    case CUDA_ERROR_ILLEGAL_ADDRESS: *s = "CUDA_ERROR_ILLEGAL_ADDRESS"; break;
    case CUDA_ERROR_NOT_READY: *s = "CUDA_ERROR_NOT_READY"; break;
    default: *s = "CUDA_ERROR_UNKNOWN"; break;
    }
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int *n) { *n = 1; return CUDA_SUCCESS; }

EXPORT CUresult cuDeviceGet(CUdevice *d, int ordinal) {
    if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
    *d = 0;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
    if (d != 0 || len < 1) return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, len, "vcuda mock device");
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *u, CUdevice d) {
    if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
    memcpy(u->bytes, "mock-uuid-012345", 16);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t *n, CUdevice d) {
    if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
    *n = (size_t)16 << 30;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d) {
    if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
    if (a < 1 || a >= CU_DEVICE_ATTRIBUTE_MAX) return CUDA_ERROR_INVALID_VALUE;
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *v = 64; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *v = 0x7fffffff; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *v = 65535; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
    case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS: *v = getenv("VCUDA_MOCK_HMM") != NULL; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = 49152; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 232448; break;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT: *v = 32; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
    default: *v = 1; break;
    }
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
    if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&L);
    primary.magic = 1;
    primary.primary_refs++;
    *c = &primary;
    pthread_mutex_unlock(&L);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
    if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&L);
    CUresult r = primary.primary_refs > 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
    if (primary.primary_refs > 0) primary.primary_refs--;
    pthread_mutex_unlock(&L);
    return r;
}

EXPORT CUresult cuCtxCreate_v4(CUcontext *pc, CUctxCreateParams *p, unsigned flags, CUdevice d) {
    if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
    if (p && (p->numExecAffinityParams || p->cigParams)) return CUDA_ERROR_INVALID_VALUE;
    if (flags) return CUDA_ERROR_INVALID_VALUE;
    CUcontext c = calloc(1, sizeof *c);
    c->magic = 1;
    *pc = c;
    cur = c;
    return CUDA_SUCCESS;
}

static void free_allocs(CUcontext c) {
    for (Alloc **pa = &allocs; *pa;) {
        Alloc *a = *pa;
        if (a->ctx == c) {
            // Registrations go with their context; the memory is the program's.
            *pa = a->next;
            if (a->kind != A_REG) free((void *)a->base);
            free(a);
        } else {
            pa = &a->next;
        }
    }
}

EXPORT CUresult cuCtxDestroy_v2(CUcontext c) {
    if (!c || c == &primary) return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&L);
    drop_queue(c);
    free_allocs(c);
    c->magic = 0;
    free(c);
    if (cur == c) cur = NULL;
    pthread_mutex_unlock(&L);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSetCurrent(CUcontext c) {
    if (c && c->magic != 1) return CUDA_ERROR_INVALID_CONTEXT;
    cur = c;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSynchronize(void) {
    ENTER
    flush(cur, NULL);
    if (stuck(cur)) FAIL(CUDA_ERROR_LAUNCH_TIMEOUT);
    r_ = cur->sticky;
    LEAVE
}

EXPORT CUresult cuCtxSetLimit(CUlimit l, size_t v) {
    ENTER
    if ((unsigned)l > 6) FAIL(CUDA_ERROR_UNSUPPORTED_LIMIT);
    cur->limits[l] = v;
    LEAVE
}

EXPORT CUresult cuCtxGetLimit(size_t *v, CUlimit l) {
    ENTER
    if ((unsigned)l > 6) FAIL(CUDA_ERROR_UNSUPPORTED_LIMIT);
    *v = cur->limits[l];
    LEAVE
}

EXPORT CUresult cuMemGetInfo_v2(size_t *free_, size_t *total) {
    ENTER
    size_t used = 0;
    for (Alloc *a = allocs; a; a = a->next)
        if (a->kind == A_DEV || a->kind == A_VMM) used += a->len;
    *total = (size_t)16 << 30;
    *free_ = *total - used;
    LEAVE
}

static Alloc *add_alloc(void *p, size_t n, int kind) {
    Alloc *a = calloc(1, sizeof *a);
    a->base = (uintptr_t)p;
    a->len = n;
    a->ctx = cur;
    a->kind = kind;
    a->next = allocs;
    allocs = a;
    return a;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
    ENTER
    if (n == 0) FAIL(CUDA_ERROR_INVALID_VALUE);
    void *m = aligned_alloc(256, (n + 255) / 256 * 256);
    if (!m) FAIL(CUDA_ERROR_OUT_OF_MEMORY);
    memset(m, 0xa5, n);
    add_alloc(m, n, A_DEV);
    *p = (CUdeviceptr)m;
    LEAVE
}

static CUresult remove_alloc(uintptr_t base, int kind) {
    for (Alloc **pa = &allocs; *pa; pa = &(*pa)->next) {
        Alloc *a = *pa;
        if (a->base == base && a->kind == kind && (kind == A_REG || a->ctx == cur)) {
            *pa = a->next;
            if (kind != A_REG) free((void *)a->base);
            free(a);
            return CUDA_SUCCESS;
        }
    }
    return kind == A_REG ? CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr p) {
    ENTER
    flush(cur, NULL);
    r_ = remove_alloc(p, A_DEV);
    if (r_) complain("cuMemFree of no allocation", p, 0);
    LEAVE
}

// IPC: the mock serves one process and has no handles to give (the executor refuses IPC
// without --cuda-ipc anyway).
EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle *h, CUdeviceptr p) { return CUDA_ERROR_NOT_SUPPORTED; }
EXPORT CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *p, CUipcMemHandle h, unsigned flags) {
    return CUDA_ERROR_NOT_SUPPORTED;
}
EXPORT CUresult cuIpcCloseMemHandle(CUdeviceptr p) { return CUDA_ERROR_NOT_SUPPORTED; }
EXPORT CUresult cuIpcGetEventHandle(CUipcEventHandle *h, CUevent e) { return CUDA_ERROR_NOT_SUPPORTED; }
EXPORT CUresult cuIpcOpenEventHandle(CUevent *e, CUipcEventHandle h) { return CUDA_ERROR_NOT_SUPPORTED; }
EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr p) {
    return CUDA_ERROR_NOT_SUPPORTED;
}

EXPORT CUresult cuMemHostAlloc(void **pp, size_t n, unsigned flags) {
    ENTER
    if (flags != CU_MEMHOSTALLOC_PORTABLE) FAIL(CUDA_ERROR_INVALID_VALUE);
    void *m = aligned_alloc(4096, (n + 4095) / 4096 * 4096);
    if (!m) FAIL(CUDA_ERROR_OUT_OF_MEMORY);
    add_alloc(m, n, A_HOST);
    *pp = m;
    LEAVE
}

EXPORT CUresult cuMemFreeHost(void *p) {
    ENTER
    r_ = remove_alloc((uintptr_t)p, A_HOST);
    LEAVE
}

EXPORT CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned flags) {
    ENTER
    if ((flags & ~(unsigned)(CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP)) || !p || !n)
        FAIL(CUDA_ERROR_INVALID_VALUE);
    for (Alloc *a = allocs; a; a = a->next)
        if (a->kind == A_REG && (uintptr_t)p < a->base + a->len && a->base < (uintptr_t)p + n)
            FAIL(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    add_alloc(p, n, A_REG);
    LEAVE
}

// Registered memory is reached at its own address, as with unified addressing (the mock's
// kernels run on host memory).
EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *d, void *p, unsigned flags) {
    ENTER
    if (!d || flags) FAIL(CUDA_ERROR_INVALID_VALUE);
    r_ = CUDA_ERROR_INVALID_VALUE;
    for (Alloc *a = allocs; a; a = a->next)
        if (a->kind == A_REG && (uintptr_t)p >= a->base && (uintptr_t)p < a->base + a->len) {
            *d = (CUdeviceptr)p;
            r_ = CUDA_SUCCESS;
        }
    LEAVE
}

EXPORT CUresult cuMemHostUnregister(void *p) {
    ENTER
    r_ = remove_alloc((uintptr_t)p, A_REG);
    LEAVE
}

// Host memory in a copy: page-locked memory is used when the queue runs; pageable memory
// is copied now (source) or written synchronously (destination).
static CUresult copy(unsigned char *dst, int dst_host, size_t dpitch, const unsigned char *src,
                     int src_host, size_t spitch, size_t width, size_t height) {
    if (!dst_host && !dev_ok((CUdeviceptr)dst, dpitch, width, height)) return CUDA_ERROR_INVALID_VALUE;
    if (!src_host && !dev_ok((CUdeviceptr)src, spitch, width, height)) return CUDA_ERROR_INVALID_VALUE;
    if (width == 0 || height == 0) return CUDA_SUCCESS;
    if ((height > 1 && (dpitch < width || spitch < width)) || !dst || !src)
        return CUDA_ERROR_INVALID_VALUE;
    Op o = {.kind = OP_COPY, .dst = dst, .src = src, .width = width, .height = height,
            .dpitch = dpitch, .spitch = spitch};
    size_t sspan = (height - 1) * spitch + width, dspan = (height - 1) * dpitch + width;
    if ((src_host && pinned(src, sspan)) || (dst_host && pinned(dst, dspan))) dma_copies++;
    if (src_host && !pinned(src, sspan)) {
        o.owned = malloc(width * height);
        for (size_t r = 0; r < height; r++) memcpy(o.owned + r * width, src + r * spitch, width);
        o.src = o.owned;
        o.spitch = width;
    }
    if (dst_host && !pinned(dst, dspan)) {
        flush(cur, NULL);
        if (cur->sticky) { free(o.owned); return cur->sticky; }
        run(&o);
        return CUDA_SUCCESS;
    }
    push(o);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *s, size_t n, CUstream st) {
    ENTER
    r_ = copy((unsigned char *)d, 0, n, s, 1, n, n, 1);
    LEAVE
}

EXPORT CUresult cuMemcpyDtoHAsync_v2(void *d, CUdeviceptr s, size_t n, CUstream st) {
    ENTER
    r_ = copy(d, 1, n, (const unsigned char *)s, 0, n, n, 1);
    LEAVE
}

EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) {
    ENTER
    r_ = copy((unsigned char *)d, 0, n, (const unsigned char *)s, 0, n, n, 1);
    LEAVE
}

EXPORT CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *p, CUstream st) {
    ENTER
    if (p->srcXInBytes || p->srcY || p->dstXInBytes || p->dstY || p->srcArray || p->dstArray)
        FAIL(CUDA_ERROR_INVALID_VALUE);
    int sh = p->srcMemoryType == CU_MEMORYTYPE_HOST, dh = p->dstMemoryType == CU_MEMORYTYPE_HOST;
    if ((!sh && p->srcMemoryType != CU_MEMORYTYPE_DEVICE) ||
        (!dh && p->dstMemoryType != CU_MEMORYTYPE_DEVICE))
        FAIL(CUDA_ERROR_INVALID_VALUE);
    r_ = copy(dh ? p->dstHost : (unsigned char *)p->dstDevice, dh, p->dstPitch,
              sh ? p->srcHost : (const unsigned char *)p->srcDevice, sh, p->srcPitch,
              p->WidthInBytes, p->Height);
    LEAVE
}

static CUresult memset_(CUdeviceptr d, size_t pitch, unsigned v, int es, size_t w, size_t h) {
    if (d % es || pitch % es || !dev_ok(d, pitch, w * es, h)) return CUDA_ERROR_INVALID_VALUE;
    if (h > 1 && pitch < w * es) return CUDA_ERROR_INVALID_VALUE;
    Op o = {.kind = OP_MEMSET, .dst = (unsigned char *)d, .width = w, .height = h,
            .dpitch = pitch, .value = v, .es = es};
    push(o);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s) {
    ENTER r_ = memset_(d, n, v, 1, n, 1); LEAVE
}
EXPORT CUresult cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, CUstream s) {
    ENTER r_ = memset_(d, 2 * n, v, 2, n, 1); LEAVE
}
EXPORT CUresult cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, CUstream s) {
    ENTER r_ = memset_(d, 4 * n, v, 4, n, 1); LEAVE
}
EXPORT CUresult cuMemsetD2D8Async(CUdeviceptr d, size_t p, unsigned char v, size_t w, size_t h, CUstream s) {
    ENTER r_ = memset_(d, p, v, 1, w, h); LEAVE
}
EXPORT CUresult cuMemsetD2D16Async(CUdeviceptr d, size_t p, unsigned short v, size_t w, size_t h, CUstream s) {
    ENTER r_ = memset_(d, p, v, 2, w, h); LEAVE
}
EXPORT CUresult cuMemsetD2D32Async(CUdeviceptr d, size_t p, unsigned v, size_t w, size_t h, CUstream s) {
    ENTER r_ = memset_(d, p, v, 4, w, h); LEAVE
}

static int stream_ok(CUstream s) { return !s || (s->ctx == cur); }

EXPORT CUresult cuStreamCreateWithPriority(CUstream *s, unsigned flags, int prio) {
    ENTER
    if (flags > CU_STREAM_NON_BLOCKING) FAIL(CUDA_ERROR_INVALID_VALUE);
    *s = calloc(1, sizeof **s);
    (*s)->ctx = cur;
    LEAVE
}

EXPORT CUresult cuStreamDestroy_v2(CUstream s) {
    ENTER
    if (!s || !stream_ok(s)) FAIL(CUDA_ERROR_INVALID_HANDLE);
    free(s);
    LEAVE
}

EXPORT CUresult cuStreamSynchronize(CUstream s) {
    ENTER
    if (!stream_ok(s)) FAIL(CUDA_ERROR_INVALID_HANDLE);
    flush(cur, NULL);
    if (stuck(cur)) FAIL(CUDA_ERROR_LAUNCH_TIMEOUT);
    r_ = cur->sticky;
    LEAVE
}

EXPORT CUresult cuStreamQuery(CUstream s) {
    ENTER
    if (!stream_ok(s)) FAIL(CUDA_ERROR_INVALID_HANDLE);
    // Busy once, then done: callers see both answers.
    if (cur->head) {
        flush(cur, NULL);
        FAIL(CUDA_ERROR_NOT_READY);
    }
    LEAVE
}

EXPORT CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned flags) {
    ENTER
    if (!stream_ok(s) || !e || e->ctx != cur || flags > 1) FAIL(CUDA_ERROR_INVALID_HANDLE);
    LEAVE
}

EXPORT CUresult cuEventCreate(CUevent *e, unsigned flags) {
    ENTER
    if (flags & ~(unsigned)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING)) FAIL(CUDA_ERROR_INVALID_VALUE);
    *e = calloc(1, sizeof **e);
    (*e)->ctx = cur;
    (*e)->flags = flags;
    LEAVE
}

EXPORT CUresult cuEventDestroy_v2(CUevent e) {
    ENTER
    if (!e || e->ctx != cur) FAIL(CUDA_ERROR_INVALID_HANDLE);
    // Queued records of it must not touch freed memory.
    flush(cur, NULL);
    free(e);
    LEAVE
}

static CUresult record(CUevent e, CUstream s) {
    if (!e || e->ctx != cur || !stream_ok(s)) return CUDA_ERROR_INVALID_HANDLE;
    e->pending++;
    e->done = 0;
    Op o = {.kind = OP_EVENT, .ev = e};
    push(o);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuEventRecord(CUevent e, CUstream s) { ENTER r_ = record(e, s); LEAVE }

EXPORT CUresult cuEventRecordWithFlags(CUevent e, CUstream s, unsigned flags) {
    ENTER
    if (flags > 1) FAIL(CUDA_ERROR_INVALID_VALUE);
    r_ = record(e, s);
    LEAVE
}

EXPORT CUresult cuEventSynchronize(CUevent e) {
    ENTER
    if (!e || e->ctx != cur) FAIL(CUDA_ERROR_INVALID_HANDLE);
    if (e->pending) flush(cur, e);
    while (e->pending) {
        flush(cur, e);
        if (stuck(cur)) FAIL(CUDA_ERROR_LAUNCH_TIMEOUT);
    }
    r_ = cur->sticky;
    LEAVE
}

EXPORT CUresult cuEventQuery(CUevent e) {
    ENTER
    if (!e || e->ctx != cur) FAIL(CUDA_ERROR_INVALID_HANDLE);
    if (e->pending) {
        flush(cur, e);
        FAIL(CUDA_ERROR_NOT_READY);
    }
    LEAVE
}

#ifndef VCUDA_MOCK_OLD
EXPORT CUresult cuEventElapsedTime_v2(float *ms, CUevent a, CUevent b) {
    ENTER
    if (!a || !b || a->ctx != cur || b->ctx != cur) FAIL(CUDA_ERROR_INVALID_HANDLE);
    if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING) FAIL(CUDA_ERROR_INVALID_HANDLE);
    if (a->pending || b->pending) FAIL(CUDA_ERROR_NOT_READY);
    if (!a->done || !b->done) FAIL(CUDA_ERROR_INVALID_HANDLE);
    *ms = (float)(b->ms - a->ms);
    LEAVE
}
#endif

EXPORT CUresult cuModuleLoadData(CUmodule *m, const void *image) {
    ENTER
    uint32_t magic;
    if ((uintptr_t)image % 8) FAIL(CUDA_ERROR_INVALID_VALUE);
    memcpy(&magic, image, 4);
    if (magic != 0xBA55ED50u) FAIL(CUDA_ERROR_INVALID_IMAGE);
    uint64_t len = 0; // a fat binary: 16-byte header, then `len` bytes
    memcpy(&len, (const char *)image + 8, 8);
    if (len > (1u << 30)) FAIL(CUDA_ERROR_INVALID_IMAGE);
    flush(cur, NULL);
    *m = calloc(1, sizeof **m);
    (*m)->ctx = cur;
    (*m)->image_len = 16 + len;
    (*m)->image = malloc(16 + len);
    memcpy((*m)->image, image, 16 + len);
    LEAVE
}

// With the error-log options the executor passes (and checks them): an image whose PTX
// says "does_not_compile" fails with a log, as a real JIT would.
EXPORT CUresult cuModuleLoadDataEx(CUmodule *m, const void *image, unsigned n, CUjit_option *opts,
                                   void **vals) {
    char *log = NULL;
    size_t log_len = 0;
    for (unsigned i = 0; i < n; i++) {
        if (opts[i] == CU_JIT_ERROR_LOG_BUFFER) log = vals[i];
        else if (opts[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES) log_len = (size_t)vals[i];
        else return CUDA_ERROR_INVALID_VALUE;
    }
    if (n && (!log || !log_len)) return CUDA_ERROR_INVALID_VALUE;
    uint64_t len = 0; // a fat binary: 16-byte header, then `len` bytes
    memcpy(&len, (const char *)image + 8, 8);
    if (len < (1u << 30) && memmem(image, 16 + len, "does_not_compile", 16)) {
        if (log) snprintf(log, log_len, "ptxas fatal   : mock: 'does_not_compile' is not PTX");
        return CUDA_ERROR_INVALID_PTX;
    }
    return cuModuleLoadData(m, image);
}

EXPORT CUresult cuModuleUnload(CUmodule m) {
    ENTER
    if (!m || m->ctx != cur) FAIL(CUDA_ERROR_INVALID_HANDLE);
    flush(cur, NULL);
    for (Global *g = m->globals, *next; g; g = next) {
        next = g->next;
        remove_alloc(g->addr, A_DEV);
        free(g);
    }
    free(m->image);
    free(m);
    LEAVE
}

EXPORT CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
    ENTER
    if (!m || m->ctx != cur) FAIL(CUDA_ERROR_INVALID_HANDLE);
    if (!strcmp(name, "nope")) FAIL(CUDA_ERROR_NOT_FOUND);
    *f = calloc(1, sizeof **f);
    (*f)->ctx = cur;
    (*f)->mod = m;
    snprintf((*f)->name, sizeof (*f)->name, "%s", name);
    LEAVE
}

// The module's 4-byte variable `name`, made at first use with the value the PTX gives it.
static uintptr_t global_of(CUmodule m, const char *name) {
    for (Global *g = m->globals; g; g = g->next)
        if (!strcmp(g->name, name)) return g->addr;
    Global *g = calloc(1, sizeof *g);
    snprintf(g->name, sizeof g->name, "%s", name);
    uint32_t *v = aligned_alloc(256, 256);
    *v = 0;
    char pat[80];
    int pl = snprintf(pat, sizeof pat, " %s = ", g->name);
    const char *at = memmem(m->image, m->image_len, pat, (size_t)pl);
    if (at && (size_t)(at - (const char *)m->image) + pl + 12 <= m->image_len) {
        char num[12];
        memcpy(num, at + pl, 11);
        num[11] = 0;
        *v = (uint32_t)strtoul(num, NULL, 10);
    }
    add_alloc(v, 4, A_DEV);
    g->addr = (uintptr_t)v;
    g->next = m->globals;
    m->globals = g;
    return g->addr;
}

EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr *p, size_t *n, CUmodule m, const char *name) {
    ENTER
    if (!m || m->ctx != cur) FAIL(CUDA_ERROR_INVALID_HANDLE);
    if (!strcmp(name, "nope")) FAIL(CUDA_ERROR_NOT_FOUND);
    *p = global_of(m, name);
    *n = 4;
    LEAVE
}

EXPORT CUresult cuFuncGetAttribute(int *v, CUfunction_attribute a, CUfunction f) {
    ENTER
    if (!f || f->ctx != cur) FAIL(CUDA_ERROR_INVALID_HANDLE);
    *v = a == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK ? 1024 : 0;
    LEAVE
}

EXPORT CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v) {
    ENTER
    if (!f || f->ctx != cur) FAIL(CUDA_ERROR_INVALID_HANDLE);
    LEAVE
}

EXPORT CUresult cuFuncGetParamInfo(CUfunction f, size_t i, size_t *off, size_t *size) {
    ENTER
    if (!f || f->ctx != cur) FAIL(CUDA_ERROR_INVALID_HANDLE);
    if (!strcmp(f->name, "add1") && i < 2) {
        *off = i ? 8 : 0;
        *size = i ? 4 : 8;
    } else {
        FAIL(CUDA_ERROR_INVALID_VALUE);
    }
    LEAVE
}

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                               unsigned by, unsigned bz, unsigned shmem, CUstream s,
                               void **params, void **extra) {
    ENTER
    if (!f || f->ctx != cur || !stream_ok(s)) FAIL(CUDA_ERROR_INVALID_HANDLE);
    if (!gx || !gy || !gz || !bx || !by || !bz || (size_t)bx * by * bz > 1024)
        FAIL(CUDA_ERROR_INVALID_VALUE);
    if (!strcmp(f->name, "crash")) {
        cur->sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
    } else if (!strcmp(f->name, "tick")) {
        Op o = {.kind = OP_TICK, .dst = (unsigned char *)global_of(f->mod, "counter")};
        push(o);
    } else if (!strcmp(f->name, "endless")) {
        Op o = {.kind = OP_ENDLESS};
        push(o);
    } else if (!strcmp(f->name, "add1")) {
        CUdeviceptr p;
        int n;
        if (params) {
            memcpy(&p, params[0], 8);
            memcpy(&n, params[1], 4);
        } else if (extra && extra[0] == CU_LAUNCH_PARAM_BUFFER_POINTER &&
                   extra[2] == CU_LAUNCH_PARAM_BUFFER_SIZE && *(size_t *)extra[3] >= 12) {
            memcpy(&p, extra[1], 8);
            memcpy(&n, (char *)extra[1] + 8, 4);
        } else {
            FAIL(CUDA_ERROR_INVALID_VALUE);
        }
        if (n > 0 && !dev_ok(p, 4 * (size_t)n, 4 * (size_t)n, 1)) {
            cur->sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
        } else if (n > 0) {
            Op o = {.kind = OP_ADD1, .dst = (unsigned char *)p, .width = (size_t)n};
            push(o);
        }
    }
    LEAVE
}

// The cluster shape of the last successful cuLaunchKernelEx (zeros: none).
static unsigned last_cluster[3];

// Not a driver entry point: the cluster shape of the last cuLaunchKernelEx (tests read it).
EXPORT void vcuda_mock_last_cluster(unsigned *out) {
    pthread_mutex_lock(&L);
    memcpy(out, last_cluster, sizeof(last_cluster));
    pthread_mutex_unlock(&L);
}

// The cluster occupancy calls answer as a 132-multiprocessor device holding one block of a
// cluster per multiprocessor would: 132 / size clusters; clusters of up to eight blocks. A
// configuration without a cluster dimension fails (the mock's kernels have no
// compile-time shape), as does one of more than eight blocks.
static CUresult cluster_size_of(const CUlaunchConfig *c, unsigned *size) {
    if (!c || (c->numAttrs && !c->attrs)) return CUDA_ERROR_INVALID_VALUE;
    *size = 0;
    for (unsigned i = 0; i < c->numAttrs; i++) {
        if (c->attrs[i].id != CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) continue;
        *size = c->attrs[i].value.clusterDim.x * c->attrs[i].value.clusterDim.y *
                c->attrs[i].value.clusterDim.z;
    }
    return *size == 0 || *size > 8 ? CUDA_ERROR_INVALID_CLUSTER_SIZE : CUDA_SUCCESS;
}

EXPORT CUresult cuOccupancyMaxActiveClusters(int *n, CUfunction f, const CUlaunchConfig *c) {
    unsigned size;
    CUresult r = cluster_size_of(c, &size);
    if (!n || !f) return CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) *n = 132 / size;
    return r;
}

EXPORT CUresult cuOccupancyMaxPotentialClusterSize(int *n, CUfunction f,
                                                   const CUlaunchConfig *c) {
    if (!n || !f || !c) return CUDA_ERROR_INVALID_VALUE;
    *n = 8;
    return CUDA_SUCCESS;
}

// cuLaunchKernel with attributes: a cluster shape must divide the grid and have at most
// eight blocks (CUDA_ERROR_INVALID_CLUSTER_SIZE); the other attributes are hints here.
EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params,
                                 void **extra) {
    if (!c || (c->numAttrs && !c->attrs)) return CUDA_ERROR_INVALID_VALUE;
    unsigned cl[3] = {0, 0, 0};
    for (unsigned i = 0; i < c->numAttrs; i++) {
        if (c->attrs[i].id != CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) continue;
        cl[0] = c->attrs[i].value.clusterDim.x;
        cl[1] = c->attrs[i].value.clusterDim.y;
        cl[2] = c->attrs[i].value.clusterDim.z;
        if (!cl[0] || !cl[1] || !cl[2] || (size_t)cl[0] * cl[1] * cl[2] > 8 ||
            c->gridDimX % cl[0] || c->gridDimY % cl[1] || c->gridDimZ % cl[2])
            return CUDA_ERROR_INVALID_CLUSTER_SIZE;
    }
    CUresult r = cuLaunchKernel(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX,
                                c->blockDimY, c->blockDimZ, c->sharedMemBytes, c->hStream,
                                params, extra);
    if (r == CUDA_SUCCESS) {
        pthread_mutex_lock(&L);
        memcpy(last_cluster, cl, sizeof(cl));
        pthread_mutex_unlock(&L);
    }
    return r;
}

#include "vmm.c"
