// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Building, editing and querying graphs from the API's side: creating and destroying graphs
//! and nodes, edges, node parameters, clones (`cudaGraph*` and the driver's `cuGraph*`).

use super::graph::*;
use crate::error::{Error, Result};
use crate::ffi::{cudaEvent_t, write_out};
use std::ffi::c_uint;

/// `cudaGraphAddChildGraphNode`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaGraphAddChildGraphNode` requires of its caller.
pub(crate) unsafe fn graph_add_child_graph_node(
    out: *mut cudaGraphNode_t,
    g: cudaGraph_t,
    deps: *const cudaGraphNode_t,
    ndeps: usize,
    child: cudaGraph_t,
) -> Result<()> {
    if out.is_null() || child == g {
        return Err(Error::INVALID_VALUE);
    }
    let deps = handles(deps, ndeps)?;
    let id = with(|r| {
        r.graph(g as u64)?;
        if crate::core::graph::has_memory_nodes(r, child as u64) {
            // As in CUDA: memory nodes are not allowed in child graphs.
            return Err(Error::NOT_SUPPORTED);
        }
        let copy = r.clone_graph(child as u64, None)?;
        r.add(g as u64, Kind::Child(copy), &deps)
            .inspect_err(|_| r.destroy_graph(copy))
    })?;
    // SAFETY: checked non-null; the caller's output pointer.
    unsafe { write_out(out, id as cudaGraphNode_t) }
}

/// `cudaGraphAddDependencies`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaGraphAddDependencies` requires of its caller.
pub(crate) unsafe fn graph_add_dependencies(
    g: cudaGraph_t,
    from: *const cudaGraphNode_t,
    to: *const cudaGraphNode_t,
    edge_data: *const u8,
    n: usize,
) -> Result<()> {
    check_edge_data(edge_data, n)?;
    add_dependencies(g, from, to, n)
}

/// `cudaGraphAddEmptyNode`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaGraphAddEmptyNode` requires of its caller.
pub(crate) unsafe fn graph_add_empty_node(
    out: *mut cudaGraphNode_t,
    g: cudaGraph_t,
    deps: *const cudaGraphNode_t,
    ndeps: usize,
) -> Result<()> {
    add_node(out, g, deps, ndeps, || Ok(Kind::Empty))
}

/// `cudaGraphAddEventRecordNode`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaGraphAddEventRecordNode` requires of its caller.
pub(crate) unsafe fn graph_add_event_record_node(
    out: *mut cudaGraphNode_t,
    g: cudaGraph_t,
    deps: *const cudaGraphNode_t,
    ndeps: usize,
    e: cudaEvent_t,
) -> Result<()> {
    add_node(out, g, deps, ndeps, || Ok(Kind::EventRecord(event(e)?)))
}

/// `cudaGraphAddEventWaitNode`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaGraphAddEventWaitNode` requires of its caller.
pub(crate) unsafe fn graph_add_event_wait_node(
    out: *mut cudaGraphNode_t,
    g: cudaGraph_t,
    deps: *const cudaGraphNode_t,
    ndeps: usize,
    e: cudaEvent_t,
) -> Result<()> {
    add_node(out, g, deps, ndeps, || Ok(Kind::EventWait(event(e)?)))
}

/// `cudaGraphAddHostNode`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaGraphAddHostNode` requires of its caller.
pub(crate) unsafe fn graph_add_host_node(
    out: *mut cudaGraphNode_t,
    g: cudaGraph_t,
    deps: *const cudaGraphNode_t,
    ndeps: usize,
    p: *const cudaHostNodeParams,
) -> Result<()> {
    add_node(out, g, deps, ndeps, || {
        Ok(Kind::Host(Host::from_c(read(p)?)?))
    })
}

/// `cudaGraphAddMemsetNode`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaGraphAddMemsetNode` requires of its caller.
pub(crate) unsafe fn graph_add_memset_node(
    out: *mut cudaGraphNode_t,
    g: cudaGraph_t,
    deps: *const cudaGraphNode_t,
    ndeps: usize,
    p: *const cudaMemsetParams,
) -> Result<()> {
    add_node(out, g, deps, ndeps, || {
        Ok(Kind::Memset(Memset::from_c(read(p)?)?))
    })
}

/// `cudaGraphChildGraphNodeGetGraph`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaGraphChildGraphNodeGetGraph` requires of its caller.
pub(crate) unsafe fn graph_child_graph_node_get_graph(
    node: cudaGraphNode_t,
    out: *mut cudaGraph_t,
) -> Result<()> {
    let g = get_kind(node, |k| match k {
        Kind::Child(g) => Some(*g),
        _ => None,
    })?;
    // SAFETY: the caller's output pointer, checked for null.
    unsafe { write_out(out, g as cudaGraph_t) }
}

/// `cudaGraphClone`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaGraphClone` requires of its caller.
pub(crate) unsafe fn graph_clone(out: *mut cudaGraph_t, g: cudaGraph_t) -> Result<()> {
    if out.is_null() {
        return Err(Error::INVALID_VALUE);
    }
    let copy = with(|r| r.clone_graph(g as u64, None))?;
    // SAFETY: checked non-null; the caller's output pointer.
    unsafe { write_out(out, copy as cudaGraph_t) }
}

/// `cudaGraphCreate`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaGraphCreate` requires of its caller.
pub(crate) unsafe fn graph_create(out: *mut cudaGraph_t, flags: c_uint) -> Result<()> {
    if out.is_null() || flags != 0 {
        return Err(Error::INVALID_VALUE);
    }
    let g = create();
    // SAFETY: checked non-null; the caller's output pointer.
    unsafe { write_out(out, g as cudaGraph_t) }
}

/// `cudaGraphDestroy`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaGraphDestroy` requires of its caller.
pub(crate) unsafe fn graph_destroy(g: cudaGraph_t) -> Result<()> {
    with(|r| {
        if r.graph(g as u64)?.owner.is_some() {
            // A child graph belongs to its node.
            return Err(Error::INVALID_VALUE);
        }
        r.destroy_graph(g as u64);
        Ok(())
    })
}

/// `cudaGraphDestroyNode`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaGraphDestroyNode` requires of its caller.
pub(crate) unsafe fn graph_destroy_node(node: cudaGraphNode_t) -> Result<()> {
    with(|r| {
        let n = node as u64;
        let g = r.node(n)?.graph;
        crate::core::attr_table::forget_node(n);
        match r.nodes.remove(&n) {
            Some(NodeObj {
                kind: Kind::Child(child),
                ..
            }) => r.destroy_graph(child),
            Some(NodeObj {
                kind: Kind::MemAlloc { ptr, .. },
                ..
            }) => r.drop_graph_mem(ptr),
            _ => {}
        }
        if let Some(graph) = r.graphs.get_mut(&g) {
            graph.nodes.retain(|&m| m != n);
            for m in graph.nodes.clone() {
                if let Some(x) = r.nodes.get_mut(&m) {
                    x.deps.retain(|&d| d != n);
                }
            }
        }
        Ok(())
    })
}

/// `cudaGraphGetEdges`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaGraphGetEdges` requires of its caller.
pub(crate) unsafe fn graph_get_edges(
    g: cudaGraph_t,
    from: *mut cudaGraphNode_t,
    to: *mut cudaGraphNode_t,
    edge_data: *mut u8,
    num: *mut usize,
) -> Result<()> {
    get_edges(g, from, to, edge_data, num)
}

/// `cudaGraphGetNodes`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaGraphGetNodes` requires of its caller.
pub(crate) unsafe fn graph_get_nodes(
    g: cudaGraph_t,
    out: *mut cudaGraphNode_t,
    num: *mut usize,
) -> Result<()> {
    let nodes = with(|r| r.graph(g as u64).map(|x| x.nodes.clone()))?;
    fill(out, num, &nodes)
}

/// `cudaGraphGetRootNodes`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaGraphGetRootNodes` requires of its caller.
pub(crate) unsafe fn graph_get_root_nodes(
    g: cudaGraph_t,
    out: *mut cudaGraphNode_t,
    num: *mut usize,
) -> Result<()> {
    let roots = with(|r| r.roots(g as u64))?;
    fill(out, num, &roots)
}

/// `cudaGraphHostNodeGetParams`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaGraphHostNodeGetParams` requires of its caller.
pub(crate) unsafe fn graph_host_node_get_params(
    node: cudaGraphNode_t,
    out: *mut cudaHostNodeParams,
) -> Result<()> {
    let p = get_kind(node, |k| match k {
        Kind::Host(h) => Some(h.to_c()),
        _ => None,
    })?;
    // SAFETY: the caller's output pointer, checked for null.
    unsafe { write_out(out, p) }
}

/// `cudaGraphHostNodeSetParams`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaGraphHostNodeSetParams` requires of its caller.
pub(crate) unsafe fn graph_host_node_set_params(
    node: cudaGraphNode_t,
    p: *const cudaHostNodeParams,
) -> Result<()> {
    set_kind(node, Kind::Host(Host::from_c(read(p)?)?))
}

/// `cudaGraphMemsetNodeGetParams`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaGraphMemsetNodeGetParams` requires of its caller.
pub(crate) unsafe fn graph_memset_node_get_params(
    node: cudaGraphNode_t,
    out: *mut cudaMemsetParams,
) -> Result<()> {
    let p = get_kind(node, |k| match k {
        Kind::Memset(m) => Some(m.to_c()),
        _ => None,
    })?;
    // SAFETY: the caller's output pointer, checked for null.
    unsafe { write_out(out, p) }
}

/// `cudaGraphMemsetNodeSetParams`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaGraphMemsetNodeSetParams` requires of its caller.
pub(crate) unsafe fn graph_memset_node_set_params(
    node: cudaGraphNode_t,
    p: *const cudaMemsetParams,
) -> Result<()> {
    set_kind(node, Kind::Memset(Memset::from_c(read(p)?)?))
}

/// `cudaGraphNodeFindInClone`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaGraphNodeFindInClone` requires of its caller.
pub(crate) unsafe fn graph_node_find_in_clone(
    out: *mut cudaGraphNode_t,
    node: cudaGraphNode_t,
    clone: cudaGraph_t,
) -> Result<()> {
    let n = with(|r| {
        r.graph(clone as u64)?
            .cloned_from
            .get(&(node as u64))
            .copied()
            .ok_or(Error::INVALID_VALUE)
    })?;
    // SAFETY: the caller's output pointer, checked for null.
    unsafe { write_out(out, n as cudaGraphNode_t) }
}

/// `cudaGraphNodeGetDependencies`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaGraphNodeGetDependencies` requires of its caller.
pub(crate) unsafe fn graph_node_get_dependencies(
    node: cudaGraphNode_t,
    out: *mut cudaGraphNode_t,
    edge_data: *mut u8,
    num: *mut usize,
) -> Result<()> {
    node_deps(node, out, edge_data, num)
}

/// `cudaGraphNodeGetDependentNodes`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaGraphNodeGetDependentNodes` requires of its caller.
pub(crate) unsafe fn graph_node_get_dependent_nodes(
    node: cudaGraphNode_t,
    out: *mut cudaGraphNode_t,
    edge_data: *mut u8,
    num: *mut usize,
) -> Result<()> {
    node_dependents(node, out, edge_data, num)
}

/// `cudaGraphNodeGetType`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaGraphNodeGetType` requires of its caller.
pub(crate) unsafe fn graph_node_get_type(node: cudaGraphNode_t, out: *mut u32) -> Result<()> {
    let t = with(|r| r.node(node as u64).map(|n| n.kind.type_code()))?;
    // SAFETY: the caller's output pointer, checked for null.
    unsafe { write_out(out, t) }
}

/// `cudaGraphRemoveDependencies`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaGraphRemoveDependencies` requires of its caller.
pub(crate) unsafe fn graph_remove_dependencies(
    g: cudaGraph_t,
    from: *const cudaGraphNode_t,
    to: *const cudaGraphNode_t,
    edge_data: *const u8,
    n: usize,
) -> Result<()> {
    check_edge_data(edge_data, n)?;
    remove_dependencies(g, from, to, n)
}
