// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The generic graph node API (CUDA 12.2 and later): `cudaGraphAddNode` (and CUDA 12's
//! `cudaGraphAddNode_v2`), `cudaGraphNodeSetParams`, `cudaGraphExecNodeSetParams`, over
//! `struct cudaGraphNodeParams` (a node type and a union of the typed parameter structs,
//! whose "V2" forms have the layouts of the older ones). Kernel, copy, memset, host, child
//! graph (cloned, or moved into the node), empty, event and memory nodes; the external
//! semaphore and conditional types answer `cudaErrorNotSupported`.
//! Also `cudaGraphExecChildGraphNodeSetParams`, and the node kinds the typed calls
//! (`cudaGraphAdd*Node`, `cudaGraph*NodeSetParams`, `cudaGraphExec*NodeSetParams`) make from
//! their C parameters.

use crate::client;
use crate::core::graph::cudaGraphExec_t;
use crate::core::graph::read;
use crate::core::graph::{
    Copy3D, Host, Kind, Memset, add_node, check_edge_data, cudaGraph_t, cudaGraphNode_t,
    cudaHostNodeParams, cudaKernelNodeParams, cudaMemcpy3DParms, cudaMemsetParams, node_type, with,
};
use crate::core::graph_exec::exec_set;
use crate::error::{Error, Result};
use std::ffi::c_int;
use std::ffi::c_void;

/// `struct cudaGraphNodeParams` (256 bytes).
#[repr(C)]
pub struct cudaGraphNodeParams {
    pub(crate) type_: u32,
    pub(crate) reserved0: [i32; 3],
    /// The union of the typed parameters.
    pub(crate) u: [u64; 29],
    pub(crate) reserved2: i64,
}

/// `cudaMemcpyNodeParams`.
#[repr(C)]
pub(crate) struct MemcpyNodeParams {
    pub(crate) flags: i32,
    pub(crate) reserved: [i32; 3],
    pub(crate) copy: cudaMemcpy3DParms,
}

/// `cudaChildGraphNodeParams` (the ownership field is CUDA 13's; 0 in CUDA 12, whose
/// padding must be zero).
#[repr(C)]
pub(crate) struct ChildParams {
    pub(crate) graph: cudaGraph_t,
    pub(crate) ownership: u32,
}

/// The union's typed parameter structs: plain C data, valid for every bit pattern.
pub(crate) trait PlainParams {}
impl PlainParams for cudaKernelNodeParams {}
impl PlainParams for MemcpyNodeParams {}
impl PlainParams for cudaMemsetParams {}
impl PlainParams for cudaHostNodeParams {}
impl PlainParams for ChildParams {}
impl PlainParams for u64 {}
impl PlainParams for *mut c_void {}

/// `cudaGraphChildGraphOwnershipClone`, `cudaGraphChildGraphOwnershipMove`.
pub(crate) const OWNERSHIP_CLONE: u32 = 0;
pub(crate) const OWNERSHIP_MOVE: u32 = 1;
/// `cudaGraphNodeTypeExtSemaphoreSignal`, `...Wait`, `cudaGraphNodeTypeConditional`.
pub(crate) const EXT_SEM_SIGNAL: u32 = 8;
pub(crate) const EXT_SEM_WAIT: u32 = 9;
pub(crate) const CONDITIONAL: u32 = 13;

impl cudaGraphNodeParams {
    /// The union read as `T`.
    ///
    /// # Safety
    /// `T` must be one of the union's C parameter structs (or a plain integer or pointer):
    /// at most 8-aligned, and valid for every bit pattern.
    pub(crate) unsafe fn union_as<T>(&self) -> &T {
        const { assert!(std::mem::size_of::<T>() <= 29 * 8 && std::mem::align_of::<T>() <= 8) };
        // SAFETY: the union is 232 bytes and 8-aligned; `T` fits (checked above) and takes
        // any bit pattern (the caller's promise).
        unsafe { &*(self.u.as_ptr().cast::<T>()) }
    }

    /// The union as one of the typed parameter structs: plain C data (integers, pointers,
    /// nullable function pointers), valid for every bit pattern.
    pub(crate) fn view<T: PlainParams>(&self) -> &T {
        // SAFETY: `T` is one of the C parameter structs (the `PlainParams` bound), which take
        // any bit pattern and fit the union.
        unsafe { self.union_as::<T>() }
    }

    /// See [`Self::union_as`].
    ///
    /// # Safety
    /// As for [`Self::union_as`].
    pub(crate) unsafe fn union_as_mut<T>(&mut self) -> &mut T {
        const { assert!(std::mem::size_of::<T>() <= 29 * 8 && std::mem::align_of::<T>() <= 8) };
        // SAFETY: as in `union_as`; the caller's struct, borrowed mutably.
        unsafe { &mut *(self.u.as_mut_ptr().cast::<T>()) }
    }
}

pub(crate) fn event(e: *mut c_void) -> Result<u64> {
    crate::core::handle::event_handle(client::client()?, e as crate::ffi::cudaEvent_t)
}

/// How the driver API reads the union members whose layout differs from the runtime's
/// (`CUDA_KERNEL_NODE_PARAMS_v3` names a `CUfunction`, `CUDA_MEMCPY_NODE_PARAMS` holds a
/// `CUDA_MEMCPY3D`): the kernel and copy nodes; `None` for the runtime's layouts.
pub(crate) type Typed<'a> = Option<&'a dyn Fn(&cudaGraphNodeParams) -> Result<Kind>>;

/// The node a parameter struct describes, for the types that need no more than their
/// parameters (not child graphs or allocations, which `add` handles).
pub(crate) fn kind_of(p: &cudaGraphNodeParams, typed: Typed<'_>) -> Result<Kind> {
    if p.reserved0 != [0; 3] || p.reserved2 != 0 {
        return Err(Error::INVALID_VALUE);
    }
    if let Some(f) = typed
        && matches!(p.type_, node_type::KERNEL | node_type::MEMCPY)
    {
        return f(p);
    }
    Ok(match p.type_ {
        node_type::KERNEL => Kind::Kernel(crate::core::launch::kernel_from_c(
            p.view::<cudaKernelNodeParams>(),
        )?),
        node_type::MEMCPY => {
            let m = p.view::<MemcpyNodeParams>();
            if m.flags != 0 || m.reserved != [0; 3] {
                return Err(Error::INVALID_VALUE);
            }
            Kind::Memcpy(Copy3D::from_c(&m.copy)?)
        }
        node_type::MEMSET => Kind::Memset(Memset::from_c(p.view::<cudaMemsetParams>())?),
        node_type::HOST => Kind::Host(Host::from_c(p.view::<cudaHostNodeParams>())?),
        node_type::EMPTY => Kind::Empty,
        node_type::WAIT_EVENT => Kind::EventWait(event(*p.view::<*mut c_void>())?),
        node_type::EVENT_RECORD => Kind::EventRecord(event(*p.view::<*mut c_void>())?),
        node_type::MEM_FREE => {
            let ptr = *p.view::<u64>();
            if !crate::core::graph_mem::owns(ptr) {
                return Err(Error::INVALID_VALUE);
            }
            Kind::MemFree(ptr)
        }
        EXT_SEM_SIGNAL | EXT_SEM_WAIT | CONDITIONAL => return Err(Error::NOT_SUPPORTED),
        _ => return Err(Error::INVALID_VALUE),
    })
}

/// `cudaGraphAddNode` (`ownership`: the child-graph parameters have CUDA 13's ownership
/// field; CUDA 12's structure has padding there, and its child graphs are cloned).
#[allow(clippy::too_many_arguments)]
pub(crate) fn add(
    out: *mut cudaGraphNode_t,
    g: cudaGraph_t,
    deps: *const cudaGraphNode_t,
    edges: *const u8,
    n: usize,
    p: *mut cudaGraphNodeParams,
    ownership: bool,
    typed: Typed<'_>,
) -> Result<()> {
    check_edge_data(edges, n)?;
    // SAFETY: the caller's parameters (the API's contract), checked for null.
    let p = unsafe { p.as_mut() }.ok_or(Error::INVALID_VALUE)?;
    match p.type_ {
        node_type::GRAPH => {
            let c = p.view::<ChildParams>();
            let child = c.graph;
            let moved = match c.ownership {
                _ if !ownership => false,
                OWNERSHIP_CLONE => false,
                OWNERSHIP_MOVE => true,
                _ => return Err(Error::INVALID_VALUE),
            };
            if out.is_null() {
                return Err(Error::INVALID_VALUE);
            }
            let deps = crate::core::graph::handles(deps, n)?;
            let id = if moved {
                // The node takes the program's graph itself.
                crate::core::graph::add_moved_child(g as u64, child as u64, &deps)?
            } else {
                crate::core::graph_build::graph_add_child_graph_node(g as u64, &deps, child as u64)?
            };
            // SAFETY: checked non-null; the caller's output pointer.
            unsafe { crate::ffi::write_out(out, id as cudaGraphNode_t) }
        }
        node_type::MEM_ALLOC => {
            // SAFETY: cudaMemAllocNodeParams is plain C data (integers and pointers).
            let a = unsafe { p.union_as_mut::<crate::core::graph_mem::cudaMemAllocNodeParams>() };
            crate::core::graph_mem::add_alloc(out, g, deps, n, a)
        }
        node_type::MEM_FREE if crate::core::graph_mem::frees_in(g as u64, *p.view::<u64>()) => {
            // One free node per allocation in a graph.
            Err(Error::INVALID_VALUE)
        }
        _ => {
            let kind = kind_of(p, typed)?;
            add_node(out, g, deps, n, || Ok(kind))
        }
    }
}

/// `cudaGraphNodeSetParams`: the node's type must not change; child graphs and memory
/// nodes cannot be changed.
pub(crate) fn set(
    node: cudaGraphNode_t,
    p: *mut cudaGraphNodeParams,
    typed: Typed<'_>,
) -> Result<()> {
    // SAFETY: the caller's parameters (the API's contract), checked for null.
    let p = unsafe { p.as_ref() }.ok_or(Error::INVALID_VALUE)?;
    if matches!(
        p.type_,
        node_type::GRAPH | node_type::MEM_ALLOC | node_type::MEM_FREE
    ) {
        return Err(Error::INVALID_VALUE);
    }
    let kind = kind_of(p, typed)?;
    with(|r| {
        let n = r
            .nodes
            .get_mut(&(node as u64))
            .ok_or(Error::INVALID_VALUE)?;
        if n.kind.type_code() != kind.type_code() {
            return Err(Error::INVALID_VALUE);
        }
        n.kind = kind;
        Ok(())
    })
}

/// `cudaGraphExecNodeSetParams`: kernel, copy, memset, host and event nodes take new
/// parameters, a child graph node a new graph of the same shape; memory nodes cannot change
/// and an empty node has nothing to change.
pub(crate) fn exec_set_params(
    exec: crate::core::graph::cudaGraphExec_t,
    node: cudaGraphNode_t,
    p: *mut cudaGraphNodeParams,
    typed: Typed<'_>,
) -> Result<()> {
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
    crate::core::graph_exec::exec_set(exec, node, kind_of(params, typed))
}

/// Parameters for the executable-graph setters (`cudaGraphExec*NodeSetParams`).
pub(crate) fn kernel_from_c(p: *const cudaKernelNodeParams) -> Result<Kind> {
    Ok(Kind::Kernel(crate::core::launch::kernel_from_c(read(p)?)?))
}

/// See [`kernel_from_c`].
pub(crate) fn memcpy_from_c(p: *const cudaMemcpy3DParms) -> Result<Kind> {
    Ok(Kind::Memcpy(Copy3D::from_c(read(p)?)?))
}

/// See [`kernel_from_c`].
pub(crate) fn memcpy_1d(dst: u64, src: u64, count: u64, kind: c_int) -> Result<Kind> {
    Ok(Kind::Memcpy(Copy3D::linear(dst, src, count, kind)?))
}

/// A copy to (`to`) or from a variable, `cudaMemcpyToSymbol`'s or `cudaMemcpyFromSymbol`'s
/// parameters (see [`kernel_from_c`]).
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

/// See [`kernel_from_c`].
pub(crate) fn memset_from_c(p: *const cudaMemsetParams) -> Result<Kind> {
    Ok(Kind::Memset(Memset::from_c(read(p)?)?))
}

/// See [`kernel_from_c`].
pub(crate) fn host_from_c(p: *const cudaHostNodeParams) -> Result<Kind> {
    Ok(Kind::Host(Host::from_c(read(p)?)?))
}

/// `cudaGraphExecHostNodeSetParams`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaGraphExecHostNodeSetParams` requires of its caller.
pub(crate) unsafe fn graph_exec_host_node_set_params(
    exec: cudaGraphExec_t,
    node: cudaGraphNode_t,
    p: *const cudaHostNodeParams,
) -> Result<()> {
    exec_set(exec, node, crate::core::graph_params::host_from_c(p))
}

/// `cudaGraphExecMemsetNodeSetParams`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaGraphExecMemsetNodeSetParams` requires of its caller.
pub(crate) unsafe fn graph_exec_memset_node_set_params(
    exec: cudaGraphExec_t,
    node: cudaGraphNode_t,
    p: *const cudaMemsetParams,
) -> Result<()> {
    exec_set(exec, node, crate::core::graph_params::memset_from_c(p))
}
