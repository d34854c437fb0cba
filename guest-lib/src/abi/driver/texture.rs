// SPDX-License-Identifier: Apache-2.0 OR MIT
//! CUDA arrays, texture and surface objects through the driver API: `cuArrayCreate`,
//! `cuArray3DCreate`, `cuArrayDestroy`, their descriptors, the array copies
//! (`cuMemcpyHtoA`, `cuMemcpyAtoH`, `cuMemcpyDtoA`, `cuMemcpyAtoD`, and `cuMemcpy2D`/`3D`
//! with `CU_MEMORYTYPE_ARRAY`), `cuTexObjectCreate`/`Destroy` and
//! `cuSurfObjectCreate`/`Destroy`, and the mipmapped arrays (`cuMipmappedArrayCreate`,
//! `GetLevel`, `Destroy`), over the runtime's implementation (`crate::api::array`,
//! `crate::api::texture`), `cuMemcpyAtoA`, and the descriptor queries of texture and
//! surface objects (`cuTexObjectGetResourceDesc`, `cuTexObjectGetTextureDesc`,
//! `cuSurfObjectGetResourceDesc`, `cuTexObjectGetResourceViewDesc`), resource views
//! included.

use std::ffi::{c_int, c_uint, c_void};

use super::out;
use crate::client;
use crate::core::array::{
    self, ArrayBox, Linear, cudaArray_t, cudaChannelFormatDesc, cudaMipmappedArray_t,
};
use crate::core::context::current;
use crate::core::texture::{
    self, RES_ARRAY, RES_LINEAR, RES_MIPMAPPED_ARRAY, RES_PITCH2D, cudaResourceDesc,
    cudaResourceViewDesc, cudaTextureDesc,
};
use crate::error::CuError;
use crate::ffi::CUdeviceptr;
use crate::ffi::{cudaStream_t, memcpy_kind};

/// `CUmemorytype`.
const MEMORYTYPE_HOST: u32 = 1;
const MEMORYTYPE_DEVICE: u32 = 2;
const MEMORYTYPE_ARRAY: u32 = 3;
const MEMORYTYPE_UNIFIED: u32 = 4;

/// `CUDA_ARRAY3D_LAYERED`, `_SURFACE_LDST`, `_CUBEMAP`, `_TEXTURE_GATHER`.
const ARRAY3D_LAYERED: c_uint = 0x01;
const ARRAY3D_SURFACE_LDST: c_uint = 0x02;
const ARRAY3D_CUBEMAP: c_uint = 0x04;
const ARRAY3D_TEXTURE_GATHER: c_uint = 0x08;

/// `CU_TRSF_READ_AS_INTEGER`, `_NORMALIZED_COORDINATES`, `_SRGB`.
const TRSF_READ_AS_INTEGER: c_uint = 0x01;
const TRSF_NORMALIZED_COORDINATES: c_uint = 0x02;
const TRSF_SRGB: c_uint = 0x10;

/// `CUDA_ARRAY_DESCRIPTOR`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct CUDA_ARRAY_DESCRIPTOR {
    width: usize,
    height: usize,
    format: c_uint,
    num_channels: c_uint,
}

/// `CUDA_ARRAY3D_DESCRIPTOR`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct CUDA_ARRAY3D_DESCRIPTOR {
    width: usize,
    height: usize,
    depth: usize,
    format: c_uint,
    num_channels: c_uint,
    flags: c_uint,
}

/// `CUDA_MEMCPY3D`.
#[repr(C)]
pub struct CUDA_MEMCPY3D {
    src_x_in_bytes: usize,
    src_y: usize,
    src_z: usize,
    src_lod: usize,
    src_memory_type: u32,
    src_host: *const c_void,
    src_device: CUdeviceptr,
    src_array: *mut c_void,
    reserved0: *mut c_void,
    src_pitch: usize,
    src_height: usize,
    dst_x_in_bytes: usize,
    dst_y: usize,
    dst_z: usize,
    dst_lod: usize,
    dst_memory_type: u32,
    dst_host: *mut c_void,
    dst_device: CUdeviceptr,
    dst_array: *mut c_void,
    reserved1: *mut c_void,
    dst_pitch: usize,
    dst_height: usize,
    width_in_bytes: usize,
    height: usize,
    depth: usize,
}

/// The part of `CUDA_RESOURCE_DESC` the resource types used here read.
#[repr(C)]
pub struct CUDA_RESOURCE_DESC {
    res_type: c_uint,
    /// `hArray` / `devPtr`.
    handle: u64,
    format: c_uint,
    num_channels: c_uint,
    /// `sizeInBytes` / `width`.
    size_or_width: usize,
    height: usize,
    pitch: usize,
}

/// `CUDA_RESOURCE_DESC` whole, as the descriptor queries write it: the type, the union's
/// 128 bytes (as 8-byte words) and the flags.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ResourceDescOut {
    res_type: c_uint,
    res: [u64; 16],
    flags: c_uint,
}

// `sizeof(CUDA_RESOURCE_DESC)` in CUDA 12 and 13.
const _: () = assert!(std::mem::size_of::<ResourceDescOut>() == 144);

/// `CUDA_TEXTURE_DESC`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct CUDA_TEXTURE_DESC {
    address_mode: [c_uint; 3],
    filter_mode: c_uint,
    flags: c_uint,
    max_anisotropy: c_uint,
    mipmap_filter_mode: c_uint,
    mipmap_level_bias: f32,
    min_mipmap_level_clamp: f32,
    max_mipmap_level_clamp: f32,
    border_color: [f32; 4],
    reserved: [c_int; 12],
}

/// A `CUarray_format` and channel count as the runtime's channel descriptor.
fn channel_desc(format: c_uint, channels: c_uint) -> Result<cudaChannelFormatDesc, CuError> {
    // cudaChannelFormatKindSigned, Unsigned, Float.
    let (bits, f) = match format {
        0x01 => (8, 1),
        0x02 => (16, 1),
        0x03 => (32, 1),
        0x08 => (8, 0),
        0x09 => (16, 0),
        0x0a => (32, 0),
        0x10 => (16, 2),
        0x20 => (32, 2),
        _ => return Err(CuError::NOT_SUPPORTED),
    };
    let bit = |i: c_uint| if i < channels { bits } else { 0 };
    if !matches!(channels, 1 | 2 | 4) {
        return Err(CuError::INVALID_VALUE);
    }
    Ok(cudaChannelFormatDesc {
        x: bit(0),
        y: bit(1),
        z: bit(2),
        w: bit(3),
        f,
    })
}

/// The runtime's channel descriptor as a `CUarray_format` and channel count.
fn array_format(d: &cudaChannelFormatDesc) -> (c_uint, c_uint) {
    let channels = [d.x, d.y, d.z, d.w].iter().filter(|&&b| b != 0).count() as c_uint;
    let format = match (d.f, d.x) {
        (1, 8) => 0x01,
        (1, 16) => 0x02,
        (1, _) => 0x03,
        (0, 8) => 0x08,
        (0, 16) => 0x09,
        (0, _) => 0x0a,
        (_, 16) => 0x10,
        _ => 0x20,
    };
    (format, channels)
}

/// The runtime's form of an array descriptor: channels, extent and flags.
fn runtime_shape(
    d: &CUDA_ARRAY3D_DESCRIPTOR,
) -> Result<(cudaChannelFormatDesc, [u64; 3], u32), CuError> {
    current()?;
    let known = ARRAY3D_LAYERED | ARRAY3D_SURFACE_LDST | ARRAY3D_CUBEMAP | ARRAY3D_TEXTURE_GATHER;
    if d.flags & !known != 0 {
        return Err(CuError::NOT_SUPPORTED);
    }
    // cudaArrayLayered (1), SurfaceLoadStore (2), Cubemap (4) and TextureGather (8) have
    // the driver's values.
    let desc = channel_desc(d.format, d.num_channels)?;
    Ok((
        desc,
        [d.width as u64, d.height as u64, d.depth as u64],
        d.flags,
    ))
}

fn create(d: &CUDA_ARRAY3D_DESCRIPTOR) -> Result<u64, CuError> {
    let (desc, extent, flags) = runtime_shape(d)?;
    Ok(array::create(desc, extent, flags)?)
}

fn descriptor(a: cudaArray_t) -> Result<CUDA_ARRAY3D_DESCRIPTOR, CuError> {
    current()?;
    let i = array::info(a).map_err(|_| CuError::INVALID_HANDLE)?;
    let (format, num_channels) = array_format(&i.desc);
    let flags = i.flags;
    Ok(CUDA_ARRAY3D_DESCRIPTOR {
        width: i.extent[0] as usize,
        height: i.extent[1] as usize,
        depth: i.extent[2] as usize,
        format,
        num_channels,
        flags,
    })
}

/// One side of a driver copy descriptor.
struct End {
    ty: u32,
    ptr: u64,
    array: u64,
    x: usize,
    y: usize,
    z: usize,
    pitch: usize,
    rows: usize,
}

/// A copy described by a `CUDA_MEMCPY2D`/`3D`, with an array on at most one side.
fn copy_ends(
    src: End,
    dst: End,
    size: [usize; 3],
    stream: Option<cudaStream_t>,
) -> Result<(), CuError> {
    current()?;
    let c = client::client()?;
    let stream = match stream {
        Some(s) => Some(crate::core::capture::stream_handle(c, s, false)?),
        None => None,
    };
    let linear = |e: &End| -> Result<Linear, CuError> {
        let base = match e.ty {
            MEMORYTYPE_HOST | MEMORYTYPE_DEVICE | MEMORYTYPE_UNIFIED => e.ptr,
            _ => return Err(CuError::INVALID_VALUE),
        };
        // As the driver: a pitch narrower than a row, or slices shorter than the copy's
        // rows, are errors.
        if (size[1] > 1 || size[2] > 1) && e.pitch < size[0] || size[2] > 1 && e.rows < size[1] {
            return Err(CuError::INVALID_VALUE);
        }
        let rows = e.rows.max(size[1]);
        let off =
            e.z.checked_mul(rows)
                .and_then(|r| r.checked_add(e.y))
                .and_then(|r| r.checked_mul(e.pitch))
                .and_then(|o| o.checked_add(e.x))
                .ok_or(CuError::INVALID_VALUE)?;
        Ok(Linear {
            ptr: base.checked_add(off as u64).ok_or(CuError::INVALID_VALUE)?,
            pitch: e.pitch.max(size[0]) as u64,
            rows: rows as u64,
        })
    };
    let boxed = |e: &End| ArrayBox {
        array: e.array,
        origin: [e.x as u64, e.y as u64, e.z as u64],
        size: size.map(|n| n as u64),
    };
    // CU_MEMORYTYPE_UNIFIED: host or device memory, as the pointer says.
    let kind = |e: &End| match e.ty {
        MEMORYTYPE_HOST => memcpy_kind::H2D,
        MEMORYTYPE_UNIFIED => memcpy_kind::DEFAULT,
        _ => memcpy_kind::D2D,
    };
    match (src.ty == MEMORYTYPE_ARRAY, dst.ty == MEMORYTYPE_ARRAY) {
        (false, true) => {
            let k = kind(&src);
            Ok(array::copy(c, boxed(&dst), linear(&src)?, true, k, stream)?)
        }
        (true, false) => {
            let k = match dst.ty {
                MEMORYTYPE_HOST => memcpy_kind::D2H,
                MEMORYTYPE_UNIFIED => memcpy_kind::DEFAULT,
                _ => memcpy_kind::D2D,
            };
            Ok(array::copy(
                c,
                boxed(&src),
                linear(&dst)?,
                false,
                k,
                stream,
            )?)
        }
        // Between two arrays: one layer (the runtime's 2-D array-to-array copy).
        (true, true) if size[2] == 1 && src.z == 0 && dst.z == 0 => Ok(array::array_to_array(
            dst.array as cudaArray_t,
            [dst.x as u64, dst.y as u64],
            src.array as cudaArray_t,
            [src.x as u64, src.y as u64],
            size[0] as u64,
            size[1] as u64,
            memcpy_kind::D2D,
            stream,
        )?),
        _ => Err(CuError::NOT_SUPPORTED),
    }
}

/// A `CUDA_MEMCPY3D` copy: with an array on one side through the runtime's array copy;
/// between linear memory one 2-D copy per slice.
/// `cuMemcpy3DPeer[Async]`: `CUDA_MEMCPY3D_PEER` is `CUDA_MEMCPY3D` with the source and
/// destination contexts where the latter has its reserved pointers. Both must be live
/// contexts (all on this session's one device), and then it is a 3-D copy.
fn peer_3d(p: *const CUDA_MEMCPY3D, stream: Option<cudaStream_t>) -> Result<(), CuError> {
    // SAFETY: the caller's descriptor, checked for null.
    let q = unsafe { p.as_ref() }.ok_or(CuError::INVALID_VALUE)?;
    crate::core::context::current()?;
    for ctx in [q.reserved0, q.reserved1] {
        if !crate::core::context::is_context(ctx as usize) {
            return Err(CuError::INVALID_CONTEXT);
        }
    }
    // Between devices only, as the runtime's cudaMemcpy3DPeer (NVIDIA's refuses host
    // memory, measured).
    if q.src_memory_type == MEMORYTYPE_HOST || q.dst_memory_type == MEMORYTYPE_HOST {
        return Err(CuError::INVALID_VALUE);
    }
    copy_3d(p, stream)
}

fn copy_3d(p: *const CUDA_MEMCPY3D, stream: Option<cudaStream_t>) -> Result<(), CuError> {
    // SAFETY: the caller's descriptor, checked for null.
    let p = unsafe { p.as_ref() }.ok_or(CuError::INVALID_VALUE)?;
    if p.src_lod != 0 || p.dst_lod != 0 {
        return Err(CuError::NOT_SUPPORTED);
    }
    if p.width_in_bytes == 0 || p.height == 0 || p.depth == 0 {
        // An empty copy does nothing, as the runtime's.
        current()?;
        return Ok(());
    }
    let end = |ty, host: usize, dev, array: *mut c_void, (x, y, z), pitch, rows| End {
        ty,
        ptr: if ty == MEMORYTYPE_HOST {
            host as u64
        } else {
            dev
        },
        array: array as u64,
        x,
        y,
        z,
        pitch,
        rows,
    };
    let src = end(
        p.src_memory_type,
        p.src_host as usize,
        p.src_device,
        p.src_array,
        (p.src_x_in_bytes, p.src_y, p.src_z),
        p.src_pitch,
        p.src_height,
    );
    let dst = end(
        p.dst_memory_type,
        p.dst_host as usize,
        p.dst_device,
        p.dst_array,
        (p.dst_x_in_bytes, p.dst_y, p.dst_z),
        p.dst_pitch,
        p.dst_height,
    );
    let size = [p.width_in_bytes, p.height, p.depth];
    if src.ty == MEMORYTYPE_ARRAY || dst.ty == MEMORYTYPE_ARRAY {
        let r = copy_ends(src, dst, size, stream);
        return sync_if(r, stream);
    }
    // Between linear memory: the runtime's 3-D copy, the direction from the addresses.
    let q = linear_params(p)?;
    match stream {
        None => crate::core::memory3d::memcpy_3d_call(&q).map_err(crate::error::CuError::from),
        Some(s) => {
            crate::core::memory3d::memcpy_3d_async(&q, s).map_err(crate::error::CuError::from)
        }
    }
}

/// A `CUDA_MEMCPY3D` between linear memory as the runtime's copy-node parameters
/// (`cuGraphAddMemcpyNode`); copies with an array or a mipmap level are not supported there.
pub(super) fn graph_copy(p: *const CUDA_MEMCPY3D) -> Result<crate::core::graph::Copy3D, CuError> {
    // SAFETY: the caller's descriptor, checked for null.
    let p = unsafe { p.as_ref() }.ok_or(CuError::INVALID_VALUE)?;
    if p.src_lod != 0 || p.dst_lod != 0 || is_array_copy(p.src_memory_type, p.dst_memory_type) {
        return Err(CuError::NOT_SUPPORTED);
    }
    let mut cp = crate::core::graph::Copy3D::from_c(&linear_params(p)?)?;
    cp.declared = [p.src_memory_type, p.dst_memory_type];
    Ok(cp)
}

/// A copy node's copy as the driver gives it out (`cuGraphMemcpyNodeGetParams`): each side's
/// memory type as a driver call declared it, else from the copy's direction
/// (`cudaMemcpyDefault`: unified, the address in the device field, as the driver takes
/// it); its pitch and rows, its position, and the extent.
pub(super) fn graph_copy_params(cp: &crate::core::graph::Copy3D) -> CUDA_MEMCPY3D {
    let (src_dir, dst_dir) = match cp.kind {
        memcpy_kind::H2H => (MEMORYTYPE_HOST, MEMORYTYPE_HOST),
        memcpy_kind::H2D => (MEMORYTYPE_HOST, MEMORYTYPE_DEVICE),
        memcpy_kind::D2H => (MEMORYTYPE_DEVICE, MEMORYTYPE_HOST),
        memcpy_kind::D2D => (MEMORYTYPE_DEVICE, MEMORYTYPE_DEVICE),
        _ => (MEMORYTYPE_UNIFIED, MEMORYTYPE_UNIFIED),
    };
    let ty = |declared: u32, dir: u32| if declared == 0 { dir } else { declared };
    let (src_ty, dst_ty) = (ty(cp.declared[0], src_dir), ty(cp.declared[1], dst_dir));
    let at = |ty: u32, ptr: u64| {
        if ty == MEMORYTYPE_HOST {
            (ptr as usize as *mut c_void, 0)
        } else {
            (std::ptr::null_mut(), ptr)
        }
    };
    let (s, d) = (&cp.src, &cp.dst);
    let (src_h, src_d) = at(src_ty, s.ptr);
    let (dst_h, dst_d) = at(dst_ty, d.ptr);
    CUDA_MEMCPY3D {
        src_x_in_bytes: s.pos[0] as usize,
        src_y: s.pos[1] as usize,
        src_z: s.pos[2] as usize,
        src_lod: 0,
        src_memory_type: src_ty,
        src_host: src_h,
        src_device: src_d,
        src_array: std::ptr::null_mut(),
        reserved0: std::ptr::null_mut(),
        src_pitch: s.pitch as usize,
        src_height: s.ysize as usize,
        dst_x_in_bytes: d.pos[0] as usize,
        dst_y: d.pos[1] as usize,
        dst_z: d.pos[2] as usize,
        dst_lod: 0,
        dst_memory_type: dst_ty,
        dst_host: dst_h,
        dst_device: dst_d,
        dst_array: std::ptr::null_mut(),
        reserved1: std::ptr::null_mut(),
        dst_pitch: d.pitch as usize,
        dst_height: d.ysize as usize,
        width_in_bytes: cp.extent[0] as usize,
        height: cp.extent[1] as usize,
        depth: cp.extent[2] as usize,
    }
}

/// A `CUDA_MEMCPY3D` between linear memory as the runtime's `cudaMemcpy3DParms`
/// (`cudaMemcpyDefault`: the direction from the addresses, as the driver does).
fn linear_params(p: &CUDA_MEMCPY3D) -> Result<crate::core::graph_node::cudaMemcpy3DParms, CuError> {
    use crate::core::graph_node::{cudaExtent, cudaMemcpy3DParms, cudaPitchedPtr, cudaPos};
    // The copy itself takes its direction from the addresses (cudaMemcpyDefault), so a side
    // declared device memory must be device (or managed) memory: else a made-up device
    // address would be written as host memory.
    let c = crate::client::client()?;
    let known = |dev: CUdeviceptr| c.mirror.find(dev).map(|r| r.kind);
    let ptr = |ty, host: usize, dev: CUdeviceptr| match ty {
        MEMORYTYPE_HOST => Ok(host),
        MEMORYTYPE_DEVICE => match known(dev) {
            // Device memory the library does not track (a module's global) is still
            // device memory: the direction below then comes from the declared types.
            Some(crate::mirror::Kind::Device | crate::mirror::Kind::Managed) | None => {
                Ok(dev as usize)
            }
            Some(_) => Err(CuError::INVALID_VALUE),
        },
        MEMORYTYPE_UNIFIED => Ok(dev as usize),
        _ => Err(CuError::INVALID_VALUE),
    };
    // cudaMemcpyDefault (the direction from the addresses, as the driver does) unless a
    // device side is memory the library does not track: then the declared types say it.
    let untracked = |ty, dev| ty == MEMORYTYPE_DEVICE && known(dev).is_none();
    let kind = if untracked(p.src_memory_type, p.src_device)
        || untracked(p.dst_memory_type, p.dst_device)
    {
        match (
            p.src_memory_type == MEMORYTYPE_HOST,
            p.dst_memory_type == MEMORYTYPE_HOST,
        ) {
            (true, true) => memcpy_kind::H2H,
            (true, false) => memcpy_kind::H2D,
            (false, true) => memcpy_kind::D2H,
            (false, false) => memcpy_kind::D2D,
        }
    } else {
        memcpy_kind::DEFAULT
    };
    let side = |ptr: usize, pitch: usize, rows: usize| cudaPitchedPtr {
        ptr: ptr as *mut c_void,
        pitch: if pitch == 0 { p.width_in_bytes } else { pitch },
        xsize: p.width_in_bytes,
        ysize: if rows == 0 { p.height } else { rows },
    };
    let params = cudaMemcpy3DParms {
        src_array: std::ptr::null_mut(),
        src_pos: cudaPos {
            x: p.src_x_in_bytes,
            y: p.src_y,
            z: p.src_z,
        },
        src_ptr: side(
            ptr(p.src_memory_type, p.src_host as usize, p.src_device)?,
            p.src_pitch,
            p.src_height,
        ),
        dst_array: std::ptr::null_mut(),
        dst_pos: cudaPos {
            x: p.dst_x_in_bytes,
            y: p.dst_y,
            z: p.dst_z,
        },
        dst_ptr: side(
            ptr(p.dst_memory_type, p.dst_host as usize, p.dst_device)?,
            p.dst_pitch,
            p.dst_height,
        ),
        extent: cudaExtent {
            width: p.width_in_bytes,
            height: p.height,
            depth: p.depth,
        },
        kind,
    };
    Ok(params)
}

/// The synchronous driver copies complete before returning.
fn sync_if(r: Result<(), CuError>, stream: Option<cudaStream_t>) -> Result<(), CuError> {
    r?;
    if stream.is_none() {
        crate::core::stream::stream_synchronize(std::ptr::null_mut())
            .map_err(crate::error::CuError::from)?;
    }
    Ok(())
}

/// Whether a `CUDA_MEMCPY2D` names an array (then [`copy_2d_array`] does it).
pub(super) fn is_array_copy(src_ty: u32, dst_ty: u32) -> bool {
    src_ty == MEMORYTYPE_ARRAY || dst_ty == MEMORYTYPE_ARRAY
}

/// A `CUDA_MEMCPY2D` copy with an array on one side.
#[allow(clippy::too_many_arguments)]
pub(super) fn copy_2d_array(
    (src_ty, src_ptr, src_array, src_x, src_y, src_pitch): (
        u32,
        u64,
        *mut c_void,
        usize,
        usize,
        usize,
    ),
    (dst_ty, dst_ptr, dst_array, dst_x, dst_y, dst_pitch): (
        u32,
        u64,
        *mut c_void,
        usize,
        usize,
        usize,
    ),
    width: usize,
    height: usize,
    stream: Option<cudaStream_t>,
) -> Result<(), CuError> {
    let end = |ty, ptr, array: *mut c_void, x, y, pitch| End {
        ty,
        ptr,
        array: array as u64,
        x,
        y,
        z: 0,
        pitch,
        rows: height,
    };
    let r = copy_ends(
        end(src_ty, src_ptr, src_array, src_x, src_y, src_pitch),
        end(dst_ty, dst_ptr, dst_array, dst_x, dst_y, dst_pitch),
        [width, height, 1],
        stream,
    );
    sync_if(r, stream)
}

/// `cuMemcpy{H,D}toA` / `cuMemcpyAto{H,D}`: `n` bytes at byte `offset` of the array, row
/// after row.
fn copy_linear(
    a: cudaArray_t,
    offset: usize,
    ptr: u64,
    n: usize,
    to_array: bool,
    kind: i32,
    stream: Option<cudaStream_t>,
) -> Result<(), CuError> {
    current()?;
    let i = array::info(a).map_err(|_| CuError::INVALID_HANDLE)?;
    let row = (i.extent[0] as usize)
        .saturating_mul(i.desc.texel_bytes() as usize)
        .max(1);
    // The driver's 1-D array copies reach the array's first row only, whatever its height
    // (NVIDIA's driver 580 refuses a copy past it with CUDA_ERROR_INVALID_VALUE, measured).
    if offset.checked_add(n).is_none_or(|end| end > row) {
        return Err(CuError::INVALID_VALUE);
    }
    let on = stream.map(|s| (s, false));
    array::copy_linear_array(a, offset, 0, ptr, n, to_array, kind, on)?;
    sync_if(Ok(()), stream)
}

fn resource(r: *const CUDA_RESOURCE_DESC) -> Result<cudaResourceDesc, CuError> {
    // SAFETY: the caller's descriptor, checked for null.
    let r = unsafe { r.as_ref() }.ok_or(CuError::INVALID_VALUE)?;
    let desc = |r: &CUDA_RESOURCE_DESC| channel_desc(r.format, r.num_channels);
    // CU_RESOURCE_TYPE_ARRAY, _MIPMAPPED_ARRAY, _LINEAR, _PITCH2D.
    Ok(match r.res_type {
        0 => cudaResourceDesc {
            res_type: RES_ARRAY,
            ptr: r.handle as *mut c_void,
            desc: cudaChannelFormatDesc::default(),
            size_or_width: 0,
            height: 0,
            pitch: 0,
        },
        2 => cudaResourceDesc {
            res_type: RES_LINEAR,
            ptr: r.handle as *mut c_void,
            desc: desc(r)?,
            size_or_width: r.size_or_width,
            height: 0,
            pitch: 0,
        },
        3 => cudaResourceDesc {
            res_type: RES_PITCH2D,
            ptr: r.handle as *mut c_void,
            desc: desc(r)?,
            size_or_width: r.size_or_width,
            height: r.height,
            pitch: r.pitch,
        },
        1 => cudaResourceDesc {
            res_type: RES_MIPMAPPED_ARRAY,
            ptr: r.handle as *mut c_void,
            desc: cudaChannelFormatDesc::default(),
            size_or_width: 0,
            height: 0,
            pitch: 0,
        },
        _ => return Err(CuError::INVALID_VALUE),
    })
}

/// The driver's form of a runtime resource descriptor.
fn resource_out(r: &cudaResourceDesc) -> ResourceDescOut {
    let mut o = ResourceDescOut {
        res_type: r.res_type as c_uint,
        ..Default::default()
    };
    o.res[0] = r.ptr as u64;
    if matches!(r.res_type, RES_LINEAR | RES_PITCH2D) {
        let (format, channels) = array_format(&r.desc);
        // `format` and `numChannels` share the union's second word, in that order.
        o.res[1] = u64::from(format) | u64::from(channels) << 32;
        o.res[2] = r.size_or_width as u64;
        if r.res_type == RES_PITCH2D {
            o.res[3] = r.height as u64;
            o.res[4] = r.pitch as u64;
        }
    }
    o
}

/// The driver's form of a runtime texture descriptor (element-type reads as
/// `CU_TRSF_READ_AS_INTEGER`, as [`sampler`] takes them).
fn sampler_out(t: &cudaTextureDesc) -> CUDA_TEXTURE_DESC {
    let flag = |on: bool, f: c_uint| if on { f } else { 0 };
    CUDA_TEXTURE_DESC {
        address_mode: t.address_mode.map(|m| m as c_uint),
        filter_mode: t.filter_mode as c_uint,
        flags: flag(t.read_mode == 0, TRSF_READ_AS_INTEGER)
            | flag(t.normalized_coords != 0, TRSF_NORMALIZED_COORDINATES)
            | flag(t.srgb != 0, TRSF_SRGB),
        max_anisotropy: t.max_anisotropy,
        mipmap_filter_mode: t.mipmap_filter_mode as c_uint,
        mipmap_level_bias: t.mipmap_level_bias,
        min_mipmap_level_clamp: t.min_mipmap_level_clamp,
        max_mipmap_level_clamp: t.max_mipmap_level_clamp,
        border_color: t.border_color,
        reserved: [0; 12],
    }
}

fn sampler(t: *const CUDA_TEXTURE_DESC) -> Result<cudaTextureDesc, CuError> {
    // SAFETY: the caller's descriptor, checked for null.
    let t = unsafe { t.as_ref() }.ok_or(CuError::INVALID_VALUE)?;
    if t.flags & !(TRSF_READ_AS_INTEGER | TRSF_NORMALIZED_COORDINATES | TRSF_SRGB | 0x20) != 0 {
        return Err(CuError::NOT_SUPPORTED);
    }
    let int = |v: c_uint| c_int::try_from(v).map_err(|_| CuError::INVALID_VALUE);
    Ok(cudaTextureDesc {
        address_mode: [
            int(t.address_mode[0])?,
            int(t.address_mode[1])?,
            int(t.address_mode[2])?,
        ],
        filter_mode: int(t.filter_mode)?,
        // Without CU_TRSF_READ_AS_INTEGER, integer texels read as normalized floats.
        read_mode: c_int::from(t.flags & TRSF_READ_AS_INTEGER == 0),
        srgb: c_int::from(t.flags & TRSF_SRGB != 0),
        border_color: t.border_color,
        normalized_coords: c_int::from(t.flags & TRSF_NORMALIZED_COORDINATES != 0),
        max_anisotropy: t.max_anisotropy,
        mipmap_filter_mode: int(t.mipmap_filter_mode)?,
        mipmap_level_bias: t.mipmap_level_bias,
        min_mipmap_level_clamp: t.min_mipmap_level_clamp,
        max_mipmap_level_clamp: t.max_mipmap_level_clamp,
        ..Default::default()
    })
}

entry_lib! {
    fn cuArrayCreate_v2(out_a: *mut cudaArray_t, d: *const CUDA_ARRAY_DESCRIPTOR) -> Result<(), CuError> {
        // SAFETY: the caller's descriptor, checked for null.
        let d = unsafe { d.as_ref() }.ok_or(CuError::INVALID_VALUE)?;
        let h = create(&CUDA_ARRAY3D_DESCRIPTOR {
            width: d.width,
            height: d.height,
            depth: 0,
            format: d.format,
            num_channels: d.num_channels,
            flags: 0,
        })?;
        // SAFETY: the caller's output pointer.
        unsafe { out(out_a, h as cudaArray_t) }
    }

    fn cuArray3DCreate_v2(out_a: *mut cudaArray_t, d: *const CUDA_ARRAY3D_DESCRIPTOR) -> Result<(), CuError> {
        // SAFETY: the caller's descriptor, checked for null.
        let d = unsafe { d.as_ref() }.ok_or(CuError::INVALID_VALUE)?;
        let h = create(d)?;
        // SAFETY: the caller's output pointer.
        unsafe { out(out_a, h as cudaArray_t) }
    }

    fn cuMipmappedArrayCreate(out_m: *mut cudaMipmappedArray_t, d: *const CUDA_ARRAY3D_DESCRIPTOR, levels: c_uint) -> Result<(), CuError> {
        // SAFETY: the caller's descriptor, checked for null.
        let d = unsafe { d.as_ref() }.ok_or(CuError::INVALID_VALUE)?;
        let (desc, extent, flags) = runtime_shape(d)?;
        let h = array::mipmapped_create(desc, extent, levels, flags)?;
        // SAFETY: the caller's output pointer.
        unsafe { out(out_m, h as cudaMipmappedArray_t) }
    }

    fn cuMipmappedArrayGetLevel(out_a: *mut cudaArray_t, m: cudaMipmappedArray_t, level: c_uint) -> Result<(), CuError> {
        current()?;
        let h = array::mipmapped_level(m as u64, level)?;
        // SAFETY: the caller's output pointer.
        unsafe { out(out_a, h as cudaArray_t) }
    }

    fn cuMipmappedArrayDestroy(m: cudaMipmappedArray_t) -> Result<(), CuError> {
        current()?;
        if m.is_null() {
            return Err(CuError::INVALID_HANDLE);
        }
        Ok(array::mipmapped_destroy(m as u64)?)
    }

    fn cuArrayDestroy(a: cudaArray_t) -> Result<(), CuError> {
        current()?;
        if a.is_null() {
            return Err(CuError::INVALID_HANDLE);
        }
        Ok(array::destroy(a as u64)?)
    }

    fn cuArrayGetDescriptor_v2(d: *mut CUDA_ARRAY_DESCRIPTOR, a: cudaArray_t) -> Result<(), CuError> {
        let x = descriptor(a)?;
        let v = CUDA_ARRAY_DESCRIPTOR {
            width: x.width,
            height: x.height,
            format: x.format,
            num_channels: x.num_channels,
        };
        // SAFETY: the caller's output pointer.
        unsafe { out(d, v) }
    }

    fn cuArray3DGetDescriptor_v2(d: *mut CUDA_ARRAY3D_DESCRIPTOR, a: cudaArray_t) -> Result<(), CuError> {
        let x = descriptor(a)?;
        // SAFETY: the caller's output pointer.
        unsafe { out(d, x) }
    }

    fn cuMemcpy3D_v2(p: *const CUDA_MEMCPY3D) -> Result<(), CuError> {
        copy_3d(p, None)
    }

    fn cuMemcpy3DAsync_v2(p: *const CUDA_MEMCPY3D, s: cudaStream_t) -> Result<(), CuError> {
        copy_3d(p, Some(s))
    }

    fn cuMemcpy3DPeer(p: *const CUDA_MEMCPY3D) -> Result<(), CuError> {
        peer_3d(p, None)
    }

    fn cuMemcpy3DPeerAsync(p: *const CUDA_MEMCPY3D, s: cudaStream_t) -> Result<(), CuError> {
        peer_3d(p, Some(s))
    }

    fn cuMemcpyHtoA_v2(a: cudaArray_t, offset: usize, src: *const c_void, n: usize) -> Result<(), CuError> {
        copy_linear(a, offset, src as u64, n, true, memcpy_kind::H2D, None)
    }

    fn cuMemcpyHtoAAsync_v2(a: cudaArray_t, offset: usize, src: *const c_void, n: usize, s: cudaStream_t) -> Result<(), CuError> {
        copy_linear(a, offset, src as u64, n, true, memcpy_kind::H2D, Some(s))
    }

    fn cuMemcpyAtoH_v2(dst: *mut c_void, a: cudaArray_t, offset: usize, n: usize) -> Result<(), CuError> {
        copy_linear(a, offset, dst as u64, n, false, memcpy_kind::D2H, None)
    }

    fn cuMemcpyAtoHAsync_v2(dst: *mut c_void, a: cudaArray_t, offset: usize, n: usize, s: cudaStream_t) -> Result<(), CuError> {
        copy_linear(a, offset, dst as u64, n, false, memcpy_kind::D2H, Some(s))
    }

    fn cuMemcpyDtoA_v2(a: cudaArray_t, offset: usize, src: CUdeviceptr, n: usize) -> Result<(), CuError> {
        copy_linear(a, offset, src, n, true, memcpy_kind::D2D, None)
    }

    fn cuMemcpyAtoD_v2(dst: CUdeviceptr, a: cudaArray_t, offset: usize, n: usize) -> Result<(), CuError> {
        copy_linear(a, offset, dst, n, false, memcpy_kind::D2D, None)
    }

    fn cuTexObjectCreate(out_t: *mut u64, r: *const CUDA_RESOURCE_DESC, t: *const CUDA_TEXTURE_DESC, view: *const cudaResourceViewDesc) -> Result<(), CuError> {
        current()?;
        // SAFETY: the caller's view descriptor or null (`CUDA_RESOURCE_VIEW_DESC` starts
        // with the runtime's fields, and its format codes are the runtime's).
        let view = unsafe { view.as_ref() };
        let h = texture::create(&resource(r)?, Some(&sampler(t)?), view)?;
        // SAFETY: the caller's output pointer.
        unsafe { out(out_t, h) }
    }

    fn cuTexObjectDestroy(h: u64) -> Result<(), CuError> {
        current()?;
        Ok(texture::destroy(h, false)?)
    }

    fn cuTexObjectGetResourceDesc(d: *mut ResourceDescOut, h: u64) -> Result<(), CuError> {
        current()?;
        let (r, _) = texture::descriptors(h, false)?;
        // SAFETY: the caller's output pointer.
        unsafe { out(d, resource_out(&r)) }
    }

    fn cuTexObjectGetTextureDesc(d: *mut CUDA_TEXTURE_DESC, h: u64) -> Result<(), CuError> {
        current()?;
        let (_, t) = texture::descriptors(h, false)?;
        // SAFETY: the caller's output pointer.
        unsafe { out(d, sampler_out(&t.unwrap_or_default())) }
    }

    fn cuTexObjectGetResourceViewDesc(d: *mut cudaResourceViewDesc, h: u64) -> Result<(), CuError> {
        current()?;
        let v = texture::view_of(h)?;
        // SAFETY: the caller's output pointer (the fields before the reserved words).
        unsafe { out(d, v) }
    }

    fn cuSurfObjectGetResourceDesc(d: *mut ResourceDescOut, h: u64) -> Result<(), CuError> {
        current()?;
        let (r, _) = texture::descriptors(h, true)?;
        // SAFETY: the caller's output pointer.
        unsafe { out(d, resource_out(&r)) }
    }

    fn cuMemcpyAtoA_v2(dst: cudaArray_t, dst_offset: usize, src: cudaArray_t, src_offset: usize, n: usize) -> Result<(), CuError> {
        current()?;
        let (di, si) = (
            array::info(dst).map_err(|_| CuError::INVALID_HANDLE)?,
            array::info(src).map_err(|_| CuError::INVALID_HANDLE)?,
        );
        // Elements of one size (formats may differ), a whole number of them, within the
        // first row of each array (the driver's 1-D array copies, as `copy_linear`).
        let elem = di.desc.texel_bytes() as usize;
        let row = |i: &array::ArrayInfo| (i.extent[0] as usize).saturating_mul(i.desc.texel_bytes() as usize);
        let fits = |off: usize, row: usize| off.checked_add(n).is_some_and(|end| end <= row);
        if elem == 0
            || elem != si.desc.texel_bytes() as usize
            || !n.is_multiple_of(elem)
            || !fits(dst_offset, row(&di))
            || !fits(src_offset, row(&si))
        {
            return Err(CuError::INVALID_VALUE);
        }
        array::copy_row(dst, dst_offset as u64, src, src_offset as u64, n as u64)?;
        sync_if(Ok(()), None)
    }

    fn cuSurfObjectCreate(out_s: *mut u64, r: *const CUDA_RESOURCE_DESC) -> Result<(), CuError> {
        current()?;
        let h = texture::create(&resource(r)?, None, None)?;
        // SAFETY: the caller's output pointer.
        unsafe { out(out_s, h) }
    }

    fn cuSurfObjectDestroy(h: u64) -> Result<(), CuError> {
        current()?;
        Ok(texture::destroy(h, true)?)
    }
}
