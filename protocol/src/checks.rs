// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The segment checks of the operations that carry data, named by their rows in
//! [`crate::operations`]. Each gets the decoded fixed part, the tail and the raw request.

use crate::decode::{DecodeError, RawRequest, limit};
use crate::op::*;
use crate::wire::*;

/// Counts a request's out and in segments.
fn seg_counts(raw: &RawRequest<'_>) -> (usize, usize) {
    let outs = raw
        .segments
        .iter()
        .filter(|s| s.direction() == Some(SegmentDir::Out))
        .count();
    (outs, raw.segments.len() - outs)
}

fn shape(
    what: &'static str,
    raw: &RawRequest<'_>,
    outs: usize,
    ins: usize,
) -> Result<(), DecodeError> {
    if seg_counts(raw) == (outs, ins) {
        Ok(())
    } else {
        Err(DecodeError::BadSegments(what))
    }
}

/// Exactly one segment, of direction `dir` and `len` bytes (`None`, a length that
/// overflowed, is never right).
fn one_segment(
    what: &'static str,
    raw: &RawRequest<'_>,
    dir: SegmentDir,
    len: Option<u64>,
) -> Result<(), DecodeError> {
    let (outs, ins, have) = match dir {
        SegmentDir::Out => (1, 0, raw.out_len),
        SegmentDir::In => (0, 1, raw.in_len),
    };
    shape(what, raw, outs, ins)?;
    if Some(have) == len {
        Ok(())
    } else {
        Err(DecodeError::BadSegments(what))
    }
}

/// One out segment holding the packed rows.
pub(crate) fn packed_out(
    r: &MemcpyHtoDReq,
    _: &[u8],
    raw: &RawRequest<'_>,
) -> Result<(), DecodeError> {
    let len = r.width.checked_mul(r.height);
    one_segment("MemcpyHtoD", raw, SegmentDir::Out, len)
}

/// One in segment for the packed rows.
pub(crate) fn packed_in(
    r: &MemcpyDtoHReq,
    _: &[u8],
    raw: &RawRequest<'_>,
) -> Result<(), DecodeError> {
    let len = r.width.checked_mul(r.height);
    one_segment("MemcpyDtoH", raw, SegmentDir::In, len)
}

/// The image as one out segment when [`MODULE_HAS_DATA`], else nothing.
pub(crate) fn module_image(
    r: &ModuleLoadReq,
    _: &[u8],
    raw: &RawRequest<'_>,
) -> Result<(), DecodeError> {
    if r.flags & MODULE_HAS_DATA != 0 {
        one_segment("ModuleLoad", raw, SegmentDir::Out, Some(r.size))
    } else {
        shape("ModuleLoad", raw, 0, 0)
    }
}

/// One out segment holding the graph's description, at most
/// [`crate::graph::MAX_GRAPH_LEN`] bytes (none for an empty graph).
pub(crate) fn graph_nodes(
    r: &GraphCreateReq,
    _: &[u8],
    raw: &RawRequest<'_>,
) -> Result<(), DecodeError> {
    limit("graph length", r.size, crate::graph::MAX_GRAPH_LEN)?;
    if r.reserved != 0 {
        return Err(DecodeError::Inconsistent("GraphCreate reserved field"));
    }
    if r.size == 0 {
        shape("GraphCreate", raw, 0, 0)
    } else {
        one_segment("GraphCreate", raw, SegmentDir::Out, Some(r.size))
    }
}

/// No segments; the tail is exactly `param_len` bytes.
pub(crate) fn launch_params(
    r: &LaunchReq,
    params: &[u8],
    raw: &RawRequest<'_>,
) -> Result<(), DecodeError> {
    shape("Launch", raw, 0, 0)?;
    if params.len() != r.param_len as usize {
        return Err(DecodeError::Inconsistent("parameter length"));
    }
    Ok(())
}

/// As [`launch_params`], for a launch in clusters.
pub(crate) fn launch_cluster_params(
    r: &LaunchClusterReq,
    params: &[u8],
    raw: &RawRequest<'_>,
) -> Result<(), DecodeError> {
    launch_params(&r.launch, params, raw)
}

/// A host generator's output fills in segments only (`n * element size` bytes in
/// all); a device generator carries no data.
pub(crate) fn rand_output(
    r: &RandGenerateReq,
    _: &[u8],
    raw: &RawRequest<'_>,
) -> Result<(), DecodeError> {
    let elem = lib::dist::elem_size(r.dist).ok_or(DecodeError::Inconsistent("distribution"))?;
    let bytes =
        r.n.checked_mul(elem)
            .ok_or(DecodeError::Inconsistent("RandGenerate length"))?;
    if r.flags & lib::RAND_TO_HOST != 0 {
        limit("host generator output", bytes, MAX_DATA_LEN)?;
        if seg_counts(raw).0 != 0 || raw.in_len != bytes {
            return Err(DecodeError::BadSegments("RandGenerate"));
        }
        Ok(())
    } else {
        shape("RandGenerate", raw, 0, 0)
    }
}
