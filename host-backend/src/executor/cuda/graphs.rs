// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Graphs on the GPU: a session's graph of kernels, device-to-device copies, memsets and
//! empty nodes (`GraphCreate`) becomes a CUDA graph, instantiated once; a launch is one
//! `cuGraphLaunch`, and the driver runs independent branches concurrently.
//!
//! Every node is checked when the graph is made, as the call it stands for checks it
//! (functions of the session, launch shapes, parameter sizes, copy and memset ranges inside
//! the session's allocations). The ranges are checked again at every launch, since the
//! program may free memory between launches. Graphs with event nodes, cooperative kernels,
//! kernels in clusters or copies from or to shared host memory, and any graph where the
//! driver lacks the graph calls, are left to the session's replay (`crate::graphs`), which
//! runs each node through its call.

use std::ffi::c_void;

use cudarc::driver::sys::{CUDA_MEMCPY3D, CUDA_MEMSET_NODE_PARAMS, CUmemorytype};
use log::debug;
use vcuda_protocol::graph::NodeWork;
use vcuda_protocol::region::{self, Region};

use super::error::to_status;
use super::modules::with_params;
use super::state::stream_ref;
use super::state::{NativeGraph, PARAM_BUF_LEN};
use super::{CudaExecutor, context_of};
use crate::executor::{ExecResult, GraphNode, Status};

/// A copy node's two regions (none for an empty copy).
fn copy_regions(c: &vcuda_protocol::MemcpyDtoDReq) -> ExecResult<Option<(Region, Region)>> {
    let d = Region::new(c.dst, c.dpitch, c.width, c.height)?;
    let s = Region::new(c.src, c.spitch, c.width, c.height)?;
    Ok((d.packed_len() != 0).then_some((d, s)))
}

/// A memset node's region (none for an empty memset), checked as `cudaMemset2D` is.
fn memset_region(m: &vcuda_protocol::MemsetReq) -> ExecResult<Option<Region>> {
    let es = u64::from(m.elem_size);
    let row = region::memset_row_bytes(m.width, es)?;
    let r = Region::new(m.dst, m.pitch, row, m.height)?;
    if r.packed_len() == 0 {
        return Ok(None);
    }
    if !m.dst.is_multiple_of(es) || r.pitch() % es != 0 {
        return Err(Status::INVALID_VALUE);
    }
    Ok(Some(r))
}

/// A copy node's parameters: device region `s` to device region `d` (same shape).
fn device_copy(d: &Region, s: &Region) -> CUDA_MEMCPY3D {
    let dev = CUmemorytype::CU_MEMORYTYPE_DEVICE;
    CUDA_MEMCPY3D {
        srcXInBytes: 0,
        srcY: 0,
        srcZ: 0,
        srcLOD: 0,
        srcMemoryType: dev,
        srcHost: std::ptr::null(),
        srcDevice: s.base(),
        srcArray: std::ptr::null_mut(),
        reserved0: std::ptr::null_mut(),
        srcPitch: s.pitch() as usize,
        srcHeight: s.height() as usize,
        dstXInBytes: 0,
        dstY: 0,
        dstZ: 0,
        dstLOD: 0,
        dstMemoryType: dev,
        dstHost: std::ptr::null_mut(),
        dstDevice: d.base(),
        dstArray: std::ptr::null_mut(),
        reserved1: std::ptr::null_mut(),
        dstPitch: d.pitch() as usize,
        dstHeight: d.height() as usize,
        WidthInBytes: d.width() as usize,
        Height: d.height() as usize,
        Depth: 1,
    }
}

impl CudaExecutor {
    /// See [`crate::executor::GraphOps::graph_instantiate`].
    pub(super) fn graph_instantiate_impl(
        &mut self,
        nodes: &[GraphNode],
    ) -> ExecResult<Option<u64>> {
        if !self.shared.driver.graphs
            || nodes.iter().any(|n| {
                matches!(
                    n.work,
                    NodeWork::EventRecord(_)
                        | NodeWork::EventWait(_)
                        | NodeWork::Kernel(_, _, true)
                        | NodeWork::KernelCluster(..)
                        | NodeWork::CopyToDeviceShared(_)
                        | NodeWork::CopyToHostShared(_)
                )
            })
        {
            return Ok(None);
        }
        let ctx = context_of(&self.ctx)?;
        let mut b = ctx.graph_builder(&self.shared.driver).map_err(to_status)?;
        let mut buf = Box::new([0u8; PARAM_BUF_LEN]);
        let mut args: Vec<*mut c_void> = Vec::new();
        let mut regions = Vec::new();
        // Each node is checked before the driver is given it; a failure drops the builder,
        // which destroys the graph so far.
        for n in nodes {
            let deps = &n.deps;
            // SAFETY (each arm): the context is current (the builder bound it and nothing
            // else runs on this thread meanwhile); ranges and functions are checked first.
            let r = match &n.work {
                // Replayed node by node (the check above).
                NodeWork::KernelCluster(..) => return Ok(None),
                NodeWork::Kernel(l, params, _) => {
                    self.check_launch_config(l)?;
                    if params.len() > PARAM_BUF_LEN || params.len() != l.param_len as usize {
                        return Err(Status::INVALID_VALUE);
                    }
                    let f = self
                        .functions
                        .get(l.function)
                        .map_err(|_| Status::INVALID_DEVICE_FUNCTION)?;
                    buf.fill(0);
                    buf[..params.len()].copy_from_slice(params);
                    let layout = f.info.params.as_deref();
                    let cfg = (l.grid, l.block, l.shared_mem);
                    // SAFETY: as above; the pointers are as `with_params` says (it checks
                    // the layout), and the driver copies the parameters.
                    let add = |kp, ep| unsafe { b.kernel(deps, &f.kernel, cfg, kp, ep) };
                    with_params(&mut buf, params.len(), layout, &mut args, add)?
                }
                NodeWork::Copy(c) => match copy_regions(c)? {
                    None => {
                        // SAFETY: as above.
                        unsafe { b.empty(deps) }
                    }
                    Some((d, s)) => {
                        self.allocs.check_region(&d)?;
                        self.allocs.check_region(&s)?;
                        let p = device_copy(&d, &s);
                        regions.extend([d, s]);
                        // SAFETY: as above: both regions lie in the session's allocations.
                        unsafe { b.copy(deps, &p) }
                    }
                },
                NodeWork::Memset(m) => match memset_region(m)? {
                    None => {
                        // SAFETY: as above.
                        unsafe { b.empty(deps) }
                    }
                    Some(r) => {
                        self.allocs.check_region(&r)?;
                        let p = CUDA_MEMSET_NODE_PARAMS {
                            dst: r.base(),
                            pitch: r.pitch() as usize,
                            value: m.value,
                            elementSize: u32::from(m.elem_size),
                            width: m.width as usize,
                            height: r.height() as usize,
                        };
                        regions.push(r);
                        // SAFETY: as above: the rows lie in the session's allocations.
                        unsafe { b.memset(deps, &p) }
                    }
                },
                // SAFETY: as above.
                NodeWork::Empty => unsafe { b.empty(deps) },
                // Refused above (left to the session's replay).
                NodeWork::EventRecord(_)
                | NodeWork::EventWait(_)
                | NodeWork::CopyToDeviceShared(_)
                | NodeWork::CopyToHostShared(_) => return Ok(None),
            };
            r.map_err(to_status)?;
        }
        let graph = b.finish().map_err(to_status)?;
        let h = self.graphs.insert(NativeGraph { graph, regions })?;
        debug!(
            "a graph of {} nodes made on the device ({h:#x})",
            nodes.len()
        );
        Ok(Some(h))
    }

    /// See [`crate::executor::GraphOps::graph_launch`].
    pub(super) fn graph_launch_impl(&mut self, graph: u64, stream: u64) -> ExecResult<()> {
        let g = self.graphs.get(graph)?;
        // The program may have freed memory since the graph was made.
        for r in &g.regions {
            self.allocs.check_region(r)?;
        }
        let s = stream_ref(&self.streams, stream)?;
        self.bind()?;
        self.may_print = true;
        g.graph.launch(s).map_err(to_status)
    }
}
