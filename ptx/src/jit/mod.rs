// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The PTX compiler: kernels translated once to native code with Cranelift, run a thread at a
//! time with barriers as resume points ([`lower`]), the interpreter's semantics kept by
//! sharing its ALU functions for everything not emitted inline.
//!
//! A kernel is compiled on its first launch (in a small module, with the module's other
//! kernels in the background), on a compiler thread, and cached in its
//! [`Module`](crate::Module) ([`cache`]): its direct calls are expanded in place ([`inline`]),
//! then [`lower`] (and the modules it lists) emits one function running a round of a block.
//! Where a block's threads can go eight at a time, the group code keeps each register in the
//! form [`forms`] finds for it (one value for the group, a SIMD vector, or one value per lane)
//! and [`vector`] emits its SIMD operations. Kernels using what the compiler does not handle
//! (warp-level operations, recursive or indirect calls, indirect branches, volatile shared
//! memory as warp-synchronous code uses it, ...) run interpreted; the reason is logged once
//! per kernel.

use std::sync::atomic::Ordering;

use cranelift_codegen::{
    ir::{AbiParam, types::I32, types::I64},
    settings::{self, Configurable},
};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{Linkage, Module as _};

use self::rt::{
    ARRIVAL_POINTS, Env, FAULT_BRKPT, FAULT_ILLEGAL, FAULT_MISALIGNED, FAULT_TRAP, FAULTED, ROUND,
    ThreadCtx,
};
use crate::{
    error::{KernelError, Location},
    grid::Launch,
    memory::GlobalMem,
};

mod alu;
mod body;
mod build;
pub(crate) mod cache;
mod forms;
mod group;
mod inline;
mod inst;
mod live;
mod lower;
mod masked;
mod mem;
mod operand;
pub(crate) mod rt;
mod sched;
mod vector;
mod vector_check;

/// Kernels longer than this (instructions, calls expanded) are compiled without Cranelift's
/// optimizer, whose time grows with the square of a long block's length: 10,000 dependent
/// additions took 1.9 s to compile optimized and 0.05 s not, 20,000 took 6.3 s and 0.16 s,
/// 60,000 took 65 s and 0.6 s (release build, the 2-vCPU development VM, 2026-11-30).
const OPTIMIZE_MAX_INSTS: usize = 6000;

/// Most values (SSA values, block parameters included) of a function handed to the code
/// generator: about a gigabyte of register allocation at worst (some 1.3 KiB per value).
const MAX_VALUES: usize = 750_000;

/// Instructions a launch worker counts before adding them to the launch's shared counters
/// (about a millisecond of compiled code; the instruction limit is checked against the
/// shared count plus the worker's own).
const FLUSH_INSTS: u64 = 1 << 20;

type KernelFn = extern "C" fn(*mut ThreadCtx) -> u32;

/// Executable memory holding one compiled kernel.
struct Code(Option<JITModule>);

// SAFETY: after `finalize_definitions` the module is never used again except to free its
// memory on drop; the code it holds is immutable and callable from any thread.
unsafe impl Send for Code {}
// SAFETY: as above; shared references give no access to the module.
unsafe impl Sync for Code {}

impl Drop for Code {
    fn drop(&mut self) {
        if let Some(m) = self.0.take() {
            // SAFETY: the only pointer into this memory is `Compiled::entry`, owned by the
            // same `Compiled`, which is being dropped: no launch is running its code (a launch
            // holds an `Arc<Compiled>`).
            unsafe { m.free_memory() };
        }
    }
}

/// A compiled kernel.
pub(crate) struct Compiled {
    entry: KernelFn,
    nregs: u32,
    frame: u32,
    /// Resume points (barriers) in the code.
    points: usize,
    _code: Code,
    /// The instructions the code points at (`h_alu` reads their ALU function and context).
    _insts: Box<[crate::ir::Inst]>,
}

impl Compiled {
    /// Runs a round of the block `b` describes.
    fn call(&self, b: &mut Block) -> u32 {
        let n = b.state.len();
        let nregs = (self.nregs as usize).max(1);
        if b.resumes.len() < n
            || b.bars.len() < n
            || b.regs.len() < n.div_ceil(lower::LANES) * lower::LANES * nregs
            || b.local.len() < n * self.frame as usize
            || b.tids.iter().any(|t| t.len() < n)
        {
            return FAULTED;
        }
        let tc = &mut b.tc;
        tc.n = n as u32;
        tc.state = b.state.as_mut_ptr();
        tc.resumes = b.resumes.as_mut_ptr();
        tc.bars = b.bars.as_mut_ptr();
        tc.regs = b.regs.as_mut_ptr();
        tc.local_base = b.local.as_mut_ptr();
        tc.local_len = self.frame as u64;
        tc.tids = [b.tids[0].as_ptr(), b.tids[1].as_ptr(), b.tids[2].as_ptr()];
        tc.shared = b.shared.as_mut_ptr();
        tc.shared_len = b.shared.len() as u64;
        (self.entry)(tc)
    }
}

/// A worker's buffers for the block it runs: what [`ThreadCtx`] points into.
struct Block {
    tc: ThreadCtx,
    state: Vec<u8>,
    resumes: Vec<u32>,
    bars: Vec<u32>,
    regs: Vec<u64>,
    local: Vec<u8>,
    shared: Vec<u8>,
    tids: [Vec<u32>; 3],
}

/// Compiles a kernel flattened by [`inline::flatten`] (and checked by [`build::check`]);
/// `admit` is told the compile's cost before the code generator runs and may refuse it.
fn compile(
    flat: inline::Flat,
    admit: &mut dyn FnMut(u64, usize, bool) -> Result<(), String>,
) -> Result<Compiled, String> {
    let (nregs, frame) = (flat.nregs, flat.frame);
    // The instructions the compiled code points at (ALU functions) must live as long as it.
    let local: Box<[crate::ir::Inst]> = flat.code.into_boxed_slice();
    let optimize = local.len() <= OPTIMIZE_MAX_INSTS;

    let mut flags = settings::builder();
    let set = |f: &mut settings::Builder, k: &str, v: &str| f.set(k, v).map_err(|e| e.to_string());
    set(
        &mut flags,
        "opt_level",
        if optimize { "speed" } else { "none" },
    )?;
    // The verifier takes a tenth of a compile; test builds keep it.
    if !cfg!(debug_assertions) {
        set(&mut flags, "enable_verifier", "false")?;
    }
    set(&mut flags, "use_colocated_libcalls", "false")?;
    set(&mut flags, "is_pic", "false")?;
    let isa = cranelift_native::builder()
        .map_err(|e| e.to_string())?
        .finish(settings::Flags::new(flags))
        .map_err(|e| e.to_string())?;
    let mut jm = JITModule::new(JITBuilder::with_isa(
        isa,
        cranelift_module::default_libcall_names(),
    ));
    let mut ctx = jm.make_context();
    let cc = jm.target_config().default_call_conv;
    ctx.func.signature.call_conv = cc;
    ctx.func.signature.params.push(AbiParam::new(I64));
    ctx.func.signature.returns.push(AbiParam::new(I32));
    let mut fbc = FunctionBuilderContext::new();
    let insts = local.len();
    let points = {
        let b = FunctionBuilder::new(&mut ctx.func, &mut fbc);
        lower::Lower::build(b, &local, nregs, frame, cc, &mut |cost| {
            admit(cost, insts, optimize)
        })?
    };
    // The register allocator's memory grows with the values the function holds (each
    // variable live where blocks join becomes a block parameter there): a structured-type
    // comparison of CuPy's (256 fields) came to 7,010,857 values in 91,623 blocks and took
    // the backend past 23 GB before the kernel's OOM killer ended it, within the cost
    // bound `build` checks. The largest kernels of the Rodinia benchmarks have 53,410.
    let values = ctx.func.dfg.num_values();
    if values > MAX_VALUES {
        return Err(format!(
            "too large to compile ({values} values, at most {MAX_VALUES})"
        ));
    }
    let id = jm
        .declare_function("kernel", Linkage::Local, &ctx.func.signature)
        .map_err(|e| e.to_string())?;
    // For developers: VCUDA_JIT_DUMP=1 prints each compiled kernel's machine code to stderr.
    let dump = std::env::var_os("VCUDA_JIT_DUMP").is_some();
    if dump {
        ctx.set_disasm(true);
    }
    jm.define_function(id, &mut ctx)
        .map_err(|e| format!("code generation: {e:?}"))?;
    if dump && let Some(cc) = ctx.compiled_code() {
        eprintln!("{}", cc.vcode.as_deref().unwrap_or(""));
    }
    jm.clear_context(&mut ctx);
    jm.finalize_definitions().map_err(|e| e.to_string())?;
    let p = jm.get_finalized_function(id);
    // SAFETY: `p` is the finalized code of a function with exactly this signature (one i64
    // parameter, returning i32, in the platform's default calling convention).
    let entry: KernelFn = unsafe { std::mem::transmute::<*const u8, KernelFn>(p) };
    Ok(Compiled {
        entry,
        nregs,
        frame,
        points,
        _code: Code(Some(jm)),
        _insts: local,
    })
}

/// A launch worker running compiled blocks until the grid is done.
pub(crate) fn worker(l: &Launch<'_>, c: &Compiled) {
    let n = l.nthreads as usize;
    let nregs = (c.nregs as usize).max(1);
    let mut env = Box::new(Env {
        l,
        gmem: GlobalMem::new(l.mem),
        stop: None,
        block_insts: 0,
        pending_insts: (0, 0),
        tex: None,
    });
    let envp: *mut Env<'_> = &mut *env;
    let [bx, by, _] = l.cfg.block;
    let mut tids: [Vec<u32>; 3] = Default::default();
    for t in 0..n as u32 {
        tids[0].push(t % bx);
        tids[1].push((t / bx) % by);
        tids[2].push(t / (bx * by));
    }
    let mut b = Block {
        tc: ThreadCtx::new(),
        state: vec![0; n],
        resumes: vec![0; n],
        bars: vec![0; n],
        regs: vec![0; n.div_ceil(lower::LANES) * lower::LANES * nregs],
        local: vec![0; n * c.frame as usize],
        shared: vec![0; l.shared_alloc()],
        tids,
    };
    let tc = &mut b.tc;
    tc.ntid = l.cfg.block;
    tc.nctaid = l.cfg.grid;
    tc.nsmid = l.opts.num_sms;
    tc.dyn_smem = l.cfg.dynamic_shared;
    tc.total_smem = l.shared_size;
    tc.params = l.params.as_ptr();
    tc.params_len = l.params.len() as u64;
    tc.syms = l.syms.as_ptr();
    tc.env = envp.cast();
    while let Some(id) = l.claim_block() {
        let r = run_block(l, c, id, envp, &mut b);
        // SAFETY: no compiled code is running; `envp` points at the live `env` box.
        let env = unsafe { &mut *envp };
        let insts = std::mem::take(&mut env.block_insts);
        let p = &mut env.pending_insts;
        *p = (p.0 + insts, p.1 + insts / 32);
        let (n, w) = if r.is_err() || p.0 >= FLUSH_INSTS {
            std::mem::take(p)
        } else {
            (0, 0)
        };
        if !l.block_done(id, r, n, w) || l.cooperative() {
            break;
        }
    }
    // SAFETY: as above.
    let (n, w) = std::mem::take(unsafe { &mut (*envp).pending_insts });
    l.add_insts(n, w);
    drop(env);
}

fn run_block(
    l: &Launch<'_>,
    c: &Compiled,
    id: u64,
    envp: *mut Env<'_>,
    b: &mut Block,
) -> Result<(), KernelError> {
    let [gx, gy, _] = l.cfg.grid;
    let ctaid = [
        (id % gx as u64) as u32,
        ((id / gx as u64) % gy as u64) as u32,
        (id / (gx as u64 * gy as u64)) as u32,
    ];
    b.shared.fill(0);
    b.state.fill(0);
    b.resumes.fill(0);
    b.tc.ctaid = ctaid;
    b.tc.smid = (id % l.opts.num_sms.max(1) as u64) as u32;
    b.tc.icount = 0;
    b.tc.poll_at = rt::poll_interval(l);
    b.tc.fault = 0;
    b.tc.released = 0;
    b.tc.done = 0;
    b.tc.waiting = [0; 16];
    // Every thread starts at the entry (resume point 0), runnable.
    b.tc.all_at = 1;
    let n = b.state.len() as u32;
    b.tc.arrivals = [0; ARRIVAL_POINTS];
    // The resume points whose arrivals the code counts.
    let counted = c.points.min(ARRIVAL_POINTS - 1);
    loop {
        let r = c.call(b);
        // SAFETY: the compiled code has returned; nothing else uses `envp` now.
        let env = unsafe { &mut *envp };
        env.block_insts += std::mem::take(&mut b.tc.icount);
        b.tc.poll_at = rt::poll_interval(l);
        match r {
            ROUND => {}
            FAULTED => {
                let t = b.tc.cur as usize;
                let tid = [0, 1, 2].map(|d| b.tids[d].get(t).copied().unwrap_or(0));
                let loc = Location {
                    block: ctaid,
                    thread: tid,
                    line: b.tc.fault_line,
                };
                let (addr, size) = (b.tc.fault_addr, b.tc.fault_size);
                return Err(match b.tc.fault {
                    FAULT_MISALIGNED => KernelError::MisalignedAddress { addr, size, loc },
                    FAULT_TRAP => KernelError::Trap { loc },
                    FAULT_BRKPT => KernelError::Breakpoint { loc },
                    FAULT_ILLEGAL => KernelError::IllegalAddress {
                        addr,
                        size,
                        write: b.tc.fault_write != 0,
                        loc,
                    },
                    _ => KernelError::IllegalAddress {
                        addr,
                        size,
                        write: b.tc.fault_write != 0,
                        loc,
                    },
                });
            }
            _ => {
                return match env.stop.take() {
                    Some(e) => Err(e),
                    None => Ok(()),
                };
            }
        }
        // Release the barriers every live thread waits on (the compiled code counted the
        // exits and the arrivals; a waiting thread runs again when its barrier's bit is set).
        let live = n.saturating_sub(b.tc.done);
        if live == 0 {
            return Ok(());
        }
        let mut released = 0u32;
        for (id, w) in b.tc.waiting.iter_mut().enumerate() {
            if *w != 0 && *w >= live {
                released |= 1 << id;
                *w = 0;
            }
        }
        if released == 0 {
            return Err(KernelError::Deadlock { block: ctaid });
        }
        b.tc.released = released;
        // Every thread reached the same point (so its barrier, released above): the next
        // round takes the groups as runnable there.
        b.tc.all_at = 0;
        for (p, a) in b.tc.arrivals[1..=counted].iter_mut().enumerate() {
            if std::mem::take(a) == n {
                b.tc.all_at = p as u32 + 2;
            }
        }
        if l.abort.load(Ordering::Relaxed) {
            return Ok(());
        }
        l.check_stop()?;
        // A loop around a barrier polls here, between rounds.
        if let Some(limit) = l.opts.instruction_limit
            && l.insts
                .load(Ordering::Relaxed)
                .saturating_add(env.pending_insts.0)
                .saturating_add(env.block_insts)
                > limit
        {
            return Err(KernelError::InstructionLimit { limit });
        }
    }
}
