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

mod distributions;
mod joe_kuo;
mod mrg;
mod mt19937;
mod philox;
mod sobol;
mod streams;
mod xorwow;

use std::collections::HashMap;

use vcuda_protocol::RandGenerateReq;
use vcuda_protocol::lib::{
    RAND_LENGTH_NOT_MULTIPLE, RAND_NOT_INITIALIZED, RAND_OUT_OF_RANGE, RAND_TYPE_ERROR, dist, set,
};

use crate::executor::{ExecResult, Status};
use crate::migrate::state::GeneratorState;

use joe_kuo::JOE_KUO;
use mrg::Mrg;
use mt19937::Mt19937;
use philox::Philox;
use sobol::Sobol;
use streams::pseudo;
use xorwow::Xorwow;

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

    /// The generators and the counter behind the next handle (a saved session's).
    pub fn state(&self) -> (Vec<GeneratorState>, u64) {
        let mut gens: Vec<GeneratorState> = self
            .gens
            .iter()
            .map(|(&handle, g)| GeneratorState {
                handle,
                rng_type: match g.kind {
                    Kind::Xorwow => rng::XORWOW,
                    Kind::Philox => rng::PHILOX,
                    Kind::Mrg => rng::MRG32K3A,
                    Kind::Mt => rng::MT19937,
                    Kind::Sobol32 => rng::SOBOL32,
                    Kind::Sobol64 => rng::SOBOL64,
                },
                host: g.host,
                seed: g.seed,
                offset: g.offset,
                dims: g.dims,
                ordering: g.ordering,
            })
            .collect();
        gens.sort_unstable_by_key(|g| g.handle);
        (gens, self.next)
    }

    /// Re-creates saved generators (see [`Rand::state`]) in this session, which has none,
    /// through the checks `curandCreateGenerator` and `curandSetGenerator*` make; `false`
    /// if one fails them or its handle is not one this counter could have made.
    pub fn restore(&mut self, gens: &[GeneratorState], next: u64) -> bool {
        const TAG: u64 = 0x7a4d_0000_0000;
        if !self.gens.is_empty() || next >= 1 << 32 || gens.len() > next as usize {
            return false;
        }
        for s in gens {
            let h = s.handle;
            if h & !0xffff_ffff != TAG
                || !(1..=next).contains(&(h & 0xffff_ffff))
                || self.gens.contains_key(&h)
            {
                return false;
            }
            let Ok(made) = self.create(s.rng_type, s.host) else {
                return false;
            };
            let quasi = self.gens.get(&made).is_some_and(|g| g.kind.quasi());
            let mut sets = vec![(set::ORDERING, u64::from(s.ordering))];
            if quasi {
                sets.push((set::DIMENSIONS, u64::from(s.dims)));
            } else {
                sets.push((set::SEED, s.seed));
            }
            if sets
                .into_iter()
                .any(|(what, v)| self.set(made, what, v).is_err())
            {
                return false;
            }
            let Some(mut g) = self.gens.remove(&made) else {
                return false;
            };
            // Any offset is one a generator can reach (Mersenne Twisters' by generating).
            g.offset = s.offset;
            self.gens.insert(h, g);
        }
        self.next = next;
        true
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
            // cuRAND's Mersenne Twisters take no offset (measured on an H100, cuRAND 13.0).
            set::OFFSET if g.kind == Kind::Mt => return Err(status(RAND_TYPE_ERROR)),
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

#[cfg(test)]
mod tests;
