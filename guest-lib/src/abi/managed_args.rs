// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The output buffers of `cudaMemRangeGetAttribute(s)` (and the driver's
//! `cuMemRangeGetAttribute(s)`), filled from the values [`crate::core::managed`] returns.
//! Shared by the runtime's `managed.rs` and the driver's `memory.rs`.

use std::ffi::{c_int, c_void};

use crate::core::managed::range_attribute;
use crate::error::{Error, Result};

/// `cudaMemRangeGetAttribute`: `size` bytes at `data`.
///
/// # Safety
///
/// `data` is null or valid for writes of `size` bytes.
pub(crate) unsafe fn mem_range_get_attribute(
    data: *mut c_void,
    size: usize,
    attr: c_int,
    ptr: *const c_void,
    count: usize,
) -> Result<()> {
    let values = range_attribute(data.is_null(), size, attr, ptr, count)?;
    for (i, v) in values.into_iter().enumerate() {
        // SAFETY: the caller's buffer of `size` bytes, non-null (`range_attribute` refused a
        // null one); there are at most `size / 4` values.
        unsafe { data.cast::<c_int>().add(i).write_unaligned(v) };
    }
    Ok(())
}

/// `cudaMemRangeGetAttributes`: each attribute into its own buffer.
///
/// # Safety
///
/// `data`, `sizes` and `attrs` are null or hold `n` entries each, and each `data[i]` is null
/// or valid for writes of `sizes[i]` bytes.
pub(crate) unsafe fn mem_range_get_attributes(
    data: *mut *mut c_void,
    sizes: *mut usize,
    attrs: *mut c_int,
    n: usize,
    ptr: *const c_void,
    count: usize,
) -> Result<()> {
    if n == 0 || data.is_null() || sizes.is_null() || attrs.is_null() {
        return Err(Error::INVALID_VALUE);
    }
    for i in 0..n {
        // SAFETY: the caller's arrays of `n` entries, checked for null.
        let (d, sz, at) = unsafe { (*data.add(i), *sizes.add(i), *attrs.add(i)) };
        // SAFETY: the caller's contract for `data[i]`.
        unsafe { mem_range_get_attribute(d, sz, at, ptr, count) }?;
    }
    Ok(())
}
