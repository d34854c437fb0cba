// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The output pointers of the device-management calls (`cudaDeviceGet*`, `cudaMemGetInfo`,
//! `cudaGetDeviceCount`, and the driver's calls that share them) written from the values
//! [`crate::core::device`] returns. Shared by `runtime/device.rs` and the driver's
//! `context.rs` and `extra.rs`.
//!
//! Each function is `unsafe`: its pointers must be null or valid for a write (null ones are
//! refused with `cudaErrorInvalidValue`, or skipped where the API allows).

use std::ffi::c_int;

use crate::core::device as dev;
use crate::error::Result;
use crate::ffi::write_out;

/// `cudaDeviceGetAttribute`.
///
/// # Safety
///
/// `value` is null or writable.
pub(crate) unsafe fn device_get_attribute(
    value: *mut c_int,
    attr: c_int,
    device: c_int,
) -> Result<()> {
    let v = dev::device_get_attribute(attr, device)?;
    // SAFETY: the caller's output pointer; `write_out` checks it for null.
    unsafe { write_out(value, v) }
}

/// `cudaDeviceGetStreamPriorityRange`: each output that is not null.
///
/// # Safety
///
/// Each pointer is null or writable.
pub(crate) unsafe fn stream_priority_range(least: *mut c_int, greatest: *mut c_int) -> Result<()> {
    let (l, g) = dev::stream_priority_range();
    // SAFETY: the caller's output pointers; null ones are skipped.
    unsafe {
        if !least.is_null() {
            write_out(least, l)?;
        }
        if !greatest.is_null() {
            write_out(greatest, g)?;
        }
    }
    Ok(())
}

/// `cudaDeviceGetCacheConfig`.
///
/// # Safety
///
/// `config` is null or writable.
pub(crate) unsafe fn device_get_cache_config(config: *mut c_int) -> Result<()> {
    let v = dev::device_get_cache_config()?;
    // SAFETY: the caller's output pointer; `write_out` checks it for null.
    unsafe { write_out(config, v) }
}

/// `cudaDeviceGetLimit`.
///
/// # Safety
///
/// `value` is null or writable.
pub(crate) unsafe fn device_get_limit(value: *mut usize, lim: c_int) -> Result<()> {
    let v = dev::device_get_limit(lim)?;
    // SAFETY: the caller's output pointer; `write_out` checks it for null.
    unsafe { write_out(value, v) }
}

/// `cudaGetDeviceCount`: stores 0 when it fails, as CUDA does.
///
/// # Safety
///
/// `count` is null or writable.
pub(crate) unsafe fn get_device_count(count: *mut c_int) -> Result<()> {
    match dev::get_device_count() {
        // SAFETY: the caller's output pointer; `write_out` checks it for null.
        Ok(n) => unsafe { write_out(count, n) },
        Err(e) => {
            // SAFETY: as above.
            let _ = unsafe { write_out(count, 0) };
            Err(e)
        }
    }
}

/// `cudaMemGetInfo`: `free`, then `total`.
///
/// # Safety
///
/// Each pointer is null or writable.
pub(crate) unsafe fn mem_get_info(free: *mut usize, total: *mut usize) -> Result<()> {
    let (f, t) = dev::mem_get_info()?;
    // SAFETY: the caller's output pointers; `write_out` checks each for null.
    unsafe {
        write_out(free, f)?;
        write_out(total, t)
    }
}
