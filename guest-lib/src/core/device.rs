// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Device management.

use crate::client::{self, Client};
use crate::error::{Error, Result};
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

/// `cudaDeviceGetAttribute`: attribute `attr` of device `device`.
pub(crate) fn device_get_attribute(attr: c_int, device: c_int) -> Result<c_int> {
    let info = client::client()?.device_info(device)?;
    u32::try_from(attr)
        .ok()
        .filter(|&a| a > 0)
        .and_then(|a| info.attr(a))
        .ok_or(Error::INVALID_VALUE)
}

/// `cudaDeviceGetStreamPriorityRange` (and the driver's `cuCtxGetStreamPriorityRange`):
/// `(least, greatest)`, 0 to -5.
pub(crate) fn stream_priority_range() -> (c_int, c_int) {
    (0, -5)
}

/// `cudaDeviceGetCacheConfig`: always `cudaFuncCachePreferNone`.
pub(crate) fn device_get_cache_config() -> Result<c_int> {
    client::client()?;
    Ok(0)
}

/// `cudaDeviceGetLimit`.
pub(crate) fn device_get_limit(lim: c_int) -> Result<usize> {
    Ok(limit(client::client()?, lim as u32, None)? as usize)
}

/// `cudaDeviceReset`.
pub(crate) fn device_reset() -> Result<()> {
    reset(client::client()?)
}

/// `cudaDeviceSetCacheConfig`: accepted and ignored, as on devices without a configurable
/// cache.
pub(crate) fn device_set_cache_config(config: c_int) -> Result<()> {
    client::client()?;
    if !(0..=3).contains(&config) {
        return Err(Error::INVALID_VALUE);
    }
    Ok(())
}

/// `cudaDeviceSetLimit`.
pub(crate) fn device_set_limit(lim: c_int, value: usize) -> Result<()> {
    limit(client::client()?, lim as u32, Some(value as u64)).map(drop)
}

/// `cudaDeviceSynchronize`.
pub(crate) fn device_synchronize() -> Result<()> {
    crate::core::capture::check_device_sync()?;
    synchronize(client::client()?)
}

/// `cudaGetDeviceCount` (on failure CUDA stores 0: the caller does too).
pub(crate) fn get_device_count() -> Result<c_int> {
    Ok(client::client()?.device_count())
}

/// `cudaMemGetInfo`: `(free, total)` bytes of the current device.
pub(crate) fn mem_get_info() -> Result<(usize, usize)> {
    let c = client::client()?;
    let device = current(c)?;
    let r: MemGetInfoResp = c.call::<ops::MemGetInfo>(&DeviceReq {
        device,
        reserved: 0,
    })?;
    Ok((r.free as usize, r.total as usize))
}
