// SPDX-License-Identifier: Apache-2.0 OR MIT
//! CUDA arrays: `cudaMallocArray`, `cudaMalloc3DArray`, `cudaFreeArray`, their queries, and
//! copies into and out of them (`cudaMemcpy2DToArray`, `cudaMemcpy2DFromArray`,
//! `cudaMemcpyToArray`, ..., and `cudaMemcpy3D` with an array on either side).
//!
//! The backend owns an array's memory and layout; the library keeps its shape (for the
//! queries and to turn element positions into bytes). A copy between an array and device
//! memory is one `MemcpyArray` request. A copy between an array and host memory goes
//! through a temporary device buffer (the host copy as the linear copies do it, then one
//! `MemcpyArray`), so its async variants wait for the copy. Array copies are not captured
//! into graphs: on a capturing stream they fail with `cudaErrorStreamCaptureUnsupported`.
//! Mipmapped arrays (`cudaMallocMipmappedArray`) live in the backend too; the array
//! handle of a level (`cudaGetMipmappedArrayLevel`) serves copies, surfaces and textures as
//! any array does, and goes with its mipmapped array. Sparse and deferred-mapping arrays
//! are not supported.

use crate::client::{self};
use crate::core::array::*;
use crate::core::graph_node::cudaExtent;
use crate::error::Error;
use crate::ffi::{cudaStream_t, read_in, write_out};
use std::ffi::{c_int, c_uint, c_void};

entry_raw! {
    fn cudaCreateChannelDesc(x: c_int, y: c_int, z: c_int, w: c_int, f: c_int) -> cudaChannelFormatDesc {
        cudaChannelFormatDesc { x, y, z, w, f }
    }
}

entry! {
    fn cudaMallocArray(out: *mut cudaArray_t, desc: *const cudaChannelFormatDesc, width: usize, height: usize, flags: c_uint) {
        if out.is_null() {
            return Err(Error::INVALID_VALUE);
        }
        // SAFETY: the caller's descriptor (the API's contract); `read_in` checks for null.
        let h = create(unsafe { read_in(desc)? }, [width as u64, height as u64, 0], flags)?;
        // SAFETY: checked non-null; the caller's output pointer.
        unsafe { write_out(out, h as cudaArray_t) }
    }

    fn cudaMalloc3DArray(out: *mut cudaArray_t, desc: *const cudaChannelFormatDesc, e: cudaExtent, flags: c_uint) {
        if out.is_null() {
            return Err(Error::INVALID_VALUE);
        }
        // SAFETY: the caller's descriptor (the API's contract); `read_in` checks for null.
        let h = create(unsafe { read_in(desc)? }, [e.width as u64, e.height as u64, e.depth as u64], flags)?;
        // SAFETY: checked non-null; the caller's output pointer.
        unsafe { write_out(out, h as cudaArray_t) }
    }

    fn cudaFreeArray(a: cudaArray_t) {
        destroy(a as u64)
    }

    fn cudaMallocMipmappedArray(out: *mut cudaMipmappedArray_t, desc: *const cudaChannelFormatDesc, e: cudaExtent, levels: c_uint, flags: c_uint) {
        if out.is_null() {
            return Err(Error::INVALID_VALUE);
        }
        let extent = [e.width as u64, e.height as u64, e.depth as u64];
        // SAFETY: the caller's descriptor (the API's contract); `read_in` checks for null.
        let h = mipmapped_create(unsafe { read_in(desc)? }, extent, levels, flags)?;
        // SAFETY: checked non-null; the caller's output pointer.
        unsafe { write_out(out, h as cudaMipmappedArray_t) }
    }

    fn cudaGetMipmappedArrayLevel(out: *mut cudaArray_t, m: cudaMipmappedArray_t, level: c_uint) {
        if out.is_null() {
            return Err(Error::INVALID_VALUE);
        }
        let h = mipmapped_level(m as u64, level)?;
        // SAFETY: checked non-null; the caller's output pointer.
        unsafe { write_out(out, h as cudaArray_t) }
    }

    fn cudaFreeMipmappedArray(m: cudaMipmappedArray_t) {
        mipmapped_destroy(m as u64)
    }

    fn cudaMipmappedArrayGetMemoryRequirements(req: *mut c_void, m: cudaMipmappedArray_t, device: c_int) {
        mipmapped_get_memory_requirements(req, m as u64, device)
    }

    fn cudaArrayGetInfo(desc: *mut cudaChannelFormatDesc, extent: *mut cudaExtent, flags: *mut c_uint, a: cudaArray_t) {
        // SAFETY: the caller's output pointers (the API's contract).
        unsafe { get_info(desc, extent, flags, a) }
    }

    fn cudaGetChannelDesc(desc: *mut cudaChannelFormatDesc, a: cudaArray_t) {
        if desc.is_null() {
            return Err(Error::INVALID_VALUE);
        }
        // SAFETY: the caller's output pointer (the API's contract).
        unsafe { get_info(desc, std::ptr::null_mut(), std::ptr::null_mut(), a) }
    }

    fn cudaMemcpy2DToArray(dst: cudaArray_t, w_offset: usize, h_offset: usize, src: *const c_void, spitch: usize, width: usize, height: usize, kind: c_int) {
        copy_2d_array(dst, w_offset, h_offset, src as u64, spitch, width, height, true, kind, None)
    }

    fn cudaMemcpy2DToArray_ptds(dst: cudaArray_t, w_offset: usize, h_offset: usize, src: *const c_void, spitch: usize, width: usize, height: usize, kind: c_int) {
        copy_2d_array(dst, w_offset, h_offset, src as u64, spitch, width, height, true, kind, None)
    }

    fn cudaMemcpy2DToArrayAsync(dst: cudaArray_t, w_offset: usize, h_offset: usize, src: *const c_void, spitch: usize, width: usize, height: usize, kind: c_int, stream: cudaStream_t) {
        copy_2d_array(dst, w_offset, h_offset, src as u64, spitch, width, height, true, kind, Some((stream, false)))
    }

    fn cudaMemcpy2DToArrayAsync_ptsz(dst: cudaArray_t, w_offset: usize, h_offset: usize, src: *const c_void, spitch: usize, width: usize, height: usize, kind: c_int, stream: cudaStream_t) {
        copy_2d_array(dst, w_offset, h_offset, src as u64, spitch, width, height, true, kind, Some((stream, true)))
    }

    fn cudaMemcpy2DFromArray(dst: *mut c_void, dpitch: usize, src: cudaArray_t, w_offset: usize, h_offset: usize, width: usize, height: usize, kind: c_int) {
        copy_2d_array(src, w_offset, h_offset, dst as u64, dpitch, width, height, false, kind, None)
    }

    fn cudaMemcpy2DFromArray_ptds(dst: *mut c_void, dpitch: usize, src: cudaArray_t, w_offset: usize, h_offset: usize, width: usize, height: usize, kind: c_int) {
        copy_2d_array(src, w_offset, h_offset, dst as u64, dpitch, width, height, false, kind, None)
    }

    fn cudaMemcpy2DFromArrayAsync(dst: *mut c_void, dpitch: usize, src: cudaArray_t, w_offset: usize, h_offset: usize, width: usize, height: usize, kind: c_int, stream: cudaStream_t) {
        copy_2d_array(src, w_offset, h_offset, dst as u64, dpitch, width, height, false, kind, Some((stream, false)))
    }

    fn cudaMemcpy2DFromArrayAsync_ptsz(dst: *mut c_void, dpitch: usize, src: cudaArray_t, w_offset: usize, h_offset: usize, width: usize, height: usize, kind: c_int, stream: cudaStream_t) {
        copy_2d_array(src, w_offset, h_offset, dst as u64, dpitch, width, height, false, kind, Some((stream, true)))
    }

    fn cudaMemcpyToArray(dst: cudaArray_t, w_offset: usize, h_offset: usize, src: *const c_void, count: usize, kind: c_int) {
        copy_linear_array(dst, w_offset, h_offset, src as u64, count, true, kind, None)
    }

    fn cudaMemcpyToArray_ptds(dst: cudaArray_t, w_offset: usize, h_offset: usize, src: *const c_void, count: usize, kind: c_int) {
        copy_linear_array(dst, w_offset, h_offset, src as u64, count, true, kind, None)
    }

    fn cudaMemcpyToArrayAsync(dst: cudaArray_t, w_offset: usize, h_offset: usize, src: *const c_void, count: usize, kind: c_int, stream: cudaStream_t) {
        copy_linear_array(dst, w_offset, h_offset, src as u64, count, true, kind, Some((stream, false)))
    }

    fn cudaMemcpyToArrayAsync_ptsz(dst: cudaArray_t, w_offset: usize, h_offset: usize, src: *const c_void, count: usize, kind: c_int, stream: cudaStream_t) {
        copy_linear_array(dst, w_offset, h_offset, src as u64, count, true, kind, Some((stream, true)))
    }

    fn cudaMemcpyFromArray(dst: *mut c_void, src: cudaArray_t, w_offset: usize, h_offset: usize, count: usize, kind: c_int) {
        copy_linear_array(src, w_offset, h_offset, dst as u64, count, false, kind, None)
    }

    fn cudaMemcpyFromArray_ptds(dst: *mut c_void, src: cudaArray_t, w_offset: usize, h_offset: usize, count: usize, kind: c_int) {
        copy_linear_array(src, w_offset, h_offset, dst as u64, count, false, kind, None)
    }

    fn cudaMemcpyFromArrayAsync(dst: *mut c_void, src: cudaArray_t, w_offset: usize, h_offset: usize, count: usize, kind: c_int, stream: cudaStream_t) {
        copy_linear_array(src, w_offset, h_offset, dst as u64, count, false, kind, Some((stream, false)))
    }

    fn cudaMemcpyFromArrayAsync_ptsz(dst: *mut c_void, src: cudaArray_t, w_offset: usize, h_offset: usize, count: usize, kind: c_int, stream: cudaStream_t) {
        copy_linear_array(src, w_offset, h_offset, dst as u64, count, false, kind, Some((stream, true)))
    }

    fn cudaArrayGetMemoryRequirements(req: *mut c_void, a: cudaArray_t, device: c_int) {
        array_get_memory_requirements(req, a, device)
    }

    fn cudaDeviceGetTexture1DLinearMaxWidth(out: *mut usize, desc: *const cudaChannelFormatDesc, device: c_int) {
        let c = client::client()?;
        if out.is_null() {
            return Err(Error::INVALID_VALUE);
        }
        c.check_device(device)?;
        // SAFETY: the caller's descriptor (the API's contract); `read_in` checks for null.
        let bytes = element_bytes(&unsafe { read_in(desc)? })?;
        // 2^30 elements of up to 4 bytes, 2^32 bytes beyond: 2^29 of 8 bytes, 2^28 of 16
        // (H100, CUDA 13.0, measured; cudaDevAttrMaxTexture1DLinearWidth says 2^28).
        let width = (1u64 << 30).min((1u64 << 32) / bytes);
        // SAFETY: the caller's output pointer (checked for null by write_out).
        unsafe { write_out(out, width as usize) }
    }

    fn cudaMemcpyArrayToArray(dst: cudaArray_t, w_dst: usize, h_dst: usize, src: cudaArray_t, w_src: usize, h_src: usize, count: usize, kind: c_int) {
        array_to_array_linear(dst, [w_dst as u64, h_dst as u64], src, [w_src as u64, h_src as u64], count as u64, kind)
    }

    fn cudaMemcpyArrayToArray_ptds(dst: cudaArray_t, w_dst: usize, h_dst: usize, src: cudaArray_t, w_src: usize, h_src: usize, count: usize, kind: c_int) {
        array_to_array_linear(dst, [w_dst as u64, h_dst as u64], src, [w_src as u64, h_src as u64], count as u64, kind)
    }

    fn cudaMemcpy2DArrayToArray(dst: cudaArray_t, w_dst: usize, h_dst: usize, src: cudaArray_t, w_src: usize, h_src: usize, width: usize, height: usize, kind: c_int) {
        array_to_array(dst, [w_dst as u64, h_dst as u64], src, [w_src as u64, h_src as u64], width as u64, height as u64, kind, None)
    }

    fn cudaMemcpy2DArrayToArray_ptds(dst: cudaArray_t, w_dst: usize, h_dst: usize, src: cudaArray_t, w_src: usize, h_src: usize, width: usize, height: usize, kind: c_int) {
        array_to_array(dst, [w_dst as u64, h_dst as u64], src, [w_src as u64, h_src as u64], width as u64, height as u64, kind, None)
    }
}

/// Writes what the caller asked for of an array's description (each output may be null).
///
/// # Safety
///
/// Each pointer is null or writable.
unsafe fn get_info(
    desc: *mut cudaChannelFormatDesc,
    extent: *mut cudaExtent,
    flags: *mut c_uint,
    a: cudaArray_t,
) -> crate::error::Result<()> {
    let i = info(a)?;
    // SAFETY: the caller's output pointers, each written only when non-null.
    unsafe {
        if !desc.is_null() {
            write_out(desc, i.desc)?;
        }
        if !extent.is_null() {
            let e = cudaExtent {
                width: i.extent[0] as usize,
                height: i.extent[1] as usize,
                depth: i.extent[2] as usize,
            };
            write_out(extent, e)?;
        }
        if !flags.is_null() {
            write_out(flags, i.flags)?;
        }
    }
    Ok(())
}
