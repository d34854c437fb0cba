// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Every CUDA driver call the executor makes, as thin wrappers over the entry points of
//! [`super::ffi`] (cudarc's types, our own `u32`-returning function pointers).
//!
//! [`load`] runs first: it checks the library with cudarc's `is_culib_present`, checks
//! that every entry point in [`REQUIRED`] exists, then initializes the driver. A test scans
//! the executor for `ffi::cu*` calls and fails if one is in neither [`REQUIRED`] nor
//! [`OPTIONAL`], or not declared in `ffi.rs`, or if cudarc's enum-returning `sys::cu*`
//! wrappers are called anywhere, so a new call cannot slip past the checks. It also fails
//! if any file but `lib_ffi.rs` calls cudarc's cuBLAS or cuRAND wrappers.
//!
//! Wrappers that take a driver handle (context, stream, event, module, function, device or
//! host pointer) are `unsafe`: the caller guarantees the handle is live and that the
//! session's context is current. The driver validates everything else and reports misuse as
//! an error, not undefined behavior. For contexts, streams, events, modules, kernels and
//! pinned buffers the caller is `owned.rs`, whose types keep their handles live and free
//! them on drop; the rest of the executor calls these wrappers directly only where the
//! contract is about memory (copies, memsets, device and registered host memory).

use std::ffi::{CStr, c_uint, c_void};
use std::mem::MaybeUninit;

use cudarc::driver::sys::{
    self, CUcontext, CUdevice, CUdevice_attribute, CUdeviceptr, CUevent, CUfunction,
    CUfunction_attribute, CUgraph, CUgraphExec, CUgraphNode, CUlimit, CUmemorytype, CUmodule,
    CUresult, CUstream,
};

use super::error::{InitError, MIN_DRIVER_VERSION};
use super::ffi;

/// A raw driver result.
pub type DrvResult<T> = Result<T, CUresult>;

fn ok(r: u32) -> DrvResult<()> {
    match r {
        0 => Ok(()),
        e => Err(super::error::result(e)),
    }
}

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
/// without the module enumeration calls (driver 12.4+) modules cannot list their kernels.
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
];

/// Where the mipmapped array calls are in [`OPTIONAL`].
const MIPMAP_CALLS: std::ops::Range<usize> = 33..36;

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
    })
}

/// The device with this ordinal.
pub fn device_get(ordinal: i32) -> DrvResult<CUdevice> {
    let mut d = 0;
    // SAFETY: valid out pointer; the driver validates the ordinal.
    ok(unsafe { ffi::cuDeviceGet(&mut d, ordinal) })?;
    Ok(d)
}

/// The device's name.
pub fn device_name(dev: CUdevice) -> DrvResult<Vec<u8>> {
    let mut buf = [0 as std::ffi::c_char; 256];
    // SAFETY: the buffer holds `len` bytes; the driver NUL-terminates within it. `dev`
    // is a plain integer the driver validates.
    ok(unsafe { ffi::cuDeviceGetName(buf.as_mut_ptr(), buf.len() as i32, dev) })?;
    Ok(buf
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect())
}

/// The device's UUID.
pub fn device_uuid(dev: CUdevice) -> DrvResult<[u8; 16]> {
    let mut u = MaybeUninit::<sys::CUuuid>::zeroed();
    // SAFETY: valid out pointer to a `CUuuid` (16 bytes, zero-initialized).
    ok(unsafe { ffi::cuDeviceGetUuid_v2(u.as_mut_ptr(), dev) })?;
    // SAFETY: zero-initialized, then written by the driver; all bit patterns are valid.
    let u = unsafe { u.assume_init() };
    Ok(u.bytes.map(|c| c as u8))
}

/// Bytes of device memory.
pub fn device_total_mem(dev: CUdevice) -> DrvResult<u64> {
    let mut n = 0usize;
    // SAFETY: valid out pointer.
    ok(unsafe { ffi::cuDeviceTotalMem_v2(&mut n, dev) })?;
    Ok(n as u64)
}

/// One device attribute.
pub fn device_attribute(dev: CUdevice, a: CUdevice_attribute) -> DrvResult<i32> {
    let mut v = 0;
    // SAFETY: valid out pointer; `a` is a valid enum value.
    ok(unsafe { ffi::cuDeviceGetAttribute(&mut v, a, dev) })?;
    Ok(v)
}

/// Retains the device's primary context.
pub fn primary_ctx_retain(dev: CUdevice) -> DrvResult<CUcontext> {
    let mut c = std::ptr::null_mut();
    // SAFETY: valid out pointer.
    ok(unsafe { ffi::cuDevicePrimaryCtxRetain(&mut c, dev) })?;
    Ok(c)
}

/// Releases the device's primary context.
///
/// # Safety
///
/// Pairs with one successful [`primary_ctx_retain`]; nothing uses the context afterwards.
pub unsafe fn primary_ctx_release(dev: CUdevice) -> DrvResult<()> {
    // SAFETY: `dev` holds a retain from `primary_ctx_retain` that this call gives back, and the
    // caller uses the context no more.
    ok(unsafe { ffi::cuDevicePrimaryCtxRelease_v2(dev) })
}

/// Creates a context on `dev` (scheduling left to the driver) and makes it current.
pub fn ctx_create(dev: CUdevice) -> DrvResult<CUcontext> {
    let mut c = std::ptr::null_mut();
    let mut params = sys::CUctxCreateParams {
        execAffinityParams: std::ptr::null_mut(),
        numExecAffinityParams: 0,
        cigParams: std::ptr::null_mut(),
    };
    // SAFETY: valid out pointer; `params` asks for no affinity and no CIG (null pointers
    // with zero counts), flags 0 = CU_CTX_SCHED_AUTO.
    ok(unsafe { ffi::cuCtxCreate_v4(&mut c, &mut params, 0, dev) })?;
    Ok(c)
}

/// Destroys a context and everything in it.
///
/// # Safety
///
/// `ctx` came from [`ctx_create`] and is not used afterwards.
pub unsafe fn ctx_destroy(ctx: CUcontext) -> DrvResult<()> {
    // SAFETY: `ctx` came from `ctx_create` and is destroyed once; the caller uses neither it nor
    // anything made in it afterwards.
    ok(unsafe { ffi::cuCtxDestroy_v2(ctx) })
}

/// Makes `ctx` current on the calling thread.
///
/// # Safety
///
/// `ctx` is live (or null, which unbinds).
pub unsafe fn ctx_set_current(ctx: CUcontext) -> DrvResult<()> {
    // SAFETY: `ctx` is a live context or null (unbinds), as the caller guarantees; the call only
    // stores it in the thread's current-context slot.
    ok(unsafe { ffi::cuCtxSetCurrent(ctx) })
}

/// Waits for all work in the current context.
pub fn ctx_synchronize() -> DrvResult<()> {
    // SAFETY: no arguments; without a current context the driver returns an error.
    ok(unsafe { ffi::cuCtxSynchronize() })
}

/// `cuCtxSetLimit` on the current context.
pub fn ctx_set_limit(limit: CUlimit, value: usize) -> DrvResult<()> {
    // SAFETY: plain values.
    ok(unsafe { ffi::cuCtxSetLimit(limit, value) })
}

/// `cuCtxGetLimit` on the current context.
pub fn ctx_get_limit(limit: CUlimit) -> DrvResult<usize> {
    let mut v = 0usize;
    // SAFETY: valid out pointer.
    ok(unsafe { ffi::cuCtxGetLimit(&mut v, limit) })?;
    Ok(v)
}

/// `(free, total)` device memory.
pub fn mem_get_info() -> DrvResult<(u64, u64)> {
    let (mut f, mut t) = (0usize, 0usize);
    // SAFETY: valid out pointers.
    ok(unsafe { ffi::cuMemGetInfo_v2(&mut f, &mut t) })?;
    Ok((f as u64, t as u64))
}

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

/// `cuMemAddressReserve`: `size` bytes aligned to `align` (0: the granularity).
pub fn mem_address_reserve(size: usize, align: usize) -> DrvResult<CUdeviceptr> {
    let mut p = 0;
    // SAFETY: a valid out pointer; no address hint.
    ok(unsafe { ffi::cuMemAddressReserve(&mut p, size, align, 0, 0) })?;
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

/// An interprocess handle for the allocation at `ptr` of the current context.
pub fn ipc_get_mem_handle(ptr: CUdeviceptr) -> DrvResult<[u8; 64]> {
    let mut h = sys::CUipcMemHandle_st { reserved: [0; 64] };
    // SAFETY: valid out pointer; the driver checks `ptr`.
    ok(unsafe { ffi::cuIpcGetMemHandle(&mut h, ptr) })?;
    Ok(h.reserved.map(|b| b as u8))
}

/// Maps the allocation another process exported as `handle` into the current context:
/// its address and length.
pub fn ipc_open_mem_handle(handle: &[u8; 64], flags: c_uint) -> DrvResult<(CUdeviceptr, u64)> {
    let h = sys::CUipcMemHandle_st {
        reserved: handle.map(|b| b as core::ffi::c_char),
    };
    let mut p = 0;
    // SAFETY: valid out pointer; the driver checks the handle's bytes.
    ok(unsafe { ffi::cuIpcOpenMemHandle_v2(&mut p, h, flags) })?;
    let (mut base, mut len) = (0, 0usize);
    // SAFETY: valid out pointers; `p` was just mapped in the current context.
    let r = ok(unsafe { ffi::cuMemGetAddressRange_v2(&mut base, &mut len, p) });
    // The mapping starts where the driver said (else it is not what we think it is).
    let r = r.and_then(|()| {
        (base == p)
            .then_some(())
            .ok_or(CUresult::CUDA_ERROR_UNKNOWN)
    });
    if let Err(e) = r {
        // SAFETY: `p` was mapped just above and is given to nobody.
        let _ = unsafe { ffi::cuIpcCloseMemHandle(p) };
        return Err(e);
    }
    Ok((p, len as u64))
}

/// Unmaps what [`ipc_open_mem_handle`] mapped (one open).
///
/// # Safety
///
/// `ptr` came from `ipc_open_mem_handle` in the current context and no work still uses it.
pub unsafe fn ipc_close_mem_handle(ptr: CUdeviceptr) -> DrvResult<()> {
    // SAFETY: the caller's guarantee.
    ok(unsafe { ffi::cuIpcCloseMemHandle(ptr) })
}

/// An interprocess handle for `event` (created with `CU_EVENT_INTERPROCESS`).
pub fn ipc_get_event_handle(event: CUevent) -> DrvResult<[u8; 64]> {
    let mut h = sys::CUipcEventHandle_st { reserved: [0; 64] };
    // SAFETY: valid out pointer; `event` is a live event of the current context.
    ok(unsafe { ffi::cuIpcGetEventHandle(&mut h, event) })?;
    Ok(h.reserved.map(|b| b as u8))
}

/// Opens the event another process exported as `handle` in the current context.
pub fn ipc_open_event_handle(handle: &[u8; 64]) -> DrvResult<CUevent> {
    let h = sys::CUipcEventHandle_st {
        reserved: handle.map(|b| b as core::ffi::c_char),
    };
    let mut e = std::ptr::null_mut();
    // SAFETY: valid out pointer; the driver checks the handle's bytes.
    ok(unsafe { ffi::cuIpcOpenEventHandle(&mut e, h) })?;
    Ok(e)
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

/// Creates a stream in the current context.
pub fn stream_create(flags: c_uint, priority: i32) -> DrvResult<CUstream> {
    let mut s = std::ptr::null_mut();
    // SAFETY: valid out pointer; the driver validates flags and clamps the priority.
    ok(unsafe { ffi::cuStreamCreateWithPriority(&mut s, flags, priority) })?;
    Ok(s)
}

/// Destroys a stream (its pending work still completes).
///
/// # Safety
///
/// `s` is a live stream, not used afterwards.
pub unsafe fn stream_destroy(s: CUstream) -> DrvResult<()> {
    // SAFETY: `s` is a live stream that the caller uses no more, so it is destroyed once.
    ok(unsafe { ffi::cuStreamDestroy_v2(s) })
}

/// `Ok` when the stream is idle, `Err(CUDA_ERROR_NOT_READY)` while work is pending.
///
/// # Safety
///
/// As for [`stream_synchronize`].
pub unsafe fn stream_query(s: CUstream) -> DrvResult<()> {
    // SAFETY: `s` is a live stream or null (the current context's legacy stream), as the
    // caller guarantees.
    ok(unsafe { ffi::cuStreamQuery(s) })
}

/// Makes `s` wait for `e`.
///
/// # Safety
///
/// Both are live (the stream may be null).
pub unsafe fn stream_wait_event(s: CUstream, e: CUevent, flags: c_uint) -> DrvResult<()> {
    // SAFETY: `e` is a live event and `s` a live stream or null, as the caller guarantees.
    ok(unsafe { ffi::cuStreamWaitEvent(s, e, flags) })
}

/// Creates an event in the current context.
pub fn event_create(flags: c_uint) -> DrvResult<CUevent> {
    let mut e = std::ptr::null_mut();
    // SAFETY: valid out pointer; the driver validates the flags.
    ok(unsafe { ffi::cuEventCreate(&mut e, flags) })?;
    Ok(e)
}

/// Destroys an event.
///
/// # Safety
///
/// `e` is live and not used afterwards.
pub unsafe fn event_destroy(e: CUevent) -> DrvResult<()> {
    // SAFETY: `e` is a live event that the caller uses no more, so it is destroyed once.
    ok(unsafe { ffi::cuEventDestroy_v2(e) })
}

/// Records `e` on `s`.
///
/// # Safety
///
/// Both are live (the stream may be null).
pub unsafe fn event_record(e: CUevent, s: CUstream, flags: c_uint) -> DrvResult<()> {
    // SAFETY: `e` is a live event and `s` a live stream or null, as the caller guarantees;
    // `flags` are passed to the driver, which validates them.
    ok(unsafe {
        if flags == 0 {
            ffi::cuEventRecord(e, s)
        } else {
            ffi::cuEventRecordWithFlags(e, s, flags)
        }
    })
}

/// `Ok` when the event completed, `Err(CUDA_ERROR_NOT_READY)` otherwise.
///
/// # Safety
///
/// `e` is live.
pub unsafe fn event_query(e: CUevent) -> DrvResult<()> {
    // SAFETY: `e` is a live event, as the caller guarantees.
    ok(unsafe { ffi::cuEventQuery(e) })
}

/// Milliseconds between two completed events.
///
/// # Safety
///
/// Both are live.
pub unsafe fn event_elapsed(start: CUevent, end: CUevent) -> DrvResult<f32> {
    let mut ms = 0f32;
    // SAFETY: `start` and `end` are live events, as the caller guarantees; `ms` is a valid
    // out pointer.
    ok(unsafe { ffi::cuEventElapsedTime_v2(&mut ms, start, end) })?;
    Ok(ms)
}

/// Bytes of the JIT compiler's error log kept when a module fails to load.
pub const JIT_LOG_LEN: usize = 16 << 10;

/// Loads a module image (fat binary, cubin or NUL-terminated PTX) into the current context.
/// On failure the JIT compiler's error log (PTX that does not compile) is logged.
///
/// # Safety
///
/// `image` points to a well-formed image ([`super::image::check`]) that stays alive and
/// unchanged during the call, 8-byte aligned.
pub unsafe fn module_load_data(image: *const u8) -> DrvResult<CUmodule> {
    use sys::CUjit_option::{CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    let mut m = std::ptr::null_mut();
    let mut log = vec![0u8; JIT_LOG_LEN];
    let mut options = [CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES];
    // The driver reads option values as pointer-sized words: a pointer, then a size.
    let mut values: [*mut c_void; 2] = [log.as_mut_ptr().cast(), JIT_LOG_LEN as *mut c_void];
    // SAFETY: `image` is a well-formed, 8-byte aligned image that stays alive and unchanged
    // during the call (the caller's guarantee); `m` is a valid out pointer; the two options
    // and their values are matching arrays of 2, and the log buffer holds the size given.
    let r = ok(unsafe {
        ffi::cuModuleLoadDataEx(
            &mut m,
            image.cast(),
            options.len() as c_uint,
            options.as_mut_ptr(),
            values.as_mut_ptr(),
        )
    });
    if r.is_err() {
        let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
        if end > 0 {
            log::warn!(
                "the driver could not load a module: {}",
                String::from_utf8_lossy(&log[..end]).trim_end()
            );
        }
    }
    r.map(|()| m)
}

/// Links PTX translation units (relocatable device code, `-rdc`) with the driver's JIT
/// linker and loads the result into the current context. On failure the linker's error log
/// is logged.
///
/// # Safety
///
/// A context is current and [`Loaded::linker`] said the entry points exist. Each unit is
/// NUL-terminated PTX.
pub unsafe fn module_link_ptx(units: &[&[u8]]) -> DrvResult<CUmodule> {
    use sys::CUjit_option::{CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    let mut log = vec![0u8; JIT_LOG_LEN];
    let mut options = [CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES];
    let mut values: [*mut c_void; 2] = [log.as_mut_ptr().cast(), JIT_LOG_LEN as *mut c_void];
    let mut state = std::ptr::null_mut();
    // SAFETY: matching option and value arrays of 2; the log buffer holds the size given and
    // outlives the link state (destroyed below, before `log` drops).
    ok(unsafe {
        ffi::cuLinkCreate_v2(
            options.len() as c_uint,
            options.as_mut_ptr(),
            values.as_mut_ptr(),
            &mut state,
        )
    })?;
    let linked = (|| {
        for (i, unit) in units.iter().enumerate() {
            if unit.last() != Some(&0) {
                return Err(CUresult::CUDA_ERROR_INVALID_PTX);
            }
            let name = format!("unit{i}\0");
            // SAFETY: `state` is the live link state; `unit` is NUL-terminated PTX of the
            // given size and `name` a NUL-terminated string, both alive during the call,
            // which copies them; no per-input options.
            ok(unsafe {
                ffi::cuLinkAddData_v2(
                    state,
                    sys::CUjitInputType::CU_JIT_INPUT_PTX,
                    unit.as_ptr().cast_mut().cast(),
                    unit.len(),
                    name.as_ptr().cast(),
                    0,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                )
            })?;
        }
        let mut cubin = std::ptr::null_mut();
        let mut size = 0usize;
        // SAFETY: `state` is live; the out pointers are valid. The cubin it returns lives
        // until the state is destroyed, which happens after the load below.
        ok(unsafe { ffi::cuLinkComplete(state, &mut cubin, &mut size) })?;
        let mut m = std::ptr::null_mut();
        // SAFETY: `cubin` is the linker's own image, alive until cuLinkDestroy below; a
        // context is current (the caller's guarantee); `m` is a valid out pointer.
        ok(unsafe {
            ffi::cuModuleLoadDataEx(&mut m, cubin, 0, std::ptr::null_mut(), std::ptr::null_mut())
        })?;
        Ok(m)
    })();
    // SAFETY: `state` came from cuLinkCreate and is destroyed once.
    let _ = unsafe { ffi::cuLinkDestroy(state) };
    if linked.is_err() {
        let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
        if end > 0 {
            log::warn!(
                "the driver could not link the PTX units of a module: {}",
                String::from_utf8_lossy(&log[..end]).trim_end()
            );
        }
    }
    linked
}

/// Unloads a module.
///
/// # Safety
///
/// `m` is live; nothing uses it or its functions afterwards.
pub unsafe fn module_unload(m: CUmodule) -> DrvResult<()> {
    // SAFETY: `m` is a live module that the caller, its functions and its variables use no
    // more, so it is unloaded once.
    ok(unsafe { ffi::cuModuleUnload(m) })
}

/// A kernel by mangled name.
///
/// # Safety
///
/// `m` is live.
pub unsafe fn module_get_function(m: CUmodule, name: &CStr) -> DrvResult<CUfunction> {
    let mut f = std::ptr::null_mut();
    // SAFETY: `m` is a live module (the caller's guarantee); `name` is NUL-terminated;
    // `f` is a valid out pointer.
    ok(unsafe { ffi::cuModuleGetFunction(&mut f, m, name.as_ptr()) })?;
    Ok(f)
}

/// The mangled names of a module's kernels (`cuModuleGetFunctionCount`,
/// `cuModuleEnumerateFunctions` and `cuFuncGetName`, driver 12.4+; `CUDA_ERROR_NOT_FOUND`
/// where the driver lacks them).
///
/// # Safety
///
/// `m` is live.
pub unsafe fn module_function_names(m: CUmodule) -> DrvResult<Vec<String>> {
    let mut n: std::ffi::c_uint = 0;
    // SAFETY: `m` is a live module (the caller's guarantee); `n` a valid out pointer.
    ok(unsafe { ffi::cuModuleGetFunctionCount(&mut n, m) })?;
    let mut fs: Vec<CUfunction> = vec![std::ptr::null_mut(); n as usize];
    // SAFETY: `fs` has room for `n` handles.
    ok(unsafe { ffi::cuModuleEnumerateFunctions(fs.as_mut_ptr(), n, m) })?;
    fs.iter()
        .map(|&f| {
            let mut name: *const std::ffi::c_char = std::ptr::null();
            // SAFETY: `f` is a function of the live module; `name` a valid out pointer.
            ok(unsafe { ffi::cuFuncGetName(&mut name, f) })?;
            if name.is_null() {
                return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
            }
            // SAFETY: the driver returns a NUL-terminated name that lives with the module.
            let s = unsafe { std::ffi::CStr::from_ptr(name) };
            Ok(s.to_string_lossy().into_owned())
        })
        .collect()
}

/// A module variable by mangled name: `(address, size)`.
///
/// # Safety
///
/// `m` is live.
pub unsafe fn module_get_global(m: CUmodule, name: &CStr) -> DrvResult<(CUdeviceptr, usize)> {
    let (mut p, mut n) = (0, 0usize);
    // SAFETY: `m` is a live module (the caller's guarantee); `name` is NUL-terminated;
    // `p` and `n` are valid out pointers.
    ok(unsafe { ffi::cuModuleGetGlobal_v2(&mut p, &mut n, m, name.as_ptr()) })?;
    Ok((p, n))
}

/// One function attribute.
///
/// # Safety
///
/// `f` is live.
pub unsafe fn func_get_attribute(f: CUfunction, a: CUfunction_attribute) -> DrvResult<i32> {
    let mut v = 0;
    // SAFETY: `f` is a live function (the caller's guarantee); `v` is a valid out pointer.
    ok(unsafe { ffi::cuFuncGetAttribute(&mut v, a, f) })?;
    Ok(v)
}

/// Sets a function attribute.
///
/// # Safety
///
/// `f` is live.
pub unsafe fn func_set_attribute(f: CUfunction, a: CUfunction_attribute, v: i32) -> DrvResult<()> {
    // SAFETY: `f` is a live function (the caller's guarantee); the driver validates the
    // attribute and value.
    ok(unsafe { ffi::cuFuncSetAttribute(f, a, v) })
}

/// `(offset, size)` of parameter `index`; `Err(CUDA_ERROR_INVALID_VALUE)` past the last.
///
/// # Safety
///
/// `f` is live and [`Loaded::param_info`] said the entry point exists.
pub unsafe fn func_param_info(f: CUfunction, index: usize) -> DrvResult<(usize, usize)> {
    let (mut off, mut size) = (0usize, 0usize);
    // SAFETY: `f` is a live function and the entry point exists (the caller's guarantee,
    // so cudarc finds the symbol); `off` and `size` are valid out pointers.
    ok(unsafe { ffi::cuFuncGetParamInfo(f, index, &mut off, &mut size) })?;
    Ok((off, size))
}

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

/// `cuGraphCreate`: an empty graph.
pub fn graph_create() -> DrvResult<CUgraph> {
    let mut g = std::ptr::null_mut();
    // SAFETY: a valid out pointer; flags must be 0.
    ok(unsafe { ffi::cuGraphCreate(&mut g, 0) })?;
    Ok(g)
}

/// What a graph node does (see [`graph_add_node`]).
pub enum GraphWork<'a> {
    /// Nothing.
    Empty,
    /// A kernel: its parameters (the pointers inside them as [`launch_kernel`] requires).
    Kernel(&'a sys::CUDA_KERNEL_NODE_PARAMS),
    /// A copy.
    Copy(&'a sys::CUDA_MEMCPY3D),
    /// A memset.
    Memset(&'a sys::CUDA_MEMSET_NODE_PARAMS),
}

/// Adds a node to graph `g` after `deps`, in context `ctx`.
///
/// # Safety
///
/// `g` is live and `deps` are nodes of it; `ctx` is live and current. A kernel's function
/// is live and its parameter pointers are as [`launch_kernel`] requires (the driver copies
/// them); a copy's or memset's device ranges are memory of `ctx`.
pub unsafe fn graph_add_node(
    g: CUgraph,
    deps: &[CUgraphNode],
    ctx: CUcontext,
    work: GraphWork<'_>,
) -> DrvResult<CUgraphNode> {
    let mut n = std::ptr::null_mut();
    let (d, nd) = (deps.as_ptr(), deps.len());
    // SAFETY: as the caller guarantees; `n` is a valid out pointer, `deps` a slice.
    ok(unsafe {
        match work {
            GraphWork::Empty => ffi::cuGraphAddEmptyNode(&mut n, g, d, nd),
            GraphWork::Kernel(p) => ffi::cuGraphAddKernelNode_v2(&mut n, g, d, nd, p),
            GraphWork::Copy(p) => ffi::cuGraphAddMemcpyNode(&mut n, g, d, nd, p, ctx),
            GraphWork::Memset(p) => ffi::cuGraphAddMemsetNode(&mut n, g, d, nd, p, ctx),
        }
    })?;
    Ok(n)
}

/// `cuGraphInstantiateWithFlags` (no flags).
///
/// # Safety
///
/// `g` is live; the context its nodes were made in is current.
pub unsafe fn graph_instantiate(g: CUgraph) -> DrvResult<CUgraphExec> {
    let mut e = std::ptr::null_mut();
    // SAFETY: a live graph (the caller's guarantee) and a valid out pointer.
    ok(unsafe { ffi::cuGraphInstantiateWithFlags(&mut e, g, 0) })?;
    Ok(e)
}

/// `cuGraphLaunch`.
///
/// # Safety
///
/// `e` and `s` are live, of the current context.
pub unsafe fn graph_launch(e: CUgraphExec, s: CUstream) -> DrvResult<()> {
    // SAFETY: as the caller guarantees.
    ok(unsafe { ffi::cuGraphLaunch(e, s) })
}

/// `cuGraphExecDestroy` (launches already made still run).
///
/// # Safety
///
/// `e` is live and destroyed once.
pub unsafe fn graph_exec_destroy(e: CUgraphExec) -> DrvResult<()> {
    // SAFETY: as the caller guarantees.
    ok(unsafe { ffi::cuGraphExecDestroy(e) })
}

/// `cuGraphDestroy`.
///
/// # Safety
///
/// `g` is live and destroyed once.
pub unsafe fn graph_destroy(g: CUgraph) -> DrvResult<()> {
    // SAFETY: as the caller guarantees.
    ok(unsafe { ffi::cuGraphDestroy(g) })
}

/// `cuLaunchCooperativeKernel`: every block resident at once (a grid larger than the device
/// holds fails with `CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE`).
///
/// # Safety
///
/// As [`launch_kernel`] with `params` only (cooperative launches take no `extra` list), and
/// [`Loaded::cooperative`] said the entry point exists.
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

/// `cuArray3DCreate`: a CUDA array.
///
/// Needs the session's context current and [`Loaded::textures`].
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
/// Needs the session's context current and [`Loaded::mipmaps`].
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The identifier at the start of `s`.
    fn ident(s: &str) -> &str {
        let end = s
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(s.len());
        &s[..end]
    }

    /// Every `.rs` file under `dir`, and its text.
    fn rust_files(dir: &std::path::Path, out: &mut Vec<(std::path::PathBuf, String)>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                rust_files(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let text = std::fs::read_to_string(&p).unwrap();
                out.push((p, text));
            }
        }
    }

    /// cudarc's cuBLAS and cuRAND types named like their functions (the enums and handles
    /// end in `_t` or `_st`).
    const LIB_TYPES: &[&str] = &[
        "cublasContext",
        "cublasLogCallback",
        "curandStatus",
        "curandRngType",
        "curandOrdering",
        "curandMethod",
        "curandDirectionVectorSet",
    ];

    /// Whether `name` (`cublas...` or `curand...`) is one of cudarc's function wrappers.
    fn is_lib_fn(name: &str) -> bool {
        name.len() > 6
            && name[6..].starts_with(|c: char| c.is_ascii_uppercase())
            && !name.ends_with("_t")
            && !name.ends_with("_st")
            && !LIB_TYPES.contains(&name)
    }

    /// The places in `src` that reach cudarc's enum-returning cuBLAS and cuRAND wrappers:
    /// a function through a `cb`, `cr` or `sys` path (or a macro's metavariable after one),
    /// a glob or list import of the `sys` modules that brings functions in unqualified, and
    /// cudarc's `safe`/`result` layers over them.
    fn library_wrapper_uses(src: &str) -> Vec<String> {
        let mut found = Vec::new();
        for module in ["cb", "cr", "sys"] {
            for lib in ["cublas", "curand"] {
                let pat = format!("{module}::{lib}");
                for (i, _) in src.match_indices(&pat) {
                    let name = ident(&src[i + module.len() + 2..]);
                    if is_lib_fn(name) {
                        found.push(format!("{module}::{name}"));
                    }
                }
            }
            let pat = format!("{module}::$");
            if src.contains(&pat) {
                found.push(format!("{pat} (a macro's function)"));
            }
        }
        for lib in ["cublas", "curand"] {
            let pat = format!("cudarc::{lib}::");
            for (i, _) in src.match_indices(&pat) {
                let rest = &src[i + pat.len()..];
                if let Some(list) = rest.strip_prefix("sys::{") {
                    let list = &list[..list.find('}').unwrap_or(list.len())];
                    let names = list.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'));
                    found.extend(
                        names
                            .filter(|n| is_lib_fn(n))
                            .map(|n| format!("{pat}sys::{n}")),
                    );
                } else if rest.starts_with("sys::*") || ident(rest) != "sys" {
                    found.push(format!("{pat}{}", ident(rest)));
                }
            }
        }
        found
    }

    /// Every driver call in the executor goes through `ffi` (a `u32` result), is declared
    /// there, and is checked by `load` (or optional); every cuBLAS and cuRAND call goes
    /// through `lib_ffi` (a `u32` status) and is declared there. No file of the crate calls
    /// cudarc's enum-returning wrappers (`lib_ffi.rs` only declares its own over cudarc's
    /// types).
    /// `load` tells groups of optional entry points by their places in `OPTIONAL`.
    #[test]
    fn optional_groups_are_where_load_looks() {
        assert_eq!(OPTIONAL[0], "cuFuncGetParamInfo");
        assert_eq!(
            (OPTIONAL[1], OPTIONAL[4]),
            ("cuLinkCreate_v2", "cuLinkDestroy")
        );
        assert_eq!(OPTIONAL[5], "cuLaunchCooperativeKernel");
        assert_eq!(
            (OPTIONAL[6], OPTIONAL[12]),
            ("cuArray3DCreate_v2", "cuSurfObjectDestroy")
        );
        assert_eq!(
            (OPTIONAL[13], OPTIONAL[21]),
            ("cuGraphCreate", "cuGraphDestroy")
        );
        assert_eq!(
            OPTIONAL[MIPMAP_CALLS],
            [
                "cuMipmappedArrayCreate",
                "cuMipmappedArrayGetLevel",
                "cuMipmappedArrayDestroy"
            ]
        );
        assert_eq!(OPTIONAL.len(), MIPMAP_CALLS.end);
    }

    #[test]
    fn every_driver_call_is_checked_at_load() {
        let sources = [
            include_str!("driver.rs"),
            include_str!("mod.rs"),
            include_str!("device.rs"),
            include_str!("modules.rs"),
            include_str!("owned.rs"),
            include_str!("staging.rs"),
            include_str!("streams.rs"),
            include_str!("transfer.rs"),
            include_str!("texture.rs"),
            include_str!("guest_mem.rs"),
            include_str!("wait.rs"),
            include_str!("printf.rs"),
        ];
        let mut seen = 0;
        for src in sources {
            // cudarc's own wrappers return its `CUresult` enum: never called.
            for (i, _) in src.match_indices("sys::cu") {
                let name: String = src[i + 5..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                assert!(
                    !name[2..].starts_with(|c: char| c.is_ascii_uppercase()),
                    "{name} is called through cudarc's binding, not `ffi`"
                );
            }
            for (i, _) in src.match_indices("ffi::cu") {
                let name: String = src[i + 5..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                // `culib`, and this test's own pattern.
                if !name[2..].starts_with(|c: char| c.is_ascii_uppercase()) {
                    continue;
                }
                seen += 1;
                assert!(
                    REQUIRED.contains(&name.as_str()) || OPTIONAL.contains(&name.as_str()),
                    "{name} is called but not checked by driver::load"
                );
                assert!(
                    include_str!("ffi.rs").contains(&format!("fn {name}(")),
                    "{name} is not declared in ffi.rs"
                );
            }
        }
        assert!(seen > 40);

        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        rust_files(&root, &mut files);
        assert!(
            files
                .iter()
                .any(|(p, _)| p.ends_with("executor/cuda/blas.rs"))
        );
        let lib_ffi = include_str!("lib_ffi.rs");
        let mut lib_calls = 0;
        for (path, src) in &files {
            if path.ends_with("executor/cuda/lib_ffi.rs") {
                continue;
            }
            let path = path.display();
            for (i, _) in src.match_indices("sys::cu") {
                let name = ident(&src[i + 5..]);
                assert!(
                    !name[2..].starts_with(|c: char| c.is_ascii_uppercase()),
                    "{path}: {name} is called through cudarc's binding, not `ffi`"
                );
            }
            let uses = library_wrapper_uses(src);
            assert!(
                uses.is_empty(),
                "{path} calls cudarc's cuBLAS/cuRAND wrappers, not `lib_ffi`: {uses:?}"
            );
            for lib in ["cublas", "curand"] {
                for (i, _) in src.match_indices(&format!("{lib}::{lib}")) {
                    let name = ident(&src[i + lib.len() + 2..]);
                    if !is_lib_fn(name) {
                        continue;
                    }
                    lib_calls += 1;
                    assert!(
                        lib_ffi.contains(&format!("fn {name}(")),
                        "{path}: {name} is not declared in lib_ffi.rs"
                    );
                }
            }
        }
        // Those of blas.rs's `real!` go through a macro and are not counted.
        assert!(lib_calls > 40, "{lib_calls}");
    }

    /// The scan finds what it must.
    #[test]
    fn the_source_scan_sees_cudarcs_wrappers() {
        // Written with `@` for the path separator, so that this file passes the scan.
        let bad = [
            "ok(unsafe { cb@cublasSgemm_v2(h) })",
            "cr@curandGenerate(g, p, n)",
            "cudarc@curand@sys@curandCreateGenerator(&mut g, t)",
            "unsafe { cb@$ger(h, m) }",
            "use cudarc@cublas@sys@*;",
            "use cudarc@curand@sys@{curandGenerator_t, curandSetStream};",
            "use cudarc@cublas@CudaBlas;",
            "cudarc@curand@result@create_generator()",
        ];
        for src in bad.map(|s| s.replace('@', "::")) {
            assert!(!library_wrapper_uses(&src).is_empty(), "{src}");
        }
        let fine = [
            "use cudarc::cublas::sys as cb;",
            "let h: cb::cublasHandle_t = std::ptr::null_mut();",
            "cr::curandStatus_t::CURAND_STATUS_SUCCESS",
            "use cudarc::curand::sys::{curandGenerator_t, curandRngType_t};",
            "cublas::cublasCreate_v2(&mut h)",
            "use cudarc::cublas::sys::cublasOperation_t;",
        ];
        for src in fine {
            assert!(library_wrapper_uses(src).is_empty(), "{src}");
        }
    }

    #[test]
    fn loading_without_a_driver_is_an_error_not_a_panic() {
        match load() {
            Ok(l) => eprintln!("driver {} with {} device(s)", l.version, l.device_count),
            Err(e) => eprintln!("skipping: no GPU ({e})"),
        }
    }
}
