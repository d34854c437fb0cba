// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The node kinds the typed graph calls (`cudaGraphAdd*Node`, `cudaGraph*NodeSetParams`,
//! `cudaGraphExec*NodeSetParams`) and the generic node API (`cudaGraphAddNode`,
//! `cudaGraphNodeSetParams`, `cudaGraphExecNodeSetParams`, whose C parameter union
//! `abi/node_args.rs` reads) make from their parameters, and what the generic API does with
//! them.

use crate::client;
use crate::core::graph::{
    Copy3D, Host, Kind, Memset, cudaHostNodeParams, cudaMemcpy3DParms, cudaMemsetParams, with,
};
use crate::error::{Error, Result};
use std::ffi::c_int;
use std::ffi::c_void;

/// An event node's event.
pub(crate) fn event(e: *mut c_void) -> Result<u64> {
    crate::core::handle::event_handle(client::client()?, e as crate::ffi::cudaEvent_t)
}

/// A copy node from its C parameters.
pub(crate) fn memcpy_from_c(p: &cudaMemcpy3DParms) -> Result<Kind> {
    Ok(Kind::Memcpy(Copy3D::from_c(p)?))
}

/// A linear copy node.
pub(crate) fn memcpy_1d(dst: u64, src: u64, count: u64, kind: c_int) -> Result<Kind> {
    Ok(Kind::Memcpy(Copy3D::linear(dst, src, count, kind)?))
}

/// A copy to (`to`) or from a variable, `cudaMemcpyToSymbol`'s or `cudaMemcpyFromSymbol`'s
/// parameters.
pub(crate) fn memcpy_symbol(
    sym: *const c_void,
    other: u64,
    count: usize,
    offset: usize,
    kind: c_int,
    to: bool,
) -> Result<Kind> {
    let (dst, src) = crate::core::memory::symbol_copy(sym, other, count, offset, kind, to)?;
    memcpy_1d(dst, src, count as u64, kind)
}

/// A memset node from its C parameters.
pub(crate) fn memset_from_c(p: &cudaMemsetParams) -> Result<Kind> {
    Ok(Kind::Memset(Memset::from_c(p)?))
}

/// A host node from its C parameters.
pub(crate) fn host_from_c(p: &cudaHostNodeParams) -> Result<Kind> {
    Ok(Kind::Host(Host::from_c(p)?))
}

/// A child-graph node in graph `g`: a clone of `child`, or (`moved`) the program's graph
/// itself.
pub(crate) fn add_child(g: u64, deps: &[u64], child: u64, moved: bool) -> Result<u64> {
    if moved {
        crate::core::graph::add_moved_child(g, child, deps)
    } else {
        crate::core::graph_build::graph_add_child_graph_node(g, deps, child)
    }
}

/// `cudaGraphNodeSetParams`: replaces a node's parameters (its attributes too) with ones of
/// the same type.
pub(crate) fn replace_kind(node: u64, kind: Kind) -> Result<()> {
    with(|r| {
        let n = r.nodes.get_mut(&node).ok_or(Error::INVALID_VALUE)?;
        if n.kind.type_code() != kind.type_code() {
            return Err(Error::INVALID_VALUE);
        }
        n.kind = kind;
        Ok(())
    })
}
