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
use crate::ffi::{cudaStream_t, write_out};
use std::ffi::{c_int, c_uint, c_void};

entry! {
    fn cudaMallocAsync(dev_ptr: *mut *mut c_void, size: usize, stream: cudaStream_t) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { malloc_async(dev_ptr, size, stream) }
    }

    fn cudaMallocFromPoolAsync(dev_ptr: *mut *mut c_void, size: usize, pool: cudaMemPool_t, stream: cudaStream_t) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { malloc_from_pool_async(dev_ptr, size, pool, stream) }
    }

    fn cudaFreeAsync(dev_ptr: *mut c_void, stream: cudaStream_t) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { free_async(dev_ptr, stream) }
    }

    fn cudaDeviceGetDefaultMemPool(pool: *mut cudaMemPool_t, device: c_int) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { device_get_default_mem_pool(pool, device) }
    }

    fn cudaDeviceGetMemPool(pool: *mut cudaMemPool_t, device: c_int) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { device_get_mem_pool(pool, device) }
    }

    fn cudaDeviceSetMemPool(device: c_int, pool: cudaMemPool_t) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { device_set_mem_pool(device, pool) }
    }

    fn cudaMemGetDefaultMemPool(pool: *mut cudaMemPool_t, location: *mut cudaMemLocation, ty: c_int) {
        let c = client::client()?;
        // SAFETY: the caller's location, checked for null.
        let l = unsafe { location.as_ref() }.ok_or(Error::INVALID_VALUE)?;
        check_location(c, l)?;
        if ty != ALLOCATION_PINNED {
            return Err(Error::NOT_SUPPORTED);
        }
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(pool, with(|p| p.default) as cudaMemPool_t) }
    }

    fn cudaMemGetMemPool(pool: *mut cudaMemPool_t, location: *mut cudaMemLocation, ty: c_int) {
        let c = client::client()?;
        // SAFETY: the caller's location, checked for null.
        let l = unsafe { location.as_ref() }.ok_or(Error::INVALID_VALUE)?;
        check_location(c, l)?;
        if ty != ALLOCATION_PINNED {
            return Err(Error::NOT_SUPPORTED);
        }
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(pool, with(|p| p.current) as cudaMemPool_t) }
    }

    fn cudaMemSetMemPool(location: *mut cudaMemLocation, ty: c_int, pool: cudaMemPool_t) {
        let c = client::client()?;
        // SAFETY: the caller's location, checked for null.
        let l = unsafe { location.as_ref() }.ok_or(Error::INVALID_VALUE)?;
        check_location(c, l)?;
        if ty != ALLOCATION_PINNED {
            return Err(Error::NOT_SUPPORTED);
        }
        let h = pool_of(pool)?;
        with(|p| p.current = h);
        Ok(())
    }

    fn cudaMemPoolCreate(pool: *mut cudaMemPool_t, props: *const cudaMemPoolProps) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { mem_pool_create(pool, props) }
    }

    fn cudaMemPoolDestroy(pool: cudaMemPool_t) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { mem_pool_destroy(pool) }
    }

    fn cudaMemPoolTrimTo(pool: cudaMemPool_t, min_keep: usize) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { mem_pool_trim_to(pool, min_keep) }
    }

    fn cudaMemPoolSetAttribute(pool: cudaMemPool_t, attr: c_int, value: *mut c_void) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { mem_pool_set_attribute(pool, attr, value) }
    }

    fn cudaMemPoolGetAttribute(pool: cudaMemPool_t, attr: c_int, value: *mut c_void) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { mem_pool_get_attribute(pool, attr, value) }
    }

    fn cudaMemPoolSetAccess(pool: cudaMemPool_t, descs: *const cudaMemAccessDesc, count: usize) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { set_access(pool, descs, count) }
    }

    fn cudaMemPoolGetAccess(flags: *mut c_int, pool: cudaMemPool_t, location: *mut cudaMemLocation) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { get_access(flags, pool, location) }
    }
}

entry! {
    fn cudaMemPoolExportToShareableHandle(handle: *mut c_void, pool: cudaMemPool_t, ty: c_int, flags: c_uint) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { mem_pool_export_to_shareable_handle(handle, pool, ty, flags) }
    }

    fn cudaMemPoolImportFromShareableHandle(pool: *mut cudaMemPool_t, handle: *mut c_void, ty: c_int, flags: c_uint) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { mem_pool_import_from_shareable_handle(pool, handle, ty, flags) }
    }

    fn cudaMemPoolExportPointer(data: *mut cudaMemPoolPtrExportData, ptr: *mut c_void) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { mem_pool_export_pointer(data, ptr) }
    }

    fn cudaMemPoolImportPointer(ptr: *mut *mut c_void, pool: cudaMemPool_t, data: *mut cudaMemPoolPtrExportData) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { mem_pool_import_pointer(ptr, pool, data) }
    }
}
