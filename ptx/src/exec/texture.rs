// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Texture and surface instructions (`tex`, `tld4`, `txq`, `suld.b`, `sust.b`, `suq`): the
//! handle of each lane resolved through [`DeviceMemory::texture`](crate::DeviceMemory), texels
//! read and written through the launch's [`GlobalMem`](crate::memory::GlobalMem) (region
//! checks, atomic accesses), the sampling itself in [`crate::sampler`].

use super::{
    access::Fault,
    ctx::Ctx,
    warp::{Warp, lanes},
};
use crate::{
    access::{SurfError, surf_access, tex_fetch},
    error::KernelError,
    ir::{SurfOp, TexOp, TexQuery},
    sampler::Unmapped,
    texture::TexObject,
};

/// The object last resolved in an instruction (handles are nearly always warp-uniform).
type Last = Option<(u64, TexObject)>;

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
            let r = tex_fetch(&t, op, c, layer, lod, &mut load).map_err(|u| {
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
