// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The Sobol32 and Sobol64 quasi-random generators.

use vcuda_protocol::lib::dist;

use super::distributions::{TWO_POW_32_INV_F64, TWO_POW_64_INV, norm_inv, poisson, uniform_f32};
use super::joe_kuo::JOE_KUO;

/// Sobol direction numbers and generation, 32- or 64-bit.
#[derive(Debug)]
pub(super) struct Sobol<W> {
    /// `dirs[d][k]`: direction number `k` of dimension `d`.
    dirs: Vec<Vec<W>>,
}

pub(super) trait SobolWord:
    Copy + Default + std::ops::BitXor<Output = Self> + std::fmt::Debug
{
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
    pub(super) fn new(dims: u32) -> Self {
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
    pub(super) fn generate(
        &self,
        d: u32,
        n: u64,
        offset: u64,
        mean: f64,
        stddev: f64,
        out: &mut Vec<u8>,
    ) {
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
