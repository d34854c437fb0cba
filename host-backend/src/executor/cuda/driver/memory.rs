// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Device memory, page-locked and registered host memory, copies and memsets (`cuMem*`,
//! `cuMemcpy*`, `cuMemset*`).

use std::ffi::{c_uint, c_void};

use cudarc::driver::sys::{self, CUdeviceptr, CUmemorytype, CUresult, CUstream};

use super::{DrvResult, ok};
use crate::executor::cuda::ffi;

/// `(free, total)` device memory.
pub fn mem_get_info() -> DrvResult<(u64, u64)> {
    let (mut f, mut t) = (0usize, 0usize);
    // SAFETY: valid out pointers.
    ok(unsafe { ffi::cuMemGetInfo_v2(&mut f, &mut t) })?;
    Ok((f as u64, t as u64))
}

/// Allocates device memory in the current context.
pub fn mem_alloc(size: usize) -> DrvResult<CUdeviceptr> {
    let mut p = 0;
    // SAFETY: valid out pointer.
    ok(unsafe { ffi::cuMemAlloc_v2(&mut p, size) })?;
    Ok(p)
}

/// Frees device memory.
///
/// # Safety
///
/// `ptr` is a live allocation of the current context, not used afterwards.
pub unsafe fn mem_free(ptr: CUdeviceptr) -> DrvResult<()> {
    // SAFETY: `ptr` is a live allocation of the current context that nothing uses afterwards
    // (the caller's guarantee), so it is freed once.
    ok(unsafe { ffi::cuMemFree_v2(ptr) })
}

/// Allocates `len` bytes of page-locked host memory (portable: pinned for every context).
pub fn mem_host_alloc(len: usize) -> DrvResult<*mut u8> {
    let mut p = std::ptr::null_mut();
    // SAFETY: valid out pointer.
    ok(unsafe { ffi::cuMemHostAlloc(&mut p, len, sys::CU_MEMHOSTALLOC_PORTABLE) })?;
    Ok(p.cast())
}

/// Frees page-locked host memory.
///
/// # Safety
///
/// `p` came from [`mem_host_alloc`], no copy uses it any more, and it is not used
/// afterwards.
pub unsafe fn mem_free_host(p: *mut u8) -> DrvResult<()> {
    // SAFETY: `p` came from `mem_host_alloc`, no copy uses it any more and it is not used
    // afterwards (the caller's guarantee), so it is freed once.
    ok(unsafe { ffi::cuMemFreeHost(p.cast()) })
}

/// Pins `[p, p + len)` for DMA.
///
/// # Safety
///
/// The range is mapped memory of this process and stays mapped until
/// [`mem_host_unregister`].
pub unsafe fn mem_host_register(p: *mut u8, len: usize, flags: c_uint) -> DrvResult<()> {
    // SAFETY: the caller guarantees `[p, p + len)` is mapped memory of this process until it
    // is unregistered, so the driver may pin it and DMA to and from it.
    ok(unsafe { ffi::cuMemHostRegister_v2(p.cast(), len, flags) })
}

/// The device address of host memory registered with `CU_MEMHOSTREGISTER_DEVICEMAP` in
/// the current context.
pub fn mem_host_get_device_pointer(p: *mut u8) -> DrvResult<CUdeviceptr> {
    let mut d = 0;
    // SAFETY: valid out pointer; the driver only looks `p` up among its registrations.
    ok(unsafe { ffi::cuMemHostGetDevicePointer_v2(&mut d, p.cast(), 0) })?;
    Ok(d)
}

/// Unpins a range pinned with [`mem_host_register`].
///
/// # Safety
///
/// `p` is the start of a registered range; no copy uses it any more.
pub unsafe fn mem_host_unregister(p: *mut u8) -> DrvResult<()> {
    // SAFETY: `p` starts a range registered with `mem_host_register` and no copy uses it any
    // more (the caller's guarantee).
    ok(unsafe { ffi::cuMemHostUnregister(p.cast()) })
}

/// Host to device.
///
/// # Safety
///
/// `src` is readable for `len` bytes until the copy has consumed it (pageable memory:
/// until this returns; pinned memory: until the stream reaches the copy); `stream` is live;
/// `[dst, dst + len)` is device memory of the current context.
pub unsafe fn memcpy_htod(
    dst: CUdeviceptr,
    src: *const u8,
    len: usize,
    s: CUstream,
) -> DrvResult<()> {
    // SAFETY: `src` is readable for `len` bytes until the copy has consumed them, `[dst, dst +
    // len)` is device memory of the current context and `s` is live (the caller's guarantee).
    ok(unsafe { ffi::cuMemcpyHtoDAsync_v2(dst, src.cast(), len, s) })
}

/// Device to host.
///
/// # Safety
///
/// `dst` is writable for `len` bytes and nothing else accesses it until the copy is
/// complete; `stream` is live; `[src, src + len)` is device memory of the current context.
pub unsafe fn memcpy_dtoh(
    dst: *mut u8,
    src: CUdeviceptr,
    len: usize,
    s: CUstream,
) -> DrvResult<()> {
    // SAFETY: `dst` is writable for `len` bytes and untouched until the copy is complete,
    // `[src, src + len)` is device memory of the current context and `s` is live (the
    // caller's guarantee).
    ok(unsafe { ffi::cuMemcpyDtoHAsync_v2(dst.cast(), src, len, s) })
}

/// Device to device.
///
/// # Safety
///
/// Both ranges are device memory of the current context; `stream` is live.
pub unsafe fn memcpy_dtod(
    dst: CUdeviceptr,
    src: CUdeviceptr,
    len: usize,
    s: CUstream,
) -> DrvResult<()> {
    // SAFETY: both ranges are device memory of the current context and `s` is live (the
    // caller's guarantee); no host memory is involved.
    ok(unsafe { ffi::cuMemcpyDtoDAsync_v2(dst, src, len, s) })
}

/// One end of a 2-D copy.
#[derive(Debug, Clone, Copy)]
pub enum End {
    /// Host memory.
    Host(*mut u8),
    /// Device memory.
    Device(CUdeviceptr),
}

/// A 2-D copy: `height` rows of `width` bytes.
#[derive(Debug, Clone, Copy)]
pub struct Copy2D {
    /// Source.
    pub src: End,
    /// Source pitch.
    pub spitch: usize,
    /// Destination.
    pub dst: End,
    /// Destination pitch.
    pub dpitch: usize,
    /// Bytes per row.
    pub width: usize,
    /// Rows.
    pub height: usize,
}

/// `cuMemcpy2DAsync`.
///
/// # Safety
///
/// Every row of both ends is valid memory of its kind, as for [`memcpy_htod`] and
/// [`memcpy_dtoh`]; `stream` is live.
pub unsafe fn memcpy_2d(c: &Copy2D, s: CUstream) -> DrvResult<()> {
    // Every field spelled out: cudarc's `CUmemorytype` is an enum without a 0 value, so a
    // zeroed descriptor would not be a valid value.
    let end = |e: &End| match *e {
        End::Host(h) => (CUmemorytype::CU_MEMORYTYPE_HOST, h.cast::<c_void>(), 0),
        End::Device(d) => (CUmemorytype::CU_MEMORYTYPE_DEVICE, std::ptr::null_mut(), d),
    };
    let (src_type, src_host, src_device) = end(&c.src);
    let (dst_type, dst_host, dst_device) = end(&c.dst);
    let p = sys::CUDA_MEMCPY2D {
        srcXInBytes: 0,
        srcY: 0,
        srcMemoryType: src_type,
        srcHost: src_host,
        srcDevice: src_device,
        srcArray: std::ptr::null_mut(),
        srcPitch: c.spitch,
        dstXInBytes: 0,
        dstY: 0,
        dstMemoryType: dst_type,
        dstHost: dst_host,
        dstDevice: dst_device,
        dstArray: std::ptr::null_mut(),
        dstPitch: c.dpitch,
        WidthInBytes: c.width,
        Height: c.height,
    };
    // SAFETY: the descriptor is fully initialized; the caller vouches for the memory.
    ok(unsafe { ffi::cuMemcpy2DAsync_v2(&p, s) })
}

/// A memset: `height` rows of `width` elements of `elem` bytes (1, 2 or 4), `pitch` bytes
/// apart.
///
/// # Safety
///
/// The rows are device memory of the current context; `stream` is live.
#[allow(clippy::too_many_arguments)]
pub unsafe fn memset(
    dst: CUdeviceptr,
    pitch: usize,
    value: u32,
    elem: u16,
    width: usize,
    height: usize,
    s: CUstream,
) -> DrvResult<()> {
    let linear = height <= 1 || pitch == width * usize::from(elem);
    let n = width * height;
    // SAFETY: the rows are device memory of the current context and `s` is live (the caller's
    // guarantee); out-of-range element sizes never reach the driver; the driver checks
    // alignment.
    ok(unsafe {
        match (elem, linear) {
            (1, true) => ffi::cuMemsetD8Async(dst, value as u8, n, s),
            (2, true) => ffi::cuMemsetD16Async(dst, value as u16, n, s),
            (4, true) => ffi::cuMemsetD32Async(dst, value, n, s),
            (1, false) => ffi::cuMemsetD2D8Async(dst, pitch, value as u8, width, height, s),
            (2, false) => ffi::cuMemsetD2D16Async(dst, pitch, value as u16, width, height, s),
            (4, false) => ffi::cuMemsetD2D32Async(dst, pitch, value, width, height, s),
            _ => CUresult::CUDA_ERROR_INVALID_VALUE as u32,
        }
    })
}
