// SPDX-License-Identifier: Apache-2.0 OR MIT
// LU decomposition in C with OpenMP (see lud.h and lud.cu): the same tiles in the same order.
#include "omp.h"
#include "lud.h"

#define A(i, j) a[(long)(i) * N + (j)]

int main(void) {
    float* a = make_matrix();
    double t = now();
    for (int k = 0; k < N; k += BS) {
        // The diagonal tile.
        for (int p = k; p < k + BS; p++)
            for (int i = p + 1; i < k + BS; i++) {
                A(i, p) /= A(p, p);
                for (int j = p + 1; j < k + BS; j++) A(i, j) -= A(i, p) * A(p, j);
            }
        // The tiles right of it (U) and below it (L).
#pragma omp parallel for
        for (int b = k + BS; b < N; b += BS) {
            for (int p = k; p < k + BS; p++)
                for (int i = p + 1; i < k + BS; i++)
                    for (int j = b; j < b + BS; j++) A(i, j) -= A(i, p) * A(p, j);
            for (int i = b; i < b + BS; i++)
                for (int p = k; p < k + BS; p++) {
                    A(i, p) /= A(p, p);
                    for (int j = p + 1; j < k + BS; j++) A(i, j) -= A(i, p) * A(p, j);
                }
        }
        // The trailing tiles.
#pragma omp parallel for collapse(2)
        for (int bi = k + BS; bi < N; bi += BS)
            for (int bj = k + BS; bj < N; bj += BS)
                for (int i = bi; i < bi + BS; i++)
                    for (int j = bj; j < bj + BS; j++) {
                        float s = 0;
                        for (int p = k; p < k + BS; p++) s += A(i, p) * A(p, j);
                        A(i, j) -= s;
                    }
    }
    t = now() - t;
    report("lud", t, checksum(a));
    return 0;
}
