// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Executable graphs: instantiation, parameter updates and launches.
//!
//! `cudaGraphInstantiate` checks the graph (a cycle fails) and flattens it into one
//! topological order of steps, child graphs inlined, each step a copy of its node's
//! parameters (the executable graph does not change when its graph does) with the earlier
//! steps it depends on.
//!
//! A launch of a graph of device work is one message: the backend gets the steps once
//! (`GraphCreate`, at the first launch or at `cudaGraphUpload`) and each `cudaGraphLaunch`
//! after that sends `GraphLaunch` (posted, no round trip). The CUDA executor makes the
//! steps a CUDA graph; the CPU executor replays them. See `graph_state::Remote` for which graphs go
//! and when the backend's copy is made again.
//!
//! Other graphs are replayed here: each step on the launch stream, in order, through the
//! same code as the call it stands for (kernels, device-side copies and memsets are
//! posted, copies from and to host memory go as `cudaMemcpyAsync` does, host nodes run as
//! `cudaLaunchHostFunc` does, event nodes record and wait on the stream), one message per
//! step. Since one stream runs them in a dependency order, every edge is honoured.
//!
//! `cudaGraphExecUpdate` accepts a graph of the same topology (the same node count, node
//! types and edges, nodes paired in the order they were added, child graphs alike) and
//! takes its parameters; anything else fails with `cudaErrorGraphExecUpdateFailure` and the
//! reason in `cudaGraphExecUpdateResultInfo`.

use crate::abi::graph_args::{exec_get_flags, exec_update, instantiate, instantiate_with_params};
use crate::abi::node_args::{
    exec_host_node_set_params, exec_kernel_node_set_params, exec_memcpy_node_set_params,
    exec_memset_node_set_params,
};
use crate::client::{self};
use crate::core::graph::{
    Kind, cudaGraph_t, cudaGraphExec_t, cudaGraphNode_t, cudaHostNodeParams, cudaKernelNodeParams,
    cudaMemcpy3DParms, cudaMemsetParams,
};
use crate::core::graph_exec::*;
use crate::error::Error;
use crate::ffi::{cudaEvent_t, cudaStream_t, write_out};
use std::ffi::{c_int, c_uint, c_void};

entry! {
    fn cudaGraphInstantiate(out: *mut cudaGraphExec_t, g: cudaGraph_t, flags: u64) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { instantiate(out, g, flags, false) }
    }

    fn cudaGraphInstantiateWithFlags(out: *mut cudaGraphExec_t, g: cudaGraph_t, flags: u64) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { instantiate(out, g, flags, false) }
    }

    fn cudaGraphInstantiateWithParams(out: *mut cudaGraphExec_t, g: cudaGraph_t, p: *mut cudaGraphInstantiateParams) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { instantiate_with_params(out, g, p, false) }
    }

    fn cudaGraphInstantiateWithParams_ptsz(out: *mut cudaGraphExec_t, g: cudaGraph_t, p: *mut cudaGraphInstantiateParams) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { instantiate_with_params(out, g, p, true) }
    }

    fn cudaGraphExecGetFlags(exec: cudaGraphExec_t, flags: *mut u64) {
        // SAFETY: the caller's output pointer (checked for null).
        unsafe { exec_get_flags(exec, flags) }
    }

    fn cudaGraphExecDestroy(exec: cudaGraphExec_t) {
        graph_exec_destroy(exec)
    }

    fn cudaGraphLaunch(exec: cudaGraphExec_t, stream: cudaStream_t) {
        graph_launch(exec, stream)
    }
    fn cudaGraphLaunch_ptsz(exec: cudaGraphExec_t, stream: cudaStream_t) { launch(exec, stream, true) }
    fn cudaGraphUpload(exec: cudaGraphExec_t, stream: cudaStream_t) {
        graph_upload(exec, stream)
    }
    fn cudaGraphUpload_ptsz(exec: cudaGraphExec_t, stream: cudaStream_t) { upload(exec, stream, true) }

    fn cudaGraphExecUpdate(exec: cudaGraphExec_t, g: cudaGraph_t, info: *mut cudaGraphExecUpdateResultInfo) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { exec_update(exec, g, info) }
    }

    fn cudaGraphExecKernelNodeSetParams(exec: cudaGraphExec_t, node: cudaGraphNode_t, p: *const cudaKernelNodeParams) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { exec_kernel_node_set_params(exec, node, p) }
    }

    fn cudaGraphExecMemcpyNodeSetParams(exec: cudaGraphExec_t, node: cudaGraphNode_t, p: *const cudaMemcpy3DParms) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { exec_memcpy_node_set_params(exec, node, p) }
    }

    fn cudaGraphExecMemcpyNodeSetParams1D(exec: cudaGraphExec_t, node: cudaGraphNode_t, dst: *mut c_void, src: *const c_void, count: usize, kind: c_int) {
        exec_set(exec, node, crate::core::graph_params::memcpy_1d(dst as u64, src as u64, count as u64, kind))
    }

    fn cudaGraphExecMemsetNodeSetParams(exec: cudaGraphExec_t, node: cudaGraphNode_t, p: *const cudaMemsetParams) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { exec_memset_node_set_params(exec, node, p) }
    }

    fn cudaGraphExecMemcpyNodeSetParamsToSymbol(exec: cudaGraphExec_t, node: cudaGraphNode_t, symbol: *const c_void, src: *const c_void, count: usize, offset: usize, kind: c_int) {
        exec_set(exec, node, crate::core::graph_params::memcpy_symbol(symbol, src as u64, count, offset, kind, true))
    }

    fn cudaGraphExecMemcpyNodeSetParamsFromSymbol(exec: cudaGraphExec_t, node: cudaGraphNode_t, dst: *mut c_void, symbol: *const c_void, count: usize, offset: usize, kind: c_int) {
        exec_set(exec, node, crate::core::graph_params::memcpy_symbol(symbol, dst as u64, count, offset, kind, false))
    }

    fn cudaGraphExecEventRecordNodeSetEvent(exec: cudaGraphExec_t, node: cudaGraphNode_t, e: cudaEvent_t) {
        let ev = crate::core::handle::event_handle(client::client()?, e).map(Kind::EventRecord);
        exec_set(exec, node, ev)
    }

    fn cudaGraphExecEventWaitNodeSetEvent(exec: cudaGraphExec_t, node: cudaGraphNode_t, e: cudaEvent_t) {
        let ev = crate::core::handle::event_handle(client::client()?, e).map(Kind::EventWait);
        exec_set(exec, node, ev)
    }

    fn cudaGraphNodeSetEnabled(exec: cudaGraphExec_t, node: cudaGraphNode_t, on: c_uint) {
        enabled(exec, node, Some(on != 0)).map(drop)
    }

    fn cudaGraphNodeGetEnabled(exec: cudaGraphExec_t, node: cudaGraphNode_t, on: *mut c_uint) {
        if on.is_null() {
            return Err(Error::INVALID_VALUE);
        }
        let v = enabled(exec, node, None)?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(on, c_uint::from(v)) }
    }

    fn cudaGraphExecHostNodeSetParams(exec: cudaGraphExec_t, node: cudaGraphNode_t, p: *const cudaHostNodeParams) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { exec_host_node_set_params(exec, node, p) }
    }
}
