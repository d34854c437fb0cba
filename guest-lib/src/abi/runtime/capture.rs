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

use crate::client::{self};
use crate::core::capture::*;
use crate::core::graph::{self, cudaGraph_t, cudaGraphNode_t};
use crate::error::Error;
use crate::ffi::{cudaStream_t, write_out};
use std::ffi::c_void;

entry! {
    fn cudaStreamBeginCapture(stream: cudaStream_t, mode: u32) { begin(stream, mode, false) }
    fn cudaStreamBeginCapture_ptsz(stream: cudaStream_t, mode: u32) { begin(stream, mode, true) }
    fn cudaStreamBeginCaptureToGraph(stream: cudaStream_t, g: cudaGraph_t, deps: *const cudaGraphNode_t, edges: *const u8, n: usize, mode: u32) {
        graph::check_edge_data(edges, n)?;
        let deps = graph::handles(deps, n)?;
        begin_into(stream, mode, false, Some((g as u64, deps)))
    }

    fn cudaStreamBeginCaptureToGraph_ptsz(stream: cudaStream_t, g: cudaGraph_t, deps: *const cudaGraphNode_t, edges: *const u8, n: usize, mode: u32) {
        graph::check_edge_data(edges, n)?;
        let deps = graph::handles(deps, n)?;
        begin_into(stream, mode, true, Some((g as u64, deps)))
    }

    fn cudaStreamEndCapture(stream: cudaStream_t, out: *mut cudaGraph_t) { end(stream, out, false) }
    fn cudaStreamEndCapture_ptsz(stream: cudaStream_t, out: *mut cudaGraph_t) { end(stream, out, true) }

    fn cudaStreamIsCapturing(stream: cudaStream_t, out: *mut u32) {
        let (st, _, _) = status_of(client::client()?, stream, false)?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(out, st) }
    }

    fn cudaStreamIsCapturing_ptsz(stream: cudaStream_t, out: *mut u32) {
        let (st, _, _) = status_of(client::client()?, stream, true)?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(out, st) }
    }

    fn cudaStreamGetCaptureInfo(stream: cudaStream_t, st: *mut u32, id: *mut u64, g: *mut cudaGraph_t, deps: *mut *const cudaGraphNode_t, edges: *mut *const c_void, num: *mut usize) {
        info(stream, st, id, g, deps, edges, num, false)
    }

    fn cudaStreamGetCaptureInfo_ptsz(stream: cudaStream_t, st: *mut u32, id: *mut u64, g: *mut cudaGraph_t, deps: *mut *const cudaGraphNode_t, edges: *mut *const c_void, num: *mut usize) {
        info(stream, st, id, g, deps, edges, num, true)
    }

    fn __v12_cudaStreamGetCaptureInfo(stream: cudaStream_t, st: *mut u32, id: *mut u64) {
        info(stream, st, id, std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut(), false)
    }

    fn __v12_cudaStreamGetCaptureInfo_ptsz(stream: cudaStream_t, st: *mut u32, id: *mut u64) {
        info(stream, st, id, std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut(), true)
    }

    fn cudaStreamGetCaptureInfo_v2(stream: cudaStream_t, st: *mut u32, id: *mut u64, g: *mut cudaGraph_t, deps: *mut *const cudaGraphNode_t, num: *mut usize) {
        info(stream, st, id, g, deps, std::ptr::null_mut(), num, false)
    }

    fn cudaStreamGetCaptureInfo_v2_ptsz(stream: cudaStream_t, st: *mut u32, id: *mut u64, g: *mut cudaGraph_t, deps: *mut *const cudaGraphNode_t, num: *mut usize) {
        info(stream, st, id, g, deps, std::ptr::null_mut(), num, true)
    }

    fn cudaStreamGetCaptureInfo_v3(stream: cudaStream_t, st: *mut u32, id: *mut u64, g: *mut cudaGraph_t, deps: *mut *const cudaGraphNode_t, edges: *mut *const c_void, num: *mut usize) {
        info(stream, st, id, g, deps, edges, num, false)
    }

    fn cudaStreamGetCaptureInfo_v3_ptsz(stream: cudaStream_t, st: *mut u32, id: *mut u64, g: *mut cudaGraph_t, deps: *mut *const cudaGraphNode_t, edges: *mut *const c_void, num: *mut usize) {
        info(stream, st, id, g, deps, edges, num, true)
    }

    fn cudaStreamUpdateCaptureDependencies(stream: cudaStream_t, deps: *const cudaGraphNode_t, edges: *const u8, n: usize, flags: u32) {
        update_deps(stream, deps, edges, n, flags, false)
    }

    fn cudaStreamUpdateCaptureDependencies_ptsz(stream: cudaStream_t, deps: *const cudaGraphNode_t, edges: *const u8, n: usize, flags: u32) {
        update_deps(stream, deps, edges, n, flags, true)
    }

    fn __v12_cudaStreamUpdateCaptureDependencies(stream: cudaStream_t, deps: *const cudaGraphNode_t, n: usize, flags: u32) {
        update_deps(stream, deps, std::ptr::null(), n, flags, false)
    }

    fn __v12_cudaStreamUpdateCaptureDependencies_ptsz(stream: cudaStream_t, deps: *const cudaGraphNode_t, n: usize, flags: u32) {
        update_deps(stream, deps, std::ptr::null(), n, flags, true)
    }

    fn cudaStreamUpdateCaptureDependencies_v2(stream: cudaStream_t, deps: *const cudaGraphNode_t, edges: *const u8, n: usize, flags: u32) {
        update_deps(stream, deps, edges, n, flags, false)
    }

    fn cudaStreamUpdateCaptureDependencies_v2_ptsz(stream: cudaStream_t, deps: *const cudaGraphNode_t, edges: *const u8, n: usize, flags: u32) {
        update_deps(stream, deps, edges, n, flags, true)
    }

    fn cudaThreadExchangeStreamCaptureMode(mode: *mut u32) {
        // SAFETY: the caller's in/out pointer, checked for null.
        let want = unsafe { mode.as_ref() }.copied().ok_or(Error::INVALID_VALUE)?;
        if want > MODE_RELAXED {
            return Err(Error::INVALID_VALUE);
        }
        let old = MODE.with(|m| m.replace(want));
        // SAFETY: as above.
        unsafe { write_out(mode, old) }
    }
}
