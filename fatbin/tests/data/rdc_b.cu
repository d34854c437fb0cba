// SPDX-License-Identifier: Apache-2.0 OR MIT
// Separate compilation fixture, part B (see gen.sh).
__device__ float helper(float x) { return 2.0f * x; }

__global__ void rdc_other(double* d) { d[0] = helper(1.0f); }
