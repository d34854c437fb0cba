// SPDX-License-Identifier: Apache-2.0 OR MIT
//! cuRAND on the CPU executor: the generators of `curandCreateGenerator` and
//! `curandCreateGeneratorHost`, computed on the host.
//!
//! Each generator reproduces cuRAND's documented algorithm and, where the layout of cuRAND's
//! host API is known (measured against NVIDIA's `libcurand.so.10` host generators), its
//! output bit for bit:
//!
//! - XORWOW: 4096 subsequences `2^67` apart (skip-ahead by GF(2) matrix powers); output `p`
//!   comes from subsequence `p mod 4096`.
//! - Philox4x32-10: 65536 subsequences; block `b` of four words is counter `b / 65536` of
//!   subsequence `b mod 65536`.
//! - MRG32k3a: 81920 subsequences `2^76` apart.
//!
//!   For these three, 32-bit words, uniform and normal floats and doubles (and so
//!   log-normal ones) match cuRAND exactly, offsets included.
//! - Sobol32 / Sobol64: Joe and Kuo's direction numbers, Gray-code order, dimension-major
//!   output, for up to [`MAX_SOBOL_DIMENSIONS`] dimensions; words, 64-bit words, uniform
//!   floats and doubles match exactly, normals (another inverse CDF) within 2 ulps.
//! - MT19937 (also used for MTGP32): the reference Mersenne Twister seeded with
//!   `init_genrand(seed)`, one stream. cuRAND interleaves 65536 streams whose first is this
//!   one (its output 0 matches) and whose others start at jump-ahead points not reproduced
//!   here, nor are MTGP32's parameter sets: the distribution is right, the numbers differ.
//!
//! Normal numbers use Box-Muller on pairs (pseudo-random) or the inverse normal CDF
//! (quasi-random); log-normal is `exp` of normal; a Poisson count is the inverse of the
//! Poisson CDF at one uniform (its normal approximation for lambda of 500 and more).
//!
//! Layout: this module holds the session's generators, their settings and the conversions
//! to each distribution; `xorwow`, `philox`, `mrg`, `mt19937` and `sobol` the engines.

use std::collections::HashMap;

use vcuda_protocol::RandGenerateReq;
use vcuda_protocol::lib::{
    RAND_LENGTH_NOT_MULTIPLE, RAND_NOT_INITIALIZED, RAND_OUT_OF_RANGE, RAND_TYPE_ERROR, dist, set,
};

use crate::executor::{ExecResult, Status};

/// `curandRngType_t` values.
pub mod rng {
    /// `CURAND_RNG_PSEUDO_DEFAULT` (XORWOW).
    pub const PSEUDO_DEFAULT: u32 = 100;
    /// `CURAND_RNG_PSEUDO_XORWOW`.
    pub const XORWOW: u32 = 101;
    /// `CURAND_RNG_PSEUDO_MRG32K3A`.
    pub const MRG32K3A: u32 = 121;
    /// `CURAND_RNG_PSEUDO_MTGP32`.
    pub const MTGP32: u32 = 141;
    /// `CURAND_RNG_PSEUDO_MT19937`.
    pub const MT19937: u32 = 142;
    /// `CURAND_RNG_PSEUDO_PHILOX4_32_10`.
    pub const PHILOX: u32 = 161;
    /// `CURAND_RNG_QUASI_DEFAULT` (Sobol32).
    pub const QUASI_DEFAULT: u32 = 200;
    /// `CURAND_RNG_QUASI_SOBOL32`.
    pub const SOBOL32: u32 = 201;
    /// `CURAND_RNG_QUASI_SOBOL64`.
    pub const SOBOL64: u32 = 203;
}

/// `curandOrdering_t` values.
mod ordering {
    pub const PSEUDO_BEST: u32 = 100;
    pub const PSEUDO_DEFAULT: u32 = 101;
    pub const PSEUDO_SEEDED: u32 = 102;
    pub const PSEUDO_LEGACY: u32 = 103;
    pub const PSEUDO_DYNAMIC: u32 = 104;
    pub const QUASI_DEFAULT: u32 = 201;
}

/// Most Sobol dimensions supported (cuRAND has 20000).
pub const MAX_SOBOL_DIMENSIONS: u32 = JOE_KUO.len() as u32 + 1;

/// Default seed of pseudo-random generators (cuRAND's).
const DEFAULT_SEED: u64 = 0;

fn status(code: u32) -> Status {
    Status(code)
}

/// The session's generators.
#[derive(Debug, Default)]
pub struct Rand {
    gens: HashMap<u64, Generator>,
    next: u64,
}

impl Rand {
    /// Creates a generator.
    pub fn create(&mut self, rng_type: u32, host: bool) -> ExecResult<u64> {
        let kind = match rng_type {
            rng::PSEUDO_DEFAULT | rng::XORWOW => Kind::Xorwow,
            rng::PHILOX => Kind::Philox,
            rng::MRG32K3A => Kind::Mrg,
            rng::MTGP32 | rng::MT19937 => Kind::Mt,
            rng::QUASI_DEFAULT | rng::SOBOL32 => Kind::Sobol32,
            rng::SOBOL64 => Kind::Sobol64,
            _ => return Err(status(RAND_TYPE_ERROR)),
        };
        self.next += 1;
        let h = 0x7a4d_0000_0000 | self.next;
        self.gens.insert(
            h,
            Generator {
                kind,
                host,
                seed: DEFAULT_SEED,
                offset: 0,
                dims: 1,
                ordering: if kind.quasi() {
                    ordering::QUASI_DEFAULT
                } else {
                    ordering::PSEUDO_DEFAULT
                },
                engine: None,
            },
        );
        Ok(h)
    }

    /// Destroys a generator.
    pub fn destroy(&mut self, h: u64) -> ExecResult<()> {
        self.gens
            .remove(&h)
            .map(drop)
            .ok_or(status(RAND_NOT_INITIALIZED))
    }

    /// Forgets every generator.
    pub fn clear(&mut self) {
        self.gens.clear();
    }

    /// Sets a parameter.
    pub fn set(&mut self, h: u64, what: u32, value: u64) -> ExecResult<()> {
        let g = self.gens.get_mut(&h).ok_or(status(RAND_NOT_INITIALIZED))?;
        match what {
            set::SEED if !g.kind.quasi() => g.seed = value,
            set::SEED => return Err(status(RAND_TYPE_ERROR)),
            set::OFFSET => g.offset = value,
            set::ORDERING => {
                let v = u32::try_from(value).map_err(|_| status(RAND_OUT_OF_RANGE))?;
                // What cuRAND accepts (measured): the seeded ordering for XORWOW only, the
                // dynamic one not for host generators.
                let ok = if g.kind.quasi() {
                    v == ordering::QUASI_DEFAULT
                } else {
                    match v {
                        ordering::PSEUDO_BEST
                        | ordering::PSEUDO_DEFAULT
                        | ordering::PSEUDO_LEGACY => true,
                        ordering::PSEUDO_SEEDED => g.kind == Kind::Xorwow,
                        ordering::PSEUDO_DYNAMIC => !g.host,
                        _ => false,
                    }
                };
                if !ok {
                    return Err(status(RAND_OUT_OF_RANGE));
                }
                // Every pseudo-random ordering gives the default layout here (cuRAND's
                // best and legacy orderings are that layout too; its seeded and dynamic
                // ones differ).
                g.ordering = v;
            }
            set::DIMENSIONS if g.kind.quasi() => {
                if value == 0 || value > u64::from(MAX_SOBOL_DIMENSIONS) {
                    return Err(status(RAND_OUT_OF_RANGE));
                }
                g.dims = value as u32;
            }
            set::DIMENSIONS => return Err(status(RAND_TYPE_ERROR)),
            _ => return Err(status(RAND_OUT_OF_RANGE)),
        }
        g.engine = None;
        Ok(())
    }

    /// Whether `h` is a host generator.
    pub fn is_host(&self, h: u64) -> ExecResult<bool> {
        self.gens
            .get(&h)
            .map(|g| g.host)
            .ok_or(status(RAND_NOT_INITIALIZED))
    }

    /// Generates `req.n` numbers as little-endian bytes.
    pub fn generate(&mut self, req: &RandGenerateReq) -> ExecResult<Vec<u8>> {
        let g = self
            .gens
            .get_mut(&req.handle)
            .ok_or(status(RAND_NOT_INITIALIZED))?;
        g.generate(req.dist, req.n, req.mean, req.stddev)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Xorwow,
    Philox,
    Mrg,
    Mt,
    Sobol32,
    Sobol64,
}

impl Kind {
    fn quasi(self) -> bool {
        matches!(self, Kind::Sobol32 | Kind::Sobol64)
    }
}

#[derive(Debug)]
struct Generator {
    kind: Kind,
    host: bool,
    seed: u64,
    /// Outputs (pseudo) or points per dimension (quasi) already generated or skipped.
    offset: u64,
    dims: u32,
    ordering: u32,
    /// Built on first use after a parameter changes.
    engine: Option<Engine>,
}

#[derive(Debug)]
enum Engine {
    Xorwow(Box<Xorwow>),
    Philox(Philox),
    Mrg(Box<Mrg>),
    Mt(Box<Mt19937>),
    Sobol32(Sobol<u32>),
    Sobol64(Sobol<u64>),
}

/// A pseudo-random engine as cuRAND lays it out: `threads()` independent word streams;
/// unit `q` of a distribution comes from stream `q mod threads()`.
trait Streams {
    fn threads(&self) -> u64;
    /// Words a stream yields per step (Philox: a block of four).
    fn block(&self) -> u64;
    /// Words `[index, index + out.len())` of stream `thread`.
    fn words(&mut self, thread: u64, index: u64, out: &mut [u32]);
    /// How words become numbers.
    fn conv(&self) -> Conv {
        Conv::Bits
    }
}

/// How a pseudo-random engine's words become numbers, as cuRAND converts them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Conv {
    /// 32 random bits: floats from one word, doubles from two (`_curand_uniform_double_hq`).
    Bits,
    /// MRG32k3a's `z` in `[1, m1]`: every number from one `z` scaled by `MRG32K3A_NORM`.
    Mrg,
}

const TWO_POW_32_INV: f32 = 2.328_306_4e-10;
const TWO_POW_32_INV_F64: f64 = 2.328_306_436_538_696_3e-10;
const TWO_POW_53_INV: f64 = 1.110_223_024_625_156_5e-16;
const TWO_POW_64_INV: f64 = 5.421_010_862_427_522e-20;

/// cuRAND's `_curand_uniform`: `(0, 1]` from 32 bits.
fn uniform_f32(x: u32) -> f32 {
    x as f32 * TWO_POW_32_INV + TWO_POW_32_INV / 2.0
}

/// cuRAND's `_curand_uniform_double_hq`: 53 bits of two words.
fn uniform_f64_hq(x: u32, y: u32) -> f64 {
    let z = (u64::from(x) ^ (u64::from(y) << 21)) & ((1 << 53) - 1);
    z as f64 * TWO_POW_53_INV + TWO_POW_53_INV / 2.0
}

/// cuRAND's single-precision Box-Muller, in `f32` arithmetic as its host generator does.
fn box_muller_f32(x: u32, y: u32) -> (f32, f32) {
    let (u, v) = (uniform_f32(x), uniform_f32(y));
    let s = (-2.0f32 * u.ln()).sqrt();
    let a = 2.0f32 * std::f32::consts::PI * v;
    (s * a.sin(), s * a.cos())
}

fn box_muller(u: f64, v: f64) -> (f64, f64) {
    let s = (-2.0 * u.ln()).sqrt();
    let (sin, cos) = (2.0 * std::f64::consts::PI * v).sin_cos();
    (s * sin, s * cos)
}

/// The inverse standard normal CDF (Wichura's AS241, about 1e-16 relative error).
fn norm_inv(p: f64) -> f64 {
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
fn poisson(lambda: f64, u: f64) -> u32 {
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

impl Generator {
    fn engine(&mut self) -> &mut Engine {
        let (seed, kind, dims) = (self.seed, self.kind, self.dims);
        self.engine.get_or_insert_with(|| match kind {
            Kind::Xorwow => Engine::Xorwow(Box::new(Xorwow::new(seed))),
            Kind::Philox => Engine::Philox(Philox::new(seed)),
            Kind::Mrg => Engine::Mrg(Box::new(Mrg::new(seed))),
            Kind::Mt => Engine::Mt(Box::new(Mt19937::new(seed as u32))),
            Kind::Sobol32 => Engine::Sobol32(Sobol::new(dims)),
            Kind::Sobol64 => Engine::Sobol64(Sobol::new(dims)),
        })
    }

    fn generate(&mut self, d: u32, n: u64, mean: f64, stddev: f64) -> ExecResult<Vec<u8>> {
        let elem = dist::elem_size(d).ok_or(status(RAND_TYPE_ERROR))?;
        let bytes = n.checked_mul(elem).ok_or(status(RAND_OUT_OF_RANGE))?;
        let cap = usize::try_from(bytes).map_err(|_| status(RAND_OUT_OF_RANGE))?;
        let normal = matches!(
            d,
            dist::NORMAL_F32 | dist::NORMAL_F64 | dist::LOG_NORMAL_F32 | dist::LOG_NORMAL_F64
        );
        if self.kind.quasi() {
            if !n.is_multiple_of(u64::from(self.dims)) {
                return Err(status(RAND_LENGTH_NOT_MULTIPLE));
            }
        } else if normal && !n.is_multiple_of(2) {
            return Err(status(RAND_LENGTH_NOT_MULTIPLE));
        }
        if (d == dist::BITS64) != (self.kind == Kind::Sobol64)
            && matches!(d, dist::BITS32 | dist::BITS64)
        {
            return Err(status(RAND_TYPE_ERROR));
        }
        let mut out = Vec::with_capacity(cap);
        let offset = self.offset;
        match self.engine() {
            Engine::Sobol32(s) => s.generate(d, n, offset, mean, stddev, &mut out),
            Engine::Sobol64(s) => s.generate(d, n, offset, mean, stddev, &mut out),
            Engine::Xorwow(e) => pseudo(e.as_mut(), d, n, offset, mean, stddev, &mut out),
            Engine::Philox(e) => pseudo(e, d, n, offset, mean, stddev, &mut out),
            Engine::Mrg(e) => pseudo(e.as_mut(), d, n, offset, mean, stddev, &mut out),
            Engine::Mt(e) => pseudo(e.as_mut(), d, n, offset, mean, stddev, &mut out),
        }
        let advance = if self.kind.quasi() {
            n / u64::from(self.dims)
        } else {
            n
        };
        self.offset = self.offset.wrapping_add(advance);
        Ok(out)
    }
}

/// Lays a distribution out over an engine's streams, cuRAND style: a *unit* of `outs`
/// outputs consumes `words` words of one stream; unit `q` (counting from the generator's
/// offset) comes from stream `q mod threads`, at word `(q / threads) * words`.
fn pseudo<E: Streams>(
    e: &mut E,
    d: u32,
    n: u64,
    offset: u64,
    mean: f64,
    stddev: f64,
    out: &mut Vec<u8>,
) {
    let b = e.block();
    let conv = e.conv();
    let (outs, words) = match d {
        _ if conv == Conv::Mrg => match d {
            dist::NORMAL_F32 | dist::NORMAL_F64 | dist::LOG_NORMAL_F32 | dist::LOG_NORMAL_F64 => {
                (2, 2)
            }
            _ => (1, 1),
        },
        dist::BITS32 | dist::UNIFORM_F32 | dist::POISSON => (b, b),
        // Doubles take two words each: a stream yields a block's worth of them at a time.
        dist::UNIFORM_F64 => (b, 2 * b),
        dist::NORMAL_F32 | dist::LOG_NORMAL_F32 => (b.max(2), b.max(2)),
        dist::NORMAL_F64 | dist::LOG_NORMAL_F64 => (b.max(2), 2 * b.max(2)),
        _ => (b, b),
    };
    let threads = e.threads();
    let first = offset / outs;
    let mut skip = (offset % outs) as usize;
    let mut left = n;
    let mut w = vec![0u32; words as usize];
    let mut q = first;
    let mut vals: Vec<f64> = Vec::with_capacity(outs as usize);
    while left > 0 {
        let thread = q % threads;
        e.words(thread, (q / threads) * words, &mut w);
        let mut bits: Vec<u32> = Vec::new();
        vals.clear();
        if conv == Conv::Mrg {
            let unit = |z: u32| f64::from(z) * MRG_NORM;
            match d {
                dist::BITS32 => {
                    bits.extend(w.iter().map(|&z| (f64::from(z) * MRG_BITS_NORM) as u32))
                }
                dist::UNIFORM_F32 | dist::UNIFORM_F64 => vals.extend(w.iter().map(|&z| unit(z))),
                dist::POISSON => bits.extend(w.iter().map(|&z| poisson(mean, unit(z)))),
                dist::NORMAL_F32 | dist::LOG_NORMAL_F32 => {
                    let (u, v) = (unit(w[0]) as f32, unit(w[1]) as f32);
                    let s = (-2.0f32 * u.ln()).sqrt();
                    let a = 2.0f32 * std::f32::consts::PI * v;
                    vals.extend([f64::from(s * a.sin()), f64::from(s * a.cos())]);
                }
                _ => {
                    let (s, c) = box_muller(unit(w[0]), unit(w[1]));
                    vals.extend([s, c]);
                }
            }
        } else {
            match d {
                dist::BITS32 => bits.extend_from_slice(&w),
                dist::UNIFORM_F32 => vals.extend(w.iter().map(|&x| f64::from(uniform_f32(x)))),
                dist::UNIFORM_F64 => vals.extend(w.chunks(2).map(|c| uniform_f64_hq(c[0], c[1]))),
                dist::NORMAL_F32 | dist::LOG_NORMAL_F32 => {
                    for c in w.chunks(2) {
                        let (s, co) = box_muller_f32(c[0], c[1]);
                        vals.extend([f64::from(s), f64::from(co)]);
                    }
                }
                dist::NORMAL_F64 | dist::LOG_NORMAL_F64 => {
                    for c in w.chunks(4) {
                        let (s, co) =
                            box_muller(uniform_f64_hq(c[0], c[1]), uniform_f64_hq(c[2], c[3]));
                        vals.extend([s, co]);
                    }
                }
                _ => bits.extend(w.iter().map(|&x| poisson(mean, f64::from(uniform_f32(x))))),
            }
        }
        let count = bits.len().max(vals.len());
        for i in skip..count {
            if left == 0 {
                break;
            }
            left -= 1;
            match d {
                dist::BITS32 | dist::POISSON => out.extend_from_slice(&bits[i].to_le_bytes()),
                dist::UNIFORM_F32 => out.extend_from_slice(&(vals[i] as f32).to_le_bytes()),
                dist::UNIFORM_F64 => out.extend_from_slice(&vals[i].to_le_bytes()),
                dist::NORMAL_F32 => {
                    let v = mean as f32 + stddev as f32 * vals[i] as f32;
                    out.extend_from_slice(&v.to_le_bytes())
                }
                dist::NORMAL_F64 => out.extend_from_slice(&(mean + stddev * vals[i]).to_le_bytes()),
                dist::LOG_NORMAL_F32 => {
                    let v = (mean as f32 + stddev as f32 * vals[i] as f32).exp();
                    out.extend_from_slice(&v.to_le_bytes())
                }
                _ => out.extend_from_slice(&(mean + stddev * vals[i]).exp().to_le_bytes()),
            }
        }
        skip = 0;
        q += 1;
    }
}

mod mrg;
mod mt19937;
mod philox;
mod sobol;
#[cfg(test)]
mod tests;
mod xorwow;

use self::mrg::*;
use self::mt19937::*;
use self::philox::*;
use self::sobol::*;
use self::xorwow::*;
