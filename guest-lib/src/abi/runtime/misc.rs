// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Calls that compose the core ones: host callbacks, stream-ordered allocation, occupancy,
//! peer copies, device selection and the profiler markers.

use crate::client::{self};
use crate::core::launch::cudaLaunchConfig_t;
use crate::core::misc::*;
use crate::error::Error;
use crate::ffi::{cudaStream_t, write_out};
use crate::props_gen::cudaDeviceProp13;
use std::ffi::{c_char, c_int, c_void};
use vcuda_protocol::attr;

/// The cluster occupancy calls: the configuration read from C.
///
/// # Safety
///
/// `config` is null or readable, and its `attrs` null or `num_attrs` attributes.
unsafe fn occupancy_clusters(
    func: *const c_void,
    config: *const cudaLaunchConfig_t,
    size: bool,
) -> crate::error::Result<c_int> {
    let c = client::client()?;
    let f = crate::core::launch::loaded(c, func)?;
    // SAFETY: the caller's configuration, checked for null.
    let cfg = unsafe { config.as_ref() }.ok_or(Error::INVALID_VALUE)?;
    // SAFETY: `num_attrs` attributes at `attrs` (the API's contract).
    let attrs = unsafe { crate::ffi::slice_in(cfg.attrs, cfg.num_attrs as usize)? };
    let given = crate::core::function::cluster_attribute(attrs);
    let shape = (cfg.grid.arr(), cfg.block.arr(), cfg.dynamic_smem);
    occupancy_cluster(c, &f, shape, given, size)
}

entry! {
    fn cudaLaunchHostFunc(stream: cudaStream_t, func: Option<HostFn>, user_data: *mut c_void) {
        launch_host_func_call(stream, func, user_data)
    }

    fn cudaLaunchHostFunc_ptsz(stream: cudaStream_t, func: Option<HostFn>, user_data: *mut c_void) {
        launch_host_func(stream, func, user_data, true)
    }

    fn cudaStreamAddCallback(stream: cudaStream_t, cb: StreamCallback, user_data: *mut c_void, flags: u32) {
        stream_add_callback(stream, cb, user_data, flags)
    }

    fn cudaOccupancyMaxActiveBlocksPerMultiprocessor(num_blocks: *mut c_int, func: *const c_void, block: c_int, smem: usize) {
        let n = occupancy(func, block, smem)?;
        // SAFETY: the caller's output pointer, checked for null by `write_out`.
        unsafe { crate::ffi::write_out(num_blocks, n) }
    }

    fn cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(num_blocks: *mut c_int, func: *const c_void, block: c_int, smem: usize, _flags: u32) {
        let n = occupancy(func, block, smem)?;
        // SAFETY: the caller's output pointer, checked for null by `write_out`.
        unsafe { crate::ffi::write_out(num_blocks, n) }
    }

    fn cudaOccupancyMaxActiveClusters(clusters: *mut c_int, func: *const c_void, config: *const cudaLaunchConfig_t) {
        // SAFETY: the caller's configuration and its attributes (the API's contract).
        let n = unsafe { occupancy_clusters(func, config, false) }?;
        // SAFETY: the caller's output pointer, checked for null by `write_out`.
        unsafe { crate::ffi::write_out(clusters, n) }
    }

    fn cudaOccupancyMaxPotentialClusterSize(size: *mut c_int, func: *const c_void, config: *const cudaLaunchConfig_t) {
        // SAFETY: as above.
        let n = unsafe { occupancy_clusters(func, config, true) }?;
        // SAFETY: the caller's output pointer, checked for null by `write_out`.
        unsafe { crate::ffi::write_out(size, n) }
    }

    fn cudaMemcpyPeer(dst: *mut c_void, dst_dev: c_int, src: *const c_void, src_dev: c_int, count: usize) {
        memcpy_peer(dst, dst_dev, src, src_dev, count)
    }

    fn cudaMemcpyPeerAsync(dst: *mut c_void, dst_dev: c_int, src: *const c_void, src_dev: c_int, count: usize, stream: cudaStream_t) {
        memcpy_peer_async(dst, dst_dev, src, src_dev, count, stream)
    }

    fn cudaDeviceGetPCIBusId(bus_id: *mut c_char, len: c_int, device: c_int) {
        let id = pci_bus_id(device)?;
        // SAFETY: the caller's buffer of `len` bytes.
        unsafe { crate::ffi::write_c_string(bus_id, len, &id) }
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
