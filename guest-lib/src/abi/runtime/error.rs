// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Errors and versions.

use crate::client;
use crate::core::error::*;
use crate::ffi::{cudaError_t, write_out};
use std::ffi::{c_char, c_int};

entry_raw! {
    fn cudaGetLastError() -> cudaError_t { last_error(true) }
    fn cudaPeekAtLastError() -> cudaError_t { last_error(false) }
    fn cudaGetErrorString(error: cudaError_t) -> *const c_char { describe(error, false) }
    fn cudaGetErrorName(error: cudaError_t) -> *const c_char { describe(error, true) }
}

entry! {
    fn cudaRuntimeGetVersion(version: *mut c_int) {
        // SAFETY: output pointer from the caller, checked for null.
        unsafe { write_out(version, client::RUNTIME_VERSION as c_int) }
    }

    fn __v12_cudaRuntimeGetVersion(version: *mut c_int) {
        // SAFETY: output pointer from the caller, checked for null by `write_out`.
        unsafe { write_out(version, 12040) }
    }

    fn cudaDriverGetVersion(version: *mut c_int) {
        // SAFETY: output pointer from the caller, checked for null by `write_out`.
        unsafe { write_out(version, driver_version()) }
    }
}
