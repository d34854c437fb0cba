// SPDX-License-Identifier: Apache-2.0 OR MIT
// Needleman-Wunsch's sizes, input and checksum, shared by both versions.
#pragma once
#include "common.h"

#define N 2048
#define PENALTY 10
#define W (N + 1)

// The similarity of each pair of positions (-10..10) and the first row and column.
static void make_input(int** ref, int** score) {
    *ref = (int*)malloc(sizeof(int) * W * W);
    *score = (int*)calloc((size_t)W * W, sizeof(int));
    for (long i = 0; i < (long)W * W; i++) (*ref)[i] = (int)(rnd() % 21) - 10;
    for (int i = 0; i < W; i++) {
        (*score)[i * W] = -i * PENALTY;
        (*score)[i] = -i * PENALTY;
    }
}

// The alignment's score and the sum of the last row.
static double checksum(const int* score) {
    long long sum = 0;
    for (int j = 0; j < W; j++) sum += score[N * W + j];
    return (double)score[N * W + N] + (double)sum * 1e-9;
}
