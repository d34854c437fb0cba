// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Stream-ordered memory pools: `cudaMallocAsync`/`cudaFreeAsync`, the device's default and
//! current pool, created pools, their attributes and trimming.
//!
//! Pools are bookkeeping in the library over the session's ordinary allocations. A block
//! freed with `cudaFreeAsync` stays reserved in its pool and is handed out again by a later
//! allocation on the same stream (stream order makes that safe), or on any stream once a
//! synchronization has covered the free (the freeing stream's, or the device's). At each
//! synchronization, free blocks beyond the pool's release threshold (0 by default) go back
//! to the device, as CUDA does; `cudaMemPoolTrimTo` does so at once. A destroyed pool's
//! outstanding blocks are freed when the program frees them.
//!
//! Interprocess pools (`cudaMemHandleTypePosixFileDescriptor`): the exported handle is a
//! file (a memfd) naming the exporting process's pool, and an exported pointer carries the
//! block's interprocess memory handle (see `super::ipc`), so the processes must reach the
//! same backend, as for `cudaIpcOpenMemHandle`. An imported pool only imports pointers;
//! `cudaFree` or `cudaFreeAsync` of an imported pointer closes it.

use crate::client::{self};
use crate::core::pool::*;
use crate::error::Error;
use crate::ffi::{cudaStream_t, read_in, slice_in, write_out};
use std::ffi::{c_int, c_uint, c_void};

entry! {
    fn cudaMallocAsync(dev_ptr: *mut *mut c_void, size: usize, stream: cudaStream_t) {
        if dev_ptr.is_null() {
            return Err(Error::INVALID_VALUE);
        }
        let p = malloc_async(size, stream)?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(dev_ptr, p as *mut c_void) }
    }

    fn cudaMallocFromPoolAsync(dev_ptr: *mut *mut c_void, size: usize, pool: cudaMemPool_t, stream: cudaStream_t) {
        pool_of(pool)?;
        if dev_ptr.is_null() {
            return Err(Error::INVALID_VALUE);
        }
        let p = malloc_from_pool_async(size, pool, stream)?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(dev_ptr, p as *mut c_void) }
    }

    fn cudaFreeAsync(dev_ptr: *mut c_void, stream: cudaStream_t) {
        free_async(dev_ptr as u64, stream)
    }

    fn cudaDeviceGetDefaultMemPool(pool: *mut cudaMemPool_t, device: c_int) {
        let p = device_get_default_mem_pool(device)?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(pool, p) }
    }

    fn cudaDeviceGetMemPool(pool: *mut cudaMemPool_t, device: c_int) {
        let p = device_get_mem_pool(device)?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(pool, p) }
    }

    fn cudaDeviceSetMemPool(device: c_int, pool: cudaMemPool_t) {
        device_set_mem_pool(device, pool)
    }

    fn cudaMemGetDefaultMemPool(pool: *mut cudaMemPool_t, location: *mut cudaMemLocation, ty: c_int) {
        // SAFETY: the caller's location, checked for null.
        let p = location_pool(unsafe { location.as_ref() }, ty, true)?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(pool, p) }
    }

    fn cudaMemGetMemPool(pool: *mut cudaMemPool_t, location: *mut cudaMemLocation, ty: c_int) {
        // SAFETY: the caller's location, checked for null.
        let p = location_pool(unsafe { location.as_ref() }, ty, false)?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(pool, p) }
    }

    fn cudaMemSetMemPool(location: *mut cudaMemLocation, ty: c_int, pool: cudaMemPool_t) {
        // SAFETY: the caller's location, checked for null.
        location_set_pool(unsafe { location.as_ref() }, ty, pool)
    }

    fn cudaMemPoolCreate(pool: *mut cudaMemPool_t, props: *const cudaMemPoolProps) {
        // SAFETY: the caller's properties, checked for null.
        let props = unsafe { props.as_ref() };
        if props.is_some() && pool.is_null() {
            return Err(Error::INVALID_VALUE);
        }
        let h = mem_pool_create(props)?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(pool, h) }
    }

    fn cudaMemPoolDestroy(pool: cudaMemPool_t) {
        mem_pool_destroy(pool)
    }

    fn cudaMemPoolTrimTo(pool: cudaMemPool_t, min_keep: usize) {
        mem_pool_trim_to(pool, min_keep)
    }

    fn cudaMemPoolSetAttribute(pool: cudaMemPool_t, attr: c_int, value: *mut c_void) {
        // SAFETY: the caller's value, of the attribute's type (the API's contract).
        let v = unsafe { read_attr(pool, attr, value) }?;
        mem_pool_set_attribute(pool, attr, v)
    }

    fn cudaMemPoolGetAttribute(pool: cudaMemPool_t, attr: c_int, value: *mut c_void) {
        // SAFETY: room for the attribute's type at `value` (the API's contract).
        unsafe { get_attr(pool, attr, value) }
    }

    fn cudaMemPoolSetAccess(pool: cudaMemPool_t, descs: *const cudaMemAccessDesc, count: usize) {
        // SAFETY: `count` descriptors at `descs` (the API's contract).
        let descs = unsafe { slice_in(descs, count) }?;
        set_access(pool, descs)
    }

    fn cudaMemPoolGetAccess(flags: *mut c_int, pool: cudaMemPool_t, location: *mut cudaMemLocation) {
        // SAFETY: the caller's location, checked for null.
        let a = get_access(pool, unsafe { location.as_ref() })?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(flags, a) }
    }
}

entry! {
    fn cudaMemPoolExportToShareableHandle(handle: *mut c_void, pool: cudaMemPool_t, ty: c_int, flags: c_uint) {
        pool_of(pool)?;
        if handle.is_null() {
            return Err(Error::INVALID_VALUE);
        }
        let fd = mem_pool_export_to_shareable_handle(pool, ty, flags)?;
        // SAFETY: for a POSIX descriptor the caller's handle points at an int (checked
        // for null).
        unsafe { write_out(handle.cast::<c_int>(), fd) }
    }

    fn cudaMemPoolImportFromShareableHandle(pool: *mut cudaMemPool_t, handle: *mut c_void, ty: c_int, flags: c_uint) {
        if pool.is_null() {
            return Err(Error::INVALID_VALUE);
        }
        // A POSIX descriptor comes as the handle's value.
        let h = mem_pool_import_from_shareable_handle(handle as usize as c_int, ty, flags)?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(pool, h) }
    }

    fn cudaMemPoolExportPointer(data: *mut cudaMemPoolPtrExportData, ptr: *mut c_void) {
        if data.is_null() {
            client::client()?.check_sticky()?;
            return Err(Error::INVALID_VALUE);
        }
        let d = mem_pool_export_pointer(ptr as u64)?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(data, d) }
    }

    fn cudaMemPoolImportPointer(ptr: *mut *mut c_void, pool: cudaMemPool_t, data: *mut cudaMemPoolPtrExportData) {
        if ptr.is_null() {
            client::client()?.check_sticky()?;
            pool_of(pool)?;
            return Err(Error::INVALID_VALUE);
        }
        // SAFETY: the caller's export data, checked for null.
        let p = mem_pool_import_pointer(pool, unsafe { data.as_ref() })?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(ptr, p as *mut c_void) }
    }
}

/// Reads pool attribute `attr`'s value from the caller's `value` (after the pool is checked):
/// an `int` or a `cuuint64_t`, as the attribute has.
///
/// # Safety
/// `value` is null or points to a value of the attribute's type.
pub(crate) unsafe fn read_attr(
    pool: cudaMemPool_t,
    attr: c_int,
    value: *mut c_void,
) -> Result<AttrValue, Error> {
    pool_of(pool)?;
    if value.is_null() {
        return Err(Error::INVALID_VALUE);
    }
    match attr_is_int(attr) {
        // SAFETY: an `int` attribute's value, by the caller's contract.
        Some(true) => Ok(AttrValue::Int(unsafe { read_in(value.cast::<c_int>()) }?)),
        // SAFETY: a `cuuint64_t` attribute's value, by the caller's contract.
        Some(false) => Ok(AttrValue::U64(unsafe { read_in(value.cast::<u64>()) }?)),
        None => Err(Error::INVALID_VALUE),
    }
}

/// Writes pool attribute `attr`'s value where the caller's `value` points (after the pool
/// and the pointer are checked).
///
/// # Safety
/// `value` is null or points to room for a value of the attribute's type.
pub(crate) unsafe fn get_attr(
    pool: cudaMemPool_t,
    attr: c_int,
    value: *mut c_void,
) -> Result<(), Error> {
    pool_of(pool)?;
    if value.is_null() {
        return Err(Error::INVALID_VALUE);
    }
    match mem_pool_get_attribute(pool, attr)? {
        // SAFETY: room for an `int`, by the caller's contract; null is refused.
        AttrValue::Int(x) => unsafe { write_out(value.cast::<c_int>(), x) },
        // SAFETY: room for a `cuuint64_t`, by the caller's contract; null is refused.
        AttrValue::U64(x) => unsafe { write_out(value.cast::<u64>(), x) },
    }
}
