// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Kernel launches (`cuLaunchKernel`, `cuLaunchCooperativeKernel`, `cuLaunchKernelEx` for
//! thread-block clusters).

use std::ffi::c_void;

use cudarc::driver::sys::{self, CUfunction, CUstream};

use super::{DrvResult, ok};
use crate::executor::cuda::ffi;

/// `CU_LAUNCH_PARAM_BUFFER_POINTER` (the tag value 1, never dereferenced).
pub const LAUNCH_PARAM_BUFFER_POINTER: *mut c_void =
    std::ptr::without_provenance_mut(sys::CU_LAUNCH_PARAM_BUFFER_POINTER_AS_INT as usize);
/// `CU_LAUNCH_PARAM_BUFFER_SIZE` (the tag value 2, never dereferenced).
pub const LAUNCH_PARAM_BUFFER_SIZE: *mut c_void =
    std::ptr::without_provenance_mut(sys::CU_LAUNCH_PARAM_BUFFER_SIZE_AS_INT as usize);
/// `CU_LAUNCH_PARAM_END`.
pub const LAUNCH_PARAM_END: *mut c_void = std::ptr::null_mut();

/// Launches a kernel.
///
/// # Safety
///
/// `f` and `s` are live; `params` (if not null) holds one pointer per kernel parameter,
/// each readable for that parameter's size; `extra` (if not null) is a
/// `CU_LAUNCH_PARAM_END`-terminated list whose buffer is readable for its stated size.
/// Exactly one of the two is non-null unless the kernel has no parameters.
#[allow(clippy::too_many_arguments)]
pub unsafe fn launch_kernel(
    f: CUfunction,
    grid: [u32; 3],
    block: [u32; 3],
    shared: u32,
    s: CUstream,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> DrvResult<()> {
    // SAFETY: `f` and `s` are live, and `params`/`extra` are as the caller guarantees: one
    // readable pointer per parameter, or a terminated list naming a buffer readable for its
    // stated size.
    ok(unsafe {
        ffi::cuLaunchKernel(
            f, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared, s, params, extra,
        )
    })
}

/// `cuLaunchCooperativeKernel`: every block resident at once (a grid larger than the device
/// holds fails with `CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE`).
///
/// # Safety
///
/// As [`launch_kernel`] with `params` only (cooperative launches take no `extra` list), and
/// [`Loaded::cooperative`](super::Loaded::cooperative) said the entry point exists.
pub unsafe fn launch_cooperative_kernel(
    f: CUfunction,
    grid: [u32; 3],
    block: [u32; 3],
    shared: u32,
    s: CUstream,
    params: *mut *mut c_void,
) -> DrvResult<()> {
    // SAFETY: as the caller guarantees (see above).
    ok(unsafe {
        ffi::cuLaunchCooperativeKernel(
            f, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared, s, params,
        )
    })
}

/// A `CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION` attribute of `cluster`.
fn cluster_attribute([x, y, z]: [u32; 3]) -> sys::CUlaunchAttribute {
    // SAFETY: an all-zero attribute is a valid value of this plain C struct (its value a
    // union of integer fields).
    let mut attr: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
    attr.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim = sys::CUlaunchAttributeValue_union__bindgen_ty_1 { x, y, z };
    attr
}

/// A `CUlaunchConfig` of `cfg` on stream `s`, with the one attribute `attr` if given (it
/// must outlive the configuration's use).
fn launch_config(
    (grid, block, shared): ([u32; 3], [u32; 3], u32),
    s: CUstream,
    attr: Option<&mut sys::CUlaunchAttribute>,
) -> sys::CUlaunchConfig {
    let n = u32::from(attr.is_some());
    sys::CUlaunchConfig {
        gridDimX: grid[0],
        gridDimY: grid[1],
        gridDimZ: grid[2],
        blockDimX: block[0],
        blockDimY: block[1],
        blockDimZ: block[2],
        sharedMemBytes: shared,
        hStream: s,
        attrs: attr.map_or(std::ptr::null_mut(), |a| a as *mut _),
        numAttrs: n,
    }
}

/// `cuLaunchKernelEx` with a cluster shape (`CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION`): the
/// blocks of each cluster of `cluster` blocks run at once on one GPU processing cluster.
///
/// # Safety
///
/// As [`launch_kernel`], and [`Loaded::clusters`](super::Loaded::clusters) said the entry
/// point exists.
#[allow(clippy::too_many_arguments)]
pub unsafe fn launch_kernel_cluster(
    f: CUfunction,
    (grid, block, shared): ([u32; 3], [u32; 3], u32),
    cluster: [u32; 3],
    s: CUstream,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> DrvResult<()> {
    let mut attr = cluster_attribute(cluster);
    let config = launch_config((grid, block, shared), s, Some(&mut attr));
    // SAFETY: `config` and the attribute it points to live across the call; `f`, `s`,
    // `params` and `extra` are as the caller guarantees.
    ok(unsafe { ffi::cuLaunchKernelEx(&config, f, params, extra) })
}

/// `cuOccupancyMaxActiveClusters` (`size` false) or `cuOccupancyMaxPotentialClusterSize` of
/// a launch of `f` with `cfg`, in clusters of `cluster` (`None`: the kernel's own shape).
///
/// # Safety
///
/// `f` is live.
pub unsafe fn occupancy_cluster(
    f: CUfunction,
    (grid, block, shared): ([u32; 3], [u32; 3], u32),
    cluster: Option<[u32; 3]>,
    size: bool,
) -> DrvResult<i32> {
    let mut attr = cluster_attribute(cluster.unwrap_or([1; 3]));
    let attr = cluster.is_some().then_some(&mut attr);
    let config = launch_config((grid, block, shared), std::ptr::null_mut(), attr);
    let mut v = 0;
    // SAFETY: `config` and its attribute live across the call, `v` is a valid out pointer,
    // `f` is live (the caller's guarantee).
    ok(unsafe {
        if size {
            ffi::cuOccupancyMaxPotentialClusterSize(&mut v, f, &config)
        } else {
            ffi::cuOccupancyMaxActiveClusters(&mut v, f, &config)
        }
    })?;
    Ok(v)
}
