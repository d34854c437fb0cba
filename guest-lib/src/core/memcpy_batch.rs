// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Batched copies (`cudaMemcpyBatchAsync`, `cuMemcpyBatchAsync`): many copies in one call,
//! each with the attributes that apply to it.

use super::memory::*;
use crate::client;
use crate::core::capture::capture_stream_handle;
use crate::error::{Error, Result};
use crate::ffi::{STREAM_LEGACY, cudaStream_t, memcpy_kind};
use std::ffi::{c_int, c_void};
use vcuda_protocol::{ops, status};

/// `cudaMemcpyAttributes` (and the driver's `CUmemcpyAttributes`, laid out alike).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cudaMemcpyAttributes {
    pub(crate) src_access_order: c_int,
    pub(crate) src_loc_hint: [c_int; 2],
    pub(crate) dst_loc_hint: [c_int; 2],
    pub(crate) flags: u32,
}

/// `cudaMemcpySrcAccessOrderStream`, `DuringApiCall`, `Any`.
pub(crate) const ORDER_STREAM: c_int = 1;
pub(crate) const ORDER_DURING_API_CALL: c_int = 2;
pub(crate) const ORDER_ANY: c_int = 3;
/// `cudaMemcpyFlagPreferOverlapWithCompute`: a hint.
pub(crate) const BATCH_FLAGS: u32 = 0x1;

/// The arrays of a `cudaMemcpyBatchAsync`: `count` destinations, sources and sizes,
/// `num_attrs` attributes and the indices they start at.
pub(crate) struct Batch<'a> {
    pub(crate) dsts: &'a [*mut c_void],
    pub(crate) srcs: &'a [*const c_void],
    pub(crate) sizes: &'a [usize],
    pub(crate) attrs: &'a [cudaMemcpyAttributes],
    pub(crate) idxs: &'a [usize],
}

/// `cudaMemcpyBatchAsync`: `count` copies of `sizes[i]` bytes from `srcs[i]` to `dsts[i]` on
/// `stream` (not the legacy stream), each with the attributes of the last `attrs[k]` whose
/// `idxs[k]` is at most its index. The copies run in the stream's order, one after another,
/// which the API allows (it promises no order within a batch); the location hints and the
/// overlap flag are hints. A copy whose source must be read during the call
/// (`cudaMemcpySrcAccessOrderDuringApiCall`, for sources such as stack buffers) makes the
/// call wait for the stream. `failed` gets the index of the copy that failed, if one did.
/// `batch` is the caller's arrays (`abi` refuses null ones), checked after the sticky
/// error.
pub(crate) fn memcpy_batch(
    batch: Result<Batch<'_>>,
    stream: cudaStream_t,
    ptsz: bool,
    failed: &mut Option<usize>,
) -> Result<()> {
    let c = client::client()?;
    c.check_sticky()?;
    let Batch {
        dsts,
        srcs,
        sizes,
        attrs,
        idxs,
    } = batch?;
    let (count, num_attrs) = (dsts.len(), attrs.len());
    if count == 0
        || srcs.len() != count
        || sizes.len() != count
        || idxs.len() != num_attrs
        || num_attrs == 0
        || num_attrs > count
    {
        return Err(Error::INVALID_VALUE);
    }
    // The legacy stream is refused (the API's rule); the per-thread one is not.
    if stream as usize == STREAM_LEGACY || (stream.is_null() && !ptsz) {
        return Err(Error::INVALID_VALUE);
    }
    // The first group starts at 0; each starts after the one before, inside the batch.
    if idxs[0] != 0 || idxs.windows(2).any(|w| w[1] <= w[0]) || idxs[num_attrs - 1] >= count {
        return Err(Error::INVALID_VALUE);
    }
    let mut during_call = false;
    for a in attrs {
        match a.src_access_order {
            ORDER_STREAM | ORDER_ANY => {}
            ORDER_DURING_API_CALL => during_call = true,
            _ => return Err(Error::INVALID_VALUE),
        }
        if a.flags & !BATCH_FLAGS != 0 {
            return Err(Error::INVALID_VALUE);
        }
    }
    let s = capture_stream_handle(c, stream, ptsz)?;
    if during_call && crate::core::capture::capturing(s) {
        // A captured copy reads its source when the graph runs, not during this call.
        return Err(Error(status::STREAM_CAPTURE_UNSUPPORTED));
    }
    for (i, ((&dst, &src), &n)) in dsts.iter().zip(srcs).zip(sizes).enumerate() {
        let cp = Copy2D::linear(dst as u64, src as u64, n as u64);
        if let Err(e) = memcpy(c, cp, memcpy_kind::DEFAULT, Some(s)) {
            *failed = Some(i);
            return Err(e);
        }
    }
    if during_call {
        c.call::<ops::StreamSynchronize>(&vcuda_protocol::HandleReq { handle: s })?;
    }
    Ok(())
}
