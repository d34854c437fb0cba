// SPDX-License-Identifier: Apache-2.0 OR MIT
//! libvcuda.so: a drop-in libcudart/libcublas/libcurand that forwards every call to a vcuda backend
