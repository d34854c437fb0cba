// SPDX-License-Identifier: Apache-2.0 OR MIT
// Shared by the Rodinia-style programs' C/OpenMP and CUDA versions (bench/rodinia.sh): the
// same inputs from the same generator, and one line of output,
// "BENCH <name> <seconds of the computation> <checksum>", that the script compares.
#pragma once
#include <stdio.h>
#include <stdlib.h>

static unsigned long long rng_state = 0x853c49e6748fea9bULL;

// The next pseudo-random 31-bit number (a 64-bit LCG's high bits).
static inline unsigned rnd(void) {
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)(rng_state >> 33);
}

// A pseudo-random float in [0, 1).
static inline float rndf(void) { return (float)(rnd() & 0xffffff) / 16777216.0f; }

static inline void report(const char* name, double seconds, double checksum) {
    printf("BENCH %s %.6f %.9e\n", name, seconds, checksum);
}
