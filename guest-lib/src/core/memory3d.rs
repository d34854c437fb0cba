// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Three-dimensional memory: `cudaMalloc3D`, `cudaMemcpy3D[Async]`, `cudaMemcpy3DPeer[Async]`
//! and `cudaMemset3D[Async]` (and their per-thread default stream variants) over pitched
//! linear memory. A 3-D copy or memset is one 2-D operation per slice, in order on the same
//! stream; a capturing stream records a 3-D copy as one memcpy node. Copies with a CUDA
//! array on either side are `super::array`'s (not captured).

use crate::client::{self, Client};
use crate::core::capture::capture_stream_handle;
use crate::core::graph::{Copy3D, Kind as NodeKind};
use crate::core::graph_node::{cudaExtent, cudaMemcpy3DParms, cudaPitchedPtr, cudaPos};
use crate::core::memory::{On, copy_2d, memset_2d};
use crate::error::{Error, Result};
use crate::ffi::{cudaStream_t, memcpy_kind};
use std::ffi::{c_int, c_void};

/// `struct cudaMemcpy3DPeerParms`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct cudaMemcpy3DPeerParms {
    pub(crate) src_array: *mut c_void,
    pub(crate) src_pos: cudaPos,
    pub(crate) src_ptr: cudaPitchedPtr,
    pub(crate) src_device: c_int,
    pub(crate) dst_array: *mut c_void,
    pub(crate) dst_pos: cudaPos,
    pub(crate) dst_ptr: cudaPitchedPtr,
    pub(crate) dst_device: c_int,
    pub(crate) extent: cudaExtent,
}

/// `struct cudaMemcpy3DOperand`: a pointer (row length and layer height in elements, 0:
/// packed) or an array and an offset into it, by `type_` (1 or 2).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct cudaMemcpy3DOperand {
    pub(crate) type_: c_int,
    /// `op.ptr`: `(ptr, rowLength, layerHeight, locHint)`; `op.array`: `(array, offset x,
    /// y, z)`: both 32 bytes.
    pub(crate) op: [usize; 4],
}

/// `struct cudaMemcpy3DBatchOp`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct cudaMemcpy3DBatchOp {
    pub(crate) src: cudaMemcpy3DOperand,
    pub(crate) dst: cudaMemcpy3DOperand,
    pub(crate) extent: cudaExtent,
    pub(crate) src_access_order: c_int,
    pub(crate) flags: u32,
}
const _: () = assert!(size_of::<cudaMemcpy3DBatchOp>() == 112);

/// `cudaMemcpyOperandTypePointer`, `cudaMemcpyOperandTypeArray`.
pub(crate) const OPERAND_POINTER: c_int = 1;
pub(crate) const OPERAND_ARRAY: c_int = 2;

/// One operation of `cudaMemcpy3DBatchAsync` as the `cudaMemcpy3DParms` of the same copy:
/// extents and offsets in elements (an array's, or bytes between pointers).
pub(crate) fn batch_parms(op: &cudaMemcpy3DBatchOp) -> Result<cudaMemcpy3DParms> {
    let e = op.extent;
    // cudaMemcpySrcAccessOrderStream .. Any; cudaMemcpyFlagPreferOverlapWithCompute.
    if e.width == 0
        || e.height == 0
        || e.depth == 0
        || !(1..=3).contains(&op.src_access_order)
        || op.flags > 1
    {
        return Err(Error::INVALID_VALUE);
    }
    let texel = |o: &cudaMemcpy3DOperand| -> Result<Option<u64>> {
        match o.type_ {
            OPERAND_POINTER => Ok(None),
            OPERAND_ARRAY => Ok(Some(
                crate::core::array::info(o.op[0] as *mut c_void)?
                    .desc
                    .texel_bytes(),
            )),
            _ => Err(Error::INVALID_VALUE),
        }
    };
    let elem = match (texel(&op.src)?, texel(&op.dst)?) {
        (Some(a), Some(b)) if a != b => return Err(Error::INVALID_VALUE),
        (Some(a), _) | (None, Some(a)) => a as usize,
        (None, None) => 1,
    };
    let side = |o: &cudaMemcpy3DOperand| -> Result<(*mut c_void, cudaPos, cudaPitchedPtr)> {
        if o.type_ == OPERAND_ARRAY {
            let pos = cudaPos {
                x: o.op[1],
                y: o.op[2],
                z: o.op[3],
            };
            let none = cudaPitchedPtr {
                ptr: std::ptr::null_mut(),
                pitch: 0,
                xsize: 0,
                ysize: 0,
            };
            return Ok((o.op[0] as *mut c_void, pos, none));
        }
        let (row, layer) = (o.op[1], o.op[2]);
        if (row != 0 && row < e.width) || (layer != 0 && layer < e.height) {
            return Err(Error::INVALID_VALUE);
        }
        let row = if row == 0 { e.width } else { row };
        let pitch = row.checked_mul(elem).ok_or(Error::INVALID_VALUE)?;
        let ysize = if layer == 0 { e.height } else { layer };
        let p = cudaPitchedPtr {
            ptr: o.op[0] as *mut c_void,
            pitch,
            xsize: pitch,
            ysize,
        };
        Ok((std::ptr::null_mut(), cudaPos::default(), p))
    };
    let (src_array, src_pos, src_ptr) = side(&op.src)?;
    let (dst_array, dst_pos, dst_ptr) = side(&op.dst)?;
    Ok(cudaMemcpy3DParms {
        src_array,
        src_pos,
        src_ptr,
        dst_array,
        dst_pos,
        dst_ptr,
        extent: e,
        kind: 4, // cudaMemcpyDefault
    })
}

/// `cudaMemcpy3DBatchAsync` (and the driver's `cuMemcpy3DBatchAsync`, whose
/// `CUDA_MEMCPY3D_BATCH_OP` is laid out alike): every operation checked, then each run as
/// `cudaMemcpy3DAsync` on `stream` in the list's order (CUDA leaves the order within a
/// batch open).
pub(crate) fn memcpy_3d_batch(
    ops: &[cudaMemcpy3DBatchOp],
    flags: u64,
    stream: cudaStream_t,
    ptsz: bool,
    failed: &mut Option<usize>,
) -> Result<()> {
    // The legacy stream is refused (the API's rule), as for `cudaMemcpyBatchAsync`; the
    // per-thread one is not.
    let legacy = stream as usize == crate::ffi::STREAM_LEGACY || (stream.is_null() && !ptsz);
    if ops.is_empty() || flags != 0 || legacy {
        return Err(Error::INVALID_VALUE);
    }
    let mut parms = Vec::with_capacity(ops.len());
    for (i, op) in ops.iter().enumerate() {
        parms.push(batch_parms(op).inspect_err(|_| *failed = Some(i))?);
    }
    for (i, p) in parms.iter().enumerate() {
        memcpy_3d(p, Some((stream, ptsz))).inspect_err(|_| *failed = Some(i))?;
    }
    Ok(())
}

/// A 3-D copy on `on` (`None`: synchronous).
pub(crate) fn memcpy_3d(p: &cudaMemcpy3DParms, on: On) -> Result<()> {
    if !p.src_array.is_null() || !p.dst_array.is_null() {
        return crate::core::array::copy_3d(p, on);
    }
    // An empty copy succeeds and does nothing (NVIDIA's runtime, CUDA 13.0, measured with a
    // zero width).
    let e = &p.extent;
    if e.width == 0 || e.height == 0 || e.depth == 0 {
        return Ok(());
    }
    let cp = Copy3D::from_c(p)?;
    let c = client::client()?;
    c.check_sticky()?;
    let stream = match on {
        Some((s, per_thread)) => Some(capture_stream_handle(c, s, per_thread)?),
        None => None,
    };
    if let Some(s) = stream
        && crate::core::capture::add(s, || Ok(NodeKind::Memcpy(cp)))?
    {
        return Ok(());
    }
    run(&cp, stream)
}

/// Runs `cp` as one 2-D copy per slice.
pub(crate) fn run(cp: &Copy3D, stream: Option<u64>) -> Result<()> {
    for z in 0..cp.extent[2] {
        copy_2d(
            cp.dst.at(0, z),
            cp.dst.pitch,
            cp.src.at(0, z),
            cp.src.pitch,
            cp.extent[0],
            cp.extent[1],
            cp.kind,
            stream,
        )?;
    }
    Ok(())
}

/// A 3-D copy between devices: one device here, so both must name it (or a valid ordinal).
pub(crate) fn memcpy_3d_peer(p: &cudaMemcpy3DPeerParms, on: On) -> Result<()> {
    let c = client::client()?;
    for d in [p.src_device, p.dst_device] {
        check_device(c, d)?;
    }
    // A peer copy is between devices: each side is an array or device (or managed) memory.
    // NVIDIA's runtime refuses host memory with cudaErrorInvalidValue (measured, CUDA 13.0).
    for (array, ptr) in [(p.src_array, p.src_ptr.ptr), (p.dst_array, p.dst_ptr.ptr)] {
        let device_side = matches!(
            c.mirror.find(ptr as u64).map(|r| r.kind),
            Some(crate::mirror::Kind::Device | crate::mirror::Kind::Managed)
        );
        if array.is_null() && !device_side {
            return Err(Error::INVALID_VALUE);
        }
    }
    let q = cudaMemcpy3DParms {
        src_array: p.src_array,
        src_pos: p.src_pos,
        src_ptr: p.src_ptr,
        dst_array: p.dst_array,
        dst_pos: p.dst_pos,
        dst_ptr: p.dst_ptr,
        extent: p.extent,
        kind: memcpy_kind::DEFAULT,
    };
    memcpy_3d(&q, on)
}

pub(crate) fn check_device(c: &Client, d: c_int) -> Result<()> {
    c.check_device(d).map(|_| ())
}

/// `cudaMemset3D[Async]`: `extent.depth` slices of `extent.height` rows of `extent.width`
/// bytes, `pitch` apart within a slice and `pitch * ysize` apart between slices.
pub(crate) fn memset_3d(p: cudaPitchedPtr, value: c_int, e: cudaExtent, on: On) -> Result<()> {
    if e.width == 0 || e.height == 0 || e.depth == 0 {
        return Ok(());
    }
    if e.height > 1 && p.pitch < e.width || e.depth > 1 && p.ysize < e.height {
        return Err(Error::INVALID_VALUE);
    }
    let slice = p.pitch.checked_mul(p.ysize).ok_or(Error::INVALID_VALUE)?;
    for z in 0..e.depth {
        let off = slice.checked_mul(z).ok_or(Error::INVALID_VALUE)?;
        let ptr = (p.ptr as usize)
            .checked_add(off)
            .ok_or(Error::INVALID_VALUE)?;
        memset_2d(ptr as *mut c_void, p.pitch, value, e.width, e.height, on)?;
    }
    Ok(())
}

/// `cudaMemcpy3D`.
pub(crate) fn memcpy_3d_call(p: &cudaMemcpy3DParms) -> Result<()> {
    memcpy_3d(p, None)
}

/// `cudaMemcpy3DAsync`.
pub(crate) fn memcpy_3d_async(p: &cudaMemcpy3DParms, stream: cudaStream_t) -> Result<()> {
    memcpy_3d(p, Some((stream, false)))
}
