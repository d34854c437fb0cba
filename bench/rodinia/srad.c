// SPDX-License-Identifier: Apache-2.0 OR MIT
// SRAD in C with OpenMP (see srad.h).
#include "omp.h"
#include "srad.h"

int main(void) {
    float* J = make_image();
    long n = (long)ROWS * COLS;
    float *dN = malloc(sizeof(float) * n), *dS = malloc(sizeof(float) * n);
    float *dW = malloc(sizeof(float) * n), *dE = malloc(sizeof(float) * n);
    float* C = malloc(sizeof(float) * n);
    double t = now();
    for (int it = 0; it < ITERATIONS; it++) {
        double sum = 0, sum2 = 0;
#pragma omp parallel for reduction(+ : sum, sum2)
        for (long i = 0; i < n; i++) {
            sum += J[i];
            sum2 += (double)J[i] * J[i];
        }
        float q0sqr = q0sqr_of(sum, sum2);
#pragma omp parallel for
        for (int r = 0; r < ROWS; r++)
            for (int c = 0; c < COLS; c++) {
                int k = r * COLS + c;
                SRAD_COEFF(J, r, c, q0sqr, dN[k], dS[k], dW[k], dE[k], C[k]);
            }
#pragma omp parallel for
        for (int r = 0; r < ROWS; r++)
            for (int c = 0; c < COLS; c++) {
                int k = r * COLS + c;
                float d = C[k] * dN[k] + C[SRAD_S(r) * COLS + c] * dS[k] + C[k] * dW[k] +
                          C[r * COLS + SRAD_E(c)] * dE[k];
                J[k] += 0.25f * LAMBDA * d;
            }
    }
    t = now() - t;
    report("srad", t, checksum(J));
    return 0;
}
