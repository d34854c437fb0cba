// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Decoding of `mma.sync`, `ldmatrix`, `stmatrix` and `movmatrix`, the warp-level matrix
//! instructions with architected fragment layouts (PTX ISA 9.7.14.5): the dense shapes and
//! types of sm_80 and sm_89 (`.f16`, `.bf16`, `.tf32`, `.e4m3`/`.e5m2`, `.s8`/`.u8`,
//! `.s4`/`.u4`, `.b1`, `.f64`), and the `.m8n8` `.b16` matrix loads, stores and transposes.
//! Sparse (`mma.sp`), block-scaled (`.kind::mxf8f6f4`…) and sm_100 forms decode as
//! unsupported instructions.

use super::{
    decode::space_of,
    lower::{DResult, Lower, unsup},
    scope::FnState,
    wmma::shape,
};
use crate::{
    ast::Operand,
    ir::{MmaOp, Op, Space, WmmaTy},
    types::Ty,
};

/// Whether `mma.sync` takes this shape with these input (`a`, `b`) and accumulator (`c`,
/// `d`) types.
fn supported(shape: [u32; 3], [d, a, b, c]: [WmmaTy; 4]) -> bool {
    use WmmaTy::*;
    // Accumulators of one type, except that m8n8k4 `.f16` may widen `.f16` to `.f32`.
    let same = d == c || (m8n8k4_half(shape, a) && c == F16);
    let half_acc = matches!(d, F16 | F32) && matches!(c, F16 | F32) && same;
    let f32_acc = d == F32 && c == F32;
    let int_acc = d == S32 && c == S32;
    match (a, b) {
        (F16, F16) => half_acc && matches!(shape, [16, 8, 8] | [16, 8, 16] | [8, 8, 4]),
        (Bf16, Bf16) => f32_acc && matches!(shape, [16, 8, 8] | [16, 8, 16]),
        (Tf32, Tf32) => f32_acc && matches!(shape, [16, 8, 4] | [16, 8, 8]),
        (E4m3 | E5m2, E4m3 | E5m2) => half_acc && matches!(shape, [16, 8, 32] | [16, 8, 16]),
        (S8 | U8, S8 | U8) => int_acc && matches!(shape, [8, 8, 16] | [16, 8, 16] | [16, 8, 32]),
        (S4 | U4, S4 | U4) => int_acc && matches!(shape, [8, 8, 32] | [16, 8, 32] | [16, 8, 64]),
        (B1, B1) => int_acc && matches!(shape, [8, 8, 128] | [16, 8, 128] | [16, 8, 256]),
        (F64, F64) => {
            d == F64
                && c == F64
                && matches!(shape, [8, 8, 4] | [16, 8, 4] | [16, 8, 8] | [16, 8, 16])
        }
        _ => false,
    }
}

/// Registers a lane's fragment takes: `elements / 32` elements, `per_reg` to a register.
fn regs_for(elements: u32, ty: WmmaTy) -> usize {
    (elements / 32).div_ceil(ty.per_reg()) as usize
}

/// The `.m8n8k4` `.f16` shape computes four products at once, one per quad pair: each lane
/// holds four elements of A and B, and eight of C and D.
fn m8n8k4_half(shape: [u32; 3], a: WmmaTy) -> bool {
    shape == [8, 8, 4] && a == WmmaTy::F16
}

impl<'a> Lower<'a> {
    pub(super) fn mma(
        &mut self,
        st: &mut FnState<'a>,
        mods: &[&str],
        args: &[Operand<'a>],
    ) -> DResult<Op> {
        if mods.first() != Some(&"sync") || mods.iter().any(|m| m.starts_with("kind")) {
            return unsup("mma form");
        }
        let shape = shape(mods)?;
        let tys = match mods
            .iter()
            .filter_map(|m| WmmaTy::parse(m))
            .collect::<Vec<_>>()
            .as_slice()
        {
            [d, a, b, c] => [*d, *a, *b, *c],
            _ => return unsup("mma types"),
        };
        if !supported(shape, tys) {
            return unsup("mma shape and types");
        }
        // `.f64` takes a rounding mode; `.rn`, the default, is the one run here. Other
        // forms take none, and only integer ones `.satfinite`.
        let rounding = ["rn", "rz", "rm", "rp"].iter().find(|r| mods.contains(r));
        match rounding {
            Some(&"rn") if tys[0] == WmmaTy::F64 => {}
            Some(_) => return unsup("mma rounding mode"),
            None => {}
        }
        if mods.contains(&"satfinite") && tys[0] != WmmaTy::S32 {
            return unsup("mma .satfinite");
        }
        let [dty, aty, bty, cty] = tys;
        let has = |w: &str| mods.contains(&w);
        // `.alayout.blayout`: the first of the two words is A's.
        let lay: Vec<&str> = mods
            .iter()
            .copied()
            .filter(|m| *m == "row" || *m == "col")
            .collect();
        let (a_col, b_row) = match lay.as_slice() {
            [a, b] => (*a == "col", *b == "row"),
            _ => return unsup("mma layout"),
        };
        if (a_col || b_row) && !m8n8k4_half(shape, aty) {
            return unsup("mma layout");
        }
        let bit_and = has("and");
        if aty == WmmaTy::B1 && !(has("popc") && (bit_and || has("xor"))) {
            return unsup("mma .b1 operation");
        }
        let [d_o, a_o, b_o, c_o] = args else {
            return unsup("mma operands");
        };
        let reg_ty = |t: WmmaTy| if t == WmmaTy::F64 { Ty::B64 } else { Ty::B32 };
        let d = self.regs(st, d_o)?;
        let a = self.srcs(st, a_o, reg_ty(aty))?;
        let b = self.srcs(st, b_o, reg_ty(bty))?;
        let c = self.srcs(st, c_o, reg_ty(cty))?;
        let [m, n, k] = shape;
        // Per lane, m8n8k4 `.f16` holds what four warps' worth of its shape would.
        let q = if m8n8k4_half(shape, aty) { 4 } else { 1 };
        let want = [
            (d.len(), regs_for(m * n * q, dty)),
            (a.len(), regs_for(m * k * q, aty)),
            (b.len(), regs_for(k * n * q, bty)),
            (c.len(), regs_for(m * n * q, cty)),
        ];
        if want.iter().any(|(have, want)| have != want) {
            return unsup("mma fragment size");
        }
        Ok(Op::Mma(Box::new(MmaOp::Mma {
            shape,
            tys,
            a_col,
            b_row,
            satfinite: has("satfinite"),
            bit_and,
            d,
            a,
            b,
            c,
        })))
    }

    /// `ldmatrix` (`store` false) or `stmatrix`, `.m8n8` of `.b16`.
    pub(super) fn ldst_matrix(
        &mut self,
        st: &mut FnState<'a>,
        store: bool,
        mods: &[&str],
        args: &[Operand<'a>],
    ) -> DResult<Op> {
        if mods.first() != Some(&"sync") || !mods.contains(&"m8n8") || !mods.contains(&"b16") {
            return unsup("matrix load or store form");
        }
        let num = match mods.iter().find(|m| m.starts_with('x')).copied() {
            Some("x1") => 1,
            Some("x2") => 2,
            Some("x4") => 4,
            _ => return unsup("matrix count"),
        };
        let trans = mods.contains(&"trans");
        let space = space_of(mods).unwrap_or(Space::Generic);
        if !matches!(space, Space::Shared | Space::Generic) {
            return unsup("matrix state space");
        }
        let (frag_o, addr_o) = match (args, store) {
            ([f, a], false) | ([a, f], true) => (f, a),
            _ => return unsup("matrix operands"),
        };
        let (space, addr) = self.addr(st, addr_o, space)?;
        let op = if store {
            let v = match frag_o {
                Operand::Vec(_) => self.srcs(st, frag_o, Ty::B32)?,
                o => vec![self.src(st, o, Ty::B32)?],
            };
            if v.len() != num as usize {
                return unsup("matrix fragment size");
            }
            MmaOp::Stmatrix {
                trans,
                space,
                addr,
                v,
            }
        } else {
            let d = match frag_o {
                Operand::Vec(_) => self.regs(st, frag_o)?,
                o => vec![self.dst(st, o)?],
            };
            if d.len() != num as usize {
                return unsup("matrix fragment size");
            }
            MmaOp::Ldmatrix {
                trans,
                space,
                addr,
                d,
            }
        };
        Ok(Op::Mma(Box::new(op)))
    }

    pub(super) fn movmatrix(
        &mut self,
        st: &mut FnState<'a>,
        mods: &[&str],
        args: &[Operand<'a>],
    ) -> DResult<Op> {
        if mods != ["sync", "aligned", "m8n8", "trans", "b16"] {
            return unsup("movmatrix form");
        }
        let [d, a] = args else {
            return unsup("movmatrix operands");
        };
        Ok(Op::Mma(Box::new(MmaOp::Movmatrix {
            d: self.dst(st, d)?,
            a: self.src(st, a, Ty::B32)?,
        })))
    }
}
