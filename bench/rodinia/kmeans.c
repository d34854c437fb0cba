// SPDX-License-Identifier: Apache-2.0 OR MIT
// k-means in C with OpenMP (see kmeans.cu).
#include "omp.h"
#include "kmeans.h"

int main(void) {
    float* p = make_points();
    float centres[K * FEATURES];
    first_centres(p, centres);
    int* member = (int*)malloc(sizeof(int) * POINTS);
    double t = now();
    for (int it = 0; it < ITERATIONS; it++) {
#pragma omp parallel for
        for (int i = 0; i < POINTS; i++) member[i] = KMEANS_NEAREST(p, centres, i);
        update_centres(p, member, centres);
    }
    t = now() - t;
    report("kmeans", t, checksum(member, centres));
    return 0;
}
