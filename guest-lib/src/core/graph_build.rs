// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Building, editing and querying graphs from the API's side: creating and destroying graphs
//! and nodes, edges, node parameters, clones (`cudaGraph*` and the driver's `cuGraph*`).
//!
//! Safe Rust over handles and values: the shims turn the C arguments into these
//! (`abi/graph_args.rs`, shared by the runtime's and the driver's exports) and write the
//! results back.

use super::graph::*;
use crate::error::{Error, Result};
use crate::ffi::cudaEvent_t;

/// `cudaGraphAddChildGraphNode`: a node of graph `g` after `deps` that runs a clone of
/// graph `child`.
pub(crate) fn graph_add_child_graph_node(g: u64, deps: &[u64], child: u64) -> Result<u64> {
    if child == g {
        return Err(Error::INVALID_VALUE);
    }
    with(|r| {
        r.graph(g)?;
        if crate::core::graph::has_memory_nodes(r, child) {
            // As in CUDA: memory nodes are not allowed in child graphs.
            return Err(Error::NOT_SUPPORTED);
        }
        let copy = r.clone_graph(child, None)?;
        r.add(g, Kind::Child(copy), deps)
            .inspect_err(|_| r.destroy_graph(copy))
    })
}

/// `cudaGraphAddDependencies`: edges `from[i] -> to[i]` in graph `g` (the two lists have
/// the same length).
pub(crate) fn graph_add_dependencies(g: u64, from: &[u64], to: &[u64]) -> Result<()> {
    with(|r| {
        for (&a, &b) in from.iter().zip(to) {
            if a == b || r.node(a)?.graph != g || r.node(b)?.graph != g {
                return Err(Error::INVALID_VALUE);
            }
            if r.node(b)?.deps.contains(&a) {
                return Err(Error::INVALID_VALUE);
            }
        }
        for (&a, &b) in from.iter().zip(to) {
            r.node_mut(b)?.deps.push(a);
        }
        Ok(())
    })
}

/// A node of `kind` in graph `g` after `deps`.
pub(crate) fn graph_add_node(g: u64, deps: &[u64], kind: Kind) -> Result<u64> {
    with(|r| r.add(g, kind, deps))
}

/// `cudaGraphAddEventRecordNode`: the node's kind for event `e`.
pub(crate) fn event_record_kind(e: cudaEvent_t) -> Result<Kind> {
    Ok(Kind::EventRecord(event(e)?))
}

/// `cudaGraphAddEventWaitNode`: the node's kind for event `e`.
pub(crate) fn event_wait_kind(e: cudaEvent_t) -> Result<Kind> {
    Ok(Kind::EventWait(event(e)?))
}

/// `cudaGraphAddHostNode`, `cudaGraphHostNodeSetParams`: the node's kind for `p`.
pub(crate) fn host_kind(p: &cudaHostNodeParams) -> Result<Kind> {
    Ok(Kind::Host(Host::from_c(p)?))
}

/// `cudaGraphAddMemsetNode`, `cudaGraphMemsetNodeSetParams`: the node's kind for `p`.
pub(crate) fn memset_kind(p: &cudaMemsetParams) -> Result<Kind> {
    Ok(Kind::Memset(Memset::from_c(p)?))
}

/// `cudaGraphChildGraphNodeGetGraph`: the graph a child-graph node runs.
pub(crate) fn graph_child_graph_node_get_graph(node: u64) -> Result<u64> {
    get_kind(node as cudaGraphNode_t, |k| match k {
        Kind::Child(g) => Some(*g),
        _ => None,
    })
}

/// `cudaGraphClone`: a copy of graph `g`.
pub(crate) fn graph_clone(g: u64) -> Result<u64> {
    with(|r| r.clone_graph(g, None))
}

/// `cudaGraphCreate`: a new empty graph (`flags` must be 0).
pub(crate) fn graph_create(flags: u32) -> Result<u64> {
    if flags != 0 {
        return Err(Error::INVALID_VALUE);
    }
    Ok(create())
}

/// `cudaGraphDestroy`.
pub(crate) fn graph_destroy(g: u64) -> Result<()> {
    with(|r| {
        if r.graph(g)?.owner.is_some() {
            // A child graph belongs to its node.
            return Err(Error::INVALID_VALUE);
        }
        r.destroy_graph(g);
        Ok(())
    })
}

/// `cudaGraphDestroyNode`.
pub(crate) fn graph_destroy_node(n: u64) -> Result<()> {
    with(|r| {
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

/// `cudaGraphGetEdges`: graph `g`'s edges, `(from, to)`.
pub(crate) fn graph_get_edges(g: u64) -> Result<Vec<(u64, u64)>> {
    with(|r| r.edges(g))
}

/// `cudaGraphGetNodes`: graph `g`'s nodes.
pub(crate) fn graph_get_nodes(g: u64) -> Result<Vec<u64>> {
    with(|r| r.graph(g).map(|x| x.nodes.clone()))
}

/// `cudaGraphGetRootNodes`: graph `g`'s nodes without dependencies.
pub(crate) fn graph_get_root_nodes(g: u64) -> Result<Vec<u64>> {
    with(|r| r.roots(g))
}

/// `cudaGraphHostNodeGetParams`.
pub(crate) fn graph_host_node_get_params(node: u64) -> Result<cudaHostNodeParams> {
    get_kind(node as cudaGraphNode_t, |k| match k {
        Kind::Host(h) => Some(h.to_c()),
        _ => None,
    })
}

/// `cudaGraphMemsetNodeGetParams`.
pub(crate) fn graph_memset_node_get_params(node: u64) -> Result<cudaMemsetParams> {
    get_kind(node as cudaGraphNode_t, |k| match k {
        Kind::Memset(m) => Some(m.to_c()),
        _ => None,
    })
}

/// `cudaGraphNodeFindInClone`: the node of graph `clone` made from `node`.
pub(crate) fn graph_node_find_in_clone(node: u64, clone: u64) -> Result<u64> {
    with(|r| {
        r.graph(clone)?
            .cloned_from
            .get(&node)
            .copied()
            .ok_or(Error::INVALID_VALUE)
    })
}

/// `cudaGraphNodeGetDependencies`: the nodes `node` depends on.
pub(crate) fn graph_node_get_dependencies(node: u64) -> Result<Vec<u64>> {
    with(|r| r.node(node).map(|n| n.deps.clone()))
}

/// `cudaGraphNodeGetDependentNodes`: the nodes that depend on `node`.
pub(crate) fn graph_node_get_dependent_nodes(node: u64) -> Result<Vec<u64>> {
    with(|r| r.dependents(node))
}

/// `cudaGraphNodeGetType`: the node's `cudaGraphNodeType`.
pub(crate) fn graph_node_get_type(node: u64) -> Result<u32> {
    with(|r| r.node(node).map(|n| n.kind.type_code()))
}

/// `cudaGraphRemoveDependencies`: removes edges `from[i] -> to[i]` of graph `g`.
pub(crate) fn graph_remove_dependencies(g: u64, from: &[u64], to: &[u64]) -> Result<()> {
    with(|r| {
        for (&a, &b) in from.iter().zip(to) {
            let nb = r.node(b)?;
            if nb.graph != g || !nb.deps.contains(&a) {
                return Err(Error::INVALID_VALUE);
            }
        }
        for (&a, &b) in from.iter().zip(to) {
            r.node_mut(b)?.deps.retain(|&d| d != a);
        }
        Ok(())
    })
}
