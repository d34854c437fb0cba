// SPDX-License-Identifier: Apache-2.0 OR MIT
// Needleman-Wunsch: the global alignment score matrix of two sequences, filled one
// anti-diagonal at a time (every cell of one depends only on the two before it).
#include "cuda.h"
#include "nw.h"

__global__ void diagonal(const int* ref, int* score, int d) {
    // Cells (i, j) with i + j = d, 1 <= i, j <= N.
    int lo = d - N > 1 ? d - N : 1;
    int i = lo + blockIdx.x * blockDim.x + threadIdx.x;
    int j = d - i;
    if (i > N || j < 1) return;
    int diag = score[(i - 1) * W + j - 1] + ref[i * W + j];
    int up = score[(i - 1) * W + j] - PENALTY;
    int left = score[i * W + j - 1] - PENALTY;
    score[i * W + j] = max(diag, max(up, left));
}

int main() {
    int *ref, *score;
    make_input(&ref, &score);
    int* d_ref = to_device(ref, (size_t)W * W);
    int* d_score = to_device(score, (size_t)W * W);
    double t = now();
    for (int d = 2; d <= 2 * N; d++) {
        int lo = d - N > 1 ? d - N : 1, hi = d - 1 < N ? d - 1 : N;
        int cells = hi - lo + 1;
        diagonal<<<(cells + 127) / 128, 128>>>(d_ref, d_score, d);
    }
    CHECK(cudaDeviceSynchronize());
    t = now() - t;
    CHECK(cudaMemcpy(score, d_score, sizeof(int) * W * W, cudaMemcpyDeviceToHost));
    report("nw", t, checksum(score));
    return 0;
}
