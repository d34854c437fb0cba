// SPDX-License-Identifier: Apache-2.0 OR MIT
// vcuda-vm-test: expect=migrate-ipc: PASS
// vcuda-vm-test: expect_err=(move 1)
// vcuda-vm-test: vm=--migrate-after 6
// vcuda-vm-test: args=150 200
// Live migration of device memory two processes share through an IPC handle (issue 39):
// a parent allocates and exports device memory and an interprocess event, a forked child
// opens both, and the two take turns adding to the memory (the parent 1, the child 2 per
// step; the child waits on the parent's event before its turn) while
// `vcuda vm run --migrate-after` moves the guest. Both sessions move in one device state;
// the child's import is linked to the parent's allocation again on the other side, so
// their turns keep landing in one buffer: every word is 3 per step at the end.
//
//   migrate_ipc [STEPS [SLEEP_MS]]   (defaults 60, 200)
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define CK(x)                                                                                 \
    do {                                                                                      \
        cudaError_t e_ = (x);                                                                 \
        if (e_ != cudaSuccess) {                                                              \
            printf("%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));        \
            return 1;                                                                         \
        }                                                                                     \
    } while (0)

__global__ void add(unsigned *a, int n, unsigned k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] += k;
}

static const int N = 4096;

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

static bool write_all(int fd, const void *buf, size_t len) {
    return write(fd, buf, len) == (ssize_t)len;
}

// Opens the parent's memory and adds 2 to it each time the parent says so.
static int child(int from_parent, int to_parent) {
    cudaIpcMemHandle_t h;
    cudaIpcEventHandle_t eh;
    if (!read_all(from_parent, &h, sizeof h) || !read_all(from_parent, &eh, sizeof eh)) {
        printf("migrate-ipc: child: no handle\n");
        return 1;
    }
    unsigned *p;
    CK(cudaIpcOpenMemHandle((void **)&p, h, cudaIpcMemLazyEnablePeerAccess));
    cudaEvent_t ev;
    CK(cudaIpcOpenEventHandle(&ev, eh));
    char turn;
    while (read_all(from_parent, &turn, 1) && turn == 'T') {
        // The parent recorded its event after its turn's kernel.
        CK(cudaStreamWaitEvent(0, ev, 0));
        add<<<(N + 255) / 256, 256>>>(p, N, 2);
        CK(cudaDeviceSynchronize());
        if (!write_all(to_parent, "D", 1)) return 1;
    }
    CK(cudaIpcCloseMemHandle(p));
    return 0;
}

int main(int argc, char **argv) {
    int steps = argc > 1 ? atoi(argv[1]) : 60;
    int sleep_ms = argc > 2 ? atoi(argv[2]) : 200;
    int down[2], up[2];
    if (pipe(down) || pipe(up)) {
        printf("migrate-ipc: pipe\n");
        return 1;
    }
    // Forked before either process uses CUDA.
    pid_t pid = fork();
    if (pid < 0) {
        printf("migrate-ipc: fork\n");
        return 1;
    }
    if (pid == 0) {
        close(down[1]);
        close(up[0]);
        _exit(child(down[0], up[1]));
    }
    close(down[0]);
    close(up[1]);
    unsigned *d;
    CK(cudaMalloc(&d, N * sizeof(unsigned)));
    CK(cudaMemset(d, 0, N * sizeof(unsigned)));
    cudaIpcMemHandle_t h;
    CK(cudaIpcGetMemHandle(&h, d));
    cudaEvent_t ev;
    CK(cudaEventCreateWithFlags(&ev, cudaEventInterprocess | cudaEventDisableTiming));
    cudaIpcEventHandle_t eh;
    CK(cudaIpcGetEventHandle(&eh, ev));
    if (!write_all(down[1], &h, sizeof h) || !write_all(down[1], &eh, sizeof eh)) return 1;
    unsigned host[N];
    int bad = 0;
    for (int k = 1; k <= steps && !bad; k++) {
        add<<<(N + 255) / 256, 256>>>(d, N, 1);
        CK(cudaEventRecord(ev, 0));
        CK(cudaDeviceSynchronize());
        char done = 0;
        if (!write_all(down[1], "T", 1) || !read_all(up[0], &done, 1) || done != 'D') {
            printf("migrate-ipc: step %d: the child did not answer\n", k);
            bad++;
            break;
        }
        CK(cudaMemcpy(host, d, sizeof host, cudaMemcpyDeviceToHost));
        for (int i = 0; i < N; i++) bad += host[i] != 3u * k;
        if (bad) printf("migrate-ipc: step %d: %d words differ\n", k, bad);
        if (k % 10 == 0) printf("migrate-ipc: step %d\n", k);
        fflush(stdout);
        usleep(sleep_ms * 1000);
    }
    write_all(down[1], "E", 1);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        printf("migrate-ipc: the child failed\n");
        bad++;
    }
    CK(cudaFree(d));
    printf("migrate-ipc: %s (%d steps)\n", bad ? "FAIL" : "PASS", steps);
    return bad ? 1 : 0;
}
