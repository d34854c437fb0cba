// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The CPU executor's kernels side by side: compiled to native code, interpreted, and (with
//! `--cref`) the same computations in C with OpenMP (bench/cpu-kernels.c), in one run on the
//! same cores, with the ratios.
//!
//!     bash bench/cpu-executor.sh            # builds the C reference, runs this
//!     cargo run --release -p vcuda-ptx --example bench [-- --cref PATH] [--only NAME]
//!         [--compiled-only]
//!
//! Times are wall seconds, the best of three runs after a warm-up (interpreted: best of two).

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

    fn fill_u8(&self, addr: u64, n: usize, f: impl Fn(usize) -> u8) {
        for i in 0..n {
            let a = addr - BASE + i as u64;
            let w = &self.words[(a / 8) as usize];
            let shift = (a % 8) * 8;
            w.fetch_and(!(0xffu64 << shift), Ordering::Relaxed);
            w.fetch_or((f(i) as u64) << shift, Ordering::Relaxed);
        }
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

/// Best wall time of `runs` runs of `f` after one warm-up.
fn best(runs: usize, f: &mut dyn FnMut()) -> f64 {
    f();
    (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::MAX, f64::min)
}

/// Runs the C reference and returns its times by kernel name.
fn c_reference(path: &str) -> Vec<(String, f64)> {
    let out = std::process::Command::new(path)
        .output()
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            Some((k.to_string(), v.trim().parse().ok()?))
        })
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let only = flag("--only").unwrap_or_default();
    let cref = flag("--cref").map(|p| c_reference(&p)).unwrap_or_default();
    let fixture = |f: &str| {
        let p = format!("{}/tests/fixtures/{f}.ptx", env!("CARGO_MANIFEST_DIR"));
        Module::parse(&std::fs::read_to_string(&p).expect("fixture")).expect("PTX")
    };
    let (basic, reduce, stencil) = (fixture("basic"), fixture("reduce"), fixture("stencil"));
    let mem = Arena::new(300 << 20);
    let sink = std::sync::Mutex::new(Vec::new());
    let vec_n = 1usize << 24;
    let (a, b, c) = (
        mem.alloc(vec_n * 4),
        mem.alloc(vec_n * 4),
        mem.alloc(vec_n * 4),
    );
    mem.fill_f32(a, vec_n, |i| (i % 1000) as f32);
    mem.fill_f32(b, vec_n, |i| 1.0 - (i % 77) as f32);
    let dim = 512usize;
    let (ma, mb, mc) = (
        mem.alloc(dim * dim * 4),
        mem.alloc(dim * dim * 4),
        mem.alloc(dim * dim * 4),
    );
    mem.fill_f32(ma, dim * dim, |i| (i % 7) as f32);
    mem.fill_f32(mb, dim * dim, |i| (i % 5) as f32);
    let (sw, sh) = (2048usize, 2048usize);
    let (sin, sout) = (mem.alloc(sw * sh * 4), mem.alloc(sw * sh * 4));
    mem.fill_f32(sin, sw * sh, |i| (i % 13) as f32);
    let hist_n = 1usize << 24;
    let (hd, bins) = (mem.alloc(hist_n), mem.alloc(256 * 4));
    mem.fill_u8(hd, hist_n, |i| {
        ((i as u32).wrapping_mul(2654435761) >> 24) as u8
    });
    let out = mem.alloc(8);

    let layout = |m: &Module, k: &str| -> Vec<(u32, u32)> {
        let id = m.kernel(k).expect("kernel");
        m.kernels()[id.0 as usize]
            .params
            .iter()
            .map(|p| (p.offset, p.size))
            .collect()
    };
    let cfg = |grid: [u32; 3], block: [u32; 3], dynamic_shared: u32| LaunchConfig {
        grid,
        block,
        dynamic_shared,
        grid_workspace: 0,
        cluster: [0; 3],
    };
    type Case<'a> = (&'a str, &'a str, &'a Module, &'a str, LaunchConfig, Vec<u8>);
    let cases: Vec<Case<'_>> = vec![
        (
            "vectorAdd",
            "vectorAdd, 2^24 floats",
            &basic,
            "vectorAdd",
            cfg([(vec_n / 256) as u32, 1, 1], [256, 1, 1], 0),
            params(&[a, b, c, vec_n as u64], &layout(&basic, "vectorAdd")),
        ),
        (
            "sgemm",
            "SGEMM 512x512, 16x16 tiles",
            &basic,
            "matmul",
            cfg([32, 32, 1], [16, 16, 1], 0),
            params(
                &[ma, mb, mc, dim as u64, dim as u64, dim as u64],
                &layout(&basic, "matmul"),
            ),
        ),
        (
            "reduction",
            "shared-memory tree reduction, 2^24 floats",
            &reduce,
            "reduceShared",
            cfg([(vec_n / 512) as u32, 1, 1], [256, 1, 1], 1024),
            params(&[a, out, vec_n as u64], &layout(&reduce, "reduceShared")),
        ),
        (
            "stencil",
            "5-point stencil 2048x2048",
            &stencil,
            "jacobi",
            cfg([(sw / 16) as u32, (sh / 16) as u32, 1], [16, 16, 1], 0),
            params(
                &[sin, sout, sw as u64, sh as u64],
                &layout(&stencil, "jacobi"),
            ),
        ),
        (
            "histogram",
            "histogram, shared atomics, 2^24 bytes",
            &reduce,
            "histogram",
            cfg([1024, 1, 1], [256, 1, 1], 0),
            params(&[hd, hist_n as u64, bins], &layout(&reduce, "histogram")),
        ),
    ];
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("{cores} cores; wall seconds, best of 3 (interpreted: best of 2) after a warm-up\n");
    println!(
        "| kernel | C (gcc -O2 -fopenmp) | compiled | interpreted | compiled / C | interpreted / C | interpreted / compiled |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for (key, label, m, k, cfg, p) in cases.into_iter().filter(|c| c.0.contains(&only)) {
        let id = m.kernel(k).expect("kernel");
        let time = |jit: bool, runs: usize| {
            let opts = LaunchOptions {
                jit,
                ..LaunchOptions::default()
            };
            let mut compiled = false;
            let t = best(runs, &mut || {
                let s = launch(m, id, &cfg, &p, &|_| 0, &mem, &sink, &opts).expect("launch");
                compiled = s.compiled;
            });
            assert_eq!(compiled, jit, "{k}: compiled = {compiled}");
            t
        };
        let tc = time(true, 3);
        let ti = if args.iter().any(|a| a == "--compiled-only") {
            f64::NAN
        } else {
            time(false, 2)
        };
        let c = cref.iter().find(|(n, _)| n == key).map(|(_, t)| *t);
        // `--compiled-only` leaves the interpreted figures out ("-").
        let ratio = |x: f64| match c {
            Some(c) if x.is_finite() => format!("{:.1}x", x / c),
            _ => "-".to_string(),
        };
        let secs = |x: f64| {
            if x.is_finite() {
                format!("{x:.4}")
            } else {
                "-".to_string()
            }
        };
        println!(
            "| {label} | {} | {} | {} | {} | {} | {} |",
            c.map_or("-".to_string(), secs),
            secs(tc),
            secs(ti),
            ratio(tc),
            ratio(ti),
            if ti.is_finite() {
                format!("{:.1}x", ti / tc)
            } else {
                "-".to_string()
            }
        );
    }
}
