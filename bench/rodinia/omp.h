// SPDX-License-Identifier: Apache-2.0 OR MIT
// The C/OpenMP versions' timer.
#pragma once
#include <omp.h>
#include "common.h"

static inline double now(void) { return omp_get_wtime(); }
