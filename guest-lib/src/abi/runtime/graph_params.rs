// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The generic graph node API (CUDA 12.2 and later): `cudaGraphAddNode` (and CUDA 12's
//! `cudaGraphAddNode_v2`), `cudaGraphNodeSetParams`, `cudaGraphExecNodeSetParams`, over
//! `struct cudaGraphNodeParams` (a node type and a union of the typed parameter structs,
//! whose "V2" forms have the layouts of the older ones). Kernel, copy, memset, host, child
//! graph (cloned, or moved into the node), empty, event and memory nodes; the external
//! semaphore and conditional types answer `cudaErrorNotSupported`.
//! Also `cudaGraphExecChildGraphNodeSetParams`.

use crate::abi::node_args::*;
use crate::core::graph::{cudaGraph_t, cudaGraphExec_t, cudaGraphNode_t};

entry! {
    fn cudaGraphAddNode(out: *mut cudaGraphNode_t, g: cudaGraph_t, deps: *const cudaGraphNode_t, edges: *const u8, n: usize, p: *mut cudaGraphNodeParams) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { add(out, g, deps, edges, n, p, true, None) }
    }

    fn __v12_cudaGraphAddNode(out: *mut cudaGraphNode_t, g: cudaGraph_t, deps: *const cudaGraphNode_t, n: usize, p: *mut cudaGraphNodeParams) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { add(out, g, deps, std::ptr::null(), n, p, false, None) }
    }

    fn cudaGraphAddNode_v2(out: *mut cudaGraphNode_t, g: cudaGraph_t, deps: *const cudaGraphNode_t, edges: *const u8, n: usize, p: *mut cudaGraphNodeParams) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { add(out, g, deps, edges, n, p, false, None) }
    }

    fn cudaGraphNodeSetParams(node: cudaGraphNode_t, p: *mut cudaGraphNodeParams) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { set(node, p, None) }
    }

    fn cudaGraphExecNodeSetParams(exec: cudaGraphExec_t, node: cudaGraphNode_t, p: *mut cudaGraphNodeParams) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { exec_set_params(exec, node, p, None) }
    }

    fn cudaGraphExecChildGraphNodeSetParams(exec: cudaGraphExec_t, node: cudaGraphNode_t, child: cudaGraph_t) {
        crate::core::graph_exec::exec_child_set(exec, node, child)
    }
}
