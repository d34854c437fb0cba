// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Three-dimensional memory: `cudaMalloc3D`, `cudaMemcpy3D[Async]`, `cudaMemcpy3DPeer[Async]`
//! and `cudaMemset3D[Async]` (and their per-thread default stream variants) over pitched
//! linear memory. A 3-D copy or memset is one 2-D operation per slice, in order on the same
//! stream; a capturing stream records a 3-D copy as one memcpy node. Copies with a CUDA
//! array on either side are `super::array`'s (not captured).

use crate::abi::memory_args::{copy_3d, copy_3d_batch, copy_3d_peer};
use crate::client::{self};
use crate::core::graph_node::{cudaExtent, cudaMemcpy3DParms, cudaPitchedPtr};
use crate::core::memory::malloc_pitch;
use crate::core::memory3d::*;
use crate::error::Error;
use crate::ffi::{cudaStream_t, write_out};
use std::ffi::{c_int, c_void};

entry! {
    fn cudaMalloc3D(out: *mut cudaPitchedPtr, e: cudaExtent) {
        if out.is_null() {
            return Err(Error::INVALID_VALUE);
        }
        let rows = e.height.checked_mul(e.depth).ok_or(Error::MEMORY_ALLOCATION)?;
        let (ptr, pitch) = malloc_pitch(client::client()?, e.width, rows)?;
        let p = cudaPitchedPtr { ptr: ptr as *mut c_void, pitch, xsize: e.width, ysize: e.height };
        // SAFETY: checked non-null; the caller's output pointer.
        unsafe { write_out(out, p) }
    }

    fn cudaMemcpy3D(p: *const cudaMemcpy3DParms) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { copy_3d(p, None) }
    }

    fn cudaMemcpy3D_ptds(p: *const cudaMemcpy3DParms) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { copy_3d(p, None) }
    }

    fn cudaMemcpy3DBatchAsync(n: usize, ops: *const cudaMemcpy3DBatchOp, flags: u64, stream: cudaStream_t) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { copy_3d_batch(n, ops, flags, stream, false, &mut None) }
    }

    fn cudaMemcpy3DBatchAsync_ptsz(n: usize, ops: *const cudaMemcpy3DBatchOp, flags: u64, stream: cudaStream_t) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { copy_3d_batch(n, ops, flags, stream, true, &mut None) }
    }

    fn cudaMemcpy3DAsync(p: *const cudaMemcpy3DParms, stream: cudaStream_t) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { copy_3d(p, Some((stream, false))) }
    }

    fn cudaMemcpy3DAsync_ptsz(p: *const cudaMemcpy3DParms, stream: cudaStream_t) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { copy_3d(p, Some((stream, true))) }
    }

    fn cudaMemcpy3DPeer(p: *const cudaMemcpy3DPeerParms) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { copy_3d_peer(p, None) }
    }

    fn cudaMemcpy3DPeer_ptds(p: *const cudaMemcpy3DPeerParms) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { copy_3d_peer(p, None) }
    }

    fn cudaMemcpy3DPeerAsync(p: *const cudaMemcpy3DPeerParms, stream: cudaStream_t) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { copy_3d_peer(p, Some((stream, false))) }
    }

    fn cudaMemcpy3DPeerAsync_ptsz(p: *const cudaMemcpy3DPeerParms, stream: cudaStream_t) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { copy_3d_peer(p, Some((stream, true))) }
    }

    fn cudaMemset3D(p: cudaPitchedPtr, value: c_int, e: cudaExtent) {
        memset_3d(p, value, e, None)
    }

    fn cudaMemset3D_ptds(p: cudaPitchedPtr, value: c_int, e: cudaExtent) {
        memset_3d(p, value, e, None)
    }

    fn cudaMemset3DAsync(p: cudaPitchedPtr, value: c_int, e: cudaExtent, stream: cudaStream_t) {
        memset_3d(p, value, e, Some((stream, false)))
    }

    fn cudaMemset3DAsync_ptsz(p: cudaPitchedPtr, value: c_int, e: cudaExtent, stream: cudaStream_t) {
        memset_3d(p, value, e, Some((stream, true)))
    }
}
