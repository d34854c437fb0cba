// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The C arguments of the graph-building calls (`cudaGraph*`, and the driver's `cuGraph*`,
//! which take the same objects) turned into values for [`crate::core::graph_build`], and its
//! results written back: node lists in CUDA's query convention, output handles and
//! parameter structs. Shared by `runtime/graph.rs` and `driver/graph.rs`.
//!
//! Each function is `unsafe`: its pointers must be valid as the C API requires of its
//! caller (arrays of the stated length, writable outputs); null pointers are checked here,
//! in the order the runtime checks them.

use crate::abi::graph_ptrs::{check_edge_data, fill_pairs, handles};
use crate::core::graph::cudaGraphExec_t;
use crate::core::graph::{cudaGraph_t, cudaGraphNode_t, cudaHostNodeParams, cudaMemsetParams};
use crate::core::graph_build as gb;
use crate::core::graph_exec::{cudaGraphExecUpdateResultInfo, cudaGraphInstantiateParams};
use crate::error::{Error, Result};
use crate::ffi::{cudaEvent_t, read_in, write_out};
use std::ffi::c_uint;

/// Adds the node `make(deps)` makes and writes its handle to `out`: `out` is checked first,
/// then the dependency array, then `make` runs.
///
/// # Safety
///
/// `out` is null or writable; `deps` is null or holds `ndeps` handles.
unsafe fn out_node(
    out: *mut cudaGraphNode_t,
    deps: *const cudaGraphNode_t,
    ndeps: usize,
    make: impl FnOnce(&[u64]) -> Result<u64>,
) -> Result<()> {
    if out.is_null() {
        return Err(Error::INVALID_VALUE);
    }
    // SAFETY: the caller's dependency array.
    let deps = unsafe { handles(deps, ndeps)? };
    let id = make(&deps)?;
    // SAFETY: checked non-null; the caller's output pointer.
    unsafe { write_out(out, id as cudaGraphNode_t) }
}

/// Writes a list of nodes in CUDA's query convention (see [`fill_pairs`]).
///
/// # Safety
///
/// As [`fill_pairs`].
unsafe fn nodes_out(
    out: *mut cudaGraphNode_t,
    edge_data: *mut u8,
    num: *mut usize,
    nodes: &[u64],
) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe {
        fill_pairs(out, std::ptr::null_mut(), edge_data, num, nodes, |&n| {
            (n, 0)
        })
    }
}

/// `cudaGraphAddChildGraphNode`.
///
/// # Safety
///
/// As [`out_node`].
pub(crate) unsafe fn graph_add_child_graph_node(
    out: *mut cudaGraphNode_t,
    g: cudaGraph_t,
    deps: *const cudaGraphNode_t,
    ndeps: usize,
    child: cudaGraph_t,
) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe {
        out_node(out, deps, ndeps, |deps| {
            gb::graph_add_child_graph_node(g as u64, deps, child as u64)
        })
    }
}

/// `cudaGraphAddDependencies` (`edge_data` null for the calls without it).
///
/// # Safety
///
/// `from` and `to` hold `n` handles each (null only if `n` is 0); `edge_data` as
/// `check_edge_data` requires.
pub(crate) unsafe fn graph_add_dependencies(
    g: cudaGraph_t,
    from: *const cudaGraphNode_t,
    to: *const cudaGraphNode_t,
    edge_data: *const u8,
    n: usize,
) -> Result<()> {
    // SAFETY: the caller's arrays.
    let (from, to) = unsafe {
        check_edge_data(edge_data, n)?;
        (handles(from, n)?, handles(to, n)?)
    };
    gb::graph_add_dependencies(g as u64, &from, &to)
}

/// `cudaGraphRemoveDependencies` (`edge_data` null for the calls without it).
///
/// # Safety
///
/// As [`graph_add_dependencies`].
pub(crate) unsafe fn graph_remove_dependencies(
    g: cudaGraph_t,
    from: *const cudaGraphNode_t,
    to: *const cudaGraphNode_t,
    edge_data: *const u8,
    n: usize,
) -> Result<()> {
    // SAFETY: the caller's arrays.
    let (from, to) = unsafe {
        check_edge_data(edge_data, n)?;
        (handles(from, n)?, handles(to, n)?)
    };
    gb::graph_remove_dependencies(g as u64, &from, &to)
}

/// `cudaGraphAddEmptyNode`.
///
/// # Safety
///
/// As [`out_node`].
pub(crate) unsafe fn graph_add_empty_node(
    out: *mut cudaGraphNode_t,
    g: cudaGraph_t,
    deps: *const cudaGraphNode_t,
    ndeps: usize,
) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe {
        out_node(out, deps, ndeps, |deps| {
            gb::graph_add_node(g as u64, deps, crate::core::graph::Kind::Empty)
        })
    }
}

/// `cudaGraphAddEventRecordNode`.
///
/// # Safety
///
/// As [`out_node`].
pub(crate) unsafe fn graph_add_event_record_node(
    out: *mut cudaGraphNode_t,
    g: cudaGraph_t,
    deps: *const cudaGraphNode_t,
    ndeps: usize,
    e: cudaEvent_t,
) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe {
        out_node(out, deps, ndeps, |deps| {
            gb::graph_add_node(g as u64, deps, gb::event_record_kind(e)?)
        })
    }
}

/// `cudaGraphAddEventWaitNode`.
///
/// # Safety
///
/// As [`out_node`].
pub(crate) unsafe fn graph_add_event_wait_node(
    out: *mut cudaGraphNode_t,
    g: cudaGraph_t,
    deps: *const cudaGraphNode_t,
    ndeps: usize,
    e: cudaEvent_t,
) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe {
        out_node(out, deps, ndeps, |deps| {
            gb::graph_add_node(g as u64, deps, gb::event_wait_kind(e)?)
        })
    }
}

/// `cudaGraphAddHostNode`.
///
/// # Safety
///
/// As [`out_node`]; `p` is null or readable.
pub(crate) unsafe fn graph_add_host_node(
    out: *mut cudaGraphNode_t,
    g: cudaGraph_t,
    deps: *const cudaGraphNode_t,
    ndeps: usize,
    p: *const cudaHostNodeParams,
) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe {
        out_node(out, deps, ndeps, |deps| {
            gb::graph_add_node(g as u64, deps, gb::host_kind(&read_in(p)?)?)
        })
    }
}

/// `cudaGraphAddMemsetNode`.
///
/// # Safety
///
/// As [`out_node`]; `p` is null or readable.
pub(crate) unsafe fn graph_add_memset_node(
    out: *mut cudaGraphNode_t,
    g: cudaGraph_t,
    deps: *const cudaGraphNode_t,
    ndeps: usize,
    p: *const cudaMemsetParams,
) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe {
        out_node(out, deps, ndeps, |deps| {
            gb::graph_add_node(g as u64, deps, gb::memset_kind(&read_in(p)?)?)
        })
    }
}

/// `cudaGraphChildGraphNodeGetGraph`.
///
/// # Safety
///
/// `out` is null or writable.
pub(crate) unsafe fn graph_child_graph_node_get_graph(
    node: cudaGraphNode_t,
    out: *mut cudaGraph_t,
) -> Result<()> {
    let g = gb::graph_child_graph_node_get_graph(node as u64)?;
    // SAFETY: the caller's output pointer; `write_out` checks it for null.
    unsafe { write_out(out, g as cudaGraph_t) }
}

/// `cudaGraphClone` (no clone is made if `out` is null).
///
/// # Safety
///
/// `out` is null or writable.
pub(crate) unsafe fn graph_clone(out: *mut cudaGraph_t, g: cudaGraph_t) -> Result<()> {
    if out.is_null() {
        return Err(Error::INVALID_VALUE);
    }
    let copy = gb::graph_clone(g as u64)?;
    // SAFETY: checked non-null; the caller's output pointer.
    unsafe { write_out(out, copy as cudaGraph_t) }
}

/// `cudaGraphCreate` (no graph is made if `out` is null).
///
/// # Safety
///
/// `out` is null or writable.
pub(crate) unsafe fn graph_create(out: *mut cudaGraph_t, flags: c_uint) -> Result<()> {
    if out.is_null() {
        return Err(Error::INVALID_VALUE);
    }
    let g = gb::graph_create(flags)?;
    // SAFETY: checked non-null; the caller's output pointer.
    unsafe { write_out(out, g as cudaGraph_t) }
}

/// `cudaGraphGetEdges` (`edge_data` null for the calls without it).
///
/// # Safety
///
/// `num` is null or readable and writable; `from`, `to` and `edge_data` are null or hold
/// `*num` entries.
pub(crate) unsafe fn graph_get_edges(
    g: cudaGraph_t,
    from: *mut cudaGraphNode_t,
    to: *mut cudaGraphNode_t,
    edge_data: *mut u8,
    num: *mut usize,
) -> Result<()> {
    if from.is_null() != to.is_null() {
        return Err(Error::INVALID_VALUE);
    }
    let edges = gb::graph_get_edges(g as u64)?;
    // SAFETY: the caller's contract.
    unsafe { fill_pairs(from, to, edge_data, num, &edges, |&e| e) }
}

/// `cudaGraphGetNodes`.
///
/// # Safety
///
/// `num` is null or readable and writable; `out` is null or holds `*num` entries.
pub(crate) unsafe fn graph_get_nodes(
    g: cudaGraph_t,
    out: *mut cudaGraphNode_t,
    num: *mut usize,
) -> Result<()> {
    // SAFETY: the caller\'s contract.
    unsafe {
        nodes_out(
            out,
            std::ptr::null_mut(),
            num,
            &gb::graph_get_nodes(g as u64)?,
        )
    }
}

/// `cudaGraphGetRootNodes`.
///
/// # Safety
///
/// As [`graph_get_nodes`].
pub(crate) unsafe fn graph_get_root_nodes(
    g: cudaGraph_t,
    out: *mut cudaGraphNode_t,
    num: *mut usize,
) -> Result<()> {
    // SAFETY: the caller\'s contract.
    unsafe {
        nodes_out(
            out,
            std::ptr::null_mut(),
            num,
            &gb::graph_get_root_nodes(g as u64)?,
        )
    }
}

/// `cudaGraphNodeGetDependencies` (`edge_data` null for the calls without it).
///
/// # Safety
///
/// As [`graph_get_nodes`], and `edge_data` is null or holds `*num` entries.
pub(crate) unsafe fn graph_node_get_dependencies(
    node: cudaGraphNode_t,
    out: *mut cudaGraphNode_t,
    edge_data: *mut u8,
    num: *mut usize,
) -> Result<()> {
    let deps = gb::graph_node_get_dependencies(node as u64)?;
    // SAFETY: the caller\'s contract.
    unsafe { nodes_out(out, edge_data, num, &deps) }
}

/// `cudaGraphNodeGetDependentNodes` (`edge_data` null for the calls without it).
///
/// # Safety
///
/// As [`graph_node_get_dependencies`].
pub(crate) unsafe fn graph_node_get_dependent_nodes(
    node: cudaGraphNode_t,
    out: *mut cudaGraphNode_t,
    edge_data: *mut u8,
    num: *mut usize,
) -> Result<()> {
    let v = gb::graph_node_get_dependent_nodes(node as u64)?;
    // SAFETY: the caller\'s contract.
    unsafe { nodes_out(out, edge_data, num, &v) }
}

/// `cudaGraphHostNodeGetParams`.
///
/// # Safety
///
/// `out` is null or writable.
pub(crate) unsafe fn graph_host_node_get_params(
    node: cudaGraphNode_t,
    out: *mut cudaHostNodeParams,
) -> Result<()> {
    let p = gb::graph_host_node_get_params(node as u64)?;
    // SAFETY: the caller's output pointer; `write_out` checks it for null.
    unsafe { write_out(out, p) }
}

/// `cudaGraphHostNodeSetParams`.
///
/// # Safety
///
/// `p` is null or readable.
pub(crate) unsafe fn graph_host_node_set_params(
    node: cudaGraphNode_t,
    p: *const cudaHostNodeParams,
) -> Result<()> {
    // SAFETY: the caller's contract.
    let p = unsafe { read_in(p)? };
    crate::core::graph::set_kind(node, gb::host_kind(&p)?)
}

/// `cudaGraphMemsetNodeGetParams`.
///
/// # Safety
///
/// `out` is null or writable.
pub(crate) unsafe fn graph_memset_node_get_params(
    node: cudaGraphNode_t,
    out: *mut cudaMemsetParams,
) -> Result<()> {
    let p = gb::graph_memset_node_get_params(node as u64)?;
    // SAFETY: the caller's output pointer; `write_out` checks it for null.
    unsafe { write_out(out, p) }
}

/// `cudaGraphMemsetNodeSetParams`.
///
/// # Safety
///
/// `p` is null or readable.
pub(crate) unsafe fn graph_memset_node_set_params(
    node: cudaGraphNode_t,
    p: *const cudaMemsetParams,
) -> Result<()> {
    // SAFETY: the caller's contract.
    let p = unsafe { read_in(p)? };
    crate::core::graph::set_kind(node, gb::memset_kind(&p)?)
}

/// `cudaGraphNodeFindInClone`.
///
/// # Safety
///
/// `out` is null or writable.
pub(crate) unsafe fn graph_node_find_in_clone(
    out: *mut cudaGraphNode_t,
    node: cudaGraphNode_t,
    clone: cudaGraph_t,
) -> Result<()> {
    let n = gb::graph_node_find_in_clone(node as u64, clone as u64)?;
    // SAFETY: the caller's output pointer; `write_out` checks it for null.
    unsafe { write_out(out, n as cudaGraphNode_t) }
}

/// `cudaGraphNodeGetType`.
///
/// # Safety
///
/// `out` is null or writable.
pub(crate) unsafe fn graph_node_get_type(node: cudaGraphNode_t, out: *mut u32) -> Result<()> {
    let t = gb::graph_node_get_type(node as u64)?;
    // SAFETY: the caller's output pointer; `write_out` checks it for null.
    unsafe { write_out(out, t) }
}

/// `cudaGraphDestroy`.
pub(crate) fn graph_destroy(g: cudaGraph_t) -> Result<()> {
    gb::graph_destroy(g as u64)
}

/// `cudaGraphDestroyNode`.
pub(crate) fn graph_destroy_node(node: cudaGraphNode_t) -> Result<()> {
    gb::graph_destroy_node(node as u64)
}

/// `cudaUserObjectCreate`.
///
/// # Safety
///
/// `out` is null or writable.
pub(crate) unsafe fn user_object_create(
    out: *mut crate::core::user_object::cudaUserObject_t,
    ptr: *mut std::ffi::c_void,
    destroy: Option<crate::core::misc::HostFn>,
    initial: c_uint,
    flags: c_uint,
) -> Result<()> {
    let id = crate::core::user_object::create(out.is_null(), ptr, destroy, initial, flags)?;
    // SAFETY: non-null (`create` refused a null one); the caller's output pointer.
    unsafe { write_out(out, id as crate::core::user_object::cudaUserObject_t) }
}

/// `cudaGraphInstantiate` (`upload`: the flags may ask for an upload, as
/// `cudaGraphInstantiateWithParams`'s do).
///
/// # Safety
///
/// `out` is null or writable.
pub(crate) unsafe fn instantiate(
    out: *mut cudaGraphExec_t,
    g: cudaGraph_t,
    flags: u64,
    upload: bool,
) -> Result<()> {
    let exec = crate::core::graph_exec::instantiate(!out.is_null(), g, flags, upload)?;
    // SAFETY: non-null (`instantiate` refused a null one); the caller's output pointer.
    unsafe { write_out(out, exec as cudaGraphExec_t) }
}

/// `cudaGraphInstantiateWithParams`: `p` is checked first; its `err_node_out` and
/// `result_out` are written once the graph is instantiated or refused.
///
/// # Safety
///
/// `out` is null or writable; `p` is null or readable and writable.
pub(crate) unsafe fn instantiate_with_params(
    out: *mut cudaGraphExec_t,
    g: cudaGraph_t,
    p: *mut cudaGraphInstantiateParams,
    ptsz: bool,
) -> Result<()> {
    // SAFETY: the caller's parameters, checked for null.
    let p = unsafe { p.as_mut() }.ok_or(Error::INVALID_VALUE)?;
    let (r, result) = crate::core::graph_exec::instantiate_with_params(
        !out.is_null(),
        g,
        p.flags,
        p.upload_stream,
        ptsz,
    );
    p.err_node_out = std::ptr::null_mut();
    p.result_out = result;
    let (exec, uploaded) = r?;
    // SAFETY: non-null (`instantiate` refused a null one); the caller's output pointer.
    unsafe { write_out(out, exec as cudaGraphExec_t)? };
    uploaded
}

/// `cudaGraphExecUpdate` (CUDA 12's form; `info` may be null).
///
/// # Safety
///
/// `info` is null or writable.
pub(crate) unsafe fn exec_update(
    exec: cudaGraphExec_t,
    g: cudaGraph_t,
    info: *mut cudaGraphExecUpdateResultInfo,
) -> Result<()> {
    let i = crate::core::graph_exec::update(exec, g)?;
    let status = crate::core::graph_exec::update_status(&i);
    if !info.is_null() {
        // SAFETY: checked non-null; the caller's output struct.
        unsafe { write_out(info, i)? };
    }
    status
}

/// `cudaGraphEventRecordNodeGetEvent`, or with `wait` `cudaGraphEventWaitNodeGetEvent`: a
/// node of the other kind is `INVALID_VALUE`.
///
/// # Safety
///
/// `out` is null or writable.
pub(crate) unsafe fn graph_event_node_get_event(
    node: cudaGraphNode_t,
    out: *mut cudaEvent_t,
    wait: bool,
) -> Result<()> {
    use crate::core::graph::Kind;
    let e = crate::core::graph::get_kind(node, |k| match (k, wait) {
        (Kind::EventRecord(e), false) | (Kind::EventWait(e), true) => Some(*e),
        _ => None,
    })?;
    // SAFETY: the caller's output pointer, checked for null.
    unsafe { write_out(out, e as cudaEvent_t) }
}

/// `cudaGraphEventRecordNodeSetEvent`, or with `wait` `cudaGraphEventWaitNodeSetEvent`.
pub(crate) fn graph_event_node_set_event(
    node: cudaGraphNode_t,
    e: cudaEvent_t,
    wait: bool,
) -> Result<()> {
    use crate::core::graph::{Kind, event, set_kind};
    let e = event(e)?;
    let kind = if wait {
        Kind::EventWait(e)
    } else {
        Kind::EventRecord(e)
    };
    set_kind(node, kind)
}

/// `cudaGraphExecGetFlags`: the flags the executable graph was instantiated with.
///
/// # Safety
///
/// `flags` is null or writable.
pub(crate) unsafe fn exec_get_flags(exec: cudaGraphExec_t, flags: *mut u64) -> Result<()> {
    let f = crate::core::graph::with(|r| r.execs.get(&(exec as u64)).map(|e| e.flags))
        .ok_or(Error::INVALID_VALUE)?;
    // SAFETY: the caller's output pointer, checked for null.
    unsafe { write_out(flags, f) }
}
