// SPDX-License-Identifier: Apache-2.0 OR MIT
// Streamcluster's points and checksum, shared by both versions: the local search at the
// heart of Rodinia's streamcluster (its pgain), reduced to opening facilities. Each point
// is served by its nearest open facility at the cost of its weighted distance; for each
// candidate point in turn, every point computes what it would save by switching to the
// candidate (in parallel), and where the savings exceed the cost of opening a facility
// the candidate opens and the points that save switch to it.
#pragma once
#include "common.h"

#define POINTS 65536
#define DIM 32
#define CANDIDATES 64
#define OPEN_COST 2000.0

static float* make_points(void) {
    float* p = (float*)malloc(sizeof(float) * POINTS * DIM);
    for (long i = 0; i < (long)POINTS * DIM; i++) p[i] = rndf();
    return p;
}

// The squared distance between points a and b, times a's weight (1).
#define SC_DIST(p, a, b)                                                                     \
    ({                                                                                       \
        float s_ = 0;                                                                        \
        for (int d_ = 0; d_ < DIM; d_++) {                                                   \
            float x_ = p[(long)(a) * DIM + d_] - p[(long)(b) * DIM + d_];                    \
            s_ += x_ * x_;                                                                   \
        }                                                                                    \
        s_;                                                                                  \
    })

// The candidates: every POINTS / CANDIDATES-th point.
#define SC_CANDIDATE(k) ((long)(k) * (POINTS / CANDIDATES))

// The facilities opened, the total cost and the sum of the assignments.
static double checksum(int opened, const float* cost, const int* assign) {
    double c = 0;
    long long a = 0;
    for (int i = 0; i < POINTS; i++) {
        c += cost[i];
        a += assign[i];
    }
    return (double)opened * 1e6 + c + (double)(a % 1000003) * 1e-9;
}
