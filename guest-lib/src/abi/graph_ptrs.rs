// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The raw pointers every graph call takes, turned into values and back: node arrays from
//! C, optional edge data, node lists written in CUDA's query convention, parameter structs
//! read by reference, and "add a node and write its handle". Shared by the graph-building,
//! generic-node, memory-node and capture shims of both APIs.
//!
//! Each function is `unsafe`: its pointers must be valid as the C API requires of its
//! caller; null pointers are checked here.

use crate::core::graph::{Kind, cudaGraph_t, cudaGraphNode_t, with};
use crate::error::{Error, Result};
use crate::ffi::write_out;

/// A node array from C (`n` handles; null only if `n` is 0).
///
/// # Safety
///
/// `p` is null or holds `n` handles.
pub(crate) unsafe fn handles(p: *const cudaGraphNode_t, n: usize) -> Result<Vec<u64>> {
    // SAFETY: the caller's array of `n` node handles.
    let s = unsafe { crate::ffi::slice_in(p, n)? };
    Ok(s.iter().map(|&h| h as u64).collect())
}

/// Checks that optional edge data (`n` entries of 8 bytes) is all default (zero): vcuda
/// has only full-completion edges.
///
/// # Safety
///
/// `p` is null or holds `n` `cudaGraphEdgeData` (8 bytes each).
pub(crate) unsafe fn check_edge_data(p: *const u8, n: usize) -> Result<()> {
    if p.is_null() || n == 0 {
        return Ok(());
    }
    let len = n.checked_mul(8).ok_or(Error::INVALID_VALUE)?;
    // SAFETY: non-null; the caller's `n` entries of 8 bytes.
    let bytes = unsafe { std::slice::from_raw_parts(p, len) };
    if bytes.iter().all(|&b| b == 0) {
        Ok(())
    } else {
        Err(Error::NOT_SUPPORTED)
    }
}

/// Writes lists of handles in CUDA's query convention: with `a` null, the count; else up to
/// `*num` entries of up to two parallel arrays (the rest nulled), optional zeroed edge
/// data, and the number written.
///
/// # Safety
///
/// `num` is null or readable and writable; `a`, `b` and `edge_data` are null or hold `*num`
/// entries (edge data 8 bytes each).
pub(crate) unsafe fn fill_pairs<T>(
    a: *mut cudaGraphNode_t,
    b: *mut cudaGraphNode_t,
    edge_data: *mut u8,
    num: *mut usize,
    items: &[T],
    f: impl Fn(&T) -> (u64, u64),
) -> Result<()> {
    if num.is_null() {
        return Err(Error::INVALID_VALUE);
    }
    if a.is_null() {
        if !edge_data.is_null() {
            return Err(Error::INVALID_VALUE);
        }
        // SAFETY: checked non-null; the caller's count.
        return unsafe { write_out(num, items.len()) };
    }
    // SAFETY: checked non-null; the caller's capacity.
    let cap = unsafe { num.read_unaligned() };
    for i in 0..cap {
        let (x, y) = items.get(i).map_or((0, 0), &f);
        // SAFETY: the caller's arrays hold `*num` entries.
        unsafe {
            a.add(i).write_unaligned(x as cudaGraphNode_t);
            if !b.is_null() {
                b.add(i).write_unaligned(y as cudaGraphNode_t);
            }
            if !edge_data.is_null() {
                std::ptr::write_bytes(edge_data.add(i * 8), 0, 8);
            }
        }
    }
    // SAFETY: checked non-null.
    unsafe { write_out(num, cap.min(items.len())) }
}

/// Adds the node `kind` makes to graph `g` and writes its handle to `out`: `out` is checked
/// first, then the dependency array, then `kind` runs.
///
/// # Safety
///
/// `out` is null or writable; `deps` is null or holds `ndeps` handles.
pub(crate) unsafe fn add_node(
    out: *mut cudaGraphNode_t,
    g: cudaGraph_t,
    deps: *const cudaGraphNode_t,
    ndeps: usize,
    kind: impl FnOnce() -> Result<Kind>,
) -> Result<()> {
    if out.is_null() {
        return Err(Error::INVALID_VALUE);
    }
    // SAFETY: the caller's array.
    let deps = unsafe { handles(deps, ndeps)? };
    let kind = kind()?;
    let id = with(|r| r.add(g as u64, kind, &deps))?;
    // SAFETY: checked non-null; the caller's output pointer.
    unsafe { write_out(out, id as cudaGraphNode_t) }
}

/// The caller's parameter struct, by reference (null: `INVALID_VALUE`).
///
/// # Safety
///
/// `p` is null or valid, and aligned, for reads of a `T` for `'a`.
pub(crate) unsafe fn read<'a, T>(p: *const T) -> Result<&'a T> {
    // SAFETY: the caller's parameters, checked for null.
    unsafe { p.as_ref() }.ok_or(Error::INVALID_VALUE)
}
