// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Device management.

use crate::client::{self, Client};
use crate::error::{Error, Result};
use crate::ffi::write_out;
use crate::state;
use std::ffi::c_int;
use std::sync::atomic::Ordering;
use vcuda_protocol::{DeviceReq, LimitReq, MemGetInfoResp, ops};

/// `cudaDeviceScheduleMask | cudaDeviceMapHost | cudaDeviceLmemResizeToMax | cudaDeviceSyncMemops`.
pub(crate) const DEVICE_FLAGS: u32 = 0x07 | 0x08 | 0x10 | 0x80;

pub(crate) fn current(c: &Client) -> Result<u32> {
    c.check_device(state::device())
}

/// Synchronizes the current device (also what `cudaDeviceSynchronize` does).
pub fn synchronize(c: &Client) -> Result<()> {
    let device = current(c)?;
    c.call::<ops::DeviceSynchronize>(&DeviceReq {
        device,
        reserved: 0,
    })?;
    // Memory pools give back what they keep beyond their release thresholds.
    crate::core::pool::on_sync(c, None)
}

pub(crate) fn reset(c: &Client) -> Result<()> {
    let device = current(c)?;
    c.call::<ops::DeviceReset>(&DeviceReq {
        device,
        reserved: 0,
    })?;
    // Everything the session owned on the device is gone.
    c.generation.fetch_add(1, Ordering::Relaxed);
    crate::core::pool::on_reset();
    c.sticky.store(0, Ordering::Relaxed);
    c.mirror.clear_device();
    crate::core::managed::on_reset();
    // Managed and mapped memory the library kept coherent went with the device memory.
    for (base, len) in crate::coherent::on_reset() {
        c.mirror.remove_within(base, base + len, |k| {
            matches!(
                k,
                crate::mirror::Kind::Managed | crate::mirror::Kind::HostAlloc(_)
            )
        });
    }
    crate::core::ipc::on_reset();
    crate::core::graph_mem::on_reset();
    c.streams.lock().unwrap_or_else(|e| e.into_inner()).clear();
    c.events.lock().unwrap_or_else(|e| e.into_inner()).clear();
    // The thread's last error survives a reset (NVIDIA's runtime, measured on an H100).
    Ok(())
}

pub(crate) fn limit(c: &Client, limit: u32, value: Option<u64>) -> Result<u64> {
    let device = current(c)?;
    let req = LimitReq {
        device,
        limit,
        value: value.unwrap_or(0),
    };
    match value {
        Some(_) => c.call::<ops::DeviceSetLimit>(&req).map(|_| 0),
        None => c.call::<ops::DeviceGetLimit>(&req).map(|r| r.value),
    }
}

/// The arguments of a GPUDirect RDMA write flush: the current device
/// (`cudaFlushGPUDirectRDMAWritesTargetCurrentDevice`, 0), to its owner (100) or to all
/// devices (200).
pub(crate) fn flush_rdma_args(target: c_int, scope: c_int) -> Result<()> {
    if target == 0 && matches!(scope, 100 | 200) {
        Ok(())
    } else {
        Err(Error::INVALID_VALUE)
    }
}

/// `cudaDeviceGetAttribute`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaDeviceGetAttribute` requires of its caller.
pub(crate) unsafe fn device_get_attribute(
    value: *mut c_int,
    attr: c_int,
    device: c_int,
) -> Result<()> {
    let info = client::client()?.device_info(device)?;
    let v = u32::try_from(attr)
        .ok()
        .filter(|&a| a > 0)
        .and_then(|a| info.attr(a))
        .ok_or(Error::INVALID_VALUE)?;
    // SAFETY: output pointer from the caller, checked for null.
    unsafe { write_out(value, v) }
}

/// `cudaDeviceGetStreamPriorityRange` (and the driver's `cuCtxGetStreamPriorityRange`):
/// 0 (least) to -5 (greatest).
///
/// # Safety
///
/// Each pointer is null or valid for a write.
pub(crate) unsafe fn stream_priority_range(least: *mut c_int, greatest: *mut c_int) -> Result<()> {
    // SAFETY: the caller's output pointers; null ones are skipped.
    unsafe {
        if !least.is_null() {
            write_out(least, 0)?;
        }
        if !greatest.is_null() {
            write_out(greatest, -5)?;
        }
    }
    Ok(())
}

/// `cudaDeviceGetCacheConfig`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaDeviceGetCacheConfig` requires of its caller.
pub(crate) unsafe fn device_get_cache_config(config: *mut c_int) -> Result<()> {
    client::client()?;
    // SAFETY: output pointer from the caller, checked for null.
    unsafe { write_out(config, 0) }
}

/// `cudaDeviceGetLimit`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaDeviceGetLimit` requires of its caller.
pub(crate) unsafe fn device_get_limit(value: *mut usize, lim: c_int) -> Result<()> {
    let v = limit(client::client()?, lim as u32, None)?;
    // SAFETY: output pointer from the caller, checked for null.
    unsafe { write_out(value, v as usize) }
}

/// `cudaDeviceReset`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaDeviceReset` requires of its caller.
pub(crate) unsafe fn device_reset() -> Result<()> {
    reset(client::client()?)
}

/// `cudaDeviceSetCacheConfig`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaDeviceSetCacheConfig` requires of its caller.
pub(crate) unsafe fn device_set_cache_config(config: c_int) -> Result<()> {
    client::client()?;
    if !(0..=3).contains(&config) {
        return Err(Error::INVALID_VALUE);
    }
    Ok(())
}

/// `cudaDeviceSetLimit`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaDeviceSetLimit` requires of its caller.
pub(crate) unsafe fn device_set_limit(lim: c_int, value: usize) -> Result<()> {
    limit(client::client()?, lim as u32, Some(value as u64)).map(drop)
}

/// `cudaDeviceSynchronize`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaDeviceSynchronize` requires of its caller.
pub(crate) unsafe fn device_synchronize() -> Result<()> {
    crate::core::capture::check_device_sync()?;
    synchronize(client::client()?)
}

/// `cudaGetDeviceCount`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaGetDeviceCount` requires of its caller.
pub(crate) unsafe fn get_device_count(count: *mut c_int) -> Result<()> {
    match client::client() {
        Ok(c) => {
            // SAFETY: output pointer from the caller, checked for null.
            unsafe { write_out(count, c.device_count()) }
        }
        Err(e) => {
            // SAFETY: output pointer from the caller, checked for null by `write_out`;
            // CUDA stores 0 when it fails.
            let _ = unsafe { write_out(count, 0) };
            Err(e)
        }
    }
}

/// `cudaMemGetInfo`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaMemGetInfo` requires of its caller.
pub(crate) unsafe fn mem_get_info(free: *mut usize, total: *mut usize) -> Result<()> {
    let c = client::client()?;
    let device = current(c)?;
    let r: MemGetInfoResp = c.call::<ops::MemGetInfo>(&DeviceReq {
        device,
        reserved: 0,
    })?;
    // SAFETY: output pointers from the caller, checked for null.
    unsafe {
        write_out(free, r.free as usize)?;
        write_out(total, r.total as usize)
    }
}
