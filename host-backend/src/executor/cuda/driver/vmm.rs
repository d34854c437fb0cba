// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The virtual memory management API (`cuMemCreate`, `cuMemAddressReserve`, `cuMemMap`,
//! `cuMemSetAccess`, ...), with CUDA's descriptors laid out here.

use cudarc::driver::sys::CUdeviceptr;

use super::{DrvResult, ok};
use crate::executor::cuda::ffi;

/// `CUmemLocation` of a device (`CU_MEM_LOCATION_TYPE_DEVICE`), laid out as every CUDA
/// 12 and 13 header does (cudarc's type changes with its CUDA feature).
#[repr(C)]
struct MemLocation {
    type_: i32,
    id: i32,
}

/// `CUmemAllocationProp` of pinned device memory without shareable handles.
#[repr(C)]
struct MemAllocationProp {
    type_: i32,
    requested_handle_types: i32,
    location: MemLocation,
    win32_handle_meta_data: *mut std::ffi::c_void,
    alloc_flags: [u8; 8],
}

/// `CUmemAccessDesc`.
#[repr(C)]
struct MemAccessDesc {
    location: MemLocation,
    flags: i32,
}

/// `cuMemCreate`: `size` bytes of pinned memory on device `ordinal`.
pub fn mem_create(size: usize, ordinal: i32) -> DrvResult<u64> {
    let prop = MemAllocationProp {
        type_: 1,
        requested_handle_types: 0,
        location: MemLocation {
            type_: 1,
            id: ordinal,
        },
        win32_handle_meta_data: std::ptr::null_mut(),
        alloc_flags: [0; 8],
    };
    let mut h = 0;
    // SAFETY: a valid out pointer and a properties struct laid out as CUDA's.
    ok(unsafe { ffi::cuMemCreate(&mut h, size, (&raw const prop).cast(), 0) })?;
    Ok(h)
}

/// `cuMemRelease`.
///
/// # Safety
///
/// `h` came from [`mem_create`] and is released once.
pub unsafe fn mem_release(h: u64) -> DrvResult<()> {
    // SAFETY: the caller's guarantee.
    ok(unsafe { ffi::cuMemRelease(h) })
}

/// `cuMemAddressReserve`: `size` bytes aligned to `align` (0: the granularity), at `addr`
/// if that range is free (0: anywhere; the driver takes the address as a hint only).
pub fn mem_address_reserve(size: usize, align: usize, addr: CUdeviceptr) -> DrvResult<CUdeviceptr> {
    let mut p = 0;
    // SAFETY: a valid out pointer; the hint is a plain number the driver checks.
    ok(unsafe { ffi::cuMemAddressReserve(&mut p, size, align, addr, 0) })?;
    Ok(p)
}

/// `cuMemAddressFree`.
///
/// # Safety
///
/// `[ptr, ptr + size)` is a whole reservation from [`mem_address_reserve`] with nothing
/// mapped in it.
pub unsafe fn mem_address_free(ptr: CUdeviceptr, size: usize) -> DrvResult<()> {
    // SAFETY: the caller's guarantee.
    ok(unsafe { ffi::cuMemAddressFree(ptr, size) })
}

/// `cuMemMap` of all of `h` (`size` bytes) at `ptr`.
///
/// # Safety
///
/// `ptr` lies in a live reservation with `size` bytes free of mappings; `h` is live.
pub unsafe fn mem_map(ptr: CUdeviceptr, size: usize, h: u64) -> DrvResult<()> {
    // SAFETY: the caller's guarantee.
    ok(unsafe { ffi::cuMemMap(ptr, size, 0, h, 0) })
}

/// `cuMemUnmap`.
///
/// # Safety
///
/// `[ptr, ptr + size)` is exactly a mapping made with [`mem_map`].
pub unsafe fn mem_unmap(ptr: CUdeviceptr, size: usize) -> DrvResult<()> {
    // SAFETY: the caller's guarantee.
    ok(unsafe { ffi::cuMemUnmap(ptr, size) })
}

/// `cuMemSetAccess` for device `ordinal`: `flags` 0 (none) or 3 (read-write).
///
/// # Safety
///
/// `[ptr, ptr + size)` is exactly a mapping made with [`mem_map`].
pub unsafe fn mem_set_access(
    ptr: CUdeviceptr,
    size: usize,
    ordinal: i32,
    flags: i32,
) -> DrvResult<()> {
    let d = MemAccessDesc {
        location: MemLocation {
            type_: 1,
            id: ordinal,
        },
        flags,
    };
    // SAFETY: the caller's guarantee; one descriptor laid out as CUDA's.
    ok(unsafe { ffi::cuMemSetAccess(ptr, size, (&raw const d).cast(), 1) })
}

/// Maps `h` at `ptr` ([`mem_map`]) and makes it readable and writable by device `ordinal`
/// ([`mem_set_access`]); where access cannot be set, unmaps it again.
///
/// # Safety
///
/// As [`mem_map`]'s.
pub unsafe fn mem_map_rw(ptr: CUdeviceptr, size: usize, h: u64, ordinal: i32) -> DrvResult<()> {
    // SAFETY: the caller's guarantee.
    unsafe { mem_map(ptr, size, h) }?;
    // SAFETY: `[ptr, ptr + size)` is exactly the mapping made above.
    unsafe { mem_set_access(ptr, size, ordinal, 3) }.inspect_err(|_| {
        // SAFETY: the mapping made above, which nothing uses.
        let _ = unsafe { mem_unmap(ptr, size) };
    })
}
