// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The MT19937 Mersenne Twister (also serving MTGP32).

use super::streams::Streams;

/// The reference MT19937 (Matsumoto and Nishimura), one stream.
#[derive(Debug)]
pub(super) struct Mt19937 {
    mt: [u32; 624],
    i: usize,
    at: u64,
}

impl Mt19937 {
    pub(super) fn new(seed: u32) -> Self {
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
