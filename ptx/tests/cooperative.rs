// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Cooperative launches: every block runs at once, and cooperative groups' grid barrier
//! (`grid.sync()`, through `%envreg1`/`%envreg2` and the grid workspace) holds.

mod common;
use std::sync::atomic::Ordering;

use common::*;
use vcuda_ptx::{GRID_WORKSPACE_SIZE, KernelError, MAX_COOPERATIVE_BLOCKS};

fn run(jit: bool, blocks: u32) {
    let mut g = Gpu::new(&fixture("grid_sync"));
    g.opts.jit = jit;
    g.opts.threads = 2;
    g.differential = false;
    let n = 10_000i32;
    let input: Vec<i32> = (0..n).map(|i| i % 97 - 40).collect();
    let want: i32 = input.iter().sum();
    let inp = g.buf(&input);
    let partial = g.zeros(blocks as usize * 4);
    let out = g.zeros(2 * blocks as usize * 4);
    let ws = g.zeros(GRID_WORKSPACE_SIZE as usize);
    g.grid_workspace.store(ws, Ordering::Relaxed);
    g.run(
        "grid_sum",
        blocks,
        128,
        &[Arg::Ptr(inp), Arg::Ptr(partial), Arg::Ptr(out), Arg::I32(n)],
    );
    let got = g.get::<i32>(out, 2 * blocks as usize);
    assert_eq!(
        &got[..blocks as usize],
        &vec![want; blocks as usize][..],
        "jit {jit}"
    );
    assert_eq!(
        &got[blocks as usize..],
        &vec![2 * want; blocks as usize][..],
        "jit {jit}"
    );
    assert_eq!(g.compiled_launches() > 0, jit);
}

#[test]
fn grid_sync_holds_interpreted_and_compiled() {
    for blocks in [1, 3, 8] {
        run(false, blocks);
        run(true, blocks);
    }
}

#[test]
fn cooperative_grids_are_bounded() {
    let g = Gpu::new(&fixture("grid_sync"));
    g.grid_workspace.store(g.zeros(8), Ordering::Relaxed);
    let b = g.zeros(4);
    let blocks = MAX_COOPERATIVE_BLOCKS as u32 + 1;
    let args = [Arg::Ptr(b), Arg::Ptr(b), Arg::Ptr(b), Arg::I32(0)];
    match g.try_launch("grid_sum", [blocks, 1, 1], [32, 1, 1], 0, &args) {
        Err(KernelError::InvalidConfig(m)) => assert!(m.contains("cooperative"), "{m}"),
        r => panic!("{r:?}"),
    }
    // All blocks are resident at once: their memory together is bounded.
    let mut g = Gpu::new(&fixture("grid_sync"));
    g.opts.max_register_bytes = 16 << 20;
    g.grid_workspace.store(g.zeros(8), Ordering::Relaxed);
    let b = g.zeros(4);
    let args = [Arg::Ptr(b), Arg::Ptr(b), Arg::Ptr(b), Arg::I32(0)];
    match g.try_launch("grid_sum", [512, 1, 1], [128, 1, 1], 0, &args) {
        Err(KernelError::OutOfResources(m)) => assert!(m.contains("resident blocks"), "{m}"),
        r => panic!("{r:?}"),
    }
}
