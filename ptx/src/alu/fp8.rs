// SPDX-License-Identifier: Apache-2.0 OR MIT
//! FP8 conversions (`cvt` with `.e4m3x2` / `.e5m2x2`): two 8-bit floats packed in 16 bits.
//!
//! - `cvt.rn.satfinite{.relu}.{e4m3x2,e5m2x2}.f32 d, a, b`: `d = {hi: a, lo: b}`;
//! - `cvt.rn.satfinite{.relu}.{e4m3x2,e5m2x2}.f16x2 d, a`: each half of `a`;
//! - `cvt.rn{.relu}.f16x2.{e4m3x2,e5m2x2} d, a`: each byte of `a`, exactly.
//!
//! E4M3 (bias 7) has no infinities: 448 is its largest value and `0x7f` its NaN. E5M2 (bias
//! 15) is IEEE-like: 57344 is its largest finite value, `0x7c` infinity. To FP8, rounding is
//! to nearest even and `.satfinite` clamps what is beyond the largest finite value
//! (infinities included) to it; NaN becomes `0x7f`; `.relu` makes negative results +0.

use super::{AluCtx, AluFn, AluSpec, Lanes, fp::Load, fp::Single, map1, map2, spec};
use crate::float::{Rnd, f16_to_f32, f64_to_small};
use crate::types::Ty;

/// An FP8 format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fmt {
    exp: u32,
    man: u32,
    bias: i32,
    /// The largest finite code (without sign).
    max: u8,
    inf: bool,
}

const E4M3: Fmt = Fmt {
    exp: 4,
    man: 3,
    bias: 7,
    max: 0x7e,
    inf: false,
};
const E5M2: Fmt = Fmt {
    exp: 5,
    man: 2,
    bias: 15,
    max: 0x7b,
    inf: true,
};

/// `ctx.imm` bits.
const RELU: u32 = 1;
const IS_E5M2: u32 = 2;

fn fmt(c: &AluCtx) -> Fmt {
    if c.imm & IS_E5M2 != 0 { E5M2 } else { E4M3 }
}

/// Whether a `cvt` modifier names an FP8 pair.
pub(super) fn is_f8x2(w: &str) -> bool {
    w == "e4m3x2" || w == "e5m2x2"
}

/// The value of an E5M2 (`e5m2`) or E4M3 code.
pub(crate) fn f8_value(b: u8, e5m2: bool) -> f64 {
    decode(b, if e5m2 { E5M2 } else { E4M3 })
}

/// The value of FP8 code `b`.
fn decode(b: u8, f: Fmt) -> f64 {
    let sign = if b & 0x80 != 0 { -1.0 } else { 1.0 };
    let e = i32::from(b >> f.man) & ((1 << f.exp) - 1);
    let m = f64::from(b & ((1 << f.man) - 1));
    let top = (1 << f.exp) - 1;
    if f.inf && e == top {
        return if m == 0.0 {
            sign * f64::INFINITY
        } else {
            f64::NAN
        };
    }
    if !f.inf && b & 0x7f == 0x7f {
        return f64::NAN;
    }
    let scale = |p: i32| 2f64.powi(p);
    if e == 0 {
        sign * m * scale(1 - f.bias - f.man as i32)
    } else {
        sign * (1.0 + m / scale(f.man as i32)) * scale(e - f.bias)
    }
}

/// `v` to FP8 code: round to nearest even, saturating to the largest finite value.
fn encode(v: f64, f: Fmt, relu: bool) -> u8 {
    if v.is_nan() {
        return 0x7f;
    }
    if relu && v <= 0.0 {
        return 0;
    }
    let sign = if v.is_sign_negative() { 0x80 } else { 0 };
    let a = v.abs();
    if a == 0.0 {
        return sign;
    }
    let emin = 1 - f.bias;
    let emax = (1 << f.exp) - 1 - f.bias;
    // The binary exponent of `a` (finite and normal in f64: it came from f32 or f16), or
    // beyond any FP8 exponent for infinity.
    let e = if a.is_infinite() {
        emax + 1
    } else {
        ((a.to_bits() >> 52) & 0x7ff) as i32 - 1023
    };
    if e > emax {
        return sign | f.max;
    }
    let e = e.max(emin);
    let one = 1u32 << f.man;
    let m = (a / 2f64.powi(e - f.man as i32)).round_ties_even() as u32;
    let (e, m) = if m >= 2 * one { (e + 1, m / 2) } else { (e, m) };
    let code = if m < one {
        m // subnormal (e is emin)
    } else if e > emax {
        u32::MAX
    } else {
        (((e + f.bias) as u32) << f.man) | (m - one)
    };
    sign | code.min(u32::from(f.max)) as u8
}

fn from_f32x2(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    let (f, relu) = (fmt(c), c.imm & RELU != 0);
    map2(c, i, o, |a, b| {
        let e = |x: u64| u64::from(encode(f64::from(Single::load(c, x)), f, relu));
        e(a) << 8 | e(b)
    })
}

fn from_f16x2(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    let (f, relu) = (fmt(c), c.imm & RELU != 0);
    map1(c, i, o, |x| {
        let e = |h: u64| u64::from(encode(f64::from(f16_to_f32(h as u16)), f, relu));
        e(x >> 16 & 0xffff) << 8 | e(x & 0xffff)
    })
}

fn to_f16x2(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    let (f, relu) = (fmt(c), c.imm & RELU != 0);
    map1(c, i, o, |x| {
        let h = |b: u64| {
            let v = decode(b as u8, f);
            if v.is_nan() {
                0x7fff
            } else if relu && v <= 0.0 {
                0
            } else {
                u64::from(f64_to_small(v, Rnd::Rn, 5, 10))
            }
        };
        h(x >> 8 & 0xff) << 16 | h(x & 0xff)
    })
}

/// The `cvt` forms above, from the instruction's modifiers in order.
pub(super) fn cvt_f8_spec(mods: &[&str], ctx: AluCtx) -> Result<AluSpec, String> {
    let f8 = mods.iter().position(|w| is_f8x2(w)).ok_or("no FP8 type")?;
    let other = mods
        .iter()
        .position(|w| matches!(*w, "f32" | "f16x2"))
        .ok_or("cvt with an FP8 type converts to or from f32 or f16x2")?;
    let mut ctx = ctx;
    ctx.imm =
        (u32::from(mods.contains(&"relu")) * RELU) | (u32::from(mods[f8] == "e5m2x2") * IS_E5M2);
    let (f, dsts, srcs): (AluFn, &[Ty], &[Ty]) = match (f8 < other, mods[other]) {
        (true, "f32") => (from_f32x2, &[Ty::B16], &[Ty::F32, Ty::F32]),
        (true, _) => (from_f16x2, &[Ty::B16], &[Ty::F16x2]),
        (false, "f16x2") => (to_f16x2, &[Ty::F16x2], &[Ty::B16]),
        (false, _) => return Err("cvt from FP8 goes to f16x2".into()),
    };
    if f8 < other && !mods.contains(&"satfinite") {
        return Err("cvt to FP8 needs .satfinite".into());
    }
    Ok(spec(f, ctx, dsts, srcs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_and_saturate() {
        for (v, e4, e5) in [
            (1.0, 0x38, 0x3c),
            (-2.0, 0xc0, 0xc0),
            (448.0, 0x7e, 0x5f),
            (1e9, 0x7e, 0x7b),
            (f64::INFINITY, 0x7e, 0x7b),
            (f64::NEG_INFINITY, 0xfe, 0xfb),
            (0.0, 0x00, 0x00),
        ] {
            assert_eq!(encode(v, E4M3, false), e4, "e4m3 {v}");
            assert_eq!(encode(v, E5M2, false), e5, "e5m2 {v}");
        }
        assert_eq!(encode(f64::NAN, E4M3, false), 0x7f);
        assert_eq!(encode(-1.0, E4M3, true), 0);
        // Smallest subnormals: 2^-9 (e4m3), 2^-16 (e5m2); ties to even.
        assert_eq!(encode(2f64.powi(-9), E4M3, false), 0x01);
        assert_eq!(encode(2f64.powi(-16), E5M2, false), 0x01);
        assert_eq!(encode(1.0 + 1.0 / 16.0, E4M3, false), 0x38, "tie to even");
        assert_eq!(encode(1.0 + 3.0 / 16.0, E4M3, false), 0x3a, "tie to even");
        for b in 0..=255u8 {
            for f in [E4M3, E5M2] {
                let v = decode(b, f);
                if v.is_finite() {
                    assert_eq!(encode(v, f, false), b, "{b:#x} {f:?}");
                }
            }
        }
        assert!(decode(0x7f, E4M3).is_nan());
        assert_eq!(decode(0x7c, E5M2), f64::INFINITY);
    }
}
