// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The XORWOW generator and its GF(2) skip-ahead.

use super::streams::Streams;

/// XORWOW (Marsaglia), seeded and split into subsequences as `curand_init` does.
#[derive(Debug)]
pub(super) struct Xorwow {
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
    pub(super) fn new(seed: u64) -> Self {
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
