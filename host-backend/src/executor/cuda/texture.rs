// SPDX-License-Identifier: Apache-2.0 OR MIT
//! CUDA arrays, texture and surface objects on the GPU.
//!
//! Arrays are `CUarray`s behind [`HandleTable`] handles, charged to the session like
//! allocations. Texture and surface objects are the driver's own `CUtexObject` /
//! `CUsurfObject` values, which is what kernels take as parameters; the session keeps the
//! set it created, so it only destroys its own. Everything dies with the context on reset.
//! A mipmapped array is a `CUmipmappedArray` behind a handle of its own; the arrays of its
//! levels join the array table (on first request) as arrays it owns, charged with it.

use std::collections::HashMap;
use std::mem::MaybeUninit;

use cudarc::driver::sys::{
    self, CUaddress_mode, CUarray_format, CUfilter_mode, CUmemorytype, CUresourcetype,
};
use vcuda_protocol::region::Region;
use vcuda_protocol::{
    ARRAY_COPY_TO_ARRAY, ARRAY_CUBEMAP, ARRAY_LAYERED, ARRAY_SURFACE_LOAD_STORE,
    ARRAY_TEXTURE_GATHER, ArrayCreateReq, MemcpyArrayReq, MipmappedArrayCreateReq, RESOURCE_ARRAY,
    RESOURCE_LINEAR, RESOURCE_MIPMAPPED_ARRAY, TexObjectCreateReq,
};
use vcuda_ptx::{AddressMode, ChannelKind, FilterMode};

use super::state::{Array, Mipmapped, stream_ref};
use super::{CudaExecutor, charge, driver, to_status};
use crate::executor::array::{
    ArrayShape, Format, MipShape, ResourceView, Sampler, Viewed, linear_extent,
};
use crate::executor::{ExecResult, Status};

/// Most texture and surface objects a session holds at once.
pub const MAX_OBJECTS: usize = 65_536;

/// `CUDA_ARRAY3D_SURFACE_LDST`.
const ARRAY3D_SURFACE_LDST: u32 = 0x02;
/// `CUDA_ARRAY3D_TEXTURE_GATHER` (the runtime's `cudaArrayTextureGather` has the same value).
const ARRAY3D_TEXTURE_GATHER: u32 = 0x08;
/// `CU_TRSF_READ_AS_INTEGER`.
const TRSF_READ_AS_INTEGER: u32 = 0x01;
/// `CU_TRSF_NORMALIZED_COORDINATES`.
const TRSF_NORMALIZED_COORDINATES: u32 = 0x02;
/// `CU_TRSF_SRGB`.
const TRSF_SRGB: u32 = 0x10;

/// The driver's array format for a checked format.
fn array_format(f: &Format) -> CUarray_format {
    use CUarray_format::*;
    match (f.kind, f.channel_bytes) {
        (ChannelKind::Unsigned, 1) => CU_AD_FORMAT_UNSIGNED_INT8,
        (ChannelKind::Unsigned, 2) => CU_AD_FORMAT_UNSIGNED_INT16,
        (ChannelKind::Unsigned, _) => CU_AD_FORMAT_UNSIGNED_INT32,
        (ChannelKind::Signed, 1) => CU_AD_FORMAT_SIGNED_INT8,
        (ChannelKind::Signed, 2) => CU_AD_FORMAT_SIGNED_INT16,
        (ChannelKind::Signed, _) => CU_AD_FORMAT_SIGNED_INT32,
        (ChannelKind::Float, 2) => CU_AD_FORMAT_HALF,
        (ChannelKind::Float, _) => CU_AD_FORMAT_FLOAT,
    }
}

/// The driver's descriptor of an array of `shape` (a mipmapped array's level 0).
fn array_desc(shape: &ArrayShape) -> sys::CUDA_ARRAY3D_DESCRIPTOR {
    let mut flags = 0;
    if shape.flags & ARRAY_SURFACE_LOAD_STORE != 0 {
        flags |= ARRAY3D_SURFACE_LDST;
    }
    if shape.flags & ARRAY_TEXTURE_GATHER != 0 {
        flags |= ARRAY3D_TEXTURE_GATHER;
    }
    // `CUDA_ARRAY3D_LAYERED` and `CUDA_ARRAY3D_CUBEMAP` have the runtime's values.
    let layers = shape.flags & (ARRAY_LAYERED | ARRAY_CUBEMAP);
    flags |= layers;
    sys::CUDA_ARRAY3D_DESCRIPTOR {
        Width: shape.width as usize,
        Height: if shape.dims >= 2 {
            shape.height as usize
        } else {
            0
        },
        Depth: if shape.dims == 3 || layers != 0 {
            shape.depth as usize
        } else {
            0
        },
        Format: array_format(&shape.format),
        NumChannels: shape.format.channels,
        Flags: flags,
    }
}

/// The driver's resource view format for a checked format.
fn view_format(f: &Format) -> sys::CUresourceViewFormat {
    use sys::CUresourceViewFormat::*;
    let n = match f.channels {
        1 => 0,
        2 => 1,
        _ => 2,
    };
    let formats = match (f.kind, f.channel_bytes) {
        (ChannelKind::Unsigned, 1) => [
            CU_RES_VIEW_FORMAT_UINT_1X8,
            CU_RES_VIEW_FORMAT_UINT_2X8,
            CU_RES_VIEW_FORMAT_UINT_4X8,
        ],
        (ChannelKind::Signed, 1) => [
            CU_RES_VIEW_FORMAT_SINT_1X8,
            CU_RES_VIEW_FORMAT_SINT_2X8,
            CU_RES_VIEW_FORMAT_SINT_4X8,
        ],
        (ChannelKind::Unsigned, 2) => [
            CU_RES_VIEW_FORMAT_UINT_1X16,
            CU_RES_VIEW_FORMAT_UINT_2X16,
            CU_RES_VIEW_FORMAT_UINT_4X16,
        ],
        (ChannelKind::Signed, 2) => [
            CU_RES_VIEW_FORMAT_SINT_1X16,
            CU_RES_VIEW_FORMAT_SINT_2X16,
            CU_RES_VIEW_FORMAT_SINT_4X16,
        ],
        (ChannelKind::Unsigned, _) => [
            CU_RES_VIEW_FORMAT_UINT_1X32,
            CU_RES_VIEW_FORMAT_UINT_2X32,
            CU_RES_VIEW_FORMAT_UINT_4X32,
        ],
        (ChannelKind::Signed, _) => [
            CU_RES_VIEW_FORMAT_SINT_1X32,
            CU_RES_VIEW_FORMAT_SINT_2X32,
            CU_RES_VIEW_FORMAT_SINT_4X32,
        ],
        (ChannelKind::Float, 2) => [
            CU_RES_VIEW_FORMAT_FLOAT_1X16,
            CU_RES_VIEW_FORMAT_FLOAT_2X16,
            CU_RES_VIEW_FORMAT_FLOAT_4X16,
        ],
        (ChannelKind::Float, _) => [
            CU_RES_VIEW_FORMAT_FLOAT_1X32,
            CU_RES_VIEW_FORMAT_FLOAT_2X32,
            CU_RES_VIEW_FORMAT_FLOAT_4X32,
        ],
    };
    formats[n]
}

/// The driver's view descriptor of `v` over a resource of `shape` (level 0).
fn view_desc(v: &Viewed, shape: &ArrayShape) -> sys::CUDA_RESOURCE_VIEW_DESC {
    let desc = array_desc(shape);
    let last = |first: u64, n: u64| (first + n.max(1) - 1) as u32;
    sys::CUDA_RESOURCE_VIEW_DESC {
        format: view_format(&v.format),
        // The resource's own extent (a view of texels of the same size).
        width: desc.Width,
        height: desc.Height,
        depth: desc.Depth,
        firstMipmapLevel: v.first_level,
        lastMipmapLevel: last(u64::from(v.first_level), u64::from(v.levels)),
        firstLayer: v.first_layer as u32,
        lastLayer: if shape.keeps_depth() {
            last(v.first_layer, v.layers)
        } else {
            0
        },
        reserved: [0; 16],
    }
}

fn address_mode(m: AddressMode) -> CUaddress_mode {
    match m {
        AddressMode::Wrap => CUaddress_mode::CU_TR_ADDRESS_MODE_WRAP,
        AddressMode::Clamp => CUaddress_mode::CU_TR_ADDRESS_MODE_CLAMP,
        AddressMode::Mirror => CUaddress_mode::CU_TR_ADDRESS_MODE_MIRROR,
        AddressMode::Border => CUaddress_mode::CU_TR_ADDRESS_MODE_BORDER,
    }
}

impl CudaExecutor {
    fn check_textures(&self) -> ExecResult<()> {
        if self.shared.driver.textures {
            Ok(())
        } else {
            Err(Status::NOT_SUPPORTED)
        }
    }

    pub(super) fn array_create_impl(&mut self, r: &ArrayCreateReq) -> ExecResult<u64> {
        self.check_device(r.device)?;
        self.check_textures()?;
        let shape = ArrayShape::check(r)?;
        let cost = charge(shape.bytes()).ok_or(Status::MEMORY_ALLOCATION)?;
        let charged = self.charge_textures(cost)?;
        self.bind()?;
        let raw = driver::array_create(&array_desc(&shape)).map_err(to_status)?;
        let h = self.textures.arrays.insert(Array {
            raw,
            shape,
            charged: cost,
            level_of: None,
            req: Some(*r),
            modules_before: self.modules.next_counter(),
        });
        match h {
            Ok(_) => self.charged = charged,
            // SAFETY: created just above in the current context, never given out.
            Err(_) => drop(unsafe { driver::array_destroy(raw) }),
        }
        h
    }

    /// The session's charge with `cost` more bytes, if within its limit.
    fn charge_textures(&self, cost: u64) -> ExecResult<u64> {
        self.charged
            .checked_add(cost)
            .filter(|&c| c <= self.shared.session_limit)
            .ok_or(Status::MEMORY_ALLOCATION)
    }

    pub(super) fn mipmapped_create_impl(&mut self, r: &MipmappedArrayCreateReq) -> ExecResult<u64> {
        self.check_device(r.array.device)?;
        self.check_textures()?;
        if !self.shared.driver.mipmaps {
            return Err(Status::NOT_SUPPORTED);
        }
        let shape = MipShape::check(r)?;
        let cost = charge(shape.bytes()).ok_or(Status::MEMORY_ALLOCATION)?;
        let charged = self.charge_textures(cost)?;
        self.bind()?;
        let raw =
            driver::mipmapped_create(&array_desc(&shape.base), shape.levels).map_err(to_status)?;
        let h = self.textures.mipmapped.insert(Mipmapped {
            raw,
            shape,
            charged: cost,
            levels: HashMap::new(),
            req: *r,
            modules_before: self.modules.next_counter(),
        });
        match h {
            Ok(_) => self.charged = charged,
            // SAFETY: created just above in the current context, never given out.
            Err(_) => drop(unsafe { driver::mipmapped_destroy(raw) }),
        }
        h
    }

    pub(super) fn mipmapped_level_impl(&mut self, h: u64, level: u32) -> ExecResult<u64> {
        let m = self.textures.mipmapped.get(h)?;
        if level >= m.shape.levels {
            return Err(Status::INVALID_VALUE);
        }
        if let Some(&a) = m.levels.get(&level) {
            return Ok(a);
        }
        let (raw, shape) = (m.raw, m.shape.level(level));
        self.bind()?;
        // SAFETY: a live mipmapped array of this session's context (in the table).
        let raw = unsafe { driver::mipmapped_level(raw, level) }.map_err(to_status)?;
        // At most `MAX_MIPMAP_LEVELS` per mipmapped array.
        let a = self.textures.arrays.insert(Array {
            raw,
            shape,
            charged: 0,
            level_of: Some(h),
            req: None,
            modules_before: 0,
        })?;
        self.textures.mipmapped.get_mut(h)?.levels.insert(level, a);
        Ok(a)
    }

    pub(super) fn mipmapped_destroy_impl(&mut self, h: u64) -> ExecResult<()> {
        self.textures.mipmapped.get(h)?;
        self.bind()?;
        // As cudaFreeArray: after the device's work.
        self.may_print = true;
        let r = self.wait_device();
        self.settle(r)?;
        let m = self.textures.mipmapped.remove(h)?;
        for a in m.levels.values() {
            drop(self.textures.arrays.remove(*a));
        }
        // SAFETY: a live mipmapped array of this session's context (it was in the table,
        // and leaves it now, so it is destroyed once; its levels left the array table with
        // it); the device is idle, so no work uses it.
        unsafe { driver::mipmapped_destroy(m.raw) }.map_err(to_status)?;
        self.charged = self.charged.saturating_sub(m.charged);
        Ok(())
    }

    pub(super) fn array_destroy_impl(&mut self, h: u64) -> ExecResult<()> {
        if self.textures.arrays.get(h)?.level_of.is_some() {
            // A level goes with its mipmapped array only.
            return Err(Status::INVALID_VALUE);
        }
        self.bind()?;
        // cudaFreeArray waits for the device first, as cudaFree does.
        self.may_print = true;
        let r = self.wait_device();
        self.settle(r)?;
        let a = self.textures.arrays.remove(h)?;
        // SAFETY: a live array of this session's context (it was in the table, and leaves
        // it now, so it is destroyed once); the device is idle, so no work uses it.
        unsafe { driver::array_destroy(a.raw) }.map_err(to_status)?;
        self.charged = self.charged.saturating_sub(a.charged);
        Ok(())
    }

    pub(super) fn memcpy_array_impl(&mut self, r: &MemcpyArrayReq) -> ExecResult<()> {
        let a = self.textures.arrays.get(r.array)?;
        let span = a.shape.check_box(r)?;
        if span == 0 {
            return Ok(());
        }
        // The rows of the linear side: (depth - 1) slices of `rows` rows, then `height`.
        let rows = (r.depth - 1)
            .checked_mul(r.rows)
            .and_then(|n| n.checked_add(r.height))
            .ok_or(Status::INVALID_VALUE)?;
        let lin = Region::new(r.ptr, r.pitch, r.width, rows)?;
        self.allocs.check_region(&lin)?;
        let raw = a.raw;
        let s = stream_ref(&self.streams, r.stream)?.raw();
        let to_array = r.flags & ARRAY_COPY_TO_ARRAY != 0;
        let (x, y, z) = (r.x as usize, r.y as usize, r.z as usize);
        let (pitch, rows) = (r.pitch as usize, r.rows.max(r.height) as usize);
        // Every field spelled out: cudarc's `CUmemorytype` is an enum without a 0 value,
        // so a zeroed descriptor would not be a valid value.
        let (array, device) = (
            CUmemorytype::CU_MEMORYTYPE_ARRAY,
            CUmemorytype::CU_MEMORYTYPE_DEVICE,
        );
        let p = sys::CUDA_MEMCPY3D {
            srcXInBytes: if to_array { 0 } else { x },
            srcY: if to_array { 0 } else { y },
            srcZ: if to_array { 0 } else { z },
            srcLOD: 0,
            srcMemoryType: if to_array { device } else { array },
            srcHost: std::ptr::null(),
            srcDevice: if to_array { r.ptr } else { 0 },
            srcArray: if to_array { std::ptr::null_mut() } else { raw },
            reserved0: std::ptr::null_mut(),
            srcPitch: if to_array { pitch } else { 0 },
            srcHeight: if to_array { rows } else { 0 },
            dstXInBytes: if to_array { x } else { 0 },
            dstY: if to_array { y } else { 0 },
            dstZ: if to_array { z } else { 0 },
            dstLOD: 0,
            dstMemoryType: if to_array { array } else { device },
            dstHost: std::ptr::null_mut(),
            dstDevice: if to_array { 0 } else { r.ptr },
            dstArray: if to_array { raw } else { std::ptr::null_mut() },
            reserved1: std::ptr::null_mut(),
            dstPitch: if to_array { 0 } else { pitch },
            dstHeight: if to_array { 0 } else { rows },
            WidthInBytes: r.width as usize,
            Height: r.height as usize,
            Depth: r.depth as usize,
        };
        self.bind()?;
        // SAFETY: the array is live (in the table), the box lies inside it (`check_box`),
        // the linear side's rows lie in the session's allocations (checked above), all of
        // the current context; `s` borrows a live stream of the session (or the legacy one).
        // Both ends are device memory: stream order is all the copy needs.
        unsafe { driver::memcpy_3d(&p, s) }.map_err(to_status)
    }

    /// The format and extent (`linear_extent`) of an object over linear memory, which must
    /// lie in the session's allocations.
    pub(super) fn linear_resource(
        &self,
        r: &TexObjectCreateReq,
    ) -> ExecResult<(Format, (u64, u64, u64, u64))> {
        let f = Format::check(&r.format)?;
        let extent = linear_extent(r, &f)?;
        let span = extent.3;
        self.allocs
            .check_region(&Region::new(r.ptr, span, span, 1)?)?;
        Ok((f, extent))
    }

    pub(super) fn tex_object_create_impl(&mut self, r: &TexObjectCreateReq) -> ExecResult<u64> {
        self.check_device(r.device)?;
        self.check_textures()?;
        let s = Sampler::check(r)?;
        if self.textures.objects.len() >= MAX_OBJECTS {
            return Err(Status::MEMORY_ALLOCATION);
        }
        // SAFETY: an all-zero CUDA_RESOURCE_DESC is valid (resType 0 = array, null handle,
        // flags 0); the fields of the chosen type are set below.
        let mut res: sys::CUDA_RESOURCE_DESC = unsafe { MaybeUninit::zeroed().assume_init() };
        let mut read_as_integer = !s.normalized_float;
        let mut view = None;
        if r.resource == RESOURCE_ARRAY {
            let a = self.textures.arrays.get(r.array)?;
            if s.surface && a.shape.flags & ARRAY_SURFACE_LOAD_STORE == 0 {
                return Err(Status::INVALID_VALUE);
            }
            let v = ResourceView::apply(s.view.as_ref(), &a.shape, 1)?;
            if v.format.kind == ChannelKind::Float {
                read_as_integer = false;
            }
            if s.view.is_some() {
                view = Some(view_desc(&v, &a.shape));
            }
            res.resType = CUresourcetype::CU_RESOURCE_TYPE_ARRAY;
            res.res.array =
                sys::CUDA_RESOURCE_DESC_st__bindgen_ty_1__bindgen_ty_1 { hArray: a.raw };
        } else if r.resource == RESOURCE_MIPMAPPED_ARRAY {
            // (Surfaces were refused by `Sampler::check`.)
            let m = self.textures.mipmapped.get(r.array)?;
            let v = ResourceView::apply(s.view.as_ref(), &m.shape.base, m.shape.levels)?;
            if v.format.kind == ChannelKind::Float {
                read_as_integer = false;
            }
            if s.view.is_some() {
                view = Some(view_desc(&v, &m.shape.base));
            }
            res.resType = CUresourcetype::CU_RESOURCE_TYPE_MIPMAPPED_ARRAY;
            res.res.mipmap = sys::CUDA_RESOURCE_DESC_st__bindgen_ty_1__bindgen_ty_2 {
                hMipmappedArray: m.raw,
            };
        } else {
            if s.surface {
                return Err(Status::INVALID_VALUE);
            }
            let (f, (width, height, pitch, span)) = self.linear_resource(r)?;
            if f.kind == ChannelKind::Float {
                read_as_integer = false;
            }
            if r.resource == RESOURCE_LINEAR {
                res.resType = CUresourcetype::CU_RESOURCE_TYPE_LINEAR;
                res.res.linear = sys::CUDA_RESOURCE_DESC_st__bindgen_ty_1__bindgen_ty_3 {
                    devPtr: r.ptr,
                    format: array_format(&f),
                    numChannels: f.channels,
                    sizeInBytes: span as usize,
                };
            } else {
                res.resType = CUresourcetype::CU_RESOURCE_TYPE_PITCH2D;
                res.res.pitch2D = sys::CUDA_RESOURCE_DESC_st__bindgen_ty_1__bindgen_ty_4 {
                    devPtr: r.ptr,
                    format: array_format(&f),
                    numChannels: f.channels,
                    width: width as usize,
                    height: height as usize,
                    pitchInBytes: pitch as usize,
                };
            }
        }
        self.bind()?;
        let h = if s.surface {
            // SAFETY: the resource is a live array of this session's context (checked).
            unsafe { driver::surf_object_create(&res) }
        } else {
            // SAFETY: an all-zero CUDA_TEXTURE_DESC is valid (wrap, point, no flags).
            let mut t: sys::CUDA_TEXTURE_DESC = unsafe { MaybeUninit::zeroed().assume_init() };
            t.addressMode = s.address.map(address_mode);
            t.filterMode = match s.filter {
                FilterMode::Point => CUfilter_mode::CU_TR_FILTER_MODE_POINT,
                FilterMode::Linear => CUfilter_mode::CU_TR_FILTER_MODE_LINEAR,
            };
            t.flags = if read_as_integer {
                TRSF_READ_AS_INTEGER
            } else {
                0
            } | if s.normalized_coords {
                TRSF_NORMALIZED_COORDINATES
            } else {
                0
            } | if s.srgb { TRSF_SRGB } else { 0 };
            t.borderColor = s.border;
            t.mipmapFilterMode = match s.mip.filter {
                FilterMode::Point => CUfilter_mode::CU_TR_FILTER_MODE_POINT,
                FilterMode::Linear => CUfilter_mode::CU_TR_FILTER_MODE_LINEAR,
            };
            t.mipmapLevelBias = s.mip.bias;
            t.minMipmapLevelClamp = s.mip.min_clamp;
            t.maxMipmapLevelClamp = s.mip.max_clamp;
            // SAFETY: the resource is a live array or mipmapped array, or lies in the
            // session's allocations (checked above), of the current context.
            unsafe { driver::tex_object_create(&res, &t, view.as_ref()) }
        }
        .map_err(to_status)?;
        self.textures.objects.insert((s.surface, h), *r);
        Ok(h)
    }

    /// Destroys every object and array of the session, in its current context with no work
    /// running (as destroying the context would: done first so a driver whose numbering
    /// outlives a context, vcuda's own, frees the objects' numbers too).
    pub(super) fn textures_release(&mut self) {
        for (surface, h) in std::mem::take(&mut self.textures.objects).into_keys() {
            // SAFETY: an object this session created in its context (it left the set above,
            // so it is destroyed once).
            let _ = unsafe { driver::tex_object_destroy(h, surface) };
        }
        self.textures.arrays.retain(|_, a| {
            if a.level_of.is_none() {
                // SAFETY: a live array of this session's context, destroyed once (it leaves
                // the table); the caller's device is idle.
                let _ = unsafe { driver::array_destroy(a.raw) };
            }
            false
        });
        self.textures.mipmapped.retain(|_, m| {
            // SAFETY: as above, for a mipmapped array (its levels left with the arrays).
            let _ = unsafe { driver::mipmapped_destroy(m.raw) };
            false
        });
    }

    pub(super) fn tex_object_destroy_impl(&mut self, h: u64, surface: bool) -> ExecResult<()> {
        if !self.textures.objects.contains_key(&(surface, h)) {
            return Err(Status::INVALID_VALUE);
        }
        self.bind()?;
        self.textures.objects.remove(&(surface, h));
        // SAFETY: an object this session created in its context (it was in the set, and
        // leaves it now, so it is destroyed once).
        unsafe { driver::tex_object_destroy(h, surface) }.map_err(to_status)
    }
}
