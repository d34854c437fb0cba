// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Loading the driver: the entry points the executor needs ([`REQUIRED`]) or can do
//! without ([`OPTIONAL`]), [`load`], which checks them and initializes the driver, and
//! [`error_name`].

use std::ffi::CStr;

use cudarc::driver::sys::{self, CUresult};

use super::ok;
use crate::executor::cuda::error::{InitError, MIN_DRIVER_VERSION};
use crate::executor::cuda::ffi;

/// Entry points the executor cannot run without (CUDA 13.0 binding names).
pub const REQUIRED: &[&str] = &[
    "cuInit",
    "cuDriverGetVersion",
    "cuGetErrorName",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDeviceGetName",
    "cuDeviceGetUuid_v2",
    "cuDeviceTotalMem_v2",
    "cuDeviceGetAttribute",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2",
    "cuCtxCreate_v4",
    "cuCtxDestroy_v2",
    "cuCtxSetCurrent",
    "cuCtxSynchronize",
    "cuCtxSetLimit",
    "cuCtxGetLimit",
    "cuMemGetInfo_v2",
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuMemHostAlloc",
    "cuMemFreeHost",
    "cuMemHostRegister_v2",
    "cuMemHostUnregister",
    "cuMemcpyHtoDAsync_v2",
    "cuMemcpyDtoHAsync_v2",
    "cuMemcpyDtoDAsync_v2",
    "cuMemcpy2DAsync_v2",
    "cuMemsetD8Async",
    "cuMemsetD16Async",
    "cuMemsetD32Async",
    "cuMemsetD2D8Async",
    "cuMemsetD2D16Async",
    "cuMemsetD2D32Async",
    "cuStreamCreateWithPriority",
    "cuStreamDestroy_v2",
    "cuStreamQuery",
    "cuStreamWaitEvent",
    "cuEventCreate",
    "cuEventDestroy_v2",
    "cuEventRecord",
    "cuEventRecordWithFlags",
    "cuEventQuery",
    "cuEventElapsedTime_v2",
    "cuModuleLoadDataEx",
    "cuModuleUnload",
    "cuModuleGetFunction",
    "cuModuleGetGlobal_v2",
    "cuFuncGetAttribute",
    "cuFuncSetAttribute",
    "cuLaunchKernel",
    "cuIpcGetMemHandle",
    "cuIpcOpenMemHandle_v2",
    "cuIpcCloseMemHandle",
    "cuMemGetAddressRange_v2",
    "cuIpcGetEventHandle",
    "cuIpcOpenEventHandle",
];

/// Entry points used when present: `cuFuncGetParamInfo` (driver 12.4+) gives kernel
/// parameter layouts (without it the guest's own layout is used), and the JIT linker links
/// the PTX units of a device-linked program whose linked image the device cannot run;
/// without the module enumeration calls (driver 12.4+) modules cannot list their kernels;
/// without the tensor map calls (driver 12.0+) `cuTensorMapEncodeTiled` fails.
pub const OPTIONAL: &[&str] = &[
    "cuFuncGetParamInfo",
    "cuLinkCreate_v2",
    "cuLinkAddData_v2",
    "cuLinkComplete",
    "cuLinkDestroy",
    "cuLaunchCooperativeKernel",
    "cuArray3DCreate_v2",
    "cuArrayDestroy",
    "cuMemcpy3DAsync_v2",
    "cuTexObjectCreate",
    "cuTexObjectDestroy",
    "cuSurfObjectCreate",
    "cuSurfObjectDestroy",
    "cuGraphCreate",
    "cuGraphAddEmptyNode",
    "cuGraphAddKernelNode_v2",
    "cuGraphAddMemcpyNode",
    "cuGraphAddMemsetNode",
    "cuGraphInstantiateWithFlags",
    "cuGraphLaunch",
    "cuGraphExecDestroy",
    "cuGraphDestroy",
    "cuModuleGetFunctionCount",
    "cuModuleEnumerateFunctions",
    "cuFuncGetName",
    "cuMemCreate",
    "cuMemRelease",
    "cuMemAddressReserve",
    "cuMemAddressFree",
    "cuMemMap",
    "cuMemUnmap",
    "cuMemSetAccess",
    "cuMemHostGetDevicePointer_v2",
    "cuMipmappedArrayCreate",
    "cuMipmappedArrayGetLevel",
    "cuMipmappedArrayDestroy",
    "cuTensorMapEncodeTiled",
    "cuTensorMapReplaceAddress",
    "cuLaunchKernelEx",
    "cuOccupancyMaxActiveClusters",
    "cuOccupancyMaxPotentialClusterSize",
];

/// Where the mipmapped array calls are in [`OPTIONAL`].
pub(super) const MIPMAP_CALLS: std::ops::Range<usize> = 33..36;

/// What [`load`] found.
#[derive(Debug, Clone, Copy)]
pub struct Loaded {
    /// `cuDriverGetVersion`.
    pub version: i32,
    /// Devices present.
    pub device_count: i32,
    /// Whether `cuFuncGetParamInfo` exists.
    pub param_info: bool,
    /// Whether the JIT linker (`cuLink*`) exists.
    pub linker: bool,
    /// Whether `cuLaunchCooperativeKernel` exists.
    pub cooperative: bool,
    /// Whether the array, texture and surface object calls exist.
    pub textures: bool,
    /// Whether the graph calls exist (graphs are replayed node by node otherwise).
    pub graphs: bool,
    /// Whether `cuMemHostGetDevicePointer` exists (host memory mapped for kernels).
    pub maps_host: bool,
    /// Whether the mipmapped array calls exist.
    pub mipmaps: bool,
    /// Whether `cuLaunchKernelEx` exists (launches in thread-block clusters).
    pub clusters: bool,
}

fn has_symbol(name: &str) -> bool {
    // SAFETY: only called after `is_culib_present` returned true, so `culib` finds a
    // library and does not panic. `get` looks the symbol up with dlsym; we never call
    // through the pointer it returns (the type is only what dlsym's result is read as).
    unsafe {
        sys::culib()
            .get::<unsafe extern "C" fn()>(name.as_bytes())
            .is_ok()
    }
}

/// The driver's name for a result (`CUDA_ERROR_NO_DEVICE`).
pub fn error_name(r: CUresult) -> &'static str {
    let mut p = std::ptr::null();
    // SAFETY: `p` is a valid out pointer; on success the driver points it at a static
    // NUL-terminated string.
    let r2 = unsafe { ffi::cuGetErrorName(r, &mut p) };
    if r2 != 0 || p.is_null() {
        return "unknown CUDA error";
    }
    // SAFETY: the driver returned a pointer to a static C string (it lives as long as the
    // library, which is never unloaded).
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .unwrap_or("unknown CUDA error")
}

/// The names NVIDIA's driver is installed under (the runtime's name, and the development
/// link).
const DRIVER_NAMES: [&str; 2] = ["libcuda.so.1", "libcuda.so"];

/// Whether the dynamic linker finds the driver under one of [`DRIVER_NAMES`]. A quick
/// look before cudarc's own search, which tries dozens of candidate names (for every
/// platform and version) and costs milliseconds at every start where there is no driver.
fn driver_installed() -> bool {
    DRIVER_NAMES.iter().any(|name| {
        // SAFETY: loading the driver runs no initialisers with preconditions of ours
        // (NVIDIA's and vcuda's libcuda.so.1 both initialise lazily, in cuInit); the
        // handle is closed at once.
        unsafe { libloading::Library::new(*name) }.is_ok()
    })
}

/// Finds and initializes the driver, or says what is missing.
pub fn load() -> Result<Loaded, InitError> {
    if !driver_installed() {
        return Err(InitError::NoLibrary);
    }
    // SAFETY: `is_culib_present` only tries to dlopen the candidate library names (and
    // closes what it opened); it has no other preconditions.
    if !unsafe { sys::is_culib_present() } {
        return Err(InitError::NoLibrary);
    }
    for &symbol in REQUIRED {
        if !has_symbol(symbol) {
            return Err(InitError::MissingSymbol { symbol });
        }
    }
    // SAFETY: cuInit takes flags (must be 0) and nothing else.
    match ok(unsafe { ffi::cuInit(0) }).err() {
        None => {}
        Some(CUresult::CUDA_ERROR_STUB_LIBRARY) => return Err(InitError::StubLibrary),
        Some(r @ CUresult::CUDA_ERROR_NO_DEVICE) => {
            return Err(InitError::NoDevice(error_name(r)));
        }
        Some(r) => {
            return Err(InitError::Driver {
                call: "cuInit",
                name: error_name(r),
            });
        }
    }
    let mut version = 0;
    // SAFETY: valid out pointer.
    ok(unsafe { ffi::cuDriverGetVersion(&mut version) }).map_err(|r| InitError::Driver {
        call: "cuDriverGetVersion",
        name: error_name(r),
    })?;
    if version < MIN_DRIVER_VERSION {
        return Err(InitError::DriverTooOld { found: version });
    }
    let mut device_count = 0;
    // SAFETY: valid out pointer; the driver is initialized.
    ok(unsafe { ffi::cuDeviceGetCount(&mut device_count) }).map_err(|r| InitError::Driver {
        call: "cuDeviceGetCount",
        name: error_name(r),
    })?;
    if device_count < 1 {
        return Err(InitError::NoDevice("cuDeviceGetCount reports 0"));
    }
    Ok(Loaded {
        version,
        device_count,
        param_info: has_symbol("cuFuncGetParamInfo"),
        linker: OPTIONAL[1..5].iter().all(|s| has_symbol(s)),
        cooperative: has_symbol("cuLaunchCooperativeKernel"),
        textures: OPTIONAL[6..13].iter().all(|s| has_symbol(s)),
        graphs: OPTIONAL[13..22].iter().all(|s| has_symbol(s)),
        maps_host: has_symbol("cuMemHostGetDevicePointer_v2"),
        mipmaps: OPTIONAL[MIPMAP_CALLS].iter().all(|s| has_symbol(s)),
        clusters: has_symbol("cuLaunchKernelEx"),
    })
}
