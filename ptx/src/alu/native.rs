// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Which ALU instructions the PTX compiler ([`crate::jit`]) emits as native code, decoded once
//! next to their [`super::AluFn`]. An instruction without a [`Native`] form (or whose modifiers
//! the compiler does not handle: directed rounding, `.ftz`, `.sat`, half precision) is compiled
//! as a call of its `AluFn`, so both engines share one definition of every operation.

use super::{Mods, cmp::cmp_code};
use crate::{float::Rnd, types::Ty};

/// Integer operations on `bits`-wide two's-complement values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IntOp {
    Add,
    Sub,
    MulLo,
    MulHi,
    MadLo,
    Div,
    Rem,
    And,
    Or,
    Xor,
    Not,
    Shl,
    Shr,
    Neg,
    Min,
    Max,
    Abs,
}

/// Floating-point operations (f32 or f64) in round-to-nearest without flushing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FOp {
    Add,
    Sub,
    Mul,
    Fma,
    /// `a * b - c`, rounded once (a contracted `sub`).
    Fms,
    /// `-(a * b) + c`, rounded once (a contracted `sub` of a product).
    Fnma,
    Div,
    Sqrt,
    Rcp,
    Neg,
    Abs,
    Min,
    Max,
}

/// Integer rounding of a float.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Round {
    Nearest,
    Zero,
    Down,
    Up,
}

/// An ALU instruction the compiler emits inline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Native {
    Int {
        op: IntOp,
        bits: u8,
        signed: bool,
    },
    /// `mul.wide` / `mad.wide`: `bits`-wide sources, a `2 * bits`-wide result.
    Wide {
        mad: bool,
        bits: u8,
        signed: bool,
    },
    /// `setp.CMP.TYPE` with the comparison code of [`super::cmp`]; `ty` is the operand
    /// type as compared (`lo`/`hs`... already made unsigned).
    Setp {
        cmp: u8,
        ty: Ty,
    },
    /// `selp`, the result masked to `bits`.
    Selp {
        bits: u8,
    },
    Float {
        op: FOp,
        f64: bool,
    },
    /// `cvt` between integer types.
    CvtII {
        dst: Ty,
        src: Ty,
    },
    /// `cvt.rn.fXX.{s,u}YY`.
    CvtIF {
        f64: bool,
        src: Ty,
    },
    /// `cvt.rXi.{s,u}{32,64}.fXX` (saturating, NaN to 0).
    CvtFI {
        dst: Ty,
        f64: bool,
        round: Round,
    },
    /// `cvt.f64.f32`, `cvt.rn.f32.f64`, and `cvt.rXi.fXX.fXX` (`round`).
    CvtFF {
        dst64: bool,
        src64: bool,
        round: Option<Round>,
    },
}

fn round_of(r: Rnd) -> Option<Round> {
    Some(match r {
        Rnd::Rn => Round::Nearest,
        Rnd::Rz => Round::Zero,
        Rnd::Rm => Round::Down,
        Rnd::Rp => Round::Up,
        _ => return None,
    })
}

fn int_ty(ty: Ty) -> Option<(u8, bool)> {
    (ty.is_int() && ty.bits() >= 8 && ty.bits() <= 64).then(|| (ty.bits() as u8, ty.is_signed()))
}

fn float_ty(ty: Ty) -> Option<bool> {
    match ty {
        Ty::F32 => Some(false),
        Ty::F64 => Some(true),
        _ => None,
    }
}

/// The native form of ALU opcode `op` with modifiers `mods`, if the compiler has one.
pub(crate) fn native(op: &str, mods: &[&str]) -> Option<Native> {
    let m = Mods::parse(mods);
    if m.ftz || m.sat || m.has("cc") {
        return None;
    }
    let plain_float = |m: &Mods<'_>| matches!(m.rnd, None | Some(Rnd::Rn)) && !m.rint;
    if op == "cvt" {
        return cvt(&m);
    }
    if op == "setp" {
        let [ty] = m.tys.as_slice() else { return None };
        if !(ty.is_int() || matches!(ty, Ty::F32 | Ty::F64)) {
            return None;
        }
        let (cmp, ty) = m.words.iter().find_map(|w| cmp_code(w, *ty))?;
        return Some(Native::Setp { cmp, ty });
    }
    let [ty] = m.tys.as_slice() else { return None };
    let ty = *ty;
    if op == "selp" {
        return (ty.is_int() || matches!(ty, Ty::F32 | Ty::F64)).then_some(Native::Selp {
            bits: ty.bits() as u8,
        });
    }
    if let Some(f64) = float_ty(ty) {
        if !plain_float(&m) {
            return None;
        }
        let fop = match op {
            "add" => FOp::Add,
            "sub" => FOp::Sub,
            "mul" => FOp::Mul,
            "fma" | "mad" => FOp::Fma,
            super::FMS => FOp::Fms,
            super::FNMA => FOp::Fnma,
            "div" => FOp::Div,
            "sqrt" => FOp::Sqrt,
            "rcp" => FOp::Rcp,
            "neg" => FOp::Neg,
            "abs" => FOp::Abs,
            "min" | "max" if m.has("NaN") || m.has("xorsign") => return None,
            "min" => FOp::Min,
            "max" => FOp::Max,
            _ => return None,
        };
        return Some(Native::Float { op: fop, f64 });
    }
    if ty == Ty::Pred {
        // Predicates hold 0 or 1.
        let iop = match op {
            "and" => IntOp::And,
            "or" => IntOp::Or,
            "xor" => IntOp::Xor,
            "not" => IntOp::Not,
            _ => return None,
        };
        return Some(Native::Int {
            op: iop,
            bits: 1,
            signed: false,
        });
    }
    let (bits, signed) = int_ty(ty)?;
    if m.has("wide") {
        return match (op, bits) {
            ("mul" | "mad", 16 | 32) => Some(Native::Wide {
                mad: op == "mad",
                bits,
                signed,
            }),
            _ => None,
        };
    }
    let iop = match op {
        "add" => IntOp::Add,
        "sub" => IntOp::Sub,
        "mul" if m.has("hi") => IntOp::MulHi,
        "mul" => IntOp::MulLo,
        "mad" if m.has("hi") => return None,
        "mad" => IntOp::MadLo,
        "div" => IntOp::Div,
        "rem" => IntOp::Rem,
        "and" => IntOp::And,
        "or" => IntOp::Or,
        "xor" => IntOp::Xor,
        "not" => IntOp::Not,
        "shl" => IntOp::Shl,
        "shr" => IntOp::Shr,
        "neg" => IntOp::Neg,
        "min" if m.has("relu") => return None,
        "min" => IntOp::Min,
        "max" if m.has("relu") => return None,
        "max" => IntOp::Max,
        "abs" => IntOp::Abs,
        _ => return None,
    };
    Some(Native::Int {
        op: iop,
        bits,
        signed,
    })
}

fn cvt(m: &Mods<'_>) -> Option<Native> {
    let [dst, src] = m.tys.as_slice() else {
        return None;
    };
    let (dst, src) = (*dst, *src);
    if !m.words.is_empty() {
        return None;
    }
    match (float_ty(dst), float_ty(src)) {
        (None, None) => {
            int_ty(dst)?;
            int_ty(src)?;
            Some(Native::CvtII { dst, src })
        }
        (Some(f64), None) => {
            int_ty(src)?;
            (matches!(m.rnd, None | Some(Rnd::Rn)) && src.bits() >= 32)
                .then_some(Native::CvtIF { f64, src })
        }
        (None, Some(f64)) => {
            let (bits, _) = int_ty(dst)?;
            if bits < 32 {
                return None;
            }
            // Float to int needs an integer rounding; without one nvcc means truncation.
            let round = round_of(m.rnd.unwrap_or(Rnd::Rz))?;
            Some(Native::CvtFI { dst, f64, round })
        }
        (Some(dst64), Some(src64)) => {
            let round = if m.rint {
                Some(round_of(m.rnd?)?)
            } else {
                if !matches!(m.rnd, None | Some(Rnd::Rn)) {
                    return None;
                }
                None
            };
            Some(Native::CvtFF {
                dst64,
                src64,
                round,
            })
        }
    }
}
