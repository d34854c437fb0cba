// SPDX-License-Identifier: Apache-2.0 OR MIT
// Needleman-Wunsch in C with OpenMP (see nw.cu): one anti-diagonal at a time.
#include "omp.h"
#include "nw.h"

int main(void) {
    int *ref, *score;
    make_input(&ref, &score);
    double t = now();
    for (int d = 2; d <= 2 * N; d++) {
        int lo = d - N > 1 ? d - N : 1, hi = d - 1 < N ? d - 1 : N;
#pragma omp parallel for
        for (int i = lo; i <= hi; i++) {
            int j = d - i;
            int diag = score[(i - 1) * W + j - 1] + ref[i * W + j];
            int up = score[(i - 1) * W + j] - PENALTY;
            int left = score[i * W + j - 1] - PENALTY;
            int m = diag > up ? diag : up;
            score[i * W + j] = m > left ? m : left;
        }
    }
    t = now() - t;
    report("nw", t, checksum(score));
    return 0;
}
