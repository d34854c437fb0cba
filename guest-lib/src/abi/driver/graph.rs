// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Stream capture, graphs and stream-ordered allocation through the driver API, over the
//! runtime's implementation (the handle types are the same objects, as in CUDA: a `CUgraph`
//! is a `cudaGraph_t`, a `CUmemoryPool` a `cudaMemPool_t`): `cuStreamBeginCapture`,
//! `cuStreamEndCapture`, `cuStreamIsCapturing`, `cuGraphCreate`/`Destroy`/`GetNodes`,
//! `cuGraphInstantiateWithFlags`, `cuGraphUpload`, `cuGraphLaunch`, `cuGraphExecDestroy`,
//! `cuMemAllocAsync`, `cuMemFreeAsync`, `cuMemAllocFromPoolAsync` and the memory pool calls;
//! and the explicit graph-building calls: kernel (a `CUfunction`), memset, memcpy (linear
//! memory), host, empty, child-graph and event nodes, dependencies and edges, node types,
//! clone, destroy.

use std::ffi::{c_int, c_uint, c_void};

use crate::abi::node_args as gp;
use crate::core::context::{current, disown, own};
use crate::core::graph as g;
use crate::core::graph::{cudaGraph_t, cudaGraphExec_t, cudaGraphNode_t};
use crate::core::graph_node::{cudaHostNodeParams, cudaMemsetParams};
use crate::core::pool::{cudaMemPool_t, cudaMemPoolProps, cudaMemPoolPtrExportData};
use crate::core::user_object as uo;
use crate::error::CuError;
use crate::ffi::CUdeviceptr;
use crate::ffi::{cudaEvent_t, cudaStream_t};

/// `CUDA_KERNEL_NODE_PARAMS` (the CUDA 10 layout, `cuGraphAddKernelNode`).
#[repr(C)]
pub struct CUDA_KERNEL_NODE_PARAMS {
    func: *const crate::core::function::Function,
    grid: [c_uint; 3],
    block: [c_uint; 3],
    shared_mem: c_uint,
    kernel_params: *mut *mut c_void,
    extra: *mut *mut c_void,
}

/// `CUDA_KERNEL_NODE_PARAMS_v2` (CUDA 12, `cuGraphAddKernelNode_v2`): also a `CUkernel`
/// (used when `func` is null) and a context.
#[repr(C)]
pub struct CUDA_KERNEL_NODE_PARAMS_v2 {
    v1: CUDA_KERNEL_NODE_PARAMS,
    kern: *const crate::core::function::Function,
    ctx: *mut c_void,
}

/// `CUDA_MEMCPY_NODE_PARAMS`: flags, a context and a `CUDA_MEMCPY3D`.
#[repr(C)]
struct MemcpyNodeParams {
    flags: c_int,
    reserved: c_int,
    ctx: *mut c_void,
    copy: super::texture::CUDA_MEMCPY3D,
}

/// The kernel and copy nodes of `CUgraphNodeParams`, whose union members differ from the
/// runtime's: `CUDA_KERNEL_NODE_PARAMS_v3` (laid out as `_v2`) and `CUDA_MEMCPY_NODE_PARAMS`.
///
/// # Safety
///
/// The kernel parameters' pointers are valid as the API requires (see `gp::Typed`).
unsafe fn typed(p: &gp::cudaGraphNodeParams) -> crate::error::Result<g::Kind> {
    if p.type_ == g::node_type::KERNEL {
        // SAFETY: the kernel parameters are plain C data (integers and pointers) that fit
        // the union.
        let k = unsafe { p.union_as::<CUDA_KERNEL_NODE_PARAMS_v2>() };
        // SAFETY: the caller's contract.
        return unsafe { kernel_kind(&k.v1, v2_func(k)) }.map_err(|e| crate::error::Error(e.0));
    }
    // SAFETY: as above, for the copy parameters.
    let m = unsafe { p.union_as::<MemcpyNodeParams>() };
    if m.flags != 0 || m.reserved != 0 {
        return Err(crate::error::Error::INVALID_VALUE);
    }
    let copy = super::texture::graph_copy(&m.copy).map_err(|e| crate::error::Error(e.0))?;
    Ok(g::Kind::Memcpy(copy))
}

/// # Safety
///
/// `out` is null or writable; `deps` is null or holds `ndeps` handles.
unsafe fn kernel_node(
    out: *mut cudaGraphNode_t,
    graph: cudaGraph_t,
    deps: *const cudaGraphNode_t,
    ndeps: usize,
    p: &CUDA_KERNEL_NODE_PARAMS,
    func: *const crate::core::function::Function,
) -> Result<(), CuError> {
    // SAFETY: the caller's contract.
    let kind = unsafe { kernel_kind(p, func)? };
    // SAFETY: the caller's contract.
    Ok(unsafe { crate::abi::graph_ptrs::add_node(out, graph, deps, ndeps, || Ok(kind)) }?)
}

/// A kernel node's parameters as the driver gives them out: `cudaKernelNodeParams` and
/// `CUDA_KERNEL_NODE_PARAMS` are laid out alike (a function, the grid and block sizes, the
/// shared memory, the argument pointers and `extra`).
fn kernel_params_of(node: cudaGraphNode_t) -> Result<CUDA_KERNEL_NODE_PARAMS, CuError> {
    let p = g::get_kind(node, |k| match k {
        g::Kind::Kernel(k) => Some(k.to_c()),
        _ => None,
    })?;
    Ok(CUDA_KERNEL_NODE_PARAMS {
        func: p.func.cast(),
        grid: [p.grid.x, p.grid.y, p.grid.z],
        block: [p.block.x, p.block.y, p.block.z],
        shared_mem: p.shared_mem,
        kernel_params: p.kernel_params,
        extra: std::ptr::null_mut(),
    })
}

/// The kernel node a `CUDA_KERNEL_NODE_PARAMS` describes (`func`, or `kern` where a v2
/// struct has no `func`).
///
/// # Safety
///
/// `p`'s argument pointers (`kernelParams`, `extra`) are valid as the API requires.
unsafe fn kernel_kind(
    p: &CUDA_KERNEL_NODE_PARAMS,
    func: *const crate::core::function::Function,
) -> Result<g::Kind, CuError> {
    // SAFETY: the caller's contract.
    let args = unsafe { crate::ffi::KernelArgs::new(p.kernel_params, p.extra) };
    super::exec::kernel_node(func, p.grid, p.block, p.shared_mem, args)
}

/// The function of a v2 struct: `func`, or `kern` where `func` is null.
fn v2_func(p: &CUDA_KERNEL_NODE_PARAMS_v2) -> *const crate::core::function::Function {
    if p.v1.func.is_null() {
        p.kern
    } else {
        p.v1.func
    }
}

/// The caller's parameter struct.
fn params<'a, T>(p: *const T) -> Result<&'a T, CuError> {
    // SAFETY: the caller's parameters (the API's contract), checked for null.
    unsafe { p.as_ref() }.ok_or(CuError::INVALID_VALUE)
}

entry_lib! {
    fn cuGraphAddNode(out: *mut cudaGraphNode_t, graph: cudaGraph_t, deps: *const cudaGraphNode_t, n: usize, p: *mut gp::cudaGraphNodeParams) -> Result<(), CuError> {
        current()?;
        // SAFETY: the caller's arguments, valid as the API requires.
        Ok(unsafe { gp::add(out, graph, deps, std::ptr::null(), n, p, true, Some(typed)) }?)
    }

    fn cuGraphAddNode_v2(out: *mut cudaGraphNode_t, graph: cudaGraph_t, deps: *const cudaGraphNode_t, edges: *const u8, n: usize, p: *mut gp::cudaGraphNodeParams) -> Result<(), CuError> {
        current()?;
        // SAFETY: the caller's arguments, valid as the API requires.
        Ok(unsafe { gp::add(out, graph, deps, edges, n, p, true, Some(typed)) }?)
    }

    fn cuGraphNodeSetParams(node: cudaGraphNode_t, p: *mut gp::cudaGraphNodeParams) -> Result<(), CuError> {
        current()?;
        // SAFETY: the caller's arguments, valid as the API requires.
        Ok(unsafe { gp::set(node, p, Some(typed)) }?)
    }

    fn cuGraphExecNodeSetParams(exec: cudaGraphExec_t, node: cudaGraphNode_t, p: *mut gp::cudaGraphNodeParams) -> Result<(), CuError> {
        current()?;
        // SAFETY: the caller's arguments, valid as the API requires.
        Ok(unsafe { gp::exec_set_params(exec, node, p, Some(typed)) }?)
    }

    fn cuGraphDebugDotPrint(graph: cudaGraph_t, path: *const std::ffi::c_char, _flags: c_uint) -> Result<(), CuError> {
        current()?;
        // SAFETY: the caller's NUL-terminated path; `c_path` checks it for null.
        Ok(g::dot_print(graph, unsafe { crate::ffi::c_path(path)? })?)
    }

    fn cuGraphExecEventRecordNodeSetEvent(exec: cudaGraphExec_t, node: cudaGraphNode_t, e: cudaEvent_t) -> Result<(), CuError> {
        current()?;
        let ev = crate::core::handle::event_handle(crate::client::client()?, e).map(g::Kind::EventRecord);
        Ok(crate::core::graph_exec::exec_set(exec, node, ev)?)
    }

    fn cuGraphExecEventWaitNodeSetEvent(exec: cudaGraphExec_t, node: cudaGraphNode_t, e: cudaEvent_t) -> Result<(), CuError> {
        current()?;
        let ev = crate::core::handle::event_handle(crate::client::client()?, e).map(g::Kind::EventWait);
        Ok(crate::core::graph_exec::exec_set(exec, node, ev)?)
    }

    fn cuGraphExecChildGraphNodeSetParams(exec: cudaGraphExec_t, node: cudaGraphNode_t, child: cudaGraph_t) -> Result<(), CuError> {
        current()?;
        Ok(crate::core::graph_exec::exec_child_set(exec, node, child)?)
    }

    fn cuDeviceGetGraphMemAttribute(dev: c_int, attr: c_int, value: *mut c_void) -> Result<(), CuError> {
        crate::core::context::check_device(dev)?;
        // CUgraphMem_attribute numbers as the runtime's cudaGraphMemAttributeType.
        // SAFETY: the caller's arguments, valid as the API requires.
        Ok(unsafe { gp::graph_mem_attribute(attr, value, false) }?)
    }

    fn cuDeviceSetGraphMemAttribute(dev: c_int, attr: c_int, value: *mut c_void) -> Result<(), CuError> {
        crate::core::context::check_device(dev)?;
        // SAFETY: the caller's arguments, valid as the API requires.
        Ok(unsafe { gp::graph_mem_attribute(attr, value, true) }?)
    }

    fn cuDeviceGraphMemTrim(dev: c_int) -> Result<(), CuError> {
        crate::core::context::check_device(dev)?;
        crate::core::graph_mem::trim();
        Ok(())
    }

    fn cuGraphExecUpdate_v2(exec: cudaGraphExec_t, graph: cudaGraph_t, info: *mut crate::core::graph_exec::cudaGraphExecUpdateResultInfo) -> Result<(), CuError> {
        current()?;
        // CUgraphExecUpdateResultInfo and its result codes are the runtime's.
        // SAFETY: the caller's arguments, valid as the API requires.
        Ok(unsafe { crate::abi::graph_args::exec_update(exec, graph, info) }?)
    }

    fn cuGraphKernelNodeGetAttribute(node: cudaGraphNode_t, id: c_int, out: *mut crate::core::attr_table::cudaLaunchAttributeValue) -> Result<(), CuError> {
        current()?;
        // CUkernelNodeAttrValue is the runtime's cudaLaunchAttributeValue, numbered alike.
        let v = crate::core::attrs::node_get(node, id)?;
        // SAFETY: the caller's output pointer, checked for null.
        Ok(unsafe { crate::ffi::write_out(out, v) }?)
    }

    fn cuGraphKernelNodeSetAttribute(node: cudaGraphNode_t, id: c_int, value: *const crate::core::attr_table::cudaLaunchAttributeValue) -> Result<(), CuError> {
        current()?;
        // SAFETY: the caller's value (the API's contract), checked for null.
        Ok(crate::core::attrs::node_set(node, id, unsafe { value.as_ref() })?)
    }

    fn cuGraphKernelNodeCopyAttributes(dst: cudaGraphNode_t, src: cudaGraphNode_t) -> Result<(), CuError> {
        current()?;
        Ok(crate::core::attrs::node_copy(dst, src)?)
    }

    fn cuGraphNodeSetEnabled(exec: cudaGraphExec_t, node: cudaGraphNode_t, on: c_uint) -> Result<(), CuError> {
        current()?;
        crate::core::graph_exec::enabled(exec, node, Some(on != 0))?;
        Ok(())
    }

    fn cuGraphNodeGetEnabled(exec: cudaGraphExec_t, node: cudaGraphNode_t, on: *mut c_uint) -> Result<(), CuError> {
        current()?;
        if on.is_null() {
            return Err(CuError::INVALID_VALUE);
        }
        let v = crate::core::graph_exec::enabled(exec, node, None)?;
        // SAFETY: the caller's output pointer (non-null).
        unsafe { super::out(on, c_uint::from(v)) }
    }

    fn cuGraphAddMemAllocNode(out: *mut cudaGraphNode_t, graph: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize, p: *mut crate::core::graph_mem::cudaMemAllocNodeParams) -> Result<(), CuError> {
        current()?;
        // CUDA_MEM_ALLOC_NODE_PARAMS is laid out as the runtime's cudaMemAllocNodeParams.
        // SAFETY: the caller's parameters, checked for null.
        let p = unsafe { p.as_mut() }.ok_or(CuError::INVALID_VALUE)?;
        // SAFETY: the caller's arguments, valid as the API requires.
        Ok(unsafe { gp::add_alloc(out, graph, deps, ndeps, p) }?)
    }

    fn cuGraphAddMemFreeNode(out: *mut cudaGraphNode_t, graph: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize, dptr: CUdeviceptr) -> Result<(), CuError> {
        current()?;
        // SAFETY: the caller's arguments, valid as the API requires.
        Ok(unsafe { gp::add_free(out, graph, deps, ndeps, dptr) }?)
    }

    fn cuGraphMemAllocNodeGetParams(node: cudaGraphNode_t, out: *mut crate::core::graph_mem::cudaMemAllocNodeParams) -> Result<(), CuError> {
        current()?;
        if out.is_null() {
            return Err(CuError::INVALID_VALUE);
        }
        let p = crate::core::graph_mem::alloc_node_params(node)?;
        // SAFETY: checked non-null; the caller's output struct.
        Ok(unsafe { crate::ffi::write_out(out, p) }?)
    }

    fn cuGraphMemFreeNodeGetParams(node: cudaGraphNode_t, dptr: *mut CUdeviceptr) -> Result<(), CuError> {
        current()?;
        let p = crate::core::graph_mem::free_node_ptr(node)?;
        // SAFETY: the caller's output pointer.
        unsafe { super::out(dptr, p) }
    }

    fn cuMemPoolSetAccess(pool: cudaMemPool_t, descs: *const crate::core::pool::cudaMemAccessDesc, count: usize) -> Result<(), CuError> {
        current()?;
        // CUmemAccessDesc and CUmemLocation are the runtime's structs.
        // SAFETY: `count` descriptors at `descs` (the API's contract).
        let descs = unsafe { crate::ffi::slice_in(descs, count) }?;
        Ok(crate::core::pool::set_access(pool, descs)?)
    }

    fn cuMemPoolGetAccess(flags: *mut c_int, pool: cudaMemPool_t, location: *mut crate::core::pool::cudaMemLocation) -> Result<(), CuError> {
        current()?;
        // SAFETY: the caller's location, checked for null.
        let a = crate::core::pool::get_access(pool, unsafe { location.as_ref() })?;
        // SAFETY: the caller's output pointer, checked for null.
        Ok(unsafe { crate::ffi::write_out(flags, a) }?)
    }

    fn cuStreamBeginCapture_v2(s: cudaStream_t, mode: u32) -> Result<(), CuError> {
        current()?;
        // SAFETY: the runtime checks the handle; CUstreamCaptureMode has cudaStreamCaptureMode's values.
        unsafe { crate::abi::capture_args::stream_begin_capture(s, mode) }.map_err(crate::error::CuError::from)
    }

    fn cuStreamEndCapture(s: cudaStream_t, g: *mut cudaGraph_t) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's output pointer.
        unsafe { crate::abi::capture_args::stream_end_capture(s, g) }.map_err(crate::error::CuError::from)
    }

    fn cuStreamIsCapturing(s: cudaStream_t, status: *mut u32) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's output pointer; the statuses have the same values.
        unsafe { crate::abi::capture_args::stream_is_capturing(s, status) }.map_err(crate::error::CuError::from)
    }

    // The rest of stream capture forwards to the runtime's forms: `CUstreamCaptureStatus`,
    // `CUstreamCaptureMode` and the update flags have the runtime's values, a driver graph
    // and node are the runtime's, and `CUgraphEdgeData` is `cudaGraphEdgeData`. `_ptsz`
    // forms take stream 0 as the calling thread's default stream.
    fn cuStreamBeginCapture(s: cudaStream_t) -> Result<(), CuError> {
        current()?;
        // SAFETY: the runtime checks the handle. The first form captures in global mode.
        unsafe { crate::abi::capture_args::stream_begin_capture(s, 0) }.map_err(crate::error::CuError::from)
    }

    fn cuStreamBeginCapture_ptsz(s: cudaStream_t) -> Result<(), CuError> {
        current()?;
        // SAFETY: as `cuStreamBeginCapture`.
        unsafe { crate::abi::capture_args::stream_begin_capture_ptsz(s, 0) }.map_err(crate::error::CuError::from)
    }

    fn cuStreamBeginCapture_v2_ptsz(s: cudaStream_t, mode: u32) -> Result<(), CuError> {
        current()?;
        // SAFETY: the runtime checks the handle and the mode.
        unsafe { crate::abi::capture_args::stream_begin_capture_ptsz(s, mode) }.map_err(crate::error::CuError::from)
    }

    fn cuStreamBeginCaptureToGraph(s: cudaStream_t, graph: cudaGraph_t, deps: *const cudaGraphNode_t, edges: *const u8, n: usize, mode: u32) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's arrays of `n` entries; the runtime checks them.
        unsafe { crate::abi::capture_args::stream_begin_capture_to_graph(s, graph, deps, edges, n, mode) }.map_err(crate::error::CuError::from)
    }

    fn cuStreamBeginCaptureToGraph_ptsz(s: cudaStream_t, graph: cudaGraph_t, deps: *const cudaGraphNode_t, edges: *const u8, n: usize, mode: u32) -> Result<(), CuError> {
        current()?;
        // SAFETY: as `cuStreamBeginCaptureToGraph`.
        unsafe { crate::abi::capture_args::stream_begin_capture_to_graph_ptsz(s, graph, deps, edges, n, mode) }.map_err(crate::error::CuError::from)
    }

    fn cuStreamEndCapture_ptsz(s: cudaStream_t, graph: *mut cudaGraph_t) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's output pointer.
        unsafe { crate::abi::capture_args::stream_end_capture_ptsz(s, graph) }.map_err(crate::error::CuError::from)
    }

    fn cuStreamIsCapturing_ptsz(s: cudaStream_t, status: *mut u32) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's output pointer.
        unsafe { crate::abi::capture_args::stream_is_capturing_ptsz(s, status) }.map_err(crate::error::CuError::from)
    }

    fn cuStreamGetCaptureInfo(s: cudaStream_t, status: *mut u32, id: *mut u64) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's output pointers (the first form's two).
        unsafe { crate::abi::capture_args::v12_stream_get_capture_info(s, status, id) }.map_err(crate::error::CuError::from)
    }

    fn cuStreamGetCaptureInfo_ptsz(s: cudaStream_t, status: *mut u32, id: *mut u64) -> Result<(), CuError> {
        current()?;
        // SAFETY: as `cuStreamGetCaptureInfo`.
        unsafe { crate::abi::capture_args::v12_stream_get_capture_info_ptsz(s, status, id) }.map_err(crate::error::CuError::from)
    }

    fn cuStreamGetCaptureInfo_v2(s: cudaStream_t, status: *mut u32, id: *mut u64, graph: *mut cudaGraph_t, deps: *mut *const cudaGraphNode_t, n: *mut usize) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's output pointers.
        unsafe { crate::abi::capture_args::stream_get_capture_info_v2(s, status, id, graph, deps, n) }.map_err(crate::error::CuError::from)
    }

    fn cuStreamGetCaptureInfo_v2_ptsz(s: cudaStream_t, status: *mut u32, id: *mut u64, graph: *mut cudaGraph_t, deps: *mut *const cudaGraphNode_t, n: *mut usize) -> Result<(), CuError> {
        current()?;
        // SAFETY: as `cuStreamGetCaptureInfo_v2`.
        unsafe { crate::abi::capture_args::stream_get_capture_info_v2_ptsz(s, status, id, graph, deps, n) }.map_err(crate::error::CuError::from)
    }

    fn cuStreamGetCaptureInfo_v3(s: cudaStream_t, status: *mut u32, id: *mut u64, graph: *mut cudaGraph_t, deps: *mut *const cudaGraphNode_t, edges: *mut *const c_void, n: *mut usize) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's output pointers.
        unsafe { crate::abi::capture_args::stream_get_capture_info_v3(s, status, id, graph, deps, edges, n) }.map_err(crate::error::CuError::from)
    }

    fn cuStreamGetCaptureInfo_v3_ptsz(s: cudaStream_t, status: *mut u32, id: *mut u64, graph: *mut cudaGraph_t, deps: *mut *const cudaGraphNode_t, edges: *mut *const c_void, n: *mut usize) -> Result<(), CuError> {
        current()?;
        // SAFETY: as `cuStreamGetCaptureInfo_v3`.
        unsafe { crate::abi::capture_args::stream_get_capture_info_v3_ptsz(s, status, id, graph, deps, edges, n) }.map_err(crate::error::CuError::from)
    }

    fn cuStreamUpdateCaptureDependencies(s: cudaStream_t, deps: *const cudaGraphNode_t, n: usize, flags: c_uint) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's array of `n` nodes; the runtime checks it.
        unsafe { crate::abi::capture_args::v12_stream_update_capture_dependencies(s, deps, n, flags) }.map_err(crate::error::CuError::from)
    }

    fn cuStreamUpdateCaptureDependencies_ptsz(s: cudaStream_t, deps: *const cudaGraphNode_t, n: usize, flags: c_uint) -> Result<(), CuError> {
        current()?;
        // SAFETY: as `cuStreamUpdateCaptureDependencies`.
        unsafe { crate::abi::capture_args::v12_stream_update_capture_dependencies_ptsz(s, deps, n, flags) }.map_err(crate::error::CuError::from)
    }

    fn cuStreamUpdateCaptureDependencies_v2(s: cudaStream_t, deps: *const cudaGraphNode_t, edges: *const u8, n: usize, flags: c_uint) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's arrays of `n` entries; the runtime checks them.
        unsafe { crate::abi::capture_args::stream_update_capture_dependencies_v2(s, deps, edges, n, flags) }.map_err(crate::error::CuError::from)
    }

    fn cuStreamUpdateCaptureDependencies_v2_ptsz(s: cudaStream_t, deps: *const cudaGraphNode_t, edges: *const u8, n: usize, flags: c_uint) -> Result<(), CuError> {
        current()?;
        // SAFETY: as `cuStreamUpdateCaptureDependencies_v2`.
        unsafe { crate::abi::capture_args::stream_update_capture_dependencies_v2_ptsz(s, deps, edges, n, flags) }.map_err(crate::error::CuError::from)
    }

    fn cuThreadExchangeStreamCaptureMode(mode: *mut u32) -> Result<(), CuError> {
        // A thread's setting: no context needed.
        // SAFETY: forwarding the caller's in/out pointer; the runtime checks it.
        unsafe { crate::abi::capture_args::thread_exchange_stream_capture_mode(mode) }.map_err(crate::error::CuError::from)
    }

    fn cuGraphCreate(g: *mut cudaGraph_t, flags: c_uint) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's output pointer.
        unsafe { crate::abi::graph_args::graph_create(g, flags) }.map_err(crate::error::CuError::from)
    }

    fn cuGraphDestroy(g: cudaGraph_t) -> Result<(), CuError> {
        current()?;
        crate::abi::graph_args::graph_destroy(g).map_err(crate::error::CuError::from)
    }

    fn cuGraphGetNodes(g: cudaGraph_t, nodes: *mut cudaGraphNode_t, num: *mut usize) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's pointers.
        unsafe { crate::abi::graph_args::graph_get_nodes(g, nodes, num) }.map_err(crate::error::CuError::from)
    }

    fn cuGraphInstantiateWithFlags(exec: *mut cudaGraphExec_t, g: cudaGraph_t, flags: u64) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's output pointer; the flags have the same values.
        unsafe { crate::abi::graph_args::instantiate(exec, g, flags, false) }.map_err(crate::error::CuError::from)
    }

    fn cuGraphInstantiateWithParams(exec: *mut cudaGraphExec_t, g: cudaGraph_t, p: *mut crate::core::graph_exec::cudaGraphInstantiateParams) -> Result<(), CuError> {
        current()?;
        // CUDA_GRAPH_INSTANTIATE_PARAMS has the runtime's layout (flags, upload stream, error
        // node, result).
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { crate::abi::graph_args::instantiate_with_params(exec, g, p, false) }.map_err(CuError::from)
    }

    fn cuGraphInstantiateWithParams_ptsz(exec: *mut cudaGraphExec_t, g: cudaGraph_t, p: *mut crate::core::graph_exec::cudaGraphInstantiateParams) -> Result<(), CuError> {
        current()?;
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { crate::abi::graph_args::instantiate_with_params(exec, g, p, true) }.map_err(CuError::from)
    }

    fn cuGraphUpload(exec: cudaGraphExec_t, s: cudaStream_t) -> Result<(), CuError> {
        current()?;
        crate::core::graph_exec::graph_upload(exec, s).map_err(crate::error::CuError::from)
    }

    fn cuGraphLaunch(exec: cudaGraphExec_t, s: cudaStream_t) -> Result<(), CuError> {
        current()?;
        crate::core::graph_exec::graph_launch(exec, s).map_err(crate::error::CuError::from)
    }

    fn cuGraphExecDestroy(exec: cudaGraphExec_t) -> Result<(), CuError> {
        current()?;
        crate::core::graph_exec::graph_exec_destroy(exec).map_err(crate::error::CuError::from)
    }

    fn cuMemAllocAsync(dptr: *mut CUdeviceptr, size: usize, s: cudaStream_t) -> Result<(), CuError> {
        current()?;
        if size == 0 {
            return Err(CuError::INVALID_VALUE);
        }
        if dptr.is_null() {
            return Err(CuError::INVALID_VALUE);
        }
        let p = crate::core::pool::malloc_async(size, s)?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { super::out(dptr, p) }?;
        own(|o| o.allocs.push(p))
    }

    fn cuMemAllocFromPoolAsync(dptr: *mut CUdeviceptr, size: usize, pool: cudaMemPool_t, s: cudaStream_t) -> Result<(), CuError> {
        current()?;
        crate::core::pool::pool_of(pool)?;
        if dptr.is_null() {
            return Err(CuError::INVALID_VALUE);
        }
        let p = crate::core::pool::malloc_from_pool_async(size, pool, s)?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { super::out(dptr, p) }?;
        own(|o| o.allocs.push(p))
    }

    fn cuMemFreeAsync(dptr: CUdeviceptr, s: cudaStream_t) -> Result<(), CuError> {
        current()?;
        crate::core::pool::free_async(dptr, s)?;
        disown(|o| o.allocs.retain(|&p| p != dptr));
        Ok(())
    }

    fn cuDeviceGetDefaultMemPool(pool: *mut cudaMemPool_t, dev: c_int) -> Result<(), CuError> {
        let p = crate::core::pool::device_get_default_mem_pool(dev)?;
        // SAFETY: the caller's output pointer, checked for null.
        Ok(unsafe { crate::ffi::write_out(pool, p) }?)
    }

    fn cuDeviceGetMemPool(pool: *mut cudaMemPool_t, dev: c_int) -> Result<(), CuError> {
        let p = crate::core::pool::device_get_mem_pool(dev)?;
        // SAFETY: the caller's output pointer, checked for null.
        Ok(unsafe { crate::ffi::write_out(pool, p) }?)
    }

    fn cuDeviceSetMemPool(dev: c_int, pool: cudaMemPool_t) -> Result<(), CuError> {
        Ok(crate::core::pool::device_set_mem_pool(dev, pool)?)
    }

    fn cuMemPoolCreate(pool: *mut cudaMemPool_t, props: *const cudaMemPoolProps) -> Result<(), CuError> {
        current()?;
        // SAFETY: the caller's properties, checked for null; CUmemPoolProps has
        // cudaMemPoolProps' layout.
        let props = unsafe { props.as_ref() };
        if props.is_some() && pool.is_null() {
            return Err(CuError::INVALID_VALUE);
        }
        let h = crate::core::pool::mem_pool_create(props)?;
        // SAFETY: the caller's output pointer, checked for null.
        Ok(unsafe { crate::ffi::write_out(pool, h) }?)
    }

    fn cuMemPoolDestroy(pool: cudaMemPool_t) -> Result<(), CuError> {
        Ok(crate::core::pool::mem_pool_destroy(pool)?)
    }

    fn cuMemPoolTrimTo(pool: cudaMemPool_t, keep: usize) -> Result<(), CuError> {
        Ok(crate::core::pool::mem_pool_trim_to(pool, keep)?)
    }

    fn cuMemPoolSetAttribute(pool: cudaMemPool_t, attr: c_int, value: *mut c_void) -> Result<(), CuError> {
        // SAFETY: the caller's value, of the attribute's type (CUmemPool_attribute has the
        // runtime's values and types).
        let v = unsafe { crate::abi::runtime::pool::read_attr(pool, attr, value) }?;
        Ok(crate::core::pool::mem_pool_set_attribute(pool, attr, v)?)
    }

    fn cuMemPoolGetAttribute(pool: cudaMemPool_t, attr: c_int, value: *mut c_void) -> Result<(), CuError> {
        // SAFETY: room for the attribute's type at `value` (the API's contract).
        Ok(unsafe { crate::abi::runtime::pool::get_attr(pool, attr, value) }?)
    }

    fn cuMemPoolExportToShareableHandle(handle: *mut c_void, pool: cudaMemPool_t, ty: c_int, flags: u64) -> Result<(), CuError> {
        let flags = c_uint::try_from(flags).map_err(|_| CuError::INVALID_VALUE)?;
        crate::core::pool::pool_of(pool)?;
        if handle.is_null() {
            return Err(CuError::INVALID_VALUE);
        }
        // CUmemAllocationHandleType has the runtime's values.
        let fd = crate::core::pool::mem_pool_export_to_shareable_handle(pool, ty, flags)?;
        // SAFETY: for a POSIX descriptor the caller's handle points at an int (checked for
        // null).
        Ok(unsafe { crate::ffi::write_out(handle.cast::<c_int>(), fd) }?)
    }

    fn cuMemPoolImportFromShareableHandle(pool: *mut cudaMemPool_t, handle: *mut c_void, ty: c_int, flags: u64) -> Result<(), CuError> {
        current()?;
        let flags = c_uint::try_from(flags).map_err(|_| CuError::INVALID_VALUE)?;
        if pool.is_null() {
            return Err(CuError::INVALID_VALUE);
        }
        // A POSIX descriptor comes as the handle's value.
        let h = crate::core::pool::mem_pool_import_from_shareable_handle(handle as usize as c_int, ty, flags)?;
        // SAFETY: the caller's output pointer, checked for null.
        Ok(unsafe { crate::ffi::write_out(pool, h) }?)
    }

    fn cuMemPoolExportPointer(data: *mut cudaMemPoolPtrExportData, ptr: CUdeviceptr) -> Result<(), CuError> {
        if data.is_null() {
            crate::client::client()?.check_sticky()?;
            return Err(CuError::INVALID_VALUE);
        }
        let d = crate::core::pool::mem_pool_export_pointer(ptr)?;
        // SAFETY: the caller's output pointer, checked for null; CUmemPoolPtrExportData has
        // the runtime's layout.
        Ok(unsafe { crate::ffi::write_out(data, d) }?)
    }

    fn cuMemPoolImportPointer(ptr: *mut CUdeviceptr, pool: cudaMemPool_t, data: *mut cudaMemPoolPtrExportData) -> Result<(), CuError> {
        if ptr.is_null() {
            crate::client::client()?.check_sticky()?;
            crate::core::pool::pool_of(pool)?;
            return Err(CuError::INVALID_VALUE);
        }
        // SAFETY: the caller's export data, checked for null.
        let p = crate::core::pool::mem_pool_import_pointer(pool, unsafe { data.as_ref() })?;
        // SAFETY: the caller's output pointer, checked for null.
        Ok(unsafe { crate::ffi::write_out(ptr, p) }?)
    }
}

// Explicit graph building: the graph objects are the runtime's (`crate::api::graph`), with
// the driver's parameter structs translated where they differ.
entry_lib! {
    fn cuGraphAddKernelNode(out: *mut cudaGraphNode_t, graph: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize, p: *const CUDA_KERNEL_NODE_PARAMS) -> Result<(), CuError> {
        let p = params(p)?;
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { kernel_node(out, graph, deps, ndeps, p, p.func) }
    }

    fn cuGraphAddKernelNode_v2(out: *mut cudaGraphNode_t, graph: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize, p: *const CUDA_KERNEL_NODE_PARAMS_v2) -> Result<(), CuError> {
        let p = params(p)?;
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { kernel_node(out, graph, deps, ndeps, &p.v1, v2_func(p)) }
    }

    fn cuGraphKernelNodeGetParams(node: cudaGraphNode_t, out: *mut CUDA_KERNEL_NODE_PARAMS) -> Result<(), CuError> {
        current()?;
        let p = kernel_params_of(node)?;
        // SAFETY: the caller's output pointer; `kernelParams` points into the node, valid
        // until its parameters change (as in CUDA).
        unsafe { super::out(out, p) }
    }

    fn cuGraphKernelNodeGetParams_v2(node: cudaGraphNode_t, out: *mut CUDA_KERNEL_NODE_PARAMS_v2) -> Result<(), CuError> {
        current()?;
        let v1 = kernel_params_of(node)?;
        // A `CUkernel` is its `CUfunction` here: both fields name it, so a caller that maps
        // either back (NVIDIA's static runtime maps the kernel) finds it.
        let ctx = crate::core::context::current()? as crate::core::context::CUcontext;
        let p = CUDA_KERNEL_NODE_PARAMS_v2 { kern: v1.func, v1, ctx };
        // SAFETY: as above.
        unsafe { super::out(out, p) }
    }

    fn cuGraphKernelNodeSetParams(node: cudaGraphNode_t, p: *const CUDA_KERNEL_NODE_PARAMS) -> Result<(), CuError> {
        current()?;
        let p = params(p)?;
        // SAFETY: the caller's kernel arguments (the API's contract).
        Ok(g::set_kind(node, unsafe { kernel_kind(p, p.func)? })?)
    }

    fn cuGraphKernelNodeSetParams_v2(node: cudaGraphNode_t, p: *const CUDA_KERNEL_NODE_PARAMS_v2) -> Result<(), CuError> {
        current()?;
        let p = params(p)?;
        // SAFETY: the caller's kernel arguments (the API's contract).
        Ok(g::set_kind(node, unsafe { kernel_kind(&p.v1, v2_func(p))? })?)
    }

    fn cuGraphExecKernelNodeSetParams(exec: cudaGraphExec_t, node: cudaGraphNode_t, p: *const CUDA_KERNEL_NODE_PARAMS) -> Result<(), CuError> {
        current()?;
        let p = params(p)?;
        // SAFETY: the caller's kernel arguments (the API's contract).
        Ok(crate::core::graph_exec::exec_set(exec, node, Ok(unsafe { kernel_kind(p, p.func)? }))?)
    }

    fn cuGraphExecKernelNodeSetParams_v2(exec: cudaGraphExec_t, node: cudaGraphNode_t, p: *const CUDA_KERNEL_NODE_PARAMS_v2) -> Result<(), CuError> {
        current()?;
        let p = params(p)?;
        // SAFETY: the caller's kernel arguments (the API's contract).
        Ok(crate::core::graph_exec::exec_set(exec, node, Ok(unsafe { kernel_kind(&p.v1, v2_func(p))? }))?)
    }

    fn cuGraphMemsetNodeGetParams(node: cudaGraphNode_t, out: *mut cudaMemsetParams) -> Result<(), CuError> {
        current()?;
        // SAFETY: CUDA_MEMSET_NODE_PARAMS has cudaMemsetParams' layout; the runtime checks
        // the pointers.
        unsafe { crate::abi::graph_args::graph_memset_node_get_params(node, out) }.map_err(crate::error::CuError::from)
    }

    fn cuGraphMemsetNodeSetParams(node: cudaGraphNode_t, p: *const cudaMemsetParams) -> Result<(), CuError> {
        current()?;
        // SAFETY: as above.
        unsafe { crate::abi::graph_args::graph_memset_node_set_params(node, p) }.map_err(crate::error::CuError::from)
    }

    fn cuGraphExecMemsetNodeSetParams(exec: cudaGraphExec_t, node: cudaGraphNode_t, p: *const cudaMemsetParams, _ctx: *mut c_void) -> Result<(), CuError> {
        current()?;
        // SAFETY: as above.
        unsafe { gp::exec_memset_node_set_params(exec, node, p) }.map_err(crate::error::CuError::from)
    }

    fn cuGraphMemcpyNodeSetParams(node: cudaGraphNode_t, p: *const super::texture::CUDA_MEMCPY3D) -> Result<(), CuError> {
        current()?;
        let cp = super::texture::graph_copy(p)?;
        Ok(g::set_kind(node, g::Kind::Memcpy(cp))?)
    }

    fn cuGraphExecMemcpyNodeSetParams(exec: cudaGraphExec_t, node: cudaGraphNode_t, p: *const super::texture::CUDA_MEMCPY3D, _ctx: *mut c_void) -> Result<(), CuError> {
        current()?;
        let cp = super::texture::graph_copy(p)?;
        Ok(crate::core::graph_exec::exec_set(exec, node, Ok(g::Kind::Memcpy(cp)))?)
    }

    fn cuGraphHostNodeGetParams(node: cudaGraphNode_t, out: *mut cudaHostNodeParams) -> Result<(), CuError> {
        current()?;
        // SAFETY: CUDA_HOST_NODE_PARAMS has cudaHostNodeParams' layout; the runtime checks
        // the pointers.
        unsafe { crate::abi::graph_args::graph_host_node_get_params(node, out) }.map_err(crate::error::CuError::from)
    }

    fn cuGraphHostNodeSetParams(node: cudaGraphNode_t, p: *const cudaHostNodeParams) -> Result<(), CuError> {
        current()?;
        // SAFETY: as above.
        unsafe { crate::abi::graph_args::graph_host_node_set_params(node, p) }.map_err(crate::error::CuError::from)
    }

    fn cuGraphExecHostNodeSetParams(exec: cudaGraphExec_t, node: cudaGraphNode_t, p: *const cudaHostNodeParams) -> Result<(), CuError> {
        current()?;
        // SAFETY: as above.
        unsafe { gp::exec_host_node_set_params(exec, node, p) }.map_err(crate::error::CuError::from)
    }

    fn cuGraphAddMemsetNode(out: *mut cudaGraphNode_t, graph: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize, p: *const cudaMemsetParams, _ctx: *mut c_void) -> Result<(), CuError> {
        current()?;
        // SAFETY: CUDA_MEMSET_NODE_PARAMS has cudaMemsetParams' layout (a CUdeviceptr where
        // the runtime has a pointer); the runtime checks it.
        unsafe { crate::abi::graph_args::graph_add_memset_node(out, graph, deps, ndeps, p) }.map_err(crate::error::CuError::from)
    }

    fn cuGraphAddMemcpyNode(out: *mut cudaGraphNode_t, graph: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize, p: *const super::texture::CUDA_MEMCPY3D, _ctx: *mut c_void) -> Result<(), CuError> {
        current()?;
        let cp = super::texture::graph_copy(p)?;
        // SAFETY: the caller's arguments, valid as the API requires.
        Ok(unsafe { crate::abi::graph_ptrs::add_node(out, graph, deps, ndeps, || Ok(g::Kind::Memcpy(cp))) }?)
    }

    fn cuGraphAddHostNode(out: *mut cudaGraphNode_t, graph: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize, p: *const cudaHostNodeParams) -> Result<(), CuError> {
        current()?;
        // SAFETY: CUDA_HOST_NODE_PARAMS has cudaHostNodeParams' layout; the runtime checks it.
        unsafe { crate::abi::graph_args::graph_add_host_node(out, graph, deps, ndeps, p) }.map_err(crate::error::CuError::from)
    }

    fn cuGraphAddEmptyNode(out: *mut cudaGraphNode_t, graph: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's pointers; the runtime checks them.
        unsafe { crate::abi::graph_args::graph_add_empty_node(out, graph, deps, ndeps) }.map_err(crate::error::CuError::from)
    }

    fn cuGraphAddChildGraphNode(out: *mut cudaGraphNode_t, graph: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize, child: cudaGraph_t) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's pointers; the runtime checks them.
        unsafe { crate::abi::graph_args::graph_add_child_graph_node(out, graph, deps, ndeps, child) }.map_err(crate::error::CuError::from)
    }

    fn cuGraphAddEventRecordNode(out: *mut cudaGraphNode_t, graph: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize, e: cudaEvent_t) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's pointers; a CUevent is a cudaEvent_t.
        unsafe { crate::abi::graph_args::graph_add_event_record_node(out, graph, deps, ndeps, e) }.map_err(crate::error::CuError::from)
    }

    fn cuGraphAddEventWaitNode(out: *mut cudaGraphNode_t, graph: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize, e: cudaEvent_t) -> Result<(), CuError> {
        current()?;
        // SAFETY: as for cuGraphAddEventRecordNode.
        unsafe { crate::abi::graph_args::graph_add_event_wait_node(out, graph, deps, ndeps, e) }.map_err(crate::error::CuError::from)
    }

    fn cuGraphAddDependencies(graph: cudaGraph_t, from: *const cudaGraphNode_t, to: *const cudaGraphNode_t, n: usize) -> Result<(), CuError> {
        // SAFETY: forwarding the caller's arrays of `n` nodes; the runtime checks them.
        unsafe { crate::abi::graph_args::graph_add_dependencies(graph, from, to, std::ptr::null(), n) }.map_err(crate::error::CuError::from)
    }

    fn cuGraphAddDependencies_v2(graph: cudaGraph_t, from: *const cudaGraphNode_t, to: *const cudaGraphNode_t, edge_data: *const u8, n: usize) -> Result<(), CuError> {
        // SAFETY: as for cuGraphAddDependencies (edge data has the runtime's layout).
        unsafe { crate::abi::graph_args::graph_add_dependencies(graph, from, to, edge_data, n) }.map_err(crate::error::CuError::from)
    }

    fn cuGraphRemoveDependencies(graph: cudaGraph_t, from: *const cudaGraphNode_t, to: *const cudaGraphNode_t, n: usize) -> Result<(), CuError> {
        // SAFETY: as for cuGraphAddDependencies.
        unsafe { crate::abi::graph_args::graph_remove_dependencies(graph, from, to, std::ptr::null(), n) }.map_err(crate::error::CuError::from)
    }

    fn cuGraphRemoveDependencies_v2(graph: cudaGraph_t, from: *const cudaGraphNode_t, to: *const cudaGraphNode_t, edge_data: *const u8, n: usize) -> Result<(), CuError> {
        // SAFETY: as for cuGraphAddDependencies_v2.
        unsafe { crate::abi::graph_args::graph_remove_dependencies(graph, from, to, edge_data, n) }.map_err(crate::error::CuError::from)
    }

    fn cuGraphGetEdges(graph: cudaGraph_t, from: *mut cudaGraphNode_t, to: *mut cudaGraphNode_t, num: *mut usize) -> Result<(), CuError> {
        // SAFETY: forwarding the caller's output arrays and count.
        unsafe { crate::abi::graph_args::graph_get_edges(graph, from, to, std::ptr::null_mut(), num) }.map_err(crate::error::CuError::from)
    }

    fn cuGraphGetEdges_v2(graph: cudaGraph_t, from: *mut cudaGraphNode_t, to: *mut cudaGraphNode_t, edge_data: *mut u8, num: *mut usize) -> Result<(), CuError> {
        // SAFETY: as for cuGraphGetEdges.
        unsafe { crate::abi::graph_args::graph_get_edges(graph, from, to, edge_data, num) }.map_err(crate::error::CuError::from)
    }

    fn cuGraphGetRootNodes(graph: cudaGraph_t, out: *mut cudaGraphNode_t, num: *mut usize) -> Result<(), CuError> {
        // SAFETY: forwarding the caller's output array and count.
        unsafe { crate::abi::graph_args::graph_get_root_nodes(graph, out, num) }.map_err(crate::error::CuError::from)
    }

    fn cuGraphNodeGetDependencies(node: cudaGraphNode_t, out: *mut cudaGraphNode_t, num: *mut usize) -> Result<(), CuError> {
        // SAFETY: as for cuGraphGetRootNodes.
        unsafe { crate::abi::graph_args::graph_node_get_dependencies(node, out, std::ptr::null_mut(), num) }.map_err(crate::error::CuError::from)
    }

    fn cuGraphNodeGetDependencies_v2(node: cudaGraphNode_t, out: *mut cudaGraphNode_t, edge_data: *mut u8, num: *mut usize) -> Result<(), CuError> {
        // SAFETY: as for cuGraphGetRootNodes.
        unsafe { crate::abi::graph_args::graph_node_get_dependencies(node, out, edge_data, num) }.map_err(crate::error::CuError::from)
    }

    fn cuGraphNodeGetDependentNodes(node: cudaGraphNode_t, out: *mut cudaGraphNode_t, num: *mut usize) -> Result<(), CuError> {
        // SAFETY: as for cuGraphGetRootNodes.
        unsafe { crate::abi::graph_args::graph_node_get_dependent_nodes(node, out, std::ptr::null_mut(), num) }.map_err(crate::error::CuError::from)
    }

    fn cuGraphNodeGetDependentNodes_v2(node: cudaGraphNode_t, out: *mut cudaGraphNode_t, edge_data: *mut u8, num: *mut usize) -> Result<(), CuError> {
        // SAFETY: as for cuGraphGetRootNodes.
        unsafe { crate::abi::graph_args::graph_node_get_dependent_nodes(node, out, edge_data, num) }.map_err(crate::error::CuError::from)
    }

    fn cuGraphNodeGetType(node: cudaGraphNode_t, out: *mut u32) -> Result<(), CuError> {
        // SAFETY: forwarding the caller's output pointer; CUgraphNodeType has
        // cudaGraphNodeType's values.
        unsafe { crate::abi::graph_args::graph_node_get_type(node, out) }.map_err(crate::error::CuError::from)
    }

    fn cuGraphDestroyNode(node: cudaGraphNode_t) -> Result<(), CuError> {
        crate::abi::graph_args::graph_destroy_node(node).map_err(crate::error::CuError::from)
    }

    fn cuUserObjectCreate(out: *mut uo::cudaUserObject_t, ptr: *mut c_void, destroy: Option<unsafe extern "C" fn(*mut c_void)>, initial: c_uint, flags: c_uint) -> Result<(), CuError> {
        // SAFETY: forwarding the caller's pointers; the runtime checks them.
        unsafe { crate::abi::graph_args::user_object_create(out, ptr, destroy, initial, flags) }.map_err(crate::error::CuError::from)
    }

    fn cuUserObjectRetain(obj: uo::cudaUserObject_t, count: c_uint) -> Result<(), CuError> {
        crate::core::user_object::user_object_retain(obj, count).map_err(crate::error::CuError::from)
    }

    fn cuUserObjectRelease(obj: uo::cudaUserObject_t, count: c_uint) -> Result<(), CuError> {
        crate::core::user_object::user_object_release(obj, count).map_err(crate::error::CuError::from)
    }

    fn cuGraphRetainUserObject(graph: cudaGraph_t, obj: uo::cudaUserObject_t, count: c_uint, flags: c_uint) -> Result<(), CuError> {
        crate::core::user_object::graph_retain_user_object(graph, obj, count, flags).map_err(crate::error::CuError::from)
    }

    fn cuGraphReleaseUserObject(graph: cudaGraph_t, obj: uo::cudaUserObject_t, count: c_uint) -> Result<(), CuError> {
        crate::core::user_object::graph_release_user_object(graph, obj, count).map_err(crate::error::CuError::from)
    }

    fn cuGraphClone(out: *mut cudaGraph_t, graph: cudaGraph_t) -> Result<(), CuError> {
        // SAFETY: forwarding the caller's output pointer.
        unsafe { crate::abi::graph_args::graph_clone(out, graph) }.map_err(crate::error::CuError::from)
    }

    fn cuGraphNodeFindInClone(out: *mut cudaGraphNode_t, node: cudaGraphNode_t, clone: cudaGraph_t) -> Result<(), CuError> {
        // SAFETY: forwarding the caller's output pointer.
        unsafe { crate::abi::graph_args::graph_node_find_in_clone(out, node, clone) }.map_err(crate::error::CuError::from)
    }

    fn cuGraphChildGraphNodeGetGraph(node: cudaGraphNode_t, out: *mut cudaGraph_t) -> Result<(), CuError> {
        // SAFETY: forwarding the caller's output pointer.
        unsafe { crate::abi::graph_args::graph_child_graph_node_get_graph(node, out) }.map_err(crate::error::CuError::from)
    }
}
