// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Errors and versions.

use std::ffi::{c_char, c_int};

use vcuda_protocol::status;

use crate::client;
use crate::ffi::{cudaError_t, write_out};
use crate::state;

/// A status code with its NUL-terminated name and message.
type CStrEntry = (u32, &'static [u8], &'static [u8]);

/// NUL-terminated copies of the status table's strings, made once.
fn cstr_table() -> &'static [CStrEntry] {
    static T: std::sync::OnceLock<Vec<CStrEntry>> = std::sync::OnceLock::new();
    T.get_or_init(|| {
        status::TABLE
            .iter()
            .map(|&(c, n, s)| {
                let n: &'static [u8] = Box::leak(format!("{n}\0").into_bytes().into_boxed_slice());
                let s: &'static [u8] = Box::leak(format!("{s}\0").into_bytes().into_boxed_slice());
                (c, n, s)
            })
            .collect()
    })
}

fn describe(code: cudaError_t, name: bool) -> *const c_char {
    const UNRECOGNIZED: &[u8] = b"unrecognized error code\0";
    let t = cstr_table();
    match t.binary_search_by_key(&code, |e| e.0) {
        Ok(i) => (if name { t[i].1 } else { t[i].2 }).as_ptr().cast(),
        Err(_) => UNRECOGNIZED.as_ptr().cast(),
    }
}

/// The error `cudaGetLastError`/`cudaPeekAtLastError` report: a pending asynchronous error,
/// then a sticky one, then the thread's last error.
fn last_error(reset: bool) -> cudaError_t {
    if let Some(c) = client::connected() {
        if let Some(e) = c.take_async_error() {
            state::set_last_error(e.0);
        }
        let sticky = c.sticky.load(std::sync::atomic::Ordering::Relaxed);
        if sticky != 0 {
            state::set_last_error(sticky);
            return sticky;
        }
    }
    state::last_error(reset)
}

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
        // No backend means no driver: CUDA reports 0 and succeeds.
        let v = client::client().map_or(0, |c| c.hello.driver_version as c_int);
        // SAFETY: output pointer from the caller, checked for null.
        unsafe { write_out(version, v) }
    }
}
