// SPDX-License-Identifier: Apache-2.0 OR MIT
// Small-call latency: the mean time of one call (microseconds) over many, for calls that
// need a reply from the device side (stream/event queries, tiny copies, launch + sync) and
// for calls a remoting layer may send without waiting (memset, launch).
#include "bench.h"

__global__ void empty() {}

template <class F>
static void measure(const char *name, int n, F f) {
    f();  // warm up
    double t0 = now_us();
    for (int i = 0; i < n; i++) f();
    bench(name, (now_us() - t0) / n, "us");
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
