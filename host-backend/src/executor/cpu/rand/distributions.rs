// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Conversions of random words into numbers: uniform, normal (Box-Muller and the inverse
//! normal CDF) and Poisson, as cuRAND computes them.

const TWO_POW_32_INV: f32 = 2.328_306_4e-10;
pub(super) const TWO_POW_32_INV_F64: f64 = 2.328_306_436_538_696_3e-10;
const TWO_POW_53_INV: f64 = 1.110_223_024_625_156_5e-16;
pub(super) const TWO_POW_64_INV: f64 = 5.421_010_862_427_522e-20;

/// cuRAND's `_curand_uniform`: `(0, 1]` from 32 bits.
pub(super) fn uniform_f32(x: u32) -> f32 {
    x as f32 * TWO_POW_32_INV + TWO_POW_32_INV / 2.0
}

/// cuRAND's `_curand_uniform_double_hq`: 53 bits of two words.
pub(super) fn uniform_f64_hq(x: u32, y: u32) -> f64 {
    let z = (u64::from(x) ^ (u64::from(y) << 21)) & ((1 << 53) - 1);
    z as f64 * TWO_POW_53_INV + TWO_POW_53_INV / 2.0
}

/// cuRAND's single-precision Box-Muller, in `f32` arithmetic as its host generator does.
pub(super) fn box_muller_f32(x: u32, y: u32) -> (f32, f32) {
    let (u, v) = (uniform_f32(x), uniform_f32(y));
    let s = (-2.0f32 * u.ln()).sqrt();
    let a = 2.0f32 * std::f32::consts::PI * v;
    (s * a.sin(), s * a.cos())
}

pub(super) fn box_muller(u: f64, v: f64) -> (f64, f64) {
    let s = (-2.0 * u.ln()).sqrt();
    let (sin, cos) = (2.0 * std::f64::consts::PI * v).sin_cos();
    (s * sin, s * cos)
}

/// The inverse standard normal CDF (Wichura's AS241, about 1e-16 relative error).
pub(super) fn norm_inv(p: f64) -> f64 {
    let q = p - 0.5;
    if q.abs() <= 0.425 {
        let r = 0.180625 - q * q;
        return q
            * (((((((r * 2_509.080_928_730_122_7 + 33_430.575_583_588_13) * r
                + 67_265.770_927_008_7)
                * r
                + 45_921.953_931_549_87)
                * r
                + 13_731.693_765_509_46)
                * r
                + 1_971.590_950_306_551_3)
                * r
                + 133.141_667_891_784_38)
                * r
                + 3.387_132_872_796_366_5)
            / (((((((r * 5_226.495_278_852_545 + 28_729.085_735_721_943) * r
                + 39_307.895_800_092_71)
                * r
                + 21_213.794_301_586_597)
                * r
                + 5_394.196_021_424_751)
                * r
                + 687.187_007_492_057_9)
                * r
                + 42.313_330_701_600_91)
                * r
                + 1.0);
    }
    let mut r = if q < 0.0 { p } else { 1.0 - p };
    r = (-r.ln()).sqrt();
    let v = if r <= 5.0 {
        r -= 1.6;
        (((((((r * 7.745_450_142_783_414e-4 + 0.022_723_844_989_269_184) * r
            + 0.241_780_725_177_450_6)
            * r
            + 1.270_458_252_452_368_4)
            * r
            + 3.647_848_324_763_204_5)
            * r
            + 5.769_497_221_460_691)
            * r
            + 4.630_337_846_156_546)
            * r
            + 1.423_437_110_749_683_5)
            / (((((((r * 1.050_750_071_644_416_9e-9 + 5.475_938_084_995_345e-4) * r
                + 0.015_198_666_563_616_457)
                * r
                + 0.148_103_976_427_480_08)
                * r
                + 0.689_767_334_985_1)
                * r
                + 1.676_384_830_183_803_8)
                * r
                + 2.053_191_626_637_759)
                * r
                + 1.0)
    } else {
        r -= 5.0;
        (((((((r * 2.010_334_399_292_288_1e-7 + 2.711_555_568_743_487_6e-5) * r
            + 0.001_242_660_947_388_078_4)
            * r
            + 0.026_532_189_526_576_124)
            * r
            + 0.296_560_571_828_504_9)
            * r
            + 1.784_826_539_917_291_3)
            * r
            + 5.463_784_911_164_114)
            * r
            + 6.657_904_643_501_103)
            / (((((((r * 2.044_263_103_389_939_7e-15 + 1.421_511_758_316_446e-7) * r
                + 1.846_318_317_510_054_8e-5)
                * r
                + 7.868_691_311_456_133e-4)
                * r
                + 0.014_875_361_290_850_615)
                * r
                + 0.136_929_880_922_735_8)
                * r
                + 0.599_832_206_555_888)
                * r
                + 1.0)
    };
    if q < 0.0 { -v } else { v }
}

/// A Poisson-distributed count from one uniform `u` in `(0, 1]`: the inverse CDF (exact in
/// distribution), or for large lambda the inverse of its normal approximation.
pub(super) fn poisson(lambda: f64, u: f64) -> u32 {
    if lambda.is_nan() || lambda <= 0.0 {
        return 0;
    }
    if lambda < 500.0 {
        let (mut k, mut p) = (0u32, (-lambda).exp());
        let mut cdf = p;
        while cdf < u && k < 1 << 20 {
            k += 1;
            p *= lambda / f64::from(k);
            cdf += p;
        }
        k
    } else {
        (lambda + lambda.sqrt() * norm_inv(u.min(1.0 - f64::EPSILON)) + 0.5)
            .floor()
            .clamp(0.0, f64::from(u32::MAX)) as u32
    }
}
