// SPDX-License-Identifier: Apache-2.0 OR MIT
//! End-to-end tests: real nvcc-built CUDA programs through every vcuda transport
