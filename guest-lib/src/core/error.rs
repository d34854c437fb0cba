// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Errors and versions.

use crate::ffi::cudaError_t;
use crate::{client, state};
use std::ffi::{c_char, c_int};
use vcuda_protocol::status;

/// A status code with its NUL-terminated name and message.
pub(crate) type CStrEntry = (u32, &'static [u8], &'static [u8]);

/// NUL-terminated copies of the status table's strings, made once.
pub(crate) fn cstr_table() -> &'static [CStrEntry] {
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

pub(crate) fn describe(code: cudaError_t, name: bool) -> *const c_char {
    const UNRECOGNIZED: &[u8] = b"unrecognized error code\0";
    let t = cstr_table();
    match t.binary_search_by_key(&code, |e| e.0) {
        Ok(i) => (if name { t[i].1 } else { t[i].2 }).as_ptr().cast(),
        Err(_) => UNRECOGNIZED.as_ptr().cast(),
    }
}

/// The error `cudaGetLastError`/`cudaPeekAtLastError` report: a pending asynchronous error,
/// then a sticky one, then the thread's last error.
pub(crate) fn last_error(reset: bool) -> cudaError_t {
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

/// `cudaDriverGetVersion`: no backend means no driver, and CUDA reports 0.
pub(crate) fn driver_version() -> c_int {
    client::client().map_or(0, |c| c.hello.driver_version as c_int)
}
