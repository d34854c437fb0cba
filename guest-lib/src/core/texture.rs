// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Texture and surface objects: `cudaCreateTextureObject`, `cudaCreateSurfaceObject`, their
//! destruction and descriptor queries.
//!
//! The backend creates the object and answers the handle kernels take (on a GPU, the
//! driver's own `CUtexObject`). Textures view an array, a mipmapped array (with the
//! descriptor's mipmap filter mode, level bias and level clamps), linear memory or pitched
//! 2-D memory; surfaces view an array created with `cudaArraySurfaceLoadStore`. A texture
//! over an array or a mipmapped array may take a resource view (`cudaResourceViewDesc`):
//! another format of the same texel size, a range of levels, a range of layers (whole cubes
//! of a cube map). Block-compressed view formats and anisotropic filtering are not
//! supported: a descriptor that asks for them fails with `cudaErrorNotSupported`.

use crate::core::array::{cudaArray_t, cudaChannelFormatDesc};
use crate::error::{Error, Result};
use crate::{client, state};
use std::collections::HashMap;
use std::ffi::{c_int, c_uint, c_void};
use std::sync::{LazyLock, Mutex};
use vcuda_protocol::{
    ChannelFormat, HandleResp, RESOURCE_ARRAY, RESOURCE_LINEAR, RESOURCE_MIPMAPPED_ARRAY,
    RESOURCE_PITCH2D, TEX_FILTER_LINEAR, TEX_MIPMAP_LINEAR, TEX_NORMALIZED_COORDS,
    TEX_READ_NORMALIZED_FLOAT, TEX_SRGB, TEX_SURFACE, TEX_VIEW, TexObjectCreateReq,
    TexObjectDestroyReq, ops,
};

/// `cudaResourceType` values.
pub(crate) const RES_ARRAY: c_int = 0;
pub(crate) const RES_MIPMAPPED_ARRAY: c_int = 1;
pub(crate) const RES_LINEAR: c_int = 2;
pub(crate) const RES_PITCH2D: c_int = 3;

/// The part of `struct cudaResourceDesc` CUDA 12 and 13 share (CUDA 13 appends a reserved
/// area and a flags word): the type and the union's members.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct cudaResourceDesc {
    pub(crate) res_type: c_int,
    /// `array.array` / `mipmap.mipmap` / `linear.devPtr` / `pitch2D.devPtr`.
    pub(crate) ptr: *mut c_void,
    pub(crate) desc: cudaChannelFormatDesc,
    /// `linear.sizeInBytes` / `pitch2D.width`.
    pub(crate) size_or_width: usize,
    /// `pitch2D.height`.
    pub(crate) height: usize,
    /// `pitch2D.pitchInBytes`.
    pub(crate) pitch: usize,
}

/// `struct cudaTextureDesc` (CUDA 12 and 13).
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct cudaTextureDesc {
    pub(crate) address_mode: [c_int; 3],
    pub(crate) filter_mode: c_int,
    pub(crate) read_mode: c_int,
    pub(crate) srgb: c_int,
    pub(crate) border_color: [f32; 4],
    pub(crate) normalized_coords: c_int,
    pub(crate) max_anisotropy: c_uint,
    pub(crate) mipmap_filter_mode: c_int,
    pub(crate) mipmap_level_bias: f32,
    pub(crate) min_mipmap_level_clamp: f32,
    pub(crate) max_mipmap_level_clamp: f32,
    pub(crate) disable_trilinear_optimization: c_int,
    pub(crate) seamless_cubemap: c_int,
}

/// The part of `struct cudaResourceViewDesc` CUDA 12 and 13 share (CUDA 13 appends 16
/// reserved words), and of the driver's `CUDA_RESOURCE_VIEW_DESC` (whose format codes are
/// the same).
#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq)]
pub struct cudaResourceViewDesc {
    pub(crate) format: c_int,
    pub(crate) width: usize,
    pub(crate) height: usize,
    pub(crate) depth: usize,
    pub(crate) first_mipmap_level: c_uint,
    pub(crate) last_mipmap_level: c_uint,
    pub(crate) first_layer: c_uint,
    pub(crate) last_layer: c_uint,
}

/// A `cudaResourceViewFormat` as a channel format: 1, 2 or 4 channels of 8, 16 or 32-bit
/// integers or 16 or 32-bit floats (`None`, 0: the resource's own). Block-compressed
/// formats are not supported.
pub(crate) fn view_format(f: c_int) -> Result<Option<cudaChannelFormatDesc>> {
    match f {
        0 => Ok(None),
        1..=24 => {
            // Unsigned char, signed char, unsigned short, short, unsigned int, int, half,
            // float; each with 1, 2 and 4 channels.
            let kinds = [
                (8, 1),
                (8, 0),
                (16, 1),
                (16, 0),
                (32, 1),
                (32, 0),
                (16, 2),
                (32, 2),
            ];
            let (bits, kind) = kinds[((f - 1) / 3) as usize];
            let channels = [1, 2, 4][((f - 1) % 3) as usize];
            let b = |i: c_int| if i < channels { bits } else { 0 };
            Ok(Some(cudaChannelFormatDesc {
                x: b(0),
                y: b(1),
                z: b(2),
                w: b(3),
                f: kind,
            }))
        }
        25..=34 => Err(Error::NOT_SUPPORTED),
        _ => Err(Error::INVALID_VALUE),
    }
}

/// The view part of a request: `v` over the resource `req` names, whose extent (level 0,
/// as created) the view's must equal.
pub(crate) fn view(v: &cudaResourceViewDesc, req: &mut TexObjectCreateReq) -> Result<()> {
    let info = match req.resource {
        RESOURCE_ARRAY => crate::core::array::info(req.array as cudaArray_t)?,
        RESOURCE_MIPMAPPED_ARRAY => crate::core::array::mipmapped_info(req.array)?,
        _ => return Err(Error::INVALID_VALUE),
    };
    if [v.width, v.height, v.depth].map(|n| n as u64) != info.extent {
        return Err(Error::INVALID_VALUE);
    }
    if let Some(f) = view_format(v.format)? {
        req.view_format = f.to_wire()?;
    }
    req.view_levels = [v.first_mipmap_level, v.last_mipmap_level];
    req.view_layers = [v.first_layer, v.last_layer];
    req.flags |= TEX_VIEW;
    Ok(())
}

/// What the library keeps of an object, for the descriptor queries.
#[derive(Clone, Copy)]
pub(crate) struct Object {
    pub(crate) res: cudaResourceDesc,
    pub(crate) tex: Option<cudaTextureDesc>,
    pub(crate) view: Option<cudaResourceViewDesc>,
}

// SAFETY: the raw pointers in the descriptors are device addresses and array handles, plain
// numbers here; nothing dereferences them.
unsafe impl Send for Object {}

/// Objects by (is a surface, handle): a GPU numbers the two kinds apart.
pub(crate) static OBJECTS: LazyLock<Mutex<HashMap<(bool, u64), Object>>> =
    LazyLock::new(Mutex::default);

pub(crate) fn objects() -> std::sync::MutexGuard<'static, HashMap<(bool, u64), Object>> {
    OBJECTS.lock().unwrap_or_else(|e| e.into_inner())
}

/// The resource part of a request.
pub(crate) fn resource(r: &cudaResourceDesc, req: &mut TexObjectCreateReq) -> Result<()> {
    match r.res_type {
        RES_ARRAY => {
            crate::core::array::info(r.ptr as cudaArray_t)?;
            req.resource = RESOURCE_ARRAY;
            req.array = r.ptr as u64;
        }
        RES_LINEAR => {
            req.resource = RESOURCE_LINEAR;
            req.ptr = r.ptr as u64;
            req.format = r.desc.to_wire()?;
            req.size = r.size_or_width as u64;
        }
        RES_PITCH2D => {
            req.resource = RESOURCE_PITCH2D;
            req.ptr = r.ptr as u64;
            req.format = r.desc.to_wire()?;
            req.width = r.size_or_width as u64;
            req.height = r.height as u64;
            req.pitch = r.pitch as u64;
        }
        RES_MIPMAPPED_ARRAY => {
            crate::core::array::mipmapped_info(r.ptr as u64)?;
            req.resource = RESOURCE_MIPMAPPED_ARRAY;
            req.array = r.ptr as u64;
        }
        _ => return Err(Error::INVALID_VALUE),
    }
    Ok(())
}

/// The sampler part of a request.
pub(crate) fn sampler(t: &cudaTextureDesc, req: &mut TexObjectCreateReq) -> Result<()> {
    if t.max_anisotropy > 1 {
        return Err(Error::NOT_SUPPORTED);
    }
    for (d, &m) in req.address.iter_mut().zip(&t.address_mode) {
        *d = u32::try_from(m).map_err(|_| Error::INVALID_VALUE)?;
    }
    req.flags |= match t.filter_mode {
        0 => 0,
        1 => TEX_FILTER_LINEAR,
        _ => return Err(Error::INVALID_VALUE),
    };
    req.flags |= match t.mipmap_filter_mode {
        0 => 0,
        1 => TEX_MIPMAP_LINEAR,
        _ => return Err(Error::INVALID_VALUE),
    };
    req.mip_bias = t.mipmap_level_bias;
    req.mip_min_clamp = t.min_mipmap_level_clamp;
    req.mip_max_clamp = t.max_mipmap_level_clamp;
    req.flags |= match t.read_mode {
        0 => 0,
        1 => TEX_READ_NORMALIZED_FLOAT,
        _ => return Err(Error::INVALID_VALUE),
    };
    if t.srgb != 0 {
        req.flags |= TEX_SRGB;
    }
    if t.normalized_coords != 0 {
        req.flags |= TEX_NORMALIZED_COORDS;
    }
    req.border = t.border_color;
    Ok(())
}

/// Creates an object (a texture with `tex`, which may take a view); returns its handle.
pub(crate) fn create(
    res: &cudaResourceDesc,
    tex: Option<&cudaTextureDesc>,
    v: Option<&cudaResourceViewDesc>,
) -> Result<u64> {
    let c = client::client()?;
    c.check_sticky()?;
    let mut req = TexObjectCreateReq {
        device: c.check_device(state::device())?,
        format: ChannelFormat::default(),
        ..Default::default()
    };
    resource(res, &mut req)?;
    match tex {
        Some(t) => {
            sampler(t, &mut req)?;
            if let Some(v) = v {
                view(v, &mut req)?;
            }
        }
        None => {
            if res.res_type != RES_ARRAY {
                return Err(Error::INVALID_VALUE);
            }
            req.flags = TEX_SURFACE;
        }
    }
    let r: HandleResp = c.call::<ops::TexObjectCreate>(&req)?;
    objects().insert(
        (tex.is_none(), r.handle),
        Object {
            res: *res,
            tex: tex.copied(),
            view: v.copied(),
        },
    );
    Ok(r.handle)
}

/// Destroys an object (0: nothing). `surface` says which kind the caller names.
pub(crate) fn destroy(h: u64, surface: bool) -> Result<()> {
    if h == 0 {
        return Ok(());
    }
    let c = client::client()?;
    if !objects().contains_key(&(surface, h)) {
        return Err(Error::INVALID_VALUE);
    }
    c.call::<ops::TexObjectDestroy>(&TexObjectDestroyReq {
        handle: h,
        flags: if surface { TEX_SURFACE } else { 0 },
        reserved: 0,
    })?;
    objects().remove(&(surface, h));
    Ok(())
}

/// The descriptors object `h` was created with (a surface object if `surface`; no
/// texture descriptor then).
pub(crate) fn descriptors(
    h: u64,
    surface: bool,
) -> Result<(cudaResourceDesc, Option<cudaTextureDesc>)> {
    let o = object(h, surface)?;
    Ok((o.res, o.tex))
}

/// The view texture object `h` was created with; all zero for one without (NVIDIA's
/// runtime answers success for those too).
pub(crate) fn view_of(h: u64) -> Result<cudaResourceViewDesc> {
    Ok(object(h, false)?.view.unwrap_or_default())
}

pub(crate) fn object(h: u64, surface: bool) -> Result<Object> {
    objects()
        .get(&(surface, h))
        .copied()
        .ok_or(Error::INVALID_VALUE)
}
