// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Driver calls behind runtime calls that vcuda's runtime answers itself: NVIDIA's static
//! runtime (plain `nvcc` output) makes these where a program calls
//! `cudaGraphEventRecordNodeGetEvent` and friends, `cudaGraphExecGetFlags`,
//! `cudaGraphMemcpyNodeGetParams`, `cudaDeviceGetP2PAttribute` or CUDA 13's location pools
//! (`cudaMemGetDefaultMemPool`, `cudaMemGetMemPool`, `cudaMemSetMemPool`). Each shares the
//! runtime's code. Also the forms of `cuGraphInstantiate` and `cuGraphExecUpdate` that
//! CUDA 10 and 11 declared (`cuGetProcAddress` hands them out for those versions).

use std::ffi::{c_char, c_int};

use crate::abi::graph_args as ga;
use crate::core::context::{check_device, current};
use crate::core::graph::{cudaGraph_t, cudaGraphExec_t, cudaGraphNode_t};
use crate::core::graph_exec::cudaGraphInstantiateParams;
use crate::core::pool::{cudaMemLocation, cudaMemPool_t};
use crate::error::CuError;
use crate::ffi::cudaEvent_t;

/// CUDA 10 and 11's `cuGraphInstantiate`: no flags; the failing node and a message (NUL
/// terminated, cut to `size`) where the caller gives room for them.
///
/// # Safety
///
/// `exec`, `err_node` and `log` (for `size` bytes) are null or writable.
unsafe fn instantiate_legacy(
    exec: *mut cudaGraphExec_t,
    g: cudaGraph_t,
    err_node: *mut cudaGraphNode_t,
    log: *mut c_char,
    size: usize,
) -> Result<(), CuError> {
    current()?;
    let mut p = cudaGraphInstantiateParams {
        flags: 0,
        upload_stream: std::ptr::null_mut(),
        err_node_out: std::ptr::null_mut(),
        result_out: 0,
    };
    // SAFETY: the caller's output pointer; `p` is ours.
    let r = unsafe { ga::instantiate_with_params(exec, g, &mut p, false) }.map_err(CuError::from);
    if !err_node.is_null() {
        // SAFETY: checked non-null; the caller's output pointer.
        unsafe { err_node.write(p.err_node_out) };
    }
    if !log.is_null() && size > 0 {
        let msg = match r {
            Ok(()) => String::new(),
            Err(e) => {
                let name = crate::cu_names::name(e.0).map(|n| n.to_string_lossy());
                format!("graph instantiation failed: {}", name.unwrap_or_default())
            }
        };
        let n = msg.len().min(size - 1);
        // SAFETY: `log` has room for `size` bytes (the caller's contract) and `n < size`.
        unsafe {
            std::ptr::copy_nonoverlapping(msg.as_ptr().cast(), log, n);
            log.add(n).write(0);
        }
    }
    r
}

entry_lib! {
    fn cuGraphEventRecordNodeGetEvent(node: cudaGraphNode_t, out: *mut cudaEvent_t) -> Result<(), CuError> {
        current()?;
        // SAFETY: the caller's output pointer (checked for null).
        Ok(unsafe { ga::graph_event_node_get_event(node, out, false) }?)
    }

    fn cuGraphEventWaitNodeGetEvent(node: cudaGraphNode_t, out: *mut cudaEvent_t) -> Result<(), CuError> {
        current()?;
        // SAFETY: as above.
        Ok(unsafe { ga::graph_event_node_get_event(node, out, true) }?)
    }

    fn cuGraphEventRecordNodeSetEvent(node: cudaGraphNode_t, e: cudaEvent_t) -> Result<(), CuError> {
        current()?;
        Ok(ga::graph_event_node_set_event(node, e, false)?)
    }

    fn cuGraphEventWaitNodeSetEvent(node: cudaGraphNode_t, e: cudaEvent_t) -> Result<(), CuError> {
        current()?;
        Ok(ga::graph_event_node_set_event(node, e, true)?)
    }

    fn cuGraphExecGetFlags(exec: cudaGraphExec_t, flags: *mut u64) -> Result<(), CuError> {
        current()?;
        // SAFETY: the caller's output pointer (checked for null).
        Ok(unsafe { ga::exec_get_flags(exec, flags) }?)
    }

    fn cuGraphMemcpyNodeGetParams(node: cudaGraphNode_t, out: *mut super::texture::CUDA_MEMCPY3D) -> Result<(), CuError> {
        current()?;
        let cp = crate::core::graph::get_kind(node, |k| match k {
            crate::core::graph::Kind::Memcpy(cp) => Some(*cp),
            _ => None,
        })?;
        // SAFETY: the caller's output pointer (checked for null).
        unsafe { super::out(out, super::texture::graph_copy_params(&cp)) }
    }

    fn cuGraphInstantiate(exec: *mut cudaGraphExec_t, g: cudaGraph_t, err_node: *mut cudaGraphNode_t, log: *mut c_char, size: usize) -> Result<(), CuError> {
        // SAFETY: the caller's pointers, valid as the API requires.
        unsafe { instantiate_legacy(exec, g, err_node, log, size) }
    }

    fn cuGraphInstantiate_v2(exec: *mut cudaGraphExec_t, g: cudaGraph_t, err_node: *mut cudaGraphNode_t, log: *mut c_char, size: usize) -> Result<(), CuError> {
        // SAFETY: as above.
        unsafe { instantiate_legacy(exec, g, err_node, log, size) }
    }

    fn cuGraphExecUpdate(exec: cudaGraphExec_t, g: cudaGraph_t, err_node: *mut cudaGraphNode_t, result: *mut u32) -> Result<(), CuError> {
        current()?;
        // Unknown handles fail before any output is written.
        let info = crate::core::graph_exec::update(exec, g)?;
        if !err_node.is_null() {
            // SAFETY: checked non-null; the caller's output pointer.
            unsafe { err_node.write(info.error_node) };
        }
        if !result.is_null() {
            // SAFETY: as above.
            unsafe { result.write(info.result) };
        }
        Ok(crate::core::graph_exec::update_status(&info)?)
    }

    fn cuDeviceGetP2PAttribute(value: *mut c_int, _attr: c_int, src: c_int, dst: c_int) -> Result<(), CuError> {
        check_device(src)?;
        check_device(dst)?;
        if value.is_null() {
            return Err(CuError::INVALID_VALUE);
        }
        // One device: `src == dst`, which CUDA refuses, as the runtime does.
        Err(CuError::INVALID_DEVICE)
    }

    fn cuMemGetDefaultMemPool(pool: *mut cudaMemPool_t, location: *mut cudaMemLocation, ty: c_int) -> Result<(), CuError> {
        // SAFETY: the caller's location, checked for null.
        let p = crate::core::pool::location_pool(unsafe { location.as_ref() }, ty, true)?;
        // SAFETY: the caller's output pointer (checked for null).
        unsafe { super::out(pool, p) }
    }

    fn cuMemGetMemPool(pool: *mut cudaMemPool_t, location: *mut cudaMemLocation, ty: c_int) -> Result<(), CuError> {
        // SAFETY: the caller's location, checked for null.
        let p = crate::core::pool::location_pool(unsafe { location.as_ref() }, ty, false)?;
        // SAFETY: the caller's output pointer (checked for null).
        unsafe { super::out(pool, p) }
    }

    fn cuMemSetMemPool(location: *mut cudaMemLocation, ty: c_int, pool: cudaMemPool_t) -> Result<(), CuError> {
        // SAFETY: the caller's location, checked for null.
        Ok(crate::core::pool::location_set_pool(unsafe { location.as_ref() }, ty, pool)?)
    }
}
