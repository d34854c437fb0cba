// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Kernel execution: blocks in parallel on OS threads, warps of 32 lanes in lockstep.
//!
//! Divergence uses per-lane program counters with minimum-key scheduling: each step runs the
//! lanes whose (call-site stack, pc) key is smallest; lanes that branch ahead wait until the
//! others catch up, so they reconverge at the first common point (the immediate post-dominator
//! in the structured code nvcc emits). Warp operations see the lanes executing together.
//!
//! [`launch`] checks the configuration and spreads the grid's blocks over worker threads. The
//! rest is split by topic: [`block`] runs one block (its warps in turn, barriers), [`warp`]
//! holds a warp's registers and the divergence scheduler, [`step`] interprets instructions,
//! [`access`] reads and writes the memory spaces, [`operand`] reads source operands and special
//! registers, and [`call`] handles calls, returns and the `vprintf` / `__assertfail` intrinsics.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant, SystemTime},
};

use self::{
    block::{Bar, Block},
    warp::Warp,
};
use crate::{
    alu::Lanes,
    error::{KernelError, Location},
    ir::Space,
    memory::{DeviceMemory, GlobalMem},
    module::{
        FUNC_WINDOW, GlobalId, KernelId, KernelInfo, LOCAL_WINDOW, Module, PARAM_WINDOW,
        SHARED_WINDOW, Sym, WINDOW_SIZE,
    },
};

/// Grid and block shape of a launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchConfig {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Bytes of dynamic (`extern __shared__`) shared memory per block.
    pub dynamic_shared: u32,
    /// A cooperative launch's grid workspace (0: not cooperative): device memory of at
    /// least [`GRID_WORKSPACE_SIZE`] zeroed bytes that `%envreg1`/`%envreg2` point to and
    /// cooperative groups' grid barrier counts in. Every block of a cooperative launch runs
    /// at once, on a thread of its own, so blocks can wait for each other; such a grid may
    /// have at most [`MAX_COOPERATIVE_BLOCKS`] blocks.
    pub grid_workspace: u64,
}

/// Bytes of a cooperative launch's grid workspace (`{u32 size; u32 barrier;}`).
pub const GRID_WORKSPACE_SIZE: u64 = 8;

/// Most blocks of a cooperative launch (each runs on a thread of its own).
pub const MAX_COOPERATIVE_BLOCKS: u64 = 1024;

/// Tuning and limits for a launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchOptions {
    /// OS threads to run blocks on; 0 means all available cores.
    pub threads: usize,
    /// Fail with [`KernelError::InstructionLimit`] after this many thread-instructions.
    pub instruction_limit: Option<u64>,
    /// Local memory (stack) per thread, including call frames.
    pub max_local_bytes: u32,
    /// Nested calls per thread.
    pub max_call_depth: u32,
    /// Register file of one block (8 bytes per register per thread).
    pub max_register_bytes: u64,
    /// Static plus dynamic shared memory per block (227 KiB on sm_90).
    pub max_shared_bytes: u32,
    /// Value of `%nsmid` (132 on an H100 SXM).
    pub num_sms: u32,
    /// Fail with [`KernelError::Timeout`] once this much wall time has passed (a GPU
    /// watchdog; none by default, as on a GPU without one).
    pub time_limit: Option<Duration>,
    /// Fail with [`KernelError::Cancelled`] once this is cancelled (the session ended).
    pub cancel: Option<Cancel>,
    /// Run kernels compiled to native code where the compiler handles them (the default);
    /// `false` interprets every kernel.
    pub jit: bool,
}

/// Stops running launches from another thread: a launch given a clone of it fails with
/// [`KernelError::Cancelled`] soon after [`Cancel::cancel`] (at its next block or scheduling
/// round).
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// Cancels every launch that holds a clone of this, now and later.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether [`Cancel::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

impl PartialEq for Cancel {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Cancel {}

impl Default for LaunchOptions {
    fn default() -> Self {
        LaunchOptions {
            threads: 0,
            instruction_limit: None,
            max_local_bytes: 1 << 20,
            max_call_depth: 4096,
            max_register_bytes: 256 << 20,
            max_shared_bytes: 227 * 1024,
            num_sms: 132,
            time_limit: None,
            cancel: None,
            jit: true,
        }
    }
}

/// What a launch did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LaunchStats {
    /// Instructions times the lanes that executed them.
    pub thread_instructions: u64,
    /// Instructions issued per warp.
    pub warp_instructions: u64,
    pub blocks: u64,
    pub elapsed: Duration,
    /// Whether the kernel ran compiled to native code (else interpreted).
    pub compiled: bool,
}

/// Receives device `printf` output, one call per `printf` per thread.
pub trait PrintfSink: Sync {
    fn print(&self, text: &[u8]);
}

impl PrintfSink for Mutex<Vec<u8>> {
    fn print(&self, text: &[u8]) {
        if let Ok(mut v) = self.lock() {
            v.extend_from_slice(text);
        }
    }
}

/// Writes device `printf` output to the process's stdout.
#[derive(Debug, Clone, Copy, Default)]
pub struct StdoutSink;

impl PrintfSink for StdoutSink {
    fn print(&self, text: &[u8]) {
        use std::io::Write;
        let _ = std::io::stdout().lock().write_all(text);
    }
}

/// Warp-instructions a warp runs before the block scheduler moves on (fairness for spin loops).
const SLICE: u32 = 4096;
const ZERO: Lanes = [0; 32];
const MAX_THREADS: u32 = 1024;

pub(crate) struct Launch<'a> {
    pub(crate) module: &'a Module,
    pub(crate) kernel: &'a KernelInfo,
    pub(crate) cfg: LaunchConfig,
    pub(crate) params: &'a [u8],
    pub(crate) syms: Vec<u64>,
    /// Register window base per function (u32::MAX if unreachable).
    pub(crate) reg_base: Vec<u32>,
    pub(crate) total_regs: u32,
    pub(crate) nthreads: u32,
    pub(crate) nblocks: u64,
    pub(crate) shared_size: u32,
    pub(crate) mem: &'a dyn DeviceMemory,
    pub(crate) out: &'a dyn PrintfSink,
    pub(crate) opts: &'a LaunchOptions,
    pub(crate) next_block: AtomicU64,
    pub(crate) abort: AtomicBool,
    pub(crate) error: Mutex<Option<(u64, KernelError)>>,
    pub(crate) insts: AtomicU64,
    pub(crate) winsts: AtomicU64,
    pub(crate) start: Instant,
    pub(crate) timer0: u64,
}

/// Runs `kernel` over the whole grid. Returns when every block has finished or one failed.
///
/// `params` is the parameter buffer laid out as [`KernelInfo::params`] says (at least
/// `param_size` bytes). `global_addr` gives the device address of each module variable.
#[allow(clippy::too_many_arguments)]
pub fn launch(
    module: &Module,
    kernel: KernelId,
    cfg: &LaunchConfig,
    params: &[u8],
    global_addr: &dyn Fn(GlobalId) -> u64,
    mem: &dyn DeviceMemory,
    out: &dyn PrintfSink,
    opts: &LaunchOptions,
) -> Result<LaunchStats, KernelError> {
    let start = Instant::now();
    let k = module
        .kernels
        .get(kernel.0 as usize)
        .ok_or_else(|| KernelError::InvalidConfig("unknown kernel".into()))?;
    let [bx, by, bz] = cfg.block;
    let [gx, gy, gz] = cfg.grid;
    let nthreads = bx as u64 * by as u64 * bz as u64;
    if bx == 0
        || by == 0
        || bz == 0
        || bx > 1024
        || by > 1024
        || bz > 64
        || nthreads > MAX_THREADS as u64
    {
        return Err(KernelError::InvalidConfig(format!("block {bx}x{by}x{bz}")));
    }
    if gx == 0 || gy == 0 || gz == 0 || gx > i32::MAX as u32 || gy > 65535 || gz > 65535 {
        return Err(KernelError::InvalidConfig(format!("grid {gx}x{gy}x{gz}")));
    }
    if let Some(r) = k.reqntid
        && r != cfg.block
    {
        return Err(KernelError::InvalidConfig(format!(
            "block {bx}x{by}x{bz} but .reqntid {}x{}x{}",
            r[0], r[1], r[2]
        )));
    }
    if let Some(m) = k.maxntid
        && nthreads > m[0] as u64 * m[1] as u64 * m[2] as u64
    {
        return Err(KernelError::InvalidConfig(format!(
            "{nthreads} threads exceed .maxntid {}x{}x{}",
            m[0], m[1], m[2]
        )));
    }
    if params.len() < k.param_size as usize {
        return Err(KernelError::InvalidParams {
            expected: k.param_size,
            got: params.len(),
        });
    }
    let dyn_base =
        (k.static_shared as u64).div_ceil(k.dyn_align.max(1) as u64) * k.dyn_align.max(1) as u64;
    let shared = if cfg.dynamic_shared > 0 {
        dyn_base + cfg.dynamic_shared as u64
    } else {
        k.static_shared as u64
    };
    if shared > opts.max_shared_bytes as u64 {
        return Err(KernelError::SharedMemoryTooLarge {
            requested: shared,
            limit: opts.max_shared_bytes as u64,
        });
    }
    let syms = module
        .syms
        .iter()
        .enumerate()
        .map(|(i, s)| match *s {
            Sym::Global(g) => global_addr(g),
            Sym::SharedModule => k.module_shared_offset(i as u32),
            Sym::SharedKernel(o) => k.shared_base as u64 + o as u64,
            Sym::SharedDynamic => dyn_base,
            Sym::Func(f) => FUNC_WINDOW + f as u64,
        })
        .collect();
    // Register windows for the functions this kernel can reach.
    let mut reg_base = vec![u32::MAX; module.funcs.len()];
    let mut total_regs = 0u32;
    let mut stack = vec![k.func as usize];
    while let Some(f) = stack.pop() {
        if reg_base[f] != u32::MAX {
            continue;
        }
        reg_base[f] = total_regs;
        total_regs = total_regs.saturating_add(module.funcs[f].nregs);
        stack.extend(module.funcs[f].callees.iter().map(|&c| c as usize));
        if module.funcs[f].indirect_calls {
            stack.extend(module.addr_taken.iter().map(|&c| c as usize));
        }
    }
    let frame = module.funcs[k.func as usize].frame_size;
    if frame > opts.max_local_bytes {
        return Err(KernelError::OutOfResources(format!(
            "{frame} bytes of local memory per thread (limit {})",
            opts.max_local_bytes
        )));
    }
    let reg_bytes = total_regs as u64 * 8 * nthreads.div_ceil(32) * 32;
    if reg_bytes > opts.max_register_bytes {
        return Err(KernelError::OutOfResources(format!(
            "{total_regs} registers per thread"
        )));
    }
    let nblocks = gx as u64 * gy as u64 * gz as u64;
    if cfg.grid_workspace != 0 {
        if nblocks > MAX_COOPERATIVE_BLOCKS {
            return Err(KernelError::InvalidConfig(format!(
                "a cooperative grid of {nblocks} blocks (at most {MAX_COOPERATIVE_BLOCKS})"
            )));
        }
        // Every block is resident at once: the register files, local frames and shared
        // memory of all of them together stay within one block's register budget.
        let per_block = reg_bytes
            .saturating_add(u64::from(frame).saturating_mul(nthreads))
            .saturating_add(shared);
        if per_block.saturating_mul(nblocks) > opts.max_register_bytes {
            return Err(KernelError::OutOfResources(format!(
                "{nblocks} resident blocks of {per_block} bytes of registers, local and \
                 shared memory (limit {} in all)",
                opts.max_register_bytes
            )));
        }
    }
    let l = Launch {
        module,
        kernel: k,
        cfg: *cfg,
        params,
        syms,
        reg_base,
        total_regs,
        nthreads: nthreads as u32,
        nblocks,
        shared_size: shared as u32,
        mem,
        out,
        opts,
        next_block: AtomicU64::new(0),
        abort: AtomicBool::new(false),
        error: Mutex::new(None),
        insts: AtomicU64::new(0),
        winsts: AtomicU64::new(0),
        start,
        timer0: SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64),
    };
    let cores = if opts.threads == 0 {
        pool::cores()
    } else {
        opts.threads
    };
    let workers = (cores as u64).min(nblocks).max(1) as usize;
    let compiled = opts
        .jit
        .then(|| crate::jit::get(module, kernel.0))
        .flatten();
    let work = || match &compiled {
        Some(c) => crate::jit::worker(&l, c),
        None => worker(&l),
    };
    if cfg.grid_workspace != 0 {
        // Cooperative: every block at once (each worker takes one block and finishes).
        pool::run_dedicated(nblocks as usize, &work, &|| {
            l.fail(
                0,
                KernelError::OutOfResources(
                    "a thread for every block of a cooperative launch".into(),
                ),
            )
        });
    } else {
        pool::run(workers, &work);
    }
    if let Some((_, e)) = l.error.lock().ok().and_then(|mut e| e.take()) {
        return Err(e);
    }
    Ok(LaunchStats {
        thread_instructions: l.insts.load(Ordering::Relaxed),
        warp_instructions: l.winsts.load(Ordering::Relaxed),
        blocks: nblocks,
        elapsed: start.elapsed(),
        compiled: compiled.is_some(),
    })
}

/// The state space and offset a generic address falls in (the shared, local and parameter
/// windows; everything else is global).
pub(crate) fn classify(addr: u64) -> (Space, u64) {
    if (SHARED_WINDOW..SHARED_WINDOW + WINDOW_SIZE).contains(&addr) {
        (Space::Shared, addr - SHARED_WINDOW)
    } else if (LOCAL_WINDOW..LOCAL_WINDOW + WINDOW_SIZE).contains(&addr) {
        (Space::Local, addr - LOCAL_WINDOW)
    } else if (PARAM_WINDOW..PARAM_WINDOW + WINDOW_SIZE).contains(&addr) {
        (Space::Param, addr)
    } else {
        (Space::Global, addr)
    }
}

fn worker(l: &Launch<'_>) {
    let mut b = Block::new(l);
    while let Some(id) = l.claim_block() {
        let r = b.run(id);
        let (insts, winsts) = (
            std::mem::take(&mut b.ctx.insts),
            std::mem::take(&mut b.ctx.winsts),
        );
        if !l.block_done(id, r, insts, winsts) || l.cooperative() {
            break;
        }
    }
}

impl Launch<'_> {
    /// A cooperative launch: each worker runs one block (the blocks wait for each other).
    pub(crate) fn cooperative(&self) -> bool {
        self.cfg.grid_workspace != 0
    }

    /// The next block for a worker to run; `None` once the grid is done or the launch
    /// must stop (another block failed, cancelled, past its time limit).
    pub(crate) fn claim_block(&self) -> Option<u64> {
        if self.abort.load(Ordering::Relaxed) {
            return None;
        }
        if let Err(e) = self.check_stop() {
            self.fail(u64::MAX, e);
            return None;
        }
        let id = self.next_block.fetch_add(1, Ordering::Relaxed);
        (id < self.nblocks).then_some(id)
    }

    /// Counts what block `id` executed and records its failure; `false` if it failed (the
    /// worker stops).
    pub(crate) fn block_done(
        &self,
        id: u64,
        r: Result<(), KernelError>,
        insts: u64,
        winsts: u64,
    ) -> bool {
        self.insts.fetch_add(insts, Ordering::Relaxed);
        self.winsts.fetch_add(winsts, Ordering::Relaxed);
        match r {
            Ok(()) => true,
            Err(e) => {
                self.fail(id, e);
                false
            }
        }
    }

    /// Records the failure of block `id` (the lowest block's error wins) and stops the
    /// other workers.
    pub(crate) fn fail(&self, id: u64, e: KernelError) {
        self.abort.store(true, Ordering::Relaxed);
        if let Ok(mut slot) = self.error.lock()
            && slot.as_ref().is_none_or(|(b, _)| id < *b)
        {
            *slot = Some((id, e));
        }
    }

    /// Whether the launch must stop: cancelled, or past its time limit.
    pub(crate) fn check_stop(&self) -> Result<(), KernelError> {
        if self.opts.cancel.as_ref().is_some_and(Cancel::is_cancelled) {
            return Err(KernelError::Cancelled);
        }
        if let Some(limit) = self.opts.time_limit
            && self.start.elapsed() > limit
        {
            return Err(KernelError::Timeout {
                limit_ms: limit.as_millis() as u64,
            });
        }
        Ok(())
    }
}

/// Per-block state the warps share.
struct Ctx<'a> {
    l: &'a Launch<'a>,
    ctaid: [u32; 3],
    block_linear: u64,
    shared: Vec<u8>,
    gmem: GlobalMem<'a>,
    bars: [Bar; 16],
    live: u32,
    insts: u64,
    winsts: u64,
}

/// Lane arrays for operands and results, reused across instructions.
struct Scratch {
    ins: [Lanes; 4],
    out: [Lanes; 2],
    addr: Lanes,
    vals: [Lanes; 4],
}

impl Ctx<'_> {
    fn loc(&self, w: &Warp, lane: usize, line: u32) -> Location {
        Location {
            block: self.ctaid,
            thread: [w.tid[0][lane], w.tid[1][lane], w.tid[2][lane]],
            line,
        }
    }
}

mod access;
pub(crate) use access::window_addr;
mod block;
mod call;
mod operand;
mod pool;
mod step;
mod texture;
mod wmma;
pub(crate) use texture::{SurfError, fetch as tex_fetch, surf_access};
mod warp;
