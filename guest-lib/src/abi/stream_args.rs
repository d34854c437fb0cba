// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The output pointers of the stream and event calls that make or describe objects
//! (`cudaStreamCreate*`, `cudaEventCreate*`, `cudaEventElapsedTime`, `cudaStreamGet*`, their
//! `_ptsz` forms and the driver's calls that share them), written from the values
//! [`crate::core::stream`] returns. Shared by the runtime's `stream.rs` and `ptsz.rs` and the
//! driver's `stream.rs` and `extra.rs`.
//!
//! Each function is `unsafe`: its output pointer must be null or valid for a write; a null
//! one is refused with `cudaErrorInvalidValue` before anything is made.

use std::ffi::c_int;

use crate::core::ptsz::per_thread;
use crate::core::stream as st;
use crate::error::Result;
use crate::ffi::{cudaEvent_t, cudaStream_t, write_out};

/// `cudaStreamCreateWithPriority` (and `cudaStreamCreate`, `...WithFlags`).
///
/// # Safety
///
/// `p` is null or writable.
pub(crate) unsafe fn stream_create_with_priority(
    p: *mut cudaStream_t,
    flags: u32,
    priority: c_int,
) -> Result<()> {
    let h = st::create_stream(p.is_null(), flags, priority)?;
    // SAFETY: non-null (`create_stream` refused a null one); the caller's output pointer.
    unsafe { write_out(p, h as cudaStream_t) }
}

/// `cudaEventCreateWithFlags` (and `cudaEventCreate`).
///
/// # Safety
///
/// `p` is null or writable.
pub(crate) unsafe fn event_create_with_flags(p: *mut cudaEvent_t, flags: u32) -> Result<()> {
    let h = st::create_event(p.is_null(), flags)?;
    // SAFETY: non-null (`create_event` refused a null one); the caller's output pointer.
    unsafe { write_out(p, h as cudaEvent_t) }
}

/// `cudaEventElapsedTime`.
///
/// # Safety
///
/// `ms` is null or writable.
pub(crate) unsafe fn event_elapsed_time(
    ms: *mut f32,
    start: cudaEvent_t,
    end: cudaEvent_t,
) -> Result<()> {
    let v = st::elapsed_time(ms.is_null(), start, end)?;
    // SAFETY: non-null (`elapsed_time` refused a null one); the caller's output pointer.
    unsafe { write_out(ms, v) }
}

/// `cudaStreamGetDevice`.
///
/// # Safety
///
/// `device` is null or writable.
pub(crate) unsafe fn stream_get_device(s: cudaStream_t, device: *mut c_int) -> Result<()> {
    let i = st::stream_info(crate::client::client()?, s)?;
    // SAFETY: the caller's output pointer; `write_out` checks it for null.
    unsafe { write_out(device, i.device) }
}

/// `cudaStreamGetFlags`.
///
/// # Safety
///
/// `flags` is null or writable.
pub(crate) unsafe fn stream_get_flags(s: cudaStream_t, flags: *mut u32) -> Result<()> {
    let i = st::stream_info(crate::client::client()?, s)?;
    // SAFETY: the caller's output pointer; `write_out` checks it for null.
    unsafe { write_out(flags, i.flags) }
}

/// `cudaStreamGetPriority`.
///
/// # Safety
///
/// `priority` is null or writable.
pub(crate) unsafe fn stream_get_priority(s: cudaStream_t, priority: *mut c_int) -> Result<()> {
    let i = st::stream_info(crate::client::client()?, s)?;
    // SAFETY: the caller's output pointer; `write_out` checks it for null.
    unsafe { write_out(priority, i.priority) }
}

/// `cudaStreamGetFlags_ptsz`.
///
/// # Safety
///
/// As [`stream_get_flags`].
pub(crate) unsafe fn stream_get_flags_ptsz(s: cudaStream_t, flags: *mut u32) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe { stream_get_flags(per_thread(s), flags) }
}

/// `cudaStreamGetPriority_ptsz`.
///
/// # Safety
///
/// As [`stream_get_priority`].
pub(crate) unsafe fn stream_get_priority_ptsz(s: cudaStream_t, priority: *mut c_int) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe { stream_get_priority(per_thread(s), priority) }
}
