// SPDX-License-Identifier: Apache-2.0 OR MIT
// Thrust (and CUB below it), as most CUDA C++ programs use them: device vectors, a radix
// sort of 100,000 keys, sort by key, reduce, transform, inclusive and exclusive scans
// (CUB's decoupled look-back across blocks), copy_if, unique, count_if and min_element,
// on the default stream and on a stream of the program's own (thrust::cuda::par.on).
#include <thrust/copy.h>
#include <thrust/count.h>
#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/extrema.h>
#include <thrust/host_vector.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>
#include <thrust/transform.h>
#include <thrust/unique.h>
#include <algorithm>
#include <vector>
#include "common.h"

struct square {
    __host__ __device__ long long operator()(int x) const { return (long long)x * x; }
};
struct is_odd {
    __host__ __device__ bool operator()(int x) const { return x & 1; }
};

int main() {
    const int n = 100000;
    std::vector<int> h(n);
    unsigned seed = 12345;
    for (int i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        h[i] = (int)((seed >> 8) % 5000);
    }
    thrust::device_vector<int> d(h.begin(), h.end());

    // Sum and sum of squares.
    long long sum = thrust::reduce(d.begin(), d.end(), 0LL);
    long long want = 0, want_sq = 0;
    for (int x : h) want += x, want_sq += (long long)x * x;
    EXPECT(sum == want);
    thrust::device_vector<long long> sq(n);
    thrust::transform(d.begin(), d.end(), sq.begin(), square());
    thrust::inclusive_scan(sq.begin(), sq.end(), sq.begin());
    EXPECT(sq[n - 1] == want_sq);

    // Sort, then what depends on the order.
    std::vector<int> sorted = h;
    std::sort(sorted.begin(), sorted.end());
    thrust::sort(d.begin(), d.end());
    thrust::host_vector<int> back = d;
    EXPECT(std::equal(sorted.begin(), sorted.end(), back.begin()));
    int odd = (int)std::count_if(h.begin(), h.end(), [](int x) { return x & 1; });
    EXPECT(thrust::count_if(d.begin(), d.end(), is_odd()) == odd);
    thrust::device_vector<int> odds(n);
    auto end = thrust::copy_if(d.begin(), d.end(), odds.begin(), is_odd());
    EXPECT(end - odds.begin() == odd);
    EXPECT(thrust::is_sorted(odds.begin(), end));
    int distinct = (int)(std::unique(sorted.begin(), sorted.end()) - sorted.begin());
    EXPECT(thrust::unique(d.begin(), d.end()) - d.begin() == distinct);

    // Sort by key on a stream of the program's own: descending float keys.
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    thrust::device_vector<float> keys(n);
    thrust::device_vector<long long> vals(n);
    thrust::sequence(thrust::cuda::par.on(s), keys.rbegin(), keys.rend(), 0.5f);
    thrust::sequence(thrust::cuda::par.on(s), vals.begin(), vals.end(), 0LL);
    thrust::sort_by_key(thrust::cuda::par.on(s), keys.begin(), keys.end(), vals.begin());
    thrust::exclusive_scan(thrust::cuda::par.on(s), vals.begin(), vals.end(), vals.begin());
    CHECK(cudaStreamSynchronize(s));
    // vals was n-1, n-2, ..., 0; its exclusive scan ends with the sum of all but the last.
    long long last = vals[n - 1];
    EXPECT(last == (long long)n * (n - 1) / 2);
    EXPECT(keys[0] == 0.5f && keys[n - 1] == n - 0.5f);
    auto lo = thrust::min_element(thrust::cuda::par.on(s), keys.begin(), keys.end());
    EXPECT(lo - keys.begin() == 0);
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaGetLastError());
    return finish();
}
