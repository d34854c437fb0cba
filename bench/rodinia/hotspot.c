// SPDX-License-Identifier: Apache-2.0 OR MIT
// Hotspot in C with OpenMP (see hotspot.cu).
#include "omp.h"
#include "hotspot.h"

int main(void) {
    float *a, *p;
    make_input(&a, &p);
    struct coeffs k = make_coeffs();
    float* b = (float*)malloc(sizeof(float) * ROWS * COLS);
    double t = now();
    for (int s = 0; s < STEPS; s++) {
#pragma omp parallel for
        for (int r = 0; r < ROWS; r++)
            for (int c = 0; c < COLS; c++) b[r * COLS + c] = HOTSPOT_CELL(a, p, r, c, k);
        float* x = a;
        a = b;
        b = x;
    }
    t = now() - t;
    report("hotspot", t, checksum(a));
    return 0;
}
