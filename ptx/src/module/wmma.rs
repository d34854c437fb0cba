// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Decoding of the warp matrix instructions `wmma.load`, `wmma.store` and `wmma.mma`, in the
//! forms nvcc emits for `nvcuda::wmma` (`load_matrix_sync`, `store_matrix_sync`,
//! `mma_sync`): the shapes m16n16k16, m32n8k16 and m8n32k16 of `.f16`, `.bf16`, `.s8` and
//! `.u8`, m16n16k8 of `.tf32`, and m8n8k4 of `.f64`. Sub-byte and single-bit types decode as
//! unsupported instructions.

use super::{
    lower::{DResult, Lower, unsup},
    scope::FnState,
};
use crate::{ast::Operand, ir::*, types::Ty};

fn has(mods: &[&str], w: &str) -> bool {
    mods.contains(&w)
}

/// `mMnNkK`.
pub(super) fn shape(mods: &[&str]) -> DResult<[u32; 3]> {
    for m in mods {
        let Some(rest) = m.strip_prefix('m') else {
            continue;
        };
        let (mm, rest) = rest.split_once('n').unwrap_or(("", ""));
        let (nn, kk) = rest.split_once('k').unwrap_or(("", ""));
        if let (Ok(a), Ok(b), Ok(c)) = (mm.parse(), nn.parse(), kk.parse()) {
            return Ok([a, b, c]);
        }
    }
    unsup("wmma shape")
}

/// The element type of fragment `frag`, and the elements it holds, for a shape.
fn supported(shape: [u32; 3], frag: WmmaFrag, ty: WmmaTy) -> bool {
    use WmmaTy::*;
    let input = frag != WmmaFrag::C;
    match shape {
        [16, 16, 16] | [32, 8, 16] | [8, 32, 16] => {
            if input {
                matches!(ty, F16 | Bf16 | S8 | U8)
            } else {
                matches!(ty, F16 | F32 | S32)
            }
        }
        [16, 16, 8] => {
            if input {
                ty == Tf32
            } else {
                ty == F32
            }
        }
        [8, 8, 4] => ty == F64,
        _ => false,
    }
}

/// Elements of a fragment: M x K, K x N or M x N.
pub(crate) fn elements(shape: [u32; 3], frag: WmmaFrag) -> u32 {
    let [m, n, k] = shape;
    match frag {
        WmmaFrag::A => m * k,
        WmmaFrag::B => k * n,
        WmmaFrag::C => m * n,
    }
}

impl<'a> Lower<'a> {
    pub(super) fn regs(&mut self, st: &mut FnState<'a>, o: &Operand<'a>) -> DResult<Vec<Reg>> {
        let Operand::Vec(v) = o else {
            return unsup("wmma fragment operand");
        };
        v.iter().map(|o| self.dst(st, o)).collect()
    }

    pub(super) fn srcs(
        &mut self,
        st: &mut FnState<'a>,
        o: &Operand<'a>,
        ty: Ty,
    ) -> DResult<Vec<Src>> {
        let Operand::Vec(v) = o else {
            return unsup("wmma fragment operand");
        };
        v.iter().map(|o| self.src(st, o, ty)).collect()
    }

    /// Checks that `n` registers can hold a fragment.
    fn fits(n: usize, shape: [u32; 3], frag: WmmaFrag, ty: WmmaTy) -> DResult<()> {
        let per_lane = elements(shape, frag) / 32;
        if (n as u32) * ty.per_reg() < per_lane || n == 0 || n > 16 {
            return unsup("wmma fragment size");
        }
        Ok(())
    }

    pub(super) fn wmma(
        &mut self,
        st: &mut FnState<'a>,
        mods: &[&str],
        args: &[Operand<'a>],
    ) -> DResult<Op> {
        let shape = shape(mods)?;
        let tys: Vec<WmmaTy> = mods.iter().filter_map(|m| WmmaTy::parse(m)).collect();
        let reg_ty = |t: WmmaTy| match t {
            WmmaTy::F64 => Ty::B64,
            _ => Ty::B32,
        };
        let op = match mods.first().copied() {
            Some(kind @ ("load" | "store")) => {
                let frag = if has(mods, "a") {
                    WmmaFrag::A
                } else if has(mods, "b") {
                    WmmaFrag::B
                } else if has(mods, "c") || has(mods, "d") {
                    WmmaFrag::C
                } else {
                    return unsup("wmma fragment");
                };
                let [ety] = tys.as_slice() else {
                    return unsup("wmma type");
                };
                if !supported(shape, frag, *ety) || (kind == "store" && frag != WmmaFrag::C) {
                    return unsup("wmma shape and type");
                }
                let col = has(mods, "col");
                if !col && !has(mods, "row") {
                    return unsup("wmma layout");
                }
                let space = super::decode::space_of(mods).unwrap_or(Space::Generic);
                let (frag_o, addr_o) = if kind == "load" {
                    (args.first(), args.get(1))
                } else {
                    (args.get(1), args.first())
                };
                let (Some(frag_o), Some(addr_o)) = (frag_o, addr_o) else {
                    return unsup("wmma operands");
                };
                let (space, addr) = self.addr(st, addr_o, space)?;
                let stride = match args.get(2) {
                    Some(o) => Some(self.src(st, o, Ty::U32)?),
                    None => None,
                };
                let mem = WmmaMem {
                    frag,
                    col,
                    shape,
                    ety: *ety,
                    space,
                    addr,
                    stride,
                };
                if kind == "load" {
                    let d = self.regs(st, frag_o)?;
                    Self::fits(d.len(), shape, frag, *ety)?;
                    WmmaOp::Load { mem, d }
                } else {
                    let v = self.srcs(st, frag_o, reg_ty(*ety))?;
                    Self::fits(v.len(), shape, frag, *ety)?;
                    WmmaOp::Store { mem, v }
                }
            }
            Some("mma") => {
                // `.dtype.ctype` for half inputs; `.dtype.atype.btype.ctype` otherwise.
                let tys = match tys.as_slice() {
                    [d, c] => [*d, WmmaTy::F16, WmmaTy::F16, *c],
                    [d, a, b, c] if a == b => [*d, *a, *b, *c],
                    _ => return unsup("wmma.mma types"),
                };
                let ok = supported(shape, WmmaFrag::A, tys[1])
                    && supported(shape, WmmaFrag::C, tys[0])
                    && supported(shape, WmmaFrag::C, tys[3])
                    && matches!(
                        (tys[1], tys[0]),
                        (WmmaTy::F16, WmmaTy::F16 | WmmaTy::F32)
                            | (WmmaTy::Bf16 | WmmaTy::Tf32, WmmaTy::F32)
                            | (WmmaTy::S8 | WmmaTy::U8, WmmaTy::S32)
                            | (WmmaTy::F64, WmmaTy::F64)
                    );
                if !ok {
                    return unsup("wmma.mma shape and types");
                }
                let [d_o, a_o, b_o, c_o] = args else {
                    return unsup("wmma.mma operands");
                };
                let d = self.regs(st, d_o)?;
                let a = self.srcs(st, a_o, reg_ty(tys[1]))?;
                let b = self.srcs(st, b_o, reg_ty(tys[2]))?;
                let c = self.srcs(st, c_o, reg_ty(tys[3]))?;
                Self::fits(d.len(), shape, WmmaFrag::C, tys[0])?;
                Self::fits(a.len(), shape, WmmaFrag::A, tys[1])?;
                Self::fits(b.len(), shape, WmmaFrag::B, tys[2])?;
                Self::fits(c.len(), shape, WmmaFrag::C, tys[3])?;
                WmmaOp::Mma {
                    shape,
                    tys,
                    satfinite: has(mods, "satfinite"),
                    d,
                    a,
                    b,
                    c,
                }
            }
            _ => return unsup("wmma operation"),
        };
        Ok(Op::Wmma(Box::new(op)))
    }
}
