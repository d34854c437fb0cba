// SPDX-License-Identifier: Apache-2.0 OR MIT
// Gaussian elimination's system and checksum, shared by both versions: a diagonally
// dominant N x N system, reduced to upper triangular form (Rodinia's Fan1, the
// multipliers of a column, and Fan2, the update of the rows below), then solved backwards.
#pragma once
#include "common.h"

#define N 768

static void make_system(float** a, float** b) {
    *a = (float*)malloc(sizeof(float) * N * N);
    *b = (float*)malloc(sizeof(float) * N);
    for (int i = 0; i < N; i++) {
        for (int j = 0; j < N; j++) (*a)[i * N + j] = rndf() - 0.5f;
        (*a)[i * N + i] += (float)N;
        (*b)[i] = rndf();
    }
}

// Back substitution on the triangular system; the checksum is the sum of the solution.
static double solve_back(const float* a, const float* b) {
    double* x = (double*)malloc(sizeof(double) * N);
    double sum = 0;
    for (int i = N - 1; i >= 0; i--) {
        double s = b[i];
        for (int j = i + 1; j < N; j++) s -= a[i * N + j] * x[j];
        x[i] = s / a[i * N + i];
        sum += x[i];
    }
    free(x);
    return sum;
}
