// SPDX-License-Identifier: Apache-2.0 OR MIT
// Managed memory's coherence between the host and kernels, the cases where a cache of the
// device copy (as vcuda keeps it over TCP, in a VM and on the CUDA executor) could go wrong:
// a large array the host writes sparsely and reads back after kernels; a host write into
// part of a block the device changed (the rest must keep the device's bytes); many small
// allocations; copies from and into managed memory with every kind; memset and async
// copies; host threads reading the same results at once; a host write seen by a
// device-to-device copy with no launch in between; another thread making unrelated calls
// while this one writes, launches and reads back; read(2) into fresh managed memory; and a
// SIGSEGV handler the program installed before any managed memory existed still gets the
// program's own faults.
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <atomic>
#include <thread>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>
#include "common.h"

__global__ void fill(int *p, size_t n, int base) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    for (; i < n; i += (size_t)gridDim.x * blockDim.x) p[i] = base + (int)i;
}

__global__ void add_at(int *p, size_t i, int v) { p[i] += v; }

__global__ void twice(const int *in, int *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * 2;
}

__global__ void sum(const int *p, int n, long long *out) {
    long long s = 0;
    for (int i = 0; i < n; i++) s += p[i];
    *out = s;
}

struct Reader {
    const int *p;
    size_t n;
    int base;
    int bad;
};

static void *read_all(void *arg) {
    Reader *r = (Reader *)arg;
    for (size_t i = 0; i < r->n; i++)
        if (r->p[i] != r->base + (int)i) r->bad++;
    return nullptr;
}

static sigjmp_buf g_jump;
static volatile int g_own_faults = 0;
static void own_handler(int) {
    g_own_faults++;
    siglongjmp(g_jump, 1);
}

int main() {
    int managed = 0;
    CHECK(cudaDeviceGetAttribute(&managed, cudaDevAttrManagedMemory, 0));
    EXPECT(managed == 1);
    if (!managed) return finish();

    // The program's own SIGSEGV handler, installed before any managed memory exists.
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = own_handler;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_NODEFER;
    EXPECT(sigaction(SIGSEGV, &sa, nullptr) == 0);

    // A large array: sparse host writes, kernel writes, sparse and full host reads.
    const size_t N = (8u << 20) / sizeof(int) + 777;  // over 8 MiB, not a whole page
    int *big = nullptr;
    CHECK(cudaMallocManaged(&big, N * sizeof(int)));
    EXPECT(big[0] == 0 && big[N - 1] == 0);  // fresh managed memory reads as zero
    big[N / 2] = 42;
    big[N - 1] = 7;
    long long *total = nullptr;
    CHECK(cudaMallocManaged(&total, sizeof *total));
    sum<<<1, 1>>>(big, (int)N, total);
    CHECK(cudaDeviceSynchronize());
    EXPECT(*total == 49);
    fill<<<64, 256>>>(big, N, 1000);
    CHECK(cudaDeviceSynchronize());
    EXPECT(big[N - 1] == 1000 + (int)(N - 1));
    EXPECT(big[3] == 1003 && big[N / 3] == 1000 + (int)(N / 3));
    int bad = 0;
    for (size_t i = 0; i < N; i++)
        if (big[i] != 1000 + (int)i) bad++;
    EXPECT(bad == 0);

    // A host write into a block the device changed, with no host read first: the rest of
    // the block keeps the device's bytes.
    fill<<<64, 256>>>(big, N, 5);
    CHECK(cudaDeviceSynchronize());
    big[100] = -1;
    add_at<<<1, 1>>>(big, 101, 10);
    CHECK(cudaDeviceSynchronize());
    EXPECT(big[99] == 5 + 99 && big[100] == -1 && big[101] == 5 + 101 + 10);
    EXPECT(big[102] == 5 + 102);

    // Host threads read the same results at once.
    fill<<<64, 256>>>(big, N, 77);
    CHECK(cudaDeviceSynchronize());
    pthread_t th[4];
    Reader rd[4];
    for (int t = 0; t < 4; t++) {
        rd[t] = Reader{big, N, 77, 0};
        EXPECT(pthread_create(&th[t], nullptr, read_all, &rd[t]) == 0);
    }
    for (int t = 0; t < 4; t++) {
        pthread_join(th[t], nullptr);
        EXPECT(rd[t].bad == 0);
    }

    // Many small allocations, each its own: writes to one never reach another.
    const int K = 40;
    int *small[K];
    for (int k = 0; k < K; k++) {
        CHECK(cudaMallocManaged(&small[k], 100));
        for (int j = 0; j < 25; j++) small[k][j] = k * 100 + j;
    }
    for (int k = 0; k < K; k += 3) add_at<<<1, 1>>>(small[k], 24, 1);
    CHECK(cudaDeviceSynchronize());
    bad = 0;
    for (int k = 0; k < K; k++)
        for (int j = 0; j < 25; j++)
            if (small[k][j] != k * 100 + j + (j == 24 && k % 3 == 0 ? 1 : 0)) bad++;
    EXPECT(bad == 0);

    // Copies with every kind, to and from managed memory.
    const size_t M = 70000;
    int *host = (int *)malloc(M * sizeof(int));
    int *dev = nullptr, *m = nullptr;
    CHECK(cudaMalloc(&dev, M * sizeof(int)));
    CHECK(cudaMallocManaged(&m, M * sizeof(int)));
    for (size_t i = 0; i < M; i++) host[i] = (int)(3 * i);
    CHECK(cudaMemcpy(m, host, M * sizeof(int), cudaMemcpyHostToDevice));
    EXPECT(m[M - 1] == (int)(3 * (M - 1)));
    for (size_t i = 0; i < M; i++) m[i] += 1;
    CHECK(cudaMemcpy(dev, m, M * sizeof(int), cudaMemcpyDeviceToDevice));
    memset(host, 0, M * sizeof(int));
    CHECK(cudaMemcpy(host, dev, M * sizeof(int), cudaMemcpyDeviceToHost));
    EXPECT(host[0] == 1 && host[M - 1] == (int)(3 * (M - 1) + 1));
    memset(host, 0, M * sizeof(int));
    CHECK(cudaMemcpy(host, m, M * sizeof(int), cudaMemcpyDeviceToHost));
    EXPECT(host[12345] == 3 * 12345 + 1);
    memset(host, 0, M * sizeof(int));
    CHECK(cudaMemcpy(host, m, M * sizeof(int), cudaMemcpyDefault));
    EXPECT(host[M / 2] == (int)(3 * (M / 2) + 1));
    m[5] = 555;
    CHECK(cudaMemcpy(host, m, 8 * sizeof(int), cudaMemcpyHostToHost));
    EXPECT(host[5] == 555);
    fill<<<16, 256>>>(dev, M, 9);
    CHECK(cudaMemcpy(m, dev, M * sizeof(int), cudaMemcpyDefault));
    EXPECT(m[0] == 9 && m[M - 1] == 9 + (int)(M - 1));
    host[0] = -5;
    CHECK(cudaMemcpy(m, host, sizeof(int), cudaMemcpyHostToHost));
    EXPECT(m[0] == -5 && m[1] == 10);
    sum<<<1, 1>>>(m, 2, total);
    CHECK(cudaDeviceSynchronize());
    EXPECT(*total == 5);

    // Memset and async copies on a stream.
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaMemsetAsync(m, 0xff, 16 * sizeof(int), s));
    CHECK(cudaStreamSynchronize(s));
    EXPECT(m[0] == -1 && m[15] == -1 && m[16] == 9 + 16);
    CHECK(cudaMemcpyAsync(m + 100, dev, 10 * sizeof(int), cudaMemcpyDefault, s));
    CHECK(cudaStreamSynchronize(s));
    EXPECT(m[100] == 9 && m[109] == 18 && m[110] == 9 + 110);
    CHECK(cudaStreamDestroy(s));

    // Another thread makes unrelated calls while this one writes, launches and reads back:
    // every request first sends what the host wrote, and none passes another's sending.
    {
        const int R = 1 << 20;
        int *in = nullptr, *res = nullptr;
        CHECK(cudaMallocManaged(&in, R * sizeof(int)));
        CHECK(cudaMallocManaged(&res, R * sizeof(int)));
        std::atomic<bool> stop{false};
        std::thread poller([&] {
            size_t fr, to;
            while (!stop) cudaMemGetInfo(&fr, &to);
        });
        int bad_iters = 0;
        for (int it = 1; it <= 20; it++) {
            for (int i = 0; i < R; i++) in[i] = it;
            twice<<<R / 256, 256>>>(in, res, R);
            CHECK(cudaDeviceSynchronize());
            int wrong = 0;
            for (int i = 0; i < R; i++) wrong += res[i] != 2 * it;
            bad_iters += wrong != 0;
        }
        stop = true;
        poller.join();
        EXPECT(bad_iters == 0);
        CHECK(cudaFree(in));
        CHECK(cudaFree(res));
    }

    // read(2) into fresh managed memory (the kernel writes it, no fault to serve).
    {
        char path[] = "/tmp/vcuda-managed-XXXXXX";
        int fd = mkstemp(path);
        EXPECT(fd >= 0);
        int data[1000];
        for (int i = 0; i < 1000; i++) data[i] = 7 * i;
        EXPECT(write(fd, data, sizeof data) == (ssize_t)sizeof data);
        lseek(fd, 0, SEEK_SET);
        int *f = nullptr;
        CHECK(cudaMallocManaged(&f, sizeof data));
        EXPECT(read(fd, f, sizeof data) == (ssize_t)sizeof data);
        close(fd);
        unlink(path);
        sum<<<1, 1>>>(f, 1000, total);
        CHECK(cudaDeviceSynchronize());
        EXPECT(*total == 7LL * 999 * 1000 / 2);
        CHECK(cudaFree(f));
    }

    // A prefetch to the CPU brings the kernel's results here, so write(2) can use them
    // (a system call does not fault to fetch them).
    {
        const int R = 1 << 16;
        int *res = nullptr;
        CHECK(cudaMallocManaged(&res, R * sizeof(int)));
        fill<<<64, 256>>>(res, R, 40);
#if CUDART_VERSION >= 13000
        cudaMemLocation cpu = {cudaMemLocationTypeHost, 0};
        CHECK(cudaMemPrefetchAsync(res, R * sizeof(int), cpu, 0, 0));
#else
        CHECK(cudaMemPrefetchAsync(res, R * sizeof(int), cudaCpuDeviceId, 0));
#endif
        CHECK(cudaStreamSynchronize(0));
        char path[] = "/tmp/vcuda-prefetch-XXXXXX";
        int fd = mkstemp(path);
        EXPECT(fd >= 0);
        EXPECT(write(fd, res, R * sizeof(int)) == (ssize_t)(R * sizeof(int)));
        int back[4] = {0, 0, 0, 0};
        EXPECT(pread(fd, back, sizeof back, (R - 4) * sizeof(int)) == (ssize_t)sizeof back);
        EXPECT(back[3] == 40 + R - 1);
        close(fd);
        unlink(path);
        CHECK(cudaFree(res));
    }

    // The program's own faults still reach its handler.
    long page = sysconf(_SC_PAGESIZE);
    char *guard = (char *)mmap(nullptr, page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT(guard != MAP_FAILED);
    if (sigsetjmp(g_jump, 1) == 0) {
        volatile char c = guard[1];
        (void)c;
    }
    EXPECT(g_own_faults == 1);
    // ...and managed memory keeps working after it.
    fill<<<4, 64>>>(m, 64, 1);
    CHECK(cudaDeviceSynchronize());
    EXPECT(m[63] == 64);
    munmap(guard, page);

    for (int k = 0; k < K; k++) CHECK(cudaFree(small[k]));
    CHECK(cudaFree(m));
    CHECK(cudaFree(dev));
    CHECK(cudaFree(big));
    CHECK(cudaFree(total));
    free(host);
    return finish();
}
