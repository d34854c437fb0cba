// SPDX-License-Identifier: Apache-2.0 OR MIT
// Posted calls back to back: `n` empty <<<1, 1>>> launches, then `n` cudaMemsetAsync of 4
// bytes, each stream of calls followed by one synchronization. Prints the program's time per
// call; bench/backend-cost.sh runs it against a backend and divides the backend's CPU time
// by the calls.
//
//   post_cost [n]      (default 100000)
#include "bench.h"

__global__ void empty() {}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 100000;
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    int *p;
    CHECK(cudaMalloc(&p, 4));
    empty<<<1, 1, 0, s>>>();
    CHECK(cudaStreamSynchronize(s));
    double t0 = now_us();
    for (int i = 0; i < n; i++) empty<<<1, 1, 0, s>>>();
    CHECK(cudaStreamSynchronize(s));
    double t1 = now_us();
    for (int i = 0; i < n; i++) CHECK(cudaMemsetAsync(p, i & 0xff, 4, s));
    CHECK(cudaStreamSynchronize(s));
    double t2 = now_us();
    CHECK(cudaGetLastError());
    if (n > 0) {
        bench("post_launch_program", (t1 - t0) / n, "us");
        bench("post_memset_program", (t2 - t1) / n, "us");
    }
    CHECK(cudaFree(p));
    printf("PASS\n");
    return 0;
}
