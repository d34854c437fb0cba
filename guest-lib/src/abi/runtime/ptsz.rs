// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The runtime's remaining per-thread default stream variants (`*_ptsz`): what a program
//! built with `nvcc --default-stream per-thread` calls. Stream 0 there is the calling
//! thread's default stream (`cudaStreamPerThread`); any other stream is used as given.
//! `cudaGetDriverEntryPoint*_ptsz` return the driver's per-thread variants by default.

use crate::abi::driver::procs::{lookup, runtime};
use crate::core::misc::StreamCallback;
use crate::core::pool::cudaMemPool_t;
use crate::core::ptsz::per_thread;
use crate::core::ptsz::*;
use crate::ffi::cudaStream_t;
use std::ffi::{c_char, c_int, c_void};

entry! {
    fn cudaMallocAsync_ptsz(dev_ptr: *mut *mut c_void, size: usize, stream: cudaStream_t) {
        if dev_ptr.is_null() {
            return Err(crate::error::Error::INVALID_VALUE);
        }
        let p = crate::core::pool::malloc_async(size, per_thread(stream))?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { crate::ffi::write_out(dev_ptr, p as *mut c_void) }
    }

    fn cudaMallocFromPoolAsync_ptsz(dev_ptr: *mut *mut c_void, size: usize, pool: cudaMemPool_t, stream: cudaStream_t) {
        crate::core::pool::pool_of(pool)?;
        if dev_ptr.is_null() {
            return Err(crate::error::Error::INVALID_VALUE);
        }
        let p = crate::core::pool::malloc_from_pool_async(size, pool, per_thread(stream))?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { crate::ffi::write_out(dev_ptr, p as *mut c_void) }
    }

    fn cudaFreeAsync_ptsz(dev_ptr: *mut c_void, stream: cudaStream_t) {
        crate::core::pool::free_async(dev_ptr as u64, per_thread(stream))
    }

    fn cudaStreamAddCallback_ptsz(stream: cudaStream_t, cb: StreamCallback, user_data: *mut c_void, flags: u32) {
        crate::core::misc::stream_add_callback(per_thread(stream), cb, user_data, flags)
    }

    fn cudaStreamGetFlags_ptsz(stream: cudaStream_t, flags: *mut u32) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { crate::abi::stream_args::stream_get_flags_ptsz(stream, flags) }
    }

    fn cudaStreamGetPriority_ptsz(stream: cudaStream_t, priority: *mut c_int) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { crate::abi::stream_args::stream_get_priority_ptsz(stream, priority) }
    }

    fn cudaStreamGetDevice_ptsz(stream: cudaStream_t, device: *mut c_int) {
        // SAFETY: forwarding the caller's arguments.
        unsafe { crate::abi::stream_args::stream_get_device(per_thread(stream), device) }
    }

    fn cudaGetDriverEntryPoint_ptsz(symbol: *const c_char, pfn: *mut *mut c_void, flags: u64, status: *mut c_int) {
        // The lookup `cudaGetDriverEntryPoint` makes, with the per-thread default stream.
        let version = crate::client::RUNTIME_VERSION as c_int;
        runtime(lookup(symbol, pfn, version, per_thread_flags(flags), status))
    }

    fn cudaGetDriverEntryPointByVersion_ptsz(symbol: *const c_char, pfn: *mut *mut c_void, version: u32, flags: u64, status: *mut c_int) {
        // The lookup `cudaGetDriverEntryPointByVersion` makes, with the per-thread default
        // stream.
        runtime(lookup(symbol, pfn, version as c_int, per_thread_flags(flags), status))
    }
}
