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

use crate::client::{self};
use crate::core::managed::*;
use crate::ffi::cudaStream_t;
use std::ffi::{c_int, c_void};

entry! {
    fn cudaMallocManaged(dev_ptr: *mut *mut c_void, size: usize, flags: u32) {
        let p = crate::core::alloc::malloc_managed(!dev_ptr.is_null(), size, flags)?;
        // SAFETY: non-null (`malloc_managed` refused a null one); the caller's output pointer.
        unsafe { crate::ffi::write_out(dev_ptr, p as *mut c_void) }
    }

    fn cudaMemPrefetchAsync(ptr: *const c_void, count: usize, loc: cudaMemLocation, flags: u32, stream: cudaStream_t) {
        mem_prefetch_async(ptr, count, loc, flags, stream)
    }

    fn cudaMemPrefetchAsync_ptsz(ptr: *const c_void, count: usize, loc: cudaMemLocation, flags: u32, stream: cudaStream_t) {
        mem_prefetch_async_ptsz(ptr, count, loc, flags, stream)
    }

    fn __v12_cudaMemPrefetchAsync(ptr: *const c_void, count: usize, device: c_int, stream: cudaStream_t) {
        v12_mem_prefetch_async(ptr, count, device, stream)
    }

    fn __v12_cudaMemPrefetchAsync_ptsz(ptr: *const c_void, count: usize, device: c_int, stream: cudaStream_t) {
        v12_mem_prefetch_async_ptsz(ptr, count, device, stream)
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
        mem_advise(ptr, count, advice, loc)
    }

    fn __v12_cudaMemAdvise(ptr: *const c_void, count: usize, advice: c_int, device: c_int) {
        v12_mem_advise(ptr, count, advice, device)
    }

    fn cudaMemAdvise_v2(ptr: *const c_void, count: usize, advice: c_int, loc: cudaMemLocation) {
        let c = client::client()?;
        advise(ptr, count, advice, check_location(c, loc))
    }

    fn cudaMemRangeGetAttribute(data: *mut c_void, size: usize, attr: c_int, ptr: *const c_void, count: usize) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { crate::abi::managed_args::mem_range_get_attribute(data, size, attr, ptr, count) }
    }

    fn cudaMemRangeGetAttributes(data: *mut *mut c_void, sizes: *mut usize, attrs: *mut c_int, n: usize, ptr: *const c_void, count: usize) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { crate::abi::managed_args::mem_range_get_attributes(data, sizes, attrs, n, ptr, count) }
    }

    fn cudaStreamAttachMemAsync(stream: cudaStream_t, ptr: *mut c_void, length: usize, flags: u32) {
        attach(stream, ptr, length, flags, false)
    }

    fn cudaStreamAttachMemAsync_ptsz(stream: cudaStream_t, ptr: *mut c_void, length: usize, flags: u32) {
        attach(stream, ptr, length, flags, true)
    }
}
