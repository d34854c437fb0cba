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

/// XORWOW (Marsaglia), seeded and split into subsequences as `curand_init` does.
#[derive(Debug)]
struct Xorwow {
    /// Per stream: its initial state, its state and `d` now, and the index of the next word.
    streams: Vec<([u32; 5], [u32; 5], u32, u64)>,
    /// The initial `d`.
    d0: u32,
    /// `jumps[j]` advances the state `2^j` steps (160 columns of 5 words each).
    jumps: Vec<Vec<[u32; 5]>>,
}

const XORWOW_THREADS: u64 = 4096;

fn xorwow_step(v: &mut [u32; 5]) {
    let t = v[0] ^ (v[0] >> 2);
    v[0] = v[1];
    v[1] = v[2];
    v[2] = v[3];
    v[3] = v[4];
    v[4] = (v[4] ^ (v[4] << 4)) ^ (t ^ (t << 1));
}

/// Applies a GF(2) matrix given by its columns.
fn apply(m: &[[u32; 5]], v: &[u32; 5]) -> [u32; 5] {
    let mut r = [0u32; 5];
    for (j, col) in m.iter().enumerate() {
        if v[j / 32] >> (j % 32) & 1 != 0 {
            for k in 0..5 {
                r[k] ^= col[k];
            }
        }
    }
    r
}

impl Xorwow {
    fn new(seed: u64) -> Self {
        let s0 = (seed as u32) ^ 0xaad2_6b49;
        let s1 = ((seed >> 32) as u32) ^ 0xf7dc_efdd;
        let t0 = 1_099_087_573u32.wrapping_mul(s0);
        let t1 = 2_591_861_531u32.wrapping_mul(s1);
        let d = 6_615_241u32.wrapping_add(t1).wrapping_add(t0);
        let v = [
            123_456_789u32.wrapping_add(t0),
            362_436_069 ^ t0,
            521_288_629u32.wrapping_add(t1),
            88_675_123 ^ t1,
            5_783_321u32.wrapping_add(t0),
        ];
        // jumps[j] = S^(2^j), by squaring the one-step matrix.
        let mut step: Vec<[u32; 5]> = (0..160)
            .map(|j| {
                let mut e = [0u32; 5];
                e[j / 32] = 1 << (j % 32);
                xorwow_step(&mut e);
                e
            })
            .collect();
        let mut jumps = Vec::with_capacity(68);
        for _ in 0..68 {
            let sq: Vec<[u32; 5]> = step.iter().map(|c| apply(&step, c)).collect();
            jumps.push(std::mem::replace(&mut step, sq));
        }
        // Subsequence t starts 2^67 * t steps in; `d` advances by 362437 per step, which
        // over 2^67 steps is 0 mod 2^32.
        let mut streams = Vec::with_capacity(XORWOW_THREADS as usize);
        let mut cur = v;
        for _ in 0..XORWOW_THREADS {
            streams.push((cur, cur, d, 0));
            cur = apply(&jumps[67], &cur);
        }
        Self {
            streams,
            d0: d,
            jumps,
        }
    }
}

impl Streams for Xorwow {
    fn threads(&self) -> u64 {
        XORWOW_THREADS
    }
    fn block(&self) -> u64 {
        1
    }
    fn words(&mut self, thread: u64, index: u64, out: &mut [u32]) {
        let d0 = self.d0;
        let Some((init, v, d, at)) = self.streams.get_mut(thread as usize) else {
            return;
        };
        if index < *at {
            // Going back (a distribution with another layout): restart the stream.
            (*v, *d, *at) = (*init, d0, 0);
        }
        let mut skip = index - *at;
        let mut j = 0;
        while skip > 0 && j < self.jumps.len() {
            if skip & 1 != 0 {
                *v = apply(&self.jumps[j], v);
                // 362437 * 2^j steps, mod 2^32.
                if j < 32 {
                    *d = d.wrapping_add(362_437u32.wrapping_mul(1 << j));
                }
            }
            skip >>= 1;
            j += 1;
        }
        for o in out.iter_mut() {
            xorwow_step(v);
            *d = d.wrapping_add(362_437);
            *o = v[4].wrapping_add(*d);
        }
        *at = index + out.len() as u64;
    }
}

/// Philox4x32-10 (Salmon et al.), counter-based.
#[derive(Debug)]
struct Philox {
    key: [u32; 2],
}

const PHILOX_THREADS: u64 = 65536;

impl Philox {
    fn new(seed: u64) -> Self {
        Self {
            key: [seed as u32, (seed >> 32) as u32],
        }
    }

    fn block(&self, ctr: [u32; 4]) -> [u32; 4] {
        let (mut c, mut k) = (ctr, self.key);
        for _ in 0..10 {
            let p0 = u64::from(0xD251_1F53u32) * u64::from(c[0]);
            let p1 = u64::from(0xCD9E_8D57u32) * u64::from(c[2]);
            c = [
                ((p1 >> 32) as u32) ^ c[1] ^ k[0],
                p1 as u32,
                ((p0 >> 32) as u32) ^ c[3] ^ k[1],
                p0 as u32,
            ];
            k = [
                k[0].wrapping_add(0x9E37_79B9),
                k[1].wrapping_add(0xBB67_AE85),
            ];
        }
        c
    }
}

impl Streams for Philox {
    fn threads(&self) -> u64 {
        PHILOX_THREADS
    }
    fn block(&self) -> u64 {
        4
    }
    fn words(&mut self, thread: u64, index: u64, out: &mut [u32]) {
        for (i, o) in out.iter_mut().enumerate() {
            let w = index.wrapping_add(i as u64);
            let ctr = w / 4;
            let b = Philox::block(
                self,
                [
                    ctr as u32,
                    (ctr >> 32) as u32,
                    thread as u32,
                    (thread >> 32) as u32,
                ],
            );
            *o = b[(w % 4) as usize];
        }
    }
}

/// MRG32k3a (L'Ecuyer), seeded as `curand_init` does, in 81920 subsequences `2^76` steps
/// apart. Its words are the generator's raw outputs `z` in `[1, m1]`; [`Conv::Mrg`] turns
/// them into numbers as cuRAND does.
#[derive(Debug)]
struct Mrg {
    /// Per stream: its initial state, its state now and the index of the next word.
    streams: Vec<([u64; 6], [u64; 6], u64)>,
    /// `jumps[j]`: the two components' matrices advancing `2^j` steps.
    jumps: Vec<(Mat3, Mat3)>,
}

const MRG_THREADS: u64 = 81920;

/// A 3 x 3 matrix mod m1 or m2.
type Mat3 = [[u64; 3]; 3];
const MRG_M1: u64 = 4_294_967_087;
const MRG_M2: u64 = 4_294_944_443;
const MRG_A1: [[u64; 3]; 3] = [[0, 1, 0], [0, 0, 1], [MRG_M1 - 810_728, 1_403_580, 0]];
const MRG_A2: [[u64; 3]; 3] = [[0, 1, 0], [0, 0, 1], [MRG_M2 - 1_370_589, 0, 527_612]];
/// cuRAND's `MRG32K3A_NORM`: 1 / (m1 + 1).
const MRG_NORM: f64 = 2.328_306_549_837_829e-10;
/// cuRAND's `MRG32K3A_BITS_NORM`: scales `z` to 32 bits.
const MRG_BITS_NORM: f64 = 1.000_000_048_662;

fn mat_mul(a: &[[u64; 3]; 3], b: &[[u64; 3]; 3], m: u64) -> [[u64; 3]; 3] {
    let mut r = [[0u64; 3]; 3];
    for i in 0..3 {
        for j in 0..3 {
            let s: u128 = (0..3)
                .map(|k| u128::from(a[i][k]) * u128::from(b[k][j]))
                .sum();
            r[i][j] = (s % u128::from(m)) as u64;
        }
    }
    r
}

fn mat_vec(a: &[[u64; 3]; 3], v: &[u64], m: u64) -> [u64; 3] {
    let mut r = [0u64; 3];
    for i in 0..3 {
        let s: u128 = (0..3).map(|k| u128::from(a[i][k]) * u128::from(v[k])).sum();
        r[i] = (s % u128::from(m)) as u64;
    }
    r
}

impl Mrg {
    fn new(seed: u64) -> Self {
        let mut s = [12345u64; 6];
        if seed != 0 {
            let x1 = u64::from(seed as u32 ^ 0x5555_5555);
            let x2 = u64::from((seed >> 32) as u32 ^ 0xaaaa_aaaa);
            s = [
                12345 * x1 % MRG_M1,
                12345 * x2 % MRG_M1,
                12345 * x1 % MRG_M1,
                12345 * x2 % MRG_M2,
                12345 * x1 % MRG_M2,
                12345 * x2 % MRG_M2,
            ];
        }
        let mut jumps = Vec::with_capacity(77);
        let (mut j1, mut j2) = (MRG_A1, MRG_A2);
        for _ in 0..77 {
            jumps.push((j1, j2));
            (j1, j2) = (mat_mul(&j1, &j1, MRG_M1), mat_mul(&j2, &j2, MRG_M2));
        }
        let (sub1, sub2) = jumps[76];
        let mut streams = Vec::with_capacity(MRG_THREADS as usize);
        for _ in 0..MRG_THREADS {
            streams.push((s, s, 0));
            let a = mat_vec(&sub1, &s[..3], MRG_M1);
            let b = mat_vec(&sub2, &s[3..], MRG_M2);
            s = [a[0], a[1], a[2], b[0], b[1], b[2]];
        }
        Self { streams, jumps }
    }

    fn next(s: &mut [u64; 6]) -> u32 {
        let w = |a: u64, x: u64| u128::from(a) * u128::from(x);
        let p1 = ((w(1_403_580, s[1]) + w(MRG_M1 - 810_728, s[0])) % u128::from(MRG_M1)) as u64;
        let p2 = ((w(527_612, s[5]) + w(MRG_M2 - 1_370_589, s[3])) % u128::from(MRG_M2)) as u64;
        *s = [s[1], s[2], p1, s[4], s[5], p2];
        // In [1, m1]: never 0, so every conversion stays inside (0, 1].
        (if p1 <= p2 { p1 + MRG_M1 - p2 } else { p1 - p2 }) as u32
    }
}

impl Streams for Mrg {
    fn threads(&self) -> u64 {
        MRG_THREADS
    }
    fn block(&self) -> u64 {
        1
    }
    fn conv(&self) -> Conv {
        Conv::Mrg
    }
    fn words(&mut self, thread: u64, index: u64, out: &mut [u32]) {
        let Some((init, s, at)) = self.streams.get_mut(thread as usize) else {
            return;
        };
        if index < *at {
            // Going back (a distribution with another layout): restart the stream.
            (*s, *at) = (*init, 0);
        }
        if index > *at {
            let (mut skip, mut j) = (index - *at, 0usize);
            while skip > 0 && j < self.jumps.len() {
                if skip & 1 != 0 {
                    let (m1, m2) = &self.jumps[j];
                    let a = mat_vec(m1, &s[..3], MRG_M1);
                    let b = mat_vec(m2, &s[3..], MRG_M2);
                    *s = [a[0], a[1], a[2], b[0], b[1], b[2]];
                }
                skip >>= 1;
                j += 1;
            }
        }
        for o in out.iter_mut() {
            *o = Mrg::next(s);
        }
        *at = index.max(*at) + out.len() as u64;
    }
}

/// The reference MT19937 (Matsumoto and Nishimura), one stream.
#[derive(Debug)]
struct Mt19937 {
    mt: [u32; 624],
    i: usize,
    at: u64,
}

impl Mt19937 {
    fn new(seed: u32) -> Self {
        let mut mt = [0u32; 624];
        mt[0] = seed;
        for i in 1..624 {
            mt[i] = 1_812_433_253u32
                .wrapping_mul(mt[i - 1] ^ (mt[i - 1] >> 30))
                .wrapping_add(i as u32);
        }
        Self { mt, i: 624, at: 0 }
    }

    fn next(&mut self) -> u32 {
        if self.i >= 624 {
            for k in 0..624 {
                let y = (self.mt[k] & 0x8000_0000) | (self.mt[(k + 1) % 624] & 0x7fff_ffff);
                let mag = if y & 1 != 0 { 0x9908_b0df } else { 0 };
                self.mt[k] = self.mt[(k + 397) % 624] ^ (y >> 1) ^ mag;
            }
            self.i = 0;
        }
        let mut y = self.mt[self.i];
        self.i += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }
}

impl Streams for Mt19937 {
    fn threads(&self) -> u64 {
        1
    }
    fn block(&self) -> u64 {
        1
    }
    fn words(&mut self, _thread: u64, index: u64, out: &mut [u32]) {
        // One stream: skip forward by stepping (offsets are what the caller asked for).
        while self.at < index {
            self.next();
            self.at += 1;
        }
        for o in out.iter_mut() {
            *o = self.next();
        }
        self.at = index.max(self.at) + out.len() as u64;
    }
}

/// Sobol direction numbers and generation, 32- or 64-bit.
#[derive(Debug)]
struct Sobol<W> {
    /// `dirs[d][k]`: direction number `k` of dimension `d`.
    dirs: Vec<Vec<W>>,
}

trait SobolWord: Copy + Default + std::ops::BitXor<Output = Self> + std::fmt::Debug {
    const BITS: u32;
    fn from_m(m: u64, k: u32) -> Self;
    fn shr(self, s: u32) -> Self;
    fn bits32(self) -> u32;
    fn unit_f64(self) -> f64;
    fn unit_f32(self) -> f32;
    fn le(self, out: &mut Vec<u8>);
}

impl SobolWord for u32 {
    const BITS: u32 = 32;
    fn from_m(m: u64, k: u32) -> Self {
        (m << (31 - k)) as u32
    }
    fn shr(self, s: u32) -> Self {
        self.checked_shr(s).unwrap_or(0)
    }
    fn bits32(self) -> u32 {
        self
    }
    fn unit_f64(self) -> f64 {
        f64::from(self) * TWO_POW_32_INV_F64 + TWO_POW_32_INV_F64 / 2.0
    }
    fn unit_f32(self) -> f32 {
        uniform_f32(self)
    }
    fn le(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
}

impl SobolWord for u64 {
    const BITS: u32 = 64;
    fn from_m(m: u64, k: u32) -> Self {
        m << (63 - k)
    }
    fn shr(self, s: u32) -> Self {
        self.checked_shr(s).unwrap_or(0)
    }
    fn bits32(self) -> u32 {
        (self >> 32) as u32
    }
    fn unit_f64(self) -> f64 {
        self as f64 * TWO_POW_64_INV + TWO_POW_64_INV / 2.0
    }
    fn unit_f32(self) -> f32 {
        uniform_f32((self >> 32) as u32)
    }
    fn le(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
}

impl<W: SobolWord> Sobol<W> {
    fn new(dims: u32) -> Self {
        let bits = W::BITS;
        let mut dirs = Vec::with_capacity(dims as usize);
        // Dimension 1: van der Corput.
        dirs.push((0..bits).map(|k| W::from_m(1, k)).collect());
        for &(s, a, m) in JOE_KUO.iter().take(dims.saturating_sub(1) as usize) {
            let mut v: Vec<W> = Vec::with_capacity(bits as usize);
            for k in 0..bits {
                if k < s {
                    v.push(W::from_m(u64::from(m[k as usize]), k));
                } else {
                    let mut x = v[(k - s) as usize] ^ v[(k - s) as usize].shr(s);
                    for i in 1..s {
                        if (a >> (s - 1 - i)) & 1 != 0 {
                            x = x ^ v[(k - i) as usize];
                        }
                    }
                    v.push(x);
                }
            }
            dirs.push(v);
        }
        Self { dirs }
    }

    /// Point `index` of dimension `d` (Gray-code order).
    fn point(&self, d: usize, index: u64) -> W {
        let gray = index ^ (index >> 1);
        let mut x = W::default();
        for k in 0..W::BITS.min(64) {
            if gray >> k & 1 != 0 {
                x = x ^ self.dirs[d][k as usize];
            }
        }
        x
    }

    /// `n` numbers, dimension-major: `n / dims` points of dimension 1, then of 2, ...
    fn generate(&self, d: u32, n: u64, offset: u64, mean: f64, stddev: f64, out: &mut Vec<u8>) {
        let dims = self.dirs.len() as u64;
        let per = n / dims.max(1);
        for dim in 0..dims as usize {
            let mut x = self.point(dim, offset);
            for j in 0..per {
                let i = offset + j;
                if j > 0 {
                    // Gray code: point i differs from i - 1 by the direction number of the
                    // lowest zero bit of i - 1.
                    let c = (i - 1).trailing_ones() as usize;
                    if let Some(&v) = self.dirs[dim].get(c) {
                        x = x ^ v;
                    }
                }
                match d {
                    dist::BITS32 => out.extend_from_slice(&x.bits32().to_le_bytes()),
                    dist::BITS64 => x.le(out),
                    dist::UNIFORM_F32 => out.extend_from_slice(&x.unit_f32().to_le_bytes()),
                    dist::UNIFORM_F64 => out.extend_from_slice(&x.unit_f64().to_le_bytes()),
                    // Single precision starts from the single-precision uniform, as
                    // cuRAND does (so the middle point is exactly 0).
                    dist::NORMAL_F32 => {
                        let n = norm_inv(f64::from(x.unit_f32())) as f32;
                        out.extend_from_slice(&(mean as f32 + stddev as f32 * n).to_le_bytes())
                    }
                    dist::NORMAL_F64 => out
                        .extend_from_slice(&(mean + stddev * norm_inv(x.unit_f64())).to_le_bytes()),
                    dist::LOG_NORMAL_F32 => {
                        let n = norm_inv(f64::from(x.unit_f32())) as f32;
                        let v = (mean as f32 + stddev as f32 * n).exp();
                        out.extend_from_slice(&v.to_le_bytes())
                    }
                    dist::LOG_NORMAL_F64 => out.extend_from_slice(
                        &(mean + stddev * norm_inv(x.unit_f64())).exp().to_le_bytes(),
                    ),
                    _ => out.extend_from_slice(&poisson(mean, x.unit_f64()).to_le_bytes()),
                }
            }
        }
    }
}

#[rustfmt::skip]
/// Joe and Kuo's `new-joe-kuo-6.21201` Sobol parameters `(s, a, m_1..m_s)` of dimensions 2
/// to 400 (dimension 1 is the van der Corput sequence).
const JOE_KUO: &[(u32, u32, &[u32])] = &[
    (1, 0, &[1]), (2, 1, &[1, 3]), (3, 1, &[1, 3, 1]), (3, 2, &[1, 1, 1]), (4, 1, &[1, 1, 3, 3]),
    (4, 4, &[1, 3, 5, 13]), (5, 2, &[1, 1, 5, 5, 17]), (5, 4, &[1, 1, 5, 5, 5]),
    (5, 7, &[1, 1, 7, 11, 19]), (5, 11, &[1, 1, 5, 1, 1]), (5, 13, &[1, 1, 1, 3, 11]),
    (5, 14, &[1, 3, 5, 5, 31]), (6, 1, &[1, 3, 3, 9, 7, 49]), (6, 13, &[1, 1, 1, 15, 21, 21]),
    (6, 16, &[1, 3, 1, 13, 27, 49]), (6, 19, &[1, 1, 1, 15, 7, 5]),
    (6, 22, &[1, 3, 1, 15, 13, 25]), (6, 25, &[1, 1, 5, 5, 19, 61]),
    (7, 1, &[1, 3, 7, 11, 23, 15, 103]), (7, 4, &[1, 3, 7, 13, 13, 15, 69]),
    (7, 7, &[1, 1, 3, 13, 7, 35, 63]), (7, 8, &[1, 3, 5, 9, 1, 25, 53]),
    (7, 14, &[1, 3, 1, 13, 9, 35, 107]), (7, 19, &[1, 3, 1, 5, 27, 61, 31]),
    (7, 21, &[1, 1, 5, 11, 19, 41, 61]), (7, 28, &[1, 3, 5, 3, 3, 13, 69]),
    (7, 31, &[1, 1, 7, 13, 1, 19, 1]), (7, 32, &[1, 3, 7, 5, 13, 19, 59]),
    (7, 37, &[1, 1, 3, 9, 25, 29, 41]), (7, 41, &[1, 3, 5, 13, 23, 1, 55]),
    (7, 42, &[1, 3, 7, 3, 13, 59, 17]), (7, 50, &[1, 3, 1, 3, 5, 53, 69]),
    (7, 55, &[1, 1, 5, 5, 23, 33, 13]), (7, 56, &[1, 1, 7, 7, 1, 61, 123]),
    (7, 59, &[1, 1, 7, 9, 13, 61, 49]), (7, 62, &[1, 3, 3, 5, 3, 55, 33]),
    (8, 14, &[1, 3, 1, 15, 31, 13, 49, 245]), (8, 21, &[1, 3, 5, 15, 31, 59, 63, 97]),
    (8, 22, &[1, 3, 1, 11, 11, 11, 77, 249]), (8, 38, &[1, 3, 1, 11, 27, 43, 71, 9]),
    (8, 47, &[1, 1, 7, 15, 21, 11, 81, 45]), (8, 49, &[1, 3, 7, 3, 25, 31, 65, 79]),
    (8, 50, &[1, 3, 1, 1, 19, 11, 3, 205]), (8, 52, &[1, 1, 5, 9, 19, 21, 29, 157]),
    (8, 56, &[1, 3, 7, 11, 1, 33, 89, 185]), (8, 67, &[1, 3, 3, 3, 15, 9, 79, 71]),
    (8, 70, &[1, 3, 7, 11, 15, 39, 119, 27]), (8, 84, &[1, 1, 3, 1, 11, 31, 97, 225]),
    (8, 97, &[1, 1, 1, 3, 23, 43, 57, 177]), (8, 103, &[1, 3, 7, 7, 17, 17, 37, 71]),
    (8, 115, &[1, 3, 1, 5, 27, 63, 123, 213]), (8, 122, &[1, 1, 3, 5, 11, 43, 53, 133]),
    (9, 8, &[1, 3, 5, 5, 29, 17, 47, 173, 479]), (9, 13, &[1, 3, 3, 11, 3, 1, 109, 9, 69]),
    (9, 16, &[1, 1, 1, 5, 17, 39, 23, 5, 343]), (9, 22, &[1, 3, 1, 5, 25, 15, 31, 103, 499]),
    (9, 25, &[1, 1, 1, 11, 11, 17, 63, 105, 183]), (9, 44, &[1, 1, 5, 11, 9, 29, 97, 231, 363]),
    (9, 47, &[1, 1, 5, 15, 19, 45, 41, 7, 383]), (9, 52, &[1, 3, 7, 7, 31, 19, 83, 137, 221]),
    (9, 55, &[1, 1, 1, 3, 23, 15, 111, 223, 83]), (9, 59, &[1, 1, 5, 13, 31, 15, 55, 25, 161]),
    (9, 62, &[1, 1, 3, 13, 25, 47, 39, 87, 257]), (9, 67, &[1, 1, 1, 11, 21, 53, 125, 249, 293]),
    (9, 74, &[1, 1, 7, 11, 11, 7, 57, 79, 323]), (9, 81, &[1, 1, 5, 5, 17, 13, 81, 3, 131]),
    (9, 82, &[1, 1, 7, 13, 23, 7, 65, 251, 475]), (9, 87, &[1, 3, 5, 1, 9, 43, 3, 149, 11]),
    (9, 91, &[1, 1, 3, 13, 31, 13, 13, 255, 487]), (9, 94, &[1, 3, 3, 1, 5, 63, 89, 91, 127]),
    (9, 103, &[1, 1, 3, 3, 1, 19, 123, 127, 237]), (9, 104, &[1, 1, 5, 7, 23, 31, 37, 243, 289]),
    (9, 109, &[1, 1, 5, 11, 17, 53, 117, 183, 491]), (9, 122, &[1, 1, 1, 5, 1, 13, 13, 209, 345]),
    (9, 124, &[1, 1, 3, 15, 1, 57, 115, 7, 33]), (9, 137, &[1, 3, 1, 11, 7, 43, 81, 207, 175]),
    (9, 138, &[1, 3, 1, 1, 15, 27, 63, 255, 49]), (9, 143, &[1, 3, 5, 3, 27, 61, 105, 171, 305]),
    (9, 145, &[1, 1, 5, 3, 1, 3, 57, 249, 149]), (9, 152, &[1, 1, 3, 5, 5, 57, 15, 13, 159]),
    (9, 157, &[1, 1, 1, 11, 7, 11, 105, 141, 225]), (9, 167, &[1, 3, 3, 5, 27, 59, 121, 101, 271]),
    (9, 173, &[1, 3, 5, 9, 11, 49, 51, 59, 115]), (9, 176, &[1, 1, 7, 1, 23, 45, 125, 71, 419]),
    (9, 181, &[1, 1, 3, 5, 23, 5, 105, 109, 75]), (9, 182, &[1, 1, 7, 15, 7, 11, 67, 121, 453]),
    (9, 185, &[1, 3, 7, 3, 9, 13, 31, 27, 449]), (9, 191, &[1, 3, 1, 15, 19, 39, 39, 89, 15]),
    (9, 194, &[1, 1, 1, 1, 1, 33, 73, 145, 379]), (9, 199, &[1, 3, 1, 15, 15, 43, 29, 13, 483]),
    (9, 218, &[1, 1, 7, 3, 19, 27, 85, 131, 431]), (9, 220, &[1, 3, 3, 3, 5, 35, 23, 195, 349]),
    (9, 227, &[1, 3, 3, 7, 9, 27, 39, 59, 297]), (9, 229, &[1, 1, 3, 9, 11, 17, 13, 241, 157]),
    (9, 230, &[1, 3, 7, 15, 25, 57, 33, 189, 213]), (9, 234, &[1, 1, 7, 1, 9, 55, 73, 83, 217]),
    (9, 236, &[1, 3, 3, 13, 19, 27, 23, 113, 249]), (9, 241, &[1, 3, 5, 3, 23, 43, 3, 253, 479]),
    (9, 244, &[1, 1, 5, 5, 11, 5, 45, 117, 217]), (9, 253, &[1, 3, 3, 7, 29, 37, 33, 123, 147]),
    (10, 4, &[1, 3, 1, 15, 5, 5, 37, 227, 223, 459]),
    (10, 13, &[1, 1, 7, 5, 5, 39, 63, 255, 135, 487]),
    (10, 19, &[1, 3, 1, 7, 9, 7, 87, 249, 217, 599]),
    (10, 22, &[1, 1, 3, 13, 9, 47, 7, 225, 363, 247]),
    (10, 50, &[1, 3, 7, 13, 19, 13, 9, 67, 9, 737]),
    (10, 55, &[1, 3, 5, 5, 19, 59, 7, 41, 319, 677]),
    (10, 64, &[1, 1, 5, 3, 31, 63, 15, 43, 207, 789]),
    (10, 69, &[1, 1, 7, 9, 13, 39, 3, 47, 497, 169]),
    (10, 98, &[1, 3, 1, 7, 21, 17, 97, 19, 415, 905]),
    (10, 107, &[1, 3, 7, 1, 3, 31, 71, 111, 165, 127]),
    (10, 115, &[1, 1, 5, 11, 1, 61, 83, 119, 203, 847]),
    (10, 121, &[1, 3, 3, 13, 9, 61, 19, 97, 47, 35]),
    (10, 127, &[1, 1, 7, 7, 15, 29, 63, 95, 417, 469]),
    (10, 134, &[1, 3, 1, 9, 25, 9, 71, 57, 213, 385]),
    (10, 140, &[1, 3, 5, 13, 31, 47, 101, 57, 39, 341]),
    (10, 145, &[1, 1, 3, 3, 31, 57, 125, 173, 365, 551]),
    (10, 152, &[1, 3, 7, 1, 13, 57, 67, 157, 451, 707]),
    (10, 158, &[1, 1, 1, 7, 21, 13, 105, 89, 429, 965]),
    (10, 161, &[1, 1, 5, 9, 17, 51, 45, 119, 157, 141]),
    (10, 171, &[1, 3, 7, 7, 13, 45, 91, 9, 129, 741]),
    (10, 181, &[1, 3, 7, 1, 23, 57, 67, 141, 151, 571]),
    (10, 194, &[1, 1, 3, 11, 17, 47, 93, 107, 375, 157]),
    (10, 199, &[1, 3, 3, 5, 11, 21, 43, 51, 169, 915]),
    (10, 203, &[1, 1, 5, 3, 15, 55, 101, 67, 455, 625]),
    (10, 208, &[1, 3, 5, 9, 1, 23, 29, 47, 345, 595]),
    (10, 227, &[1, 3, 7, 7, 5, 49, 29, 155, 323, 589]),
    (10, 242, &[1, 3, 3, 7, 5, 41, 127, 61, 261, 717]),
    (10, 251, &[1, 3, 7, 7, 17, 23, 117, 67, 129, 1009]),
    (10, 253, &[1, 1, 3, 13, 11, 39, 21, 207, 123, 305]),
    (10, 265, &[1, 1, 3, 9, 29, 3, 95, 47, 231, 73]),
    (10, 266, &[1, 3, 1, 9, 1, 29, 117, 21, 441, 259]),
    (10, 274, &[1, 3, 1, 13, 21, 39, 125, 211, 439, 723]),
    (10, 283, &[1, 1, 7, 3, 17, 63, 115, 89, 49, 773]),
    (10, 289, &[1, 3, 7, 13, 11, 33, 101, 107, 63, 73]),
    (10, 295, &[1, 1, 5, 5, 13, 57, 63, 135, 437, 177]),
    (10, 301, &[1, 1, 3, 7, 27, 63, 93, 47, 417, 483]),
    (10, 316, &[1, 1, 3, 1, 23, 29, 1, 191, 49, 23]),
    (10, 319, &[1, 1, 3, 15, 25, 55, 9, 101, 219, 607]),
    (10, 324, &[1, 3, 1, 7, 7, 19, 51, 251, 393, 307]),
    (10, 346, &[1, 3, 3, 3, 25, 55, 17, 75, 337, 3]),
    (10, 352, &[1, 1, 1, 13, 25, 17, 65, 45, 479, 413]),
    (10, 361, &[1, 1, 7, 7, 27, 49, 99, 161, 213, 727]),
    (10, 367, &[1, 3, 5, 1, 23, 5, 43, 41, 251, 857]),
    (10, 382, &[1, 3, 3, 7, 11, 61, 39, 87, 383, 835]),
    (10, 395, &[1, 1, 3, 15, 13, 7, 29, 7, 505, 923]),
    (10, 398, &[1, 3, 7, 1, 5, 31, 47, 157, 445, 501]),
    (10, 400, &[1, 1, 3, 7, 1, 43, 9, 147, 115, 605]),
    (10, 412, &[1, 3, 3, 13, 5, 1, 119, 211, 455, 1001]),
    (10, 419, &[1, 1, 3, 5, 13, 19, 3, 243, 75, 843]),
    (10, 422, &[1, 3, 7, 7, 1, 19, 91, 249, 357, 589]),
    (10, 426, &[1, 1, 1, 9, 1, 25, 109, 197, 279, 411]),
    (10, 428, &[1, 3, 1, 15, 23, 57, 59, 135, 191, 75]),
    (10, 433, &[1, 1, 5, 15, 29, 21, 39, 253, 383, 349]),
    (10, 446, &[1, 3, 3, 5, 19, 45, 61, 151, 199, 981]),
    (10, 454, &[1, 3, 5, 13, 9, 61, 107, 141, 141, 1]),
    (10, 457, &[1, 3, 1, 11, 27, 25, 85, 105, 309, 979]),
    (10, 472, &[1, 3, 3, 11, 19, 7, 115, 223, 349, 43]),
    (10, 493, &[1, 1, 7, 9, 21, 39, 123, 21, 275, 927]),
    (10, 505, &[1, 1, 7, 13, 15, 41, 47, 243, 303, 437]),
    (10, 508, &[1, 1, 1, 7, 7, 3, 15, 99, 409, 719]),
    (11, 2, &[1, 3, 3, 15, 27, 49, 113, 123, 113, 67, 469]),
    (11, 11, &[1, 3, 7, 11, 3, 23, 87, 169, 119, 483, 199]),
    (11, 21, &[1, 1, 5, 15, 7, 17, 109, 229, 179, 213, 741]),
    (11, 22, &[1, 1, 5, 13, 11, 17, 25, 135, 403, 557, 1433]),
    (11, 35, &[1, 3, 1, 1, 1, 61, 67, 215, 189, 945, 1243]),
    (11, 49, &[1, 1, 7, 13, 17, 33, 9, 221, 429, 217, 1679]),
    (11, 50, &[1, 1, 3, 11, 27, 3, 15, 93, 93, 865, 1049]),
    (11, 56, &[1, 3, 7, 7, 25, 41, 121, 35, 373, 379, 1547]),
    (11, 61, &[1, 3, 3, 9, 11, 35, 45, 205, 241, 9, 59]),
    (11, 70, &[1, 3, 1, 7, 3, 51, 7, 177, 53, 975, 89]),
    (11, 74, &[1, 1, 3, 5, 27, 1, 113, 231, 299, 759, 861]),
    (11, 79, &[1, 3, 3, 15, 25, 29, 5, 255, 139, 891, 2031]),
    (11, 84, &[1, 3, 1, 1, 13, 9, 109, 193, 419, 95, 17]),
    (11, 88, &[1, 1, 7, 9, 3, 7, 29, 41, 135, 839, 867]),
    (11, 103, &[1, 1, 7, 9, 25, 49, 123, 217, 113, 909, 215]),
    (11, 104, &[1, 1, 7, 3, 23, 15, 43, 133, 217, 327, 901]),
    (11, 112, &[1, 1, 3, 3, 13, 53, 63, 123, 477, 711, 1387]),
    (11, 115, &[1, 1, 3, 15, 7, 29, 75, 119, 181, 957, 247]),
    (11, 117, &[1, 1, 1, 11, 27, 25, 109, 151, 267, 99, 1461]),
    (11, 122, &[1, 3, 7, 15, 5, 5, 53, 145, 11, 725, 1501]),
    (11, 134, &[1, 3, 7, 1, 9, 43, 71, 229, 157, 607, 1835]),
    (11, 137, &[1, 3, 3, 13, 25, 1, 5, 27, 471, 349, 127]),
    (11, 146, &[1, 1, 1, 1, 23, 37, 9, 221, 269, 897, 1685]),
    (11, 148, &[1, 1, 3, 3, 31, 29, 51, 19, 311, 553, 1969]),
    (11, 157, &[1, 3, 7, 5, 5, 55, 17, 39, 475, 671, 1529]),
    (11, 158, &[1, 1, 7, 1, 1, 35, 47, 27, 437, 395, 1635]),
    (11, 162, &[1, 1, 7, 3, 13, 23, 43, 135, 327, 139, 389]),
    (11, 164, &[1, 3, 7, 3, 9, 25, 91, 25, 429, 219, 513]),
    (11, 168, &[1, 1, 3, 5, 13, 29, 119, 201, 277, 157, 2043]),
    (11, 173, &[1, 3, 5, 3, 29, 57, 13, 17, 167, 739, 1031]),
    (11, 185, &[1, 3, 3, 5, 29, 21, 95, 27, 255, 679, 1531]),
    (11, 186, &[1, 3, 7, 15, 9, 5, 21, 71, 61, 961, 1201]),
    (11, 191, &[1, 3, 5, 13, 15, 57, 33, 93, 459, 867, 223]),
    (11, 193, &[1, 1, 1, 15, 17, 43, 127, 191, 67, 177, 1073]),
    (11, 199, &[1, 1, 1, 15, 23, 7, 21, 199, 75, 293, 1611]),
    (11, 213, &[1, 3, 7, 13, 15, 39, 21, 149, 65, 741, 319]),
    (11, 214, &[1, 3, 7, 11, 23, 13, 101, 89, 277, 519, 711]),
    (11, 220, &[1, 3, 7, 15, 19, 27, 85, 203, 441, 97, 1895]),
    (11, 227, &[1, 3, 1, 3, 29, 25, 21, 155, 11, 191, 197]),
    (11, 236, &[1, 1, 7, 5, 27, 11, 81, 101, 457, 675, 1687]),
    (11, 242, &[1, 3, 1, 5, 25, 5, 65, 193, 41, 567, 781]),
    (11, 251, &[1, 3, 1, 5, 11, 15, 113, 77, 411, 695, 1111]),
    (11, 256, &[1, 1, 3, 9, 11, 53, 119, 171, 55, 297, 509]),
    (11, 259, &[1, 1, 1, 1, 11, 39, 113, 139, 165, 347, 595]),
    (11, 265, &[1, 3, 7, 11, 9, 17, 101, 13, 81, 325, 1733]),
    (11, 266, &[1, 3, 1, 1, 21, 43, 115, 9, 113, 907, 645]),
    (11, 276, &[1, 1, 7, 3, 9, 25, 117, 197, 159, 471, 475]),
    (11, 292, &[1, 3, 1, 9, 11, 21, 57, 207, 485, 613, 1661]),
    (11, 304, &[1, 1, 7, 7, 27, 55, 49, 223, 89, 85, 1523]),
    (11, 310, &[1, 1, 5, 3, 19, 41, 45, 51, 447, 299, 1355]),
    (11, 316, &[1, 3, 1, 13, 1, 33, 117, 143, 313, 187, 1073]),
    (11, 319, &[1, 1, 7, 7, 5, 11, 65, 97, 377, 377, 1501]),
    (11, 322, &[1, 3, 1, 1, 21, 35, 95, 65, 99, 23, 1239]),
    (11, 328, &[1, 1, 5, 9, 3, 37, 95, 167, 115, 425, 867]),
    (11, 334, &[1, 3, 3, 13, 1, 37, 27, 189, 81, 679, 773]),
    (11, 339, &[1, 1, 3, 11, 1, 61, 99, 233, 429, 969, 49]),
    (11, 341, &[1, 1, 1, 7, 25, 63, 99, 165, 245, 793, 1143]),
    (11, 345, &[1, 1, 5, 11, 11, 43, 55, 65, 71, 283, 273]),
    (11, 346, &[1, 1, 5, 5, 9, 3, 101, 251, 355, 379, 1611]),
    (11, 362, &[1, 1, 1, 15, 21, 63, 85, 99, 49, 749, 1335]),
    (11, 367, &[1, 1, 5, 13, 27, 9, 121, 43, 255, 715, 289]),
    (11, 372, &[1, 3, 1, 5, 27, 19, 17, 223, 77, 571, 1415]),
    (11, 375, &[1, 1, 5, 3, 13, 59, 125, 251, 195, 551, 1737]),
    (11, 376, &[1, 3, 3, 15, 13, 27, 49, 105, 389, 971, 755]),
    (11, 381, &[1, 3, 5, 15, 23, 43, 35, 107, 447, 763, 253]),
    (11, 385, &[1, 3, 5, 11, 21, 3, 17, 39, 497, 407, 611]),
    (11, 388, &[1, 1, 7, 13, 15, 31, 113, 17, 23, 507, 1995]),
    (11, 392, &[1, 1, 7, 15, 3, 15, 31, 153, 423, 79, 503]),
    (11, 409, &[1, 1, 7, 9, 19, 25, 23, 171, 505, 923, 1989]),
    (11, 415, &[1, 1, 5, 9, 21, 27, 121, 223, 133, 87, 697]),
    (11, 416, &[1, 1, 5, 5, 9, 19, 107, 99, 319, 765, 1461]),
    (11, 421, &[1, 1, 3, 3, 19, 25, 3, 101, 171, 729, 187]),
    (11, 428, &[1, 1, 3, 1, 13, 23, 85, 93, 291, 209, 37]),
    (11, 431, &[1, 1, 1, 15, 25, 25, 77, 253, 333, 947, 1073]),
    (11, 434, &[1, 1, 3, 9, 17, 29, 55, 47, 255, 305, 2037]),
    (11, 439, &[1, 3, 3, 9, 29, 63, 9, 103, 489, 939, 1523]),
    (11, 446, &[1, 3, 7, 15, 7, 31, 89, 175, 369, 339, 595]),
    (11, 451, &[1, 3, 7, 13, 25, 5, 71, 207, 251, 367, 665]),
    (11, 453, &[1, 3, 3, 3, 21, 25, 75, 35, 31, 321, 1603]),
    (11, 457, &[1, 1, 1, 9, 11, 1, 65, 5, 11, 329, 535]),
    (11, 458, &[1, 1, 5, 3, 19, 13, 17, 43, 379, 485, 383]),
    (11, 471, &[1, 3, 5, 13, 13, 9, 85, 147, 489, 787, 1133]),
    (11, 475, &[1, 3, 1, 1, 5, 51, 37, 129, 195, 297, 1783]),
    (11, 478, &[1, 1, 3, 15, 19, 57, 59, 181, 455, 697, 2033]),
    (11, 484, &[1, 3, 7, 1, 27, 9, 65, 145, 325, 189, 201]),
    (11, 493, &[1, 3, 1, 15, 31, 23, 19, 5, 485, 581, 539]),
    (11, 494, &[1, 1, 7, 13, 11, 15, 65, 83, 185, 847, 831]),
    (11, 499, &[1, 3, 5, 7, 7, 55, 73, 15, 303, 511, 1905]),
    (11, 502, &[1, 3, 5, 9, 7, 21, 45, 15, 397, 385, 597]),
    (11, 517, &[1, 3, 7, 3, 23, 13, 73, 221, 511, 883, 1265]),
    (11, 518, &[1, 1, 3, 11, 1, 51, 73, 185, 33, 975, 1441]),
    (11, 524, &[1, 3, 3, 9, 19, 59, 21, 39, 339, 37, 143]),
    (11, 527, &[1, 1, 7, 1, 31, 33, 19, 167, 117, 635, 639]),
    (11, 555, &[1, 1, 1, 3, 5, 13, 59, 83, 355, 349, 1967]),
    (11, 560, &[1, 1, 1, 5, 19, 3, 53, 133, 97, 863, 983]),
    (11, 565, &[1, 3, 1, 13, 9, 41, 91, 105, 173, 97, 625]),
    (11, 569, &[1, 1, 5, 3, 7, 49, 115, 133, 71, 231, 1063]),
    (11, 578, &[1, 1, 7, 5, 17, 43, 47, 45, 497, 547, 757]),
    (11, 580, &[1, 3, 5, 15, 21, 61, 123, 191, 249, 31, 631]),
    (11, 587, &[1, 3, 7, 9, 17, 7, 11, 185, 127, 169, 1951]),
    (11, 589, &[1, 1, 5, 13, 11, 11, 9, 49, 29, 125, 791]),
    (11, 590, &[1, 1, 1, 15, 31, 41, 13, 167, 273, 429, 57]),
    (11, 601, &[1, 3, 5, 3, 27, 7, 35, 209, 65, 265, 1393]),
    (11, 607, &[1, 3, 1, 13, 31, 19, 53, 143, 135, 9, 1021]),
    (11, 611, &[1, 1, 7, 13, 31, 5, 115, 153, 143, 957, 623]),
    (11, 614, &[1, 1, 5, 11, 25, 19, 29, 31, 297, 943, 443]),
    (11, 617, &[1, 3, 3, 5, 21, 11, 127, 81, 479, 25, 699]),
    (11, 618, &[1, 1, 3, 11, 25, 31, 97, 19, 195, 781, 705]),
    (11, 625, &[1, 1, 5, 5, 31, 11, 75, 207, 197, 885, 2037]),
    (11, 628, &[1, 1, 1, 11, 9, 23, 29, 231, 307, 17, 1497]),
    (11, 635, &[1, 1, 5, 11, 11, 43, 111, 233, 307, 523, 1259]),
    (11, 641, &[1, 1, 7, 5, 1, 21, 107, 229, 343, 933, 217]),
    (11, 647, &[1, 1, 1, 11, 3, 21, 125, 131, 405, 599, 1469]),
    (11, 654, &[1, 3, 5, 5, 9, 39, 33, 81, 389, 151, 811]),
    (11, 659, &[1, 1, 7, 7, 7, 1, 59, 223, 265, 529, 2021]),
    (11, 662, &[1, 3, 1, 3, 9, 23, 85, 181, 47, 265, 49]),
    (11, 672, &[1, 3, 5, 11, 19, 23, 9, 7, 157, 299, 1983]),
    (11, 675, &[1, 3, 1, 5, 15, 5, 21, 105, 29, 339, 1041]),
    (11, 682, &[1, 1, 1, 1, 5, 33, 65, 85, 111, 705, 479]),
    (11, 684, &[1, 1, 1, 7, 9, 35, 77, 87, 151, 321, 101]),
    (11, 689, &[1, 1, 5, 7, 17, 1, 51, 197, 175, 811, 1229]),
    (11, 695, &[1, 3, 3, 15, 23, 37, 85, 185, 239, 543, 731]),
    (11, 696, &[1, 3, 1, 7, 7, 55, 111, 109, 289, 439, 243]),
    (11, 713, &[1, 1, 7, 11, 17, 53, 35, 217, 259, 853, 1667]),
    (11, 719, &[1, 3, 1, 9, 1, 63, 87, 17, 73, 565, 1091]),
    (11, 724, &[1, 1, 3, 3, 11, 41, 1, 57, 295, 263, 1029]),
    (11, 733, &[1, 1, 5, 1, 27, 45, 109, 161, 411, 421, 1395]),
    (11, 734, &[1, 3, 5, 11, 25, 35, 47, 191, 339, 417, 1727]),
    (11, 740, &[1, 1, 5, 15, 21, 1, 93, 251, 351, 217, 1767]),
    (11, 747, &[1, 3, 3, 11, 3, 7, 75, 155, 313, 211, 491]),
    (11, 749, &[1, 3, 3, 5, 11, 9, 101, 161, 453, 913, 1067]),
    (11, 752, &[1, 1, 3, 1, 15, 45, 127, 141, 163, 727, 1597]),
    (11, 755, &[1, 3, 3, 7, 1, 33, 63, 73, 73, 341, 1691]),
    (11, 762, &[1, 3, 5, 13, 15, 39, 53, 235, 77, 99, 949]),
    (11, 770, &[1, 1, 5, 13, 31, 17, 97, 13, 215, 301, 1927]),
    (11, 782, &[1, 1, 7, 1, 1, 37, 91, 93, 441, 251, 1131]),
    (11, 784, &[1, 3, 7, 9, 25, 5, 105, 69, 81, 943, 1459]),
    (11, 787, &[1, 3, 7, 11, 31, 43, 13, 209, 27, 1017, 501]),
    (11, 789, &[1, 1, 7, 15, 1, 33, 31, 233, 161, 507, 387]),
    (11, 793, &[1, 3, 3, 5, 5, 53, 33, 177, 503, 627, 1927]),
    (11, 796, &[1, 1, 7, 11, 7, 61, 119, 31, 457, 229, 1875]),
    (11, 803, &[1, 1, 5, 15, 19, 5, 53, 201, 157, 885, 1057]),
    (11, 805, &[1, 3, 7, 9, 1, 35, 51, 113, 249, 425, 1009]),
    (11, 810, &[1, 3, 5, 7, 21, 53, 37, 155, 119, 345, 631]),
    (11, 815, &[1, 3, 5, 7, 15, 31, 109, 69, 503, 595, 1879]),
    (11, 824, &[1, 3, 3, 1, 25, 35, 65, 131, 403, 705, 503]),
    (11, 829, &[1, 3, 7, 7, 19, 33, 11, 153, 45, 633, 499]),
    (11, 830, &[1, 3, 3, 5, 11, 3, 29, 93, 487, 33, 703]),
    (11, 832, &[1, 1, 3, 15, 21, 53, 107, 179, 387, 927, 1757]),
    (11, 841, &[1, 1, 3, 7, 21, 45, 51, 147, 175, 317, 361]),
    (11, 847, &[1, 1, 1, 7, 7, 13, 15, 243, 269, 795, 1965]),
    (11, 849, &[1, 1, 3, 5, 19, 33, 57, 115, 443, 537, 627]),
    (11, 861, &[1, 3, 3, 9, 3, 39, 25, 61, 185, 717, 1049]),
    (11, 871, &[1, 3, 7, 3, 7, 37, 107, 153, 7, 269, 1581]),
    (11, 878, &[1, 1, 7, 3, 7, 41, 91, 41, 145, 489, 1245]),
    (11, 889, &[1, 1, 5, 9, 7, 7, 105, 81, 403, 407, 283]),
    (11, 892, &[1, 1, 7, 9, 27, 55, 29, 77, 193, 963, 949]),
    (11, 901, &[1, 1, 5, 3, 25, 51, 107, 63, 403, 917, 815]),
    (11, 908, &[1, 1, 7, 3, 7, 61, 19, 51, 457, 599, 535]),
    (11, 920, &[1, 3, 7, 1, 23, 51, 105, 153, 239, 215, 1847]),
    (11, 923, &[1, 1, 3, 5, 27, 23, 79, 49, 495, 45, 1935]),
    (11, 942, &[1, 1, 1, 11, 11, 47, 55, 133, 495, 999, 1461]),
    (11, 949, &[1, 1, 3, 15, 27, 51, 93, 17, 355, 763, 1675]),
    (11, 950, &[1, 3, 1, 3, 1, 3, 79, 119, 499, 17, 995]),
    (11, 954, &[1, 1, 1, 1, 15, 43, 45, 17, 167, 973, 799]),
    (11, 961, &[1, 1, 1, 3, 27, 49, 89, 29, 483, 913, 2023]),
    (11, 968, &[1, 1, 3, 3, 5, 11, 75, 7, 41, 851, 611]),
    (11, 971, &[1, 3, 1, 3, 7, 57, 39, 123, 257, 283, 507]),
    (11, 973, &[1, 3, 3, 11, 27, 23, 113, 229, 187, 299, 133]),
    (11, 979, &[1, 1, 3, 13, 9, 63, 101, 77, 451, 169, 337]),
    (11, 982, &[1, 3, 7, 3, 3, 59, 45, 195, 229, 415, 409]),
    (11, 986, &[1, 3, 5, 3, 11, 19, 71, 93, 43, 857, 369]),
    (11, 998, &[1, 3, 7, 9, 19, 33, 115, 19, 241, 703, 247]),
    (11, 1001, &[1, 3, 5, 11, 5, 35, 21, 155, 463, 1005, 1073]),
    (11, 1010, &[1, 3, 7, 3, 25, 15, 109, 83, 93, 69, 1189]),
    (11, 1012, &[1, 3, 5, 7, 5, 21, 93, 133, 135, 167, 903]),
    (12, 41, &[1, 1, 7, 7, 3, 59, 121, 161, 285, 815, 1769, 3705]),
    (12, 52, &[1, 3, 1, 1, 3, 47, 103, 171, 381, 609, 185, 373]),
    (12, 61, &[1, 3, 3, 15, 23, 33, 107, 131, 441, 445, 689, 2059]),
    (12, 62, &[1, 3, 3, 11, 7, 53, 101, 167, 435, 803, 1255, 3781]),
    (12, 76, &[1, 1, 5, 11, 15, 59, 41, 19, 135, 835, 1263, 505]),
    (12, 104, &[1, 1, 7, 11, 21, 49, 23, 219, 127, 961, 1065, 385]),
    (12, 117, &[1, 3, 5, 15, 7, 47, 117, 217, 45, 731, 1639, 733]),
    (12, 131, &[1, 1, 7, 11, 27, 57, 91, 87, 81, 35, 1269, 1007]),
    (12, 143, &[1, 1, 3, 11, 15, 37, 53, 219, 193, 937, 1899, 3733]),
    (12, 145, &[1, 3, 5, 3, 13, 11, 27, 19, 199, 393, 965, 2195]),
    (12, 157, &[1, 3, 1, 3, 5, 1, 37, 173, 413, 1023, 553, 409]),
    (12, 167, &[1, 3, 1, 7, 15, 29, 123, 95, 255, 373, 1799, 3841]),
    (12, 171, &[1, 3, 5, 13, 21, 57, 51, 17, 511, 195, 1157, 1831]),
    (12, 176, &[1, 1, 1, 15, 29, 19, 7, 73, 295, 519, 587, 3523]),
    (12, 181, &[1, 1, 5, 13, 13, 35, 115, 191, 123, 535, 717, 1661]),
    (12, 194, &[1, 3, 3, 5, 23, 21, 47, 251, 379, 921, 1119, 297]),
    (12, 217, &[1, 3, 3, 9, 29, 53, 121, 201, 135, 193, 523, 2943]),
    (12, 236, &[1, 1, 1, 7, 29, 45, 125, 9, 99, 867, 425, 601]),
    (12, 239, &[1, 3, 1, 9, 13, 15, 67, 181, 109, 293, 1305, 3079]),
    (12, 262, &[1, 3, 3, 9, 5, 35, 15, 209, 305, 87, 767, 2795]),
    (12, 283, &[1, 3, 3, 11, 27, 57, 113, 123, 179, 643, 149, 523]),
    (12, 286, &[1, 1, 3, 15, 11, 17, 67, 223, 63, 657, 335, 3309]),
    (12, 307, &[1, 1, 1, 9, 25, 29, 109, 159, 39, 513, 571, 1761]),
    (12, 313, &[1, 1, 3, 1, 5, 63, 75, 19, 455, 601, 123, 691]),
    (12, 319, &[1, 1, 1, 3, 21, 5, 45, 169, 377, 513, 1951, 2565]),
    (12, 348, &[1, 1, 3, 11, 3, 33, 119, 69, 253, 907, 805, 1449]),
    (12, 352, &[1, 1, 5, 13, 31, 15, 17, 7, 499, 61, 687, 1867]),
    (12, 357, &[1, 3, 7, 11, 17, 33, 73, 77, 299, 243, 641, 2345]),
    (12, 391, &[1, 1, 7, 11, 9, 35, 31, 235, 359, 647, 379, 1161]),
    (12, 398, &[1, 3, 3, 15, 31, 25, 5, 67, 33, 45, 437, 4067]),
    (12, 400, &[1, 1, 3, 11, 7, 17, 37, 87, 333, 253, 1517, 2921]),
    (12, 412, &[1, 1, 7, 15, 7, 15, 107, 189, 153, 769, 1521, 3427]),
    (12, 415, &[1, 3, 5, 13, 5, 61, 113, 37, 293, 393, 113, 43]),
    (12, 422, &[1, 1, 1, 15, 29, 43, 107, 31, 167, 147, 301, 1021]),
    (12, 440, &[1, 1, 1, 13, 3, 1, 35, 93, 195, 181, 2027, 1491]),
    (12, 460, &[1, 3, 3, 3, 13, 33, 77, 199, 153, 221, 1699, 3671]),
    (12, 465, &[1, 3, 5, 13, 7, 49, 123, 155, 495, 681, 819, 809]),
    (12, 468, &[1, 3, 5, 15, 27, 61, 117, 189, 183, 887, 617, 4053]),
    (12, 515, &[1, 1, 1, 7, 31, 59, 125, 235, 389, 369, 447, 1039]),
    (12, 536, &[1, 3, 5, 1, 5, 39, 115, 89, 249, 377, 431, 3747]),
    (12, 539, &[1, 1, 1, 5, 7, 47, 59, 157, 77, 445, 699, 3439]),
    (12, 551, &[1, 1, 3, 5, 11, 21, 19, 75, 11, 599, 1575, 735]),
    (12, 558, &[1, 3, 5, 3, 19, 13, 41, 69, 199, 143, 1761, 3215]),
    (12, 563, &[1, 3, 5, 7, 19, 43, 25, 41, 41, 11, 1647, 2783]),
    (12, 570, &[1, 3, 1, 9, 19, 45, 111, 97, 405, 399, 457, 3219]),
    (12, 595, &[1, 1, 3, 1, 23, 15, 65, 121, 59, 985, 829, 2259]),
    (12, 598, &[1, 1, 3, 7, 17, 13, 107, 229, 75, 551, 1299, 2363]),
    (12, 617, &[1, 1, 5, 5, 21, 57, 23, 199, 509, 139, 2007, 3875]),
    (12, 647, &[1, 3, 1, 11, 19, 53, 15, 229, 215, 741, 695, 823]),
    (12, 654, &[1, 3, 7, 1, 29, 3, 17, 163, 417, 559, 549, 319]),
    (12, 678, &[1, 3, 1, 13, 17, 9, 47, 133, 365, 7, 1937, 1071]),
    (12, 713, &[1, 3, 5, 7, 19, 37, 55, 163, 301, 249, 689, 2327]),
    (12, 738, &[1, 3, 5, 13, 11, 23, 61, 205, 257, 377, 615, 1457]),
    (12, 747, &[1, 3, 5, 1, 23, 37, 13, 75, 331, 495, 579, 3367]),
    (12, 750, &[1, 1, 1, 9, 1, 23, 49, 129, 475, 543, 883, 2531]),
    (12, 757, &[1, 3, 1, 5, 23, 59, 51, 35, 343, 695, 219, 369]),
    (12, 772, &[1, 3, 3, 1, 27, 17, 63, 97, 71, 507, 1929, 613]),
    (12, 803, &[1, 1, 5, 1, 21, 31, 11, 109, 247, 409, 1817, 2173]),
    (12, 810, &[1, 1, 3, 15, 23, 9, 7, 209, 301, 23, 147, 1691]),
    (12, 812, &[1, 1, 7, 5, 5, 19, 37, 229, 249, 277, 1115, 2309]),
    (12, 850, &[1, 1, 1, 5, 5, 63, 5, 249, 285, 431, 343, 2467]),
    (12, 862, &[1, 1, 1, 11, 7, 45, 35, 75, 505, 537, 29, 2919]),
    (12, 906, &[1, 3, 5, 15, 11, 39, 15, 63, 263, 9, 199, 445]),
];

#[cfg(test)]
mod tests {
    //! Known-answer vectors recorded from NVIDIA's `libcurand.so.10` (10.4.0) host
    //! generators, seed 1234.

    use super::*;

    fn gen_(rng_type: u32, dims: u64, offset: u64, d: u32, n: u64) -> Vec<u8> {
        let mut r = Rand::default();
        let h = r.create(rng_type, true).unwrap();
        if rng_type < 200 {
            r.set(h, set::SEED, 1234).unwrap();
        } else {
            r.set(h, set::DIMENSIONS, dims).unwrap();
        }
        if offset != 0 {
            r.set(h, set::OFFSET, offset).unwrap();
        }
        r.generate(&RandGenerateReq {
            handle: h,
            n,
            dist: d,
            flags: vcuda_protocol::lib::RAND_TO_HOST,
            stddev: 1.0,
            ..Default::default()
        })
        .unwrap()
    }

    fn u32s(b: &[u8]) -> Vec<u32> {
        b.chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }

    fn u64s(b: &[u8]) -> Vec<u64> {
        b.chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }

    #[test]
    fn xorwow_matches_curand() {
        let w = u32s(&gen_(rng::XORWOW, 1, 0, dist::BITS32, 8192));
        assert_eq!(w[..4], [624778773, 3522650202, 2363946744, 1266286439]);
        assert_eq!(w[4096..4098], [1867875844, 3978931785]);
        let w = u32s(&gen_(rng::XORWOW, 1, 123_456_789, dist::BITS32, 16));
        assert_eq!(w[..4], [3652758176, 1350137692, 4060982905, 2957961961]);
        let f = u32s(&gen_(rng::XORWOW, 1, 0, dist::UNIFORM_F32, 8));
        assert_eq!(f[..4], [0x3e14f578, 0x3f51f760, 0x3f0ce6f7, 0x3e96f3ff]);
        let d = u64s(&gen_(rng::XORWOW, 1, 0, dist::UNIFORM_F64, 8));
        assert_eq!(
            d[..4],
            [
                0x3fdbd561cb7abc2b,
                0x3feda53518d7605a,
                0x3fe9faa2cee6f6f8,
                0x3fd3bf5f4073fecf
            ]
        );
        let d = u64s(&gen_(rng::XORWOW, 1, 0, dist::NORMAL_F64, 8));
        assert_eq!(
            d[..4],
            [
                0x3fd6f597c59bea1a,
                0xbff3d55ef2db6411,
                0xbfb76c3e15c318a6,
                0xbfd853de628f3853
            ]
        );
        let f = u32s(&gen_(rng::XORWOW, 1, 0, dist::NORMAL_F32, 8));
        assert_eq!(f[..4], [0x3f47ede2, 0xbfe69a1d, 0xbe8fcb62, 0x3f104497]);
    }

    #[test]
    fn philox_matches_curand() {
        let w = u32s(&gen_(rng::PHILOX, 1, 0, dist::BITS32, 300_000));
        assert_eq!(
            w[..8],
            [
                546353992, 3665621163, 1140953199, 3419031310, 3507855656, 1392278645, 3354607383,
                253049307
            ]
        );
        assert_eq!(
            w[262144..262148],
            [2666454581, 482218876, 4196888723, 343858512]
        );
        let w = u32s(&gen_(rng::PHILOX, 1, 1_000_003, dist::BITS32, 16));
        assert_eq!(w[..4], [291079082, 4281912557, 1355451987, 683243834]);
        let f = u32s(&gen_(rng::PHILOX, 1, 0, dist::UNIFORM_F32, 8));
        assert_eq!(f[..4], [0x3e0242cd, 0x3f5a7cf1, 0x3e880321, 0x3f4bca47]);
        let f = u32s(&gen_(rng::PHILOX, 1, 0, dist::NORMAL_F32, 8));
        assert_eq!(
            f,
            [
                0xbfcee929, 0x3f9d54f7, 0xbfc7bfca, 0x3eede2da, 0x3f118648, 0xbe926102, 0x3e82393a,
                0x3f27c73e
            ]
        );
        let f = u32s(&gen_(rng::MRG32K3A, 1, 0, dist::NORMAL_F32, 8));
        assert_eq!(
            f,
            [
                0xbeb8a79d, 0xbf175e36, 0xbfdbf901, 0xbf66d00b, 0x3eb01397, 0x3e09011f, 0x3e0d46e8,
                0x3db75649
            ]
        );
        let d = u64s(&gen_(rng::PHILOX, 1, 0, dist::UNIFORM_F64, 8));
        assert_eq!(
            d[..4],
            [
                0x3feb4f9e35f0b348,
                0x3fe97948a5c19070,
                0x3fbcbe178b76f1ac,
                0x3fb47eda813b849c
            ]
        );
        let d = u64s(&gen_(rng::PHILOX, 1, 0, dist::NORMAL_F64, 8));
        assert_eq!(
            d[..4],
            [
                0xbfe143cd7d47b538,
                0x3fc48fa22ccec992,
                0x3ff02192defaa9c0,
                0x3ffd50e49657caf7
            ]
        );
    }

    #[test]
    fn mrg32k3a_matches_curand() {
        let w = u32s(&gen_(rng::MRG32K3A, 1, 0, dist::BITS32, 81921));
        assert_eq!(w[..4], [3379073520, 653317650, 4012281984, 4237272334]);
        assert_eq!(w[81920], 2521876100);
        let f = u32s(&gen_(rng::MRG32K3A, 1, 0, dist::UNIFORM_F32, 4));
        assert_eq!(f, [0x3f496892, 0x3e1bc358, 0x3f6f2691, 0x3f7c8fa5]);
        let d = u64s(&gen_(rng::MRG32K3A, 1, 0, dist::UNIFORM_F64, 2));
        assert_eq!(d, [0x3fe92d123e0dcbe5, 0x3fc3786b09654f63]);
        let d = u64s(&gen_(rng::MRG32K3A, 1, 0, dist::NORMAL_F64, 2));
        assert_eq!(d, [0xbfd714f307ceeb21, 0xbfe2ebc6fa79b86d]);
    }

    #[test]
    fn sobol_matches_curand() {
        let w = u32s(&gen_(rng::SOBOL32, 3, 0, dist::BITS32, 24));
        let m = 1u32 << 29;
        assert_eq!(w[..8], [0, 4 * m, 6 * m, 2 * m, 3 * m, 7 * m, 5 * m, m]);
        assert_eq!(w[8..16], [0, 4 * m, 2 * m, 6 * m, 3 * m, 7 * m, m, 5 * m]);
        assert_eq!(w[16..24], [0, 4 * m, 2 * m, 6 * m, 5 * m, m, 7 * m, 3 * m]);
        let w = u32s(&gen_(rng::SOBOL32, 5, 37, dist::BITS32, 10));
        assert_eq!(
            w,
            [
                3959422976, 2885681152, 2751463424, 1677721600, 2483027968, 1409286144, 3959422976,
                738197504, 3288334336, 2214592512
            ]
        );
        // Quasi-random normals: another inverse normal CDF than cuRAND's, within 2 ulps.
        let f = u32s(&gen_(rng::SOBOL32, 1, 0, dist::NORMAL_F32, 8));
        let want = [
            0xc0cad08cu32,
            0,
            0x3f2cab5c,
            0xbf2cab5c,
            0xbea324b3,
            0x3f933ea6,
            0x3ea324b3,
            0xbf933ea6,
        ];
        assert!(
            f.iter().zip(want).all(|(g, w)| g.abs_diff(w) <= 2),
            "{f:x?}"
        );
        let d = u64s(&gen_(rng::SOBOL32, 1, 0, dist::NORMAL_F64, 4));
        let want = [
            0xc0195a1198fcf3d7u64,
            0x3df40d931ff62706,
            0x3fe5956b8784e3d9,
            0xbfe5956b872030ba,
        ];
        assert!(
            d.iter().zip(want).all(|(g, w)| g.abs_diff(w) <= 2),
            "{d:x?}"
        );
        let f = u32s(&gen_(rng::SOBOL32, 1, 0, dist::UNIFORM_F32, 4));
        assert_eq!(f, [0x2f000000, 0x3f000000, 0x3f400000, 0x3e800000]);
        let l = u64s(&gen_(rng::SOBOL64, 2, 0, dist::BITS64, 8));
        let h = 1u64 << 62;
        assert_eq!(l, [0, 2 * h, 3 * h, h, 0, 2 * h, h, 3 * h]);
    }

    #[test]
    fn distributions_have_their_moments() {
        for t in [rng::XORWOW, rng::PHILOX, rng::MRG32K3A, rng::MT19937] {
            let n = 1 << 15;
            let u = u32s(&gen_(t, 1, 0, dist::UNIFORM_F32, n));
            let u: Vec<f64> = u.iter().map(|&b| f64::from(f32::from_bits(b))).collect();
            assert!(u.iter().all(|&x| x > 0.0 && x <= 1.0));
            let mean = u.iter().sum::<f64>() / n as f64;
            assert!((mean - 0.5).abs() < 0.01, "{t}: {mean}");
            let p = u32s(&gen_(t, 1, 0, dist::POISSON, n));
            let pm = p.iter().map(|&k| f64::from(k)).sum::<f64>() / n as f64;
            assert!(pm.abs() < 0.01, "lambda 0 gives zeros, got {pm}");
        }
        let mut r = Rand::default();
        let h = r.create(rng::PHILOX, false).unwrap();
        let out = r
            .generate(&RandGenerateReq {
                handle: h,
                n: 1 << 15,
                dist: dist::POISSON,
                mean: 700.0,
                ..Default::default()
            })
            .unwrap();
        let k = u32s(&out);
        let m = k.iter().map(|&k| f64::from(k)).sum::<f64>() / k.len() as f64;
        assert!((m - 700.0).abs() < 1.0, "{m}");
    }

    #[test]
    fn errors_follow_curand() {
        let mut r = Rand::default();
        assert_eq!(r.create(999, false), Err(status(RAND_TYPE_ERROR)));
        let h = r.create(rng::SOBOL32, false).unwrap();
        assert_eq!(r.set(h, set::SEED, 1), Err(status(RAND_TYPE_ERROR)));
        assert_eq!(
            r.set(h, set::ORDERING, u64::from(ordering::PSEUDO_DEFAULT)),
            Err(status(RAND_OUT_OF_RANGE))
        );
        let ph = r.create(rng::PHILOX, true).unwrap();
        for (o, ok) in [
            (ordering::PSEUDO_LEGACY, true),
            (ordering::PSEUDO_SEEDED, false),
            (ordering::PSEUDO_DYNAMIC, false),
            (ordering::QUASI_DEFAULT, false),
        ] {
            assert_eq!(r.set(ph, set::ORDERING, u64::from(o)).is_ok(), ok, "{o}");
        }
        assert_eq!(
            r.set(h, set::DIMENSIONS, u64::from(MAX_SOBOL_DIMENSIONS) + 1),
            Err(status(RAND_OUT_OF_RANGE))
        );
        r.set(h, set::DIMENSIONS, 4).unwrap();
        let req = RandGenerateReq {
            handle: h,
            n: 6,
            dist: dist::UNIFORM_F32,
            ..Default::default()
        };
        assert_eq!(r.generate(&req), Err(status(RAND_LENGTH_NOT_MULTIPLE)));
        let p = r.create(rng::XORWOW, false).unwrap();
        let req = RandGenerateReq {
            handle: p,
            n: 3,
            dist: dist::NORMAL_F32,
            ..Default::default()
        };
        assert_eq!(r.generate(&req), Err(status(RAND_LENGTH_NOT_MULTIPLE)));
        r.destroy(p).unwrap();
        assert_eq!(r.destroy(p), Err(status(RAND_NOT_INITIALIZED)));
    }
}
