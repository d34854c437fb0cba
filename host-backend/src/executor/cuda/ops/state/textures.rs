// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Live migration of a CUDA session's arrays, mipmapped arrays, texture and surface objects.
//!
//! Arrays are the session's handles over `CUarray`s: a save reads their texels (every level
//! of a mipmapped array) to the host; a load makes each again from the request that made it,
//! under its handle, and writes the texels back.
//!
//! Texture and surface objects are the driver's own numbers, which kernels take as
//! parameters and may keep in device memory, so they cannot be renamed. A load makes them
//! again lowest number first, keeping any object the driver numbers below the one wanted
//! until it gets that one (so the holes destroyed objects left come back: a driver that
//! reuses the lowest free number, or one that only counts up, gives the same numbers in a
//! fresh context), then destroys those spares. A driver that answers with a higher number
//! than the one wanted fails the load, naming both, and the guest stays on its source. The
//! numbering is the driver's: vcuda's own `libcuda.so.1` (the CPU executor's numbers) gives
//! the lowest free one; NVIDIA's is to be confirmed on a GPU.

use std::collections::{HashMap, VecDeque};

use cudarc::driver::sys::{self, CUmemorytype};
use serde_bytes::ByteBuf;
use vcuda_protocol::{
    ArrayCreateReq, MipmappedArrayCreateReq, RESOURCE_ARRAY, RESOURCE_MIPMAPPED_ARRAY,
    TexObjectCreateReq,
};
use zerocopy::{FromBytes, IntoBytes};

use super::errors::{failed, not_made};
use crate::executor::array::{ArrayShape, Sampler};
use crate::executor::cuda::texture::MAX_OBJECTS;
use crate::executor::cuda::{CudaExecutor, driver, to_status};
use crate::executor::{ExecResult, Status};
use crate::migrate::state::{
    ArrayState, MipmappedState, TexObjectState, TexelsState, TexturesState,
};
use crate::migrate::{MigrateError, compress, decompress_into};

/// Bytes of an array's texels, rows packed, in host memory.
fn packed_len(shape: &ArrayShape) -> Result<usize, MigrateError> {
    usize::try_from(shape.bytes()).map_err(|_| MigrateError::NoRoom("a CUDA array".into()))
}

/// A session's arrays and objects as plain data, the texels of every array and level, the
/// counters behind array and mipmapped array handles, and the module handle counter when
/// each array and mipmapped array was made.
pub(in crate::executor::cuda::ops) type Saved =
    (TexturesState, Vec<TexelsState>, [u64; 2], Vec<(u64, u64)>);

/// A loaded state's arrays not made yet, in the order to make them, with what goes with
/// them.
pub(in crate::executor::cuda::ops) struct ArraysToLoad {
    /// Each with the module handle counter when it was made.
    queue: VecDeque<(u64, ToLoad)>,
    /// Texels by array (or mipmapped array) and level.
    contents: HashMap<(u64, u32), Vec<ByteBuf>>,
    /// The counters behind array and mipmapped array handles.
    next: [u64; 2],
    objects: Vec<TexObjectState>,
    /// Arrays made, and levels of mipmapped arrays made, whose texels are written once
    /// every array and module is made (a copy may take memory of its own for a while).
    writes: Vec<(sys::CUarray, ArrayShape, Vec<ByteBuf>)>,
}

enum ToLoad {
    Array(ArrayState),
    Mipmapped(MipmappedState),
}

impl CudaExecutor {
    /// Copies an array's texels, rows packed, from the array to `host` or (`to_array`) back;
    /// the copy is complete when this returns.
    ///
    /// # Safety
    ///
    /// `raw` is a live array of the session's context (current), of `shape`; `host` is
    /// valid for `shape.bytes()` bytes, writable unless `to_array`, and nothing else touches
    /// it meanwhile.
    unsafe fn array_io(
        &self,
        raw: sys::CUarray,
        shape: &ArrayShape,
        host: *mut u8,
        to_array: bool,
    ) -> ExecResult<()> {
        let row = shape.row_bytes() as usize;
        let (array, mem) = (
            CUmemorytype::CU_MEMORYTYPE_ARRAY,
            CUmemorytype::CU_MEMORYTYPE_HOST,
        );
        let (null, none) = (std::ptr::null_mut(), std::ptr::null_mut());
        // Every field spelled out: cudarc's `CUmemorytype` has no 0 value.
        let p = sys::CUDA_MEMCPY3D {
            srcXInBytes: 0,
            srcY: 0,
            srcZ: 0,
            srcLOD: 0,
            srcMemoryType: if to_array { mem } else { array },
            srcHost: if to_array {
                host.cast()
            } else {
                std::ptr::null()
            },
            srcDevice: 0,
            srcArray: if to_array { null } else { raw },
            reserved0: none,
            srcPitch: if to_array { row } else { 0 },
            srcHeight: if to_array { shape.height as usize } else { 0 },
            dstXInBytes: 0,
            dstY: 0,
            dstZ: 0,
            dstLOD: 0,
            dstMemoryType: if to_array { array } else { mem },
            dstHost: if to_array { none } else { host.cast() },
            dstDevice: 0,
            dstArray: if to_array { raw } else { null },
            reserved1: none,
            dstPitch: if to_array { 0 } else { row },
            dstHeight: if to_array { 0 } else { shape.height as usize },
            WidthInBytes: row,
            Height: shape.height as usize,
            Depth: shape.depth as usize,
        };
        // SAFETY: the caller's contract: a live array of the current context, of this
        // shape (so the box is the whole array), and host memory of its packed size; the
        // legacy stream is always live. The synchronize below ends the copy before the
        // caller's buffer may change or go.
        unsafe { driver::memcpy_3d(&p, std::ptr::null_mut()) }.map_err(to_status)?;
        driver::ctx_synchronize().map_err(to_status)
    }

    /// An array's texels, compressed.
    fn read_array(
        &self,
        raw: sys::CUarray,
        shape: &ArrayShape,
    ) -> Result<Vec<ByteBuf>, MigrateError> {
        let mut buf = vec![0u8; packed_len(shape)?];
        // SAFETY: `raw` is a live array of the session's context (the caller's table entry),
        // of `shape`; `buf` is this function's, of the array's packed size.
        unsafe { self.array_io(raw, shape, buf.as_mut_ptr(), false) }
            .map_err(|st| failed("reading a CUDA array", st))?;
        Ok(compress(&buf))
    }

    /// Writes saved texels into an array just made.
    fn write_array(
        &self,
        raw: sys::CUarray,
        shape: &ArrayShape,
        data: &[ByteBuf],
    ) -> Result<(), MigrateError> {
        let mut buf = vec![0u8; packed_len(shape)?];
        decompress_into(data, &mut buf)?;
        // SAFETY: as in `read_array`; the copy only reads `buf`.
        unsafe { self.array_io(raw, shape, buf.as_mut_ptr(), true) }
            .map_err(|st| failed("writing a CUDA array", st))
    }

    /// Whether what an object views is still there: an object over an array or memory
    /// freed since cannot be made again (and using it is undefined on a GPU).
    fn resource_live(&self, r: &TexObjectCreateReq) -> bool {
        let t = &self.textures;
        match r.resource {
            RESOURCE_ARRAY => t.arrays.get(r.array).is_ok(),
            RESOURCE_MIPMAPPED_ARRAY => t.mipmapped.get(r.array).is_ok(),
            _ => self.linear_resource(r).is_ok(),
        }
    }

    /// The session's arrays and objects as plain data, with the texels of every array.
    pub(in crate::executor::cuda::ops) fn save_textures(&self) -> Result<Saved, MigrateError> {
        let t = &self.textures;
        let (mut arrays, mut texels, mut before) = (Vec::new(), Vec::new(), Vec::new());
        let mut made: Vec<u64> = t
            .arrays
            .iter()
            .filter(|(_, a)| a.level_of.is_none())
            .map(|(&h, _)| h)
            .collect();
        made.sort_unstable();
        for handle in made {
            let a = t
                .arrays
                .get(handle)
                .map_err(|_| MigrateError::invalid("an array"))?;
            let req = a
                .req
                .ok_or_else(|| MigrateError::invalid("an array without its request"))?;
            arrays.push(ArrayState {
                handle,
                addr: 0,
                req: req.as_bytes().to_vec(),
            });
            before.push((handle, a.modules_before));
            texels.push(TexelsState {
                handle,
                level: 0,
                data: self.read_array(a.raw, &a.shape)?,
            });
        }
        let mut handles: Vec<u64> = t.mipmapped.iter().map(|(&h, _)| h).collect();
        handles.sort_unstable();
        let mut mipmapped = Vec::new();
        for handle in handles {
            let m = t
                .mipmapped
                .get(handle)
                .map_err(|_| MigrateError::invalid("a mipmapped array"))?;
            for level in 0..m.shape.levels {
                // SAFETY: a live mipmapped array of the session's context (in the table);
                // the driver checks `level`.
                let raw = unsafe { driver::mipmapped_level(m.raw, level) }
                    .map_err(|e| failed("a mipmap level", to_status(e)))?;
                texels.push(TexelsState {
                    handle,
                    level,
                    data: self.read_array(raw, &m.shape.level(level))?,
                });
            }
            let mut levels: Vec<(u32, u64)> = m.levels.iter().map(|(&l, &h)| (l, h)).collect();
            levels.sort_unstable();
            before.push((handle, m.modules_before));
            mipmapped.push(MipmappedState {
                handle,
                addr: 0,
                req: m.req.as_bytes().to_vec(),
                levels,
            });
        }
        let mut objects = Vec::new();
        let mut keys: Vec<(u64, bool)> = t.objects.keys().map(|&(s, h)| (h, s)).collect();
        keys.sort_unstable();
        for (handle, surface) in keys {
            let Some(req) = t.objects.get(&(surface, handle)) else {
                continue;
            };
            if !self.resource_live(req) {
                return Err(MigrateError::Unsupported(format!(
                    "a texture or surface object whose array or memory is gone (object \
                     {handle:#x})"
                )));
            }
            objects.push(TexObjectState {
                handle,
                req: req.as_bytes().to_vec(),
            });
        }
        let state = TexturesState {
            arrays,
            mipmapped,
            objects,
        };
        let next = [t.arrays.next_counter(), t.mipmapped.next_counter()];
        Ok((state, texels, next, before))
    }

    /// Checks a saved session's arrays, mipmapped arrays and objects before any is made, and
    /// puts the arrays in the order they were made relative to the modules (module handle
    /// counters below `next_module`, the saved counter).
    pub(in crate::executor::cuda::ops) fn arrays_to_load(
        (s, texels, next, modules_before): Saved,
        next_module: u64,
    ) -> Result<ArraysToLoad, MigrateError> {
        let levels: usize = s.mipmapped.iter().map(|m| m.levels.len()).sum();
        if s.arrays.len() + s.mipmapped.len() + levels > MAX_OBJECTS
            || s.objects.len() > MAX_OBJECTS
        {
            return Err(MigrateError::invalid("too many arrays or texture objects"));
        }
        let mut contents: HashMap<(u64, u32), Vec<ByteBuf>> = HashMap::new();
        for t in texels {
            if contents.insert((t.handle, t.level), t.data).is_some() {
                return Err(MigrateError::invalid("an array's texels twice"));
            }
        }
        let mut before = HashMap::new();
        for (handle, n) in modules_before {
            if n > next_module || before.insert(handle, n).is_some() {
                return Err(MigrateError::invalid(format_args!(
                    "the order of array {handle:#x}"
                )));
            }
        }
        let mut order = |handle: u64| {
            before.remove(&handle).ok_or_else(|| {
                MigrateError::invalid(format_args!("the order of array {handle:#x}"))
            })
        };
        let mut queue = Vec::with_capacity(s.arrays.len() + s.mipmapped.len());
        for a in s.arrays {
            queue.push((order(a.handle)?, ToLoad::Array(a)));
        }
        for m in s.mipmapped {
            queue.push((order(m.handle)?, ToLoad::Mipmapped(m)));
        }
        if !before.is_empty() {
            return Err(MigrateError::invalid("the order of no array"));
        }
        // Stable: arrays by handle, then mipmapped arrays by handle, where made between the
        // same two modules.
        queue.sort_by_key(|(n, _)| *n);
        Ok(ArraysToLoad {
            queue: queue.into(),
            contents,
            next,
            objects: s.objects,
            writes: Vec::new(),
        })
    }

    /// Makes again, under their handles and with their texels, the arrays of `l` made
    /// before the module of handle counter `module` (all of them: `None`).
    pub(in crate::executor::cuda::ops) fn load_arrays(
        &mut self,
        l: &mut ArraysToLoad,
        module: Option<u64>,
    ) -> Result<(), MigrateError> {
        while let Some((before, _)) = l.queue.front()
            && module.is_none_or(|n| *before <= n)
        {
            let Some((before, item)) = l.queue.pop_front() else {
                break;
            };
            match item {
                ToLoad::Array(a) => self.load_array(a, before, l)?,
                ToLoad::Mipmapped(m) => self.load_mipmapped(m, before, l)?,
            }
        }
        Ok(())
    }

    fn load_array(
        &mut self,
        a: ArrayState,
        before: u64,
        l: &mut ArraysToLoad,
    ) -> Result<(), MigrateError> {
        let bad = || MigrateError::invalid(format_args!("array {:#x}", a.handle));
        let req = ArrayCreateReq::read_from_bytes(&a.req).map_err(|_| bad())?;
        if !self.textures.arrays.expect(a.handle, l.next[0]) {
            return Err(bad());
        }
        let h = self
            .array_create_impl(&req)
            .map_err(|st| not_made("CUDA array", a.handle, st))?;
        if h != a.handle {
            return Err(bad());
        }
        let data = l.contents.remove(&(h, 0)).ok_or_else(bad)?;
        let a = self.textures.arrays.get_mut(h).map_err(|_| bad())?;
        a.modules_before = before;
        l.writes.push((a.raw, a.shape, data));
        Ok(())
    }

    fn load_mipmapped(
        &mut self,
        m: MipmappedState,
        before: u64,
        l: &mut ArraysToLoad,
    ) -> Result<(), MigrateError> {
        let bad = || MigrateError::invalid(format_args!("mipmapped array {:#x}", m.handle));
        let req = MipmappedArrayCreateReq::read_from_bytes(&m.req).map_err(|_| bad())?;
        if !self.textures.mipmapped.expect(m.handle, l.next[1]) {
            return Err(bad());
        }
        let h = self
            .mipmapped_create_impl(&req)
            .map_err(|st| not_made("mipmapped array", m.handle, st))?;
        if h != m.handle {
            return Err(bad());
        }
        let (raw, shape) = {
            let m = self.textures.mipmapped.get_mut(h).map_err(|_| bad())?;
            m.modules_before = before;
            (m.raw, m.shape)
        };
        for level in 0..shape.levels {
            let data = l.contents.remove(&(h, level)).ok_or_else(bad)?;
            // SAFETY: the live mipmapped array just made, in the current context; `level` is
            // one of its levels.
            let raw = unsafe { driver::mipmapped_level(raw, level) }
                .map_err(|e| failed("a mipmap level", to_status(e)))?;
            l.writes.push((raw, shape.level(level), data));
        }
        for (level, handle) in m.levels {
            // A level asked for twice would give the first handle back.
            if !self.textures.arrays.expect(handle, l.next[0])
                || self.mipmapped_level_impl(h, level) != Ok(handle)
            {
                return Err(bad());
            }
        }
        Ok(())
    }

    /// Once every module is made: the arrays left, every array's texels, the texture and
    /// surface objects, and the handle counters.
    pub(in crate::executor::cuda::ops) fn finish_textures(
        &mut self,
        mut l: ArraysToLoad,
    ) -> Result<(), MigrateError> {
        self.load_arrays(&mut l, None)?;
        if !l.contents.is_empty() {
            return Err(MigrateError::invalid("the texels of no array"));
        }
        for (raw, shape, data) in std::mem::take(&mut l.writes) {
            self.write_array(raw, &shape, &data)?;
        }
        self.load_objects(l.objects)?;
        let [next_array, next_mipmapped] = l.next;
        let t = &mut self.textures;
        if !(t.arrays.restore_next(next_array) && t.mipmapped.restore_next(next_mipmapped)) {
            return Err(MigrateError::invalid("array handle counters"));
        }
        Ok(())
    }

    /// Makes the saved objects again, lowest number first, until the driver gives each
    /// its number (see the module's text).
    fn load_objects(&mut self, objects: Vec<TexObjectState>) -> Result<(), MigrateError> {
        let mut wanted = Vec::with_capacity(objects.len());
        for o in objects {
            let bad = || MigrateError::invalid(format_args!("texture object {:#x}", o.handle));
            let req = TexObjectCreateReq::read_from_bytes(&o.req).map_err(|_| bad())?;
            let surface = Sampler::check(&req).map_err(|_| bad())?.surface;
            wanted.push((o.handle, surface, req));
        }
        wanted.sort_unstable_by_key(|&(h, surface, _)| (h, surface));
        if wanted
            .windows(2)
            .any(|w| (w[0].0, w[0].1) == (w[1].0, w[1].1))
        {
            return Err(MigrateError::invalid("a texture object twice"));
        }
        let mut spares = Vec::new();
        let mut make = |this: &mut Self| -> Result<(), MigrateError> {
            for (handle, surface, req) in &wanted {
                loop {
                    // At most `MAX_OBJECTS` objects at once: past that this fails.
                    let got = this.tex_object_create_impl(req).map_err(|st| match st {
                        Status::MEMORY_ALLOCATION => MigrateError::NoRoom(format!(
                            "texture object {handle:#x}: the driver did not number one so \
                             within {MAX_OBJECTS} objects"
                        )),
                        Status::INVALID_VALUE | Status::INVALID_HANDLE => {
                            MigrateError::invalid(format_args!("texture object {handle:#x}"))
                        }
                        st => failed("a texture or surface object", st),
                    })?;
                    if got == *handle {
                        break;
                    }
                    spares.push((*surface, got));
                    if got > *handle {
                        return Err(MigrateError::NoRoom(format!(
                            "the driver here numbers texture object {handle:#x} {got:#x} (a \
                             kernel holds its number)"
                        )));
                    }
                }
            }
            Ok(())
        };
        let made = make(self);
        for (surface, h) in spares {
            // A spare this session made just now; failing to destroy one leaves it to the
            // context (a failed load drops the session).
            let _ = self.tex_object_destroy_impl(h, surface);
        }
        made
    }
}
