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

use crate::core::graph::*;
use crate::error::Error;
use crate::ffi::{cudaEvent_t, write_out};
use std::ffi::{c_int, c_uint, c_void};

entry! {
    fn cudaGraphCreate(out: *mut cudaGraph_t, flags: c_uint) {
        if out.is_null() || flags != 0 {
            return Err(Error::INVALID_VALUE);
        }
        let g = create();
        // SAFETY: checked non-null; the caller's output pointer.
        unsafe { write_out(out, g as cudaGraph_t) }
    }

    fn cudaGraphDestroy(g: cudaGraph_t) {
        with(|r| {
            if r.graph(g as u64)?.owner.is_some() {
                // A child graph belongs to its node.
                return Err(Error::INVALID_VALUE);
            }
            r.destroy_graph(g as u64);
            Ok(())
        })
    }

    fn cudaGraphClone(out: *mut cudaGraph_t, g: cudaGraph_t) {
        if out.is_null() {
            return Err(Error::INVALID_VALUE);
        }
        let copy = with(|r| r.clone_graph(g as u64, None))?;
        // SAFETY: checked non-null; the caller's output pointer.
        unsafe { write_out(out, copy as cudaGraph_t) }
    }

    fn cudaGraphNodeFindInClone(out: *mut cudaGraphNode_t, node: cudaGraphNode_t, clone: cudaGraph_t) {
        let n = with(|r| r.graph(clone as u64)?.cloned_from.get(&(node as u64)).copied().ok_or(Error::INVALID_VALUE))?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(out, n as cudaGraphNode_t) }
    }

    fn cudaGraphAddKernelNode(out: *mut cudaGraphNode_t, g: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize, p: *const cudaKernelNodeParams) {
        add_node(out, g, deps, ndeps, || Ok(Kind::Kernel(Kernel::from_c(read(p)?)?)))
    }

    fn cudaGraphAddMemcpyNode(out: *mut cudaGraphNode_t, g: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize, p: *const cudaMemcpy3DParms) {
        add_node(out, g, deps, ndeps, || Ok(Kind::Memcpy(Copy3D::from_c(read(p)?)?)))
    }

    fn cudaGraphAddMemcpyNode1D(out: *mut cudaGraphNode_t, g: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize, dst: *mut c_void, src: *const c_void, count: usize, kind: c_int) {
        add_node(out, g, deps, ndeps, || Ok(Kind::Memcpy(Copy3D::linear(dst as u64, src as u64, count as u64, kind)?)))
    }

    fn cudaGraphDebugDotPrint(g: cudaGraph_t, path: *const std::ffi::c_char, flags: c_uint) {
        let _ = flags;
        dot_print(g, path)
    }

    fn cudaGraphAddMemcpyNodeToSymbol(out: *mut cudaGraphNode_t, g: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize, symbol: *const c_void, src: *const c_void, count: usize, offset: usize, kind: c_int) {
        add_node(out, g, deps, ndeps, || memcpy_symbol(symbol, src as u64, count, offset, kind, true))
    }

    fn cudaGraphAddMemcpyNodeFromSymbol(out: *mut cudaGraphNode_t, g: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize, dst: *mut c_void, symbol: *const c_void, count: usize, offset: usize, kind: c_int) {
        add_node(out, g, deps, ndeps, || memcpy_symbol(symbol, dst as u64, count, offset, kind, false))
    }

    fn cudaGraphMemcpyNodeSetParamsToSymbol(node: cudaGraphNode_t, symbol: *const c_void, src: *const c_void, count: usize, offset: usize, kind: c_int) {
        set_kind(node, memcpy_symbol(symbol, src as u64, count, offset, kind, true)?)
    }

    fn cudaGraphMemcpyNodeSetParamsFromSymbol(node: cudaGraphNode_t, dst: *mut c_void, symbol: *const c_void, count: usize, offset: usize, kind: c_int) {
        set_kind(node, memcpy_symbol(symbol, dst as u64, count, offset, kind, false)?)
    }

    fn cudaGraphAddMemsetNode(out: *mut cudaGraphNode_t, g: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize, p: *const cudaMemsetParams) {
        add_node(out, g, deps, ndeps, || Ok(Kind::Memset(Memset::from_c(read(p)?)?)))
    }

    fn cudaGraphAddHostNode(out: *mut cudaGraphNode_t, g: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize, p: *const cudaHostNodeParams) {
        add_node(out, g, deps, ndeps, || Ok(Kind::Host(Host::from_c(read(p)?)?)))
    }

    fn cudaGraphAddEmptyNode(out: *mut cudaGraphNode_t, g: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize) {
        add_node(out, g, deps, ndeps, || Ok(Kind::Empty))
    }

    fn cudaGraphAddChildGraphNode(out: *mut cudaGraphNode_t, g: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize, child: cudaGraph_t) {
        if out.is_null() || child == g {
            return Err(Error::INVALID_VALUE);
        }
        let deps = handles(deps, ndeps)?;
        let id = with(|r| {
            r.graph(g as u64)?;
            if crate::core::graph_mem::has_memory_nodes(r, child as u64) {
                // As in CUDA: memory nodes are not allowed in child graphs.
                return Err(Error::NOT_SUPPORTED);
            }
            let copy = r.clone_graph(child as u64, None)?;
            r.add(g as u64, Kind::Child(copy), &deps).inspect_err(|_| r.destroy_graph(copy))
        })?;
        // SAFETY: checked non-null; the caller's output pointer.
        unsafe { write_out(out, id as cudaGraphNode_t) }
    }

    fn cudaGraphAddEventRecordNode(out: *mut cudaGraphNode_t, g: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize, e: cudaEvent_t) {
        add_node(out, g, deps, ndeps, || Ok(Kind::EventRecord(event(e)?)))
    }

    fn cudaGraphAddEventWaitNode(out: *mut cudaGraphNode_t, g: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize, e: cudaEvent_t) {
        add_node(out, g, deps, ndeps, || Ok(Kind::EventWait(event(e)?)))
    }

    fn cudaGraphChildGraphNodeGetGraph(node: cudaGraphNode_t, out: *mut cudaGraph_t) {
        let g = get_kind(node, |k| match k { Kind::Child(g) => Some(*g), _ => None })?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(out, g as cudaGraph_t) }
    }

    fn cudaGraphEventRecordNodeGetEvent(node: cudaGraphNode_t, out: *mut cudaEvent_t) {
        let e = get_kind(node, |k| match k { Kind::EventRecord(e) => Some(*e), _ => None })?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(out, e as cudaEvent_t) }
    }

    fn cudaGraphEventWaitNodeGetEvent(node: cudaGraphNode_t, out: *mut cudaEvent_t) {
        let e = get_kind(node, |k| match k { Kind::EventWait(e) => Some(*e), _ => None })?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(out, e as cudaEvent_t) }
    }

    fn cudaGraphEventRecordNodeSetEvent(node: cudaGraphNode_t, e: cudaEvent_t) {
        set_kind(node, Kind::EventRecord(event(e)?))
    }

    fn cudaGraphEventWaitNodeSetEvent(node: cudaGraphNode_t, e: cudaEvent_t) {
        set_kind(node, Kind::EventWait(event(e)?))
    }

    fn cudaGraphKernelNodeGetParams(node: cudaGraphNode_t, out: *mut cudaKernelNodeParams) {
        let p = get_kind(node, |k| match k { Kind::Kernel(k) => Some(k.to_c()), _ => None })?;
        // SAFETY: the caller's output pointer, checked for null; `kernelParams` points into
        // the node, valid until its parameters change (as in CUDA).
        unsafe { write_out(out, p) }
    }

    fn cudaGraphKernelNodeSetParams(node: cudaGraphNode_t, p: *const cudaKernelNodeParams) {
        set_kind(node, Kind::Kernel(Kernel::from_c(read(p)?)?))
    }

    fn cudaGraphMemcpyNodeGetParams(node: cudaGraphNode_t, out: *mut cudaMemcpy3DParms) {
        let p = get_kind(node, |k| match k { Kind::Memcpy(cp) => Some(cp.to_c()), _ => None })?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(out, p) }
    }

    fn cudaGraphMemcpyNodeSetParams(node: cudaGraphNode_t, p: *const cudaMemcpy3DParms) {
        set_kind(node, Kind::Memcpy(Copy3D::from_c(read(p)?)?))
    }

    fn cudaGraphMemcpyNodeSetParams1D(node: cudaGraphNode_t, dst: *mut c_void, src: *const c_void, count: usize, kind: c_int) {
        set_kind(node, Kind::Memcpy(Copy3D::linear(dst as u64, src as u64, count as u64, kind)?))
    }

    fn cudaGraphMemsetNodeGetParams(node: cudaGraphNode_t, out: *mut cudaMemsetParams) {
        let p = get_kind(node, |k| match k { Kind::Memset(m) => Some(m.to_c()), _ => None })?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(out, p) }
    }

    fn cudaGraphMemsetNodeSetParams(node: cudaGraphNode_t, p: *const cudaMemsetParams) {
        set_kind(node, Kind::Memset(Memset::from_c(read(p)?)?))
    }

    fn cudaGraphHostNodeGetParams(node: cudaGraphNode_t, out: *mut cudaHostNodeParams) {
        let p = get_kind(node, |k| match k {
            Kind::Host(h) => Some(h.to_c()),
            _ => None,
        })?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(out, p) }
    }

    fn cudaGraphHostNodeSetParams(node: cudaGraphNode_t, p: *const cudaHostNodeParams) {
        set_kind(node, Kind::Host(Host::from_c(read(p)?)?))
    }

    fn cudaGraphNodeGetType(node: cudaGraphNode_t, out: *mut u32) {
        let t = with(|r| r.node(node as u64).map(|n| n.kind.type_code()))?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(out, t) }
    }

    fn cudaGraphDestroyNode(node: cudaGraphNode_t) {
        with(|r| {
            let n = node as u64;
            let g = r.node(n)?.graph;
            crate::core::attrs::forget_node(n);
            match r.nodes.remove(&n) {
                Some(NodeObj { kind: Kind::Child(child), .. }) => r.destroy_graph(child),
                Some(NodeObj { kind: Kind::MemAlloc { ptr, .. }, .. }) => r.drop_graph_mem(ptr),
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

    fn cudaGraphGetNodes(g: cudaGraph_t, out: *mut cudaGraphNode_t, num: *mut usize) {
        let nodes = with(|r| r.graph(g as u64).map(|x| x.nodes.clone()))?;
        fill(out, num, &nodes)
    }

    fn cudaGraphGetRootNodes(g: cudaGraph_t, out: *mut cudaGraphNode_t, num: *mut usize) {
        let roots = with(|r| r.roots(g as u64))?;
        fill(out, num, &roots)
    }

    fn cudaGraphGetEdges(g: cudaGraph_t, from: *mut cudaGraphNode_t, to: *mut cudaGraphNode_t, edge_data: *mut u8, num: *mut usize) {
        get_edges(g, from, to, edge_data, num)
    }

    fn __v12_cudaGraphGetEdges(g: cudaGraph_t, from: *mut cudaGraphNode_t, to: *mut cudaGraphNode_t, num: *mut usize) {
        get_edges(g, from, to, std::ptr::null_mut(), num)
    }

    fn cudaGraphGetEdges_v2(g: cudaGraph_t, from: *mut cudaGraphNode_t, to: *mut cudaGraphNode_t, edge_data: *mut u8, num: *mut usize) {
        get_edges(g, from, to, edge_data, num)
    }

    fn cudaGraphAddDependencies(g: cudaGraph_t, from: *const cudaGraphNode_t, to: *const cudaGraphNode_t, edge_data: *const u8, n: usize) {
        check_edge_data(edge_data, n)?;
        add_dependencies(g, from, to, n)
    }

    fn __v12_cudaGraphAddDependencies(g: cudaGraph_t, from: *const cudaGraphNode_t, to: *const cudaGraphNode_t, n: usize) {
        add_dependencies(g, from, to, n)
    }

    fn cudaGraphAddDependencies_v2(g: cudaGraph_t, from: *const cudaGraphNode_t, to: *const cudaGraphNode_t, edge_data: *const u8, n: usize) {
        check_edge_data(edge_data, n)?;
        add_dependencies(g, from, to, n)
    }

    fn cudaGraphRemoveDependencies(g: cudaGraph_t, from: *const cudaGraphNode_t, to: *const cudaGraphNode_t, edge_data: *const u8, n: usize) {
        check_edge_data(edge_data, n)?;
        remove_dependencies(g, from, to, n)
    }

    fn __v12_cudaGraphRemoveDependencies(g: cudaGraph_t, from: *const cudaGraphNode_t, to: *const cudaGraphNode_t, n: usize) {
        remove_dependencies(g, from, to, n)
    }

    fn cudaGraphRemoveDependencies_v2(g: cudaGraph_t, from: *const cudaGraphNode_t, to: *const cudaGraphNode_t, edge_data: *const u8, n: usize) {
        check_edge_data(edge_data, n)?;
        remove_dependencies(g, from, to, n)
    }

    fn cudaGraphNodeGetDependencies(node: cudaGraphNode_t, out: *mut cudaGraphNode_t, edge_data: *mut u8, num: *mut usize) {
        node_deps(node, out, edge_data, num)
    }

    fn __v12_cudaGraphNodeGetDependencies(node: cudaGraphNode_t, out: *mut cudaGraphNode_t, num: *mut usize) {
        node_deps(node, out, std::ptr::null_mut(), num)
    }

    fn cudaGraphNodeGetDependencies_v2(node: cudaGraphNode_t, out: *mut cudaGraphNode_t, edge_data: *mut u8, num: *mut usize) {
        node_deps(node, out, edge_data, num)
    }

    fn cudaGraphNodeGetDependentNodes(node: cudaGraphNode_t, out: *mut cudaGraphNode_t, edge_data: *mut u8, num: *mut usize) {
        node_dependents(node, out, edge_data, num)
    }

    fn __v12_cudaGraphNodeGetDependentNodes(node: cudaGraphNode_t, out: *mut cudaGraphNode_t, num: *mut usize) {
        node_dependents(node, out, std::ptr::null_mut(), num)
    }

    fn cudaGraphNodeGetDependentNodes_v2(node: cudaGraphNode_t, out: *mut cudaGraphNode_t, edge_data: *mut u8, num: *mut usize) {
        node_dependents(node, out, edge_data, num)
    }
}
