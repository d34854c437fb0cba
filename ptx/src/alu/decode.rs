// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The ALU opcode table: [`lookup`] maps an opcode and its modifiers to the [`AluFn`] that
//! implements it and how its operands are wired ([`AluSpec`]). Simple integer operations are
//! stamped out here with the lane macros; the rest come from the family modules.

use super::{
    AluCtx, AluFn, AluSpec, Lanes, Mods,
    cmp::setp_spec,
    cvt::cvt_spec,
    fp::{
        Bfloat, Double, F_ADD, F_COPYSIGN, F_DIV, F_DIV_APPROX, F_MAX, F_MIN, F_MUL, F_SUB,
        FMA_NEG_ADDEND, FMA_NEG_PRODUCT, FMS, FNMA, Half, Single, U_ABS, U_COS, U_EX2, U_LG2,
        U_NEG, U_RCP, U_RCP_APPROX, U_RSQRT, U_SIN, U_SQRT, U_SQRT_APPROX, U_TANH, fbin, fbin_x2,
        fma_spec, fun, fun_x2, testp,
    },
    int::{
        bfe_fn, bfi, bfind, carry, dp2a_fn, dp4a_fn, lop3_fn, mad_carry_fn, minmax_16x2, mul24_fn,
        prmt_fn, selp, shf_fn, slct_f32, slct_int,
    },
    map1, map2, map3, map4, need, spec,
};
use crate::float::Rnd;
use crate::types::Ty;

fn float_kind(ty: Ty) -> bool {
    ty.is_float()
}

macro_rules! fsel2 {
    ($ty:expr, $op:expr) => {
        match $ty {
            Ty::F32 => Some(fbin::<Single, $op> as AluFn),
            Ty::F64 => Some(fbin::<Double, $op> as AluFn),
            Ty::F16 => Some(fbin::<Half, $op> as AluFn),
            Ty::BF16 => Some(fbin::<Bfloat, $op> as AluFn),
            Ty::F16x2 => Some(fbin_x2::<Half, $op> as AluFn),
            Ty::BF16x2 => Some(fbin_x2::<Bfloat, $op> as AluFn),
            _ => None,
        }
    };
}

macro_rules! fsel1 {
    ($ty:expr, $op:expr) => {
        match $ty {
            Ty::F32 => Some(fun::<Single, $op> as AluFn),
            Ty::F64 => Some(fun::<Double, $op> as AluFn),
            Ty::F16 => Some(fun::<Half, $op> as AluFn),
            Ty::BF16 => Some(fun::<Bfloat, $op> as AluFn),
            Ty::F16x2 => Some(fun_x2::<Half, $op> as AluFn),
            Ty::BF16x2 => Some(fun_x2::<Bfloat, $op> as AluFn),
            _ => None,
        }
    };
}

/// Decodes an ALU instruction. `Ok(None)`: not an ALU opcode; `Err`: an ALU opcode with
/// unsupported modifiers or types.
pub(crate) fn lookup(op: &str, mods: &[&str]) -> Result<Option<AluSpec>, String> {
    let m = Mods::parse(mods);
    let r = match op {
        "add" | "sub" => {
            let ty = m.ty()?;
            let sub = op == "sub";
            if m.has("cc") {
                carry(ty, sub, false, true)?
            } else if float_kind(ty) {
                let f = if sub {
                    fsel2!(ty, F_SUB)
                } else {
                    fsel2!(ty, F_ADD)
                };
                spec(need(f, op)?, m.ctx(ty), &[ty], &[ty, ty])
            } else {
                let f = match (sub, m.sat) {
                    (false, false) => for_int!(ty, i2!(|c, a, b| a.wrapping_add(b))),
                    (true, false) => for_int!(ty, i2!(|c, a, b| a.wrapping_sub(b))),
                    (false, true) => for_int!(ty, i2!(|c, a, b| a.saturating_add(b))),
                    (true, true) => for_int!(ty, i2!(|c, a, b| a.saturating_sub(b))),
                };
                spec(need(f, op)?, m.ctx(ty), &[ty], &[ty, ty])
            }
        }
        "addc" | "subc" => carry(m.ty()?, op == "subc", true, m.has("cc"))?,
        "mul" => {
            let ty = m.ty()?;
            if float_kind(ty) {
                spec(need(fsel2!(ty, F_MUL), op)?, m.ctx(ty), &[ty], &[ty, ty])
            } else if m.has("wide") {
                let (f, dt) = match ty {
                    Ty::U16 => (wide!(u16, u32, u32), Ty::U32),
                    Ty::S16 => (wide!(i16, i32, u32), Ty::S32),
                    Ty::U32 => (wide!(u32, u64, u64), Ty::U64),
                    Ty::S32 => (wide!(i32, i64, u64), Ty::S64),
                    _ => return Err("mul.wide type".into()),
                };
                spec(f, m.ctx(ty), &[dt], &[ty, ty])
            } else if m.has("hi") {
                let f = for_int!(
                    ty,
                    i2!(|c, a, b| ((a as i128).wrapping_mul(b as i128) >> T::BITS) as T)
                );
                spec(need(f, op)?, m.ctx(ty), &[ty], &[ty, ty])
            } else {
                let f = for_int!(ty, i2!(|c, a, b| a.wrapping_mul(b)));
                spec(need(f, op)?, m.ctx(ty), &[ty], &[ty, ty])
            }
        }
        "mad" | "madc" => {
            let ty = m.ty()?;
            if float_kind(ty) {
                fma_spec(ty, &m)?
            } else if op == "madc" || m.has("cc") {
                let hi = m.has("hi");
                let cin = op == "madc";
                let f: AluFn = match (ty, hi, cin) {
                    (Ty::U32 | Ty::B32, false, false) => mad_carry_fn::<32, false, false, false>,
                    (Ty::U32 | Ty::B32, false, true) => mad_carry_fn::<32, false, false, true>,
                    (Ty::U32 | Ty::B32, true, false) => mad_carry_fn::<32, true, false, false>,
                    (Ty::U32 | Ty::B32, true, true) => mad_carry_fn::<32, true, false, true>,
                    (Ty::S32, false, false) => mad_carry_fn::<32, false, true, false>,
                    (Ty::S32, false, true) => mad_carry_fn::<32, false, true, true>,
                    (Ty::S32, true, false) => mad_carry_fn::<32, true, true, false>,
                    (Ty::S32, true, true) => mad_carry_fn::<32, true, true, true>,
                    (Ty::U64 | Ty::B64, false, false) => mad_carry_fn::<64, false, false, false>,
                    (Ty::U64 | Ty::B64, false, true) => mad_carry_fn::<64, false, false, true>,
                    (Ty::U64 | Ty::B64, true, false) => mad_carry_fn::<64, true, false, false>,
                    (Ty::U64 | Ty::B64, true, true) => mad_carry_fn::<64, true, false, true>,
                    (Ty::S64, false, false) => mad_carry_fn::<64, false, true, false>,
                    (Ty::S64, false, true) => mad_carry_fn::<64, false, true, true>,
                    (Ty::S64, true, false) => mad_carry_fn::<64, true, true, false>,
                    (Ty::S64, true, true) => mad_carry_fn::<64, true, true, true>,
                    _ => return Err("mad.cc type".into()),
                };
                let mut s = spec(f, m.ctx(ty), &[ty], &[ty, ty, ty]);
                s.cc_in = cin;
                s.cc_out = m.has("cc");
                s
            } else if m.has("wide") {
                let (f, dt) = match ty {
                    Ty::U16 => (wide_mad!(u16, u32, u32), Ty::U32),
                    Ty::S16 => (wide_mad!(i16, i32, u32), Ty::S32),
                    Ty::U32 => (wide_mad!(u32, u64, u64), Ty::U64),
                    Ty::S32 => (wide_mad!(i32, i64, u64), Ty::S64),
                    _ => return Err("mad.wide type".into()),
                };
                spec(f, m.ctx(ty), &[dt], &[ty, ty, dt])
            } else if m.has("hi") {
                let f = if m.sat {
                    for_int!(
                        ty,
                        i3!(
                            |c, a, b, d| ((a as i128).wrapping_mul(b as i128) >> T::BITS)
                                .saturating_add(d as i128)
                                .clamp(T::MIN as i128, T::MAX as i128)
                                as T
                        )
                    )
                } else {
                    for_int!(
                        ty,
                        i3!(
                            |c, a, b, d| (((a as i128).wrapping_mul(b as i128) >> T::BITS) as T)
                                .wrapping_add(d)
                        )
                    )
                };
                spec(need(f, op)?, m.ctx(ty), &[ty], &[ty, ty, ty])
            } else {
                let f = for_int!(ty, i3!(|c, a, b, d| a.wrapping_mul(b).wrapping_add(d)));
                spec(need(f, op)?, m.ctx(ty), &[ty], &[ty, ty, ty])
            }
        }
        "fma" => fma_spec(m.ty()?, &m)?,
        // A `mul` and `sub` contracted (`crate::module`'s pass): one operand negated.
        FMS | FNMA => {
            let mut s = fma_spec(m.ty()?, &m)?;
            s.ctx.imm = if op == FMS {
                FMA_NEG_ADDEND
            } else {
                FMA_NEG_PRODUCT
            };
            s
        }
        "mul24" | "mad24" => {
            let ty = m.ty()?;
            let hi = m.has("hi");
            let f: AluFn = match (ty, hi, op == "mad24") {
                (Ty::U32, false, false) => mul24_fn::<false, false, false>,
                (Ty::U32, true, false) => mul24_fn::<false, true, false>,
                (Ty::S32, false, false) => mul24_fn::<true, false, false>,
                (Ty::S32, true, false) => mul24_fn::<true, true, false>,
                (Ty::U32, false, true) => mul24_fn::<false, false, true>,
                (Ty::U32, true, true) => mul24_fn::<false, true, true>,
                (Ty::S32, false, true) => mul24_fn::<true, false, true>,
                (Ty::S32, true, true) => mul24_fn::<true, true, true>,
                _ => return Err("mul24 type".into()),
            };
            let n = if op == "mad24" { 3 } else { 2 };
            spec(f, m.ctx(ty), &[ty], &vec![ty; n])
        }
        "div" => {
            let ty = m.ty()?;
            if float_kind(ty) {
                let f = if m.approx || m.rnd.is_none() {
                    fsel2!(ty, F_DIV_APPROX)
                } else {
                    fsel2!(ty, F_DIV)
                };
                spec(need(f, op)?, m.ctx(ty), &[ty], &[ty, ty])
            } else {
                let f = for_int!(
                    ty,
                    i2!(|c, a, b| if b == 0 { !(0 as T) } else { a.wrapping_div(b) })
                );
                spec(need(f, op)?, m.ctx(ty), &[ty], &[ty, ty])
            }
        }
        "rem" => {
            let ty = m.ty()?;
            let f = for_int!(
                ty,
                i2!(|c, a, b| if b == 0 { a } else { a.wrapping_rem(b) })
            );
            spec(need(f, op)?, m.ctx(ty), &[ty], &[ty, ty])
        }
        "abs" | "neg" => {
            let ty = m.ty()?;
            let f = if float_kind(ty) {
                if op == "abs" {
                    fsel1!(ty, U_ABS)
                } else {
                    fsel1!(ty, U_NEG)
                }
            } else if op == "abs" {
                for_int!(ty, i1!(|c, a| (a as i128).unsigned_abs() as T))
            } else {
                for_int!(ty, i1!(|c, a| a.wrapping_neg()))
            };
            spec(need(f, op)?, m.ctx(ty), &[ty], &[ty])
        }
        // Packed 16-bit integer min/max (PTX 8.0, sm_90): `.u16x2`, `.s16x2` (and
        // `.relu.s16x2`) on a 32-bit register, each half on its own. `Ty` has no packed
        // integer types, so the type arrives as a word.
        "min" | "max" if m.tys.is_empty() && (m.has("u16x2") || m.has("s16x2")) => {
            let (signed, relu) = (m.has("s16x2"), m.has("relu"));
            let f: AluFn = match (op == "min", signed, relu) {
                (true, false, false) => minmax_16x2::<true, false, false>,
                (false, false, false) => minmax_16x2::<false, false, false>,
                (true, true, false) => minmax_16x2::<true, true, false>,
                (false, true, false) => minmax_16x2::<false, true, false>,
                (true, true, true) => minmax_16x2::<true, true, true>,
                (false, true, true) => minmax_16x2::<false, true, true>,
                (_, false, true) => return Err("min/max .relu.u16x2".into()),
            };
            spec(f, m.ctx(Ty::B32), &[Ty::B32], &[Ty::B32, Ty::B32])
        }
        "min" | "max" => {
            let ty = m.ty()?;
            let is_min = op == "min";
            if float_kind(ty) {
                let f = if is_min {
                    fsel2!(ty, F_MIN)
                } else {
                    fsel2!(ty, F_MAX)
                };
                let mut ctx = m.ctx(ty);
                ctx.imm = m.has("NaN") as u32;
                if m.has("xorsign") {
                    return Err("min/max .xorsign".into());
                }
                spec(need(f, op)?, ctx, &[ty], &[ty, ty])
            } else {
                let relu = m.has("relu");
                let f = match (is_min, relu) {
                    (true, false) => for_int!(ty, i2!(|c, a, b| a.min(b))),
                    (false, false) => for_int!(ty, i2!(|c, a, b| a.max(b))),
                    (true, true) => for_int!(ty, i2!(|c, a, b| a.min(b).max(0 as T))),
                    (false, true) => for_int!(ty, i2!(|c, a, b| a.max(b).max(0 as T))),
                };
                spec(need(f, op)?, m.ctx(ty), &[ty], &[ty, ty])
            }
        }
        "sad" => {
            let ty = m.ty()?;
            let f = for_int!(
                ty,
                i3!(|c, a, b, d| d.wrapping_add(if a > b {
                    a.wrapping_sub(b)
                } else {
                    b.wrapping_sub(a)
                }))
            );
            spec(need(f, op)?, m.ctx(ty), &[ty], &[ty, ty, ty])
        }
        "popc" | "clz" | "brev" => {
            let ty = m.ty()?;
            let f = match op {
                "popc" => for_int!(ty, i1!(|c, a| a.count_ones())),
                "clz" => for_int!(ty, i1!(|c, a| a.leading_zeros())),
                _ => for_int!(ty, i1!(|c, a| a.reverse_bits())),
            };
            let dt = if op == "brev" { ty } else { Ty::U32 };
            spec(need(f, op)?, m.ctx(ty), &[dt], &[ty])
        }
        "bfind" => {
            let ty = m.ty()?;
            let sh = m.has("shiftamt");
            let f: AluFn = match (ty, sh) {
                (Ty::U32, false) => i1!(u64, u64, |c, a| bfind(a, 32, false, false)),
                (Ty::U32, true) => i1!(u64, u64, |c, a| bfind(a, 32, false, true)),
                (Ty::S32, false) => i1!(u64, u64, |c, a| bfind(a, 32, true, false)),
                (Ty::S32, true) => i1!(u64, u64, |c, a| bfind(a, 32, true, true)),
                (Ty::U64, false) => i1!(u64, u64, |c, a| bfind(a, 64, false, false)),
                (Ty::U64, true) => i1!(u64, u64, |c, a| bfind(a, 64, false, true)),
                (Ty::S64, false) => i1!(u64, u64, |c, a| bfind(a, 64, true, false)),
                (Ty::S64, true) => i1!(u64, u64, |c, a| bfind(a, 64, true, true)),
                _ => return Err("bfind type".into()),
            };
            spec(f, m.ctx(ty), &[Ty::U32], &[ty])
        }
        "bfe" => {
            let ty = m.ty()?;
            let f: AluFn = match ty {
                Ty::U32 | Ty::B32 => bfe_fn::<32, false>,
                Ty::S32 => bfe_fn::<32, true>,
                Ty::U64 | Ty::B64 => bfe_fn::<64, false>,
                Ty::S64 => bfe_fn::<64, true>,
                _ => return Err("bfe type".into()),
            };
            spec(f, m.ctx(ty), &[ty], &[ty, Ty::U32, Ty::U32])
        }
        // `bmsk.mode.b32 d, a, b`: `b` ones from bit `a` (PTX ISA, "Integer Arithmetic
        // Instructions: bmsk"); `.clamp` limits both to 32, `.wrap` takes them modulo 32.
        "bmsk" => {
            let f: AluFn = if m.has("clamp") {
                i2!(u32, u32, |c, a, b| bmsk(a.min(32), b.min(32)))
            } else {
                i2!(u32, u32, |c, a, b| bmsk(a & 31, b & 31))
            };
            spec(f, m.ctx(Ty::B32), &[Ty::B32], &[Ty::U32, Ty::U32])
        }
        // `szext.mode.type d, a, b`: the low `b` bits of `a`, sign- (`.s32`) or zero-extended
        // (`.u32`); `.clamp` limits `b` to 32, `.wrap` takes it modulo 32; `b` = 0 gives 0.
        "szext" => {
            let ty = m.ty()?;
            let f: AluFn = match (ty, m.has("clamp")) {
                (Ty::S32, true) => i2!(u32, u32, |c, a, b| szext(a, b.min(32), true)),
                (Ty::S32, false) => i2!(u32, u32, |c, a, b| szext(a, b & 31, true)),
                (Ty::U32, true) => i2!(u32, u32, |c, a, b| szext(a, b.min(32), false)),
                (Ty::U32, false) => i2!(u32, u32, |c, a, b| szext(a, b & 31, false)),
                _ => return Err("szext type".into()),
            };
            spec(f, m.ctx(ty), &[ty], &[ty, Ty::U32])
        }
        "bfi" => {
            let ty = m.ty()?;
            let f: AluFn = match ty {
                Ty::B32 | Ty::U32 | Ty::S32 => i_bf!(u64, u64, |a, b, p, n| bfi(a, b, 32, p, n)),
                Ty::B64 | Ty::U64 | Ty::S64 => i_bf!(u64, u64, |a, b, p, n| bfi(a, b, 64, p, n)),
                _ => return Err("bfi type".into()),
            };
            spec(f, m.ctx(ty), &[ty], &[ty, ty, Ty::U32, Ty::U32])
        }
        "prmt" => {
            let mut ctx = m.ctx(Ty::B32);
            ctx.imm = if m.has("f4e") {
                1
            } else if m.has("b4e") {
                2
            } else if m.has("rc8") {
                3
            } else if m.has("ecl") {
                4
            } else if m.has("ecr") {
                5
            } else if m.has("rc16") {
                6
            } else {
                0
            };
            spec(prmt_fn, ctx, &[Ty::B32], &[Ty::B32, Ty::B32, Ty::B32])
        }
        "lop3" => {
            let ty = m.ty()?;
            let mut s = spec(lop3_fn, m.ctx(ty), &[ty], &[ty, ty, ty, Ty::U32]);
            s.imm_last = true;
            s
        }
        "shf" => {
            let left = m.has("l");
            let wrap = m.has("wrap");
            let f: AluFn = match (left, wrap) {
                (true, true) => shf_fn::<true, true>,
                (true, false) => shf_fn::<true, false>,
                (false, true) => shf_fn::<false, true>,
                (false, false) => shf_fn::<false, false>,
            };
            spec(f, m.ctx(Ty::B32), &[Ty::B32], &[Ty::B32, Ty::B32, Ty::U32])
        }
        "shl" => {
            let ty = m.ty()?;
            let f = for_int!(
                ty,
                i2s!(|c, a, b| if b >= T::BITS { 0 as T } else { a << b })
            );
            spec(need(f, op)?, m.ctx(ty), &[ty], &[ty, Ty::U32])
        }
        "shr" => {
            let ty = m.ty()?;
            let f = for_int!(
                ty,
                i2s!(|c, a, b| if b >= T::BITS {
                    a >> (T::BITS - 1) >> 1
                } else {
                    a >> b
                })
            );
            spec(need(f, op)?, m.ctx(ty), &[ty], &[ty, Ty::U32])
        }
        "and" | "or" | "xor" | "not" | "cnot" => {
            let ty = m.ty()?;
            let it = if ty == Ty::Pred { Ty::U8 } else { ty };
            let f = match op {
                "and" => for_int!(it, i2!(|c, a, b| a & b)),
                "or" => for_int!(it, i2!(|c, a, b| a | b)),
                "xor" => for_int!(it, i2!(|c, a, b| a ^ b)),
                "not" if ty == Ty::Pred => Some(i1!(u8, u8, |c, a| (a & 1) ^ 1)),
                "not" => for_int!(it, i1!(|c, a| !a)),
                _ => for_int!(it, i1!(|c, a| (a == 0) as T)),
            };
            let n = if matches!(op, "not" | "cnot") { 1 } else { 2 };
            spec(need(f, op)?, m.ctx(ty), &[ty], &vec![ty; n])
        }
        "dp4a" | "dp2a" => {
            let (at, bt) = match m.tys.as_slice() {
                [a, b] => (*a, *b),
                _ => return Err("dp4a types".into()),
            };
            let (sa, sb) = (at == Ty::S32, bt == Ty::S32);
            let f: AluFn = if op == "dp4a" {
                match (sa, sb) {
                    (false, false) => dp4a_fn::<false, false>,
                    (false, true) => dp4a_fn::<false, true>,
                    (true, false) => dp4a_fn::<true, false>,
                    (true, true) => dp4a_fn::<true, true>,
                }
            } else {
                match (sa, sb, m.has("hi")) {
                    (false, false, false) => dp2a_fn::<false, false, false>,
                    (false, true, false) => dp2a_fn::<false, true, false>,
                    (true, false, false) => dp2a_fn::<true, false, false>,
                    (true, true, false) => dp2a_fn::<true, true, false>,
                    (false, false, true) => dp2a_fn::<false, false, true>,
                    (false, true, true) => dp2a_fn::<false, true, true>,
                    (true, false, true) => dp2a_fn::<true, false, true>,
                    (true, true, true) => dp2a_fn::<true, true, true>,
                }
            };
            let dt = if sa || sb { Ty::S32 } else { Ty::U32 };
            spec(f, m.ctx(dt), &[dt], &[at, bt, dt])
        }
        "testp" => {
            let ty = m.ty()?;
            let k = [
                "finite",
                "infinite",
                "number",
                "notanumber",
                "normal",
                "subnormal",
            ]
            .iter()
            .position(|w| m.has(w))
            .ok_or("testp kind")?;
            macro_rules! tp {
                ($s:ty) => {
                    match k {
                        0 => testp::<$s, 0> as AluFn,
                        1 => testp::<$s, 1>,
                        2 => testp::<$s, 2>,
                        3 => testp::<$s, 3>,
                        4 => testp::<$s, 4>,
                        _ => testp::<$s, 5>,
                    }
                };
            }
            let f = match ty {
                Ty::F32 => tp!(Single),
                Ty::F64 => tp!(Double),
                _ => return Err("testp type".into()),
            };
            spec(f, m.ctx(ty), &[Ty::Pred], &[ty])
        }
        "copysign" => {
            let ty = m.ty()?;
            spec(
                need(fsel2!(ty, F_COPYSIGN), op)?,
                m.ctx(ty),
                &[ty],
                &[ty, ty],
            )
        }
        "selp" => {
            let ty = m.ty()?;
            spec(selp, m.ctx(ty), &[ty], &[ty, ty, Ty::Pred])
        }
        "slct" => {
            let (dt, ct) = match m.tys.as_slice() {
                [d, c] => (*d, *c),
                _ => return Err("slct types".into()),
            };
            let f: AluFn = if ct == Ty::F32 { slct_f32 } else { slct_int };
            let mut ctx = m.ctx(dt);
            ctx.sty = ct;
            spec(f, ctx, &[dt], &[dt, dt, ct])
        }
        "setp" | "set" => setp_spec(op, &m)?,
        "rcp" | "sqrt" | "rsqrt" | "sin" | "cos" | "lg2" | "ex2" | "tanh" => {
            let ty = m.ty()?;
            let f = match op {
                "rcp" if m.approx || m.rnd.is_none() => fsel1!(ty, U_RCP_APPROX),
                "rcp" => fsel1!(ty, U_RCP),
                "sqrt" if m.approx || m.rnd.is_none() => fsel1!(ty, U_SQRT_APPROX),
                "sqrt" => fsel1!(ty, U_SQRT),
                "rsqrt" => fsel1!(ty, U_RSQRT),
                "sin" => fsel1!(ty, U_SIN),
                "cos" => fsel1!(ty, U_COS),
                "lg2" => fsel1!(ty, U_LG2),
                "ex2" => fsel1!(ty, U_EX2),
                _ => fsel1!(ty, U_TANH),
            };
            spec(need(f, op)?, m.ctx(ty), &[ty], &[ty])
        }
        // `cvt.{rna,rn,rz}{.satfinite}.tf32.f32 d, a` (`wmma::__float_to_tf32`): the float
        // rounded to tf32's 10-bit mantissa, kept in a 32-bit register.
        "cvt" if m.has("tf32") => {
            let f: AluFn = match m.rnd {
                Some(Rnd::Rz) => i1!(u32, u32, |c, a| to_tf32(a, Tf32Round::Zero)),
                Some(Rnd::Rn) => i1!(u32, u32, |c, a| to_tf32(a, Tf32Round::Even)),
                _ => i1!(u32, u32, |c, a| to_tf32(a, Tf32Round::Away)),
            };
            spec(f, m.ctx(Ty::B32), &[Ty::B32], &[Ty::F32])
        }
        "cvt" if mods.iter().any(|w| super::fp8::is_f8x2(w)) => {
            super::fp8::cvt_f8_spec(mods, m.ctx(Ty::B16))?
        }
        "cvt" => cvt_spec(&m)?,
        _ => return Ok(None),
    };
    Ok(Some(r))
}

/// `bmsk`: `width` ones from bit `start` (both already clamped or wrapped), 0 from bit 32.
fn bmsk(start: u32, width: u32) -> u32 {
    if start >= 32 || width == 0 {
        return 0;
    }
    ((((1u64 << width) - 1) << start) & 0xffff_ffff) as u32
}

/// `szext`: the low `bits` bits of `a` (already clamped or wrapped) extended to 32.
fn szext(a: u32, bits: u32, signed: bool) -> u32 {
    match bits {
        0 => 0,
        32.. => a,
        n if signed => (((a << (32 - n)) as i32) >> (32 - n)) as u32,
        n => a & ((1u32 << n) - 1),
    }
}

/// How `cvt` rounds to tf32.
#[derive(Clone, Copy)]
enum Tf32Round {
    /// `.rna`: to nearest, ties away from zero.
    Away,
    /// `.rn`: to nearest, ties to even.
    Even,
    /// `.rz`: toward zero.
    Zero,
}

/// `f`'s bits rounded to tf32 (the low 13 mantissa bits cleared); NaN stays NaN.
fn to_tf32(f: u32, r: Tf32Round) -> u32 {
    const LOW: u32 = 0x1fff;
    if f & 0x7f80_0000 == 0x7f80_0000 {
        // Infinities keep their bits; NaNs stay quiet NaNs.
        return if f & 0x007f_ffff != 0 {
            (f | 0x0040_0000) & !LOW
        } else {
            f
        };
    }
    let add = match r {
        Tf32Round::Zero => 0,
        Tf32Round::Away => 0x1000,
        Tf32Round::Even => 0x0fff + ((f >> 13) & 1),
    };
    // Adding to the magnitude carries into the exponent as rounding should (to infinity
    // past the largest finite value).
    (f.wrapping_add(add)) & !LOW
}
