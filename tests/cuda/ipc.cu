// SPDX-License-Identifier: Apache-2.0 OR MIT
// Interprocess memory and event handles: a parent process fills device memory, launches a
// kernel on it and records an interprocess event, then sends a cudaIpcMemHandle_t and a
// cudaIpcEventHandle_t down a pipe to a forked child. The child opens the event and waits
// on it, opens the memory (twice: the same address), sees the parent's kernel's result, runs
// a kernel of its own on it and closes it; the parent sees the child's writes. Also: forged
// handles, flags, events without cudaEventInterprocess, and opening a handle in the process
// that made it.
#include <sys/wait.h>
#include <unistd.h>
#include "common.h"

__global__ void add(int *p, int n, int v) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] += v;
}

static const int N = 1000;

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
    cudaIpcMemHandle_t h;
    cudaIpcEventHandle_t eh;
    char mode = 0;
    if (!read_all(from_parent, &mode, 1) || mode == 'N') return 0;  // no IPC here
    if (!read_all(from_parent, &h, sizeof h) || !read_all(from_parent, &eh, sizeof eh)) {
        printf("FAIL: child: no handle\n");
        return 1;
    }
    // The parent's event: waiting on it orders this process's work after the parent's kernel.
    cudaEvent_t ev;
    CHECK(cudaIpcOpenEventHandle(&ev, eh));
    CHECK(cudaStreamWaitEvent(0, ev, 0));
    CHECK(cudaEventSynchronize(ev));
    CHECK(cudaEventQuery(ev));
    float ms = 0;
    EXPECT(cudaEventElapsedTime(&ms, ev, ev) != cudaSuccess);  // no timing on IPC events
    cudaGetLastError();
    int *p = nullptr, *q = nullptr;
    CHECK(cudaIpcOpenMemHandle((void **)&p, h, cudaIpcMemLazyEnablePeerAccess));
    CHECK(cudaIpcOpenMemHandle((void **)&q, h, cudaIpcMemLazyEnablePeerAccess));
    EXPECT(p != nullptr && p == q);
    cudaPointerAttributes a;
    CHECK(cudaPointerGetAttributes(&a, p));
    EXPECT(a.type == cudaMemoryTypeDevice);
    int host[N];
    CHECK(cudaMemcpy(host, p, sizeof host, cudaMemcpyDefault));
    for (int i = 0; i < N; i++) EXPECT(host[i] == 3 * i + 7);
    add<<<(N + 255) / 256, 256>>>(p, N, 1000);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(host, p, sizeof host, cudaMemcpyDefault));
    for (int i = 0; i < N; i++) EXPECT(host[i] == 3 * i + 1007);
    CHECK(cudaEventDestroy(ev));
    cudaIpcEventHandle_t bad_eh = eh;
    bad_eh.reserved[9] ^= 1;
    EXPECT(cudaIpcOpenEventHandle(&ev, bad_eh) != cudaSuccess);
    cudaGetLastError();
    // cudaFree does not take a mapped handle's memory.
    EXPECT(cudaFree(p) != cudaSuccess);
    cudaGetLastError();
    CHECK(cudaIpcCloseMemHandle(p));
    CHECK(cudaIpcCloseMemHandle(q));
    EXPECT_ERR(cudaIpcCloseMemHandle(p), cudaErrorInvalidValue);
    // A forged handle (every byte changed: NVIDIA's driver opened one with a byte changed),
    // and unknown flags, which NVIDIA's runtime ignores (measured on an H100).
    cudaIpcMemHandle_t bad = h;
    for (int i = 0; i < (int)sizeof bad.reserved; i++) bad.reserved[i] ^= 0x5a;
    int *r = nullptr;
    EXPECT(cudaIpcOpenMemHandle((void **)&r, bad, cudaIpcMemLazyEnablePeerAccess) != cudaSuccess);
    cudaGetLastError();
    CHECK(cudaIpcOpenMemHandle((void **)&r, h, 7));
    CHECK(cudaIpcCloseMemHandle(r));
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

    int *d = nullptr;
    CHECK(cudaMalloc(&d, N * sizeof(int)));
    int host[N];
    for (int i = 0; i < N; i++) host[i] = 3 * i;
    CHECK(cudaMemcpy(d, host, sizeof host, cudaMemcpyHostToDevice));
    // The parent's kernel, then an interprocess event recorded after it.
    add<<<(N + 255) / 256, 256>>>(d, N, 7);
    CHECK(cudaGetLastError());
    // vcuda's CUDA executor passes CUDA's own handles between sessions only when the backend
    // is started with --cuda-ipc (SECURITY.md): the calls say so.
    cudaIpcMemHandle_t probe;
    if (cudaIpcGetMemHandle(&probe, d) == cudaErrorNotSupported) {
        cudaGetLastError();
        printf("interprocess handles are not enabled on this backend\n");
        EXPECT(write(down[1], "N", 1) == 1);
        int status = 0;
        EXPECT(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
        CHECK(cudaFree(d));
        return finish();
    }
    cudaEvent_t ev, plain;
    CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming | cudaEventInterprocess));
    CHECK(cudaEventCreate(&plain));
    cudaIpcEventHandle_t eh;
    EXPECT_ERR(cudaIpcGetEventHandle(&eh, plain), cudaErrorInvalidResourceHandle);
    EXPECT_ERR(cudaEventCreateWithFlags(&plain, cudaEventInterprocess), cudaErrorInvalidValue);
    CHECK(cudaEventRecord(ev, 0));
    CHECK(cudaIpcGetEventHandle(&eh, ev));
    cudaIpcMemHandle_t h, h2;
    CHECK(cudaIpcGetMemHandle(&h, d));
    CHECK(cudaIpcGetMemHandle(&h2, d));
    EXPECT(memcmp(&h, &h2, sizeof h) == 0);
    // Not in the process that made it.
    int *self = nullptr;
    EXPECT(cudaIpcOpenMemHandle((void **)&self, h, cudaIpcMemLazyEnablePeerAccess) != cudaSuccess);
    cudaGetLastError();
    // Host memory has no handle.
    EXPECT(cudaIpcGetMemHandle(&h2, host) != cudaSuccess);
    cudaGetLastError();
    if (write(down[1], "Y", 1) != 1 || write(down[1], &h, sizeof h) != (ssize_t)sizeof h ||
        write(down[1], &eh, sizeof eh) != (ssize_t)sizeof eh) {
        printf("FAIL: write\n");
        return 1;
    }
    char ok = 0;
    EXPECT(read_all(up[0], &ok, 1) && ok == 'K');
    int status = 0;
    EXPECT(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    // The child's kernel wrote the parent's memory.
    CHECK(cudaMemcpy(host, d, sizeof host, cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; i++) EXPECT(host[i] == 3 * i + 1007);
    CHECK(cudaEventDestroy(ev));
    CHECK(cudaFree(d));
    return finish();
}
