// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Calls that compose the core ones: host callbacks, stream-ordered allocation, occupancy,
//! peer copies, device selection and the profiler markers.

use crate::client::{self};
use crate::core::misc::*;
use crate::core::stream::stream_handle;
use crate::error::Error;
use crate::ffi::{cudaStream_t, write_out};
use crate::props_gen::cudaDeviceProp13;
use std::ffi::{c_char, c_int, c_void};
use vcuda_protocol::attr;

entry! {
    fn cudaLaunchHostFunc(stream: cudaStream_t, func: Option<HostFn>, user_data: *mut c_void) {
        launch_host_func(stream, func, user_data, false)
    }

    fn cudaLaunchHostFunc_ptsz(stream: cudaStream_t, func: Option<HostFn>, user_data: *mut c_void) {
        launch_host_func(stream, func, user_data, true)
    }

    fn cudaStreamAddCallback(stream: cudaStream_t, cb: StreamCallback, user_data: *mut c_void, flags: u32) {
        let f = cb.ok_or(Error::INVALID_VALUE)?;
        if flags != 0 {
            return Err(Error::INVALID_VALUE);
        }
        let c = client::client()?;
        let st = drain(c, stream_handle(c, stream, false)?);
        // SAFETY: the program's callback, called with the stream's status, as CUDA does.
        unsafe { f(stream, st, user_data) };
        Ok(())
    }

    fn cudaOccupancyMaxActiveBlocksPerMultiprocessor(num_blocks: *mut c_int, func: *const c_void, block: c_int, smem: usize) {
        occupancy(num_blocks, func, block, smem)
    }

    fn cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(num_blocks: *mut c_int, func: *const c_void, block: c_int, smem: usize, _flags: u32) {
        occupancy(num_blocks, func, block, smem)
    }

    fn cudaMemcpyPeer(dst: *mut c_void, dst_dev: c_int, src: *const c_void, src_dev: c_int, count: usize) {
        let c = client::client()?;
        c.check_device(dst_dev)?;
        c.check_device(src_dev)?;
        // SAFETY: forwarding the caller's pointers.
        match unsafe { crate::abi::runtime::memory::cudaMemcpy(dst, src, count, crate::ffi::memcpy_kind::D2D) } {
            0 => Ok(()),
            e => Err(Error(e)),
        }
    }

    fn cudaMemcpyPeerAsync(dst: *mut c_void, dst_dev: c_int, src: *const c_void, src_dev: c_int, count: usize, stream: cudaStream_t) {
        let c = client::client()?;
        c.check_device(dst_dev)?;
        c.check_device(src_dev)?;
        // SAFETY: forwarding the caller's pointers.
        match unsafe { crate::abi::runtime::memory::cudaMemcpyAsync(dst, src, count, crate::ffi::memcpy_kind::D2D, stream) } {
            0 => Ok(()),
            e => Err(Error(e)),
        }
    }

    fn cudaDeviceGetPCIBusId(bus_id: *mut c_char, len: c_int, device: c_int) {
        let info = client::client()?.device_info(device)?;
        let a = |n| info.attr(n).unwrap_or(0);
        let s = format!("{:04x}:{:02x}:{:02x}.0\0", a(attr::PCI_DOMAIN_ID), a(attr::PCI_BUS_ID), a(attr::PCI_DEVICE_ID));
        if bus_id.is_null() || len <= 0 {
            return Err(Error::INVALID_VALUE);
        }
        let n = s.len().min(len as usize);
        // SAFETY: the caller's buffer of `len` bytes; at most `len` are written and the last
        // one is a NUL.
        unsafe {
            std::ptr::copy_nonoverlapping(s.as_ptr(), bus_id.cast::<u8>(), n);
            *bus_id.add(n - 1) = 0;
        }
        Ok(())
    }

    // Profiler markers: vcuda has no profiler to start, so they only make sure the runtime
    // is initialized (which is what they do first in CUDA) and succeed.
    fn cudaProfilerStart() {
        client::client().map(drop)
    }

    fn cudaProfilerStop() {
        client::client().map(drop)
    }

    fn cudaChooseDevice(device: *mut c_int, prop: *const cudaDeviceProp13) {
        let c = client::client()?;
        if prop.is_null() {
            return Err(Error::INVALID_VALUE);
        }
        // Every device is as good as another for vcuda's purposes; the first one that
        // meets the requested compute capability wins, else device 0.
        // SAFETY: the caller's CUDA 13 `cudaDeviceProp`; only the version fields are read.
        let (major, minor) = unsafe { ((*prop).major, (*prop).minor) };
        let mut best = 0;
        for d in 0..c.device_count() {
            let i = c.device_info(d)?;
            let cc = (i.attr(attr::COMPUTE_CAPABILITY_MAJOR).unwrap_or(0), i.attr(attr::COMPUTE_CAPABILITY_MINOR).unwrap_or(0));
            if cc >= (major, minor) {
                best = d;
                break;
            }
        }
        // SAFETY: output pointer from the caller, checked for null.
        unsafe { write_out(device, best) }
    }
}
