// SPDX-License-Identifier: Apache-2.0 OR MIT
// Part of the mock libcuda.so.1 (libcuda.c includes it at its end): virtual memory management.
// Virtual memory management on mmap. A reservation is PROT_NONE address space; a physical
// allocation a memfd; cuMemMap maps the memfd over part of a reservation (still
// inaccessible) and cuMemSetAccess makes it read-write, device memory from then on.
#define GRAN ((size_t)2 << 20)
typedef struct Resv { uintptr_t base; size_t len; struct Resv *next; } Resv;
struct Phys { int fd; size_t len; int maps; int released; };
static Resv *resvs;

// Device-wide calls: no current context needed.
#define VENTER pthread_mutex_lock(&L); CUresult r_ = CUDA_SUCCESS;

static void *map_none(void *at, size_t n, int flags) {
    return mmap(at, n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | flags, -1, 0);
}

EXPORT CUresult cuMemGetAllocationGranularity(size_t *g, const CUmemAllocationProp *prop,
                                              CUmemAllocationGranularity_flags o) {
    if (!g || !prop) return CUDA_ERROR_INVALID_VALUE;
    *g = GRAN;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t align, CUdeviceptr addr,
                                    unsigned long long flags) {
    VENTER
    if (!ptr || !size || size % GRAN || flags || (align & (align - 1)))
        FAIL(CUDA_ERROR_INVALID_VALUE);
    if (align < GRAN) align = GRAN;
    void *m = MAP_FAILED;
    // The address is a hint, as on the driver: taken where free, else anywhere.
    if (addr && addr % align == 0) {
        m = map_none((void *)addr, size, MAP_FIXED_NOREPLACE);
        if (m != MAP_FAILED && (uintptr_t)m != addr) {
            munmap(m, size);
            m = MAP_FAILED;
        }
    }
    if (m == MAP_FAILED) {
        unsigned char *w = map_none(NULL, size + align, 0);
        if (w == MAP_FAILED) FAIL(CUDA_ERROR_OUT_OF_MEMORY);
        uintptr_t b = ((uintptr_t)w + align - 1) / align * align;
        if (b > (uintptr_t)w) munmap(w, b - (uintptr_t)w);
        munmap((void *)(b + size), (uintptr_t)w + size + align - b - size);
        m = (void *)b;
    }
    Resv *r = calloc(1, sizeof *r);
    r->base = (uintptr_t)m;
    r->len = size;
    r->next = resvs;
    resvs = r;
    *ptr = (CUdeviceptr)m;
    LEAVE
}

EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
    VENTER
    r_ = CUDA_ERROR_INVALID_VALUE;
    for (Resv **pr = &resvs; *pr; pr = &(*pr)->next) {
        Resv *r = *pr;
        if (r->base != ptr || r->len != size) continue;
        for (Alloc *a = allocs; a; a = a->next)
            if (a->kind == A_VMM && a->base >= ptr && a->base < ptr + size) {
                complain("cuMemAddressFree of a range with mappings", ptr, size);
                FAIL(CUDA_ERROR_INVALID_VALUE);
            }
        munmap((void *)ptr, size);
        *pr = r->next;
        free(r);
        r_ = CUDA_SUCCESS;
        break;
    }
    LEAVE
}

EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *h, size_t size,
                            const CUmemAllocationProp *prop, unsigned long long flags) {
    VENTER
    if (!h || !prop || !size || size % GRAN || flags ||
        prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
        prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE || prop->location.id != 0)
        FAIL(CUDA_ERROR_INVALID_VALUE);
    int fd = memfd_create("vcuda-mock-vmm", MFD_CLOEXEC);
    if (fd < 0) FAIL(CUDA_ERROR_OUT_OF_MEMORY);
    if (ftruncate(fd, (off_t)size)) {
        close(fd);
        FAIL(CUDA_ERROR_OUT_OF_MEMORY);
    }
    Phys *p = calloc(1, sizeof *p);
    p->fd = fd;
    p->len = size;
    *h = (CUmemGenericAllocationHandle)(uintptr_t)p;
    LEAVE
}

static void phys_put(Phys *p) {
    if (p->released && !p->maps) {
        close(p->fd);
        free(p);
    }
}

EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle h) {
    VENTER
    Phys *p = (Phys *)(uintptr_t)h;
    if (!p || p->released) FAIL(CUDA_ERROR_INVALID_VALUE);
    p->released = 1;
    phys_put(p);
    LEAVE
}

EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                         CUmemGenericAllocationHandle h, unsigned long long flags) {
    VENTER
    Phys *p = (Phys *)(uintptr_t)h;
    if (!p || p->released || !size || size % GRAN || offset % GRAN || flags ||
        offset > p->len || size > p->len - offset)
        FAIL(CUDA_ERROR_INVALID_VALUE);
    int inside = 0;
    for (Resv *r = resvs; r; r = r->next)
        inside |= ptr >= r->base && ptr - r->base <= r->len && size <= r->len - (ptr - r->base);
    if (!inside) FAIL(CUDA_ERROR_INVALID_VALUE);
    for (Alloc *a = allocs; a; a = a->next)
        if (a->kind == A_VMM && a->base < ptr + size && ptr < a->base + a->len)
            FAIL(CUDA_ERROR_INVALID_VALUE);
    if (mmap((void *)ptr, size, PROT_NONE, MAP_SHARED | MAP_FIXED, p->fd, (off_t)offset) ==
        MAP_FAILED)
        FAIL(CUDA_ERROR_OUT_OF_MEMORY);
    Alloc *a = add_alloc((void *)ptr, size, A_VMM);
    a->ctx = NULL;
    a->phys = p;
    p->maps++;
    LEAVE
}

EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
                               size_t count) {
    VENTER
    if (!desc || count != 1 || desc->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
        desc->location.id != 0)
        FAIL(CUDA_ERROR_INVALID_VALUE);
    int rw = desc->flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    if (!rw && desc->flags != CU_MEM_ACCESS_FLAGS_PROT_NONE) FAIL(CUDA_ERROR_INVALID_VALUE);
    size_t seen = 0;
    for (Alloc *a = allocs; a; a = a->next)
        if (a->kind == A_VMM && a->base >= ptr && a->base + a->len <= ptr + size) seen += a->len;
    if (seen != size) FAIL(CUDA_ERROR_INVALID_VALUE);
    for (Alloc *a = allocs; a; a = a->next)
        if (a->kind == A_VMM && a->base >= ptr && a->base + a->len <= ptr + size) {
            mprotect((void *)a->base, a->len, rw ? PROT_READ | PROT_WRITE : PROT_NONE);
            a->access = rw;
        }
    LEAVE
}

EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
    VENTER
    if (cur) flush(cur, NULL);
    size_t seen = 0;
    for (Alloc *a = allocs; a; a = a->next)
        if (a->kind == A_VMM && a->base >= ptr && a->base + a->len <= ptr + size) seen += a->len;
    if (!size || seen != size) FAIL(CUDA_ERROR_INVALID_VALUE);
    for (Alloc **pa = &allocs; *pa;) {
        Alloc *a = *pa;
        if (a->kind == A_VMM && a->base >= ptr && a->base + a->len <= ptr + size) {
            *pa = a->next;
            // The range stays reserved: inaccessible address space again.
            map_none((void *)a->base, a->len, MAP_FIXED);
            a->phys->maps--;
            phys_put(a->phys);
            free(a);
        } else {
            pa = &(*pa)->next;
        }
    }
    LEAVE
}
