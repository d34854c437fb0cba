// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Memory: device allocations, copies, memsets, page-locked host memory, pointer queries
//! and symbol copies.

use crate::client::{self};
use crate::core::capture::capture_stream_handle;
use crate::core::host_memory::*;
use crate::core::memcpy_batch::*;
use crate::core::memory::*;
use crate::error::Error;
use crate::ffi::{cudaPointerAttributes, cudaPointerAttributesV12, cudaStream_t, write_out};
use std::ffi::{c_int, c_void};

entry! {
    fn cudaMalloc(dev_ptr: *mut *mut c_void, size: usize) {
        let p = malloc_call(!dev_ptr.is_null(), size)?;
        // SAFETY: non-null (`malloc_call` refused a null one); the caller's output pointer.
        unsafe { write_out(dev_ptr, p as *mut c_void) }
    }

    fn cudaMallocPitch(dev_ptr: *mut *mut c_void, pitch: *mut usize, width: usize, height: usize) {
        if dev_ptr.is_null() || pitch.is_null() {
            return Err(Error::INVALID_VALUE);
        }
        let (ptr, p) = malloc_pitch(client::client()?, width, height)?;
        // SAFETY: checked non-null; the caller's output pointers.
        unsafe {
            write_out(pitch, p)?;
            write_out(dev_ptr, ptr as *mut c_void)
        }
    }

    fn cudaFree(dev_ptr: *mut c_void) {
        free_call(dev_ptr)
    }

    fn cudaMemcpy(dst: *mut c_void, src: *const c_void, count: usize, kind: c_int) {
        memcpy_call(dst, src, count, kind)
    }

    fn cudaMemcpy_ptds(dst: *mut c_void, src: *const c_void, count: usize, kind: c_int) {
        memcpy(client::client()?, Copy2D::linear(dst as u64, src as u64, count as u64), kind, None)
    }

    fn cudaMemcpyAsync(dst: *mut c_void, src: *const c_void, count: usize, kind: c_int, stream: cudaStream_t) {
        memcpy_async(dst, src, count, kind, stream)
    }

    fn cudaMemcpyAsync_ptsz(dst: *mut c_void, src: *const c_void, count: usize, kind: c_int, stream: cudaStream_t) {
        let c = client::client()?;
        let s = capture_stream_handle(c, stream, true)?;
        memcpy(c, Copy2D::linear(dst as u64, src as u64, count as u64), kind, Some(s))
    }

    fn cudaMemcpy2D(dst: *mut c_void, dpitch: usize, src: *const c_void, spitch: usize, width: usize, height: usize, kind: c_int) {
        let cp = Copy2D { dst: dst as u64, dpitch: dpitch as u64, src: src as u64, spitch: spitch as u64, width: width as u64, height: height as u64 };
        memcpy(client::client()?, cp, kind, None)
    }

    fn cudaMemcpy2D_ptds(dst: *mut c_void, dpitch: usize, src: *const c_void, spitch: usize, width: usize, height: usize, kind: c_int) {
        let cp = Copy2D { dst: dst as u64, dpitch: dpitch as u64, src: src as u64, spitch: spitch as u64, width: width as u64, height: height as u64 };
        memcpy(client::client()?, cp, kind, None)
    }

    fn cudaMemcpy2DAsync(dst: *mut c_void, dpitch: usize, src: *const c_void, spitch: usize, width: usize, height: usize, kind: c_int, stream: cudaStream_t) {
        memcpy_2d_async(dst, dpitch, src, spitch, width, height, kind, stream)
    }

    fn cudaMemcpy2DAsync_ptsz(dst: *mut c_void, dpitch: usize, src: *const c_void, spitch: usize, width: usize, height: usize, kind: c_int, stream: cudaStream_t) {
        let c = client::client()?;
        let s = capture_stream_handle(c, stream, true)?;
        let cp = Copy2D { dst: dst as u64, dpitch: dpitch as u64, src: src as u64, spitch: spitch as u64, width: width as u64, height: height as u64 };
        memcpy(c, cp, kind, Some(s))
    }

    fn cudaMemset(dev_ptr: *mut c_void, value: c_int, count: usize) {
        memset(client::client()?, dev_ptr as u64, count as u64, value as u8 as u32, count as u64, 1, None)
    }

    fn cudaMemset_ptds(dev_ptr: *mut c_void, value: c_int, count: usize) {
        memset(client::client()?, dev_ptr as u64, count as u64, value as u8 as u32, count as u64, 1, None)
    }

    fn cudaMemsetAsync(dev_ptr: *mut c_void, value: c_int, count: usize, stream: cudaStream_t) {
        let c = client::client()?;
        let s = capture_stream_handle(c, stream, false)?;
        memset(c, dev_ptr as u64, count as u64, value as u8 as u32, count as u64, 1, Some(s))
    }

    fn cudaMemsetAsync_ptsz(dev_ptr: *mut c_void, value: c_int, count: usize, stream: cudaStream_t) {
        let c = client::client()?;
        let s = capture_stream_handle(c, stream, true)?;
        memset(c, dev_ptr as u64, count as u64, value as u8 as u32, count as u64, 1, Some(s))
    }

    fn cudaMemset2D(dev_ptr: *mut c_void, pitch: usize, value: c_int, width: usize, height: usize) {
        memset_2d(dev_ptr, pitch, value, width, height, None)
    }

    fn cudaMemset2D_ptds(dev_ptr: *mut c_void, pitch: usize, value: c_int, width: usize, height: usize) {
        memset_2d(dev_ptr, pitch, value, width, height, None)
    }

    fn cudaMemset2DAsync(dev_ptr: *mut c_void, pitch: usize, value: c_int, width: usize, height: usize, stream: cudaStream_t) {
        memset_2d(dev_ptr, pitch, value, width, height, Some((stream, false)))
    }

    fn cudaMemset2DAsync_ptsz(dev_ptr: *mut c_void, pitch: usize, value: c_int, width: usize, height: usize, stream: cudaStream_t) {
        memset_2d(dev_ptr, pitch, value, width, height, Some((stream, true)))
    }

    fn cudaMallocHost(ptr: *mut *mut c_void, size: usize) {
        let p = host_alloc(client::client()?, !ptr.is_null(), size, 0)?;
        // SAFETY: non-null (refused above otherwise); the caller's output pointer.
        unsafe { write_out(ptr, p as *mut c_void) }
    }

    fn cudaHostAlloc(ptr: *mut *mut c_void, size: usize, flags: u32) {
        let p = host_alloc_call(!ptr.is_null(), size, flags)?;
        // SAFETY: non-null (refused above otherwise); the caller's output pointer.
        unsafe { write_out(ptr, p as *mut c_void) }
    }

    fn cudaFreeHost(ptr: *mut c_void) {
        free_host(ptr)
    }

    fn cudaHostRegister(ptr: *mut c_void, size: usize, flags: u32) {
        host_register(ptr, size, flags)
    }

    fn cudaHostUnregister(ptr: *mut c_void) {
        host_unregister(ptr)
    }

    fn cudaHostGetDevicePointer(dev_ptr: *mut *mut c_void, host: *mut c_void, flags: u32) {
        let d = host_get_device_pointer(!dev_ptr.is_null(), host, flags)?;
        // SAFETY: non-null (refused above otherwise); the caller's output pointer.
        unsafe { write_out(dev_ptr, d as *mut c_void) }
    }

    fn cudaHostGetFlags(flags: *mut u32, host: *mut c_void) {
        let f = host_get_flags(host)?;
        // SAFETY: the caller's output pointer, checked for null by `write_out`.
        unsafe { write_out(flags, f) }
    }

    fn cudaPointerGetAttributes(attrs: *mut cudaPointerAttributes, ptr: *const c_void) {
        let a = pointer_attributes(ptr)?;
        // SAFETY: output pointer from the caller, checked for null.
        unsafe { write_out(attrs, a) }
    }

    fn __v12_cudaPointerGetAttributes(attrs: *mut cudaPointerAttributesV12, ptr: *const c_void) {
        let a = pointer_attributes(ptr)?;
        let a = cudaPointerAttributesV12 {
            type_: a.type_,
            device: a.device,
            devicePointer: a.devicePointer,
            hostPointer: a.hostPointer,
        };
        // SAFETY: output pointer from the caller (CUDA 12's 24-byte struct), checked for
        // null.
        unsafe { write_out(attrs, a) }
    }

    fn cudaMemcpyToSymbol(sym: *const c_void, src: *const c_void, count: usize, offset: usize, kind: c_int) {
        to_symbol(sym, src, count, offset, kind, None)
    }

    fn cudaMemcpyToSymbol_ptds(sym: *const c_void, src: *const c_void, count: usize, offset: usize, kind: c_int) {
        to_symbol(sym, src, count, offset, kind, None)
    }

    fn cudaMemcpyFromSymbol(dst: *mut c_void, sym: *const c_void, count: usize, offset: usize, kind: c_int) {
        from_symbol(dst, sym, count, offset, kind, None)
    }

    fn cudaMemcpyFromSymbol_ptds(dst: *mut c_void, sym: *const c_void, count: usize, offset: usize, kind: c_int) {
        from_symbol(dst, sym, count, offset, kind, None)
    }

    fn cudaMemcpyToSymbolAsync(sym: *const c_void, src: *const c_void, count: usize, offset: usize, kind: c_int, stream: cudaStream_t) {
        to_symbol(sym, src, count, offset, kind, Some((stream, false)))
    }

    fn cudaMemcpyToSymbolAsync_ptsz(sym: *const c_void, src: *const c_void, count: usize, offset: usize, kind: c_int, stream: cudaStream_t) {
        to_symbol(sym, src, count, offset, kind, Some((stream, true)))
    }

    fn cudaMemcpyFromSymbolAsync(dst: *mut c_void, sym: *const c_void, count: usize, offset: usize, kind: c_int, stream: cudaStream_t) {
        from_symbol(dst, sym, count, offset, kind, Some((stream, false)))
    }

    fn cudaMemcpyFromSymbolAsync_ptsz(dst: *mut c_void, sym: *const c_void, count: usize, offset: usize, kind: c_int, stream: cudaStream_t) {
        from_symbol(dst, sym, count, offset, kind, Some((stream, true)))
    }

    fn cudaGetSymbolAddress(dev_ptr: *mut *mut c_void, sym: *const c_void) {
        let c = client::client()?;
        let addr = symbol(c, sym, 0, 0)?;
        // SAFETY: output pointer from the caller, checked for null.
        unsafe { write_out(dev_ptr, addr as *mut c_void) }
    }

    fn cudaGetSymbolSize(size: *mut usize, sym: *const c_void) {
        let c = client::client()?;
        let (_, s) = symbol_range(c, sym)?;
        // SAFETY: output pointer from the caller, checked for null.
        unsafe { write_out(size, s as usize) }
    }
}

entry! {
    fn cudaMemcpyBatchAsync(dsts: *const *mut c_void, srcs: *const *const c_void, sizes: *const usize, count: usize, attrs: *const cudaMemcpyAttributes, idxs: *const usize, num_attrs: usize, stream: cudaStream_t) {
        // SAFETY: the caller's arrays (the API's contract).
        let b = unsafe { crate::abi::memory_args::batch(dsts, srcs, sizes, count, (attrs, idxs, num_attrs)) };
        memcpy_batch(b, stream, false, &mut None)
    }

    fn cudaMemcpyBatchAsync_ptsz(dsts: *const *mut c_void, srcs: *const *const c_void, sizes: *const usize, count: usize, attrs: *const cudaMemcpyAttributes, idxs: *const usize, num_attrs: usize, stream: cudaStream_t) {
        // SAFETY: the caller's arrays (the API's contract).
        let b = unsafe { crate::abi::memory_args::batch(dsts, srcs, sizes, count, (attrs, idxs, num_attrs)) };
        memcpy_batch(b, stream, true, &mut None)
    }
}
