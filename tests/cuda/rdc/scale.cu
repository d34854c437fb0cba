// SPDX-License-Identifier: Apache-2.0 OR MIT
// A translation unit of tests/cuda/rdc.cu: the scale factor and scale().
#include "rdc.h"

__device__ float g_factor = 1.0f;

static __device__ int unit_tag() { return 2; }

__device__ float scale(float x) { return x * g_factor + (float)clamp_add(0, 0); }
__device__ int scale_unit_tag() { return unit_tag(); }
