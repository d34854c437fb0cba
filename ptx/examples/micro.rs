// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Per-instruction-class cost (development aid): ns per warp-instruction of small loops.
//!
//!     cargo run --release -p vcuda-ptx --example micro

use std::time::Instant;

use vcuda_ptx::{DeviceMemory, LaunchConfig, LaunchOptions, Module, Region, launch};

struct NoMem;
// SAFETY: returns no regions.
unsafe impl DeviceMemory for NoMem {
    fn region(&self, _: u64) -> Option<Region> {
        None
    }
}

/// CPU time of the calling thread in seconds (Linux; falls back to wall time elsewhere).
/// The machine may be shared, so single-threaded rates use this rather than wall time.
fn thread_cpu() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: f64 = s.split_whitespace().next()?.parse().ok()?;
    Some(ns * 1e-9)
}

fn main() {
    let body = |inner: &str| {
        format!(
            ".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{{\n\
             .shared .align 4 .b8 sh[4096];\n.reg .pred %p<4>;\n.reg .b32 %r<16>;\n.reg .f32 %f<8>;\n\
             mov.u32 %r1, 0; mov.u32 %r2, %tid.x; shl.b32 %r3, %r2, 2; mov.u32 %r4, sh; add.u32 %r5, %r4, %r3;\n\
             mov.f32 %f1, 0f3F800000; mov.f32 %f2, 0f3F800000;\n\
             L: {inner}\n add.u32 %r1, %r1, 1; setp.lt.u32 %p1, %r1, 20000; @%p1 bra L;\n ret;\n}}\n"
        )
    };
    let cases = [
        ("empty loop (add, setp, bra)", ""),
        (
            "+8 add.u32",
            "add.u32 %r6, %r6, %r2; add.u32 %r6, %r6, %r2; add.u32 %r6, %r6, %r2; add.u32 %r6, %r6, %r2; add.u32 %r6, %r6, %r2; add.u32 %r6, %r6, %r2; add.u32 %r6, %r6, %r2; add.u32 %r6, %r6, %r2;",
        ),
        (
            "+8 fma.rn.f32",
            "fma.rn.f32 %f1, %f1, %f2, %f2; fma.rn.f32 %f1, %f1, %f2, %f2; fma.rn.f32 %f1, %f1, %f2, %f2; fma.rn.f32 %f1, %f1, %f2, %f2; fma.rn.f32 %f1, %f1, %f2, %f2; fma.rn.f32 %f1, %f1, %f2, %f2; fma.rn.f32 %f1, %f1, %f2, %f2; fma.rn.f32 %f1, %f1, %f2, %f2;",
        ),
        (
            "+8 ld.shared.f32",
            "ld.shared.f32 %f3, [%r5]; ld.shared.f32 %f3, [%r5+4]; ld.shared.f32 %f3, [%r5]; ld.shared.f32 %f3, [%r5+8]; ld.shared.f32 %f3, [%r5]; ld.shared.f32 %f3, [%r5+12]; ld.shared.f32 %f3, [%r5]; ld.shared.f32 %f3, [%r5+16];",
        ),
        (
            "+8 mov.u32 from %tid.x",
            "mov.u32 %r7, %tid.x; mov.u32 %r7, %tid.x; mov.u32 %r7, %tid.x; mov.u32 %r7, %tid.x; mov.u32 %r7, %tid.x; mov.u32 %r7, %tid.x; mov.u32 %r7, %tid.x; mov.u32 %r7, %tid.x;",
        ),
    ];
    let mut base = 0.0;
    for (label, inner) in cases {
        let m = Module::parse(&body(inner)).expect("parse");
        let cfg = LaunchConfig {
            grid: [1, 1, 1],
            block: [256, 1, 1],
            dynamic_shared: 0,
            grid_workspace: 0,
            cluster: [0; 3],
        };
        let opts = LaunchOptions {
            threads: 1,
            ..LaunchOptions::default()
        };
        let sink = std::sync::Mutex::new(Vec::new());
        let (t, c) = (Instant::now(), thread_cpu());
        let s = launch(
            &m,
            m.kernel("k").unwrap(),
            &cfg,
            &[],
            &|_| 0,
            &NoMem,
            &sink,
            &opts,
        )
        .expect("launch");
        let dt = match (c, thread_cpu()) {
            (Some(a), Some(b)) => b - a,
            _ => t.elapsed().as_secs_f64(),
        };
        let per = dt * 1e9 / s.warp_instructions as f64;
        if inner.is_empty() {
            base = dt;
        }
        let extra = (dt - base) * 1e9 / (8.0 * 20000.0 * 8.0);
        println!(
            "{label:<32} {per:>7.1} ns/warp-inst overall, {extra:>7.1} ns per added warp-inst"
        );
    }
}
