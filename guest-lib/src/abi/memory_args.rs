// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The C arguments of the copy calls that take parameter blocks and arrays
//! (`cudaMemcpy3D*`, `cudaMemcpy3DPeer*`, `cudaMemcpy3DBatchAsync`, `cudaMemcpyBatchAsync`
//! and the driver's forms of the batches) turned into references and slices for
//! [`crate::core::memory3d`] and [`crate::core::memcpy_batch`].
//!
//! Each function is `unsafe`: its pointers must be valid as the C API requires of its
//! caller; null pointers are checked here.

use crate::core::graph_node::cudaMemcpy3DParms;
use crate::core::memcpy_batch::{Batch, cudaMemcpyAttributes};
use crate::core::memory::On;
use crate::core::memory3d::{
    cudaMemcpy3DBatchOp, cudaMemcpy3DPeerParms, memcpy_3d, memcpy_3d_batch, memcpy_3d_peer,
};
use crate::error::{Error, Result};
use crate::ffi::{cudaStream_t, slice_in};
use std::ffi::c_void;

/// `cudaMemcpy3D[Async]` (`on`: `None` for the synchronous call).
///
/// # Safety
///
/// `p` is null or readable, and the host buffers it names are valid for the copy as the
/// API requires.
pub(crate) unsafe fn copy_3d(p: *const cudaMemcpy3DParms, on: On) -> Result<()> {
    // SAFETY: the caller's parameter block, checked for null.
    memcpy_3d(unsafe { p.as_ref() }.ok_or(Error::INVALID_VALUE)?, on)
}

/// `cudaMemcpy3DPeer[Async]`.
///
/// # Safety
///
/// `p` is null or readable (a peer copy names no host memory).
pub(crate) unsafe fn copy_3d_peer(p: *const cudaMemcpy3DPeerParms, on: On) -> Result<()> {
    // SAFETY: the caller's parameter block, checked for null.
    memcpy_3d_peer(unsafe { p.as_ref() }.ok_or(Error::INVALID_VALUE)?, on)
}

/// `cudaMemcpy3DBatchAsync`: `n` operations at `ops`.
///
/// # Safety
///
/// `ops` is null or holds `n` operations.
pub(crate) unsafe fn copy_3d_batch(
    n: usize,
    ops: *const cudaMemcpy3DBatchOp,
    flags: u64,
    stream: cudaStream_t,
    ptsz: bool,
    failed: &mut Option<usize>,
) -> Result<()> {
    // SAFETY: the caller's array of `n` operations; `slice_in` checks for null.
    let ops = unsafe { slice_in(ops, n)? };
    memcpy_3d_batch(ops, flags, stream, ptsz, failed)
}

/// The arrays of a `cudaMemcpyBatchAsync`: `count` destinations, sources and sizes,
/// `num_attrs` attributes and indices. Null arrays, and lengths no array in memory can
/// have, are `INVALID_VALUE`.
///
/// # Safety
///
/// Each array is null or holds its number of entries for `'a`.
pub(crate) unsafe fn batch<'a>(
    dsts: *const *mut c_void,
    srcs: *const *const c_void,
    sizes: *const usize,
    count: usize,
    (attrs, idxs, num_attrs): (*const cudaMemcpyAttributes, *const usize, usize),
) -> Result<Batch<'a>> {
    if dsts.is_null()
        || srcs.is_null()
        || sizes.is_null()
        || attrs.is_null()
        || idxs.is_null()
        || count > isize::MAX as usize / std::mem::size_of::<cudaMemcpyAttributes>()
        || num_attrs > count
    {
        return Err(Error::INVALID_VALUE);
    }
    // SAFETY: the caller's arrays of `count` and `num_attrs` entries, checked for null.
    unsafe {
        Ok(Batch {
            dsts: slice_in(dsts, count)?,
            srcs: slice_in(srcs, count)?,
            sizes: slice_in(sizes, count)?,
            attrs: slice_in(attrs, num_attrs)?,
            idxs: slice_in(idxs, num_attrs)?,
        })
    }
}
