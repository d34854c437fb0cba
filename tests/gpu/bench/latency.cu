// SPDX-License-Identifier: Apache-2.0 OR MIT
// Small-call latency: the mean time of one call (microseconds) over many, for calls that
// need a reply from the device side (stream/event queries, tiny copies, launch + sync) and
// for calls a remoting layer may send without waiting (memset, launch). The same run
// measures the floor of any remoting over a local socket, a 64-byte ping-pong over a Unix
// socket pair with a thread echoing, and prints each call's ratio to it (`ratio_lat_*`); and
// the same ping-pong with both sides polling the socket instead of sleeping in `read` (vcuda
// spins while it waits, as CUDA does), and each call's ratio to that (`ratio_spin_lat_*`).
#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>
#include <thread>
#include "bench.h"

__global__ void empty() {}

static double pingpong_us = 0;
static double spin_pingpong_us = 0;

template <class F>
static void measure(const char *name, int n, F f) {
    f();  // warm up
    double t0 = now_us();
    for (int i = 0; i < n; i++) f();
    double us = (now_us() - t0) / n;
    bench(name, us, "us");
    if (pingpong_us > 0) {
        std::string r = std::string("ratio_") + name;
        bench(r.c_str(), us / pingpong_us, "x_pingpong");
    }
    if (spin_pingpong_us > 0) {
        std::string r = std::string("ratio_spin_") + name;
        bench(r.c_str(), us / spin_pingpong_us, "x_spinning_pingpong");
    }
}

static bool spinning = false;

// Reads or writes exactly `len` bytes; false on end of file or error. With `spinning`, reads
// poll (MSG_DONTWAIT) instead of sleeping.
static bool full(int fd, char *p, size_t len, bool wr) {
    while (len) {
        ssize_t k = wr ? write(fd, p, len)
                       : (spinning ? recv(fd, p, len, MSG_DONTWAIT) : read(fd, p, len));
        if (k < 0 && !wr && spinning && errno == EAGAIN) continue;
        if (k <= 0) return false;
        p += k;
        len -= (size_t)k;
    }
    return true;
}

// Mean round trip of 64 bytes over a Unix socket pair to a thread that echoes them.
static double pingpong(int n) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return 0;
    std::thread echo([fd = sv[1]] {
        char b[64];
        while (full(fd, b, sizeof b, false) && full(fd, b, sizeof b, true)) {
        }
    });
    char b[64] = {};
    double us = 0;
    for (int round = 0; round < 2; round++) {  // the first round warms up
        double t0 = now_us();
        for (int i = 0; i < n; i++)
            if (!full(sv[0], b, sizeof b, true) || !full(sv[0], b, sizeof b, false)) break;
        us = (now_us() - t0) / n;
    }
    close(sv[0]);
    echo.join();
    close(sv[1]);
    return us;
}

int main(int argc, char **argv) {
    int n = quick(argc, argv) ? 500 : 20000;
    int dev;
    cudaStream_t s;
    cudaEvent_t ev;
    int *d, h = 0;
    CHECK(cudaStreamCreate(&s));
    CHECK(cudaEventCreate(&ev));
    CHECK(cudaMalloc(&d, 4));
    CHECK(cudaEventRecord(ev, s));
    CHECK(cudaStreamSynchronize(s));
    pingpong_us = pingpong(n);
    bench("lat_unix_pingpong_64B", pingpong_us, "us");
    spinning = true;
    spin_pingpong_us = pingpong(n);
    spinning = false;
    bench("lat_unix_pingpong_64B_spinning", spin_pingpong_us, "us");
    // Calls that wait for a reply before any is measured: on a small VM, cores that slept
    // through the first ping-pong stay slow to wake for ~15 ms, which the first measured
    // round trips would otherwise pay (30 us a call where 2 us is usual, measured).
    for (int i = 0; i < n; i++) CHECK(cudaEventQuery(ev));

    measure("lat_cudaGetDevice", n, [&] { CHECK(cudaGetDevice(&dev)); });
    measure("lat_cudaStreamQuery", n, [&] { CHECK(cudaStreamQuery(s)); });
    measure("lat_cudaEventQuery", n, [&] { CHECK(cudaEventQuery(ev)); });
    measure("lat_cudaStreamSynchronize_idle", n, [&] { CHECK(cudaStreamSynchronize(s)); });
    measure("lat_cudaMemsetAsync", n, [&] { CHECK(cudaMemsetAsync(d, 0, 4, s)); });
    CHECK(cudaStreamSynchronize(s));
    measure("lat_cudaMemsetAsync_sync", n, [&] {
        CHECK(cudaMemsetAsync(d, 0, 4, s));
        CHECK(cudaStreamSynchronize(s));
    });
    measure("lat_cudaMemcpy_h2d_4B", n, [&] { CHECK(cudaMemcpy(d, &h, 4, cudaMemcpyHostToDevice)); });
    measure("lat_cudaMemcpy_d2h_4B", n, [&] { CHECK(cudaMemcpy(&h, d, 4, cudaMemcpyDeviceToHost)); });
    // A value read back in stream order (PyTorch's .item()).
    measure("lat_cudaMemcpyAsync_d2h_4B_sync", n, [&] {
        CHECK(cudaMemcpyAsync(&h, d, 4, cudaMemcpyDeviceToHost, s));
        CHECK(cudaStreamSynchronize(s));
    });
    measure("lat_launch_sync", n, [&] {
        empty<<<1, 1, 0, s>>>();
        CHECK(cudaStreamSynchronize(s));
    });
    measure("lat_cudaEventRecord_sync", n, [&] {
        CHECK(cudaEventRecord(ev, s));
        CHECK(cudaEventSynchronize(ev));
    });
    CHECK(cudaGetLastError());
    CHECK(cudaFree(d));
    CHECK(cudaEventDestroy(ev));
    CHECK(cudaStreamDestroy(s));
    printf("PASS\n");
    return 0;
}
