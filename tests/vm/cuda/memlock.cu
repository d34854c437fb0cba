// SPDX-License-Identifier: Apache-2.0 OR MIT
// vcuda-vm-test: expect=memlock: PASS
// The kernel module charges the pages it pins for a call to the caller's RLIMIT_MEMLOCK
// (tests/vm/run.sh runs this in the guest):
// 1. as root (CAP_IPC_LOCK), a 16 MiB copy each way pins the program's pages; afterwards the
//    process's locked memory (VmLck) is back to 0;
// 2. a child (a fresh process) that drops to an unprivileged uid under a 64 KiB limit still copies 16 MiB
//    each way correctly: its data goes through kernel bounce buffers instead (the module
//    says so once in the kernel log), and it never holds locked memory past its limit.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

static int failures = 0;
#define EXPECT(c)                                                                            \
    do {                                                                                     \
        if (!(c)) {                                                                          \
            printf("memlock: FAIL %s:%d: %s\n", __FILE__, __LINE__, #c);                     \
            failures++;                                                                      \
        }                                                                                    \
    } while (0)

// VmLck of this process, in kB (-1 if unreadable).
static long vm_lck() {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    long kb = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmLck: %ld kB", &kb) == 1) break;
    fclose(f);
    return kb;
}

// Copies 16 MiB to the device and back; whether the data survived.
static bool round_trip(unsigned char seed) {
    const size_t n = 16 << 20;
    unsigned char *h = (unsigned char *)malloc(n), *back = (unsigned char *)malloc(n);
    for (size_t i = 0; i < n; i++) h[i] = (unsigned char)(i * 7 + seed);
    void *d = nullptr;
    bool ok = cudaMalloc(&d, n) == cudaSuccess &&
              cudaMemcpy(d, h, n, cudaMemcpyHostToDevice) == cudaSuccess &&
              cudaMemcpy(back, d, n, cudaMemcpyDeviceToHost) == cudaSuccess &&
              memcmp(h, back, n) == 0;
    cudaFree(d);
    free(h);
    free(back);
    return ok;
}

static std::string kernel_log() {
    std::string all;
    FILE *f = popen("dmesg 2>/dev/null", "r");
    if (!f) return all;
    char buf[4096];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0) all.append(buf, got);
    pclose(f);
    return all;
}

// The unprivileged half, in a fresh process: connects as root, then drops to nobody under a
// 64 KiB locked-memory limit and copies.
static int child() {
    void *d = nullptr;
    if (cudaMalloc(&d, 64) != cudaSuccess) return 10;
    struct rlimit lim = {64 << 10, 64 << 10};
    if (setrlimit(RLIMIT_MEMLOCK, &lim) != 0) return 11;
    if (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0) return 12;
    bool ok = round_trip(2) && round_trip(3);
    long lck = vm_lck();
    printf("memlock: unprivileged child: copies %s, VmLck %ld kB\n", ok ? "ok" : "FAILED", lck);
    return ok && lck == 0 ? 0 : 13;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "child") == 0) return child();
    // 1. Privileged: pinned, and uncharged afterwards.
    EXPECT(round_trip(1));
    EXPECT(vm_lck() == 0);

    // 2. Unprivileged under a small limit.
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        execl("/proc/self/exe", argv[0], "child", (char *)nullptr);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    EXPECT(kernel_log().find("RLIMIT_MEMLOCK") != std::string::npos);
    if (failures == 0) printf("memlock: PASS\n");
    return failures ? 1 : 0;
}
