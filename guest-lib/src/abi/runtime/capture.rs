// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Stream capture: `cudaStreamBeginCapture` .. `cudaStreamEndCapture`.
//!
//! While a stream captures, the work enqueued on it (kernel launches, `cudaMemcpyAsync`,
//! `cudaMemcpy2DAsync`, `cudaMemsetAsync`, `cudaMemset2DAsync`, `cudaLaunchHostFunc`, and
//! the `_ptsz` variants) is not run: it becomes a node of the capture's graph
//! ([`super::graph`]) that depends on the stream's current dependency set, and the set
//! becomes that node. `cudaEventRecord` on a capturing stream makes the event carry the
//! stream's set; `cudaStreamWaitEvent` on such an event makes the waiting stream join the
//! capture (or adds the event's set to its own). `cudaEventRecordWithFlags(...External)` and
//! `cudaStreamWaitEvent(..., cudaEventWaitExternal)` capture event record and wait nodes.
//!
//! What CUDA forbids during capture fails as in CUDA, invalidating the capture where CUDA
//! does (`cudaStreamEndCapture` then returns `cudaErrorStreamCaptureInvalidated`):
//! - other work on a capturing stream (synchronize, query, callbacks, stream-ordered
//!   allocation, symbol copies, cuBLAS and cuRAND, launching a graph):
//!   `cudaErrorStreamCaptureUnsupported`;
//! - "potentially unsafe" calls (`cudaMalloc`, `cudaMallocPitch`, `cudaFree`, synchronous
//!   copies and memsets) from a thread whose capture mode forbids them
//!   (`cudaThreadExchangeStreamCaptureMode`): `cudaErrorStreamCaptureUnsupported`;
//! - the legacy stream (synchronous copies included) while a blocking stream captures:
//!   `cudaErrorStreamCaptureImplicit`;
//! - `cudaDeviceSynchronize`: `cudaErrorStreamCaptureUnsupported`;
//! - querying, synchronizing or timing an event recorded in a capture:
//!   `cudaErrorCapturedEvent` (the capture goes on).

use crate::abi::capture_args::*;
use crate::core::graph::{cudaGraph_t, cudaGraphNode_t};
use crate::ffi::cudaStream_t;
use std::ffi::c_void;

entry! {
    fn cudaStreamBeginCapture(stream: cudaStream_t, mode: u32) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { stream_begin_capture(stream, mode) }
    }
    fn cudaStreamBeginCapture_ptsz(stream: cudaStream_t, mode: u32) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { stream_begin_capture_ptsz(stream, mode) }
    }
    fn cudaStreamBeginCaptureToGraph(stream: cudaStream_t, g: cudaGraph_t, deps: *const cudaGraphNode_t, edges: *const u8, n: usize, mode: u32) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { stream_begin_capture_to_graph(stream, g, deps, edges, n, mode) }
    }

    fn cudaStreamBeginCaptureToGraph_ptsz(stream: cudaStream_t, g: cudaGraph_t, deps: *const cudaGraphNode_t, edges: *const u8, n: usize, mode: u32) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { stream_begin_capture_to_graph_ptsz(stream, g, deps, edges, n, mode) }
    }

    fn cudaStreamEndCapture(stream: cudaStream_t, out: *mut cudaGraph_t) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { stream_end_capture(stream, out) }
    }
    fn cudaStreamEndCapture_ptsz(stream: cudaStream_t, out: *mut cudaGraph_t) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { stream_end_capture_ptsz(stream, out) }
    }

    fn cudaStreamIsCapturing(stream: cudaStream_t, out: *mut u32) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { stream_is_capturing(stream, out) }
    }

    fn cudaStreamIsCapturing_ptsz(stream: cudaStream_t, out: *mut u32) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { stream_is_capturing_ptsz(stream, out) }
    }

    fn cudaStreamGetCaptureInfo(stream: cudaStream_t, st: *mut u32, id: *mut u64, g: *mut cudaGraph_t, deps: *mut *const cudaGraphNode_t, edges: *mut *const c_void, num: *mut usize) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { crate::abi::capture_args::info(stream, st, id, g, deps, edges, num, false) }
    }

    fn cudaStreamGetCaptureInfo_ptsz(stream: cudaStream_t, st: *mut u32, id: *mut u64, g: *mut cudaGraph_t, deps: *mut *const cudaGraphNode_t, edges: *mut *const c_void, num: *mut usize) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { crate::abi::capture_args::info(stream, st, id, g, deps, edges, num, true) }
    }

    fn __v12_cudaStreamGetCaptureInfo(stream: cudaStream_t, st: *mut u32, id: *mut u64) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { v12_stream_get_capture_info(stream, st, id) }
    }

    fn __v12_cudaStreamGetCaptureInfo_ptsz(stream: cudaStream_t, st: *mut u32, id: *mut u64) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { v12_stream_get_capture_info_ptsz(stream, st, id) }
    }

    fn cudaStreamGetCaptureInfo_v2(stream: cudaStream_t, st: *mut u32, id: *mut u64, g: *mut cudaGraph_t, deps: *mut *const cudaGraphNode_t, num: *mut usize) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { stream_get_capture_info_v2(stream, st, id, g, deps, num) }
    }

    fn cudaStreamGetCaptureInfo_v2_ptsz(stream: cudaStream_t, st: *mut u32, id: *mut u64, g: *mut cudaGraph_t, deps: *mut *const cudaGraphNode_t, num: *mut usize) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { stream_get_capture_info_v2_ptsz(stream, st, id, g, deps, num) }
    }

    fn cudaStreamGetCaptureInfo_v3(stream: cudaStream_t, st: *mut u32, id: *mut u64, g: *mut cudaGraph_t, deps: *mut *const cudaGraphNode_t, edges: *mut *const c_void, num: *mut usize) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { stream_get_capture_info_v3(stream, st, id, g, deps, edges, num) }
    }

    fn cudaStreamGetCaptureInfo_v3_ptsz(stream: cudaStream_t, st: *mut u32, id: *mut u64, g: *mut cudaGraph_t, deps: *mut *const cudaGraphNode_t, edges: *mut *const c_void, num: *mut usize) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { stream_get_capture_info_v3_ptsz(stream, st, id, g, deps, edges, num) }
    }

    fn cudaStreamUpdateCaptureDependencies(stream: cudaStream_t, deps: *const cudaGraphNode_t, edges: *const u8, n: usize, flags: u32) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { crate::abi::capture_args::update_deps(stream, deps, edges, n, flags, false) }
    }

    fn cudaStreamUpdateCaptureDependencies_ptsz(stream: cudaStream_t, deps: *const cudaGraphNode_t, edges: *const u8, n: usize, flags: u32) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { crate::abi::capture_args::update_deps(stream, deps, edges, n, flags, true) }
    }

    fn __v12_cudaStreamUpdateCaptureDependencies(stream: cudaStream_t, deps: *const cudaGraphNode_t, n: usize, flags: u32) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { v12_stream_update_capture_dependencies(stream, deps, n, flags) }
    }

    fn __v12_cudaStreamUpdateCaptureDependencies_ptsz(stream: cudaStream_t, deps: *const cudaGraphNode_t, n: usize, flags: u32) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { v12_stream_update_capture_dependencies_ptsz(stream, deps, n, flags) }
    }

    fn cudaStreamUpdateCaptureDependencies_v2(stream: cudaStream_t, deps: *const cudaGraphNode_t, edges: *const u8, n: usize, flags: u32) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { stream_update_capture_dependencies_v2(stream, deps, edges, n, flags) }
    }

    fn cudaStreamUpdateCaptureDependencies_v2_ptsz(stream: cudaStream_t, deps: *const cudaGraphNode_t, edges: *const u8, n: usize, flags: u32) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { stream_update_capture_dependencies_v2_ptsz(stream, deps, edges, n, flags) }
    }

    fn cudaThreadExchangeStreamCaptureMode(mode: *mut u32) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { thread_exchange_stream_capture_mode(mode) }
    }
}
