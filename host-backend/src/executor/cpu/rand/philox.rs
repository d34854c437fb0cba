// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The Philox4x32-10 generator.

use super::streams::Streams;

/// Philox4x32-10 (Salmon et al.), counter-based.
#[derive(Debug)]
pub(super) struct Philox {
    key: [u32; 2],
}

const PHILOX_THREADS: u64 = 65536;

impl Philox {
    pub(super) fn new(seed: u64) -> Self {
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
