// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Floating-point helpers: directed rounding, f16/bf16 conversion, flush-to-zero.

/// IEEE rounding mode of an instruction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Rnd {
    /// To nearest, ties to even.
    #[default]
    Rn,
    /// Toward zero.
    Rz,
    /// Toward minus infinity.
    Rm,
    /// Toward plus infinity.
    Rp,
    /// To nearest, ties away from zero.
    Rna,
}

/// f32/f64 operations needed for exact directed rounding.
pub(crate) trait Fp:
    Copy
    + PartialOrd
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::Neg<Output = Self>
{
    const ZERO: Self;
    fn fma(a: Self, b: Self, c: Self) -> Self;
    fn sqrt(self) -> Self;
    fn ulp_up(self) -> Self;
    fn ulp_down(self) -> Self;
    fn is_nan(self) -> bool;
    fn is_finite(self) -> bool;
}

macro_rules! impl_fp {
    ($t:ty, $fma:path) => {
        impl Fp for $t {
            const ZERO: Self = 0.0;
            #[inline(always)]
            fn fma(a: Self, b: Self, c: Self) -> Self {
                $fma(a, b, c)
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            fn ulp_up(self) -> Self {
                if self.is_nan() || self == <$t>::INFINITY {
                    return self;
                }
                if self == 0.0 {
                    return <$t>::from_bits(1);
                }
                let b = self.to_bits();
                <$t>::from_bits(if self > 0.0 { b + 1 } else { b - 1 })
            }
            fn ulp_down(self) -> Self {
                -(-self).ulp_up()
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            #[inline(always)]
            fn is_finite(self) -> bool {
                <$t>::is_finite(self)
            }
        }
    };
}
impl_fp!(f32, fma32);
impl_fp!(f64, f64::mul_add);

/// Adjusts the round-to-nearest result `r` toward the exact value, whose difference from `r`
/// has sign `err` (-1, 0, 1), for directed rounding modes.
#[inline]
pub(crate) fn directed<F: Fp>(r: F, err: i32, rnd: Rnd) -> F {
    if err == 0 || r.is_nan() {
        return r;
    }
    let pos = r > F::ZERO || (r == F::ZERO && err > 0);
    match rnd {
        Rnd::Rn | Rnd::Rna => r,
        Rnd::Rm if err < 0 => r.ulp_down(),
        Rnd::Rp if err > 0 => r.ulp_up(),
        Rnd::Rz if pos && err < 0 => r.ulp_down(),
        Rnd::Rz if !pos && err > 0 => r.ulp_up(),
        _ => r,
    }
}

#[inline]
fn sign<F: Fp>(x: F) -> i32 {
    if x > F::ZERO {
        1
    } else if x < F::ZERO {
        -1
    } else {
        0
    }
}

/// Sign of the error of an overflowed result: the exact value is finite and smaller in magnitude.
#[inline]
fn overflow_err<F: Fp>(r: F) -> i32 {
    if r > F::ZERO { -1 } else { 1 }
}

pub(crate) fn add_r<F: Fp>(a: F, b: F, rnd: Rnd) -> F {
    let s = a + b;
    if rnd == Rnd::Rn || !s.is_finite() {
        if rnd != Rnd::Rn && !s.is_nan() && a.is_finite() && b.is_finite() {
            return directed(s, overflow_err(s), rnd);
        }
        return s;
    }
    let bb = s - a;
    let err = (a - (s - bb)) + (b - bb);
    directed(s, sign(err), rnd)
}

pub(crate) fn mul_r<F: Fp>(a: F, b: F, rnd: Rnd) -> F {
    let p = a * b;
    if rnd == Rnd::Rn || !p.is_finite() {
        if rnd != Rnd::Rn && !p.is_nan() && a.is_finite() && b.is_finite() {
            return directed(p, overflow_err(p), rnd);
        }
        return p;
    }
    directed(p, sign(F::fma(a, b, -p)), rnd)
}

pub(crate) fn div_r<F: Fp>(a: F, b: F, rnd: Rnd) -> F {
    let q = a / b;
    if rnd == Rnd::Rn || !q.is_finite() || !b.is_finite() {
        if rnd != Rnd::Rn && !q.is_nan() && !q.is_finite() && a.is_finite() && b != F::ZERO {
            return directed(q, overflow_err(q), rnd);
        }
        return q;
    }
    let r = F::fma(-q, b, a);
    directed(q, sign(r) * sign(b), rnd)
}

pub(crate) fn sqrt_r<F: Fp>(a: F, rnd: Rnd) -> F {
    let s = a.sqrt();
    if rnd == Rnd::Rn || !s.is_finite() {
        return s;
    }
    directed(s, sign(F::fma(-s, s, a)), rnd)
}

pub(crate) fn fma_r<F: Fp>(a: F, b: F, c: F, rnd: Rnd) -> F {
    let r = F::fma(a, b, c);
    if rnd == Rnd::Rn || !r.is_finite() {
        if rnd != Rnd::Rn && !r.is_nan() && a.is_finite() && b.is_finite() && c.is_finite() {
            return directed(r, overflow_err(r), rnd);
        }
        return r;
    }
    // Boldo & Muller, "Exact and approximated error of the FMA": ab + c = r + r2 + r3.
    let u1 = a * b;
    let u2 = F::fma(a, b, -u1);
    let (a1, a2) = two_sum(c, u2);
    let (b1, b2) = two_sum(u1, a1);
    let g = (b1 - r) + b2;
    let r2 = g + a2;
    let r3 = a2 - (r2 - g);
    let e = if sign(r2) != 0 { sign(r2) } else { sign(r3) };
    directed(r, e, rnd)
}

fn two_sum<F: Fp>(a: F, b: F) -> (F, F) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// Correctly rounded f32 fused multiply-add without a libm call: the product is exact in f64,
/// the sum is rounded to odd in f64, and rounding that to f32 is then correct (Boldo &
/// Melquiond, "Emulation of FMA and correctly rounded sums: proved algorithms using rounding
/// to odd"). With hardware FMA enabled at compile time this is the FMA instruction.
#[inline(always)]
pub(crate) fn fma32(a: f32, b: f32, c: f32) -> f32 {
    if cfg!(any(target_feature = "fma", not(target_arch = "x86_64"))) {
        return a.mul_add(b, c);
    }
    let p = a as f64 * b as f64;
    let cd = c as f64;
    let s = p + cd;
    let bb = s - p;
    let err = (p - (s - bb)) + (cd - bb);
    let bits = s.to_bits();
    let s = if err != 0.0 && s.is_finite() && bits & 1 == 0 {
        // Move one ulp toward the exact value: that makes the last bit odd.
        f64::from_bits(if (err > 0.0) == (s > 0.0) {
            bits + 1
        } else {
            bits - 1
        })
    } else {
        s
    };
    s as f32
}

#[inline(always)]
pub(crate) fn ftz32(x: f32) -> f32 {
    if x.is_subnormal() {
        0.0f32.copysign(x)
    } else {
        x
    }
}

#[inline(always)]
pub(crate) fn ftz64(x: f64) -> f64 {
    if x.is_subnormal() {
        0.0f64.copysign(x)
    } else {
        x
    }
}

/// f64 -> f32 with a rounding mode.
pub(crate) fn f64_to_f32(x: f64, rnd: Rnd) -> f32 {
    let r = x as f32;
    if rnd == Rnd::Rn || x.is_nan() {
        return r;
    }
    let back = r as f64;
    let err = if back < x {
        1
    } else if back > x {
        -1
    } else {
        0
    };
    if rnd == Rnd::Rna {
        // Ties away from zero: only differs from Rn on exact ties.
        if err != 0 {
            let other = if err > 0 { r.ulp_up() } else { r.ulp_down() };
            if ((other as f64) - x).abs() == (back - x).abs() && other.abs() > r.abs() {
                return other;
            }
        }
        return r;
    }
    directed(r, err, rnd)
}

/// Rounds `x` to a binary format with `ebits` exponent and `mbits` fraction bits (f16: 5, 10;
/// bf16: 8, 7), returning the bit pattern.
pub(crate) fn f64_to_small(x: f64, rnd: Rnd, ebits: u32, mbits: u32) -> u16 {
    let bits = x.to_bits();
    let neg = bits >> 63 != 0;
    let sign = (neg as u16) << (ebits + mbits);
    let emask = ((1u16 << ebits) - 1) << mbits;
    if x.is_nan() {
        return sign
            | emask
            | (1 << (mbits - 1))
            | ((bits >> (52 - mbits)) as u16 & ((1 << mbits) - 1));
    }
    if x.is_infinite() {
        return sign | emask;
    }
    if x == 0.0 {
        return sign;
    }
    let bias = (1i32 << (ebits - 1)) - 1;
    let fexp = ((bits >> 52) & 0x7ff) as i32;
    let (m, e) = if fexp == 0 {
        (bits & ((1 << 52) - 1), -1074)
    } else {
        ((bits & ((1 << 52) - 1)) | (1 << 52), fexp - 1075)
    };
    // x = m * 2^e. Unbiased exponent of x:
    let ex = 63 - m.leading_zeros() as i32 + e;
    let ulp_exp = ex.max(1 - bias) - mbits as i32;
    let shift = ulp_exp - e;
    let (mut q, rem_half, rem_nonzero) = if shift <= 0 {
        (m << (-shift).min(63), false, false)
    } else if shift >= 64 {
        (0u64, false, true)
    } else {
        let q = m >> shift;
        let rem = m & ((1u64 << shift) - 1);
        let half = 1u64 << (shift - 1);
        (q, rem >= half, rem != 0)
    };
    let exact_half = shift > 0 && shift < 64 && (m & ((1u64 << shift) - 1)) == 1u64 << (shift - 1);
    let up = match rnd {
        Rnd::Rn => rem_half && (!exact_half || q & 1 == 1),
        Rnd::Rna => rem_half,
        Rnd::Rz => false,
        Rnd::Rm => neg && rem_nonzero,
        Rnd::Rp => !neg && rem_nonzero,
    };
    if up {
        q += 1;
    }
    let mut ue = ulp_exp;
    if q >= 1u64 << (mbits + 1) {
        q >>= 1;
        ue += 1;
    }
    let biased = if q >= 1u64 << mbits {
        ue + mbits as i32 + bias
    } else {
        0
    };
    if biased >= (1 << ebits) - 1 {
        // Overflow: infinity, or the largest finite value when rounding toward zero.
        let to_max = match rnd {
            Rnd::Rz => true,
            Rnd::Rm => !neg,
            Rnd::Rp => neg,
            _ => false,
        };
        return if to_max {
            sign | (emask - (1 << mbits)) | ((1 << mbits) - 1)
        } else {
            sign | emask
        };
    }
    sign | ((biased as u16) << mbits) | (q as u16 & ((1 << mbits) - 1))
}

pub(crate) fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h >> 15) as u32) << 31;
    let exp = ((h >> 10) & 0x1f) as u32;
    let frac = (h & 0x3ff) as u32;
    let bits = if exp == 0x1f {
        sign | 0x7f80_0000 | (frac << 13)
    } else if exp == 0 {
        if frac == 0 {
            sign
        } else {
            // Subnormal: frac * 2^-24.
            let v = frac as f32 * (1.0 / 16_777_216.0);
            return if sign != 0 { -v } else { v };
        }
    } else {
        sign | ((exp + 112) << 23) | (frac << 13)
    };
    f32::from_bits(bits)
}

pub(crate) fn bf16_to_f32(h: u16) -> f32 {
    f32::from_bits((h as u32) << 16)
}

pub(crate) fn f32_to_f16(x: f32) -> u16 {
    f64_to_small(x as f64, Rnd::Rn, 5, 10)
}

pub(crate) fn f32_to_bf16(x: f32) -> u16 {
    f64_to_small(x as f64, Rnd::Rn, 8, 7)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_conversions() {
        assert_eq!(f32_to_f16(1.0), 0x3c00);
        assert_eq!(f32_to_f16(-2.5), 0xc100);
        assert_eq!(f32_to_f16(65504.0), 0x7bff);
        assert_eq!(f32_to_f16(65520.0), 0x7c00);
        assert_eq!(f32_to_f16(5.960_464_5e-8), 0x0001);
        assert_eq!(f32_to_f16(1.0 + 1.0 / 2048.0), 0x3c00); // tie to even
        assert_eq!(f32_to_f16(1.0 + 3.0 / 2048.0), 0x3c02);
        assert_eq!(f64_to_small(1.0 + 1.0 / 4096.0, Rnd::Rp, 5, 10), 0x3c01);
        assert_eq!(f64_to_small(70000.0, Rnd::Rz, 5, 10), 0x7bff);
        for h in 0..=0xffffu16 {
            let f = f16_to_f32(h);
            if !f.is_nan() {
                assert_eq!(f32_to_f16(f), h, "{h:#x}");
            }
        }
        assert_eq!(f32_to_bf16(1.0), 0x3f80);
        assert_eq!(bf16_to_f32(0x4040), 3.0);
        assert_eq!(f32_to_bf16(f32::from_bits(0x3f80_8000)), 0x3f80); // tie to even
    }

    #[test]
    fn fma32_is_correctly_rounded() {
        let mut x = 0x1234_5678u32;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            f32::from_bits((x & 0x3fff_ffff) | 0x3000_0000) * if x & 1 == 0 { 1.0 } else { -1.0 }
        };
        for _ in 0..200_000 {
            let (a, b, c) = (next(), next(), next());
            assert_eq!(
                fma32(a, b, c).to_bits(),
                a.mul_add(b, c).to_bits(),
                "{a} {b} {c}"
            );
        }
        // Hard cases: exact product halfway between floats, tiny addend decides.
        let a = 1.0 + f32::EPSILON;
        assert_eq!(fma32(a, a, -1.0), a.mul_add(a, -1.0));
        assert_eq!(
            fma32(1.0 + 2f32.powi(-12), 1.0 + 2f32.powi(-12), 2f32.powi(-60)),
            (1.0 + 2f32.powi(-12)).mul_add(1.0 + 2f32.powi(-12), 2f32.powi(-60))
        );
        assert_eq!(fma32(f32::MAX, 2.0, -f32::MAX), f32::MAX);
        assert!(fma32(f32::NAN, 1.0, 1.0).is_nan());
        assert_eq!(fma32(1e-30, 1e-30, 0.0), 0.0);
    }

    #[test]
    fn directed_rounding() {
        let third = div_r(1.0f32, 3.0, Rnd::Rn);
        // 1/3 rounds up to nearest.
        assert_eq!(div_r(1.0f32, 3.0, Rnd::Rp), third);
        assert_eq!(div_r(1.0f32, 3.0, Rnd::Rm), third.ulp_down());
        assert_eq!(div_r(-1.0f32, 3.0, Rnd::Rz), -third.ulp_down());
        assert_eq!(add_r(1.0f64, 1e-30, Rnd::Rp), 1.0f64.ulp_up());
        assert_eq!(add_r(1.0f64, 1e-30, Rnd::Rz), 1.0);
        assert_eq!(mul_r(f32::MAX, 2.0, Rnd::Rz), f32::MAX);
        assert_eq!(fma_r(1.0f32, 1.0, 1e-30, Rnd::Rp), 1.0f32.ulp_up());
        assert_eq!(fma_r(1.0f32, 1.0, -1e-30, Rnd::Rm), 1.0f32.ulp_down());
        let (lo, hi) = (sqrt_r(2.0f64, Rnd::Rm), sqrt_r(2.0f64, Rnd::Rp));
        assert_eq!(lo.ulp_up(), hi);
        assert!(lo <= 2.0f64.sqrt() && 2.0f64.sqrt() <= hi);
        assert_eq!(f64_to_f32(1.0 + 1e-12, Rnd::Rp), 1.0f32.ulp_up());
    }
}
