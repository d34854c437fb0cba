// SPDX-License-Identifier: Apache-2.0 OR MIT
// Gaussian elimination in C with OpenMP (see gaussian.cu).
#include "omp.h"
#include "gaussian.h"

int main(void) {
    float *a, *b;
    make_system(&a, &b);
    float* m = (float*)malloc(sizeof(float) * N);
    double t0 = now();
    for (int t = 0; t < N - 1; t++) {
        for (int i = t + 1; i < N; i++) m[i] = a[i * N + t] / a[t * N + t];
#pragma omp parallel for
        for (int i = t + 1; i < N; i++) {
            for (int j = t; j < N; j++) a[i * N + j] -= m[i] * a[t * N + j];
            b[i] -= m[i] * b[t];
        }
    }
    double t = now() - t0;
    report("gaussian", t, solve_back(a, b));
    return 0;
}
