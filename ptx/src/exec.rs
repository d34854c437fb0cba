// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Kernel execution: blocks in parallel on OS threads, warps of 32 lanes in lockstep.
//!
//! Divergence uses per-lane program counters with minimum-key scheduling: each step runs the
//! lanes whose (call-site stack, pc) key is smallest; lanes that branch ahead wait until the
//! others catch up, so they reconverge at the first common point (the immediate post-dominator
//! in the structured code nvcc emits). Warp operations see the lanes executing together.

use std::{
    sync::{
        Mutex,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant, SystemTime},
};

use crate::{
    alu::Lanes,
    error::{KernelError, Location},
    ir::*,
    memory::{DeviceMemory, GlobalMem, MemFault, atomic_apply},
    module::{
        FUNC_WINDOW, GlobalId, KernelId, KernelInfo, LOCAL_WINDOW, Module, PARAM_WINDOW,
        SHARED_WINDOW, Sym, WINDOW_SIZE,
    },
    printf,
};

/// Grid and block shape of a launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchConfig {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Bytes of dynamic (`extern __shared__`) shared memory per block.
    pub dynamic_shared: u32,
}

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
}

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

struct Launch<'a> {
    module: &'a Module,
    kernel: &'a KernelInfo,
    cfg: LaunchConfig,
    params: &'a [u8],
    syms: Vec<u64>,
    /// Register window base per function (u32::MAX if unreachable).
    reg_base: Vec<u32>,
    total_regs: u32,
    nthreads: u32,
    nblocks: u64,
    shared_size: u32,
    mem: &'a dyn DeviceMemory,
    out: &'a dyn PrintfSink,
    opts: &'a LaunchOptions,
    next_block: AtomicU64,
    abort: AtomicBool,
    error: Mutex<Option<(u64, KernelError)>>,
    insts: AtomicU64,
    winsts: AtomicU64,
    start: Instant,
    timer0: u64,
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
        .map(|s| match *s {
            Sym::Global(g) => global_addr(g),
            Sym::SharedModule(o) => o as u64,
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
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        opts.threads
    };
    let workers = (cores as u64).min(nblocks).max(1) as usize;
    if workers == 1 {
        worker(&l);
    } else {
        std::thread::scope(|s| {
            for _ in 1..workers {
                s.spawn(|| worker(&l));
            }
            worker(&l);
        });
    }
    if let Some((_, e)) = l.error.lock().ok().and_then(|mut e| e.take()) {
        return Err(e);
    }
    Ok(LaunchStats {
        thread_instructions: l.insts.load(Ordering::Relaxed),
        warp_instructions: l.winsts.load(Ordering::Relaxed),
        blocks: nblocks,
        elapsed: start.elapsed(),
    })
}

fn worker(l: &Launch<'_>) {
    let mut b = Block::new(l);
    loop {
        if l.abort.load(Ordering::Relaxed) {
            break;
        }
        let id = l.next_block.fetch_add(1, Ordering::Relaxed);
        if id >= l.nblocks {
            break;
        }
        let r = b.run(id);
        l.insts
            .fetch_add(std::mem::take(&mut b.ctx.insts), Ordering::Relaxed);
        l.winsts
            .fetch_add(std::mem::take(&mut b.ctx.winsts), Ordering::Relaxed);
        if let Err(e) = r {
            l.abort.store(true, Ordering::Relaxed);
            if let Ok(mut slot) = l.error.lock()
                && slot.as_ref().is_none_or(|(b, _)| id < *b)
            {
                *slot = Some((id, e));
            }
            break;
        }
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Bar {
    arrived: u32,
    expected: u32,
    popc: u32,
    and: bool,
    or: bool,
}

#[derive(Debug, Clone, Copy, Default)]
struct BarWait {
    id: u8,
    kind: u8,
    dst: u32,
}

#[derive(Debug)]
struct Frame {
    call_pc: u32,
    caller_base: u32,
    func: u32,
    saved: Option<Box<[u64]>>,
}

struct Warp {
    idx: u32,
    full: u32,
    tid: [[u32; 32]; 3],
    regs: Vec<u64>,
    pc: u32,
    group: u32,
    threshold: u32,
    func: u32,
    rb: usize,
    lane_pc: [u32; 32],
    exited: u32,
    blocked: u32,
    bar_wait: [BarWait; 32],
    frames: Vec<Vec<Frame>>,
    frame_base: [u32; 32],
    local: Vec<Vec<u8>>,
    any_frames: bool,
    dirty: bool,
}

#[inline]
fn lanes(mask: u32) -> impl Iterator<Item = usize> {
    let mut m = mask;
    std::iter::from_fn(move || {
        if m == 0 {
            None
        } else {
            let l = m.trailing_zeros() as usize;
            m &= m - 1;
            Some(l)
        }
    })
}

impl Warp {
    fn new() -> Warp {
        Warp {
            idx: 0,
            full: 0,
            tid: [[0; 32]; 3],
            regs: Vec::new(),
            pc: 0,
            group: 0,
            threshold: u32::MAX,
            func: 0,
            rb: 0,
            lane_pc: [0; 32],
            exited: 0,
            blocked: 0,
            bar_wait: [BarWait::default(); 32],
            frames: (0..32).map(|_| Vec::new()).collect(),
            frame_base: [0; 32],
            local: (0..32).map(|_| Vec::new()).collect(),
            any_frames: false,
            dirty: false,
        }
    }

    fn reset(&mut self, l: &Launch<'_>, idx: u32) {
        let kf = l.kernel.func as usize;
        let func = &l.module.funcs[kf];
        self.idx = idx;
        let first = idx * 32;
        let n = l.nthreads.saturating_sub(first).min(32);
        self.full = if n == 32 { u32::MAX } else { (1u32 << n) - 1 };
        let [bx, by, _] = l.cfg.block;
        let (mut x, mut y, mut z) = (first % bx, (first / bx) % by, first / (bx * by));
        for lane in 0..32 {
            self.tid[0][lane] = x;
            self.tid[1][lane] = y;
            self.tid[2][lane] = z;
            x += 1;
            if x == bx {
                x = 0;
                y += 1;
                if y == by {
                    y = 0;
                    z += 1;
                }
            }
        }
        // Registers start undefined in PTX; stale values from the previous block are not
        // cleared (only a larger file is zero-extended).
        self.regs.resize(l.total_regs as usize * 32, 0);
        self.pc = func.entry;
        self.group = self.full;
        self.threshold = u32::MAX;
        self.func = kf as u32;
        self.rb = l.reg_base[kf] as usize;
        self.lane_pc = [func.entry; 32];
        self.exited = 0;
        self.blocked = 0;
        for f in &mut self.frames {
            f.clear();
        }
        self.frame_base = [0; 32];
        let fs = func.frame_size as usize;
        for loc in &mut self.local {
            if fs > 1 << 16 {
                // Large frames: fresh zeroed allocations, whose pages the OS maps lazily.
                *loc = vec![0; fs];
            } else {
                loc.clear();
                loc.resize(fs, 0);
            }
        }
        self.any_frames = false;
        self.dirty = false;
    }

    #[inline(always)]
    fn reg(&self, r: Reg) -> &Lanes {
        let s = (self.rb + r as usize) * 32;
        self.regs
            .get(s..s + 32)
            .and_then(|x| x.try_into().ok())
            .unwrap_or(&ZERO)
    }

    #[inline(always)]
    fn get(&self, r: Reg, lane: usize) -> u64 {
        self.regs
            .get((self.rb + r as usize) * 32 + lane)
            .copied()
            .unwrap_or(0)
    }

    #[inline(always)]
    fn set(&mut self, r: Reg, lane: usize, v: u64) {
        if r != SINK
            && let Some(x) = self.regs.get_mut((self.rb + r as usize) * 32 + lane)
        {
            *x = v;
        }
    }

    #[inline(always)]
    fn write(&mut self, r: Reg, mask: u32, v: &Lanes) {
        if r == SINK {
            return;
        }
        let s = (self.rb + r as usize) * 32;
        let Some(d) = self.regs.get_mut(s..s + 32) else {
            return;
        };
        if mask == u32::MAX {
            d.copy_from_slice(v);
        } else {
            for l in lanes(mask) {
                d[l] = v[l];
            }
        }
    }

    fn pred_mask(&self, r: Reg) -> u32 {
        let v = self.reg(r);
        let mut m = 0u32;
        for (l, x) in v.iter().enumerate() {
            m |= ((*x & 1) as u32) << l;
        }
        m
    }

    fn key_elem(&self, lane: usize, i: usize) -> Option<u32> {
        let f = &self.frames[lane];
        match i.cmp(&f.len()) {
            std::cmp::Ordering::Less => Some(f[i].call_pc),
            std::cmp::Ordering::Equal => Some(self.lane_pc[lane]),
            std::cmp::Ordering::Greater => None,
        }
    }

    fn key_cmp(&self, a: usize, b: usize) -> std::cmp::Ordering {
        let mut i = 0;
        loop {
            match (self.key_elem(a, i), self.key_elem(b, i)) {
                (Some(x), Some(y)) if x == y => i += 1,
                (Some(x), Some(y)) => return x.cmp(&y),
                (None, None) => return std::cmp::Ordering::Equal,
                (None, _) => return std::cmp::Ordering::Less,
                (_, None) => return std::cmp::Ordering::Greater,
            }
        }
    }

    /// Picks the lanes with the smallest (call stack, pc) key as the new group.
    fn schedule(&mut self, l: &Launch<'_>) {
        for lane in lanes(self.group) {
            self.lane_pc[lane] = self.pc;
        }
        self.dirty = false;
        let run = self.full & !self.exited & !self.blocked;
        if run == 0 {
            self.group = 0;
            return;
        }
        let kf = l.kernel.func;
        if !self.any_frames {
            let mut min = u32::MAX;
            for lane in lanes(run) {
                min = min.min(self.lane_pc[lane]);
            }
            let (mut grp, mut thr) = (0u32, u32::MAX);
            for lane in lanes(run) {
                let p = self.lane_pc[lane];
                if p == min {
                    grp |= 1 << lane;
                } else {
                    thr = thr.min(p);
                }
            }
            self.group = grp;
            self.pc = min;
            self.threshold = thr;
            self.func = kf;
        } else {
            let mut best = run.trailing_zeros() as usize;
            for lane in lanes(run) {
                if self.key_cmp(lane, best).is_lt() {
                    best = lane;
                }
            }
            let n = self.frames[best].len();
            let (mut grp, mut thr) = (0u32, u32::MAX);
            for lane in lanes(run) {
                if self.key_cmp(lane, best).is_eq() {
                    grp |= 1 << lane;
                    continue;
                }
                // When does the group's key (S, pc) reach this lane's key?
                let fw = &self.frames[lane];
                let same_prefix =
                    fw.len() >= n && (0..n).all(|i| fw[i].call_pc == self.frames[best][i].call_pc);
                if same_prefix {
                    let t = match self.key_elem(lane, n) {
                        Some(v) if fw.len() == n => v,
                        Some(v) => v.saturating_add(1),
                        None => u32::MAX,
                    };
                    thr = thr.min(t);
                }
            }
            self.group = grp;
            self.pc = self.lane_pc[best];
            self.threshold = thr;
            self.func = self.frames[best].last().map_or(kf, |f| f.func);
        }
        self.rb = l.reg_base.get(self.func as usize).copied().unwrap_or(0) as usize;
    }

    /// Sends the group's lanes to `taken ? target : fall` and reschedules.
    fn diverge(&mut self, l: &Launch<'_>, taken: u32, target: u32, fall: u32) {
        for lane in lanes(self.group) {
            self.lane_pc[lane] = if taken >> lane & 1 != 0 { target } else { fall };
        }
        self.group = 0;
        self.schedule(l);
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

struct Block<'a> {
    ctx: Ctx<'a>,
    warps: Vec<Warp>,
    sc: Box<Scratch>,
}

enum Fault {
    Illegal { addr: u64, size: u32, write: bool },
    Misaligned { addr: u64, size: u32 },
    Stack,
}

#[inline(always)]
fn rd(buf: &[u8], off: u64, size: u32) -> Option<u64> {
    let o = usize::try_from(off).ok()?;
    let end = o.checked_add(size as usize)?;
    let b = buf.get(o..end)?;
    Some(match size {
        1 => b[0] as u64,
        2 => u16::from_le_bytes(b.try_into().ok()?) as u64,
        4 => u32::from_le_bytes(b.try_into().ok()?) as u64,
        8 => u64::from_le_bytes(b.try_into().ok()?),
        _ => return None,
    })
}

#[inline(always)]
fn wr(buf: &mut [u8], off: u64, size: u32, v: u64) -> Option<()> {
    let o = usize::try_from(off).ok()?;
    let end = o.checked_add(size as usize)?;
    let b = buf.get_mut(o..end)?;
    match size {
        1 => b[0] = v as u8,
        2 => b.copy_from_slice(&(v as u16).to_le_bytes()),
        4 => b.copy_from_slice(&(v as u32).to_le_bytes()),
        8 => b.copy_from_slice(&v.to_le_bytes()),
        _ => return None,
    }
    Some(())
}

/// Where an `SZ`-byte access of `lane` at `a` lies in a block-owned buffer of `len` bytes:
/// its offset, or the lane's fault (misaligned, or outside the buffer).
#[inline(always)]
fn fixed_offset<const SZ: usize>(
    lane: usize,
    a: u64,
    len: usize,
    write: bool,
) -> Result<usize, (usize, Fault)> {
    let size = SZ as u32;
    if a & (SZ as u64 - 1) != 0 {
        return Err((lane, Fault::Misaligned { addr: a, size }));
    }
    match usize::try_from(a) {
        Ok(o) if o.checked_add(SZ).is_some_and(|end| end <= len) => Ok(o),
        _ => Err((
            lane,
            Fault::Illegal {
                addr: a,
                size,
                write,
            },
        )),
    }
}

/// Loads `SZ` bytes per active lane from a block-owned buffer (shared memory).
#[inline(always)]
fn ld_fixed<const SZ: usize>(
    buf: &[u8],
    base: &Lanes,
    off: u64,
    mask: u32,
    sx: bool,
    out: &mut Lanes,
) -> Result<(), (usize, Fault)> {
    for lane in lanes(mask) {
        let o = fixed_offset::<SZ>(lane, base[lane].wrapping_add(off), buf.len(), false)?;
        let mut x = [0u8; 8];
        x[..SZ].copy_from_slice(&buf[o..o + SZ]);
        let v = u64::from_le_bytes(x);
        out[lane] = if sx { sext(v, SZ as u8) } else { v };
    }
    Ok(())
}

/// Stores `SZ` bytes per active lane into a block-owned buffer (shared memory).
#[inline(always)]
fn st_fixed<const SZ: usize>(
    buf: &mut [u8],
    base: &Lanes,
    off: u64,
    mask: u32,
    vals: &Lanes,
) -> Result<(), (usize, Fault)> {
    for lane in lanes(mask) {
        let o = fixed_offset::<SZ>(lane, base[lane].wrapping_add(off), buf.len(), true)?;
        buf[o..o + SZ].copy_from_slice(&vals[lane].to_le_bytes()[..SZ]);
    }
    Ok(())
}

fn sext(v: u64, bytes: u8) -> u64 {
    let sh = 64 - bytes as u32 * 8;
    (((v << sh) as i64) >> sh) as u64
}

impl<'a> Block<'a> {
    fn new(l: &'a Launch<'a>) -> Block<'a> {
        let nwarps = l.nthreads.div_ceil(32) as usize;
        Block {
            ctx: Ctx {
                l,
                ctaid: [0; 3],
                block_linear: 0,
                shared: vec![0; l.shared_size as usize],
                gmem: GlobalMem::new(l.mem),
                bars: [Bar::default(); 16],
                live: 0,
                insts: 0,
                winsts: 0,
            },
            warps: (0..nwarps).map(|_| Warp::new()).collect(),
            sc: Box::new(Scratch {
                ins: [[0; 32]; 4],
                out: [[0; 32]; 2],
                addr: [0; 32],
                vals: [[0; 32]; 4],
            }),
        }
    }

    fn run(&mut self, id: u64) -> Result<(), KernelError> {
        let l = self.ctx.l;
        let [gx, gy, _] = l.cfg.grid;
        self.ctx.ctaid = [
            (id % gx as u64) as u32,
            ((id / gx as u64) % gy as u64) as u32,
            (id / (gx as u64 * gy as u64)) as u32,
        ];
        self.ctx.block_linear = id;
        self.ctx.shared.fill(0);
        self.ctx.bars = [Bar::default(); 16];
        self.ctx.live = l.nthreads;
        for (i, w) in self.warps.iter_mut().enumerate() {
            w.reset(l, i as u32);
        }
        loop {
            let mut ran = false;
            for w in &mut self.warps {
                if w.full & !w.exited & !w.blocked != 0 {
                    ran = true;
                    self.ctx.run_warp(w, &mut self.sc)?;
                }
            }
            let released = self.release_barriers();
            if self.warps.iter().all(|w| w.exited == w.full) {
                return Ok(());
            }
            if !ran && !released {
                return Err(KernelError::Deadlock {
                    block: self.ctx.ctaid,
                });
            }
            if l.abort.load(Ordering::Relaxed) {
                return Ok(());
            }
            if let Some(limit) = l.opts.instruction_limit
                && l.insts
                    .load(Ordering::Relaxed)
                    .saturating_add(self.ctx.insts)
                    > limit
            {
                return Err(KernelError::InstructionLimit { limit });
            }
        }
    }

    fn release_barriers(&mut self) -> bool {
        let mut released = false;
        for id in 0..16u8 {
            let bar = self.ctx.bars[id as usize];
            if bar.arrived == 0 {
                continue;
            }
            let expected = if bar.expected != 0 {
                bar.expected
            } else {
                self.ctx.live
            };
            if bar.arrived < expected {
                continue;
            }
            for w in &mut self.warps {
                for lane in lanes(w.blocked) {
                    let bw = w.bar_wait[lane];
                    if bw.id != id {
                        continue;
                    }
                    w.blocked &= !(1 << lane);
                    w.dirty = true;
                    let v = match bw.kind {
                        1 => bar.popc as u64,
                        2 => bar.and as u64,
                        3 => bar.or as u64,
                        _ => continue,
                    };
                    if let Some(x) = w.regs.get_mut(bw.dst as usize * 32 + lane) {
                        *x = v;
                    }
                }
            }
            self.ctx.bars[id as usize] = Bar::default();
            released = true;
        }
        released
    }
}

impl<'a> Ctx<'a> {
    fn loc(&self, w: &Warp, lane: usize, line: u32) -> Location {
        Location {
            block: self.ctaid,
            thread: [w.tid[0][lane], w.tid[1][lane], w.tid[2][lane]],
            line,
        }
    }

    fn fault(&self, f: Fault, w: &Warp, lane: usize, line: u32) -> KernelError {
        let loc = self.loc(w, lane, line);
        match f {
            Fault::Illegal { addr, size, write } => KernelError::IllegalAddress {
                addr,
                size,
                write,
                loc,
            },
            Fault::Misaligned { addr, size } => KernelError::MisalignedAddress { addr, size, loc },
            Fault::Stack => KernelError::StackOverflow { loc },
        }
    }

    fn sreg(&self, w: &Warp, s: Sreg, lane: usize) -> u64 {
        let l = self.l;
        let elapsed = || l.start.elapsed().as_nanos() as u64;
        match s {
            Sreg::Tid(d) => w.tid[d as usize % 3][lane] as u64,
            Sreg::Ntid(d) => l.cfg.block[d as usize % 3] as u64,
            Sreg::Ctaid(d) => self.ctaid[d as usize % 3] as u64,
            Sreg::Nctaid(d) => l.cfg.grid[d as usize % 3] as u64,
            Sreg::Laneid => lane as u64,
            Sreg::Warpid => w.idx as u64,
            Sreg::Nwarpid => 64,
            Sreg::Smid => self.block_linear % l.opts.num_sms.max(1) as u64,
            Sreg::Nsmid => l.opts.num_sms as u64,
            Sreg::Gridid => 1,
            Sreg::LanemaskEq => 1 << lane,
            Sreg::LanemaskLe => ((2u64 << lane) - 1) & 0xffff_ffff,
            Sreg::LanemaskLt => (1u64 << lane) - 1,
            Sreg::LanemaskGe => !((1u64 << lane) - 1) & 0xffff_ffff,
            Sreg::LanemaskGt => !((2u64 << lane) - 1) & 0xffff_ffff,
            Sreg::Clock => elapsed() & 0xffff_ffff,
            Sreg::ClockHi => (elapsed() >> 32) & 0xffff_ffff,
            Sreg::Clock64 => elapsed(),
            Sreg::Globaltimer => l.timer0.wrapping_add(elapsed()),
            Sreg::GlobaltimerLo => l.timer0.wrapping_add(elapsed()) & 0xffff_ffff,
            Sreg::GlobaltimerHi => l.timer0.wrapping_add(elapsed()) >> 32,
            Sreg::DynamicSmem => l.cfg.dynamic_shared as u64,
            Sreg::TotalSmem => l.shared_size as u64,
            Sreg::Const(v) => v as u64,
        }
    }

    #[inline(always)]
    fn val(&self, w: &Warp, s: &Src, lane: usize) -> u64 {
        match *s {
            Src::Reg(r) => w.get(r, lane),
            Src::NotReg(r) => (w.get(r, lane) & 1) ^ 1,
            Src::Imm(v) => v,
            Src::Sreg(sr) => self.sreg(w, sr, lane),
            Src::Sym(i, off) => self
                .l
                .syms
                .get(i as usize)
                .copied()
                .unwrap_or(0)
                .wrapping_add(off as u64),
            Src::Local(off) => w.frame_base[lane] as u64 + off as u64,
        }
    }

    #[inline]
    fn fill(&self, w: &Warp, s: &Src, out: &mut Lanes) {
        match *s {
            Src::Imm(v) => *out = [v; 32],
            Src::Sym(..) => *out = [self.val(w, s, 0); 32],
            Src::Reg(r) => *out = *w.reg(r),
            Src::Sreg(Sreg::Tid(d)) => {
                for (o, t) in out.iter_mut().zip(&w.tid[d as usize % 3]) {
                    *o = *t as u64;
                }
            }
            Src::Sreg(Sreg::Ntid(_) | Sreg::Ctaid(_) | Sreg::Nctaid(_) | Sreg::Const(_)) => {
                *out = [self.val(w, s, 0); 32]
            }
            _ => {
                for (lane, o) in out.iter_mut().enumerate() {
                    *o = self.val(w, s, lane);
                }
            }
        }
    }

    fn classify(addr: u64) -> (Space, u64) {
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

    fn load(
        &mut self,
        w: &Warp,
        lane: usize,
        space: Space,
        addr: u64,
        size: u32,
    ) -> Result<u64, Fault> {
        let ill = Fault::Illegal {
            addr,
            size,
            write: false,
        };
        let (space, a) = match space {
            Space::Generic => Self::classify(addr),
            s => (s, addr),
        };
        match space {
            Space::Global | Space::Const | Space::Generic => match self.gmem.load(a, size) {
                Ok(v) => Ok(v),
                Err(_) => Err(ill),
            },
            Space::Shared => rd(&self.shared, a, size).ok_or(ill),
            Space::Local => rd(&w.local[lane], a, size).ok_or(ill),
            Space::Param if a >= PARAM_WINDOW => {
                rd(self.l.params, a.wrapping_sub(PARAM_WINDOW), size).ok_or(ill)
            }
            // `.param` variables of device functions and call sites live in the frame.
            Space::Param => rd(&w.local[lane], a, size).ok_or(ill),
        }
    }

    fn store(
        &mut self,
        w: &mut Warp,
        lane: usize,
        space: Space,
        addr: u64,
        size: u32,
        v: u64,
    ) -> Result<(), Fault> {
        let ill = Fault::Illegal {
            addr,
            size,
            write: true,
        };
        let (space, a) = match space {
            Space::Generic => Self::classify(addr),
            s => (s, addr),
        };
        match space {
            Space::Global | Space::Generic => self.gmem.store(a, size, v).map_err(|_| ill),
            Space::Shared => wr(&mut self.shared, a, size, v).ok_or(ill),
            Space::Local => wr(&mut w.local[lane], a, size, v).ok_or(ill),
            Space::Param if a < PARAM_WINDOW => wr(&mut w.local[lane], a, size, v).ok_or(ill),
            Space::Const | Space::Param => Err(ill),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn atomic(
        &mut self,
        w: &mut Warp,
        lane: usize,
        space: Space,
        addr: u64,
        size: u32,
        op: AtomOp,
        signed: bool,
        b: u64,
        c: u64,
    ) -> Result<u64, Fault> {
        let ill = Fault::Illegal {
            addr,
            size,
            write: true,
        };
        let (space, a) = match space {
            Space::Generic => Self::classify(addr),
            s => (s, addr),
        };
        let rmw = |buf: &mut [u8]| -> Option<u64> {
            let old = rd(buf, a, size)?;
            wr(buf, a, size, atomic_apply(op, size, signed, old, b, c))?;
            Some(old)
        };
        match space {
            Space::Global | Space::Generic => match self.gmem.atomic(a, size, op, signed, b, c) {
                Ok(v) => Ok(v),
                Err(MemFault::HostMisaligned) => Err(Fault::Misaligned { addr, size }),
                Err(MemFault::Illegal) => Err(ill),
            },
            Space::Shared => rmw(&mut self.shared).ok_or(ill),
            Space::Local => rmw(&mut w.local[lane]).ok_or(ill),
            Space::Const | Space::Param => Err(ill),
        }
    }

    // Operands, destinations and lanes are parallel small arrays indexed together.
    #[allow(clippy::needless_range_loop)]
    fn run_warp(&mut self, w: &mut Warp, sc: &mut Scratch) -> Result<(), KernelError> {
        let l = self.l;
        let code = &l.module.code;
        if w.dirty || w.group == 0 {
            w.schedule(l);
        }
        let mut budget = SLICE;
        while w.group != 0 {
            if w.pc >= w.threshold {
                w.schedule(l);
                // Counted against the slice too, so scheduling can never spin.
                budget -= 1;
                if budget == 0 {
                    break;
                }
                continue;
            }
            let Some(inst) = code.get(w.pc as usize) else {
                return Err(KernelError::Unsupported {
                    instruction: "execution past the end of the code".into(),
                    loc: self.loc(w, w.group.trailing_zeros() as usize, 0),
                });
            };
            let group = w.group;
            let mut mask = group;
            if let Some((g, neg)) = inst.guard {
                let p = w.pred_mask(g);
                mask &= if neg { !p } else { p };
            }
            self.insts += group.count_ones() as u64;
            self.winsts += 1;
            match &inst.op {
                Op::Alu {
                    f,
                    ctx,
                    src,
                    nsrc,
                    dst,
                    ndst,
                } => {
                    if mask != 0 {
                        let ns = (*nsrc as usize).min(4);
                        for k in 0..ns {
                            if !matches!(src[k], Src::Reg(_)) {
                                self.fill(w, &src[k], &mut sc.ins[k]);
                            }
                        }
                        let mut refs: [&Lanes; 4] = [&ZERO; 4];
                        for k in 0..ns {
                            refs[k] = match src[k] {
                                Src::Reg(r) => w.reg(r),
                                _ => &sc.ins[k],
                            };
                        }
                        f(ctx, &refs, &mut sc.out);
                        for k in 0..(*ndst as usize).min(2) {
                            w.write(dst[k], mask, &sc.out[k]);
                        }
                    }
                    w.pc += 1;
                }
                Op::Mov { d, a, mask: m } => {
                    if mask != 0 {
                        match *a {
                            Src::Reg(r) => {
                                let v = &mut sc.ins[0];
                                for (x, y) in v.iter_mut().zip(w.reg(r)) {
                                    *x = *y & *m;
                                }
                                w.write(*d, mask, v);
                            }
                            _ => {
                                let v = &mut sc.ins[0];
                                self.fill(w, a, v);
                                for x in v.iter_mut() {
                                    *x &= *m;
                                }
                                w.write(*d, mask, v);
                            }
                        }
                    }
                    w.pc += 1;
                }
                Op::Pack { d, srcs, n, bits } => {
                    let em = if *bits >= 64 {
                        u64::MAX
                    } else {
                        (1u64 << bits) - 1
                    };
                    for lane in lanes(mask) {
                        let mut v = 0u64;
                        for k in 0..(*n as usize).min(4) {
                            v |= (self.val(w, &srcs[k], lane) & em) << (k as u32 * *bits as u32);
                        }
                        w.set(*d, lane, v);
                    }
                    w.pc += 1;
                }
                Op::Unpack { ds, n, bits, a } => {
                    let em = if *bits >= 64 {
                        u64::MAX
                    } else {
                        (1u64 << bits) - 1
                    };
                    for lane in lanes(mask) {
                        let v = self.val(w, a, lane);
                        for k in 0..(*n as usize).min(4) {
                            w.set(ds[k], lane, (v >> (k as u32 * *bits as u32)) & em);
                        }
                    }
                    w.pc += 1;
                }
                Op::Ld {
                    space,
                    size,
                    sext: sx,
                    n,
                    d,
                    addr,
                } => {
                    if mask != 0 {
                        let (sz, n) = (*size as u32, (*n as usize).min(4));
                        let total = sz * n as u32;
                        let amask = total.next_power_of_two() as u64 - 1;
                        if !matches!(addr.base, Src::Reg(_)) {
                            self.fill(w, &addr.base, &mut sc.addr);
                        }
                        let base = match addr.base {
                            Src::Reg(r) => w.reg(r),
                            _ => &sc.addr,
                        };
                        if n == 1 && *space == Space::Shared {
                            let off = addr.off as u64;
                            let out = &mut sc.vals[0];
                            let r = match sz {
                                1 => ld_fixed::<1>(&self.shared, base, off, mask, *sx, out),
                                2 => ld_fixed::<2>(&self.shared, base, off, mask, *sx, out),
                                4 => ld_fixed::<4>(&self.shared, base, off, mask, *sx, out),
                                _ => ld_fixed::<8>(&self.shared, base, off, mask, *sx, out),
                            };
                            if let Err((lane, f)) = r {
                                return Err(self.fault(f, w, lane, inst.line));
                            }
                            w.write(d[0], mask, &sc.vals[0]);
                            w.pc += 1;
                            continue;
                        }
                        for lane in lanes(mask) {
                            let a = base[lane].wrapping_add(addr.off as u64);
                            if a & amask != 0 {
                                return Err(self.fault(
                                    Fault::Misaligned {
                                        addr: a,
                                        size: total,
                                    },
                                    w,
                                    lane,
                                    inst.line,
                                ));
                            }
                            for k in 0..n {
                                let ea = a.wrapping_add((k as u32 * sz) as u64);
                                let v = match *space {
                                    Space::Shared => {
                                        rd(&self.shared, ea, sz).ok_or(Fault::Illegal {
                                            addr: ea,
                                            size: sz,
                                            write: false,
                                        })
                                    }
                                    sp => self.load(w, lane, sp, ea, sz),
                                }
                                .map_err(|f| self.fault(f, w, lane, inst.line))?;
                                sc.vals[k][lane] = if *sx { sext(v, *size) } else { v };
                            }
                        }
                        for k in 0..n {
                            w.write(d[k], mask, &sc.vals[k]);
                        }
                    }
                    w.pc += 1;
                }
                Op::St {
                    space,
                    size,
                    n,
                    v,
                    addr,
                } => {
                    if mask != 0 {
                        let (sz, n) = (*size as u32, (*n as usize).min(4));
                        let total = sz * n as u32;
                        let amask = total.next_power_of_two() as u64 - 1;
                        self.fill(w, &addr.base, &mut sc.addr);
                        for k in 0..n {
                            self.fill(w, &v[k], &mut sc.vals[k]);
                        }
                        if n == 1 && *space == Space::Shared {
                            let (off, base, vals) = (addr.off as u64, &sc.addr, &sc.vals[0]);
                            let r = match sz {
                                1 => st_fixed::<1>(&mut self.shared, base, off, mask, vals),
                                2 => st_fixed::<2>(&mut self.shared, base, off, mask, vals),
                                4 => st_fixed::<4>(&mut self.shared, base, off, mask, vals),
                                _ => st_fixed::<8>(&mut self.shared, base, off, mask, vals),
                            };
                            if let Err((lane, f)) = r {
                                return Err(self.fault(f, w, lane, inst.line));
                            }
                            w.pc += 1;
                            continue;
                        }
                        for lane in lanes(mask) {
                            let a = sc.addr[lane].wrapping_add(addr.off as u64);
                            if a & amask != 0 {
                                return Err(self.fault(
                                    Fault::Misaligned {
                                        addr: a,
                                        size: total,
                                    },
                                    w,
                                    lane,
                                    inst.line,
                                ));
                            }
                            for k in 0..n {
                                let ea = a.wrapping_add((k as u32 * sz) as u64);
                                let x = sc.vals[k][lane];
                                let r = match *space {
                                    Space::Shared => {
                                        wr(&mut self.shared, ea, sz, x).ok_or(Fault::Illegal {
                                            addr: ea,
                                            size: sz,
                                            write: true,
                                        })
                                    }
                                    sp => self.store(w, lane, sp, ea, sz, x),
                                };
                                if let Err(f) = r {
                                    return Err(self.fault(f, w, lane, inst.line));
                                }
                            }
                        }
                    }
                    w.pc += 1;
                }
                Op::Atom {
                    space,
                    op,
                    size,
                    signed,
                    d,
                    addr,
                    b,
                    c,
                } => {
                    let sz = *size as u32;
                    for lane in lanes(mask) {
                        let a = self.val(w, &addr.base, lane).wrapping_add(addr.off as u64);
                        if !a.is_multiple_of(sz as u64) {
                            return Err(self.fault(
                                Fault::Misaligned { addr: a, size: sz },
                                w,
                                lane,
                                inst.line,
                            ));
                        }
                        let (bv, cv) = (self.val(w, b, lane), self.val(w, c, lane));
                        match self.atomic(w, lane, *space, a, sz, *op, *signed, bv, cv) {
                            Ok(old) => w.set(*d, lane, old),
                            Err(f) => return Err(self.fault(f, w, lane, inst.line)),
                        }
                    }
                    w.pc += 1;
                }
                Op::Cvta {
                    to,
                    space,
                    d,
                    a,
                    mask: m,
                } => {
                    let (base, win) = match space {
                        Space::Shared => (SHARED_WINDOW, true),
                        Space::Local => (LOCAL_WINDOW, true),
                        _ => (0, false),
                    };
                    for lane in lanes(mask) {
                        let v = self.val(w, a, lane);
                        let r = if !win {
                            v
                        } else if *to {
                            v.wrapping_sub(base)
                        } else {
                            v.wrapping_add(base)
                        };
                        w.set(*d, lane, r & m);
                    }
                    w.pc += 1;
                }
                Op::Isspacep { space, d, a } => {
                    for lane in lanes(mask) {
                        let (s, _) = Self::classify(self.val(w, a, lane));
                        let r = match space {
                            Space::Global | Space::Const => s == Space::Global,
                            s2 => s == *s2,
                        };
                        w.set(*d, lane, r as u64);
                    }
                    w.pc += 1;
                }
                Op::Bra { target } => {
                    if mask == group {
                        w.pc = *target;
                    } else if mask == 0 {
                        w.pc += 1;
                    } else {
                        let fall = w.pc + 1;
                        w.diverge(l, mask, *target, fall);
                    }
                }
                Op::Brx { idx, targets } => {
                    let fall = w.pc + 1;
                    for lane in lanes(group) {
                        w.lane_pc[lane] = fall;
                    }
                    for lane in lanes(mask) {
                        let i = self.val(w, idx, lane) as u32 as usize;
                        match targets.get(i) {
                            Some(t) => w.lane_pc[lane] = *t,
                            None => {
                                return Err(KernelError::Unsupported {
                                    instruction: format!("brx.idx index {i} out of range"),
                                    loc: self.loc(w, lane, inst.line),
                                });
                            }
                        }
                    }
                    w.group = 0;
                    w.schedule(l);
                }
                Op::Call { target, args, .. } => self.call(w, mask, target, args, inst.line)?,
                Op::Ret => self.ret(w, mask),
                Op::Exit => {
                    w.exited |= mask;
                    self.live -= mask.count_ones().min(self.live);
                    w.group &= !mask;
                    w.pc += 1;
                    if w.group == 0 {
                        w.schedule(l);
                    }
                }
                Op::Trap | Op::Brkpt | Op::Unsupported(_) => {
                    if mask != 0 {
                        let loc = self.loc(w, mask.trailing_zeros() as usize, inst.line);
                        return Err(match &inst.op {
                            Op::Trap => KernelError::Trap { loc },
                            Op::Brkpt => KernelError::Breakpoint { loc },
                            Op::Unsupported(s) => KernelError::Unsupported {
                                instruction: s.to_string(),
                                loc,
                            },
                            _ => KernelError::Trap { loc },
                        });
                    }
                    w.pc += 1;
                }
                Op::Intrinsic { which, args, ret } => {
                    for lane in lanes(mask) {
                        self.intrinsic(w, lane, *which, args, *ret, inst.line)?;
                    }
                    w.pc += 1;
                }
                Op::Bar {
                    kind,
                    id,
                    count,
                    pred,
                    d,
                } => {
                    if mask != 0 {
                        let first = mask.trailing_zeros() as usize;
                        let bid = (self.val(w, id, first) & 15) as usize;
                        let cnt = count.as_ref().map(|c| self.val(w, c, first) as u32);
                        let n = mask.count_ones();
                        let bar = &mut self.bars[bid];
                        if let Some(c) = cnt {
                            bar.expected = c;
                        }
                        if bar.arrived == 0 {
                            bar.and = true;
                        }
                        bar.arrived += n;
                        let k = match kind {
                            BarKind::Arrive => 255,
                            BarKind::Sync => 0,
                            BarKind::RedPopc => 1,
                            BarKind::RedAnd => 2,
                            BarKind::RedOr => 3,
                        };
                        if k != 255 {
                            for lane in lanes(mask) {
                                if k != 0 {
                                    let p = self.val(w, pred, lane) & 1 != 0;
                                    let bar = &mut self.bars[bid];
                                    bar.popc += p as u32;
                                    bar.and &= p;
                                    bar.or |= p;
                                }
                                w.bar_wait[lane] = BarWait {
                                    id: bid as u8,
                                    kind: k,
                                    dst: if *d == SINK {
                                        u32::MAX
                                    } else {
                                        (w.rb + *d as usize) as u32
                                    },
                                };
                                w.lane_pc[lane] = w.pc + 1;
                            }
                            w.blocked |= mask;
                            w.group &= !mask;
                        }
                    }
                    w.pc += 1;
                    if w.group == 0 {
                        w.schedule(l);
                    }
                }
                Op::Shfl {
                    mode,
                    d,
                    p,
                    a,
                    b,
                    c,
                } => {
                    if mask != 0 {
                        let av = &mut sc.addr;
                        self.fill(w, a, av);
                        for lane in lanes(mask) {
                            let bv = self.val(w, b, lane) as u32 & 31;
                            let cv = self.val(w, c, lane) as u32;
                            let seg = (cv >> 8) & 31;
                            let clamp = cv & 31;
                            let ln = lane as i32;
                            let max_lane = ((lane as u32 & seg) | (clamp & !seg)) as i32;
                            let min_lane = (lane as u32 & seg) as i32;
                            let (j, ok) = match mode {
                                ShflMode::Up => {
                                    let j = ln - bv as i32;
                                    (j, j >= max_lane)
                                }
                                ShflMode::Down => {
                                    let j = ln + bv as i32;
                                    (j, j <= max_lane)
                                }
                                ShflMode::Bfly => {
                                    let j = ln ^ bv as i32;
                                    (j, j <= max_lane)
                                }
                                ShflMode::Idx => {
                                    let j = min_lane | (bv & !seg) as i32;
                                    (j, j <= max_lane)
                                }
                            };
                            let src = if ok && (0..32).contains(&j) {
                                j as usize
                            } else {
                                lane
                            };
                            sc.out[0][lane] = av[src] & 0xffff_ffff;
                            sc.out[1][lane] = ok as u64;
                        }
                        w.write(*d, mask, &sc.out[0]);
                        w.write(*p, mask, &sc.out[1]);
                    }
                    w.pc += 1;
                }
                Op::Vote { mode, d, a } => {
                    if mask != 0 {
                        let mut ballot = 0u32;
                        for lane in lanes(mask) {
                            ballot |= ((self.val(w, a, lane) & 1) as u32) << lane;
                        }
                        let r = match mode {
                            VoteMode::Ballot => ballot as u64,
                            VoteMode::All => (ballot == mask) as u64,
                            VoteMode::Any => (ballot != 0) as u64,
                            VoteMode::Uni => (ballot == 0 || ballot == mask) as u64,
                        };
                        for lane in lanes(mask) {
                            w.set(*d, lane, r);
                        }
                    }
                    w.pc += 1;
                }
                Op::Match {
                    all,
                    d,
                    p,
                    a,
                    mask64,
                } => {
                    if mask != 0 {
                        let vm = if *mask64 { u64::MAX } else { 0xffff_ffff };
                        let mut v = [0u64; 32];
                        self.fill(w, a, &mut v);
                        let first = v[mask.trailing_zeros() as usize] & vm;
                        let same_all = lanes(mask).all(|l| v[l] & vm == first);
                        for lane in lanes(mask) {
                            let m = if *all {
                                if same_all { mask } else { 0 }
                            } else {
                                lanes(mask)
                                    .filter(|&k| v[k] & vm == v[lane] & vm)
                                    .fold(0u32, |m, k| m | 1 << k)
                            };
                            w.set(*d, lane, m as u64);
                            w.set(*p, lane, same_all as u64);
                        }
                    }
                    w.pc += 1;
                }
                Op::Redux { op, signed, d, a } => {
                    if mask != 0 {
                        let mut v = [0u64; 32];
                        self.fill(w, a, &mut v);
                        let vals = lanes(mask).map(|l| v[l] as u32);
                        let r: u32 = match (op, signed) {
                            (ReduxOp::Add, _) => vals.fold(0u32, |x, y| x.wrapping_add(y)),
                            (ReduxOp::Min, false) => vals.min().unwrap_or(0),
                            (ReduxOp::Max, false) => vals.max().unwrap_or(0),
                            (ReduxOp::Min, true) => {
                                vals.map(|x| x as i32).min().unwrap_or(0) as u32
                            }
                            (ReduxOp::Max, true) => {
                                vals.map(|x| x as i32).max().unwrap_or(0) as u32
                            }
                            (ReduxOp::And, _) => vals.fold(u32::MAX, |x, y| x & y),
                            (ReduxOp::Or, _) => vals.fold(0, |x, y| x | y),
                            (ReduxOp::Xor, _) => vals.fold(0, |x, y| x ^ y),
                        };
                        for lane in lanes(mask) {
                            w.set(*d, lane, r as u64);
                        }
                    }
                    w.pc += 1;
                }
                Op::CpAsync {
                    dst,
                    src,
                    size,
                    src_size,
                } => {
                    let sz = *size as u64;
                    for lane in lanes(mask) {
                        let da = self.val(w, &dst.base, lane).wrapping_add(dst.off as u64);
                        let sa = self.val(w, &src.base, lane).wrapping_add(src.off as u64);
                        let n = src_size
                            .as_ref()
                            .map_or(sz, |s| (self.val(w, s, lane) as u32 as u64).min(sz));
                        for (a, size) in [(da, *size as u32), (sa, *size as u32)] {
                            if a % sz != 0 {
                                return Err(self.fault(
                                    Fault::Misaligned { addr: a, size },
                                    w,
                                    lane,
                                    inst.line,
                                ));
                            }
                        }
                        for k in 0..sz {
                            let v = if k < n {
                                self.load(w, lane, Space::Generic, sa.wrapping_add(k), 1)
                                    .map_err(|f| self.fault(f, w, lane, inst.line))?
                            } else {
                                0
                            };
                            if let Err(f) =
                                self.store(w, lane, Space::Shared, da.wrapping_add(k), 1, v)
                            {
                                return Err(self.fault(f, w, lane, inst.line));
                            }
                        }
                    }
                    w.pc += 1;
                }
                Op::Activemask { d } => {
                    for lane in lanes(mask) {
                        w.set(*d, lane, group as u64);
                    }
                    w.pc += 1;
                }
                Op::Elect { d, p } => {
                    if mask != 0 {
                        let leader = mask.trailing_zeros() as usize;
                        for lane in lanes(mask) {
                            w.set(*d, lane, leader as u64);
                            w.set(*p, lane, (lane == leader) as u64);
                        }
                    }
                    w.pc += 1;
                }
                Op::Fence => {
                    std::sync::atomic::fence(Ordering::SeqCst);
                    w.pc += 1;
                }
                Op::Nop => w.pc += 1,
            }
            budget -= 1;
            if budget == 0 {
                break;
            }
        }
        Ok(())
    }

    fn call(
        &mut self,
        w: &mut Warp,
        mask: u32,
        target: &Src,
        args: &[ArgCopy],
        line: u32,
    ) -> Result<(), KernelError> {
        let l = self.l;
        let funcs = &l.module.funcs;
        let ret_pc = w.pc + 1;
        if mask == 0 {
            w.pc = ret_pc;
            return Ok(());
        }
        let caller_size = funcs.get(w.func as usize).map_or(0, |f| f.frame_size);
        for lane in lanes(mask) {
            // Each lane may call a different function (virtual calls).
            let fa = self.val(w, target, lane);
            let func = fa.wrapping_sub(FUNC_WINDOW);
            let callee = funcs.get(func as usize).filter(|f| {
                fa >= FUNC_WINDOW
                    && f.defined
                    && !f.is_kernel
                    && l.reg_base
                        .get(func as usize)
                        .is_some_and(|b| *b != u32::MAX)
            });
            let Some(callee) = callee else {
                return Err(KernelError::Unsupported {
                    instruction: format!("call through invalid function address {fa:#x}"),
                    loc: self.loc(w, lane, line),
                });
            };
            let func = func as u32;
            let cb = l.reg_base[func as usize] as usize;
            let base = w.frame_base[lane];
            let new_base = (base as u64 + caller_size as u64).div_ceil(16) * 16;
            let end = new_base + callee.frame_size as u64;
            if end > l.opts.max_local_bytes as u64
                || w.frames[lane].len() >= l.opts.max_call_depth as usize
            {
                return Err(self.fault(Fault::Stack, w, lane, line));
            }
            if (w.local[lane].len() as u64) < end {
                w.local[lane].resize(end as usize, 0);
            }
            for (a, &(to, fsize)) in args.iter().zip(&callee.params) {
                match *a {
                    ArgCopy::Frame { from, size } => {
                        let loc = &mut w.local[lane];
                        let n = size.min(fsize) as usize;
                        let src = base as usize + from as usize;
                        let dst = new_base as usize + to as usize;
                        if src + n <= loc.len() && dst + n <= loc.len() {
                            loc.copy_within(src..src + n, dst);
                        }
                    }
                    ArgCopy::Value { src, size } => {
                        let v = self.val(w, &src, lane);
                        wr(
                            &mut w.local[lane],
                            new_base + to as u64,
                            size.min(fsize).min(8),
                            v,
                        );
                    }
                }
            }
            let saved = if w.frames[lane].iter().any(|f| f.func == func) {
                let n = callee.nregs as usize;
                Some(
                    (0..n)
                        .map(|r| w.regs.get((cb + r) * 32 + lane).copied().unwrap_or(0))
                        .collect(),
                )
            } else {
                None
            };
            w.frames[lane].push(Frame {
                call_pc: w.pc,
                caller_base: base,
                func,
                saved,
            });
            w.frame_base[lane] = new_base as u32;
            w.lane_pc[lane] = callee.entry;
        }
        for lane in lanes(w.group & !mask) {
            w.lane_pc[lane] = ret_pc;
        }
        w.any_frames = true;
        w.group = 0;
        w.schedule(l);
        Ok(())
    }

    fn ret(&mut self, w: &mut Warp, mask: u32) {
        let l = self.l;
        let next = w.pc + 1;
        if mask == 0 {
            w.pc = next;
            return;
        }
        for lane in lanes(w.group & !mask) {
            w.lane_pc[lane] = next;
        }
        for lane in lanes(mask) {
            let Some(fr) = w.frames[lane].pop() else {
                w.exited |= 1 << lane;
                self.live = self.live.saturating_sub(1);
                continue;
            };
            let formal = l
                .module
                .funcs
                .get(fr.func as usize)
                .map(|f| &f.rets[..])
                .unwrap_or(&[]);
            if let Some(Inst {
                op: Op::Call { rets, .. },
                ..
            }) = l.module.code.get(fr.call_pc as usize)
            {
                let loc = &mut w.local[lane];
                for (&(to, size), &(from, fsize)) in rets.iter().zip(formal) {
                    let n = size.min(fsize) as usize;
                    let src = w.frame_base[lane] as usize + from as usize;
                    let dst = fr.caller_base as usize + to as usize;
                    if src + n <= loc.len() && dst + n <= loc.len() {
                        loc.copy_within(src..src + n, dst);
                    }
                }
            }
            if let Some(saved) = fr.saved {
                let cb = l.reg_base.get(fr.func as usize).copied().unwrap_or(0) as usize;
                for (r, v) in saved.iter().enumerate() {
                    if let Some(x) = w.regs.get_mut((cb + r) * 32 + lane) {
                        *x = *v;
                    }
                }
            }
            w.frame_base[lane] = fr.caller_base;
            w.lane_pc[lane] = fr.call_pc + 1;
        }
        w.any_frames = w.frames.iter().any(|f| !f.is_empty());
        w.group = 0;
        w.schedule(l);
    }

    fn arg_val(&mut self, w: &Warp, lane: usize, a: &ArgCopy) -> u64 {
        match *a {
            ArgCopy::Frame { from, size, .. } => rd(
                &w.local[lane],
                w.frame_base[lane] as u64 + from as u64,
                size.min(8),
            )
            .unwrap_or(0),
            ArgCopy::Value { src, .. } => self.val(w, &src, lane),
        }
    }

    fn read_string(&mut self, w: &Warp, lane: usize, addr: u64, max: usize) -> Option<Vec<u8>> {
        let mut s = Vec::new();
        for k in 0..max as u64 {
            let b = self
                .load(w, lane, Space::Generic, addr.wrapping_add(k), 1)
                .ok()? as u8;
            if b == 0 {
                break;
            }
            s.push(b);
        }
        Some(s)
    }

    fn intrinsic(
        &mut self,
        w: &mut Warp,
        lane: usize,
        which: Intrinsic,
        args: &[ArgCopy],
        ret: Option<u32>,
        line: u32,
    ) -> Result<(), KernelError> {
        let av: Vec<u64> = args.iter().map(|a| self.arg_val(w, lane, a)).collect();
        let arg = |k: usize| av.get(k).copied().unwrap_or(0);
        match which {
            Intrinsic::Vprintf => {
                let fmt = self.read_string(w, lane, arg(0), 1 << 16).ok_or_else(|| {
                    self.fault(
                        Fault::Illegal {
                            addr: arg(0),
                            size: 1,
                            write: false,
                        },
                        w,
                        lane,
                        line,
                    )
                })?;
                struct A<'c, 'a> {
                    ctx: &'c mut Ctx<'a>,
                    w: &'c Warp,
                    lane: usize,
                    base: u64,
                }
                impl printf::Args for A<'_, '_> {
                    fn arg(&mut self, offset: u64, size: u32) -> Option<u64> {
                        let a = self.base.wrapping_add(offset);
                        self.ctx
                            .load(self.w, self.lane, Space::Generic, a, size)
                            .ok()
                    }
                    fn string(&mut self, addr: u64, max: usize) -> Option<Vec<u8>> {
                        self.ctx.read_string(self.w, self.lane, addr, max)
                    }
                }
                let mut a = A {
                    ctx: self,
                    w,
                    lane,
                    base: arg(1),
                };
                let (text, n) = printf::format(&fmt, &mut a).ok_or_else(|| {
                    self.fault(
                        Fault::Illegal {
                            addr: arg(1),
                            size: 8,
                            write: false,
                        },
                        w,
                        lane,
                        line,
                    )
                })?;
                self.l.out.print(&text);
                if let Some(r) = ret {
                    let b = w.frame_base[lane] as u64 + r as u64;
                    wr(&mut w.local[lane], b, 4, n as u64);
                }
                Ok(())
            }
            Intrinsic::AssertFail => {
                let s = |ctx: &mut Self, a: u64| {
                    ctx.read_string(w, lane, a, 4096)
                        .map(|v| String::from_utf8_lossy(&v).into_owned())
                        .unwrap_or_default()
                };
                let msg = s(self, arg(0));
                let file = s(self, arg(1));
                let func = s(self, arg(3));
                let [bx, by, bz] = self.ctaid;
                let message = format!(
                    "{file}:{}: {func}: block: [{bx},{by},{bz}], thread: [{},{},{}] Assertion `{msg}` failed.",
                    arg(2) as u32,
                    w.tid[0][lane],
                    w.tid[1][lane],
                    w.tid[2][lane]
                );
                Err(KernelError::Assert { message })
            }
        }
    }
}
