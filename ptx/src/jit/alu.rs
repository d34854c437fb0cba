// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Inline code for the ALU instructions that have a [`Native`] form, with the interpreter's
//! semantics (zero-extended narrow results, PTX `min`/`max` NaN rules, total division).

use cranelift_codegen::ir::{
    InstBuilder, MemFlagsData, Value,
    condcodes::{FloatCC, IntCC},
    types::{F32, F64, I32, I64},
};

use super::lower::{Lower, int_type};
use crate::{
    alu::{
        cmp::{
            C_EQ, C_EQU, C_GE, C_GEU, C_GT, C_GTU, C_LE, C_LEU, C_LT, C_LTU, C_NAN, C_NE, C_NEU,
            C_NUM,
        },
        native::{FOp, IntOp, Native, Round},
    },
    types::Ty,
};

impl Lower<'_, '_> {
    fn bool64(&mut self, c: Value) -> Value {
        self.b.ins().uextend(I64, c)
    }

    /// Emits a native ALU operation: (first result, second result).
    pub(super) fn native(
        &mut self,
        n: Native,
        imm: u32,
        v: &[Value],
    ) -> Option<(Value, Option<Value>)> {
        let arg = |k: usize| v.get(k).copied();
        Some(match n {
            Native::Int { op, bits: 1, .. } => {
                let a = self.b.ins().band_imm_u(arg(0)?, 1);
                let r = match op {
                    IntOp::Not => self.b.ins().bxor_imm_u(a, 1),
                    _ => {
                        let b = self.b.ins().band_imm_u(arg(1)?, 1);
                        match op {
                            IntOp::And => self.b.ins().band(a, b),
                            IntOp::Or => self.b.ins().bor(a, b),
                            _ => self.b.ins().bxor(a, b),
                        }
                    }
                };
                (r, None)
            }
            Native::Int { op, bits, signed } => {
                let a = self.narrow(arg(0)?, bits);
                let r = match op {
                    IntOp::Not => self.b.ins().bnot(a),
                    IntOp::Neg => self.b.ins().ineg(a),
                    IntOp::Abs if signed => self.b.ins().iabs(a),
                    IntOp::Abs => a,
                    IntOp::Shl | IntOp::Shr => {
                        // The amount is a .u32 operand; at or past the width the result is
                        // 0 (or the sign), where Cranelift would take it modulo the width.
                        let s32 = self.b.ins().ireduce(I32, arg(1)?);
                        let over = self.b.ins().icmp_imm_u(
                            IntCC::UnsignedGreaterThanOrEqual,
                            s32,
                            bits as i64,
                        );
                        let ty = self.b.func.dfg.value_type(a);
                        let (r, sat) = if op == IntOp::Shl {
                            (self.b.ins().ishl(a, s32), self.iconst(ty, 0))
                        } else if signed {
                            let r = self.b.ins().sshr(a, s32);
                            (r, self.b.ins().sshr_imm_u(a, bits as i64 - 1))
                        } else {
                            (self.b.ins().ushr(a, s32), self.iconst(ty, 0))
                        };
                        self.b.ins().select(over, sat, r)
                    }
                    _ => {
                        let b = self.narrow(arg(1)?, bits);
                        match op {
                            IntOp::Add => self.b.ins().iadd(a, b),
                            IntOp::Sub => self.b.ins().isub(a, b),
                            IntOp::MulLo => self.b.ins().imul(a, b),
                            IntOp::MulHi if signed => self.b.ins().smulhi(a, b),
                            IntOp::MulHi => self.b.ins().umulhi(a, b),
                            IntOp::MadLo => {
                                let c = self.narrow(arg(2)?, bits);
                                let m = self.b.ins().imul(a, b);
                                self.b.ins().iadd(m, c)
                            }
                            IntOp::And => self.b.ins().band(a, b),
                            IntOp::Or => self.b.ins().bor(a, b),
                            IntOp::Xor => self.b.ins().bxor(a, b),
                            IntOp::Min if signed => self.b.ins().smin(a, b),
                            IntOp::Min => self.b.ins().umin(a, b),
                            IntOp::Max if signed => self.b.ins().smax(a, b),
                            IntOp::Max => self.b.ins().umax(a, b),
                            IntOp::Div | IntOp::Rem => self.div(op, a, b, bits, signed),
                            _ => return None,
                        }
                    }
                };
                (self.widen(r, false), None)
            }
            Native::Wide { mad, bits, signed } => {
                let a = self.narrow(arg(0)?, bits);
                let b = self.narrow(arg(1)?, bits);
                let wt = int_type(bits as u32 / 4);
                let (a, b) = if signed {
                    (self.b.ins().sextend(wt, a), self.b.ins().sextend(wt, b))
                } else {
                    (self.b.ins().uextend(wt, a), self.b.ins().uextend(wt, b))
                };
                let mut r = self.b.ins().imul(a, b);
                if mad {
                    let c = self.narrow(arg(2)?, bits * 2);
                    r = self.b.ins().iadd(r, c);
                }
                (self.widen(r, false), None)
            }
            Native::Selp { bits } => {
                let (a, b, p) = (arg(0)?, arg(1)?, arg(2)?);
                let p = self.b.ins().band_imm_u(p, 1);
                let r = self.b.ins().select(p, a, b);
                let m = if bits >= 64 {
                    u64::MAX
                } else {
                    (1u64 << bits) - 1
                };
                (self.mask(r, m), None)
            }
            Native::Setp { cmp, ty } => {
                let (a, b) = (arg(0)?, arg(1)?);
                let r = if ty.is_float() {
                    let f64 = ty == Ty::F64;
                    let a = self.as_float(a, f64);
                    let b = self.as_float(b, f64);
                    let cc = float_cc(cmp)?;
                    self.b.ins().fcmp(cc, a, b)
                } else {
                    let bits = ty.bits() as u8;
                    let a = self.narrow(a, bits);
                    let b = self.narrow(b, bits);
                    let cc = int_cc(cmp, ty.is_signed())?;
                    self.b.ins().icmp(cc, a, b)
                };
                let r = self.bool64(r);
                let nr = self.b.ins().bxor_imm_u(r, 1);
                if imm == 0 {
                    (r, Some(nr))
                } else {
                    let c = self.b.ins().band_imm_u(arg(2)?, 1);
                    let (x, y) = match imm {
                        1 => (self.b.ins().band(r, c), self.b.ins().band(nr, c)),
                        2 => (self.b.ins().bor(r, c), self.b.ins().bor(nr, c)),
                        _ => (self.b.ins().bxor(r, c), self.b.ins().bxor(nr, c)),
                    };
                    (x, Some(y))
                }
            }
            Native::Float { op, f64 } => {
                let a = self.as_float(arg(0)?, f64);
                let r = match op {
                    FOp::Neg => self.b.ins().fneg(a),
                    FOp::Abs => self.b.ins().fabs(a),
                    FOp::Sqrt => {
                        let r = self.b.ins().sqrt(a);
                        self.canonicalize(r, f64, &[a])
                    }
                    FOp::Rcp => {
                        let one = if f64 {
                            self.b.ins().f64const(1.0)
                        } else {
                            self.b.ins().f32const(1.0)
                        };
                        let r = self.b.ins().fdiv(one, a);
                        self.canonicalize(r, f64, &[a])
                    }
                    _ => {
                        let b = self.as_float(arg(1)?, f64);
                        match op {
                            FOp::Add => {
                                let r = self.b.ins().fadd(a, b);
                                self.canonicalize(r, f64, &[a, b])
                            }
                            FOp::Sub => {
                                let r = self.b.ins().fsub(a, b);
                                self.canonicalize(r, f64, &[a, b])
                            }
                            FOp::Mul => {
                                let r = self.b.ins().fmul(a, b);
                                self.canonicalize(r, f64, &[a, b])
                            }
                            FOp::Div => {
                                let r = self.b.ins().fdiv(a, b);
                                self.canonicalize(r, f64, &[a, b])
                            }
                            FOp::Fma | FOp::Fms | FOp::Fnma => {
                                let c = self.as_float(arg(2)?, f64);
                                let (x, z) = match op {
                                    FOp::Fms => (a, self.b.ins().fneg(c)),
                                    FOp::Fnma => (self.b.ins().fneg(a), c),
                                    _ => (a, c),
                                };
                                let r = self.b.ins().fma(x, b, z);
                                // A NaN comes from the operands as written (the interpreter's).
                                self.canonicalize(r, f64, &[a, b, c])
                            }
                            FOp::Min | FOp::Max => self.fminmax(op == FOp::Min, a, b, f64),
                            _ => return None,
                        }
                    }
                };
                (self.float_bits(r), None)
            }
            Native::CvtII { dst, src } => {
                let x = self.narrow(arg(0)?, src.bits() as u8);
                let x = self.widen(x, src.is_signed());
                let x = self.narrow(x, dst.bits() as u8);
                (self.widen(x, false), None)
            }
            Native::CvtIF { f64, src } => {
                let x = self.narrow(arg(0)?, src.bits() as u8);
                let ft = if f64 { F64 } else { F32 };
                let r = if src.is_signed() {
                    self.b.ins().fcvt_from_sint(ft, x)
                } else {
                    self.b.ins().fcvt_from_uint(ft, x)
                };
                (self.float_bits(r), None)
            }
            Native::CvtFI { dst, f64, round } => {
                let x = self.as_float(arg(0)?, f64);
                let x = self.round(x, round);
                let it = int_type(dst.bits() / 8);
                let r = if dst.is_signed() {
                    self.b.ins().fcvt_to_sint_sat(it, x)
                } else {
                    self.b.ins().fcvt_to_uint_sat(it, x)
                };
                (self.widen(r, false), None)
            }
            Native::CvtFF {
                dst64,
                src64,
                round,
            } => {
                let x = self.as_float(arg(0)?, src64);
                let x = match round {
                    Some(r) => self.round(x, r),
                    None => x,
                };
                let r = match (src64, dst64) {
                    (false, true) => self.b.ins().fpromote(F64, x),
                    (true, false) => self.b.ins().fdemote(F32, x),
                    _ => x,
                };
                let r = if round.is_some() {
                    // Rounding to an integral value gives the canonical NaN.
                    let nan = self.b.ins().fcmp(FloatCC::Unordered, r, r);
                    let canon = self.canonical_nan(dst64);
                    self.b.ins().select(nan, canon, r)
                } else {
                    r
                };
                (self.float_bits(r), None)
            }
        })
    }

    fn round(&mut self, x: Value, r: Round) -> Value {
        match r {
            Round::Nearest => self.b.ins().nearest(x),
            Round::Zero => self.b.ins().trunc(x),
            Round::Down => self.b.ins().floor(x),
            Round::Up => self.b.ins().ceil(x),
        }
    }

    /// PTX `min`/`max`: a NaN operand yields the other one (both NaN: the canonical NaN),
    /// and -0 is below +0.
    fn fminmax(&mut self, min: bool, a: Value, b: Value, f64: bool) -> Value {
        let m = if min {
            self.b.ins().fmin(a, b)
        } else {
            self.b.ins().fmax(a, b)
        };
        let an = self.b.ins().fcmp(FloatCC::Unordered, a, a);
        let bn = self.b.ins().fcmp(FloatCC::Unordered, b, b);
        let r = self.b.ins().select(bn, a, m);
        let r = self.b.ins().select(an, b, r);
        let both = self.b.ins().band(an, bn);
        let canon = self.canonical_nan(f64);
        self.b.ins().select(both, canon, r)
    }

    /// `r`, or the GPU's NaN if `r` is a NaN (as the interpreter's `FMath::arith_nan`): the
    /// canonical NaN for single precision; for double precision the first NaN input, quiet,
    /// else the canonical NaN (PTX keeps double-precision NaN payloads).
    fn canonicalize(&mut self, r: Value, f64: bool, inputs: &[Value]) -> Value {
        let nan = self.b.ins().fcmp(FloatCC::Unordered, r, r);
        let mut v = self.canonical_nan(f64);
        if f64 {
            for &x in inputs.iter().rev() {
                let bits = self.b.ins().bitcast(I64, MemFlagsData::new(), x);
                let q = self.b.ins().bor_imm_u(bits, 0x0008_0000_0000_0000);
                let q = self.b.ins().bitcast(F64, MemFlagsData::new(), q);
                let x_nan = self.b.ins().fcmp(FloatCC::Unordered, x, x);
                v = self.b.ins().select(x_nan, q, v);
            }
        }
        self.b.ins().select(nan, v, r)
    }

    /// The canonical NaN (all payload bits set) as an f32 or f64 value.
    fn canonical_nan(&mut self, f64: bool) -> Value {
        if f64 {
            let bits = self.b.ins().iconst(I64, 0x7fff_ffff_ffff_ffff_u64 as i64);
            self.b.ins().bitcast(F64, MemFlagsData::new(), bits)
        } else {
            let bits = self.b.ins().iconst(I32, 0x7fff_ffff);
            self.b.ins().bitcast(F32, MemFlagsData::new(), bits)
        }
    }

    /// Integer division and remainder as the interpreter defines them: x / 0 is all ones,
    /// x % 0 is x, MIN / -1 wraps (and never traps here).
    fn div(&mut self, op: IntOp, a: Value, b: Value, bits: u8, signed: bool) -> Value {
        let ty = self.b.func.dfg.value_type(a);
        let z = self.iconst(ty, 0);
        let zero = self.b.ins().icmp(IntCC::Equal, b, z);
        let mut bad = zero;
        if signed {
            let min = match bits {
                8 => i8::MIN as i64,
                16 => i16::MIN as i64,
                32 => i32::MIN as i64,
                _ => i64::MIN,
            };
            let minv = self.iconst(ty, min);
            let am = self.b.ins().icmp(IntCC::Equal, a, minv);
            let m1 = self.iconst(ty, -1);
            let bm = self.b.ins().icmp(IntCC::Equal, b, m1);
            let ov = self.b.ins().band(am, bm);
            bad = self.b.ins().bor(zero, ov);
        }
        let one = self.iconst(ty, 1);
        let sb = self.b.ins().select(bad, one, b);
        let r = match (op, signed) {
            (IntOp::Div, true) => self.b.ins().sdiv(a, sb),
            (IntOp::Div, false) => self.b.ins().udiv(a, sb),
            (_, true) => self.b.ins().srem(a, sb),
            _ => self.b.ins().urem(a, sb),
        };
        // With b = 1: a / 1 = a (MIN / -1 wraps to MIN), a % 1 = 0 (MIN % -1 = 0).
        if op == IntOp::Div {
            let ones = self.iconst(ty, -1);
            self.b.ins().select(zero, ones, r)
        } else {
            self.b.ins().select(zero, a, r)
        }
    }
}

/// The Cranelift comparison for PTX comparison code `cmp` on floats.
pub(super) fn float_cc(cmp: u8) -> Option<FloatCC> {
    Some(match cmp {
        C_EQ => FloatCC::Equal,
        C_NE => FloatCC::OrderedNotEqual,
        C_LT => FloatCC::LessThan,
        C_LE => FloatCC::LessThanOrEqual,
        C_GT => FloatCC::GreaterThan,
        C_GE => FloatCC::GreaterThanOrEqual,
        C_EQU => FloatCC::UnorderedOrEqual,
        C_NEU => FloatCC::NotEqual,
        C_LTU => FloatCC::UnorderedOrLessThan,
        C_LEU => FloatCC::UnorderedOrLessThanOrEqual,
        C_GTU => FloatCC::UnorderedOrGreaterThan,
        C_GEU => FloatCC::UnorderedOrGreaterThanOrEqual,
        C_NUM => FloatCC::Ordered,
        C_NAN => FloatCC::Unordered,
        _ => return None,
    })
}

/// The Cranelift comparison for PTX comparison code `cmp` on integers (the unordered
/// forms compare as the ordered ones).
pub(super) fn int_cc(cmp: u8, signed: bool) -> Option<IntCC> {
    Some(match cmp {
        C_EQ | C_EQU => IntCC::Equal,
        C_NE | C_NEU => IntCC::NotEqual,
        C_LT | C_LTU if signed => IntCC::SignedLessThan,
        C_LT | C_LTU => IntCC::UnsignedLessThan,
        C_LE | C_LEU if signed => IntCC::SignedLessThanOrEqual,
        C_LE | C_LEU => IntCC::UnsignedLessThanOrEqual,
        C_GT | C_GTU if signed => IntCC::SignedGreaterThan,
        C_GT | C_GTU => IntCC::UnsignedGreaterThan,
        C_GE | C_GEU if signed => IntCC::SignedGreaterThanOrEqual,
        C_GE | C_GEU => IntCC::UnsignedGreaterThanOrEqual,
        _ => return None,
    })
}
