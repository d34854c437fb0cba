// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The generic graph node API (CUDA 12.2 and later): `cudaGraphAddNode` (and CUDA 12's
//! `cudaGraphAddNode_v2`), `cudaGraphNodeSetParams`, `cudaGraphExecNodeSetParams`, over
//! `struct cudaGraphNodeParams` (a node type and a union of the typed parameter structs,
//! whose "V2" forms have the layouts of the older ones). Kernel, copy, memset, host, child
//! graph (cloned, or moved into the node), empty, event and memory nodes; the external
//! semaphore and conditional types answer `cudaErrorNotSupported`.
//! Also `cudaGraphExecChildGraphNodeSetParams`.

use crate::core::graph::{cudaGraph_t, cudaGraphExec_t, cudaGraphNode_t, node_type};
use crate::core::graph_params::*;
use crate::error::Error;

entry! {
    fn cudaGraphAddNode(out: *mut cudaGraphNode_t, g: cudaGraph_t, deps: *const cudaGraphNode_t, edges: *const u8, n: usize, p: *mut cudaGraphNodeParams) {
        add(out, g, deps, edges, n, p, true)
    }

    fn __v12_cudaGraphAddNode(out: *mut cudaGraphNode_t, g: cudaGraph_t, deps: *const cudaGraphNode_t, n: usize, p: *mut cudaGraphNodeParams) {
        add(out, g, deps, std::ptr::null(), n, p, false)
    }

    fn cudaGraphAddNode_v2(out: *mut cudaGraphNode_t, g: cudaGraph_t, deps: *const cudaGraphNode_t, edges: *const u8, n: usize, p: *mut cudaGraphNodeParams) {
        add(out, g, deps, edges, n, p, false)
    }

    fn cudaGraphNodeSetParams(node: cudaGraphNode_t, p: *mut cudaGraphNodeParams) {
        set(node, p)
    }

    fn cudaGraphExecNodeSetParams(exec: cudaGraphExec_t, node: cudaGraphNode_t, p: *mut cudaGraphNodeParams) {
        // SAFETY: the caller's parameters (the API's contract), checked for null.
        let params = unsafe { p.as_ref() }.ok_or(Error::INVALID_VALUE)?;
        if params.type_ == node_type::GRAPH {
            let child = params.view::<ChildParams>().graph;
            return crate::core::graph_exec::exec_child_set(exec, node, child);
        }
        if matches!(params.type_, node_type::MEM_ALLOC | node_type::MEM_FREE) {
            // Memory nodes are not updated.
            return Err(Error::INVALID_VALUE);
        }
        if params.type_ == node_type::EMPTY {
            // Nothing to change (an empty node has no step), as cudaGraphNodeSetParams.
            return crate::core::graph_exec::exec_has_node(exec, node);
        }
        crate::core::graph_exec::exec_set(exec, node, kind_of(params))
    }

    fn cudaGraphExecChildGraphNodeSetParams(exec: cudaGraphExec_t, node: cudaGraphNode_t, child: cudaGraph_t) {
        crate::core::graph_exec::exec_child_set(exec, node, child)
    }
}
