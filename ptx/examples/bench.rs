// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Interpretation speed on a few kernels, in thread-instructions per second.
//!
//!     cargo run --release -p vcuda-ptx --example bench [-- THREADS [FILTER]]
//!
//! THREADS 0 (default) uses every core; with 1 the rate is per-thread CPU time, which stays
//! meaningful on a loaded machine.

use std::{
    sync::atomic::{AtomicU64, Ordering},
    time::Instant,
};

use vcuda_ptx::{DeviceMemory, LaunchConfig, LaunchOptions, Module, Region, launch};

/// Device memory: one zeroed arena at 0x7f00_0000_0000.
struct Arena {
    words: Box<[AtomicU64]>,
    used: AtomicU64,
}

const BASE: u64 = 0x7f00_0000_0000;

impl Arena {
    fn new(bytes: usize) -> Arena {
        Arena {
            words: (0..bytes / 8).map(|_| AtomicU64::new(0)).collect(),
            used: AtomicU64::new(0),
        }
    }

    fn alloc(&self, bytes: usize) -> u64 {
        let off = self
            .used
            .fetch_add((bytes as u64 + 255) & !255, Ordering::Relaxed);
        BASE + off
    }

    fn fill_f32(&self, addr: u64, n: usize, f: impl Fn(usize) -> f32) {
        for i in 0..n {
            let w = &self.words[((addr - BASE) / 8) as usize + i / 2];
            let shift = (i % 2) * 32;
            let v = (f(i).to_bits() as u64) << shift;
            w.fetch_and(!(0xffff_ffffu64 << shift), Ordering::Relaxed);
            w.fetch_or(v, Ordering::Relaxed);
        }
    }
}

// SAFETY: the arena is a live boxed slice for the whole benchmark, never moved or freed while
// launches run, and only accessed atomically.
unsafe impl DeviceMemory for Arena {
    fn region(&self, addr: u64) -> Option<Region> {
        let len = self.words.len() as u64 * 8;
        (BASE..BASE + len).contains(&addr).then_some(Region {
            base: BASE,
            len,
            host: self.words.as_ptr() as *mut u8,
        })
    }
}

fn params(words: &[u64], layout: &[(u32, u32)]) -> Vec<u8> {
    let size = layout.last().map_or(0, |(o, s)| o + s) as usize;
    let mut p = vec![0u8; size];
    for (v, (o, s)) in words.iter().zip(layout) {
        p[*o as usize..(*o + *s) as usize].copy_from_slice(&v.to_le_bytes()[..*s as usize]);
    }
    p
}

/// CPU time of the calling thread in seconds (Linux; falls back to wall time elsewhere).
/// The machine may be shared, so single-threaded rates use this rather than wall time.
fn thread_cpu() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: f64 = s.split_whitespace().next()?.parse().ok()?;
    Some(ns * 1e-9)
}

fn main() {
    let threads: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let filter = std::env::args().nth(2).unwrap_or_default();
    let basic = Module::parse(include_str!("../tests/fixtures/basic.ptx")).expect("basic.ptx");
    let reduce = Module::parse(include_str!("../tests/fixtures/reduce.ptx")).expect("reduce.ptx");
    let mem = Arena::new(64 << 20);
    let sink = std::sync::Mutex::new(Vec::new());
    let opts = LaunchOptions {
        threads,
        ..LaunchOptions::default()
    };
    let n = 1 << 20;
    let (a, b, c) = (mem.alloc(n * 4), mem.alloc(n * 4), mem.alloc(n * 4));
    mem.fill_f32(a, n, |i| i as f32);
    mem.fill_f32(b, n, |i| 1.0 - i as f32);
    let dim = 256usize;
    let (ma, mb, mc) = (
        mem.alloc(dim * dim * 4),
        mem.alloc(dim * dim * 4),
        mem.alloc(dim * dim * 4),
    );
    mem.fill_f32(ma, dim * dim, |i| (i % 7) as f32);
    mem.fill_f32(mb, dim * dim, |i| (i % 5) as f32);
    let out = mem.alloc(8);

    let layout = |m: &Module, k: &str| -> Vec<(u32, u32)> {
        let id = m.kernel(k).expect("kernel");
        m.kernels()[id.0 as usize]
            .params
            .iter()
            .map(|p| (p.offset, p.size))
            .collect()
    };
    type Case<'a> = (&'a str, &'a Module, &'a str, LaunchConfig, Vec<u8>);
    let cases: Vec<Case<'_>> = vec![
        (
            "vectorAdd (1M floats)",
            &basic,
            "vectorAdd",
            LaunchConfig {
                grid: [(n / 256) as u32, 1, 1],
                block: [256, 1, 1],
                dynamic_shared: 0,
            },
            params(&[a, b, c, n as u64], &layout(&basic, "vectorAdd")),
        ),
        (
            "tiled matmul (256x256, 16x16 tiles)",
            &basic,
            "matmul",
            LaunchConfig {
                grid: [16, 16, 1],
                block: [16, 16, 1],
                dynamic_shared: 0,
            },
            params(
                &[ma, mb, mc, dim as u64, dim as u64, dim as u64],
                &layout(&basic, "matmul"),
            ),
        ),
        (
            "reduction, warp shuffles (1M ints)",
            &reduce,
            "reduceWarp",
            LaunchConfig {
                grid: [256, 1, 1],
                block: [256, 1, 1],
                dynamic_shared: 0,
            },
            params(&[a, out, n as u64], &layout(&reduce, "reduceWarp")),
        ),
        (
            "reduction, shared memory tree (1M floats)",
            &reduce,
            "reduceShared",
            LaunchConfig {
                grid: [(n / 512) as u32, 1, 1],
                block: [256, 1, 1],
                dynamic_shared: 1024,
            },
            params(&[a, out, n as u64], &layout(&reduce, "reduceShared")),
        ),
    ];
    println!(
        "{:<42} {:>14} {:>10} {:>16}",
        "kernel", "thread-insts", "seconds", "thread-insts/s"
    );
    for (label, m, k, cfg, p) in cases.into_iter().filter(|c| c.0.contains(&filter)) {
        let id = m.kernel(k).expect("kernel");
        // Warm up once, then take the best of three.
        let run = || launch(m, id, &cfg, &p, &|_| 0, &mem, &sink, &opts).expect("launch");
        run();
        let mut best = f64::MAX;
        let mut insts = 0;
        for _ in 0..3 {
            let (t, c) = (Instant::now(), thread_cpu());
            let s = run();
            // With one worker the launch runs on this thread: its CPU time is exact.
            let dt = match (threads == 1, c, thread_cpu()) {
                (true, Some(a), Some(b)) => b - a,
                _ => t.elapsed().as_secs_f64(),
            };
            best = best.min(dt);
            insts = s.thread_instructions;
        }
        println!(
            "{label:<42} {insts:>14} {best:>10.4} {:>16.3e}",
            insts as f64 / best
        );
    }
}
