// SPDX-License-Identifier: Apache-2.0 OR MIT
//! CUDA graphs: graphs and their nodes, built explicitly (`cudaGraphAdd*Node`) or by stream
//! capture ([`super::capture`]).
//!
//! A graph lives in the library only: a registry maps the opaque handles the program holds
//! (`cudaGraph_t`, `cudaGraphNode_t`, `cudaGraphExec_t`: ids that are never reused, never
//! pointers the library dereferences) to graphs, nodes and executable graphs. A node keeps
//! a copy of what it runs: a kernel node its configuration and its parameter bytes (packed
//! at add or capture time with the launch path's own layout code), a copy node its
//! `cudaMemcpy3DParms`, a memset node its `cudaMemsetParams`, a host node its function and
//! argument; a child-graph node owns a clone of the child. Instantiation and replay are in
//! [`super::graph_exec`].
//!
//! Node kinds: kernel, memcpy (linear memory; CUDA arrays are not supported), memset,
//! host, empty, child graph, event record and event wait.

use crate::abi::graph_args::*;
use crate::abi::graph_ptrs::{add_node, read};
use crate::abi::node_args::kernel_kind;
use crate::core::graph::*;
use crate::core::graph_params::memcpy_symbol;
use crate::ffi::{cudaEvent_t, write_out};
use std::ffi::{c_int, c_uint, c_void};

entry! {
    fn cudaGraphCreate(out: *mut cudaGraph_t, flags: c_uint) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { graph_create(out, flags) }
    }

    fn cudaGraphDestroy(g: cudaGraph_t) {
        graph_destroy(g)
    }

    fn cudaGraphClone(out: *mut cudaGraph_t, g: cudaGraph_t) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { graph_clone(out, g) }
    }

    fn cudaGraphNodeFindInClone(out: *mut cudaGraphNode_t, node: cudaGraphNode_t, clone: cudaGraph_t) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { graph_node_find_in_clone(out, node, clone) }
    }

    fn cudaGraphAddKernelNode(out: *mut cudaGraphNode_t, g: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize, p: *const cudaKernelNodeParams) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { add_node(out, g, deps, ndeps, || kernel_kind(read(p)?)) }
    }

    fn cudaGraphAddMemcpyNode(out: *mut cudaGraphNode_t, g: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize, p: *const cudaMemcpy3DParms) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { add_node(out, g, deps, ndeps, || Ok(Kind::Memcpy(Copy3D::from_c(read(p)?)?))) }
    }

    fn cudaGraphAddMemcpyNode1D(out: *mut cudaGraphNode_t, g: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize, dst: *mut c_void, src: *const c_void, count: usize, kind: c_int) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { add_node(out, g, deps, ndeps, || Ok(Kind::Memcpy(Copy3D::linear(dst as u64, src as u64, count as u64, kind)?))) }
    }

    fn cudaGraphDebugDotPrint(g: cudaGraph_t, path: *const std::ffi::c_char, flags: c_uint) {
        let _ = flags;
        // SAFETY: the caller's NUL-terminated path; `c_path` checks it for null.
        dot_print(g, unsafe { crate::ffi::c_path(path)? })
    }

    fn cudaGraphAddMemcpyNodeToSymbol(out: *mut cudaGraphNode_t, g: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize, symbol: *const c_void, src: *const c_void, count: usize, offset: usize, kind: c_int) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { add_node(out, g, deps, ndeps, || memcpy_symbol(symbol, src as u64, count, offset, kind, true)) }
    }

    fn cudaGraphAddMemcpyNodeFromSymbol(out: *mut cudaGraphNode_t, g: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize, dst: *mut c_void, symbol: *const c_void, count: usize, offset: usize, kind: c_int) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { add_node(out, g, deps, ndeps, || memcpy_symbol(symbol, dst as u64, count, offset, kind, false)) }
    }

    fn cudaGraphMemcpyNodeSetParamsToSymbol(node: cudaGraphNode_t, symbol: *const c_void, src: *const c_void, count: usize, offset: usize, kind: c_int) {
        set_kind(node, memcpy_symbol(symbol, src as u64, count, offset, kind, true)?)
    }

    fn cudaGraphMemcpyNodeSetParamsFromSymbol(node: cudaGraphNode_t, dst: *mut c_void, symbol: *const c_void, count: usize, offset: usize, kind: c_int) {
        set_kind(node, memcpy_symbol(symbol, dst as u64, count, offset, kind, false)?)
    }

    fn cudaGraphAddMemsetNode(out: *mut cudaGraphNode_t, g: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize, p: *const cudaMemsetParams) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { graph_add_memset_node(out, g, deps, ndeps, p) }
    }

    fn cudaGraphAddHostNode(out: *mut cudaGraphNode_t, g: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize, p: *const cudaHostNodeParams) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { graph_add_host_node(out, g, deps, ndeps, p) }
    }

    fn cudaGraphAddEmptyNode(out: *mut cudaGraphNode_t, g: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { graph_add_empty_node(out, g, deps, ndeps) }
    }

    fn cudaGraphAddChildGraphNode(out: *mut cudaGraphNode_t, g: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize, child: cudaGraph_t) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { graph_add_child_graph_node(out, g, deps, ndeps, child) }
    }

    fn cudaGraphAddEventRecordNode(out: *mut cudaGraphNode_t, g: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize, e: cudaEvent_t) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { graph_add_event_record_node(out, g, deps, ndeps, e) }
    }

    fn cudaGraphAddEventWaitNode(out: *mut cudaGraphNode_t, g: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize, e: cudaEvent_t) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { graph_add_event_wait_node(out, g, deps, ndeps, e) }
    }

    fn cudaGraphChildGraphNodeGetGraph(node: cudaGraphNode_t, out: *mut cudaGraph_t) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { graph_child_graph_node_get_graph(node, out) }
    }

    fn cudaGraphEventRecordNodeGetEvent(node: cudaGraphNode_t, out: *mut cudaEvent_t) {
        // SAFETY: the caller's output pointer (checked for null).
        unsafe { graph_event_node_get_event(node, out, false) }
    }

    fn cudaGraphEventWaitNodeGetEvent(node: cudaGraphNode_t, out: *mut cudaEvent_t) {
        // SAFETY: as above.
        unsafe { graph_event_node_get_event(node, out, true) }
    }

    fn cudaGraphEventRecordNodeSetEvent(node: cudaGraphNode_t, e: cudaEvent_t) {
        graph_event_node_set_event(node, e, false)
    }

    fn cudaGraphEventWaitNodeSetEvent(node: cudaGraphNode_t, e: cudaEvent_t) {
        graph_event_node_set_event(node, e, true)
    }

    fn cudaGraphKernelNodeGetParams(node: cudaGraphNode_t, out: *mut cudaKernelNodeParams) {
        let p = get_kind(node, |k| match k { Kind::Kernel(k) => Some(k.to_c()), _ => None })?;
        // SAFETY: the caller's output pointer, checked for null; `kernelParams` points into
        // the node, valid until its parameters change (as in CUDA).
        unsafe { write_out(out, p) }
    }

    fn cudaGraphKernelNodeSetParams(node: cudaGraphNode_t, p: *const cudaKernelNodeParams) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { set_kind(node, kernel_kind(read(p)?)?) }
    }

    fn cudaGraphMemcpyNodeGetParams(node: cudaGraphNode_t, out: *mut cudaMemcpy3DParms) {
        let p = get_kind(node, |k| match k { Kind::Memcpy(cp) => Some(cp.to_c()), _ => None })?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(out, p) }
    }

    fn cudaGraphMemcpyNodeSetParams(node: cudaGraphNode_t, p: *const cudaMemcpy3DParms) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { set_kind(node, Kind::Memcpy(Copy3D::from_c(read(p)?)?)) }
    }

    fn cudaGraphMemcpyNodeSetParams1D(node: cudaGraphNode_t, dst: *mut c_void, src: *const c_void, count: usize, kind: c_int) {
        set_kind(node, Kind::Memcpy(Copy3D::linear(dst as u64, src as u64, count as u64, kind)?))
    }

    fn cudaGraphMemsetNodeGetParams(node: cudaGraphNode_t, out: *mut cudaMemsetParams) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { graph_memset_node_get_params(node, out) }
    }

    fn cudaGraphMemsetNodeSetParams(node: cudaGraphNode_t, p: *const cudaMemsetParams) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { graph_memset_node_set_params(node, p) }
    }

    fn cudaGraphHostNodeGetParams(node: cudaGraphNode_t, out: *mut cudaHostNodeParams) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { graph_host_node_get_params(node, out) }
    }

    fn cudaGraphHostNodeSetParams(node: cudaGraphNode_t, p: *const cudaHostNodeParams) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { graph_host_node_set_params(node, p) }
    }

    fn cudaGraphNodeGetType(node: cudaGraphNode_t, out: *mut u32) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { graph_node_get_type(node, out) }
    }

    fn cudaGraphDestroyNode(node: cudaGraphNode_t) {
        graph_destroy_node(node)
    }

    fn cudaGraphGetNodes(g: cudaGraph_t, out: *mut cudaGraphNode_t, num: *mut usize) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { graph_get_nodes(g, out, num) }
    }

    fn cudaGraphGetRootNodes(g: cudaGraph_t, out: *mut cudaGraphNode_t, num: *mut usize) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { graph_get_root_nodes(g, out, num) }
    }

    fn cudaGraphGetEdges(g: cudaGraph_t, from: *mut cudaGraphNode_t, to: *mut cudaGraphNode_t, edge_data: *mut u8, num: *mut usize) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { graph_get_edges(g, from, to, edge_data, num) }
    }

    fn __v12_cudaGraphGetEdges(g: cudaGraph_t, from: *mut cudaGraphNode_t, to: *mut cudaGraphNode_t, num: *mut usize) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { graph_get_edges(g, from, to, std::ptr::null_mut(), num) }
    }

    fn cudaGraphGetEdges_v2(g: cudaGraph_t, from: *mut cudaGraphNode_t, to: *mut cudaGraphNode_t, edge_data: *mut u8, num: *mut usize) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { graph_get_edges(g, from, to, edge_data, num) }
    }

    fn cudaGraphAddDependencies(g: cudaGraph_t, from: *const cudaGraphNode_t, to: *const cudaGraphNode_t, edge_data: *const u8, n: usize) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { graph_add_dependencies(g, from, to, edge_data, n) }
    }

    fn __v12_cudaGraphAddDependencies(g: cudaGraph_t, from: *const cudaGraphNode_t, to: *const cudaGraphNode_t, n: usize) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { graph_add_dependencies(g, from, to, std::ptr::null(), n) }
    }

    fn cudaGraphAddDependencies_v2(g: cudaGraph_t, from: *const cudaGraphNode_t, to: *const cudaGraphNode_t, edge_data: *const u8, n: usize) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { graph_add_dependencies(g, from, to, edge_data, n) }
    }

    fn cudaGraphRemoveDependencies(g: cudaGraph_t, from: *const cudaGraphNode_t, to: *const cudaGraphNode_t, edge_data: *const u8, n: usize) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { graph_remove_dependencies(g, from, to, edge_data, n) }
    }

    fn __v12_cudaGraphRemoveDependencies(g: cudaGraph_t, from: *const cudaGraphNode_t, to: *const cudaGraphNode_t, n: usize) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { graph_remove_dependencies(g, from, to, std::ptr::null(), n) }
    }

    fn cudaGraphRemoveDependencies_v2(g: cudaGraph_t, from: *const cudaGraphNode_t, to: *const cudaGraphNode_t, edge_data: *const u8, n: usize) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { graph_remove_dependencies(g, from, to, edge_data, n) }
    }

    fn cudaGraphNodeGetDependencies(node: cudaGraphNode_t, out: *mut cudaGraphNode_t, edge_data: *mut u8, num: *mut usize) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { graph_node_get_dependencies(node, out, edge_data, num) }
    }

    fn __v12_cudaGraphNodeGetDependencies(node: cudaGraphNode_t, out: *mut cudaGraphNode_t, num: *mut usize) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { graph_node_get_dependencies(node, out, std::ptr::null_mut(), num) }
    }

    fn cudaGraphNodeGetDependencies_v2(node: cudaGraphNode_t, out: *mut cudaGraphNode_t, edge_data: *mut u8, num: *mut usize) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { graph_node_get_dependencies(node, out, edge_data, num) }
    }

    fn cudaGraphNodeGetDependentNodes(node: cudaGraphNode_t, out: *mut cudaGraphNode_t, edge_data: *mut u8, num: *mut usize) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { graph_node_get_dependent_nodes(node, out, edge_data, num) }
    }

    fn __v12_cudaGraphNodeGetDependentNodes(node: cudaGraphNode_t, out: *mut cudaGraphNode_t, num: *mut usize) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { graph_node_get_dependent_nodes(node, out, std::ptr::null_mut(), num) }
    }

    fn cudaGraphNodeGetDependentNodes_v2(node: cudaGraphNode_t, out: *mut cudaGraphNode_t, edge_data: *mut u8, num: *mut usize) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { graph_node_get_dependent_nodes(node, out, edge_data, num) }
    }
}
