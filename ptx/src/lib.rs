// SPDX-License-Identifier: Apache-2.0 OR MIT
//! A PTX parser and interpreter: runs CUDA kernels on the CPU
