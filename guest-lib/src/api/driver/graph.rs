// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Stream capture, graphs and stream-ordered allocation through the driver API, over the
//! runtime's implementation (the handle types are the same objects, as in CUDA: a `CUgraph`
//! is a `cudaGraph_t`, a `CUmemoryPool` a `cudaMemPool_t`): `cuStreamBeginCapture`,
//! `cuStreamEndCapture`, `cuStreamIsCapturing`, `cuGraphCreate`/`Destroy`/`GetNodes`,
//! `cuGraphInstantiateWithFlags`, `cuGraphUpload`, `cuGraphLaunch`, `cuGraphExecDestroy`,
//! `cuMemAllocAsync`, `cuMemFreeAsync`, `cuMemAllocFromPoolAsync` and the memory pool calls.

use std::ffi::{c_int, c_uint, c_void};

use super::context::{current, disown, own};
use super::memory::CUdeviceptr;
use super::rt;
use crate::api::capture::{cudaStreamBeginCapture, cudaStreamEndCapture, cudaStreamIsCapturing};
use crate::api::graph::{
    cudaGraph_t, cudaGraphCreate, cudaGraphDestroy, cudaGraphExec_t, cudaGraphGetNodes,
    cudaGraphNode_t,
};
use crate::api::graph_exec::{
    cudaGraphExecDestroy, cudaGraphInstantiateWithFlags, cudaGraphLaunch, cudaGraphUpload,
};
use crate::api::pool::{
    cudaDeviceGetDefaultMemPool, cudaDeviceGetMemPool, cudaDeviceSetMemPool, cudaFreeAsync,
    cudaMallocAsync, cudaMallocFromPoolAsync, cudaMemPool_t, cudaMemPoolCreate, cudaMemPoolDestroy,
    cudaMemPoolGetAttribute, cudaMemPoolProps, cudaMemPoolSetAttribute, cudaMemPoolTrimTo,
};
use crate::error::CuError;
use crate::ffi::cudaStream_t;

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
}
