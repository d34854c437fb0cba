// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Graphs (`cuGraph*`).

use cudarc::driver::sys::{self, CUcontext, CUgraph, CUgraphExec, CUgraphNode, CUstream};

use super::{DrvResult, ok};
use crate::executor::cuda::ffi;

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
    /// A kernel: its parameters (the pointers inside them as
    /// [`launch_kernel`](super::launch_kernel) requires).
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
/// `g` is live and `deps` are nodes of it; `ctx` is live and current. A kernel's function is live
/// and its parameter pointers are as [`launch_kernel`](super::launch_kernel) requires (the driver
/// copies them); a copy's or memset's device ranges are memory of `ctx`.
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
