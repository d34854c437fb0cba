// SPDX-License-Identifier: Apache-2.0 OR MIT
// Kernels reading and writing mapped (zero-copy) host memory in place: the rate at which a
// kernel sums 64 MiB of `cudaHostAlloc(cudaHostAllocMapped)` memory, and fills it, across
// the bus (GB/s, median of five), beside the same kernels on device memory. Natively the
// GPU reaches the pages over PCIe; through vcuda's CUDA executor it reaches the same pages
// of the program (shared with the backend and registered there at the program's own
// address); where the backend cannot, the library's coherent cache stands in and the
// kernels read device memory instead (then `zc_*` come out near `dev_*`).
#include "bench.h"

__global__ void sum(const uint4 *p, size_t n, unsigned long long *out) {
    unsigned long long s = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        uint4 v = p[i];
        s += (unsigned long long)v.x + v.y + v.z + v.w;
    }
    atomicAdd(out, s);
}

__global__ void fill(uint4 *p, size_t n, unsigned v) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = make_uint4(v, v, v, v);
}

// Median GB/s of `reps` runs of `launch` over `bytes`.
template <class F>
static double rate(size_t bytes, int reps, F launch) {
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    launch();  // warm up
    CHECK(cudaDeviceSynchronize());
    std::vector<double> gbs;
    for (int i = 0; i < reps; i++) {
        CHECK(cudaEventRecord(a));
        launch();
        CHECK(cudaEventRecord(b));
        CHECK(cudaEventSynchronize(b));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, a, b));
        gbs.push_back(bytes / (ms * 1e6));
    }
    CHECK(cudaEventDestroy(a));
    CHECK(cudaEventDestroy(b));
    return median(gbs);
}

int main(int argc, char **argv) {
    bool quick = argc > 1 && std::string(argv[1]) == "--quick";
    size_t bytes = (quick ? 4u : 64u) << 20;
    size_t n = bytes / sizeof(uint4);
    int reps = quick ? 3 : 5;
    unsigned *host = nullptr;
    CHECK(cudaHostAlloc(&host, bytes, cudaHostAllocMapped));
    for (size_t i = 0; i < bytes / 4; i++) host[i] = 1;
    uint4 *mapped = nullptr;
    CHECK(cudaHostGetDevicePointer((void **)&mapped, host, 0));
    uint4 *dev = nullptr;
    CHECK(cudaMalloc(&dev, bytes));
    CHECK(cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice));
    unsigned long long *total = nullptr;
    CHECK(cudaMalloc(&total, sizeof *total));
    int sms = 0;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    dim3 grid(sms * 8), block(256);

    auto summed = [&](const uint4 *p) {
        CHECK(cudaMemset(total, 0, sizeof *total));
        sum<<<grid, block>>>(p, n, total);
        unsigned long long t = 0;
        CHECK(cudaMemcpy(&t, total, sizeof t, cudaMemcpyDeviceToHost));
        return t;
    };
    bool ok = summed(mapped) == bytes / 4 && summed(dev) == bytes / 4;
    double zc_read = rate(bytes, reps, [&] { sum<<<grid, block>>>(mapped, n, total); });
    double dev_read = rate(bytes, reps, [&] { sum<<<grid, block>>>(dev, n, total); });
    double zc_write = rate(bytes, reps, [&] { fill<<<grid, block>>>(mapped, n, 2); });
    double dev_write = rate(bytes, reps, [&] { fill<<<grid, block>>>(dev, n, 2); });
    CHECK(cudaDeviceSynchronize());
    // The kernel's writes are in the program's memory.
    ok = ok && host[0] == 2 && host[bytes / 4 - 1] == 2;
    printf("zero-copy reads and writes: %s\n", ok ? "ok" : "WRONG");
    bench("zc_read", zc_read, "GB/s");
    bench("dev_read", dev_read, "GB/s");
    bench("zc_write", zc_write, "GB/s");
    bench("dev_write", dev_write, "GB/s");
    CHECK(cudaFree(total));
    CHECK(cudaFree(dev));
    CHECK(cudaFreeHost(host));
    return ok ? 0 : 1;
}
