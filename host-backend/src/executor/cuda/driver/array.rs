// SPDX-License-Identifier: Apache-2.0 OR MIT
//! CUDA arrays, mipmapped arrays, 3-D copies, texture and surface objects (`cuArray*`,
//! `cuMipmappedArray*`, `cuMemcpy3D`, `cuTexObject*`, `cuSurfObject*`).

use cudarc::driver::sys::{self, CUstream};

use super::{DrvResult, ok};
use crate::executor::cuda::ffi;

/// `cuArray3DCreate`: a CUDA array.
///
/// Needs the session's context current and [`Loaded::textures`](super::Loaded::textures).
pub fn array_create(desc: &sys::CUDA_ARRAY3D_DESCRIPTOR) -> DrvResult<sys::CUarray> {
    let mut a = std::ptr::null_mut();
    // SAFETY: valid out pointer and descriptor; the driver validates the descriptor.
    ok(unsafe { ffi::cuArray3DCreate_v2(&mut a, desc) })?;
    Ok(a)
}

/// `cuArrayDestroy`.
///
/// # Safety
///
/// `a` is a live array of the current context, destroyed once, and no pending work uses it.
pub unsafe fn array_destroy(a: sys::CUarray) -> DrvResult<()> {
    // SAFETY: the caller's contract.
    ok(unsafe { ffi::cuArrayDestroy(a) })
}

/// `cuMipmappedArrayCreate`: a mipmapped array of `levels` levels.
///
/// Needs the session's context current and [`Loaded::mipmaps`](super::Loaded::mipmaps).
pub fn mipmapped_create(
    desc: &sys::CUDA_ARRAY3D_DESCRIPTOR,
    levels: u32,
) -> DrvResult<sys::CUmipmappedArray> {
    let mut a = std::ptr::null_mut();
    // SAFETY: valid out pointer and descriptor; the driver validates both.
    ok(unsafe { ffi::cuMipmappedArrayCreate(&mut a, desc, levels) })?;
    Ok(a)
}

/// `cuMipmappedArrayGetLevel`: the array of one level (owned by the mipmapped array).
///
/// # Safety
///
/// `m` is a live mipmapped array of the current context.
pub unsafe fn mipmapped_level(m: sys::CUmipmappedArray, level: u32) -> DrvResult<sys::CUarray> {
    let mut a = std::ptr::null_mut();
    // SAFETY: valid out pointer; the caller vouches for `m`; the driver checks `level`.
    ok(unsafe { ffi::cuMipmappedArrayGetLevel(&mut a, m, level) })?;
    Ok(a)
}

/// `cuMipmappedArrayDestroy`.
///
/// # Safety
///
/// `m` is a live mipmapped array of the current context, destroyed once, and no pending
/// work uses it.
pub unsafe fn mipmapped_destroy(m: sys::CUmipmappedArray) -> DrvResult<()> {
    // SAFETY: the caller's contract.
    ok(unsafe { ffi::cuMipmappedArrayDestroy(m) })
}

/// `cuMemcpy3DAsync`: a copy between an array and device memory.
///
/// # Safety
///
/// The array is live, the device range every row of the copy touches lies in allocations
/// of the current context, and `s` is live.
pub unsafe fn memcpy_3d(p: &sys::CUDA_MEMCPY3D, s: CUstream) -> DrvResult<()> {
    // SAFETY: the caller's contract; the descriptor is fully initialized.
    ok(unsafe { ffi::cuMemcpy3DAsync_v2(p, s) })
}

/// `cuTexObjectCreate`, with a resource view or none.
///
/// # Safety
///
/// The resource names a live array or device memory of the current context.
pub unsafe fn tex_object_create(
    res: &sys::CUDA_RESOURCE_DESC,
    tex: &sys::CUDA_TEXTURE_DESC,
    view: Option<&sys::CUDA_RESOURCE_VIEW_DESC>,
) -> DrvResult<sys::CUtexObject> {
    let mut t = 0;
    let view = view.map_or(std::ptr::null(), |v| v as *const _);
    // SAFETY: valid out pointer and descriptors (the view null or valid); the caller
    // vouches for the resource.
    ok(unsafe { ffi::cuTexObjectCreate(&mut t, res, tex, view) })?;
    Ok(t)
}

/// `cuSurfObjectCreate`.
///
/// # Safety
///
/// The resource names a live array of the current context.
pub unsafe fn surf_object_create(res: &sys::CUDA_RESOURCE_DESC) -> DrvResult<sys::CUsurfObject> {
    let mut t = 0;
    // SAFETY: valid out pointer and descriptor; the caller vouches for the resource.
    ok(unsafe { ffi::cuSurfObjectCreate(&mut t, res) })?;
    Ok(t)
}

/// `cuTexObjectDestroy` or `cuSurfObjectDestroy`.
///
/// # Safety
///
/// `h` is a live object of that kind of the current context, destroyed once.
pub unsafe fn tex_object_destroy(h: u64, surface: bool) -> DrvResult<()> {
    // SAFETY: the caller's contract.
    ok(unsafe {
        if surface {
            ffi::cuSurfObjectDestroy(h)
        } else {
            ffi::cuTexObjectDestroy(h)
        }
    })
}
