// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Cooperative launches: every block runs at once, and cooperative groups' grid barrier
//! (`grid.sync()`, through `%envreg1`/`%envreg2` and the grid workspace) holds.

mod common;
use std::sync::atomic::Ordering;

use common::*;
use vcuda_ptx::{GRID_WORKSPACE_SIZE, KernelError, MAX_COOPERATIVE_BLOCKS, Module};

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

/// A kernel as Numba writes a grid group's `sync()`: calls to the device runtime's
/// `cudaCGGetIntrinsicHandle(1)` and `cudaCGSynchronize(handle, 0)`, which a link resolves
/// with vcuda's own device runtime (the unit `libcudadevrt.a` links as,
/// `guest-lib/src/core/devrt.ptx`). Each block writes its slot, the grid syncs, then each
/// block sums every block's slot: every sum must see every block's write.
const DEVRT_USER: &str = r#"
.version 8.0
.target sm_90
.address_size 64
.extern .func (.param .b64 func_retval0) cudaCGGetIntrinsicHandle(.param .b32 p0);
.extern .func (.param .b32 func_retval0) cudaCGSynchronize(.param .b64 p0, .param .b32 p1);
.visible .entry k(.param .u64 slots, .param .u64 sums, .param .u64 status)
{
    .reg .pred %p<3>;
    .reg .b32 %r<12>;
    .reg .b64 %rd<12>;
    ld.param.u64 %rd1, [slots];
    ld.param.u64 %rd2, [sums];
    ld.param.u64 %rd3, [status];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %tid.x;
    mov.u32 %r3, %nctaid.x;
    setp.ne.u32 %p1, %r2, 0;
    mul.wide.u32 %rd4, %r1, 4;
    add.s64 %rd5, %rd1, %rd4;
    add.u32 %r4, %r1, 1;
    @!%p1 st.u32 [%rd5], %r4;
    {
        .param .b32 q0;
        .param .b64 rv;
        st.param.b32 [q0], 1;
        call.uni (rv), cudaCGGetIntrinsicHandle, (q0);
        ld.param.b64 %rd6, [rv];
    }
    {
        .param .b64 q0;
        .param .b32 q1;
        .param .b32 rv;
        st.param.b64 [q0], %rd6;
        st.param.b32 [q1], 0;
        call.uni (rv), cudaCGSynchronize, (q0, q1);
        ld.param.b32 %r5, [rv];
    }
    @%p1 bra DONE;
    mov.u32 %r6, 0;
    mov.u32 %r7, 0;
SUM:
    mul.wide.u32 %rd7, %r7, 4;
    add.s64 %rd8, %rd1, %rd7;
    ld.u32 %r8, [%rd8];
    add.u32 %r6, %r6, %r8;
    add.u32 %r7, %r7, 1;
    setp.lt.u32 %p2, %r7, %r3;
    @%p2 bra SUM;
    add.s64 %rd9, %rd2, %rd4;
    st.u32 [%rd9], %r6;
    add.s64 %rd10, %rd3, %rd4;
    st.u32 [%rd10], %r5;
DONE:
    ret;
}
"#;

#[test]
fn numbas_grid_sync_runs_on_vcudas_device_runtime() {
    let devrt = include_str!("../../guest-lib/src/core/devrt.ptx");
    for jit in [false, true] {
        let blocks = 6u32;
        let module = Module::link(&[DEVRT_USER, devrt]).unwrap();
        let mut g = Gpu::from_module(module);
        g.opts.jit = jit;
        g.opts.threads = 2;
        g.differential = false;
        let slots = g.zeros(blocks as usize * 4);
        let sums = g.zeros(blocks as usize * 4);
        let status = g.buf(&vec![7u32; blocks as usize]);
        g.grid_workspace
            .store(g.zeros(GRID_WORKSPACE_SIZE as usize), Ordering::Relaxed);
        let args = [Arg::Ptr(slots), Arg::Ptr(sums), Arg::Ptr(status)];
        g.run("k", blocks, 64, &args);
        let want = blocks * (blocks + 1) / 2;
        assert_eq!(
            g.get::<u32>(sums, blocks as usize),
            vec![want; blocks as usize]
        );
        assert_eq!(
            g.get::<u32>(status, blocks as usize),
            vec![0; blocks as usize]
        );
        // Not cooperative: no handle, and the sync says so (999) instead of hanging.
        let g = Gpu::from_module(Module::link(&[DEVRT_USER, devrt]).unwrap());
        let status = g.buf(&[7u32]);
        let one = g.zeros(4);
        g.run(
            "k",
            1,
            32,
            &[Arg::Ptr(one), Arg::Ptr(one), Arg::Ptr(status)],
        );
        assert_eq!(g.get::<u32>(status, 1), vec![999]);
    }
}
