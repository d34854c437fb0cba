// SPDX-License-Identifier: Apache-2.0 OR MIT
// Hotspot's sizes, constants, input and checksum, shared by both versions: the chip's
// temperature on a grid, stepped by its power and its neighbours' heat (Rodinia's model).
#pragma once
#include "common.h"

#define ROWS 1024
#define COLS 1024
#define STEPS 100

// Rodinia's chip: 0.016 m square, 0.5 mm thick, ambient 80 degrees.
#define T_CHIP 0.0005f
#define CHIP 0.016f
#define K_SI 100.0f
#define SPEC_HEAT 1.75e6f
#define FACTOR 0.5f
#define AMB 80.0f

struct coeffs {
    float cap, rx, ry, rz, step;
};

static struct coeffs make_coeffs(void) {
    float gw = CHIP / COLS, gh = CHIP / ROWS;
    struct coeffs k;
    k.cap = FACTOR * SPEC_HEAT * T_CHIP * gw * gh;
    k.rx = gw / (2.0f * K_SI * T_CHIP * gh);
    k.ry = gh / (2.0f * K_SI * T_CHIP * gw);
    k.rz = T_CHIP / (K_SI * gh * gw);
    float max_slope = 3.0e6f / (FACTOR * T_CHIP * SPEC_HEAT);
    k.step = 0.001f / max_slope;
    return k;
}

static void make_input(float** temp, float** power) {
    *temp = (float*)malloc(sizeof(float) * ROWS * COLS);
    *power = (float*)malloc(sizeof(float) * ROWS * COLS);
    for (int i = 0; i < ROWS * COLS; i++) {
        (*temp)[i] = 320.0f + 20.0f * rndf();
        (*power)[i] = 0.001f * rndf();
    }
}

// One cell's next temperature (edges take their own temperature for a missing neighbour).
#define HOTSPOT_CELL(t, p, r, c, k)                                                         \
    ({                                                                                      \
        float self_ = t[(r) * COLS + (c)];                                                  \
        float n_ = (r) > 0 ? t[((r) - 1) * COLS + (c)] : self_;                             \
        float s_ = (r) < ROWS - 1 ? t[((r) + 1) * COLS + (c)] : self_;                      \
        float w_ = (c) > 0 ? t[(r) * COLS + (c) - 1] : self_;                               \
        float e_ = (c) < COLS - 1 ? t[(r) * COLS + (c) + 1] : self_;                        \
        self_ + ((k).step / (k).cap) *                                                      \
                    (p[(r) * COLS + (c)] + (s_ + n_ - 2.0f * self_) / (k).ry +              \
                     (e_ + w_ - 2.0f * self_) / (k).rx + (AMB - self_) / (k).rz);           \
    })

static double checksum(const float* t) {
    double sum = 0;
    for (int i = 0; i < ROWS * COLS; i++) sum += t[i];
    return sum;
}
