// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Conversions (`cvt`): integer to integer, integer to float, float to integer, float to float
//! (with rounding, saturation and rounding to an integral value), and packing two f32 into
//! f16x2 / bf16x2.

use super::{
    AluCtx, AluFn, AluSpec, Lanes, Mods,
    fp::{Double, FMath, FStore, Load, Single, sat},
    map1, map2, spec,
};
use crate::{
    float::{Rnd, bf16_to_f32, directed, f16_to_f32, f64_to_f32, f64_to_small},
    types::Ty,
};

/// Integer value of a register read as `ty` (sign- or zero-extended).
#[inline(always)]
fn int_in(x: u64, ty: Ty) -> i128 {
    match ty {
        Ty::S8 => x as i8 as i128,
        Ty::S16 => x as i16 as i128,
        Ty::S32 => x as i32 as i128,
        Ty::S64 => x as i64 as i128,
        t => (x & t.mask()) as i128,
    }
}

#[inline(always)]
fn int_range(ty: Ty) -> (i128, i128) {
    let bits = ty.bits();
    if ty.is_signed() {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    }
}

#[inline(always)]
fn float_in(c: &AluCtx, x: u64, ty: Ty) -> f64 {
    match ty {
        Ty::F16 => f16_to_f32(x as u16) as f64,
        Ty::BF16 => bf16_to_f32(x as u16) as f64,
        Ty::F32 => Single::load(c, x) as f64,
        _ => f64::from_bits(x),
    }
}

/// Rounds the exact value `v` (an f64 or an integer) into float type `ty`.
fn float_out(c: &AluCtx, v: f64, ty: Ty, rnd: Rnd) -> u64 {
    match ty {
        Ty::F16 => f64_to_small(if c.sat { sat(v) } else { v }, rnd, 5, 10) as u64,
        Ty::BF16 => f64_to_small(if c.sat { sat(v) } else { v }, rnd, 8, 7) as u64,
        Ty::F32 => Single::store(c, f64_to_f32(v, rnd)),
        _ => Double::store(c, v),
    }
}

fn int_to_f64(v: i128, rnd: Rnd) -> f64 {
    let r = v as f64;
    if rnd == Rnd::Rn {
        return r;
    }
    let back = r as i128;
    let err = (v > back) as i32 - (v < back) as i32;
    directed(r, err, rnd)
}

fn cvt_ii(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    let (lo, hi) = int_range(c.dty);
    let mask = c.dty.mask();
    map1(c, i, o, |x| {
        let v = int_in(x, c.sty);
        let v = if c.sat { v.clamp(lo, hi) } else { v };
        v as u64 & mask
    })
}

fn cvt_if(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    map1(c, i, o, |x| {
        let v = int_in(x, c.sty);
        match c.dty {
            Ty::F64 => Double::store(c, int_to_f64(v, c.rnd)),
            Ty::F32 => {
                // Exact integer -> f32 rounding: i64 values need more than f64's 53 bits.
                let r = v as f32;
                let back = if r.is_finite() { r as i128 } else { v };
                let err = (v > back) as i32 - (v < back) as i32;
                Single::store(c, directed(r, err, c.rnd))
            }
            t => float_out(c, v as f64, t, c.rnd),
        }
    })
}

fn cvt_fi(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    let (lo, hi) = int_range(c.dty);
    let mask = c.dty.mask();
    map1(c, i, o, |x| {
        let v = float_in(c, x, c.sty);
        if v.is_nan() {
            return 0;
        }
        let r = v.round_int(c.rnd);
        let n = if r >= hi as f64 {
            hi
        } else if r <= lo as f64 {
            lo
        } else {
            r as i128
        };
        n as u64 & mask
    })
}

fn cvt_ff(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    map1(c, i, o, |x| {
        let v = float_in(c, x, c.sty);
        if c.rint && v.is_nan() {
            // Rounding to an integral value gives the canonical NaN, as on the GPU.
            return match c.dty {
                Ty::F64 => 0x7fff_ffff_ffff_ffff,
                Ty::F32 => 0x7fff_ffff,
                _ => float_out(c, v, c.dty, Rnd::Rn),
            };
        }
        if c.rint {
            // Same-size rounding to an integral value.
            let r = match c.sty {
                Ty::F32 => (v as f32).round_int(c.rnd) as f64,
                _ => v.round_int(c.rnd),
            };
            return float_out(c, r, c.dty, Rnd::Rn);
        }
        if c.sty == Ty::F64 && c.dty == Ty::F64 {
            return Double::store(c, v);
        }
        float_out(c, v, c.dty, c.rnd)
    })
}

/// cvt.rn.f16x2.f32 d, a, b: d = {hi: a, lo: b}.
fn cvt_pack_x2(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    let (eb, mb) = if c.dty == Ty::BF16x2 { (8, 7) } else { (5, 10) };
    map2(c, i, o, |a, b| {
        let h = |x: u64| {
            let v = Single::load(c, x) as f64;
            let v = if c.sat { sat(v) } else { v };
            let v = if c.imm == 1 && v < 0.0 { 0.0 } else { v };
            f64_to_small(v, c.rnd, eb, mb) as u64
        };
        h(a) << 16 | h(b)
    })
}

pub(super) fn cvt_spec(m: &Mods<'_>) -> Result<AluSpec, String> {
    let (dt, st) = match m.tys.as_slice() {
        [d, s] => (*d, *s),
        _ => return Err("cvt needs two types".into()),
    };
    let mut ctx = m.ctx(dt);
    ctx.sty = st;
    if matches!(dt, Ty::F16x2 | Ty::BF16x2) && st == Ty::F32 {
        ctx.imm = m.has("relu") as u32;
        return Ok(spec(cvt_pack_x2, ctx, &[dt], &[Ty::F32, Ty::F32]));
    }
    if m.has("relu") || m.has("satfinite") || !m.words.is_empty() {
        return Err(format!("cvt modifiers {:?}", m.words));
    }
    let scalar = |t: Ty| t.is_int() || matches!(t, Ty::F16 | Ty::BF16 | Ty::F32 | Ty::F64);
    if !scalar(dt) || !scalar(st) {
        return Err("cvt types".into());
    }
    let f: AluFn = match (dt.is_float(), st.is_float()) {
        (false, false) => cvt_ii,
        (true, false) => cvt_if,
        (false, true) => cvt_fi,
        (true, true) => cvt_ff,
    };
    if !dt.is_float() && st.is_float() && m.rnd.is_none() {
        // Float -> int requires an integer rounding; default to truncation.
        ctx.rnd = Rnd::Rz;
    }
    Ok(spec(f, ctx, &[dt], &[st]))
}
