// SPDX-License-Identifier: Apache-2.0 OR MIT
// Pathfinder in C with OpenMP (see pathfinder.cu).
#include "omp.h"
#include "pathfinder.h"

int main(void) {
    int* wall = make_wall();
    int* src = (int*)malloc(COLS * sizeof(int));
    int* dst = (int*)malloc(COLS * sizeof(int));
    for (int c = 0; c < COLS; c++) src[c] = wall[c];
    double t = now();
    for (int r = 1; r < ROWS; r++) {
        const int* w = wall + (long)r * COLS;
#pragma omp parallel for
        for (int c = 0; c < COLS; c++) {
            int m = src[c];
            if (c > 0 && src[c - 1] < m) m = src[c - 1];
            if (c < COLS - 1 && src[c + 1] < m) m = src[c + 1];
            dst[c] = w[c] + m;
        }
        int* s = src;
        src = dst;
        dst = s;
    }
    t = now() - t;
    report("pathfinder", t, checksum(src));
    return 0;
}
