// SPDX-License-Identifier: Apache-2.0 OR MIT
//! How pseudo-random engines are laid out as cuRAND does: independent word streams and
//! the units a distribution takes from each.

use vcuda_protocol::lib::dist;

use super::distributions::{box_muller, box_muller_f32, poisson, uniform_f32, uniform_f64_hq};

/// A pseudo-random engine as cuRAND lays it out: `threads()` independent word streams;
/// unit `q` of a distribution comes from stream `q mod threads()`.
pub(super) trait Streams {
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

/// cuRAND's `MRG32K3A_NORM`: 1 / (m1 + 1).
const MRG_NORM: f64 = 2.328_306_549_837_829e-10;
/// cuRAND's `MRG32K3A_BITS_NORM`: scales `z` to 32 bits.
const MRG_BITS_NORM: f64 = 1.000_000_048_662;

/// How a pseudo-random engine's words become numbers, as cuRAND converts them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Conv {
    /// 32 random bits: floats from one word, doubles from two (`_curand_uniform_double_hq`).
    Bits,
    /// MRG32k3a's `z` in `[1, m1]`: every number from one `z` scaled by `MRG32K3A_NORM`.
    Mrg,
}

/// Lays a distribution out over an engine's streams, cuRAND style: a *unit* of `outs`
/// outputs consumes `words` words of one stream; unit `q` (counting from the generator's
/// offset) comes from stream `q mod threads`, at word `(q / threads) * words`.
pub(super) fn pseudo<E: Streams>(
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
