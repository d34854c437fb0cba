// SPDX-License-Identifier: Apache-2.0 OR MIT
// Back-propagation in C with OpenMP (see backprop.h).
#include "omp.h"
#include "backprop.h"

int main(void) {
    struct net n = make_net();
    float sums[HID + 1], delta[HID + 1];
    double t = now();
    for (int e = 0; e < EPOCHS; e++) {
        for (int j = 1; j <= HID; j++) {
            float s = 0;
#pragma omp parallel for reduction(+ : s)
            for (int i = 0; i <= IN; i++) s += n.w[WI(i, j)] * n.input[i];
            sums[j] = s;
        }
        backward(&n, sums, delta);
#pragma omp parallel for
        for (int i = 0; i <= IN; i++)
            for (int j = 1; j <= HID; j++) BP_ADJUST(n.w, n.dw, n.input, delta, i, j);
    }
    t = now() - t;
    report("backprop", t, checksum(&n));
    return 0;
}
