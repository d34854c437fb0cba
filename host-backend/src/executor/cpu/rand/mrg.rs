// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The MRG32k3a generator and its matrix skip-ahead.

use super::streams::{Conv, Streams};

/// MRG32k3a (L'Ecuyer), seeded as `curand_init` does, in 81920 subsequences `2^76` steps
/// apart. Its words are the generator's raw outputs `z` in `[1, m1]`; [`Conv::Mrg`] turns
/// them into numbers as cuRAND does.
#[derive(Debug)]
pub(super) struct Mrg {
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
    pub(super) fn new(seed: u64) -> Self {
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
