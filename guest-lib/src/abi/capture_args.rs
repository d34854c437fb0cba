// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The C arguments of the stream-capture calls (`cudaStream*Capture*`, their `_ptsz` and
//! CUDA 12 forms, and the driver's `cuStream*Capture*`) turned into values for
//! [`crate::core::capture`], and its results written back. Shared by `runtime/capture.rs`
//! and `driver/graph.rs`.
//!
//! Each function is `unsafe`: its pointers must be valid as the C API requires of its
//! caller; null pointers are checked here or handed to the core as "absent", in the order
//! the runtime checks them.

use std::ffi::c_void;
use std::ptr::null_mut;

use crate::abi::graph_ptrs::{check_edge_data, handles};
use crate::core::capture::{self as cap, CaptureInfo};
use crate::core::graph::{cudaGraph_t, cudaGraphNode_t};
use crate::error::{Error, Result};
use crate::ffi::{cudaStream_t, read_in, write_out};

/// `cudaStreamBeginCapture`.
///
/// # Safety
///
/// No pointer is dereferenced (the stream is a handle).
pub(crate) unsafe fn stream_begin_capture(stream: cudaStream_t, mode: u32) -> Result<()> {
    cap::begin(stream, mode, false)
}

/// `cudaStreamBeginCapture_ptsz`.
///
/// # Safety
///
/// As [`stream_begin_capture`].
pub(crate) unsafe fn stream_begin_capture_ptsz(stream: cudaStream_t, mode: u32) -> Result<()> {
    cap::begin(stream, mode, true)
}

/// `cudaStreamBeginCaptureToGraph` (`ptsz`: its `_ptsz` form).
///
/// # Safety
///
/// `deps` is null or holds `n` handles; `edges` is null or holds `n` `cudaGraphEdgeData`.
unsafe fn begin_to_graph(
    stream: cudaStream_t,
    g: cudaGraph_t,
    deps: *const cudaGraphNode_t,
    edges: *const u8,
    n: usize,
    mode: u32,
    ptsz: bool,
) -> Result<()> {
    // SAFETY: the caller's edge data and dependency array.
    let deps = unsafe {
        check_edge_data(edges, n)?;
        handles(deps, n)?
    };
    cap::begin_into(stream, mode, ptsz, Some((g as u64, deps)))
}

/// `cudaStreamBeginCaptureToGraph`.
///
/// # Safety
///
/// As [`begin_to_graph`].
pub(crate) unsafe fn stream_begin_capture_to_graph(
    stream: cudaStream_t,
    g: cudaGraph_t,
    deps: *const cudaGraphNode_t,
    edges: *const u8,
    n: usize,
    mode: u32,
) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe { begin_to_graph(stream, g, deps, edges, n, mode, false) }
}

/// `cudaStreamBeginCaptureToGraph_ptsz`.
///
/// # Safety
///
/// As [`begin_to_graph`].
pub(crate) unsafe fn stream_begin_capture_to_graph_ptsz(
    stream: cudaStream_t,
    g: cudaGraph_t,
    deps: *const cudaGraphNode_t,
    edges: *const u8,
    n: usize,
    mode: u32,
) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe { begin_to_graph(stream, g, deps, edges, n, mode, true) }
}

/// `cudaStreamEndCapture` (`ptsz`: its `_ptsz` form).
///
/// # Safety
///
/// `out` is null or writable.
unsafe fn end(stream: cudaStream_t, out: *mut cudaGraph_t, ptsz: bool) -> Result<()> {
    match cap::end(stream, out.is_null(), ptsz) {
        // SAFETY: `end` refused a null `out`; the caller's output pointer.
        Ok(g) => unsafe { write_out(out, g as cudaGraph_t) },
        Err(e) => {
            if cap::end_clears_graph(e) {
                // SAFETY: as above.
                unsafe { write_out(out, std::ptr::null_mut()) }?;
            }
            Err(e)
        }
    }
}

/// `cudaStreamEndCapture`.
///
/// # Safety
///
/// As [`end`].
pub(crate) unsafe fn stream_end_capture(stream: cudaStream_t, out: *mut cudaGraph_t) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe { end(stream, out, false) }
}

/// `cudaStreamEndCapture_ptsz`.
///
/// # Safety
///
/// As [`end`].
pub(crate) unsafe fn stream_end_capture_ptsz(
    stream: cudaStream_t,
    out: *mut cudaGraph_t,
) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe { end(stream, out, true) }
}

/// `cudaStreamGetCaptureInfo` in its CUDA 13 form (`_v3` in CUDA 12; `_v2` without
/// `edges_out`, the CUDA 12 plain name with only the status and id): each optional output
/// is written only if non-null, and only the status unless the stream captures.
///
/// # Safety
///
/// Every output pointer is null or writable.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn info(
    stream: cudaStream_t,
    status_out: *mut u32,
    id_out: *mut u64,
    graph_out: *mut cudaGraph_t,
    deps_out: *mut *const cudaGraphNode_t,
    edges_out: *mut *const c_void,
    num_out: *mut usize,
    ptsz: bool,
) -> Result<()> {
    crate::client::client()?;
    if status_out.is_null() || (!edges_out.is_null() && deps_out.is_null()) {
        return Err(Error::INVALID_VALUE);
    }
    let CaptureInfo {
        status,
        id,
        graph,
        deps,
        edges,
        n,
    } = cap::info(stream, ptsz)?;
    // SAFETY: the caller's output pointers; each optional one is written only if non-null.
    unsafe {
        write_out(status_out, status)?;
        if status != cap::STATUS_ACTIVE {
            return Ok(());
        }
        if !id_out.is_null() {
            write_out(id_out, id)?;
        }
        if !graph_out.is_null() {
            write_out(graph_out, graph as cudaGraph_t)?;
        }
        if !deps_out.is_null() {
            write_out(deps_out, deps.cast::<cudaGraphNode_t>())?;
        }
        if !edges_out.is_null() {
            write_out(edges_out, edges.cast::<c_void>())?;
        }
        if !num_out.is_null() {
            write_out(num_out, n)?;
        }
    }
    Ok(())
}

/// `__v12_cudaStreamGetCaptureInfo`.
///
/// # Safety
///
/// As [`info`].
pub(crate) unsafe fn v12_stream_get_capture_info(
    stream: cudaStream_t,
    st: *mut u32,
    id: *mut u64,
) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe {
        info(
            stream,
            st,
            id,
            null_mut(),
            null_mut(),
            null_mut(),
            null_mut(),
            false,
        )
    }
}

/// `__v12_cudaStreamGetCaptureInfo_ptsz`.
///
/// # Safety
///
/// As [`info`].
pub(crate) unsafe fn v12_stream_get_capture_info_ptsz(
    stream: cudaStream_t,
    st: *mut u32,
    id: *mut u64,
) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe {
        info(
            stream,
            st,
            id,
            null_mut(),
            null_mut(),
            null_mut(),
            null_mut(),
            true,
        )
    }
}

/// `cudaStreamGetCaptureInfo_v2`.
///
/// # Safety
///
/// As [`info`].
pub(crate) unsafe fn stream_get_capture_info_v2(
    stream: cudaStream_t,
    st: *mut u32,
    id: *mut u64,
    g: *mut cudaGraph_t,
    deps: *mut *const cudaGraphNode_t,
    num: *mut usize,
) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe { info(stream, st, id, g, deps, std::ptr::null_mut(), num, false) }
}

/// `cudaStreamGetCaptureInfo_v2_ptsz`.
///
/// # Safety
///
/// As [`info`].
pub(crate) unsafe fn stream_get_capture_info_v2_ptsz(
    stream: cudaStream_t,
    st: *mut u32,
    id: *mut u64,
    g: *mut cudaGraph_t,
    deps: *mut *const cudaGraphNode_t,
    num: *mut usize,
) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe { info(stream, st, id, g, deps, std::ptr::null_mut(), num, true) }
}

/// `cudaStreamGetCaptureInfo_v3`.
///
/// # Safety
///
/// As [`info`].
pub(crate) unsafe fn stream_get_capture_info_v3(
    stream: cudaStream_t,
    st: *mut u32,
    id: *mut u64,
    g: *mut cudaGraph_t,
    deps: *mut *const cudaGraphNode_t,
    edges: *mut *const c_void,
    num: *mut usize,
) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe { info(stream, st, id, g, deps, edges, num, false) }
}

/// `cudaStreamGetCaptureInfo_v3_ptsz`.
///
/// # Safety
///
/// As [`info`].
pub(crate) unsafe fn stream_get_capture_info_v3_ptsz(
    stream: cudaStream_t,
    st: *mut u32,
    id: *mut u64,
    g: *mut cudaGraph_t,
    deps: *mut *const cudaGraphNode_t,
    edges: *mut *const c_void,
    num: *mut usize,
) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe { info(stream, st, id, g, deps, edges, num, true) }
}

/// `cudaStreamIsCapturing` (`ptsz`: its `_ptsz` form).
///
/// # Safety
///
/// `out` is null or writable.
unsafe fn is_capturing(stream: cudaStream_t, out: *mut u32, ptsz: bool) -> Result<()> {
    let (st, _, _) = cap::status_of(crate::client::client()?, stream, ptsz)?;
    // SAFETY: the caller's output pointer; `write_out` checks it for null.
    unsafe { write_out(out, st) }
}

/// `cudaStreamIsCapturing`.
///
/// # Safety
///
/// As [`is_capturing`].
pub(crate) unsafe fn stream_is_capturing(stream: cudaStream_t, out: *mut u32) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe { is_capturing(stream, out, false) }
}

/// `cudaStreamIsCapturing_ptsz`.
///
/// # Safety
///
/// As [`is_capturing`].
pub(crate) unsafe fn stream_is_capturing_ptsz(stream: cudaStream_t, out: *mut u32) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe { is_capturing(stream, out, true) }
}

/// `cudaStreamUpdateCaptureDependencies` in every form (`edges` null for those without
/// edge data).
///
/// # Safety
///
/// `deps` is null or holds `n` handles; `edges` is null or holds `n` `cudaGraphEdgeData`.
pub(crate) unsafe fn update_deps(
    stream: cudaStream_t,
    deps: *const cudaGraphNode_t,
    edges: *const u8,
    n: usize,
    flags: u32,
    ptsz: bool,
) -> Result<()> {
    let nodes = || {
        if n > 0 && deps.is_null() {
            return Err(Error::INVALID_VALUE);
        }
        // SAFETY: the caller's edge data and dependency array.
        unsafe {
            check_edge_data(edges, n)?;
            handles(deps, n)
        }
    };
    cap::update_deps(stream, nodes, flags, ptsz)
}

/// `__v12_cudaStreamUpdateCaptureDependencies`.
///
/// # Safety
///
/// As [`update_deps`].
pub(crate) unsafe fn v12_stream_update_capture_dependencies(
    stream: cudaStream_t,
    deps: *const cudaGraphNode_t,
    n: usize,
    flags: u32,
) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe { update_deps(stream, deps, std::ptr::null(), n, flags, false) }
}

/// `__v12_cudaStreamUpdateCaptureDependencies_ptsz`.
///
/// # Safety
///
/// As [`update_deps`].
pub(crate) unsafe fn v12_stream_update_capture_dependencies_ptsz(
    stream: cudaStream_t,
    deps: *const cudaGraphNode_t,
    n: usize,
    flags: u32,
) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe { update_deps(stream, deps, std::ptr::null(), n, flags, true) }
}

/// `cudaStreamUpdateCaptureDependencies_v2`.
///
/// # Safety
///
/// As [`update_deps`].
pub(crate) unsafe fn stream_update_capture_dependencies_v2(
    stream: cudaStream_t,
    deps: *const cudaGraphNode_t,
    edges: *const u8,
    n: usize,
    flags: u32,
) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe { update_deps(stream, deps, edges, n, flags, false) }
}

/// `cudaStreamUpdateCaptureDependencies_v2_ptsz`.
///
/// # Safety
///
/// As [`update_deps`].
pub(crate) unsafe fn stream_update_capture_dependencies_v2_ptsz(
    stream: cudaStream_t,
    deps: *const cudaGraphNode_t,
    edges: *const u8,
    n: usize,
    flags: u32,
) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe { update_deps(stream, deps, edges, n, flags, true) }
}

/// `cudaThreadExchangeStreamCaptureMode`: `*mode` in, the old mode out.
///
/// # Safety
///
/// `mode` is null or readable and writable.
pub(crate) unsafe fn thread_exchange_stream_capture_mode(mode: *mut u32) -> Result<()> {
    // SAFETY: the caller's in/out pointer; `read_in` checks it for null.
    let want = unsafe { read_in(mode.cast_const()) }?;
    let old = cap::exchange_mode(want)?;
    // SAFETY: as above, checked non-null.
    unsafe { write_out(mode, old) }
}
