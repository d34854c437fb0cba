// SPDX-License-Identifier: Apache-2.0 OR MIT
// Streamcluster's local search in C with OpenMP (see streamcluster.h).
#include "omp.h"
#include "streamcluster.h"

int main(void) {
    float* p = make_points();
    float* cost = (float*)malloc(sizeof(float) * POINTS);
    int* assign = (int*)malloc(sizeof(int) * POINTS);
    float* save = (float*)malloc(sizeof(float) * POINTS);
    int opened = 1;
    double t = now();
    // The first point is the first facility.
#pragma omp parallel for
    for (int i = 0; i < POINTS; i++) {
        assign[i] = 0;
        cost[i] = SC_DIST(p, i, 0);
    }
    for (int k = 1; k < CANDIDATES; k++) {
        long x = SC_CANDIDATE(k);
        double total = 0;
#pragma omp parallel for reduction(+ : total)
        for (int i = 0; i < POINTS; i++) {
            float d = SC_DIST(p, i, x);
            save[i] = d < cost[i] ? cost[i] - d : 0.0f;
            total += save[i];
        }
        if (total > OPEN_COST) {
            opened++;
#pragma omp parallel for
            for (int i = 0; i < POINTS; i++)
                if (save[i] > 0) {
                    cost[i] -= save[i];
                    assign[i] = (int)x;
                }
        }
    }
    t = now() - t;
    report("streamcluster", t, checksum(opened, cost, assign));
    return 0;
}
