// SPDX-License-Identifier: Apache-2.0 OR MIT
//! CUDA arrays, texture and surface objects on the CPU executor.
//!
//! An array is device memory of the session's heap (kind [`AllocKind::Array`], so
//! `cudaFree` cannot free it), rows packed; copies move boxes between it and linear device
//! memory. A texture or surface object is a [`TexObject`] the interpreter resolves by handle
//! when a kernel samples it; objects over linear memory name the guest's allocation directly.

use std::collections::HashMap;

use vcuda_protocol::{
    ARRAY_COPY_TO_ARRAY, ARRAY_CUBEMAP, ARRAY_LAYERED, ARRAY_SURFACE_LOAD_STORE, ArrayCreateReq,
    MemcpyArrayReq, RESOURCE_ARRAY, TexObjectCreateReq,
};
use vcuda_ptx::TexObject;

use super::memory::{AllocKind, DeviceHeap};
use crate::executor::array::{ArrayShape, Format, Sampler, linear_extent};
use crate::executor::{ExecResult, Status};

/// Most arrays and most texture/surface objects a session holds at once.
pub const MAX_OBJECTS: usize = 65_536;

/// One array.
#[derive(Debug, Clone, Copy)]
struct Array {
    addr: u64,
    shape: ArrayShape,
}

/// A session's arrays and texture/surface objects.
#[derive(Debug, Default)]
pub struct Textures {
    arrays: HashMap<u64, Array>,
    /// Texture and surface objects by the handle kernels use.
    pub objects: HashMap<u64, TexObject>,
}

impl Textures {
    /// Allocates an array in `heap`; `handle` is its new handle.
    pub fn array_create(
        &mut self,
        heap: &mut DeviceHeap,
        r: &ArrayCreateReq,
        handle: u64,
    ) -> ExecResult<()> {
        let shape = ArrayShape::check(r)?;
        if self.arrays.len() >= MAX_OBJECTS {
            return Err(Status::MEMORY_ALLOCATION);
        }
        let addr = heap.alloc(shape.bytes(), AllocKind::Array)?;
        self.arrays.insert(handle, Array { addr, shape });
        Ok(())
    }

    /// Frees an array. Objects that view it stay (as on a GPU, using them afterwards is
    /// undefined): their texels are unmapped and reading them faults.
    pub fn array_destroy(&mut self, heap: &mut DeviceHeap, handle: u64) -> ExecResult<()> {
        let a = self.arrays.remove(&handle).ok_or(Status::INVALID_HANDLE)?;
        heap.free(a.addr, AllocKind::Array)
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

    /// Creates a texture or surface object with handle `handle`.
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
        let view = if r.resource == RESOURCE_ARRAY {
            let a = self.arrays.get(&r.array).ok_or(Status::INVALID_HANDLE)?;
            if s.surface && a.shape.flags & ARRAY_SURFACE_LOAD_STORE == 0 {
                return Err(Status::INVALID_VALUE);
            }
            let row = a.shape.row_bytes();
            View {
                base: a.addr,
                dims: a.shape.dims,
                format: a.shape.format,
                extent: [a.shape.width, a.shape.height, a.shape.depth],
                pitch: row,
                slice_pitch: row * a.shape.height,
                layered: a.shape.flags & ARRAY_LAYERED != 0 && a.shape.flags & ARRAY_CUBEMAP == 0,
                cube: a.shape.flags & ARRAY_CUBEMAP != 0,
            }
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
            },
        );
        Ok(())
    }

    /// Destroys a texture object, or a surface object if `surface`.
    pub fn object_destroy(&mut self, handle: u64, surface: bool) -> ExecResult<()> {
        match self.objects.get(&handle) {
            Some(o) if o.surface == surface => {
                self.objects.remove(&handle);
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

    fn float() -> ChannelFormat {
        ChannelFormat {
            bits: [32, 0, 0, 0],
            kind: CHANNEL_FLOAT,
        }
    }

    fn heap() -> DeviceHeap {
        DeviceHeap::new(MemoryBudget::new(1 << 24), u64::MAX)
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
