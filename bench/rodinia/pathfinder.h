// SPDX-License-Identifier: Apache-2.0 OR MIT
// Pathfinder's sizes, input and checksum, shared by both versions.
#pragma once
#include "common.h"

#define ROWS 200
#define COLS 200000

static int* make_wall(void) {
    int* w = (int*)malloc(sizeof(int) * ROWS * COLS);
    for (long i = 0; i < (long)ROWS * COLS; i++) w[i] = (int)(rnd() % 10);
    return w;
}

// The sum of the bottom row's costs and the cheapest of them.
static double checksum(const int* last) {
    long long sum = 0;
    int best = last[0];
    for (int c = 0; c < COLS; c++) {
        sum += last[c];
        if (last[c] < best) best = last[c];
    }
    return (double)sum + (double)best / 1000.0;
}
