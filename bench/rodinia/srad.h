// SPDX-License-Identifier: Apache-2.0 OR MIT
// SRAD's image, constants and checksum, shared by both versions: speckle reducing
// anisotropic diffusion (Yu and Acton; Rodinia's srad_v2). Each iteration takes the
// speckle scale q0 from the image's mean and variance, computes each pixel's diffusion
// coefficient from its gradients and Laplacian, then diffuses.
#pragma once
#include <math.h>
#include "common.h"

#define ROWS 1024
#define COLS 1024
#define ITERATIONS 20
#define LAMBDA 0.5f

static float* make_image(void) {
    float* j = (float*)malloc(sizeof(float) * ROWS * COLS);
    for (int i = 0; i < ROWS * COLS; i++) j[i] = expf(rndf());
    return j;
}

// q0^2 from the sum and the sum of squares of the image.
static float q0sqr_of(double sum, double sum2) {
    double n = (double)ROWS * COLS;
    double mean = sum / n, var = sum2 / n - mean * mean;
    return (float)(var / (mean * mean));
}

// Neighbours, clamped at the edges.
#define SRAD_N(r) ((r) > 0 ? (r) - 1 : 0)
#define SRAD_S(r) ((r) < ROWS - 1 ? (r) + 1 : ROWS - 1)
#define SRAD_W(c) ((c) > 0 ? (c) - 1 : 0)
#define SRAD_E(c) ((c) < COLS - 1 ? (c) + 1 : COLS - 1)

// Pixel (r, c)'s four differences and its diffusion coefficient.
#define SRAD_COEFF(J, r, c, q0sqr, dn, ds, dw, de, cc)                                      \
    do {                                                                                    \
        float jc_ = J[(r) * COLS + (c)];                                                    \
        dn = J[SRAD_N(r) * COLS + (c)] - jc_;                                               \
        ds = J[SRAD_S(r) * COLS + (c)] - jc_;                                               \
        dw = J[(r) * COLS + SRAD_W(c)] - jc_;                                               \
        de = J[(r) * COLS + SRAD_E(c)] - jc_;                                               \
        float g2_ = (dn * dn + ds * ds + dw * dw + de * de) / (jc_ * jc_);                  \
        float l_ = (dn + ds + dw + de) / jc_;                                               \
        float num_ = 0.5f * g2_ - (1.0f / 16.0f) * (l_ * l_);                               \
        float den_ = 1.0f + 0.25f * l_;                                                     \
        float qsqr_ = num_ / (den_ * den_);                                                 \
        den_ = (qsqr_ - (q0sqr)) / ((q0sqr) * (1.0f + (q0sqr)));                            \
        cc = 1.0f / (1.0f + den_);                                                          \
        cc = cc < 0.0f ? 0.0f : (cc > 1.0f ? 1.0f : cc);                                    \
    } while (0)

static double checksum(const float* j) {
    double s = 0;
    for (int i = 0; i < ROWS * COLS; i++) s += j[i];
    return s;
}
