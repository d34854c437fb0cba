// SPDX-License-Identifier: Apache-2.0 OR MIT
// vcuda-test: expect=sum of 1..1000 = 500500
// A single thread sums 1..1000 into a __device__ variable and prints it with device printf.
#include "common.h"

__device__ long long total;

__global__ void sum(int n) {
    long long s = 0;
    for (int i = 1; i <= n; i++) s += i;
    total = s;
    printf("sum of 1..%d = %lld\n", n, s);
}

int main() {
    sum<<<1, 1>>>(1000);
    CHECK(cudaDeviceSynchronize());
    long long t = 0;
    CHECK(cudaMemcpyFromSymbol(&t, total, sizeof t));
    EXPECT(t == 500500);
    return finish();
}
