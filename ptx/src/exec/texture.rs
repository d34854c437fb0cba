// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Texture and surface instructions (`tex`, `tld4`, `txq`, `suld.b`, `sust.b`, `suq`): the
//! handle of each lane resolved through [`DeviceMemory::texture`](crate::DeviceMemory), texels
//! read and written through the launch's [`GlobalMem`](crate::memory::GlobalMem) (region
//! checks, atomic accesses), the sampling itself in [`crate::sampler`].

use super::{
    Ctx,
    access::Fault,
    warp::{Warp, lanes},
};
use crate::{
    error::KernelError,
    ir::{SurfMode, SurfOp, TexLod, TexOp, TexQuery},
    memory::GlobalMem,
    sampler::{Coords, Lod, SurfFault, Unmapped},
    texture::TexObject,
};

/// The object last resolved in an instruction (handles are nearly always warp-uniform).
type Last = Option<(u64, TexObject)>;

/// Why a surface access faults.
pub(crate) enum SurfError {
    /// Outside the surface (trap mode) or outside device memory.
    Illegal { addr: u64, size: u32 },
    /// Not aligned to the element size.
    Misaligned { addr: u64, size: u32 },
}

/// One lane's `suld.b`/`sust.b` on surface `t`: `coords` are the lane's coordinate register
/// values, `vals` the values a store writes. A load returns its elements (zero where the
/// `zero` boundary mode reads nothing). Both engines access surfaces through this (the
/// compiler through `jit::rt::h_surf`).
pub(crate) fn surf_access(
    t: &TexObject,
    op: &SurfOp,
    coords: [u64; 3],
    vals: [u64; 4],
    gmem: &mut GlobalMem<'_>,
) -> Result<[u64; 4], SurfError> {
    let (size, n) = (op.size as u32, (op.n as usize).min(4));
    let total = size * n as u32;
    let dims = (op.dims as usize).min(2);
    let mut c = coords.map(|v| v as u32 as i32);
    // A layered access picks the layer (cube face) first: an index past the last is out of
    // range as a coordinate is, under the same boundary mode.
    let layer;
    let t = if op.layered {
        let layers = t.depth.max(1);
        let mut index = coords[dims] as u32 as u64;
        if index >= layers {
            match op.mode {
                SurfMode::Trap => {
                    let addr = t.base.wrapping_add(index.wrapping_mul(t.slice_pitch));
                    return Err(SurfError::Illegal { addr, size: total });
                }
                SurfMode::Zero => return Ok([0; 4]),
                SurfMode::Clamp => index = layers - 1,
            }
        }
        c[dims] = 0;
        // (`index` is below the layer count, which the array limits keep small.)
        layer = t.slice(index as i64);
        &layer
    } else {
        t
    };
    let addr = match t.surf_addr(op.dims as usize, size, n as u32, c, op.mode) {
        Ok(a) => a,
        Err(SurfFault::OutOfRange(addr)) => return Err(SurfError::Illegal { addr, size: total }),
        Err(SurfFault::Misaligned(addr)) => return Err(SurfError::Misaligned { addr, size }),
    };
    let mut out = [0u64; 4];
    let Some(base) = addr else {
        return Ok(out);
    };
    for k in 0..n {
        let a = base.wrapping_add(k as u64 * size as u64);
        let r = if op.store {
            gmem.store(a, size, vals[k]).map(|_| 0)
        } else {
            gmem.load(a, size)
        };
        match r {
            Ok(v) => out[k] = v,
            Err(_) => return Err(SurfError::Illegal { addr: a, size }),
        }
    }
    Ok(out)
}

/// One lane's `tex`/`tld4` on object `t`: `coords`, `layer` and `lod` are the lane's
/// register values of the instruction's coordinate, layer and level-of-detail operands (in
/// [`TexLod::operands`]' order). Both engines fetch through this (the compiler through
/// `jit::rt::h_tex`).
pub(crate) fn fetch<F>(
    t: &TexObject,
    op: &TexOp,
    coords: [u64; 3],
    layer: u64,
    lod: [u64; 7],
    load: &mut F,
) -> Result<[u32; 4], Unmapped>
where
    F: FnMut(u64, u32) -> Result<u64, Unmapped>,
{
    let c = coords.map(|v| v as u32);
    let coords = if op.int_coords {
        Coords::Int(c.map(|v| v as i32))
    } else {
        Coords::Float(c.map(f32::from_bits))
    };
    let layer = layer as u32;
    let mut one = |t: &TexObject, coords: Coords| match coords {
        Coords::Float(xyz) if op.cube => t.sample_cube(xyz, layer, load),
        _ if op.layer.is_some() => t.sample_layer(op.dims as usize, coords, layer, op.gather, load),
        _ => t.sample(op.dims as usize, coords, op.gather, load),
    };
    if t.mip.levels <= 1 {
        return one(t, coords);
    }
    let f = |k: usize| f32::from_bits(lod[k] as u32);
    let lod = match op.lod {
        TexLod::Base => Lod::Base,
        TexLod::Level(_) => Lod::Level(f(0)),
        TexLod::Grad(..) => Lod::Grad([f(1), f(2), f(3)], [f(4), f(5), f(6)]),
    };
    t.sample_mipmapped(op.dims as usize, coords, lod, one)
}

impl<'a> Ctx<'a> {
    /// The object `handle` names, if it is a surface exactly when `surface`.
    fn object(&self, last: &mut Last, handle: u64, surface: bool) -> Option<TexObject> {
        if let Some((h, t)) = last
            && *h == handle
        {
            return Some(*t);
        }
        let t = self
            .l
            .mem
            .texture(handle)
            .filter(|t| t.surface == surface)?;
        *last = Some((handle, t));
        Some(t)
    }

    fn bad_handle(
        &self,
        handle: u64,
        surface: bool,
        instruction: &str,
        w: &Warp,
        lane: usize,
        line: u32,
    ) -> KernelError {
        KernelError::InvalidHandle {
            handle,
            surface,
            instruction: instruction.into(),
            loc: self.loc(w, lane, line),
        }
    }

    pub(super) fn exec_tex(
        &mut self,
        w: &mut Warp,
        mask: u32,
        op: &TexOp,
        line: u32,
    ) -> Result<(), KernelError> {
        let name = if op.gather.is_some() { "tld4" } else { "tex" };
        let mut last = None;
        for lane in lanes(mask) {
            let h = self.val(w, &op.handle, lane);
            let Some(t) = self.object(&mut last, h, false) else {
                return Err(self.bad_handle(h, false, name, w, lane, line));
            };
            let c = op.coords.map(|s| self.val(w, &s, lane));
            let layer = op.layer.map_or(0, |l| self.val(w, &l, lane));
            let lod = if t.mip.levels > 1 {
                op.lod.operands().map(|s| self.val(w, &s, lane))
            } else {
                [0; 7]
            };
            let gmem = &mut self.gmem;
            let mut load =
                |a: u64, s: u32| gmem.load(a, s).map_err(|_| Unmapped { addr: a, size: s });
            let r = fetch(&t, op, c, layer, lod, &mut load).map_err(|u| {
                self.fault(
                    Fault::Illegal {
                        addr: u.addr,
                        size: u.size,
                        write: false,
                    },
                    w,
                    lane,
                    line,
                )
            })?;
            for (d, v) in op.d.iter().zip(r) {
                w.set(*d, lane, v as u64);
            }
            w.set(op.p, lane, 1);
        }
        Ok(())
    }

    pub(super) fn exec_surf(
        &mut self,
        w: &mut Warp,
        mask: u32,
        op: &SurfOp,
        line: u32,
    ) -> Result<(), KernelError> {
        let name = if op.store { "sust" } else { "suld" };
        let mut last = None;
        for lane in lanes(mask) {
            let h = self.val(w, &op.handle, lane);
            let Some(t) = self.object(&mut last, h, true) else {
                return Err(self.bad_handle(h, true, name, w, lane, line));
            };
            let c = op.coords.map(|s| self.val(w, &s, lane));
            let v = if op.store {
                op.v.map(|s| self.val(w, &s, lane))
            } else {
                [0; 4]
            };
            match surf_access(&t, op, c, v, &mut self.gmem) {
                Ok(r) => {
                    if !op.store {
                        let n = (op.n as usize).min(4);
                        for (d, v) in op.d.iter().zip(r).take(n) {
                            w.set(*d, lane, v);
                        }
                    }
                }
                Err(SurfError::Illegal { addr, size }) => {
                    let f = Fault::Illegal {
                        addr,
                        size,
                        write: op.store,
                    };
                    return Err(self.fault(f, w, lane, line));
                }
                Err(SurfError::Misaligned { addr, size }) => {
                    let f = Fault::Misaligned { addr, size };
                    return Err(self.fault(f, w, lane, line));
                }
            }
        }
        Ok(())
    }

    pub(super) fn exec_tex_query(
        &mut self,
        w: &mut Warp,
        mask: u32,
        (surface, what, d, handle): (bool, TexQuery, u32, &crate::ir::Src),
        line: u32,
    ) -> Result<(), KernelError> {
        let name = if surface { "suq" } else { "txq" };
        let mut last = None;
        for lane in lanes(mask) {
            let h = self.val(w, handle, lane);
            let Some(t) = self.object(&mut last, h, surface) else {
                return Err(self.bad_handle(h, surface, name, w, lane, line));
            };
            w.set(d, lane, t.query(what) as u64);
        }
        Ok(())
    }
}
