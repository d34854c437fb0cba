// SPDX-License-Identifier: Apache-2.0 OR MIT
// Declarations shared by the units of tests/cuda/rdc.cu.
#pragma once

extern __device__ float g_factor;
extern __device__ unsigned g_count;
extern __device__ float g_max;

__device__ float scale(float x);
__device__ void record(float x);
__device__ int scale_unit_tag();
__device__ int stats_unit_tag();

// Every unit that uses it carries a copy (a weak definition the linker merges).
inline __device__ int clamp_add(int a, int b) { return a + b > 100 ? 100 : a + b; }
