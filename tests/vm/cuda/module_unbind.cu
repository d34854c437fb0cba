// SPDX-License-Identifier: Apache-2.0 OR MIT
// vcuda-vm-test: expect=module-unbind: PASS
// vcuda-vm-test: vm=--check-unload
// Kernel-module tests of device removal, run inside the guest (tests/vm/run.sh):
// 1. unbinding the driver (sysfs) while a process waits for a copy queued (on the host) behind
//    another thread's long kernel, and another file is open: the waiter is released (its call
//    fails), open files get ENODEV, the copy's in pages stay pinned (the host may still write
//    them) and nothing else does; when the kernel ends on the host, after the reset, the host
//    writes that call's reply, which must not land in memory the module freed (watched in
//    pipe pages); binding again gives a working device;
// 2. exiting while a killed process's call is still running on the host, so that the runner's
//    `rmmod` (vcuda vm run --check-unload) detaches with a chain in flight.
#include <cuda_runtime.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "vm_test.h"

static bool round_trip() {
    std::vector<int> h(1 << 18), r(h.size());
    for (size_t i = 0; i < h.size(); i++) h[i] = (int)(i * 31 + 7);
    void *d;
    bool ok = cudaMalloc(&d, h.size() * 4) == cudaSuccess &&
              cudaMemcpy(d, h.data(), h.size() * 4, cudaMemcpyHostToDevice) == cudaSuccess &&
              cudaMemcpy(r.data(), d, h.size() * 4, cudaMemcpyDeviceToHost) == cudaSuccess &&
              r == h;
    cudaFree(d);
    return ok;
}

// Runs `f` in a fresh process (its own libvcuda session); returns its exit status.
template <typename F>
static int in_child(F f) {
    fflush(nullptr);
    pid_t pid = fork();
    if (pid == 0) _exit(f());
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static std::string bound_device() {
    DIR *d = opendir("/sys/bus/virtio/drivers/vcuda");
    if (!d) return "";
    std::string name;
    while (dirent *e = readdir(d))
        if (strncmp(e->d_name, "virtio", 6) == 0) name = e->d_name;
    closedir(d);
    return name;
}

static bool write_file(const char *path, const std::string &s) {
    int fd = open(path, O_WRONLY);
    if (fd < 0) return false;
    bool ok = write(fd, s.data(), s.size()) == (ssize_t)s.size();
    close(fd);
    return ok;
}

// A call still running on the host at a device reset goes on until it returns, and then writes
// its in segments (DEVICE.md, Reset) and its reply area, so the module must not free them.
// Kernel buffers the module frees go back to the page allocator's unmovable free lists, where
// pipe pages come from: fills pipes with 256 MiB of pages (so that whatever the module freed
// at the reset is very likely among them), waits until `deadline`, and reads them back looking
// for a reply header at the start of a page (where reply areas start). Returns the number of
// pages that got one, or -1.
static long watch_freed_memory(double deadline) {
    const uint32_t reply_magic = 0x52554356;  // "VCUR": REPLY_MAGIC, protocol/src/wire.rs
    const int n_pipes = 256, pipe_bytes = 1 << 20;
    static char page[4096];
    memset(page, 0x5a, sizeof page);
    std::vector<int> rd, wr;
    size_t held = 0;
    for (int i = 0; i < n_pipes; i++) {
        int p[2];
        if (pipe2(p, O_NONBLOCK) != 0) break;
        rd.push_back(p[0]);
        wr.push_back(p[1]);
        fcntl(p[1], F_SETPIPE_SZ, pipe_bytes);
        while (write(p[1], page, sizeof page) == (ssize_t)sizeof page) held += sizeof page;
    }
    double t0 = now();
    if (now() < deadline) usleep((useconds_t)((deadline - now()) * 1e6));
    long hits = 0;
    for (int fd : rd) {
        char buf[4096];
        while (read(fd, buf, sizeof buf) == (ssize_t)sizeof buf) {
            if (memcmp(buf, &reply_magic, 4) == 0) {
                fprintf(stderr, "a reply header appeared in a page of a pipe\n");
                hits++;
            }
        }
    }
    for (size_t i = 0; i < rd.size(); i++) {
        close(rd[i]);
        close(wr[i]);
    }
    printf("watched %zu MiB of pipe pages for %.1f s: %ld late replies\n", held >> 20,
           now() - t0, hits);
    return held >= (64u << 20) ? hits : -1;
}

int main(int argc, char **argv) {
    setvbuf(stdout, nullptr, _IOLBF, 0);
    // Everything here runs in child processes: the parent keeps no libvcuda session across
    // the unbind.
    unsigned long long rate = 0;
    // Pages pinned now; the first child's session has to be closed on the device (which
    // unpins what it shared, after the child has exited) before the count below starts.
    long pinned_before = vmstat("nr_foll_pin_acquired") - vmstat("nr_foll_pin_released");
    {
        int p[2];
        if (pipe(p) != 0) return 2;
        int st = in_child([&] {
            unsigned long long r = spin_per_second();
            return write(p[1], &r, sizeof r) == sizeof r && round_trip() ? 0 : 1;
        });
        CHECK(st == 0 && read(p[0], &rate, sizeof rate) == sizeof rate, "first round trip");
        close(p[0]);
        close(p[1]);
    }
    printf("spin: %llu iterations a second\n", rate);
    for (int i = 0; i < 100; i++) {
        if (vmstat("nr_foll_pin_acquired") - vmstat("nr_foll_pin_released") == pinned_before) break;
        usleep(50000);
    }

    std::string dev = bound_device();
    CHECK(!dev.empty(), "no device bound to the vcuda driver");
    int idle = open("/dev/vcuda", O_RDWR);
    CHECK(idle >= 0, "open: %s", strerror(errno));

    // 1. Unbind under a waiter.
    // Long enough to outlast the unbind (2 s drain, then the backend gives each stopped queue
    // 10 s) and the filling of the pipes that watch for its late reply.
    static const int long_kernel_s = 40;
    fflush(nullptr);
    long acq0 = vmstat("nr_foll_pin_acquired"), rel0 = vmstat("nr_foll_pin_released");
    pid_t waiter = fork();
    if (waiter == 0) {
        // One thread launches a 40 s kernel; another then copies 1 MiB device-to-host. Both
        // chains are on the host when the device is reset (the copy, with 256 pinned in
        // pages, queued behind the kernel in the session). Posted calls go out at once here:
        // held in the library's batch, the launch would go as an ioctl that holds the batch's
        // order lock while the host runs it, and the copy would wait in this process, not on
        // the host, for the kernel.
        setenv("VCUDA_BATCH_US", "0", 1);
        static float *d;
        static void *h;
        if (cudaMalloc(&d, 1 << 20) != cudaSuccess || posix_memalign(&h, 4096, 1 << 20) != 0)
            _exit(10);
        memset(h, 1, 1 << 20);
        pthread_t th;
        pthread_create(&th, nullptr, [](void *r) -> void * {
            spin<<<1, 32>>>(*(unsigned long long *)r * long_kernel_s, d);
            cudaDeviceSynchronize();
            return nullptr;
        }, &rate);
        usleep(500000);
        cudaError_t e = cudaMemcpy(h, d, 1 << 20, cudaMemcpyDeviceToHost);
        fprintf(stderr, "waiter: copy returned %s\n", cudaGetErrorString(e));
        // The device is gone for good: every later call fails the same way, at once.
        cudaError_t later = cudaMemset(d, 0, 4);
        fprintf(stderr, "waiter: a later call returned %s\n", cudaGetErrorString(later));
        _exit(e == cudaSuccess ? 11 : later != cudaErrorDevicesUnavailable ? 12 : 0);
    }
    double launched = now();
    usleep(1500000);
    double t0 = now();
    CHECK(write_file("/sys/bus/virtio/drivers/vcuda/unbind", dev), "unbind: %s", strerror(errno));
    printf("unbind took %.1f s\n", now() - t0);
    int st = 0;
    waitpid(waiter, &st, 0);
    CHECK(WIFEXITED(st) || WIFSIGNALED(st), "waiter");
    printf("waiter: %s %d\n", WIFEXITED(st) ? "exit" : "signal",
           WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
    CHECK(!WIFEXITED(st) || WEXITSTATUS(st) != 11, "the waiter's call succeeded after unbind");
    CHECK(!WIFEXITED(st) || WEXITSTATUS(st) != 12, "a call after the device left was not refused");
    vcuda_info info;
    CHECK(ioctl(idle, VCUDA_IOC_INFO, &info) == 0, "INFO on a file of a removed device");
    CHECK(open("/dev/vcuda", O_RDWR) < 0 && errno == ENODEV, "open without a device: %s",
          strerror(errno));
    close(idle);
    // The copy's in pages stay pinned: the host may still write them (DEVICE.md, Reset).
    long acq = vmstat("nr_foll_pin_acquired") - acq0, rel = vmstat("nr_foll_pin_released") - rel0;
    printf("pins during the unbind: %ld acquired, %ld released\n", acq, rel);
    CHECK(acq - rel == 256, "pins kept after unbind: %ld, want 256", acq - rel);
    // The waiter's kernel ends on the host meanwhile (allowing for a slower host).
    long late = watch_freed_memory(launched + 1 + long_kernel_s * 1.25);
    CHECK(late >= 0, "could not fill the pipes");
    CHECK(late <= 0, "the host wrote %ld replies into memory the module had freed", late);

    CHECK(write_file("/sys/bus/virtio/drivers/vcuda/bind", dev), "bind: %s", strerror(errno));
    CHECK(in_child([] { return round_trip() ? 0 : 1; }) == 0, "round trip after rebind");
    printf("rebind: done\n");

    // 2. Leave a killed process's call running on the host; the runner unloads the module.
    fflush(nullptr);
    pid_t victim = fork();
    if (victim == 0) {
        float *d;
        cudaMalloc(&d, 4);
        spin<<<1, 32>>>(rate * 30, d);
        cudaDeviceSynchronize();
        _exit(0);
    }
    usleep(1000000);
    kill(victim, SIGKILL);
    waitpid(victim, &st, 0);
    CHECK(WIFSIGNALED(st), "victim not killed");

    if (failures) {
        printf("module-unbind: %d FAILED\n", failures);
        return 1;
    }
    printf("module-unbind: PASS\n");
    return 0;
}
