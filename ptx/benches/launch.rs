// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Cost of a launch of a tiny kernel as the grid grows (1 to 64 blocks of 32 threads), next
//! to the cost of creating and joining as many threads as the launch has workers (what
//! every multi-block launch paid before the worker pool), measured in the same run.
//!
//!   cargo bench -p vcuda-ptx --bench launch
//!
//! Prints a table; nothing is asserted.

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::{Arg, Gpu};

const PTX: &str = r#"
.version 7.0
.target sm_50
.address_size 64
.visible .entry k(.param .u64 out)
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r1, %r1, %r2, %r3;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r1;
    ret;
}
"#;

/// Median of `runs` timings of `reps` calls of `f`, per call.
fn per_call(reps: u32, runs: usize, mut f: impl FnMut()) -> Duration {
    let mut t: Vec<Duration> = (0..runs)
        .map(|_| {
            let s = Instant::now();
            for _ in 0..reps {
                f();
            }
            s.elapsed() / reps
        })
        .collect();
    t.sort();
    t[runs / 2]
}

fn main() {
    let gpu = Gpu::new(PTX);
    let out = gpu.zeros(64 * 32 * 4);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("{cores} cores; median of 9 runs of 500 launches each, per launch");
    println!("| blocks | launch | spawn + join of the launch's workers |");
    println!("|---:|---:|---:|");
    for blocks in [1u32, 2, 8, 64] {
        let launch = per_call(500, 9, || {
            gpu.try_launch("k", [blocks, 1, 1], [32, 1, 1], 0, &[Arg::Ptr(out)])
                .unwrap();
        });
        let workers = cores.min(blocks as usize);
        let spawn = per_call(500, 9, || {
            if workers > 1 {
                std::thread::scope(|s| {
                    for _ in 1..workers {
                        s.spawn(|| std::hint::black_box(0));
                    }
                });
            }
        });
        println!(
            "| {blocks} | {:.1} us | {:.1} us |",
            launch.as_secs_f64() * 1e6,
            spawn.as_secs_f64() * 1e6
        );
    }
}
