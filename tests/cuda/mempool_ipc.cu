// SPDX-License-Identifier: Apache-2.0 OR MIT
// Interprocess memory pools: a parent process creates a pool with POSIX file descriptor
// handles, allocates from it and fills the block with a kernel, then exports the pool (a
// descriptor, which the forked child opens through /proc) and the block
// (cudaMemPoolPtrExportData, sent down a pipe). The child imports both, sees the parent's
// values, adds to them with a kernel of its own and frees the imported pointer; the parent
// sees the child's writes. Also: the device attribute, export from a pool without handle
// types, export of memory from outside an exportable pool, import of a descriptor that is
// no pool, allocation from an imported pool.
#include <fcntl.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>
#include "common.h"

__global__ void fill(int *p, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = 2 * i;
}

__global__ void add(int *p, int n, int v) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] += v;
}

static const int N = 2000;

static bool read_all(int fd, void *buf, size_t len) {
    char *p = (char *)buf;
    while (len > 0) {
        ssize_t r = read(fd, p, len);
        if (r <= 0) return false;
        p += r;
        len -= (size_t)r;
    }
    return true;
}

static int child(int from_parent, int to_parent) {
    // The parent's descriptor number, then the pointer's export data. The descriptor itself
    // is opened through /proc (the test VM's kernel has no Unix sockets for SCM_RIGHTS).
    int parent_fd = -1;
    cudaMemPoolPtrExportData data;
    if (!read_all(from_parent, &parent_fd, sizeof parent_fd) || !read_all(from_parent, &data, sizeof data)) {
        printf("FAIL: read\n");
        return 1;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)getppid(), parent_fd);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        printf("FAIL: open %s\n", path);
        return 1;
    }
    cudaMemPool_t pool;
    CHECK(cudaMemPoolImportFromShareableHandle(&pool, (void *)(uintptr_t)fd, cudaMemHandleTypePosixFileDescriptor, 0));
    close(fd);
    int *p = nullptr;
    CHECK(cudaMemPoolImportPointer((void **)&p, pool, &data));
    static int host[N];
    CHECK(cudaMemcpy(host, p, sizeof host, cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; i++) EXPECT(host[i] == 2 * i);
    add<<<(N + 255) / 256, 256>>>(p, N, 5);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    // An imported pool allocates nothing.
    void *x = nullptr;
    EXPECT(cudaMallocFromPoolAsync(&x, 64, pool, 0) != cudaSuccess);
    cudaGetLastError();
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    CHECK(cudaFreeAsync(p, s));
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaMemPoolDestroy(pool));
    char ok = g_failures ? 'F' : 'K';
    if (write(to_parent, &ok, 1) != 1) return 1;
    return g_failures ? 1 : 0;
}

int main() {
    int down[2], up[2];
    if (pipe(down) || pipe(up)) {
        printf("FAIL: pipe\n");
        return 1;
    }
    // Fork before any CUDA call: the child is a process of its own, with its own session.
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        printf("FAIL: fork\n");
        return 1;
    }
    if (pid == 0) {
        close(down[1]);
        close(up[0]);
        int rc = child(down[0], up[1]);
        fflush(stdout);
        _exit(rc);
    }
    close(down[0]);
    close(up[1]);

    int types = 0;
    CHECK(cudaDeviceGetAttribute(&types, cudaDevAttrMemoryPoolSupportedHandleTypes, 0));
    EXPECT(types & cudaMemHandleTypePosixFileDescriptor);

    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    cudaMemPool_t plain;
    CHECK(cudaMemPoolCreate(&plain, &props));
    props.handleTypes = cudaMemHandleTypePosixFileDescriptor;
    cudaMemPool_t pool;
    CHECK(cudaMemPoolCreate(&pool, &props));

    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    int *d = nullptr;
    CHECK(cudaMallocFromPoolAsync((void **)&d, N * sizeof(int), pool, s));
    fill<<<(N + 255) / 256, 256, 0, s>>>(d, N);
    CHECK(cudaGetLastError());
    CHECK(cudaStreamSynchronize(s));

    // Only a pool made with a handle type exports, and only its blocks.
    int bad_fd = -1;
    EXPECT_ERR(cudaMemPoolExportToShareableHandle(&bad_fd, plain, cudaMemHandleTypePosixFileDescriptor, 0),
               cudaErrorInvalidValue);
    int *other = nullptr;
    CHECK(cudaMalloc(&other, 256));
    cudaMemPoolPtrExportData data;
    EXPECT_ERR(cudaMemPoolExportPointer(&data, other), cudaErrorInvalidValue);
    // A descriptor that is no exported pool does not import.
    int pfd[2];
    if (pipe(pfd)) {
        printf("FAIL: pipe\n");
        return 1;
    }
    cudaMemPool_t not_pool;
    EXPECT_ERR(cudaMemPoolImportFromShareableHandle(&not_pool, (void *)(uintptr_t)pfd[0],
                                                    cudaMemHandleTypePosixFileDescriptor, 0),
               cudaErrorInvalidValue);
    close(pfd[0]);
    close(pfd[1]);

    int fd = -1;
    CHECK(cudaMemPoolExportToShareableHandle(&fd, pool, cudaMemHandleTypePosixFileDescriptor, 0));
    CHECK(cudaMemPoolExportPointer(&data, d));
    if (write(down[1], &fd, sizeof fd) != (ssize_t)sizeof fd ||
        write(down[1], &data, sizeof data) != (ssize_t)sizeof data) {
        printf("FAIL: write\n");
        return 1;
    }
    char ok = 0;
    EXPECT(read_all(up[0], &ok, 1) && ok == 'K');
    int status = 0;
    EXPECT(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(fd);

    static int host[N];
    CHECK(cudaMemcpy(host, d, sizeof host, cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; i++) EXPECT(host[i] == 2 * i + 5);
    CHECK(cudaFreeAsync(d, s));
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaFree(other));
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaMemPoolDestroy(pool));
    CHECK(cudaMemPoolDestroy(plain));
    return finish();
}
