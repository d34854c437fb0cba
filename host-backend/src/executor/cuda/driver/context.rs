// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Devices, primary contexts and contexts (`cuDevice*`, `cuDevicePrimaryCtx*`, `cuCtx*`).

use std::mem::MaybeUninit;

use cudarc::driver::sys::{self, CUcontext, CUdevice, CUdevice_attribute, CUlimit};

use super::{DrvResult, ok};
use crate::executor::cuda::ffi;

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
