// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The C arguments of the generic graph node API (CUDA 12.2 and later: `cudaGraphAddNode`,
//! CUDA 12's `cudaGraphAddNode_v2`, `cudaGraphNodeSetParams`, `cudaGraphExecNodeSetParams`
//! and the driver's `cuGraph*` forms) and of the memory-node calls, turned into values for
//! [`crate::core::graph_params`] and [`crate::core::graph_mem`].
//!
//! `struct cudaGraphNodeParams` is a node type and a union of the typed parameter structs
//! (whose "V2" forms have the layouts of the older ones). Kernel, copy, memset, host, child
//! graph (cloned, or moved into the node), empty, event and memory nodes; the external
//! semaphore and conditional types answer `cudaErrorNotSupported`.

use crate::abi::graph_ptrs::{add_node, check_edge_data, handles, read};
use crate::core::graph::{
    Copy3D, Host, Kind, Memset, cudaGraph_t, cudaGraphExec_t, cudaGraphNode_t, cudaHostNodeParams,
    cudaKernelNodeParams, cudaMemcpy3DParms, cudaMemsetParams, node_type,
};
use crate::core::graph_exec::exec_set;
use crate::core::graph_mem::cudaMemAllocNodeParams;
use crate::core::graph_params as gp;
use crate::error::{Error, Result};
use crate::ffi::{KernelArgs, read_in, write_out};
use std::ffi::{c_int, c_void};

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

/// How the driver API reads the union members whose layout differs from the runtime's
/// (`CUDA_KERNEL_NODE_PARAMS_v3` names a `CUfunction`, `CUDA_MEMCPY_NODE_PARAMS` holds a
/// `CUDA_MEMCPY3D`): the kernel and copy nodes; `None` for the runtime's layouts.
///
/// # Safety (of the function)
///
/// The pointers in the parameters (a kernel's arguments) are valid as the API requires.
pub(crate) type Typed = Option<unsafe fn(&cudaGraphNodeParams) -> Result<Kind>>;

/// The node a parameter struct describes, for the types that need no more than their
/// parameters (not child graphs or allocations, which `add` handles).
///
/// # Safety
///
/// The pointers in `p` (a kernel's arguments) are valid as the API requires.
pub(crate) unsafe fn kind_of(p: &cudaGraphNodeParams, typed: Typed) -> Result<Kind> {
    if p.reserved0 != [0; 3] || p.reserved2 != 0 {
        return Err(Error::INVALID_VALUE);
    }
    if let Some(f) = typed
        && matches!(p.type_, node_type::KERNEL | node_type::MEMCPY)
    {
        // SAFETY: the caller's contract, which is `f`'s.
        return unsafe { f(p) };
    }
    Ok(match p.type_ {
        // SAFETY: the caller's contract.
        node_type::KERNEL => unsafe { kernel_kind(p.view::<cudaKernelNodeParams>())? },
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
        node_type::WAIT_EVENT => Kind::EventWait(gp::event(*p.view::<*mut c_void>())?),
        node_type::EVENT_RECORD => Kind::EventRecord(gp::event(*p.view::<*mut c_void>())?),
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
///
/// # Safety
///
/// `out` is null or writable; `deps` is null or holds `n` handles, `edges` null or `n`
/// `cudaGraphEdgeData`; `p` is null or readable and writable, and the pointers in it (a
/// kernel's arguments) are valid as the API requires.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn add(
    out: *mut cudaGraphNode_t,
    g: cudaGraph_t,
    deps: *const cudaGraphNode_t,
    edges: *const u8,
    n: usize,
    p: *mut cudaGraphNodeParams,
    ownership: bool,
    typed: Typed,
) -> Result<()> {
    // SAFETY: the caller's edge data.
    unsafe { check_edge_data(edges, n)? };
    // SAFETY: the caller's parameters, checked for null.
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
            // SAFETY: the caller's array.
            let deps = unsafe { handles(deps, n)? };
            let id = gp::add_child(g as u64, &deps, child as u64, moved)?;
            // SAFETY: checked non-null; the caller's output pointer.
            unsafe { write_out(out, id as cudaGraphNode_t) }
        }
        node_type::MEM_ALLOC => {
            // SAFETY: cudaMemAllocNodeParams is plain C data (integers and pointers).
            let a = unsafe { p.union_as_mut::<cudaMemAllocNodeParams>() };
            // SAFETY: the caller's contract.
            unsafe { add_alloc(out, g, deps, n, a) }
        }
        node_type::MEM_FREE if crate::core::graph_mem::frees_in(g as u64, *p.view::<u64>()) => {
            // One free node per allocation in a graph.
            Err(Error::INVALID_VALUE)
        }
        _ => {
            // SAFETY: the caller's contract.
            let kind = unsafe { kind_of(p, typed)? };
            // SAFETY: the caller's contract.
            unsafe { add_node(out, g, deps, n, || Ok(kind)) }
        }
    }
}

/// `cudaGraphNodeSetParams`: the node's type must not change; child graphs and memory
/// nodes cannot be changed.
///
/// # Safety
///
/// `p` is null or readable, and the pointers in it (a kernel's arguments) are valid as the
/// API requires.
pub(crate) unsafe fn set(
    node: cudaGraphNode_t,
    p: *const cudaGraphNodeParams,
    typed: Typed,
) -> Result<()> {
    // SAFETY: the caller's parameters, checked for null.
    let p = unsafe { read(p)? };
    if matches!(
        p.type_,
        node_type::GRAPH | node_type::MEM_ALLOC | node_type::MEM_FREE
    ) {
        return Err(Error::INVALID_VALUE);
    }
    // SAFETY: the caller's contract.
    gp::replace_kind(node as u64, unsafe { kind_of(p, typed)? })
}

/// `cudaGraphExecNodeSetParams`: kernel, copy, memset, host and event nodes take new
/// parameters, a child graph node a new graph of the same shape; memory nodes cannot change
/// and an empty node has nothing to change.
///
/// # Safety
///
/// `p` is null or readable, and the pointers in it (a kernel's arguments) are valid as the
/// API requires.
pub(crate) unsafe fn exec_set_params(
    exec: cudaGraphExec_t,
    node: cudaGraphNode_t,
    p: *const cudaGraphNodeParams,
    typed: Typed,
) -> Result<()> {
    // SAFETY: the caller's parameters, checked for null.
    let params = unsafe { read(p)? };
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
    // SAFETY: the caller's contract.
    exec_set(exec, node, unsafe { kind_of(params, typed) })
}

/// A kernel node from `cudaKernelNodeParams`.
///
/// # Safety
///
/// `p`'s argument pointers (`kernelParams`, `extra`) are valid as the API requires.
pub(crate) unsafe fn kernel_kind(p: &cudaKernelNodeParams) -> Result<Kind> {
    // SAFETY: the caller's contract.
    let args = unsafe { KernelArgs::new(p.kernel_params, p.extra) };
    Ok(Kind::Kernel(crate::core::launch::kernel_from_c(p, args)?))
}

/// `cudaGraphExecHostNodeSetParams`.
///
/// # Safety
///
/// `p` is null or readable.
pub(crate) unsafe fn exec_host_node_set_params(
    exec: cudaGraphExec_t,
    node: cudaGraphNode_t,
    p: *const cudaHostNodeParams,
) -> Result<()> {
    // SAFETY: the caller's parameters, checked for null.
    exec_set(exec, node, unsafe { read(p) }.and_then(gp::host_from_c))
}

/// `cudaGraphExecMemsetNodeSetParams`.
///
/// # Safety
///
/// `p` is null or readable.
pub(crate) unsafe fn exec_memset_node_set_params(
    exec: cudaGraphExec_t,
    node: cudaGraphNode_t,
    p: *const cudaMemsetParams,
) -> Result<()> {
    // SAFETY: the caller's parameters, checked for null.
    exec_set(exec, node, unsafe { read(p) }.and_then(gp::memset_from_c))
}

/// `cudaGraphExecKernelNodeSetParams`.
///
/// # Safety
///
/// `p` is null or readable, and its argument pointers (`kernelParams`, `extra`) are valid
/// as the API requires.
pub(crate) unsafe fn exec_kernel_node_set_params(
    exec: cudaGraphExec_t,
    node: cudaGraphNode_t,
    p: *const cudaKernelNodeParams,
) -> Result<()> {
    // SAFETY: the caller's parameters, checked for null.
    exec_set(exec, node, unsafe { read(p).and_then(|p| kernel_kind(p)) })
}

/// `cudaGraphExecMemcpyNodeSetParams`.
///
/// # Safety
///
/// `p` is null or readable.
pub(crate) unsafe fn exec_memcpy_node_set_params(
    exec: cudaGraphExec_t,
    node: cudaGraphNode_t,
    p: *const cudaMemcpy3DParms,
) -> Result<()> {
    // SAFETY: the caller's parameters, checked for null.
    exec_set(exec, node, unsafe { read(p) }.and_then(gp::memcpy_from_c))
}

/// `cudaGraphAddMemAllocNode` (`p.dptr` gets the address): `out` is checked first, then
/// the dependency array, then the memory is allocated.
///
/// # Safety
///
/// `out` is null or writable; `deps` is null or holds `ndeps` handles.
pub(crate) unsafe fn add_alloc(
    out: *mut cudaGraphNode_t,
    g: cudaGraph_t,
    deps: *const cudaGraphNode_t,
    ndeps: usize,
    p: &mut cudaMemAllocNodeParams,
) -> Result<()> {
    if out.is_null() {
        return Err(Error::INVALID_VALUE);
    }
    // SAFETY: the caller's array.
    let deps = unsafe { handles(deps, ndeps)? };
    let (node, ptr) = crate::core::graph_mem::add_alloc(g as u64, &deps, p.bytesize as u64)?;
    p.dptr = ptr as *mut c_void;
    // SAFETY: checked non-null; the caller's output pointer.
    unsafe { write_out(out, node as cudaGraphNode_t) }
}

/// `cudaGraphAddMemFreeNode`.
///
/// # Safety
///
/// As [`add_alloc`].
pub(crate) unsafe fn add_free(
    out: *mut cudaGraphNode_t,
    g: cudaGraph_t,
    deps: *const cudaGraphNode_t,
    ndeps: usize,
    ptr: u64,
) -> Result<()> {
    if out.is_null() {
        return Err(Error::INVALID_VALUE);
    }
    // SAFETY: the caller's array.
    let deps = unsafe { handles(deps, ndeps)? };
    let node = crate::core::graph_mem::add_free(g as u64, &deps, ptr)?;
    // SAFETY: checked non-null; the caller's output pointer.
    unsafe { write_out(out, node as cudaGraphNode_t) }
}

/// `cudaDeviceGetGraphMemAttribute` (`set`: `cudaDeviceSetGraphMemAttribute`), whose value
/// is a `uint64_t`.
///
/// # Safety
///
/// `value` is null or readable (`set`) or writable.
pub(crate) unsafe fn graph_mem_attribute(attr: c_int, value: *mut c_void, set: bool) -> Result<()> {
    let value = value.cast::<u64>();
    if set {
        // SAFETY: the caller's u64; `read_in` checks it for null.
        crate::core::graph_mem::reset_attribute(attr, unsafe { read_in(value)? })
    } else {
        if value.is_null() {
            return Err(Error::INVALID_VALUE);
        }
        let v = crate::core::graph_mem::attribute(attr)?;
        // SAFETY: checked non-null; the caller's output pointer.
        unsafe { write_out(value, v) }
    }
}
