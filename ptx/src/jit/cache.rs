// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Compiled kernels: compiled on a thread of their own on first launch (a small module's
//! kernels all at once), kept in their module.
//!
//! The launch does the cheap part itself (calls expanded, every instruction checked), hands
//! the code to a compiler thread and waits for it while observing its own cancellation and
//! time limit, so a session that ends or a launch past its time limit stops waiting at once.
//! Cranelift cannot be stopped part way: the compile runs to its end, bounded by the budget
//! in `build.rs` and by [`super::OPTIMIZE_MAX_INSTS`] (about a second and some hundreds of MiB at
//! worst), and its result stays cached for later launches of the module. While it runs, its
//! memory is charged through the launch's [`CompileMemory`] (an estimate, [`compile_bytes`]);
//! a refused charge leaves the kernel interpreted for that launch only. At most as many
//! compiles as cores run at once, all modules together, and at most
//! [`MAX_COMPILER_THREADS`] compiler threads exist (past that a launch runs interpreted).

use std::{
    any::Any,
    panic::AssertUnwindSafe,
    sync::{
        Arc, Condvar, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use super::{Compiled, build, compile, inline};
use crate::{
    error::KernelError,
    grid::{Cancel, CompileMemory, Launch},
    module::Module,
};

/// Most compiler threads alive at once, running or waiting for a turn.
const MAX_COMPILER_THREADS: usize = 64;

/// Compiler threads alive now.
static THREADS: AtomicUsize = AtomicUsize::new(0);

/// Compiles running now (at most the cores).
static RUNNING: Mutex<usize> = Mutex::new(0);

/// Signalled when a compile ends.
static TURN: Condvar = Condvar::new();

/// Compiles a launch waits for that are waiting for a turn: ahead of every compile started
/// ahead of need (a small module's other kernels, see [`MODULE_COMPILE_MAX_KERNELS`]).
static URGENT: AtomicUsize = AtomicUsize::new(0);

/// How long a waiting launch (or compiler thread) sleeps between looks at its cancellation
/// and time limit.
const POLL: Duration = Duration::from_millis(10);

/// What a compile is charged, in bytes: 8 MiB, 3 KiB per unit of compile cost (registers
/// live where control flow joins, times code versions) and 16 KiB per instruction optimized
/// or 4 KiB not. The growth of peak memory measured (release build, 2026-11-30) stayed under
/// it: 200 registers live across 100 if/else diamonds (cost about 120,000) 225 MB, 100
/// across 200 330 MB, 6,000 dependent additions optimized 52 MB, 60,000 not 102 MB, 2,500
/// in group code 37 MB.
fn compile_bytes(cost: u64, insts: usize, optimized: bool) -> u64 {
    let per_inst: u64 = if optimized { 16 << 10 } else { 4 << 10 };
    (8u64 << 20)
        .saturating_add(cost.saturating_mul(3 << 10))
        .saturating_add((insts as u64).saturating_mul(per_inst))
}

/// Where a kernel's compile stands.
enum State {
    Running,
    /// Compiled, or `None`: runs interpreted.
    Done(Option<Arc<Compiled>>),
    /// Not compiled this time (its memory was refused, or it was cancelled before its turn):
    /// the next launch tries again.
    Retry,
}

/// A kernel's compile, kept in its module's cache (`KernelCache`) by kernel index.
struct Slot {
    state: Mutex<State>,
    done: Condvar,
}

impl Slot {
    fn retry(&self) -> bool {
        matches!(*self.lock(), State::Retry)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn finish(&self, s: State) {
        *self.lock() = s;
        self.done.notify_all();
    }

    /// The compile's result once it ends; [`KernelError::Cancelled`] or
    /// [`KernelError::Timeout`] as soon as launch `l` must stop.
    fn wait(&self, l: &Launch<'_>) -> Result<Option<Arc<Compiled>>, KernelError> {
        let mut st = self.lock();
        loop {
            match &*st {
                State::Done(c) => return Ok(c.clone()),
                State::Retry => return Ok(None),
                State::Running => {}
            }
            l.check_stop()?;
            st = self
                .done
                .wait_timeout(st, POLL)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

/// Modules of at most this many kernels have them all compiled at the first launch of one
/// (the others in the background, on the cores the launch leaves idle while it waits), as a
/// GPU driver compiles a module's PTX when it loads: a program's next kernels are then
/// ready, or nearly, when it launches them. Larger modules (CuPy's CUB modules, hundreds of
/// kernels of which a program uses a few) compile each kernel at its own first launch. The
/// others start only where no other compile is under way, and give their turn to any
/// compile a launch waits for; their memory is charged like any compile's, for as long as
/// they run (a program allocating nearly all device memory meanwhile may be refused).
const MODULE_COMPILE_MAX_KERNELS: usize = 8;

type Slots = std::collections::HashMap<u32, Option<Arc<dyn Any + Send + Sync>>>;

/// The compiled form of kernel `k` of `m` for launch `l`, compiling it on first use (`None`:
/// it runs interpreted). Fails only when `l` must stop while the compile runs.
pub(crate) fn get(
    m: &Module,
    k: u32,
    l: &Launch<'_>,
) -> Result<Option<Arc<Compiled>>, KernelError> {
    let slot = {
        let Ok(mut map) = m.jit.0.lock() else {
            return Ok(None);
        };
        let current = match map.get(&k) {
            Some(None) => return Ok(None),
            Some(Some(a)) => a.clone().downcast::<Slot>().ok(),
            None => None,
        };
        match current {
            Some(s) if !s.retry() => s,
            _ => {
                let first = map.is_empty();
                let s = begin(m, k, l, &mut map, false);
                // Only the compile just started: the backend has nothing else to compile.
                let idle = THREADS.load(Ordering::Relaxed) <= 1;
                if first && idle && m.kernels.len() <= MODULE_COMPILE_MAX_KERNELS {
                    for j in (0..m.kernels.len() as u32).filter(|&j| j != k) {
                        begin(m, j, l, &mut map, true);
                    }
                }
                match s {
                    Some(s) => s,
                    None => return Ok(None),
                }
            }
        }
    };
    slot.wait(l)
}

/// Starts compiling kernel `k` of `m` (recorded in `map`; `ahead`: before any launch needs
/// it); its slot, or `None` where it runs interpreted (for good, or this time only).
fn begin(m: &Module, k: u32, l: &Launch<'_>, map: &mut Slots, ahead: bool) -> Option<Arc<Slot>> {
    let info = m.kernels.get(k as usize)?;
    let flat = match prepare(m, info.func as usize) {
        Ok(f) => f,
        Err(why) => {
            log::info!("kernel {} runs interpreted: {why}", info.name);
            map.insert(k, None);
            return None;
        }
    };
    let s = Arc::new(Slot {
        state: Mutex::new(State::Running),
        done: Condvar::new(),
    });
    if !start(flat, s.clone(), info.name.clone(), l, ahead) {
        return None;
    }
    map.insert(k, Some(s.clone() as Arc<dyn Any + Send + Sync>));
    Some(s)
}

/// The kernel's code with its calls expanded, every instruction one the compiler handles.
fn prepare(m: &Module, func: usize) -> Result<inline::Flat, String> {
    // The compiler may panic on input it rejects; that kernel is then interpreted.
    std::panic::catch_unwind(AssertUnwindSafe(|| {
        let flat = inline::flatten(m, func)?;
        build::check(&flat.code, flat.nregs, m.syms.len())?;
        Ok(flat)
    }))
    .unwrap_or_else(|_| Err("the code generator failed".into()))
}

/// Starts compiling `flat` on a thread of its own, which fills `slot`; `false` (nothing
/// started) where there are too many compiler threads or none can start.
fn start(flat: inline::Flat, slot: Arc<Slot>, name: String, l: &Launch<'_>, ahead: bool) -> bool {
    if THREADS.fetch_add(1, Ordering::Relaxed) >= MAX_COMPILER_THREADS {
        THREADS.fetch_sub(1, Ordering::Relaxed);
        log::debug!("kernel {name} runs interpreted this time: too many compiles waiting");
        return false;
    }
    let cancel = l.opts.cancel.clone();
    let memory = l.opts.compile_memory.clone();
    let label = name.clone();
    let r = std::thread::Builder::new()
        .name("vcuda-jit".into())
        .spawn(move || {
            let _alive = Alive;
            let state = run(flat, &name, cancel.as_ref(), memory.as_ref(), ahead);
            slot.finish(state);
        });
    match r {
        Ok(_) => true,
        Err(e) => {
            // The closure (and its `Alive`) never ran: nothing to give back but the count.
            THREADS.fetch_sub(1, Ordering::Relaxed);
            log::debug!("kernel {label} runs interpreted this time: no compiler thread: {e}");
            false
        }
    }
}

/// Counts a compiler thread in [`THREADS`] until it ends.
struct Alive;

impl Drop for Alive {
    fn drop(&mut self) {
        THREADS.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A turn to compile ([`RUNNING`]), given back on drop.
struct Turn;

impl Turn {
    /// Waits for a turn (`ahead`: after every compile a launch waits for); `None` if
    /// `cancel` is cancelled first.
    fn take(cancel: Option<&Cancel>, ahead: bool) -> Option<Turn> {
        struct Waiting(bool);
        impl Drop for Waiting {
            fn drop(&mut self) {
                if self.0 {
                    URGENT.fetch_sub(1, Ordering::Relaxed);
                }
            }
        }
        let _waiting = Waiting(!ahead);
        if !ahead {
            URGENT.fetch_add(1, Ordering::Relaxed);
        }
        let max = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut n = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if cancel.is_some_and(Cancel::is_cancelled) {
                return None;
            }
            if *n < max && (!ahead || URGENT.load(Ordering::Relaxed) == 0) {
                *n += 1;
                return Some(Turn);
            }
            n = TURN
                .wait_timeout(n, POLL)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        *RUNNING.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
        TURN.notify_one();
    }
}

/// Compiles `flat` once it has a turn, its memory charged to `memory` while it runs.
fn run(
    flat: inline::Flat,
    name: &str,
    cancel: Option<&Cancel>,
    memory: Option<&CompileMemory>,
    ahead: bool,
) -> State {
    let Some(_turn) = Turn::take(cancel, ahead) else {
        return State::Retry;
    };
    let mut charge = None;
    let mut refused = false;
    let started = std::time::Instant::now();
    let r = std::panic::catch_unwind(AssertUnwindSafe(|| {
        let mut admit = |cost: u64, insts: usize, optimized: bool| {
            let Some(mem) = memory else {
                return Ok(());
            };
            let bytes = compile_bytes(cost, insts, optimized);
            match mem.charge(bytes) {
                Some(t) => {
                    charge = Some(t);
                    Ok(())
                }
                None => {
                    refused = true;
                    Err(format!(
                        "its compile ({} MiB) does not fit in the memory left",
                        bytes >> 20
                    ))
                }
            }
        };
        compile(flat, &mut admit)
    }))
    .unwrap_or_else(|_| Err("the code generator failed".into()));
    drop(charge);
    match r {
        Ok(c) => {
            log::debug!(
                "kernel {name} compiled in {:?} ({} instructions)",
                started.elapsed(),
                c._insts.len()
            );
            if c._insts.len() > super::OPTIMIZE_MAX_INSTS {
                log::info!(
                    "kernel {name} compiled without optimizing: {} instructions",
                    c._insts.len()
                );
            }
            State::Done(Some(Arc::new(c)))
        }
        Err(why) if refused => {
            log::info!("kernel {name} runs interpreted for now: {why}");
            State::Retry
        }
        Err(why) => {
            log::info!("kernel {name} runs interpreted: {why}");
            State::Done(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_covers_what_was_measured() {
        // (cost, instructions, optimized, bytes measured)
        for (cost, insts, opt, seen) in [
            (120_000, 1_000, true, 330u64 << 20),
            (120_000, 700, true, 225 << 20),
            (0, 6_000, true, 52 << 20),
            (0, 60_000, false, 102 << 20),
            (0, 2_500, true, 37 << 20),
        ] {
            assert!(
                compile_bytes(cost, insts, opt) > seen,
                "{cost} {insts} {opt}"
            );
        }
    }
}
