// SPDX-License-Identifier: Apache-2.0 OR MIT
//! CUDA fat binary parsing: wrappers, entries, decompression and kernel parameter layouts
