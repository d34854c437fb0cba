// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Calls that compose the core ones: host callbacks, stream-ordered allocation, occupancy,
//! peer copies, device selection and the profiler markers.

use crate::client::{self, Client};
use crate::core::capture::{capture_stream_handle, stream_handle};
use crate::core::registry;
use crate::error::{Error, Result};
use crate::ffi::cudaStream_t;
use crate::state;
use std::ffi::{c_int, c_void};
use vcuda_protocol::{HandleReq, attr, ops};

pub(crate) use crate::core::callback::HostFn;
/// `cudaStreamCallback_t`.
pub(crate) type StreamCallback = Option<crate::core::callback::StreamCallback>;

/// Waits for `stream` to reach this point: host work "enqueued" on a stream runs once
/// everything before it has completed. vcuda runs it in the calling thread right then,
/// which is one of the orders CUDA allows (the stream's later work waits for it).
pub(crate) fn drain(c: &Client, handle: u64) -> u32 {
    match c.call::<ops::StreamSynchronize>(&HandleReq { handle }) {
        Ok(_) => 0,
        Err(e) => e.0,
    }
}

/// Runs host function `f` in stream order on backend stream `stream` (see [`drain`]).
pub(crate) fn host_call(c: &Client, stream: u64, f: HostFn, user_data: *mut c_void) -> Result<()> {
    let st = drain(c, stream);
    if st != 0 {
        return Err(Error(st));
    }
    crate::core::callback::host(f, user_data);
    Ok(())
}

/// `cudaLaunchHostFunc`: runs `func`, or adds it to the graph `stream` captures.
pub(crate) fn launch_host_func(
    stream: cudaStream_t,
    func: Option<HostFn>,
    user_data: *mut c_void,
    ptsz: bool,
) -> Result<()> {
    let f = func.ok_or(Error::INVALID_VALUE)?;
    let c = client::client()?;
    let s = capture_stream_handle(c, stream, ptsz)?;
    let host = crate::core::graph::Host {
        func: f,
        data: user_data as usize,
    };
    if crate::core::capture::add(s, || Ok(crate::core::graph::Kind::Host(host)))? {
        return Ok(());
    }
    host_call(c, s, f, user_data)
}

/// `cudaOccupancyMaxActiveBlocksPerMultiprocessor`.
pub(crate) fn occupancy(func: *const c_void, block: c_int, smem: usize) -> Result<c_int> {
    let c = client::client()?;
    if block <= 0 {
        return Err(Error::INVALID_VALUE);
    }
    let f = registry::function(func as usize)
        .ok_or(Error::INVALID_DEVICE_FUNCTION)?
        .load(c)?;
    let n = max_active_blocks(c, &f.attrs, i64::from(block), smem as i64)?;
    Ok(n as c_int)
}

/// Blocks of `block` threads and `smem` bytes of dynamic shared memory of a kernel with
/// `attrs` that one multiprocessor holds at once (the occupancy calculator).
pub(crate) fn max_active_blocks(
    c: &Client,
    attrs: &vcuda_protocol::FuncAttrs,
    block: i64,
    smem: i64,
) -> Result<i64> {
    let info = c.device_info(state::device())?;
    let a = |n| i64::from(info.attr(n).unwrap_or(0));
    if block > a(attr::MAX_THREADS_PER_BLOCK) {
        return Ok(0);
    }
    let warps = (block + 31) / 32;
    let by_threads = a(attr::MAX_THREADS_PER_MULTI_PROCESSOR) / (warps * 32);
    let regs = i64::from(attrs.num_regs.max(1)) * warps * 32;
    let by_regs = if regs > 0 {
        a(attr::MAX_REGISTERS_PER_MULTIPROCESSOR) / regs
    } else {
        i64::MAX
    };
    let shared = attrs.shared_size_bytes as i64 + smem + a(attr::RESERVED_SHARED_MEMORY_PER_BLOCK);
    let by_smem = if shared > 0 {
        a(attr::MAX_SHARED_MEMORY_PER_MULTIPROCESSOR) / shared
    } else {
        i64::MAX
    };
    Ok(by_threads
        .min(by_regs)
        .min(by_smem)
        .min(a(attr::MAX_BLOCKS_PER_MULTIPROCESSOR))
        .max(0))
}

/// Checks a cooperative launch of `grid` blocks against what the device holds at once
/// (`cudaErrorCooperativeLaunchTooLarge`), and that the device supports them.
pub(crate) fn check_cooperative(
    c: &Client,
    attrs: &vcuda_protocol::FuncAttrs,
    grid: [u32; 3],
    block: [u32; 3],
    smem: u32,
) -> Result<()> {
    let info = c.device_info(state::device())?;
    if info.attr(attr::COOPERATIVE_LAUNCH).unwrap_or(0) == 0 {
        return Err(Error::NOT_SUPPORTED);
    }
    let threads = block
        .iter()
        .fold(1i64, |a, &b| a.saturating_mul(i64::from(b)));
    let per_sm = max_active_blocks(c, attrs, threads, i64::from(smem))?;
    let sms = i64::from(info.attr(attr::MULTI_PROCESSOR_COUNT).unwrap_or(0).max(0));
    let blocks = grid
        .iter()
        .fold(1i64, |a, &g| a.saturating_mul(i64::from(g)));
    if blocks > per_sm * sms {
        return Err(Error(vcuda_protocol::status::COOPERATIVE_LAUNCH_TOO_LARGE));
    }
    Ok(())
}

/// Most blocks in a thread-block cluster (CUDA's portable limit).
const MAX_CLUSTER_SIZE: u32 = 8;

/// Checks a launch's cluster shape before it is sent, as the driver checks it at launch:
/// the launch's shape (`Some` for a launch in clusters) or the kernel's compile-time one
/// (`__cluster_dims__`), not both unless equal, the grid divisible into it, at most eight
/// blocks; a kernel that must have one gets one. `cudaErrorInvalidClusterSize` otherwise,
/// `cudaErrorNotSupported` where the device runs no clusters.
pub(crate) fn check_cluster(
    c: &Client,
    attrs: &vcuda_protocol::FuncAttrs,
    grid: [u32; 3],
    given: Option<[u32; 3]>,
) -> Result<()> {
    let r = attrs.required_cluster;
    let required = [r[0], r[1], r[2]].map(u32::from);
    let required = (required != [0, 0, 0]).then_some(required);
    let invalid = Error(vcuda_protocol::status::INVALID_CLUSTER_SIZE);
    let shape = match (given, required) {
        (None, None) if r[3] & 1 == 0 => return Ok(()),
        (None, None) => return Err(invalid),
        (Some(g), Some(k)) if g != k => return Err(invalid),
        (Some(s), _) | (None, Some(s)) => s,
    };
    check_cluster_fits(c, grid, shape)
}

/// Checks that the device runs clusters (`cudaErrorNotSupported`) and that `grid` divides
/// into clusters of `shape` of at most eight blocks (`cudaErrorInvalidClusterSize`).
pub(crate) fn check_cluster_fits(c: &Client, grid: [u32; 3], shape: [u32; 3]) -> Result<()> {
    let info = c.device_info(state::device())?;
    if info.attr(attr::CLUSTER_LAUNCH).unwrap_or(0) == 0 {
        return Err(Error::NOT_SUPPORTED);
    }
    let size = shape
        .iter()
        .fold(1u64, |a, &d| a.saturating_mul(u64::from(d)));
    if shape.contains(&0)
        || size > u64::from(MAX_CLUSTER_SIZE)
        || grid.iter().zip(shape).any(|(g, s)| g % s != 0)
    {
        return Err(Error(vcuda_protocol::status::INVALID_CLUSTER_SIZE));
    }
    Ok(())
}

/// `cudaOccupancyMaxActiveClusters` (`size` false) or `cudaOccupancyMaxPotentialClusterSize`
/// of a launch of the kernel `f` with `cfg`, in clusters of `given` (the configuration's
/// cluster attribute) or of the kernel's own shape. The executor answers (on a GPU, the
/// driver), given what the occupancy calculator puts on one multiprocessor.
pub(crate) fn occupancy_cluster(
    c: &Client,
    f: &registry::LoadedFunc,
    (grid, block, smem): ([u32; 3], [u32; 3], usize),
    given: Option<[u32; 3]>,
    size: bool,
) -> Result<c_int> {
    let info = c.device_info(state::device())?;
    if info.attr(attr::CLUSTER_LAUNCH).unwrap_or(0) == 0 {
        return Err(Error::NOT_SUPPORTED);
    }
    let threads = block
        .iter()
        .fold(1i64, |a, &b| a.saturating_mul(i64::from(b)));
    let shared_mem = u32::try_from(smem).map_err(|_| Error::INVALID_VALUE)?;
    if threads == 0 {
        return Err(Error::INVALID_VALUE);
    }
    let per_sm = max_active_blocks(c, &f.attrs, threads, i64::from(shared_mem))?;
    let req = vcuda_protocol::OccupancyClusterReq {
        function: f.handle,
        grid,
        block,
        cluster: given.unwrap_or([0; 3]),
        shared_mem,
        query: if size {
            vcuda_protocol::OCCUPANCY_MAX_CLUSTER_SIZE
        } else {
            vcuda_protocol::OCCUPANCY_MAX_ACTIVE_CLUSTERS
        },
        blocks_per_sm: per_sm.clamp(0, i64::from(u32::MAX)) as u32,
    };
    let r = c.call::<ops::OccupancyCluster>(&req)?;
    Ok(r.value.min(i32::MAX as u32) as c_int)
}

/// `cudaDeviceGetPCIBusId`: the device's PCI address, `domain:bus:device.0`.
pub(crate) fn pci_bus_id(device: c_int) -> Result<String> {
    let info = client::client()?.device_info(device)?;
    let a = |n| info.attr(n).unwrap_or(0);
    Ok(format!(
        "{:04x}:{:02x}:{:02x}.0",
        a(attr::PCI_DOMAIN_ID),
        a(attr::PCI_BUS_ID),
        a(attr::PCI_DEVICE_ID)
    ))
}

/// `cudaLaunchHostFunc`: what the runtime's export does, for it and for the calls that share it.
pub(crate) fn launch_host_func_call(
    stream: cudaStream_t,
    func: Option<HostFn>,
    user_data: *mut c_void,
) -> Result<()> {
    launch_host_func(stream, func, user_data, false)
}

/// `cudaMemcpyPeer`: what the runtime's export does, for it and for the calls that share it.
pub(crate) fn memcpy_peer(
    dst: *mut c_void,
    dst_dev: c_int,
    src: *const c_void,
    src_dev: c_int,
    count: usize,
) -> Result<()> {
    let c = client::client()?;
    c.check_device(dst_dev)?;
    c.check_device(src_dev)?;
    crate::core::memory::memcpy_call(dst, src, count, crate::ffi::memcpy_kind::D2D)
}

/// `cudaMemcpyPeerAsync`: what the runtime's export does, for it and for the calls that share it.
pub(crate) fn memcpy_peer_async(
    dst: *mut c_void,
    dst_dev: c_int,
    src: *const c_void,
    src_dev: c_int,
    count: usize,
    stream: cudaStream_t,
) -> Result<()> {
    let c = client::client()?;
    c.check_device(dst_dev)?;
    c.check_device(src_dev)?;
    crate::core::memory::memcpy_async(dst, src, count, crate::ffi::memcpy_kind::D2D, stream)
}

/// `cudaStreamAddCallback`: what the runtime's export does, for it and for the calls that share it.
pub(crate) fn stream_add_callback(
    stream: cudaStream_t,
    cb: StreamCallback,
    user_data: *mut c_void,
    flags: u32,
) -> Result<()> {
    let f = cb.ok_or(Error::INVALID_VALUE)?;
    if flags != 0 {
        return Err(Error::INVALID_VALUE);
    }
    let c = client::client()?;
    let st = drain(c, stream_handle(c, stream, false)?);
    crate::core::callback::stream(f, stream, st, user_data);
    Ok(())
}
