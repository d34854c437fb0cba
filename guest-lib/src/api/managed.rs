// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Managed memory: `cudaMallocManaged`, prefetching, advice and stream attachment.
//!
//! Managed memory is page-locked memory shared with the backend and exposed to kernels at
//! its own address (see [`crate::shared`]): one copy of the data, which the program and its
//! kernels both use in place. Nothing migrates, so prefetching and advice only check their
//! arguments. The device reports `cudaDevAttrConcurrentManagedAccess` = 0: as on GPUs
//! without it, the program must not touch managed memory while kernels that use it run
//! (it synchronizes first). Where the session cannot map memory for kernels (TCP, a VM,
//! `VCUDA_SHARED_MEMORY=0`), `cudaMallocManaged` fails with `cudaErrorNotSupported` and
//! `cudaDevAttrManagedMemory` is 0.

use std::ffi::{c_int, c_void};

use vcuda_protocol::{DeviceReq, ops};

use super::stream::stream_handle;
use crate::client::{self, Client};
use crate::error::{Error, Result};
use crate::ffi::{cudaStream_t, write_out};
use crate::mirror::{Kind, Range};
use crate::{shared, state};

/// `cudaMemAttachGlobal`.
const ATTACH_GLOBAL: u32 = 0x1;
/// `cudaMemAttachHost`.
const ATTACH_HOST: u32 = 0x2;
/// `cudaMemAttachSingle`.
const ATTACH_SINGLE: u32 = 0x4;
/// `cudaCpuDeviceId`.
const CPU_DEVICE_ID: c_int = -1;

/// `struct cudaMemLocation` (CUDA 12.2 and later).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cudaMemLocation {
    type_: c_int,
    id: c_int,
}

/// `cudaMemLocationType`.
mod location {
    use std::ffi::c_int;
    pub const DEVICE: c_int = 1;
    pub const HOST: c_int = 2;
    pub const HOST_NUMA: c_int = 3;
    pub const HOST_NUMA_CURRENT: c_int = 4;
}

/// `cudaMemoryAdvise` values that name a location.
const ADVISE_SET_PREFERRED_LOCATION: c_int = 3;
const ADVISE_SET_ACCESSED_BY: c_int = 5;

/// Managed memory for a `__managed__` variable of `size` bytes (see
/// `registry::FatbinReg::module`).
pub(crate) fn alloc_for_var(size: usize) -> Result<u64> {
    let mut p: *mut c_void = std::ptr::null_mut();
    malloc_managed(&mut p, size.max(1), ATTACH_GLOBAL)?;
    Ok(p as u64)
}

fn malloc_managed(dev_ptr: *mut *mut c_void, size: usize, flags: u32) -> Result<()> {
    let c = client::client()?;
    c.check_sticky()?;
    if dev_ptr.is_null() || (flags != ATTACH_GLOBAL && flags != ATTACH_HOST) {
        return Err(Error::INVALID_VALUE);
    }
    if size == 0 {
        // As cudaMalloc of 0 bytes (and NVIDIA's runtime, measured on an H100): success,
        // a null pointer.
        // SAFETY: the caller's output pointer, checked for null.
        return unsafe { write_out(dev_ptr, std::ptr::null_mut()) };
    }
    let device = c.check_device(state::device())?;
    let p = if shared::maps(c) {
        shared::alloc_managed(c, size)?
    } else {
        crate::coherent::alloc(c, device, size as u64)? as *mut c_void
    };
    c.mirror.insert(Range {
        base: p as u64,
        len: size as u64,
        kind: Kind::Managed,
        device: device as i32,
    });
    // SAFETY: the caller's output pointer, checked for null.
    unsafe { write_out(dev_ptr, p) }
}

/// `cudaFree` of managed memory at `ptr`: waits for the device (as `cudaFree` does), then
/// unmaps it here and in the backend. `Ok(false)` when `ptr` is not the start of managed
/// memory.
pub(crate) fn free(c: &Client, ptr: u64) -> Result<bool> {
    if !matches!(c.mirror.find(ptr), Some(r) if r.base == ptr && r.kind == Kind::Managed) {
        return Ok(false);
    }
    if crate::coherent::is_adopted(ptr) {
        // A `__managed__` variable: the module's, not the program's to free.
        return Err(Error::INVALID_VALUE);
    }
    let device = c.check_device(state::device())?;
    c.call::<ops::DeviceSynchronize>(&DeviceReq {
        device,
        reserved: 0,
    })?;
    c.mirror.remove(ptr, |k| k == Kind::Managed);
    if !shared::free(c, ptr as *mut c_void) {
        crate::coherent::free(c, ptr)?;
    }
    Ok(true)
}

/// Checks that `[ptr, ptr + count)` lies in one managed allocation.
fn check_managed(c: &Client, ptr: *const c_void, count: usize) -> Result<()> {
    let p = ptr as u64;
    match c.mirror.find(p) {
        Some(r)
            if r.kind == Kind::Managed
                && count > 0
                && p.checked_add(count as u64)
                    .is_some_and(|end| end <= r.base + r.len) =>
        {
            Ok(())
        }
        _ => Err(Error::INVALID_VALUE),
    }
}

/// Checks a device ordinal, or `cudaCpuDeviceId` where `cpu_ok`.
fn check_device_id(c: &Client, device: c_int, cpu_ok: bool) -> Result<()> {
    if cpu_ok && device == CPU_DEVICE_ID {
        return Ok(());
    }
    c.check_device(device)
        .map(drop)
        .map_err(|_| Error::INVALID_DEVICE)
}

/// Checks a `cudaMemLocation`.
fn check_location(c: &Client, l: cudaMemLocation) -> Result<()> {
    match l.type_ {
        location::DEVICE => check_device_id(c, l.id, false),
        location::HOST | location::HOST_NUMA_CURRENT => Ok(()),
        location::HOST_NUMA if l.id >= 0 => Ok(()),
        _ => Err(Error::INVALID_VALUE),
    }
}

/// A prefetch: checked, then nothing to do (one copy, nothing migrates). Ordered on
/// `stream` like any work, it has no effect to order.
fn prefetch(
    ptr: *const c_void,
    count: usize,
    loc: Result<()>,
    flags: u32,
    stream: cudaStream_t,
    ptsz: bool,
) -> Result<()> {
    let c = client::client()?;
    c.check_sticky()?;
    check_managed(c, ptr, count)?;
    loc?;
    if flags != 0 {
        return Err(Error::INVALID_VALUE);
    }
    stream_handle(c, stream, ptsz).map(drop)
}

/// Advice: checked, then nothing to do.
fn advise(ptr: *const c_void, count: usize, advice: c_int, loc: Result<()>) -> Result<()> {
    let c = client::client()?;
    check_managed(c, ptr, count)?;
    match advice {
        ADVISE_SET_PREFERRED_LOCATION | ADVISE_SET_ACCESSED_BY => loc,
        1..=6 => Ok(()),
        _ => Err(Error::INVALID_VALUE),
    }
}

/// `cudaStreamAttachMemAsync`: checked, then nothing to do (every stream sees the one copy).
fn attach(
    stream: cudaStream_t,
    ptr: *mut c_void,
    length: usize,
    flags: u32,
    ptsz: bool,
) -> Result<()> {
    let c = client::client()?;
    if flags != ATTACH_GLOBAL && flags != ATTACH_HOST && flags != ATTACH_SINGLE {
        return Err(Error::INVALID_VALUE);
    }
    let r = c
        .mirror
        .find(ptr as u64)
        .filter(|r| r.kind == Kind::Managed)
        .ok_or(Error::INVALID_VALUE)?;
    // Length 0: the whole allocation, which `ptr` must start.
    if length == 0 && r.base != ptr as u64 {
        return Err(Error::INVALID_VALUE);
    }
    if length != 0 {
        check_managed(c, ptr, length)?;
    }
    stream_handle(c, stream, ptsz).map(drop)
}

entry! {
    fn cudaMallocManaged(dev_ptr: *mut *mut c_void, size: usize, flags: u32) {
        malloc_managed(dev_ptr, size, flags)
    }

    fn cudaMemPrefetchAsync(ptr: *const c_void, count: usize, loc: cudaMemLocation, flags: u32, stream: cudaStream_t) {
        let c = client::client()?;
        prefetch(ptr, count, check_location(c, loc), flags, stream, false)
    }

    fn cudaMemPrefetchAsync_ptsz(ptr: *const c_void, count: usize, loc: cudaMemLocation, flags: u32, stream: cudaStream_t) {
        let c = client::client()?;
        prefetch(ptr, count, check_location(c, loc), flags, stream, true)
    }

    fn __v12_cudaMemPrefetchAsync(ptr: *const c_void, count: usize, device: c_int, stream: cudaStream_t) {
        let c = client::client()?;
        prefetch(ptr, count, check_device_id(c, device, true), 0, stream, false)
    }

    fn __v12_cudaMemPrefetchAsync_ptsz(ptr: *const c_void, count: usize, device: c_int, stream: cudaStream_t) {
        let c = client::client()?;
        prefetch(ptr, count, check_device_id(c, device, true), 0, stream, true)
    }

    fn cudaMemPrefetchAsync_v2(ptr: *const c_void, count: usize, loc: cudaMemLocation, flags: u32, stream: cudaStream_t) {
        let c = client::client()?;
        prefetch(ptr, count, check_location(c, loc), flags, stream, false)
    }

    fn cudaMemPrefetchAsync_v2_ptsz(ptr: *const c_void, count: usize, loc: cudaMemLocation, flags: u32, stream: cudaStream_t) {
        let c = client::client()?;
        prefetch(ptr, count, check_location(c, loc), flags, stream, true)
    }

    fn cudaMemAdvise(ptr: *const c_void, count: usize, advice: c_int, loc: cudaMemLocation) {
        let c = client::client()?;
        advise(ptr, count, advice, check_location(c, loc))
    }

    fn __v12_cudaMemAdvise(ptr: *const c_void, count: usize, advice: c_int, device: c_int) {
        let c = client::client()?;
        advise(ptr, count, advice, check_device_id(c, device, true))
    }

    fn cudaMemAdvise_v2(ptr: *const c_void, count: usize, advice: c_int, loc: cudaMemLocation) {
        let c = client::client()?;
        advise(ptr, count, advice, check_location(c, loc))
    }

    fn cudaStreamAttachMemAsync(stream: cudaStream_t, ptr: *mut c_void, length: usize, flags: u32) {
        attach(stream, ptr, length, flags, false)
    }

    fn cudaStreamAttachMemAsync_ptsz(stream: cudaStream_t, ptr: *mut c_void, length: usize, flags: u32) {
        attach(stream, ptr, length, flags, true)
    }
}
