// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Kernels as the driver API sees them (`CUfunction`, which the runtime's
//! `cudaGetFuncBySymbol` and library kernels hand out too) and the launch attributes both APIs
//! share (`CUlaunchAttribute`, laid out like `cudaLaunchAttribute`).

use crate::error::{Error, Result};
use vcuda_protocol::FuncAttrs;

/// How a launch runs its blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// As the device schedules them.
    Plain,
    /// Every block resident at once (cooperative groups' grid barrier).
    Cooperative,
    /// In thread-block clusters of this many blocks per dimension (sm_90).
    Cluster([u32; 3]),
}

/// What the runtime needs of a driver function `f` to launch it (a library's kernel).
///
/// # Safety
///
/// `f` is a live function (its module loaded).
pub(crate) unsafe fn loaded_of(f: *const Function) -> crate::core::registry::LoadedFunc {
    // SAFETY: the caller's guarantee.
    let f = unsafe { &*f };
    crate::core::registry::LoadedFunc {
        handle: f.handle(),
        params: f.params.clone(),
        param_size: f.param_size,
        attrs: f.attrs,
    }
}

/// The driver's view (`cudaFunction_t`) of a kernel the runtime registered: made once per
/// kernel and kept for the process's life (`cudaGetFuncBySymbol`).
pub(crate) fn from_loaded(f: &crate::core::registry::LoadedFunc, name: &str) -> *const Function {
    Box::into_raw(Box::new(Function {
        handle: f.handle.into(),
        params: f.params.clone(),
        param_size: f.param_size,
        attrs: f.attrs,
        name: std::ffi::CString::new(name).unwrap_or_default(),
        module: 0,
    }))
}

/// `CUfunction`: a kernel of a module (`cuModuleGetFunction`) or a library's kernel.
pub struct Function {
    /// The backend's handle: a library's kernel gets a new one when its library is loaded
    /// again after a device reset ([`Function::rebind`]).
    pub(crate) handle: std::sync::atomic::AtomicU64,
    pub(crate) params: Vec<(u32, u32)>,
    pub(crate) param_size: u32,
    pub(crate) attrs: FuncAttrs,
    /// The mangled name (`cuFuncGetName`).
    pub(crate) name: std::ffi::CString,
    /// The `Module` it came from; 0 for a kernel the runtime registered.
    pub(crate) module: usize,
}

impl Function {
    /// The backend's handle.
    pub(crate) fn handle(&self) -> u64 {
        self.handle.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Points the function at its kernel in a reloaded module.
    pub(crate) fn rebind(&self, handle: u64) {
        self.handle
            .store(handle, std::sync::atomic::Ordering::Release);
    }
}

/// `CUlaunchAttribute` (and the runtime's `cudaLaunchAttribute`, laid out and numbered
/// alike): an id, padding, and a 64-byte value.
#[repr(C)]
pub struct CUlaunchAttribute {
    /// The attribute.
    pub id: u32,
    pub(crate) pad: [u8; 4],
    pub(crate) value: [u8; 64],
}

/// Whether a launch handles `a`: hints (access policy, priority, memory synchronization
/// domains, carveout, scheduling, a preferred cluster shape), the cooperative flag and the
/// cluster shape (see [`launch_shape`]), and programmatic dependent launch: the stream
/// serialization a kernel may relax (kept: every launch waits for the one before it, which
/// the programmatic waits then find complete) and the programmatic and launch-completion
/// events (recorded after the kernel, see [`launch_events`]).
pub(crate) fn plain_launch_attribute(a: &CUlaunchAttribute) -> bool {
    matches!(a.id, 0..=12 | 14 | 16)
}

/// How the attributes ask a launch to run its blocks: cooperatively
/// (`CU_LAUNCH_ATTRIBUTE_COOPERATIVE` with a non-zero value), in clusters
/// (`CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION` other than 0x0x0 or 1x1x1; a preferred shape,
/// attribute 11, is a hint the launch may ignore and does), or plainly. Both at once is
/// not supported.
pub(crate) fn launch_shape(attrs: &[CUlaunchAttribute]) -> Result<Shape> {
    let cluster = cluster_attribute(attrs).filter(|d| d.iter().any(|&v| v > 1));
    match (cooperative_requested(attrs), cluster) {
        (true, Some(_)) => Err(Error::NOT_SUPPORTED),
        (true, None) => Ok(Shape::Cooperative),
        (false, Some(d)) => Ok(Shape::Cluster(d)),
        (false, None) => Ok(Shape::Plain),
    }
}

/// The cluster shape the attributes give (`CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION`, the
/// last one if several do).
pub(crate) fn cluster_attribute(attrs: &[CUlaunchAttribute]) -> Option<[u32; 3]> {
    attrs.iter().rev().find(|a| a.id == 4).map(|a| {
        let word =
            |i: usize| u32::from_le_bytes(a.value[i * 4..i * 4 + 4].try_into().unwrap_or_default());
        [word(0), word(1), word(2)]
    })
}

/// The events a launch records when it is done: `CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT`
/// (triggered once every block has, at the latest when the kernel completes) and
/// `CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT` (once every block has begun: at the latest
/// at completion too). The event is the value's first word.
pub(crate) fn launch_events(attrs: &[CUlaunchAttribute]) -> Vec<usize> {
    attrs
        .iter()
        .filter(|a| matches!(a.id, 7 | 12))
        .map(|a| usize::from_le_bytes(a.value[..8].try_into().unwrap_or_default()))
        .collect()
}

/// Whether the attributes ask for a cooperative launch (`CU_LAUNCH_ATTRIBUTE_COOPERATIVE`
/// with a non-zero value).
pub(crate) fn cooperative_requested(attrs: &[CUlaunchAttribute]) -> bool {
    attrs
        .iter()
        .any(|a| a.id == 2 && a.value[..4] != [0, 0, 0, 0])
}
