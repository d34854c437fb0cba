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

use super::context::{current, disown, own};
use super::memory::CUdeviceptr;
use super::rt;
use crate::abi::runtime::capture::{
    cudaStreamBeginCapture, cudaStreamEndCapture, cudaStreamIsCapturing,
};
use crate::abi::runtime::graph as rt_g;
use crate::abi::runtime::graph::{cudaGraphCreate, cudaGraphDestroy, cudaGraphGetNodes};
use crate::abi::runtime::graph_exec::{
    cudaGraphExecDestroy, cudaGraphInstantiateWithFlags, cudaGraphLaunch, cudaGraphUpload,
};
use crate::abi::runtime::pool::{
    cudaDeviceGetDefaultMemPool, cudaDeviceGetMemPool, cudaDeviceSetMemPool, cudaFreeAsync,
    cudaMallocAsync, cudaMallocFromPoolAsync, cudaMemPoolCreate, cudaMemPoolDestroy,
    cudaMemPoolExportPointer, cudaMemPoolExportToShareableHandle, cudaMemPoolGetAttribute,
    cudaMemPoolImportFromShareableHandle, cudaMemPoolImportPointer, cudaMemPoolSetAttribute,
    cudaMemPoolTrimTo,
};
use crate::abi::runtime::user_object as rt_uo;
use crate::core::graph as g;
use crate::core::graph::{cudaGraph_t, cudaGraphExec_t, cudaGraphNode_t};
use crate::core::graph_node::{cudaHostNodeParams, cudaMemsetParams};
use crate::core::pool::{cudaMemPool_t, cudaMemPoolProps, cudaMemPoolPtrExportData};
use crate::core::user_object as uo;
use crate::error::CuError;
use crate::ffi::{cudaEvent_t, cudaStream_t};

/// `CUDA_KERNEL_NODE_PARAMS` (the CUDA 10 layout, `cuGraphAddKernelNode`).
#[repr(C)]
pub struct CUDA_KERNEL_NODE_PARAMS {
    func: *const super::exec::Function,
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
    kern: *const super::exec::Function,
    ctx: *mut c_void,
}

fn kernel_node(
    out: *mut cudaGraphNode_t,
    graph: cudaGraph_t,
    deps: *const cudaGraphNode_t,
    ndeps: usize,
    p: &CUDA_KERNEL_NODE_PARAMS,
    func: *const super::exec::Function,
) -> Result<(), CuError> {
    let kind = kernel_kind(p, func)?;
    Ok(g::add_node(out, graph, deps, ndeps, || Ok(kind))?)
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
fn kernel_kind(
    p: &CUDA_KERNEL_NODE_PARAMS,
    func: *const super::exec::Function,
) -> Result<g::Kind, CuError> {
    super::exec::kernel_node(
        func,
        p.grid,
        p.block,
        p.shared_mem,
        p.kernel_params,
        p.extra,
    )
}

/// The function of a v2 struct: `func`, or `kern` where `func` is null.
fn v2_func(p: &CUDA_KERNEL_NODE_PARAMS_v2) -> *const super::exec::Function {
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
    fn cuStreamBeginCapture_v2(s: cudaStream_t, mode: u32) -> Result<(), CuError> {
        current()?;
        // SAFETY: the runtime checks the handle; CUstreamCaptureMode has cudaStreamCaptureMode's values.
        rt(unsafe { cudaStreamBeginCapture(s, mode) })
    }

    fn cuStreamEndCapture(s: cudaStream_t, g: *mut cudaGraph_t) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's output pointer.
        rt(unsafe { cudaStreamEndCapture(s, g) })
    }

    fn cuStreamIsCapturing(s: cudaStream_t, status: *mut u32) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's output pointer; the statuses have the same values.
        rt(unsafe { cudaStreamIsCapturing(s, status) })
    }

    // The rest of stream capture forwards to the runtime's forms: `CUstreamCaptureStatus`,
    // `CUstreamCaptureMode` and the update flags have the runtime's values, a driver graph
    // and node are the runtime's, and `CUgraphEdgeData` is `cudaGraphEdgeData`. `_ptsz`
    // forms take stream 0 as the calling thread's default stream.
    fn cuStreamBeginCapture(s: cudaStream_t) -> Result<(), CuError> {
        current()?;
        // SAFETY: the runtime checks the handle. The first form captures in global mode.
        rt(unsafe { cudaStreamBeginCapture(s, 0) })
    }

    fn cuStreamBeginCapture_ptsz(s: cudaStream_t) -> Result<(), CuError> {
        current()?;
        // SAFETY: as `cuStreamBeginCapture`.
        rt(unsafe { crate::abi::runtime::capture::cudaStreamBeginCapture_ptsz(s, 0) })
    }

    fn cuStreamBeginCapture_v2_ptsz(s: cudaStream_t, mode: u32) -> Result<(), CuError> {
        current()?;
        // SAFETY: the runtime checks the handle and the mode.
        rt(unsafe { crate::abi::runtime::capture::cudaStreamBeginCapture_ptsz(s, mode) })
    }

    fn cuStreamBeginCaptureToGraph(s: cudaStream_t, graph: cudaGraph_t, deps: *const cudaGraphNode_t, edges: *const u8, n: usize, mode: u32) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's arrays of `n` entries; the runtime checks them.
        rt(unsafe { crate::abi::runtime::capture::cudaStreamBeginCaptureToGraph(s, graph, deps, edges, n, mode) })
    }

    fn cuStreamBeginCaptureToGraph_ptsz(s: cudaStream_t, graph: cudaGraph_t, deps: *const cudaGraphNode_t, edges: *const u8, n: usize, mode: u32) -> Result<(), CuError> {
        current()?;
        // SAFETY: as `cuStreamBeginCaptureToGraph`.
        rt(unsafe { crate::abi::runtime::capture::cudaStreamBeginCaptureToGraph_ptsz(s, graph, deps, edges, n, mode) })
    }

    fn cuStreamEndCapture_ptsz(s: cudaStream_t, graph: *mut cudaGraph_t) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's output pointer.
        rt(unsafe { crate::abi::runtime::capture::cudaStreamEndCapture_ptsz(s, graph) })
    }

    fn cuStreamIsCapturing_ptsz(s: cudaStream_t, status: *mut u32) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's output pointer.
        rt(unsafe { crate::abi::runtime::capture::cudaStreamIsCapturing_ptsz(s, status) })
    }

    fn cuStreamGetCaptureInfo(s: cudaStream_t, status: *mut u32, id: *mut u64) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's output pointers (the first form's two).
        rt(unsafe { crate::abi::runtime::capture::__v12_cudaStreamGetCaptureInfo(s, status, id) })
    }

    fn cuStreamGetCaptureInfo_ptsz(s: cudaStream_t, status: *mut u32, id: *mut u64) -> Result<(), CuError> {
        current()?;
        // SAFETY: as `cuStreamGetCaptureInfo`.
        rt(unsafe { crate::abi::runtime::capture::__v12_cudaStreamGetCaptureInfo_ptsz(s, status, id) })
    }

    fn cuStreamGetCaptureInfo_v2(s: cudaStream_t, status: *mut u32, id: *mut u64, graph: *mut cudaGraph_t, deps: *mut *const cudaGraphNode_t, n: *mut usize) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's output pointers.
        rt(unsafe { crate::abi::runtime::capture::cudaStreamGetCaptureInfo_v2(s, status, id, graph, deps, n) })
    }

    fn cuStreamGetCaptureInfo_v2_ptsz(s: cudaStream_t, status: *mut u32, id: *mut u64, graph: *mut cudaGraph_t, deps: *mut *const cudaGraphNode_t, n: *mut usize) -> Result<(), CuError> {
        current()?;
        // SAFETY: as `cuStreamGetCaptureInfo_v2`.
        rt(unsafe { crate::abi::runtime::capture::cudaStreamGetCaptureInfo_v2_ptsz(s, status, id, graph, deps, n) })
    }

    fn cuStreamGetCaptureInfo_v3(s: cudaStream_t, status: *mut u32, id: *mut u64, graph: *mut cudaGraph_t, deps: *mut *const cudaGraphNode_t, edges: *mut *const c_void, n: *mut usize) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's output pointers.
        rt(unsafe { crate::abi::runtime::capture::cudaStreamGetCaptureInfo_v3(s, status, id, graph, deps, edges, n) })
    }

    fn cuStreamGetCaptureInfo_v3_ptsz(s: cudaStream_t, status: *mut u32, id: *mut u64, graph: *mut cudaGraph_t, deps: *mut *const cudaGraphNode_t, edges: *mut *const c_void, n: *mut usize) -> Result<(), CuError> {
        current()?;
        // SAFETY: as `cuStreamGetCaptureInfo_v3`.
        rt(unsafe { crate::abi::runtime::capture::cudaStreamGetCaptureInfo_v3_ptsz(s, status, id, graph, deps, edges, n) })
    }

    fn cuStreamUpdateCaptureDependencies(s: cudaStream_t, deps: *const cudaGraphNode_t, n: usize, flags: c_uint) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's array of `n` nodes; the runtime checks it.
        rt(unsafe { crate::abi::runtime::capture::__v12_cudaStreamUpdateCaptureDependencies(s, deps, n, flags) })
    }

    fn cuStreamUpdateCaptureDependencies_ptsz(s: cudaStream_t, deps: *const cudaGraphNode_t, n: usize, flags: c_uint) -> Result<(), CuError> {
        current()?;
        // SAFETY: as `cuStreamUpdateCaptureDependencies`.
        rt(unsafe { crate::abi::runtime::capture::__v12_cudaStreamUpdateCaptureDependencies_ptsz(s, deps, n, flags) })
    }

    fn cuStreamUpdateCaptureDependencies_v2(s: cudaStream_t, deps: *const cudaGraphNode_t, edges: *const u8, n: usize, flags: c_uint) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's arrays of `n` entries; the runtime checks them.
        rt(unsafe { crate::abi::runtime::capture::cudaStreamUpdateCaptureDependencies_v2(s, deps, edges, n, flags) })
    }

    fn cuStreamUpdateCaptureDependencies_v2_ptsz(s: cudaStream_t, deps: *const cudaGraphNode_t, edges: *const u8, n: usize, flags: c_uint) -> Result<(), CuError> {
        current()?;
        // SAFETY: as `cuStreamUpdateCaptureDependencies_v2`.
        rt(unsafe { crate::abi::runtime::capture::cudaStreamUpdateCaptureDependencies_v2_ptsz(s, deps, edges, n, flags) })
    }

    fn cuThreadExchangeStreamCaptureMode(mode: *mut u32) -> Result<(), CuError> {
        // A thread's setting: no context needed.
        // SAFETY: forwarding the caller's in/out pointer; the runtime checks it.
        rt(unsafe { crate::abi::runtime::capture::cudaThreadExchangeStreamCaptureMode(mode) })
    }

    fn cuGraphCreate(g: *mut cudaGraph_t, flags: c_uint) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's output pointer.
        rt(unsafe { cudaGraphCreate(g, flags) })
    }

    fn cuGraphDestroy(g: cudaGraph_t) -> Result<(), CuError> {
        current()?;
        // SAFETY: the runtime checks the handle.
        rt(unsafe { cudaGraphDestroy(g) })
    }

    fn cuGraphGetNodes(g: cudaGraph_t, nodes: *mut cudaGraphNode_t, num: *mut usize) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's pointers.
        rt(unsafe { cudaGraphGetNodes(g, nodes, num) })
    }

    fn cuGraphInstantiateWithFlags(exec: *mut cudaGraphExec_t, g: cudaGraph_t, flags: u64) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's output pointer; the flags have the same values.
        rt(unsafe { cudaGraphInstantiateWithFlags(exec, g, flags) })
    }

    fn cuGraphUpload(exec: cudaGraphExec_t, s: cudaStream_t) -> Result<(), CuError> {
        current()?;
        // SAFETY: the runtime checks the handles.
        rt(unsafe { cudaGraphUpload(exec, s) })
    }

    fn cuGraphLaunch(exec: cudaGraphExec_t, s: cudaStream_t) -> Result<(), CuError> {
        current()?;
        // SAFETY: the runtime checks the handles.
        rt(unsafe { cudaGraphLaunch(exec, s) })
    }

    fn cuGraphExecDestroy(exec: cudaGraphExec_t) -> Result<(), CuError> {
        current()?;
        // SAFETY: the runtime checks the handle.
        rt(unsafe { cudaGraphExecDestroy(exec) })
    }

    fn cuMemAllocAsync(dptr: *mut CUdeviceptr, size: usize, s: cudaStream_t) -> Result<(), CuError> {
        current()?;
        if size == 0 {
            return Err(CuError::INVALID_VALUE);
        }
        // SAFETY: forwarding the caller's output pointer (a CUdeviceptr is pointer-sized).
        rt(unsafe { cudaMallocAsync(dptr.cast(), size, s) })?;
        // SAFETY: written just above.
        own(|o| o.allocs.push(unsafe { *dptr }))
    }

    fn cuMemAllocFromPoolAsync(dptr: *mut CUdeviceptr, size: usize, pool: cudaMemPool_t, s: cudaStream_t) -> Result<(), CuError> {
        current()?;
        // SAFETY: as for cuMemAllocAsync.
        rt(unsafe { cudaMallocFromPoolAsync(dptr.cast(), size, pool, s) })?;
        // SAFETY: written just above.
        own(|o| o.allocs.push(unsafe { *dptr }))
    }

    fn cuMemFreeAsync(dptr: CUdeviceptr, s: cudaStream_t) -> Result<(), CuError> {
        current()?;
        // SAFETY: the runtime checks the pointer.
        rt(unsafe { cudaFreeAsync(dptr as *mut c_void, s) })?;
        disown(|o| o.allocs.retain(|&p| p != dptr));
        Ok(())
    }

    fn cuDeviceGetDefaultMemPool(pool: *mut cudaMemPool_t, dev: c_int) -> Result<(), CuError> {
        // SAFETY: forwarding the caller's output pointer.
        rt(unsafe { cudaDeviceGetDefaultMemPool(pool, dev) })
    }

    fn cuDeviceGetMemPool(pool: *mut cudaMemPool_t, dev: c_int) -> Result<(), CuError> {
        // SAFETY: forwarding the caller's output pointer.
        rt(unsafe { cudaDeviceGetMemPool(pool, dev) })
    }

    fn cuDeviceSetMemPool(dev: c_int, pool: cudaMemPool_t) -> Result<(), CuError> {
        // SAFETY: the runtime checks the handle.
        rt(unsafe { cudaDeviceSetMemPool(dev, pool) })
    }

    fn cuMemPoolCreate(pool: *mut cudaMemPool_t, props: *const cudaMemPoolProps) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's pointers; CUmemPoolProps has cudaMemPoolProps' layout.
        rt(unsafe { cudaMemPoolCreate(pool, props) })
    }

    fn cuMemPoolDestroy(pool: cudaMemPool_t) -> Result<(), CuError> {
        // SAFETY: the runtime checks the handle.
        rt(unsafe { cudaMemPoolDestroy(pool) })
    }

    fn cuMemPoolTrimTo(pool: cudaMemPool_t, keep: usize) -> Result<(), CuError> {
        // SAFETY: the runtime checks the handle.
        rt(unsafe { cudaMemPoolTrimTo(pool, keep) })
    }

    fn cuMemPoolSetAttribute(pool: cudaMemPool_t, attr: c_int, value: *mut c_void) -> Result<(), CuError> {
        // SAFETY: forwarding the caller's pointer; CUmemPool_attribute has the runtime's values.
        rt(unsafe { cudaMemPoolSetAttribute(pool, attr, value) })
    }

    fn cuMemPoolGetAttribute(pool: cudaMemPool_t, attr: c_int, value: *mut c_void) -> Result<(), CuError> {
        // SAFETY: as above.
        rt(unsafe { cudaMemPoolGetAttribute(pool, attr, value) })
    }

    fn cuMemPoolExportToShareableHandle(handle: *mut c_void, pool: cudaMemPool_t, ty: c_int, flags: u64) -> Result<(), CuError> {
        let flags = c_uint::try_from(flags).map_err(|_| CuError::INVALID_VALUE)?;
        // SAFETY: forwarding the caller's pointer; CUmemAllocationHandleType has the runtime's values.
        rt(unsafe { cudaMemPoolExportToShareableHandle(handle, pool, ty, flags) })
    }

    fn cuMemPoolImportFromShareableHandle(pool: *mut cudaMemPool_t, handle: *mut c_void, ty: c_int, flags: u64) -> Result<(), CuError> {
        current()?;
        let flags = c_uint::try_from(flags).map_err(|_| CuError::INVALID_VALUE)?;
        // SAFETY: as above.
        rt(unsafe { cudaMemPoolImportFromShareableHandle(pool, handle, ty, flags) })
    }

    fn cuMemPoolExportPointer(data: *mut cudaMemPoolPtrExportData, ptr: CUdeviceptr) -> Result<(), CuError> {
        // SAFETY: forwarding the caller's pointer; CUmemPoolPtrExportData has the runtime's layout.
        rt(unsafe { cudaMemPoolExportPointer(data, ptr as *mut c_void) })
    }

    fn cuMemPoolImportPointer(ptr: *mut CUdeviceptr, pool: cudaMemPool_t, data: *mut cudaMemPoolPtrExportData) -> Result<(), CuError> {
        // SAFETY: forwarding the caller's pointers (a CUdeviceptr is pointer-sized here).
        rt(unsafe { cudaMemPoolImportPointer(ptr.cast(), pool, data) })
    }
}

// Explicit graph building: the graph objects are the runtime's (`crate::api::graph`), with
// the driver's parameter structs translated where they differ.
entry_lib! {
    fn cuGraphAddKernelNode(out: *mut cudaGraphNode_t, graph: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize, p: *const CUDA_KERNEL_NODE_PARAMS) -> Result<(), CuError> {
        let p = params(p)?;
        kernel_node(out, graph, deps, ndeps, p, p.func)
    }

    fn cuGraphAddKernelNode_v2(out: *mut cudaGraphNode_t, graph: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize, p: *const CUDA_KERNEL_NODE_PARAMS_v2) -> Result<(), CuError> {
        let p = params(p)?;
        kernel_node(out, graph, deps, ndeps, &p.v1, v2_func(p))
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
        let p = CUDA_KERNEL_NODE_PARAMS_v2 { v1, kern: std::ptr::null(), ctx: std::ptr::null_mut() };
        // SAFETY: as above.
        unsafe { super::out(out, p) }
    }

    fn cuGraphKernelNodeSetParams(node: cudaGraphNode_t, p: *const CUDA_KERNEL_NODE_PARAMS) -> Result<(), CuError> {
        current()?;
        let p = params(p)?;
        Ok(g::set_kind(node, kernel_kind(p, p.func)?)?)
    }

    fn cuGraphKernelNodeSetParams_v2(node: cudaGraphNode_t, p: *const CUDA_KERNEL_NODE_PARAMS_v2) -> Result<(), CuError> {
        current()?;
        let p = params(p)?;
        Ok(g::set_kind(node, kernel_kind(&p.v1, v2_func(p))?)?)
    }

    fn cuGraphExecKernelNodeSetParams(exec: cudaGraphExec_t, node: cudaGraphNode_t, p: *const CUDA_KERNEL_NODE_PARAMS) -> Result<(), CuError> {
        current()?;
        let p = params(p)?;
        Ok(crate::core::graph_exec::exec_set(exec, node, Ok(kernel_kind(p, p.func)?))?)
    }

    fn cuGraphExecKernelNodeSetParams_v2(exec: cudaGraphExec_t, node: cudaGraphNode_t, p: *const CUDA_KERNEL_NODE_PARAMS_v2) -> Result<(), CuError> {
        current()?;
        let p = params(p)?;
        Ok(crate::core::graph_exec::exec_set(exec, node, Ok(kernel_kind(&p.v1, v2_func(p))?))?)
    }

    fn cuGraphMemsetNodeGetParams(node: cudaGraphNode_t, out: *mut cudaMemsetParams) -> Result<(), CuError> {
        current()?;
        // SAFETY: CUDA_MEMSET_NODE_PARAMS has cudaMemsetParams' layout; the runtime checks
        // the pointers.
        rt(unsafe { crate::abi::runtime::graph::cudaGraphMemsetNodeGetParams(node, out) })
    }

    fn cuGraphMemsetNodeSetParams(node: cudaGraphNode_t, p: *const cudaMemsetParams) -> Result<(), CuError> {
        current()?;
        // SAFETY: as above.
        rt(unsafe { crate::abi::runtime::graph::cudaGraphMemsetNodeSetParams(node, p) })
    }

    fn cuGraphExecMemsetNodeSetParams(exec: cudaGraphExec_t, node: cudaGraphNode_t, p: *const cudaMemsetParams, _ctx: *mut c_void) -> Result<(), CuError> {
        current()?;
        // SAFETY: as above.
        rt(unsafe { crate::abi::runtime::graph_exec::cudaGraphExecMemsetNodeSetParams(exec, node, p) })
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
        rt(unsafe { crate::abi::runtime::graph::cudaGraphHostNodeGetParams(node, out) })
    }

    fn cuGraphHostNodeSetParams(node: cudaGraphNode_t, p: *const cudaHostNodeParams) -> Result<(), CuError> {
        current()?;
        // SAFETY: as above.
        rt(unsafe { crate::abi::runtime::graph::cudaGraphHostNodeSetParams(node, p) })
    }

    fn cuGraphExecHostNodeSetParams(exec: cudaGraphExec_t, node: cudaGraphNode_t, p: *const cudaHostNodeParams) -> Result<(), CuError> {
        current()?;
        // SAFETY: as above.
        rt(unsafe { crate::abi::runtime::graph_exec::cudaGraphExecHostNodeSetParams(exec, node, p) })
    }

    fn cuGraphAddMemsetNode(out: *mut cudaGraphNode_t, graph: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize, p: *const cudaMemsetParams, _ctx: *mut c_void) -> Result<(), CuError> {
        current()?;
        // SAFETY: CUDA_MEMSET_NODE_PARAMS has cudaMemsetParams' layout (a CUdeviceptr where
        // the runtime has a pointer); the runtime checks it.
        rt(unsafe { rt_g::cudaGraphAddMemsetNode(out, graph, deps, ndeps, p) })
    }

    fn cuGraphAddMemcpyNode(out: *mut cudaGraphNode_t, graph: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize, p: *const super::texture::CUDA_MEMCPY3D, _ctx: *mut c_void) -> Result<(), CuError> {
        current()?;
        let cp = super::texture::graph_copy(p)?;
        Ok(g::add_node(out, graph, deps, ndeps, || Ok(g::Kind::Memcpy(cp)))?)
    }

    fn cuGraphAddHostNode(out: *mut cudaGraphNode_t, graph: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize, p: *const cudaHostNodeParams) -> Result<(), CuError> {
        current()?;
        // SAFETY: CUDA_HOST_NODE_PARAMS has cudaHostNodeParams' layout; the runtime checks it.
        rt(unsafe { rt_g::cudaGraphAddHostNode(out, graph, deps, ndeps, p) })
    }

    fn cuGraphAddEmptyNode(out: *mut cudaGraphNode_t, graph: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's pointers; the runtime checks them.
        rt(unsafe { rt_g::cudaGraphAddEmptyNode(out, graph, deps, ndeps) })
    }

    fn cuGraphAddChildGraphNode(out: *mut cudaGraphNode_t, graph: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize, child: cudaGraph_t) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's pointers; the runtime checks them.
        rt(unsafe { rt_g::cudaGraphAddChildGraphNode(out, graph, deps, ndeps, child) })
    }

    fn cuGraphAddEventRecordNode(out: *mut cudaGraphNode_t, graph: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize, e: cudaEvent_t) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's pointers; a CUevent is a cudaEvent_t.
        rt(unsafe { rt_g::cudaGraphAddEventRecordNode(out, graph, deps, ndeps, e) })
    }

    fn cuGraphAddEventWaitNode(out: *mut cudaGraphNode_t, graph: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize, e: cudaEvent_t) -> Result<(), CuError> {
        current()?;
        // SAFETY: as for cuGraphAddEventRecordNode.
        rt(unsafe { rt_g::cudaGraphAddEventWaitNode(out, graph, deps, ndeps, e) })
    }

    fn cuGraphAddDependencies(graph: cudaGraph_t, from: *const cudaGraphNode_t, to: *const cudaGraphNode_t, n: usize) -> Result<(), CuError> {
        // SAFETY: forwarding the caller's arrays of `n` nodes; the runtime checks them.
        rt(unsafe { rt_g::cudaGraphAddDependencies(graph, from, to, std::ptr::null(), n) })
    }

    fn cuGraphAddDependencies_v2(graph: cudaGraph_t, from: *const cudaGraphNode_t, to: *const cudaGraphNode_t, edge_data: *const u8, n: usize) -> Result<(), CuError> {
        // SAFETY: as for cuGraphAddDependencies (edge data has the runtime's layout).
        rt(unsafe { rt_g::cudaGraphAddDependencies(graph, from, to, edge_data, n) })
    }

    fn cuGraphRemoveDependencies(graph: cudaGraph_t, from: *const cudaGraphNode_t, to: *const cudaGraphNode_t, n: usize) -> Result<(), CuError> {
        // SAFETY: as for cuGraphAddDependencies.
        rt(unsafe { rt_g::cudaGraphRemoveDependencies(graph, from, to, std::ptr::null(), n) })
    }

    fn cuGraphRemoveDependencies_v2(graph: cudaGraph_t, from: *const cudaGraphNode_t, to: *const cudaGraphNode_t, edge_data: *const u8, n: usize) -> Result<(), CuError> {
        // SAFETY: as for cuGraphAddDependencies_v2.
        rt(unsafe { rt_g::cudaGraphRemoveDependencies(graph, from, to, edge_data, n) })
    }

    fn cuGraphGetEdges(graph: cudaGraph_t, from: *mut cudaGraphNode_t, to: *mut cudaGraphNode_t, num: *mut usize) -> Result<(), CuError> {
        // SAFETY: forwarding the caller's output arrays and count.
        rt(unsafe { rt_g::cudaGraphGetEdges(graph, from, to, std::ptr::null_mut(), num) })
    }

    fn cuGraphGetEdges_v2(graph: cudaGraph_t, from: *mut cudaGraphNode_t, to: *mut cudaGraphNode_t, edge_data: *mut u8, num: *mut usize) -> Result<(), CuError> {
        // SAFETY: as for cuGraphGetEdges.
        rt(unsafe { rt_g::cudaGraphGetEdges(graph, from, to, edge_data, num) })
    }

    fn cuGraphGetRootNodes(graph: cudaGraph_t, out: *mut cudaGraphNode_t, num: *mut usize) -> Result<(), CuError> {
        // SAFETY: forwarding the caller's output array and count.
        rt(unsafe { rt_g::cudaGraphGetRootNodes(graph, out, num) })
    }

    fn cuGraphNodeGetDependencies(node: cudaGraphNode_t, out: *mut cudaGraphNode_t, num: *mut usize) -> Result<(), CuError> {
        // SAFETY: as for cuGraphGetRootNodes.
        rt(unsafe { rt_g::cudaGraphNodeGetDependencies(node, out, std::ptr::null_mut(), num) })
    }

    fn cuGraphNodeGetDependencies_v2(node: cudaGraphNode_t, out: *mut cudaGraphNode_t, edge_data: *mut u8, num: *mut usize) -> Result<(), CuError> {
        // SAFETY: as for cuGraphGetRootNodes.
        rt(unsafe { rt_g::cudaGraphNodeGetDependencies(node, out, edge_data, num) })
    }

    fn cuGraphNodeGetDependentNodes(node: cudaGraphNode_t, out: *mut cudaGraphNode_t, num: *mut usize) -> Result<(), CuError> {
        // SAFETY: as for cuGraphGetRootNodes.
        rt(unsafe { rt_g::cudaGraphNodeGetDependentNodes(node, out, std::ptr::null_mut(), num) })
    }

    fn cuGraphNodeGetDependentNodes_v2(node: cudaGraphNode_t, out: *mut cudaGraphNode_t, edge_data: *mut u8, num: *mut usize) -> Result<(), CuError> {
        // SAFETY: as for cuGraphGetRootNodes.
        rt(unsafe { rt_g::cudaGraphNodeGetDependentNodes(node, out, edge_data, num) })
    }

    fn cuGraphNodeGetType(node: cudaGraphNode_t, out: *mut u32) -> Result<(), CuError> {
        // SAFETY: forwarding the caller's output pointer; CUgraphNodeType has
        // cudaGraphNodeType's values.
        rt(unsafe { rt_g::cudaGraphNodeGetType(node, out) })
    }

    fn cuGraphDestroyNode(node: cudaGraphNode_t) -> Result<(), CuError> {
        // SAFETY: the runtime checks the handle.
        rt(unsafe { rt_g::cudaGraphDestroyNode(node) })
    }

    fn cuUserObjectCreate(out: *mut uo::cudaUserObject_t, ptr: *mut c_void, destroy: Option<unsafe extern "C" fn(*mut c_void)>, initial: c_uint, flags: c_uint) -> Result<(), CuError> {
        // SAFETY: forwarding the caller's pointers; the runtime checks them.
        rt(unsafe { rt_uo::cudaUserObjectCreate(out, ptr, destroy, initial, flags) })
    }

    fn cuUserObjectRetain(obj: uo::cudaUserObject_t, count: c_uint) -> Result<(), CuError> {
        // SAFETY: the runtime checks the handle.
        rt(unsafe { rt_uo::cudaUserObjectRetain(obj, count) })
    }

    fn cuUserObjectRelease(obj: uo::cudaUserObject_t, count: c_uint) -> Result<(), CuError> {
        // SAFETY: the runtime checks the handle.
        rt(unsafe { rt_uo::cudaUserObjectRelease(obj, count) })
    }

    fn cuGraphRetainUserObject(graph: cudaGraph_t, obj: uo::cudaUserObject_t, count: c_uint, flags: c_uint) -> Result<(), CuError> {
        // SAFETY: the runtime checks the handles.
        rt(unsafe { rt_uo::cudaGraphRetainUserObject(graph, obj, count, flags) })
    }

    fn cuGraphReleaseUserObject(graph: cudaGraph_t, obj: uo::cudaUserObject_t, count: c_uint) -> Result<(), CuError> {
        // SAFETY: the runtime checks the handles.
        rt(unsafe { rt_uo::cudaGraphReleaseUserObject(graph, obj, count) })
    }

    fn cuGraphClone(out: *mut cudaGraph_t, graph: cudaGraph_t) -> Result<(), CuError> {
        // SAFETY: forwarding the caller's output pointer.
        rt(unsafe { rt_g::cudaGraphClone(out, graph) })
    }

    fn cuGraphNodeFindInClone(out: *mut cudaGraphNode_t, node: cudaGraphNode_t, clone: cudaGraph_t) -> Result<(), CuError> {
        // SAFETY: forwarding the caller's output pointer.
        rt(unsafe { rt_g::cudaGraphNodeFindInClone(out, node, clone) })
    }

    fn cuGraphChildGraphNodeGetGraph(node: cudaGraphNode_t, out: *mut cudaGraph_t) -> Result<(), CuError> {
        // SAFETY: forwarding the caller's output pointer.
        rt(unsafe { rt_g::cudaGraphChildGraphNodeGetGraph(node, out) })
    }
}
