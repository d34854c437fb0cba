// SPDX-License-Identifier: Apache-2.0 OR MIT
// k-means' points and checksum, shared by both versions: each iteration assigns every point
// to its nearest centre (in parallel), then moves each centre to the mean of its points (on
// the host in both versions, as Rodinia does), for a fixed number of iterations.
#pragma once
#include <string.h>
#include "common.h"

#define POINTS 262144
#define FEATURES 16
#define K 8
#define ITERATIONS 10

static float* make_points(void) {
    float* p = (float*)malloc(sizeof(float) * POINTS * FEATURES);
    for (int i = 0; i < POINTS; i++) {
        // Around one of K true centres.
        int c = (int)(rnd() % K);
        for (int f = 0; f < FEATURES; f++)
            p[i * FEATURES + f] = (float)((c * 7 + f * 3) % 11) + rndf();
    }
    return p;
}

// The first K points as the first centres.
static void first_centres(const float* p, float* centres) {
    memcpy(centres, p, sizeof(float) * K * FEATURES);
}

// Moves each centre to the mean of the points assigned to it.
static void update_centres(const float* p, const int* member, float* centres) {
    double sum[K][FEATURES];
    int n[K];
    memset(sum, 0, sizeof sum);
    memset(n, 0, sizeof n);
    for (int i = 0; i < POINTS; i++) {
        n[member[i]]++;
        for (int f = 0; f < FEATURES; f++) sum[member[i]][f] += p[i * FEATURES + f];
    }
    for (int c = 0; c < K; c++)
        if (n[c] > 0)
            for (int f = 0; f < FEATURES; f++) centres[c * FEATURES + f] = (float)(sum[c][f] / n[c]);
}

// The index of the centre nearest to point `i` (the first of equals).
#define KMEANS_NEAREST(p, centres, i)                                                     \
    ({                                                                                    \
        int best_ = 0;                                                                    \
        float bd_ = 3.4e38f;                                                              \
        for (int c_ = 0; c_ < K; c_++) {                                                  \
            float d_ = 0;                                                                 \
            for (int f_ = 0; f_ < FEATURES; f_++) {                                       \
                float x_ = p[(i) * FEATURES + f_] - centres[c_ * FEATURES + f_];          \
                d_ += x_ * x_;                                                            \
            }                                                                             \
            if (d_ < bd_) {                                                               \
                bd_ = d_;                                                                 \
                best_ = c_;                                                               \
            }                                                                             \
        }                                                                                 \
        best_;                                                                            \
    })

// The size of each cluster, weighted by its index, and the first centre's first feature.
static double checksum(const int* member, const float* centres) {
    long long s = 0;
    for (int i = 0; i < POINTS; i++) s += member[i] + 1;
    return (double)s + centres[0] * 1e-3;
}
