// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Streams and events (`cuStream*`, `cuEvent*`).

use std::ffi::c_uint;

use cudarc::driver::sys::{CUevent, CUstream};

use super::{DrvResult, ok};
use crate::executor::cuda::ffi;

/// Creates a stream in the current context.
pub fn stream_create(flags: c_uint, priority: i32) -> DrvResult<CUstream> {
    let mut s = std::ptr::null_mut();
    // SAFETY: valid out pointer; the driver validates flags and clamps the priority.
    ok(unsafe { ffi::cuStreamCreateWithPriority(&mut s, flags, priority) })?;
    Ok(s)
}

/// Destroys a stream (its pending work still completes).
///
/// # Safety
///
/// `s` is a live stream, not used afterwards.
pub unsafe fn stream_destroy(s: CUstream) -> DrvResult<()> {
    // SAFETY: `s` is a live stream that the caller uses no more, so it is destroyed once.
    ok(unsafe { ffi::cuStreamDestroy_v2(s) })
}

/// `Ok` when the stream is idle, `Err(CUDA_ERROR_NOT_READY)` while work is pending.
///
/// # Safety
///
/// As for [`stream_synchronize`].
pub unsafe fn stream_query(s: CUstream) -> DrvResult<()> {
    // SAFETY: `s` is a live stream or null (the current context's legacy stream), as the
    // caller guarantees.
    ok(unsafe { ffi::cuStreamQuery(s) })
}

/// Makes `s` wait for `e`.
///
/// # Safety
///
/// Both are live (the stream may be null).
pub unsafe fn stream_wait_event(s: CUstream, e: CUevent, flags: c_uint) -> DrvResult<()> {
    // SAFETY: `e` is a live event and `s` a live stream or null, as the caller guarantees.
    ok(unsafe { ffi::cuStreamWaitEvent(s, e, flags) })
}

/// Creates an event in the current context.
pub fn event_create(flags: c_uint) -> DrvResult<CUevent> {
    let mut e = std::ptr::null_mut();
    // SAFETY: valid out pointer; the driver validates the flags.
    ok(unsafe { ffi::cuEventCreate(&mut e, flags) })?;
    Ok(e)
}

/// Destroys an event.
///
/// # Safety
///
/// `e` is live and not used afterwards.
pub unsafe fn event_destroy(e: CUevent) -> DrvResult<()> {
    // SAFETY: `e` is a live event that the caller uses no more, so it is destroyed once.
    ok(unsafe { ffi::cuEventDestroy_v2(e) })
}

/// Records `e` on `s`.
///
/// # Safety
///
/// Both are live (the stream may be null).
pub unsafe fn event_record(e: CUevent, s: CUstream, flags: c_uint) -> DrvResult<()> {
    // SAFETY: `e` is a live event and `s` a live stream or null, as the caller guarantees;
    // `flags` are passed to the driver, which validates them.
    ok(unsafe {
        if flags == 0 {
            ffi::cuEventRecord(e, s)
        } else {
            ffi::cuEventRecordWithFlags(e, s, flags)
        }
    })
}

/// `Ok` when the event completed, `Err(CUDA_ERROR_NOT_READY)` otherwise.
///
/// # Safety
///
/// `e` is live.
pub unsafe fn event_query(e: CUevent) -> DrvResult<()> {
    // SAFETY: `e` is a live event, as the caller guarantees.
    ok(unsafe { ffi::cuEventQuery(e) })
}

/// Milliseconds between two completed events.
///
/// # Safety
///
/// Both are live.
pub unsafe fn event_elapsed(start: CUevent, end: CUevent) -> DrvResult<f32> {
    let mut ms = 0f32;
    // SAFETY: `start` and `end` are live events, as the caller guarantees; `ms` is a valid
    // out pointer.
    ok(unsafe { ffi::cuEventElapsedTime_v2(&mut ms, start, end) })?;
    Ok(ms)
}
