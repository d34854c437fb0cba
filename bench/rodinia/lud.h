// SPDX-License-Identifier: Apache-2.0 OR MIT
// LU decomposition's matrix and checksum, shared by both versions: Doolittle's
// factorization without pivoting of a diagonally dominant N x N matrix, in place, by 16 x 16
// tiles as Rodinia's lud does it: for each diagonal tile, factor it, solve the tiles right
// of it and below it against it, then update every tile of the trailing matrix.
#pragma once
#include "common.h"

#define N 1024
#define BS 16

static float* make_matrix(void) {
    float* a = (float*)malloc(sizeof(float) * N * N);
    for (int i = 0; i < N; i++) {
        for (int j = 0; j < N; j++) a[i * N + j] = rndf();
        a[i * N + i] += (float)N;
    }
    return a;
}

// The sum of the factors' diagonal (U's) and of L's first column below it.
static double checksum(const float* a) {
    double s = 0;
    for (int i = 0; i < N; i++) s += a[i * N + i] + (i > 0 ? a[i * N] : 0);
    return s;
}
