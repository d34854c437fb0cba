// SPDX-License-Identifier: Apache-2.0 OR MIT
// Back-propagation's network and checksum, shared by both versions: Rodinia's backprop, a
// network of IN inputs, HID hidden units and one output, trained on one pattern: the
// forward pass into the hidden layer (in parallel over inputs), the output and the errors
// (on the host, as Rodinia), and the adjustment of the input-to-hidden weights (in parallel),
// repeated EPOCHS times.
#pragma once
#include <math.h>
#include <string.h>
#include "common.h"

#define IN 65536
#define HID 16
#define EPOCHS 10
#define ETA 0.3f
#define MOMENTUM 0.3f

// Weights from input i (0 is the bias unit) to hidden unit j, at [i * (HID + 1) + j], j >= 1.
#define WI(i, j) ((i) * (HID + 1) + (j))

struct net {
    float *input, *w, *dw, hidden[HID + 1], who[HID + 1], target;
};

static struct net make_net(void) {
    struct net n;
    n.input = (float*)malloc(sizeof(float) * (IN + 1));
    n.w = (float*)malloc(sizeof(float) * (IN + 1) * (HID + 1));
    n.dw = (float*)calloc((size_t)(IN + 1) * (HID + 1), sizeof(float));
    n.input[0] = 1.0f;
    for (int i = 1; i <= IN; i++) n.input[i] = rndf();
    for (long k = 0; k < (long)(IN + 1) * (HID + 1); k++) n.w[k] = (rndf() - 0.5f) * 0.01f;
    for (int j = 0; j <= HID; j++) n.who[j] = rndf() - 0.5f;
    n.target = 0.1f;
    return n;
}

static float squash(float x) { return 1.0f / (1.0f + expf(-x)); }

// From the hidden layer's sums: the output, then the hidden units' errors (delta[1..HID]).
static void backward(struct net* n, const float* sums, float* delta) {
    n->hidden[0] = 1.0f;
    for (int j = 1; j <= HID; j++) n->hidden[j] = squash(sums[j]);
    float o = 0;
    for (int j = 0; j <= HID; j++) o += n->who[j] * n->hidden[j];
    o = squash(o);
    float od = o * (1.0f - o) * (n->target - o);
    for (int j = 1; j <= HID; j++) {
        float h = n->hidden[j];
        delta[j] = h * (1.0f - h) * od * n->who[j];
        n->who[j] += ETA * od * h;
    }
}

// The new weight and its change for input i, hidden unit j.
#define BP_ADJUST(w, dw, input, delta, i, j)                                                \
    do {                                                                                    \
        float d_ = ETA * (delta)[j] * (input)[i] + MOMENTUM * (dw)[WI(i, j)];               \
        (w)[WI(i, j)] += d_;                                                                \
        (dw)[WI(i, j)] = d_;                                                                \
    } while (0)

static double checksum(const struct net* n) {
    double s = 0;
    for (int j = 0; j <= HID; j++) s += n->who[j] + n->hidden[j];
    return s;
}
