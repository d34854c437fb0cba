// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Saving and loading a session's arrays and texture/surface objects (live migration,
//! [`crate::migrate`]). They are saved as the requests that made them, so loading makes
//! them again through the checks the calls went through; their memory travels with the
//! heap's other allocations.

use std::collections::{HashMap, HashSet};

use vcuda_protocol::{ArrayCreateReq, MipmappedArrayCreateReq, TexObjectCreateReq};
use zerocopy::{FromBytes, IntoBytes};

use super::{Array, MAX_OBJECTS, Mipmapped, Origin, Textures};
use crate::executor::array::{ArrayShape, MipShape};
use crate::executor::cpu::memory::{AllocKind, DeviceHeap};
use crate::migrate::MigrateError;
use crate::migrate::state::{ArrayState, MipmappedState, TexObjectState, TexturesState};

impl Textures {
    /// The session's arrays and objects as plain data. Fails where loading them would fail:
    /// an object whose array or memory is gone (using it is undefined on a GPU, and it
    /// cannot be made again), found by loading the state into a scratch copy.
    pub fn save_state(&self, heap: &DeviceHeap) -> Result<TexturesState, MigrateError> {
        let mut arrays: Vec<ArrayState> = self
            .arrays
            .iter()
            .filter_map(|(&handle, a)| match a.origin {
                Origin::Created(req) => Some(ArrayState {
                    handle,
                    addr: a.addr,
                    req: req.as_bytes().to_vec(),
                }),
                Origin::Level => None,
            })
            .collect();
        arrays.sort_unstable_by_key(|a| a.handle);
        let mut mipmapped: Vec<MipmappedState> = self
            .mipmapped
            .iter()
            .map(|(&handle, m)| {
                let mut levels: Vec<(u32, u64)> = m.levels.iter().map(|(&l, &h)| (l, h)).collect();
                levels.sort_unstable();
                MipmappedState {
                    handle,
                    addr: m.addr,
                    req: m.req.as_bytes().to_vec(),
                    levels,
                }
            })
            .collect();
        mipmapped.sort_unstable_by_key(|m| m.handle);
        let mut objects: Vec<TexObjectState> = self
            .object_reqs
            .iter()
            .map(|(&handle, r)| TexObjectState {
                handle,
                req: r.as_bytes().to_vec(),
            })
            .collect();
        objects.sort_unstable_by_key(|o| o.handle);
        let state = TexturesState {
            arrays,
            mipmapped,
            objects,
        };
        Textures::default()
            .load_state(state.clone(), heap)
            .map_err(|e| {
                MigrateError::Unsupported(format!(
                    "a texture or surface object whose array or memory is gone ({e})"
                ))
            })?;
        Ok(state)
    }

    /// Makes the saved arrays and objects again in this empty set, over `heap` (loaded
    /// already): every request checked as its call was, every array's memory an array
    /// allocation of the heap of the right length and every such allocation some array's.
    /// Handles are the caller's to check against the session's others. On failure the set
    /// may hold part of the state and is to be dropped.
    pub fn load_state(&mut self, s: TexturesState, heap: &DeviceHeap) -> Result<(), MigrateError> {
        if !self.is_empty() {
            return Err(MigrateError::invalid(
                "loading arrays into a session in use",
            ));
        }
        let levels: usize = s.mipmapped.iter().map(|m| m.levels.len()).sum();
        if s.arrays.len() + s.mipmapped.len() + levels > MAX_OBJECTS
            || s.objects.len() > MAX_OBJECTS
        {
            return Err(MigrateError::invalid("too many arrays or texture objects"));
        }
        let mut used = HashSet::new();
        let mut take = |handle: u64| {
            if used.insert(handle) {
                Ok(())
            } else {
                Err(MigrateError::invalid(format_args!(
                    "handle {handle:#x} twice"
                )))
            }
        };
        let mut memory = HashSet::new();
        let mut owns = |addr: u64, len: u64| {
            if heap.allocation(addr) == Some((len, AllocKind::Array)) && memory.insert(addr) {
                Ok(())
            } else {
                Err(MigrateError::invalid(format_args!(
                    "array memory at {addr:#x}"
                )))
            }
        };
        for a in s.arrays {
            take(a.handle)?;
            let bad = || MigrateError::invalid(format_args!("array {:#x}", a.handle));
            let req = ArrayCreateReq::read_from_bytes(&a.req).map_err(|_| bad())?;
            let shape = ArrayShape::check(&req).map_err(|_| bad())?;
            owns(a.addr, shape.bytes())?;
            let origin = Origin::Created(req);
            self.arrays.insert(
                a.handle,
                Array {
                    addr: a.addr,
                    shape,
                    origin,
                },
            );
        }
        for m in s.mipmapped {
            take(m.handle)?;
            let bad = || MigrateError::invalid(format_args!("mipmapped array {:#x}", m.handle));
            let req = MipmappedArrayCreateReq::read_from_bytes(&m.req).map_err(|_| bad())?;
            let shape = MipShape::check(&req).map_err(|_| bad())?;
            owns(m.addr, shape.bytes())?;
            self.mipmapped.insert(
                m.handle,
                Mipmapped {
                    addr: m.addr,
                    shape,
                    levels: HashMap::new(),
                    req,
                },
            );
            for (level, h) in m.levels {
                take(h)?;
                // A level asked for twice would give the first handle back.
                if self.mipmapped_level(m.handle, level, h) != Ok(h) {
                    return Err(bad());
                }
            }
        }
        if heap.count_kind(AllocKind::Array) != memory.len() {
            return Err(MigrateError::invalid("array memory no array owns"));
        }
        for o in s.objects {
            take(o.handle)?;
            let bad = || MigrateError::invalid(format_args!("texture object {:#x}", o.handle));
            let req = TexObjectCreateReq::read_from_bytes(&o.req).map_err(|_| bad())?;
            self.object_create(heap, &req, o.handle)
                .map_err(|_| bad())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use vcuda_protocol::{
        ARRAY_COPY_TO_ARRAY, ARRAY_SURFACE_LOAD_STORE, MemcpyArrayReq, RESOURCE_ARRAY,
        RESOURCE_LINEAR, RESOURCE_MIPMAPPED_ARRAY, TEX_SURFACE,
    };

    use super::super::tests::{float, heap};
    use super::*;

    /// A heap and a set holding an array with contents, a mipmapped array with a level
    /// given out, texture objects over each and over linear memory, and a surface object.
    fn built() -> (DeviceHeap, Textures, u64) {
        let (mut h, mut t) = (heap(), Textures::default());
        let format = float();
        let array = ArrayCreateReq {
            format,
            width: 4,
            height: 3,
            flags: ARRAY_SURFACE_LOAD_STORE,
            ..Default::default()
        };
        t.array_create(&mut h, &array, 0x10).unwrap();
        let lin = h.alloc(48, AllocKind::User).unwrap();
        h.bytes_mut(lin, 48)
            .unwrap()
            .iter_mut()
            .enumerate()
            .for_each(|(i, b)| *b = i as u8 ^ 0x5a);
        let copy = MemcpyArrayReq {
            array: 0x10,
            ptr: lin,
            pitch: 16,
            width: 16,
            height: 3,
            depth: 1,
            flags: ARRAY_COPY_TO_ARRAY,
            ..Default::default()
        };
        t.memcpy(&mut h, &copy).unwrap();
        let mip = MipmappedArrayCreateReq {
            array: ArrayCreateReq { width: 8, ..array },
            levels: 3,
            reserved: 0,
        };
        t.mipmapped_create(&mut h, &mip, 0x20).unwrap();
        assert_eq!(t.mipmapped_level(0x20, 1, 0x30), Ok(0x30));
        let tex = TexObjectCreateReq {
            resource: RESOURCE_ARRAY,
            array: 0x10,
            ..Default::default()
        };
        t.object_create(&h, &tex, 0x40).unwrap();
        let surf = TexObjectCreateReq {
            flags: TEX_SURFACE,
            ..tex
        };
        t.object_create(&h, &surf, 0x50).unwrap();
        let mtex = TexObjectCreateReq {
            resource: RESOURCE_MIPMAPPED_ARRAY,
            array: 0x20,
            mip_max_clamp: 2.0,
            ..Default::default()
        };
        t.object_create(&h, &mtex, 0x60).unwrap();
        let ltex = TexObjectCreateReq {
            resource: RESOURCE_LINEAR,
            ptr: lin,
            format,
            size: 48,
            ..Default::default()
        };
        t.object_create(&h, &ltex, 0x70).unwrap();
        (h, t, lin)
    }

    /// Saves both and loads them into a new heap and set.
    fn carry(
        h: &DeviceHeap,
        t: &Textures,
        damage: impl FnOnce(&mut TexturesState),
    ) -> Result<(DeviceHeap, Textures), MigrateError> {
        let mut st = t.save_state(h)?;
        damage(&mut st);
        let mut h2 = heap();
        h2.load_state(h.save_state(None)?)?;
        let mut t2 = Textures::default();
        t2.load_state(st, &h2)?;
        Ok((h2, t2))
    }

    #[test]
    fn arrays_and_objects_move_with_their_memory() {
        let (h, t, _) = built();
        let (h2, mut t2) = carry(&h, &t, |_| {}).unwrap();
        assert_eq!(t2.objects, t.objects);
        for (handle, a) in &t.arrays {
            let b = t2.arrays[handle];
            assert_eq!(
                (b.addr, format!("{:?}", b.shape)),
                (a.addr, format!("{:?}", a.shape))
            );
            let len = a.shape.bytes();
            assert_eq!(
                h2.bytes(b.addr, len).unwrap(),
                h.bytes(a.addr, len).unwrap()
            );
        }
        assert_eq!(t2.arrays.len(), 2);
        // The level keeps its handle; the next level gets a new one; levels stay levels.
        assert_eq!(t2.mipmapped_level(0x20, 1, 0x99), Ok(0x30));
        assert_eq!(t2.mipmapped_level(0x20, 2, 0x98), Ok(0x98));
        assert!(t2.object_destroy(0x50, true).is_ok());
        assert!(
            t2.object_destroy(0x40, true).is_err(),
            "a texture, not a surface"
        );
    }

    #[test]
    fn inconsistent_arrays_load_nothing() {
        let (h, t, user) = built();
        type Damage = fn(&mut TexturesState, u64);
        let damages: [(&str, Damage); 7] = [
            ("array over user memory", |s, user| s.arrays[0].addr = user),
            ("two arrays on one memory", |s, _| {
                s.mipmapped[0].addr = s.arrays[0].addr
            }),
            ("array memory nobody owns", |s, _| {
                s.arrays.clear();
                s.objects.retain(|o| o.handle > 0x50);
            }),
            ("short request", |s, _| s.objects[0].req.truncate(8)),
            ("duplicate handle", |s, _| s.objects[1].handle = 0x10),
            ("level twice", |s, _| s.mipmapped[0].levels.push((1, 0x31))),
            ("object over a missing array", |s, _| {
                // `array`, at offset 8 of the request.
                s.objects[0].req[8..16].copy_from_slice(&0x11u64.to_le_bytes());
            }),
        ];
        for (what, damage) in damages {
            let r = carry(&h, &t, |s| damage(s, user));
            assert!(
                matches!(r, Err(MigrateError::Invalid(_))),
                "{what}: {:?}",
                r.err()
            );
        }
    }

    #[test]
    fn an_object_over_a_freed_array_is_named_and_refused() {
        let (mut h, mut t, _) = built();
        t.array_destroy(&mut h, 0x10).unwrap();
        match t.save_state(&h) {
            Err(MigrateError::Unsupported(what)) => assert!(what.contains("texture"), "{what}"),
            other => panic!("{other:?}"),
        }
        t.object_destroy(0x40, false).unwrap();
        t.object_destroy(0x50, true).unwrap();
        assert!(carry(&h, &t, |_| {}).is_ok());
    }
}
