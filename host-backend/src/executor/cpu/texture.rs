// SPDX-License-Identifier: Apache-2.0 OR MIT
//! CUDA arrays, texture and surface objects on the CPU executor.
//!
//! An array is device memory of the session's heap (kind [`AllocKind::Array`], so
//! `cudaFree` cannot free it), rows packed; copies move boxes between it and linear device
//! memory. A texture or surface object is a [`TexObject`] the interpreter resolves by handle
//! when a kernel samples it; objects over linear memory name the guest's allocation directly.
//! A mipmapped array is one allocation holding its levels packed one after another (where
//! the PTX engines look for them); a level's array handle, made on first request, views its
//! part and dies with the mipmapped array.
//!
//! Object handles are small numbers, the lowest free first (texture and surface objects
//! share them), as the driver's are: what a kernel holds is the number itself, so a session
//! that moves to a CUDA executor gets the same numbers back by making its objects again in
//! their order (see `executor::cuda::texture_state`).

mod state;

use std::collections::{BTreeSet, HashMap};

use vcuda_protocol::{
    ARRAY_COPY_TO_ARRAY, ARRAY_CUBEMAP, ARRAY_LAYERED, ARRAY_SURFACE_LOAD_STORE, ArrayCreateReq,
    MemcpyArrayReq, MipmappedArrayCreateReq, RESOURCE_ARRAY, RESOURCE_MIPMAPPED_ARRAY,
    TexObjectCreateReq,
};
use vcuda_ptx::{Mipmap, TexObject};

use super::memory::{AllocKind, DeviceHeap};
use crate::executor::array::{
    ArrayShape, Format, MipShape, ResourceView, Sampler, Viewed, linear_extent,
};
use crate::executor::{ExecResult, Status};

/// Most arrays and most texture/surface objects a session holds at once.
pub const MAX_OBJECTS: usize = 65_536;

/// One array.
#[derive(Debug, Clone, Copy)]
struct Array {
    addr: u64,
    shape: ArrayShape,
    origin: Origin,
}

/// Where an array comes from.
#[derive(Debug, Clone, Copy)]
enum Origin {
    /// `cudaMalloc3DArray` and friends: the request (saved for live migration).
    Created(ArrayCreateReq),
    /// A level of a mipmapped array, which owns its memory.
    Level,
}

/// One mipmapped array.
#[derive(Debug)]
struct Mipmapped {
    addr: u64,
    shape: MipShape,
    /// The array handles given out for its levels, by level.
    levels: HashMap<u32, u64>,
    /// The request that made it.
    req: MipmappedArrayCreateReq,
}

/// A session's arrays and texture/surface objects.
#[derive(Debug, Default)]
pub struct Textures {
    arrays: HashMap<u64, Array>,
    mipmapped: HashMap<u64, Mipmapped>,
    /// Texture and surface objects by the handle kernels use.
    pub objects: HashMap<u64, TexObject>,
    /// The request that made each object.
    object_reqs: HashMap<u64, TexObjectCreateReq>,
    /// Object handles below `top` not in use, which the next objects take, lowest first.
    free_handles: BTreeSet<u64>,
    /// The highest object handle given out so far (0: none).
    top: u64,
}

impl Textures {
    /// Whether the session holds no array and no texture or surface object.
    pub fn is_empty(&self) -> bool {
        self.arrays.is_empty() && self.mipmapped.is_empty() && self.objects.is_empty()
    }

    /// Allocates an array in `heap`; `handle` is its new handle.
    pub fn array_create(
        &mut self,
        heap: &mut DeviceHeap,
        r: &ArrayCreateReq,
        handle: u64,
    ) -> ExecResult<()> {
        let shape = ArrayShape::check(r)?;
        self.check_room()?;
        let addr = heap.alloc(shape.bytes(), AllocKind::Array)?;
        self.arrays.insert(
            handle,
            Array {
                addr,
                shape,
                origin: Origin::Created(*r),
            },
        );
        Ok(())
    }

    /// Fails once the session holds [`MAX_OBJECTS`] arrays (levels and mipmapped arrays
    /// counted).
    fn check_room(&self) -> ExecResult<()> {
        if self.arrays.len() + self.mipmapped.len() >= MAX_OBJECTS {
            return Err(Status::MEMORY_ALLOCATION);
        }
        Ok(())
    }

    /// Frees an array. Objects that view it stay (as on a GPU, using them afterwards is
    /// undefined): their texels are unmapped and reading them faults. A level of a
    /// mipmapped array goes with the mipmapped array only.
    pub fn array_destroy(&mut self, heap: &mut DeviceHeap, handle: u64) -> ExecResult<()> {
        match self.arrays.get(&handle) {
            None => return Err(Status::INVALID_HANDLE),
            Some(a) if matches!(a.origin, Origin::Level) => return Err(Status::INVALID_VALUE),
            Some(_) => {}
        }
        let a = self.arrays.remove(&handle).ok_or(Status::INVALID_HANDLE)?;
        heap.free(a.addr, AllocKind::Array)
    }

    /// Allocates a mipmapped array in `heap`; `handle` is its new handle.
    pub fn mipmapped_create(
        &mut self,
        heap: &mut DeviceHeap,
        r: &MipmappedArrayCreateReq,
        handle: u64,
    ) -> ExecResult<()> {
        let shape = MipShape::check(r)?;
        self.check_room()?;
        let addr = heap.alloc(shape.bytes(), AllocKind::Array)?;
        self.mipmapped.insert(
            handle,
            Mipmapped {
                addr,
                shape,
                levels: HashMap::new(),
                req: *r,
            },
        );
        Ok(())
    }

    /// Frees a mipmapped array and the handles of its levels (objects that view them stay,
    /// unmapped, as for [`Self::array_destroy`]).
    pub fn mipmapped_destroy(&mut self, heap: &mut DeviceHeap, handle: u64) -> ExecResult<()> {
        let m = self
            .mipmapped
            .remove(&handle)
            .ok_or(Status::INVALID_HANDLE)?;
        for h in m.levels.values() {
            self.arrays.remove(h);
        }
        heap.free(m.addr, AllocKind::Array)
    }

    /// The array handle of level `level` of mipmapped array `handle`: the one given out
    /// before, or `fresh` (a new handle) now.
    pub fn mipmapped_level(&mut self, handle: u64, level: u32, fresh: u64) -> ExecResult<u64> {
        let m = self.mipmapped.get(&handle).ok_or(Status::INVALID_HANDLE)?;
        if level >= m.shape.levels {
            return Err(Status::INVALID_VALUE);
        }
        if let Some(&h) = m.levels.get(&level) {
            return Ok(h);
        }
        // At most `MAX_MIPMAP_LEVELS` per mipmapped array: the session's bound holds.
        let a = Array {
            addr: m.addr + m.shape.offset(level),
            shape: m.shape.level(level),
            origin: Origin::Level,
        };
        let h = fresh;
        self.arrays.insert(h, a);
        if let Some(m) = self.mipmapped.get_mut(&handle) {
            m.levels.insert(level, h);
        }
        Ok(h)
    }

    /// Copies a box between an array and linear device memory.
    pub fn memcpy(&self, heap: &mut DeviceHeap, r: &MemcpyArrayReq) -> ExecResult<()> {
        let a = self.arrays.get(&r.array).ok_or(Status::INVALID_HANDLE)?;
        let span = a.shape.check_box(r)?;
        if span == 0 {
            return Ok(());
        }
        // The whole linear side lies in one allocation (checked once, not per slice).
        heap.bytes(r.ptr, span)?;
        let row = a.shape.row_bytes();
        // One 2-D copy per slice (at most the array's depth): ranges checked once each.
        for z in 0..r.depth {
            // In bounds: checked by `check_box` and the span check above.
            let arr = (a.addr + ((r.z + z) * a.shape.height + r.y) * row + r.x, row);
            let lin = (r.ptr + z * r.rows * r.pitch, r.pitch);
            if r.flags & ARRAY_COPY_TO_ARRAY != 0 {
                heap.copy_2d(arr, lin, r.width, r.height)?;
            } else {
                heap.copy_2d(lin, arr, r.width, r.height)?;
            }
        }
        Ok(())
    }

    /// The handle the next object takes: the lowest not in use, from 1 (at most
    /// [`MAX_OBJECTS`], which [`Textures::object_create`] checks).
    pub fn object_handle(&self) -> u64 {
        self.free_handles.first().copied().unwrap_or(self.top + 1)
    }

    /// Creates a texture or surface object with handle `handle` (one of
    /// `1..=`[`MAX_OBJECTS`] not in use: [`Textures::object_handle`], or a loaded one).
    pub fn object_create(
        &mut self,
        heap: &DeviceHeap,
        r: &TexObjectCreateReq,
        handle: u64,
    ) -> ExecResult<()> {
        let s = Sampler::check(r)?;
        if self.objects.len() >= MAX_OBJECTS {
            return Err(Status::MEMORY_ALLOCATION);
        }
        if handle == 0 || handle > MAX_OBJECTS as u64 || self.objects.contains_key(&handle) {
            return Err(Status::INVALID_VALUE);
        }
        let mut mip = Mipmap::NONE;
        // `shape` is level `v.first_level`'s, which lies at `addr`.
        let array = |addr: u64, shape: &ArrayShape, v: &Viewed| {
            let row = v.format.texel_bytes() * shape.width;
            View {
                // (Within the array: the view's layers are the array's.)
                base: addr + v.first_layer * row * shape.height,
                dims: shape.dims,
                format: v.format,
                extent: [shape.width, shape.height, v.layers],
                pitch: row,
                slice_pitch: row * shape.height,
                layered: shape.flags & ARRAY_LAYERED != 0 && shape.flags & ARRAY_CUBEMAP == 0,
                cube: shape.flags & ARRAY_CUBEMAP != 0,
            }
        };
        let view = if r.resource == RESOURCE_ARRAY {
            let a = self.arrays.get(&r.array).ok_or(Status::INVALID_HANDLE)?;
            if s.surface && a.shape.flags & ARRAY_SURFACE_LOAD_STORE == 0 {
                return Err(Status::INVALID_VALUE);
            }
            let v = ResourceView::apply(s.view.as_ref(), &a.shape, 1)?;
            array(a.addr, &a.shape, &v)
        } else if r.resource == RESOURCE_MIPMAPPED_ARRAY {
            // (Surfaces were refused by `Sampler::check`.)
            let m = self.mipmapped.get(&r.array).ok_or(Status::INVALID_HANDLE)?;
            let v = ResourceView::apply(s.view.as_ref(), &m.shape.base, m.shape.levels)?;
            mip = Mipmap {
                levels: v.levels,
                ..s.mip
            };
            let first = m.shape.level(v.first_level);
            array(m.addr + m.shape.offset(v.first_level), &first, &v)
        } else {
            // Surfaces view arrays only.
            if s.surface {
                return Err(Status::INVALID_VALUE);
            }
            let format = Format::check(&r.format)?;
            let (width, height, pitch, span) = linear_extent(r, &format)?;
            heap.bytes(r.ptr, span)?;
            View {
                base: r.ptr,
                dims: if height > 1 || r.resource != vcuda_protocol::RESOURCE_LINEAR {
                    2
                } else {
                    1
                },
                format,
                extent: [width, height, 1],
                pitch,
                slice_pitch: pitch * height,
                layered: false,
                cube: false,
            }
        };
        self.objects.insert(
            handle,
            TexObject {
                surface: s.surface,
                base: view.base,
                dims: view.dims,
                width: view.extent[0],
                height: view.extent[1],
                depth: view.extent[2],
                pitch: view.pitch,
                slice_pitch: view.slice_pitch,
                kind: view.format.kind,
                bits: view.format.bits,
                address: s.address,
                filter: s.filter,
                normalized_float: s.normalized_float,
                normalized_coords: s.normalized_coords,
                srgb: s.srgb,
                border: s.border,
                layered: view.layered,
                cube: view.cube,
                mip,
            },
        );
        self.object_reqs.insert(handle, *r);
        if handle > self.top {
            // (At most `MAX_OBJECTS` numbers, checked above.)
            self.free_handles.extend(self.top + 1..handle);
            self.top = handle;
        } else {
            self.free_handles.remove(&handle);
        }
        Ok(())
    }

    /// Destroys a texture object, or a surface object if `surface`.
    pub fn object_destroy(&mut self, handle: u64, surface: bool) -> ExecResult<()> {
        match self.objects.get(&handle) {
            Some(o) if o.surface == surface => {
                self.objects.remove(&handle);
                self.object_reqs.remove(&handle);
                self.free_handles.insert(handle);
                Ok(())
            }
            _ => Err(Status::INVALID_VALUE),
        }
    }
}

/// What an object views.
struct View {
    base: u64,
    dims: u8,
    format: Format,
    extent: [u64; 3],
    pitch: u64,
    slice_pitch: u64,
    layered: bool,
    cube: bool,
}

#[cfg(test)]
mod tests {
    use vcuda_protocol::{
        CHANNEL_FLOAT, ChannelFormat, RESOURCE_LINEAR, RESOURCE_PITCH2D, TEX_SURFACE,
    };

    use super::super::memory::MemoryBudget;
    use super::*;

    pub(super) fn float() -> ChannelFormat {
        ChannelFormat {
            bits: [32, 0, 0, 0],
            kind: CHANNEL_FLOAT,
        }
    }

    pub(super) fn heap() -> DeviceHeap {
        DeviceHeap::new(MemoryBudget::new(1 << 24), u64::MAX)
    }

    /// Object handles are numbers from 1, the lowest free first (texture and surface
    /// objects alike), as the driver's: a session moving to a GPU makes its objects again
    /// and gets the same numbers.
    #[test]
    fn objects_take_the_lowest_free_number() {
        let mut h = heap();
        let mut t = Textures::default();
        let array = ArrayCreateReq {
            format: float(),
            width: 4,
            height: 3,
            flags: vcuda_protocol::ARRAY_SURFACE_LOAD_STORE,
            ..Default::default()
        };
        t.array_create(&mut h, &array, 0x10).unwrap();
        let tex = TexObjectCreateReq {
            resource: RESOURCE_ARRAY,
            array: 0x10,
            ..Default::default()
        };
        let surf = TexObjectCreateReq {
            flags: vcuda_protocol::TEX_SURFACE,
            ..tex
        };
        let make = |t: &mut Textures, r: &TexObjectCreateReq| {
            let n = t.object_handle();
            t.object_create(&h, r, n).map(|()| n)
        };
        assert_eq!(make(&mut t, &tex), Ok(1));
        assert_eq!(make(&mut t, &surf), Ok(2));
        assert_eq!(make(&mut t, &tex), Ok(3));
        t.object_destroy(2, true).unwrap();
        t.object_destroy(1, false).unwrap();
        assert_eq!(make(&mut t, &tex), Ok(1));
        assert_eq!(make(&mut t, &surf), Ok(2));
        assert_eq!(make(&mut t, &tex), Ok(4));
        // A number in use, 0, or past the most a session holds is refused.
        for n in [3, 0, MAX_OBJECTS as u64 + 1] {
            assert_eq!(t.object_create(&h, &tex, n), Err(Status::INVALID_VALUE));
        }
        // A loaded number above the highest leaves the numbers below it free.
        t.object_create(&h, &tex, 9).unwrap();
        assert_eq!(make(&mut t, &tex), Ok(5));
    }

    #[test]
    fn arrays_copy_boxes_and_cannot_be_freed_as_memory() {
        let mut h = heap();
        let mut t = Textures::default();
        let req = ArrayCreateReq {
            format: float(),
            width: 4,
            height: 3,
            ..Default::default()
        };
        t.array_create(&mut h, &req, 7).unwrap();
        let a = t.arrays[&7];
        assert_eq!(h.free(a.addr, AllocKind::User), Err(Status::INVALID_VALUE));
        let lin = h.alloc(64, AllocKind::User).unwrap();
        h.bytes_mut(lin, 64)
            .unwrap()
            .iter_mut()
            .enumerate()
            .for_each(|(i, b)| *b = i as u8);
        // Two rows of 8 bytes from a linear pitch of 16, into (x 4 bytes, y 1).
        let copy = MemcpyArrayReq {
            array: 7,
            x: 4,
            y: 1,
            ptr: lin,
            pitch: 16,
            width: 8,
            height: 2,
            depth: 1,
            flags: ARRAY_COPY_TO_ARRAY,
            ..Default::default()
        };
        t.memcpy(&mut h, &copy).unwrap();
        let arr = h.bytes(a.addr, 48).unwrap();
        assert_eq!(&arr[16 + 4..16 + 12], &[0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(&arr[32 + 4..32 + 12], &[16, 17, 18, 19, 20, 21, 22, 23]);
        assert_eq!(arr[16 + 12], 0);
        // A linear side that leaves its allocation, or a box outside the array, is refused.
        let far = MemcpyArrayReq { pitch: 60, ..copy };
        assert_eq!(t.memcpy(&mut h, &far), Err(Status::INVALID_VALUE));
        let outside = MemcpyArrayReq { y: 2, ..copy };
        assert_eq!(t.memcpy(&mut h, &outside), Err(Status::INVALID_VALUE));
        assert_eq!(
            t.memcpy(&mut h, &MemcpyArrayReq { array: 8, ..copy }),
            Err(Status::INVALID_HANDLE)
        );
        // Offsets and widths in whole texels (4 bytes here).
        assert_eq!(
            t.memcpy(&mut h, &MemcpyArrayReq { x: 2, ..copy }),
            Err(Status::INVALID_VALUE)
        );
        t.array_destroy(&mut h, 7).unwrap();
        assert_eq!(t.array_destroy(&mut h, 7), Err(Status::INVALID_HANDLE));
    }

    #[test]
    fn mipmapped_arrays_pack_their_levels_and_own_them() {
        let mut h = heap();
        let mut t = Textures::default();
        let req = MipmappedArrayCreateReq {
            array: ArrayCreateReq {
                format: float(),
                width: 8,
                height: 3,
                ..Default::default()
            },
            // Clamped to 1 + floor(log2 8) = 4, as CUDA clamps it.
            levels: 9,
            reserved: 0,
        };
        t.mipmapped_create(&mut h, &req, 5).unwrap();
        let base = t.mipmapped[&5].addr;
        // Levels 8x3, 4x1, 2x1, 1x1 floats, packed.
        let l2 = t.mipmapped_level(5, 2, 40).unwrap();
        assert_eq!(l2, 40);
        let a = t.arrays[&40];
        assert_eq!(
            (a.addr, a.shape.width, a.shape.height),
            (base + 4 * 28, 2, 1)
        );
        // The same handle again; no level 4; a level is not freed on its own.
        assert_eq!(t.mipmapped_level(5, 2, 41), Ok(40));
        assert_eq!(t.mipmapped_level(5, 4, 42), Err(Status::INVALID_VALUE));
        assert_eq!(t.mipmapped_level(6, 0, 42), Err(Status::INVALID_HANDLE));
        assert_eq!(t.array_destroy(&mut h, 40), Err(Status::INVALID_VALUE));
        // A texture over it has its levels; a surface over it is refused.
        let tex = TexObjectCreateReq {
            resource: RESOURCE_MIPMAPPED_ARRAY,
            array: 5,
            mip_max_clamp: 3.0,
            ..Default::default()
        };
        t.object_create(&h, &tex, 9).unwrap();
        let o = t.objects[&9];
        assert_eq!(
            (o.base, o.width, o.mip.levels, o.mip.max_clamp),
            (base, 8, 4, 3.0)
        );
        let surf = TexObjectCreateReq {
            flags: TEX_SURFACE,
            ..tex
        };
        assert_eq!(t.object_create(&h, &surf, 10), Err(Status::INVALID_VALUE));
        // Gone with the mipmapped array, levels included.
        t.mipmapped_destroy(&mut h, 5).unwrap();
        assert!(!t.arrays.contains_key(&40));
        assert_eq!(t.mipmapped_destroy(&mut h, 5), Err(Status::INVALID_HANDLE));
        // No gather; no level 0 wider than the mipmapped limit.
        for bad in [
            MipmappedArrayCreateReq {
                array: ArrayCreateReq {
                    flags: vcuda_protocol::ARRAY_TEXTURE_GATHER,
                    ..req.array
                },
                ..req
            },
            MipmappedArrayCreateReq {
                array: ArrayCreateReq {
                    width: 40_000,
                    ..req.array
                },
                ..req
            },
            MipmappedArrayCreateReq { reserved: 1, ..req },
        ] {
            assert_eq!(
                t.mipmapped_create(&mut h, &bad, 11),
                Err(Status::INVALID_VALUE)
            );
        }
    }

    #[test]
    fn objects_view_only_what_the_session_owns() {
        let mut h = heap();
        let mut t = Textures::default();
        let p = h.alloc(4096, AllocKind::User).unwrap();
        let lin = TexObjectCreateReq {
            resource: RESOURCE_LINEAR,
            ptr: p,
            format: float(),
            size: 4096,
            ..Default::default()
        };
        t.object_create(&h, &lin, 1).unwrap();
        let o = t.objects[&1];
        assert_eq!((o.dims, o.width, o.base), (1, 1024, p));
        // Past the allocation, misaligned, unowned, or a surface over linear memory.
        for bad in [
            TexObjectCreateReq { size: 8192, ..lin },
            TexObjectCreateReq { ptr: p + 4, ..lin },
            TexObjectCreateReq {
                ptr: 0x7000_0000_0000,
                ..lin
            },
            TexObjectCreateReq {
                flags: TEX_SURFACE,
                ..lin
            },
            TexObjectCreateReq {
                address: [9, 0, 0],
                ..lin
            },
        ] {
            assert!(t.object_create(&h, &bad, 2).is_err(), "{bad:?}");
        }
        let pitched = TexObjectCreateReq {
            resource: RESOURCE_PITCH2D,
            width: 8,
            height: 16,
            pitch: 256,
            ..lin
        };
        t.object_create(&h, &pitched, 3).unwrap();
        // 16 rows of 256 bytes do not fit in 4096 bytes plus one row.
        let tall = TexObjectCreateReq {
            height: 17,
            ..pitched
        };
        assert_eq!(t.object_create(&h, &tall, 4), Err(Status::INVALID_VALUE));
        // Surfaces need an array made for them.
        let req = ArrayCreateReq {
            format: float(),
            width: 4,
            ..Default::default()
        };
        t.array_create(&mut h, &req, 9).unwrap();
        let surf = TexObjectCreateReq {
            resource: RESOURCE_ARRAY,
            array: 9,
            flags: TEX_SURFACE,
            ..Default::default()
        };
        assert_eq!(t.object_create(&h, &surf, 5), Err(Status::INVALID_VALUE));
        // A texture is not destroyed as a surface.
        assert_eq!(t.object_destroy(1, true), Err(Status::INVALID_VALUE));
        t.object_destroy(1, false).unwrap();
        assert_eq!(t.object_destroy(1, false), Err(Status::INVALID_VALUE));
    }
}
