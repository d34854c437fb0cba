// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The compiler's bounds as a guest meets them: kernels too costly to compile run
//! interpreted, a compile's memory is charged while it runs, and a launch stops waiting
//! for its compile when it is cancelled.

mod common;
use std::sync::{
    Arc, Mutex,
    atomic::{AtomicU64, Ordering},
    mpsc,
};

use common::*;
use vcuda_ptx::{Cancel, CompileMemory, KernelError, testing::live_across_diamonds};

#[test]
fn a_kernel_too_costly_to_compile_runs_interpreted() {
    // 500 registers live across 100 diamonds took 5.6 s to compile (release build); past
    // the compile budget it runs interpreted, in milliseconds, with the same result.
    let (src, want) = live_across_diamonds(500, 100);
    let g = Gpu::new(&src);
    let out = g.zeros(4);
    g.run("k", 1, 1, &[Arg::Ptr(out)]);
    assert_eq!(g.compiled_launches(), 0, "refused by the compiler");
    assert_eq!(g.get::<u32>(out, 1), [want]);
    // A few registers across the same branches still compile.
    let (src, want) = live_across_diamonds(8, 100);
    let g = Gpu::new(&src);
    let out = g.zeros(4);
    g.run("k", 1, 1, &[Arg::Ptr(out)]);
    assert_eq!(g.compiled_launches(), 1);
    assert_eq!(g.get::<u32>(out, 1), [want]);
}

/// Charges counted in `now` (bytes charged at the moment) and `most` (the largest charge).
fn counted(now: &Arc<AtomicU64>, most: &Arc<AtomicU64>) -> CompileMemory {
    struct Back(Arc<AtomicU64>, u64);
    impl Drop for Back {
        fn drop(&mut self) {
            self.0.fetch_sub(self.1, Ordering::Relaxed);
        }
    }
    let (now, most) = (now.clone(), most.clone());
    CompileMemory::new(move |n| {
        now.fetch_add(n, Ordering::Relaxed);
        most.fetch_max(n, Ordering::Relaxed);
        Some(Box::new(Back(now.clone(), n)) as Box<dyn Send>)
    })
}

#[test]
fn a_compile_is_charged_while_it_runs_and_refused_when_memory_is_short() {
    let (src, want) = live_across_diamonds(8, 100);
    let mut g = Gpu::new(&src);
    g.differential = false;
    let out = g.zeros(4);
    // Refused: the kernel runs interpreted, with the same result.
    let asked = Arc::new(AtomicU64::new(0));
    let a = asked.clone();
    g.opts.compile_memory = Some(CompileMemory::new(move |n| {
        a.store(n, Ordering::Relaxed);
        None
    }));
    assert!(!g.run("k", 1, 1, &[Arg::Ptr(out)]).compiled);
    assert_eq!(g.get::<u32>(out, 1), [want]);
    assert!(
        asked.load(Ordering::Relaxed) >= 8 << 20,
        "charged at least 8 MiB"
    );
    // The next launch tries again, and with memory to spare compiles; the charge is given
    // back once the compile is done.
    let (now, most) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    g.opts.compile_memory = Some(counted(&now, &most));
    assert!(g.run("k", 1, 1, &[Arg::Ptr(out)]).compiled);
    assert_eq!(g.get::<u32>(out, 1), [want]);
    assert_eq!(now.load(Ordering::Relaxed), 0, "the charge was given back");
    assert_eq!(most.load(Ordering::Relaxed), asked.load(Ordering::Relaxed));
    eprintln!(
        "8 registers across 100 diamonds: compile charged {} MiB while it ran",
        most.load(Ordering::Relaxed) >> 20
    );
    // Compiled once: later launches charge nothing.
    most.store(0, Ordering::Relaxed);
    assert!(g.run("k", 1, 1, &[Arg::Ptr(out)]).compiled);
    assert_eq!(most.load(Ordering::Relaxed), 0);
}

#[test]
fn a_cancelled_launch_stops_waiting_for_its_compile() {
    // Issue 38: a compile ran on for ~38 s after its client was gone. The launch now waits
    // for a compiler thread and stops waiting when cancelled; the compile (bounded by the
    // budget) finishes on its own and serves later launches.
    let (src, want) = live_across_diamonds(8, 100);
    let mut g = Gpu::new(&src);
    g.differential = false;
    let out = g.zeros(4);
    let cancel = Cancel::default();
    let (resume, hold) = mpsc::channel::<()>();
    let hold = Mutex::new(hold);
    let c = cancel.clone();
    g.opts.cancel = Some(cancel);
    g.opts.compile_memory = Some(CompileMemory::new(move |_| {
        // Mid-compile: the session ends, and the compile goes on until the launch has
        // returned.
        c.cancel();
        let _ = hold.lock().unwrap().recv();
        Some(Box::new(()) as Box<dyn Send>)
    }));
    let r = g.try_launch("k", [1, 1, 1], [1, 1, 1], 0, &[Arg::Ptr(out)]);
    assert!(matches!(r, Err(KernelError::Cancelled)), "{r:?}");
    resume.send(()).unwrap();
    // A later launch (another session's) gets the finished compile.
    g.opts.cancel = None;
    g.opts.compile_memory = None;
    assert!(g.run("k", 1, 1, &[Arg::Ptr(out)]).compiled);
    assert_eq!(g.get::<u32>(out, 1), [want]);
}
