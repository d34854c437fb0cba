// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Device management.

use crate::abi::device_args as args;
use crate::client::{self};
use crate::core::device::*;
use crate::error::Error;
use crate::ffi::write_out;
use crate::props_gen::{props12, props13};
use crate::state;
use std::ffi::c_int;

entry! {
    fn cudaGetDeviceCount(count: *mut c_int) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { args::get_device_count(count) }
    }

    fn cudaGetDevice(device: *mut c_int) {
        // SAFETY: output pointer from the caller, checked for null.
        unsafe { write_out(device, state::device()) }
    }

    fn cudaSetDevice(device: c_int) {
        client::client()?.check_device(device)?;
        state::set_device(device);
        Ok(())
    }

    fn cudaSetDeviceFlags(flags: u32) {
        let c = client::client()?;
        if flags & !DEVICE_FLAGS != 0 || !matches!(flags & 0x07, 0 | 1 | 2 | 4) {
            return Err(Error::INVALID_VALUE);
        }
        c.device_flags.lock().unwrap_or_else(|e| e.into_inner()).insert(state::device(), flags);
        crate::transport::set_schedule(flags);
        Ok(())
    }

    fn cudaGetDeviceFlags(flags: *mut u32) {
        let c = client::client()?;
        let f = c.device_flags.lock().unwrap_or_else(|e| e.into_inner()).get(&state::device()).copied().unwrap_or(0);
        // SAFETY: output pointer from the caller, checked for null.
        unsafe { write_out(flags, f) }
    }

    fn cudaGetDeviceProperties(prop: *mut crate::props_gen::cudaDeviceProp13, device: c_int) {
        let p = props13(client::client()?.device_info(device)?);
        // SAFETY: the CUDA 13 API passes a `cudaDeviceProp` of this layout (1008 bytes).
        unsafe { write_out(prop, p) }
    }

    fn __v12_cudaGetDeviceProperties(prop: *mut crate::props_gen::cudaDeviceProp12, device: c_int) {
        let p = props12(client::client()?.device_info(device)?);
        // SAFETY: the CUDA 12 API passes a `cudaDeviceProp` of this layout (1032 bytes).
        unsafe { write_out(prop, p) }
    }

    fn cudaGetDeviceProperties_v2(prop: *mut crate::props_gen::cudaDeviceProp12, device: c_int) {
        let p = props12(client::client()?.device_info(device)?);
        // SAFETY: `_v2` exists in CUDA 12 only, with the CUDA 12 layout (1032 bytes).
        unsafe { write_out(prop, p) }
    }

    fn cudaDeviceGetAttribute(value: *mut c_int, attr: c_int, device: c_int) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { args::device_get_attribute(value, attr, device) }
    }

    fn cudaDeviceFlushGPUDirectRDMAWrites(target: c_int, scope: c_int) {
        // Makes GPUDirect RDMA writes of third-party devices (NICs) visible to the scope.
        // Nothing writes a vcuda device's memory that way, so there is never anything to
        // wait for; the arguments are checked as NVIDIA's runtime does (it answers success
        // on an H100).
        client::client()?;
        flush_rdma_args(target, scope)
    }

    fn cudaDeviceSynchronize() {
        device_synchronize()
    }

    fn cudaThreadSynchronize() {
        crate::core::capture::check_device_sync()?;
        synchronize(client::client()?)
    }

    fn cudaDeviceReset() {
        device_reset()
    }

    fn cudaThreadExit() {
        reset(client::client()?)
    }

    fn cudaMemGetInfo(free: *mut usize, total: *mut usize) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { args::mem_get_info(free, total) }
    }

    fn cudaDeviceSetLimit(lim: c_int, value: usize) {
        device_set_limit(lim, value)
    }

    fn cudaThreadSetLimit(lim: c_int, value: usize) {
        limit(client::client()?, lim as u32, Some(value as u64)).map(drop)
    }

    fn cudaDeviceGetLimit(value: *mut usize, lim: c_int) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { args::device_get_limit(value, lim) }
    }

    fn cudaThreadGetLimit(value: *mut usize, lim: c_int) {
        let v = limit(client::client()?, lim as u32, None)?;
        // SAFETY: output pointer from the caller, checked for null.
        unsafe { write_out(value, v as usize) }
    }

    fn cudaDeviceEnablePeerAccess(peer: c_int, flags: u32) {
        let c = client::client()?;
        if flags != 0 {
            return Err(Error::INVALID_VALUE);
        }
        // One device: the only candidate is the current device itself, which NVIDIA's
        // runtime refuses so (measured on an H100).
        c.check_device(peer)?;
        Err(Error(vcuda_protocol::status::PEER_ACCESS_UNSUPPORTED))
    }

    fn cudaDeviceDisablePeerAccess(peer: c_int) {
        let c = client::client()?;
        c.check_device(peer)?;
        // It never was enabled (see above), as the driver's cuCtxDisablePeerAccess answers
        // (which NVIDIA's static runtime calls).
        Err(Error(vcuda_protocol::status::PEER_ACCESS_NOT_ENABLED))
    }

    fn cudaDeviceGetP2PAttribute(value: *mut c_int, _attr: c_int, src: c_int, dst: c_int) {
        let c = client::client()?;
        c.check_device(src)?;
        c.check_device(dst)?;
        if value.is_null() {
            return Err(Error::INVALID_VALUE);
        }
        // One device: src == dst, which CUDA refuses.
        Err(Error::INVALID_DEVICE)
    }

    fn cudaDeviceCanAccessPeer(can: *mut c_int, device: c_int, peer: c_int) {
        let c = client::client()?;
        c.check_device(device)?;
        c.check_device(peer)?;
        // A device and itself: no (and no error, as NVIDIA's runtime says on an H100).
        // SAFETY: output pointer from the caller, checked for null.
        unsafe { write_out(can, 0) }
    }

    fn cudaDeviceGetStreamPriorityRange(least: *mut c_int, greatest: *mut c_int) {
        client::client()?;
        // SAFETY: output pointers from the caller; either may be null.
        unsafe { args::stream_priority_range(least, greatest) }
    }

    fn cudaDeviceSetCacheConfig(config: c_int) {
        device_set_cache_config(config)
    }

    fn cudaThreadSetCacheConfig(config: c_int) {
        client::client()?;
        if !(0..=3).contains(&config) {
            return Err(Error::INVALID_VALUE);
        }
        Ok(())
    }

    fn cudaDeviceGetCacheConfig(config: *mut c_int) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { args::device_get_cache_config(config) }
    }

    fn cudaThreadGetCacheConfig(config: *mut c_int) {
        client::client()?;
        // SAFETY: output pointer from the caller, checked for null.
        unsafe { write_out(config, 0) }
    }

    fn cudaInitDevice(device: c_int, _device_flags: u32, _flags: u32) {
        client::client()?.check_device(device).map(drop)
    }

}
