// SPDX-License-Identifier: Apache-2.0 OR MIT
//! What the group code may do with an instruction, decided before emitting it: whether it
//! has a vector form given its registers' forms and strides ([`can_vector`]), and whether
//! its group may leave for the scalar code there ([`bails`]).

use cranelift_codegen::ir::condcodes::FloatCC;

use super::forms::{self, Form};
use crate::{
    alu::native::{FOp, IntOp, Native},
    float::Rnd,
    ir::{Inst, Op, SINK, Space, Src, Sreg},
    types::Ty,
};

/// Whether source `s` can be had as a vector.
fn vsrc_ok(forms: &[Form], s: &Src) -> bool {
    match s {
        Src::Reg(r) | Src::NotReg(r) => {
            matches!(form(forms, *r), Form::Uniform | Form::Vector)
        }
        Src::Sreg(Sreg::Tid(0)) => true,
        Src::Sreg(sr) => forms::sreg(*sr).0,
        _ => true,
    }
}

fn vdst_ok(forms: &[Form], d: u32) -> bool {
    d == SINK || form(forms, d) == Form::Vector
}

/// Whether the vector group code has a vector form of `inst`.
pub(super) fn can_vector(forms: &[Form], strides: &[Option<i64>], inst: &Inst) -> bool {
    match &inst.op {
        Op::Mov { d, a, mask } => {
            vdst_ok(forms, *d) && *d != SINK && vsrc_ok(forms, a) && *mask >= 0xffff_ffff
        }
        Op::Alu {
            native: Some(nat),
            ctx,
            src,
            nsrc,
            dst,
            ndst,
            ..
        } => {
            let plain = ctx.rnd == Rnd::Rn && !ctx.ftz && !ctx.sat;
            let n = (*nsrc as usize).min(4);
            plain
                && dst.iter().take(*ndst as usize).all(|d| vdst_ok(forms, *d))
                && dst[0] != SINK
                && src[..n].iter().all(|s| vsrc_ok(forms, s))
                && vector_native(*nat, &src[..n])
        }
        Op::Ld {
            space,
            size: 4,
            sext: false,
            n: 1,
            d,
            addr,
            volatile: false,
        } => d[0] != SINK && vdst_ok(forms, d[0]) && span_ok(forms, strides, *space, &addr.base),
        Op::St {
            space,
            size: 4,
            n: 1,
            v,
            addr,
            volatile: false,
        } => vsrc_ok(forms, &v[0]) && span_ok(forms, strides, *space, &addr.base),
        _ => false,
    }
}

/// Whether lanes' addresses in `base` can be checked for one 16-byte access in `space`:
/// shared memory through 32-bit addresses (vector or per lane), global memory through
/// 64-bit ones (per lane).
fn span_ok(forms: &[Form], strides: &[Option<i64>], space: Space, base: &Src) -> bool {
    let Src::Reg(r) = base else { return false };
    let words = strides.get(*r as usize).copied().flatten() == Some(4);
    match (space, form(forms, *r)) {
        (Space::Shared, Form::Vector | Form::Lanes) => true,
        (Space::Global | Space::Generic, Form::Lanes) => true,
        // Consecutive words by construction.
        (Space::Global | Space::Generic, Form::Affine) => words,
        _ => false,
    }
}

/// A register's form (registers past the table: per lane).
fn form(forms: &[Form], r: u32) -> Form {
    forms.get(r as usize).copied().unwrap_or(Form::Lanes)
}

/// Whether the group code's fast path of `inst` leaves the group for the scalar code where its
/// check fails (see `Lower::bail`): loads computed once for the group and the vector loads
/// and stores, which check every lane before any lane's access.
pub(super) fn bails(forms: &[Form], strides: &[Option<i64>], inst: &Inst) -> bool {
    let guard_uniform = inst
        .guard
        .is_none_or(|(g, _)| form(forms, g) == Form::Uniform);
    let (uses, defs) = super::live::uses_defs(inst);
    // An affine result computed from a vector, which must not wrap across the group.
    let widens = defs.iter().any(|&d| form(forms, d) == Form::Affine)
        && uses.iter().any(|&u| form(forms, u) == Form::Vector);
    widens
        || guard_uniform
            && match inst.op {
                Op::Ld { .. } => {
                    super::forms::uniform_inst(inst, forms) || can_vector(forms, strides, inst)
                }
                Op::St { .. } => can_vector(forms, strides, inst),
                _ => false,
            }
}

/// Whether `nat` with sources `src` has a vector form.
fn vector_native(nat: Native, src: &[Src]) -> bool {
    match nat {
        Native::Int { op, bits: 1, .. } => {
            matches!(op, IntOp::And | IntOp::Or | IntOp::Xor | IntOp::Not)
        }
        Native::Int { op, bits: 32, .. } => match op {
            IntOp::Add
            | IntOp::Sub
            | IntOp::MulLo
            | IntOp::MadLo
            | IntOp::And
            | IntOp::Or
            | IntOp::Xor
            | IntOp::Not
            | IntOp::Neg
            | IntOp::Min
            | IntOp::Max => true,
            IntOp::Shl | IntOp::Shr => matches!(src.get(1), Some(Src::Imm(s)) if *s < 32),
            _ => false,
        },
        Native::Float { op, f64: false } => matches!(
            op,
            FOp::Add
                | FOp::Sub
                | FOp::Mul
                | FOp::Div
                | FOp::Fma
                | FOp::Fms
                | FOp::Fnma
                | FOp::Neg
                | FOp::Abs
                | FOp::Sqrt
        ),
        Native::Setp { cmp, ty } => {
            if ty == Ty::F32 {
                vector_fcc(cmp).is_some()
            } else {
                !ty.is_float()
                    && ty.bits() == 32
                    && super::alu::int_cc(cmp, ty.is_signed()).is_some()
            }
        }
        Native::Selp { bits: 32 } => true,
        Native::CvtIF { f64: false, src } => src == Ty::S32,
        _ => false,
    }
}

/// The vector comparison for PTX comparison `cmp` on floats: those x86 has an instruction
/// for (not ordered-not-equal, not unordered-or-equal).
pub(super) fn vector_fcc(cmp: u8) -> Option<FloatCC> {
    super::alu::float_cc(cmp)
        .filter(|cc| !matches!(cc, FloatCC::OrderedNotEqual | FloatCC::UnorderedOrEqual))
}
