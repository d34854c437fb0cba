// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The PTX compiler: kernels translated once to native code with Cranelift, run a thread at a
//! time with barriers as resume points ([`lower`]), the interpreter's semantics kept by
//! sharing its ALU functions for everything not emitted inline.
//!
//! A kernel is compiled on its first launch and cached in its [`Module`]. Kernels using what
//! the compiler does not handle (warp-level operations, calls, printf/assert, traps, indirect
//! branches, volatile shared memory as warp-synchronous code uses it, ...) run interpreted;
//! the reason is logged once per kernel.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, atomic::Ordering},
};

use cranelift_codegen::{
    ir::{AbiParam, types::I32, types::I64},
    settings::{self, Configurable},
};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{Linkage, Module as _};

use self::rt::{AT_BARRIER, EXITED, FAULT_MISALIGNED, FAULTED, ThreadCtx};
use crate::{
    error::{KernelError, Location},
    exec::Launch,
    memory::GlobalMem,
    module::{KernelInfo, Module},
};

mod alu;
mod live;
mod lower;
pub(crate) mod rt;

/// Thread-instructions between two polls of the launch's stop conditions.
pub(crate) const POLL_INTERVAL: u64 = 1 << 20;

type KernelFn = extern "C" fn(*mut ThreadCtx, *mut u64, u32) -> u32;

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
    _code: Code,
    /// The instructions the code points at (`h_alu` reads their ALU function and context).
    _insts: Box<[crate::ir::Inst]>,
}

impl Compiled {
    fn call(&self, tc: &mut ThreadCtx, regs: &mut [u64], resume: u32) -> u32 {
        if regs.len() < self.nregs as usize {
            return FAULTED;
        }
        (self.entry)(tc, regs.as_mut_ptr(), resume)
    }
}

/// Compiled kernels of a module, by kernel index (`None`: runs interpreted).
#[derive(Default)]
pub(crate) struct Cache(Mutex<HashMap<u32, Option<Arc<Compiled>>>>);

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("jit::Cache")
    }
}

/// The compiled form of kernel `k` of `m`, compiling it on first use.
pub(crate) fn get(m: &Module, k: u32) -> Option<Arc<Compiled>> {
    let mut map = m.jit.0.lock().ok()?;
    if let Some(c) = map.get(&k) {
        return c.clone();
    }
    let info = m.kernels.get(k as usize)?;
    // The code generator may panic on input it rejects; that kernel is then interpreted.
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| compile(m, info)))
        .unwrap_or_else(|_| Err("the code generator failed".into()));
    let c = match r {
        Ok(c) => Some(Arc::new(c)),
        Err(why) => {
            log::info!("kernel {} runs interpreted: {why}", info.name);
            None
        }
    };
    map.insert(k, c.clone());
    c
}

fn compile(m: &Module, k: &KernelInfo) -> Result<Compiled, String> {
    let func = m.funcs.get(k.func as usize).ok_or("no function")?;
    let start = func.entry as usize;
    let end = m
        .funcs
        .iter()
        .map(|f| f.entry as usize)
        .filter(|&e| e > start)
        .min()
        .unwrap_or(m.code.len())
        .min(m.code.len());
    let code = m.code.get(start..end).ok_or("code range")?;
    // Branch targets are absolute; rebase them by checking they stay inside the kernel.
    let mut local = Vec::with_capacity(code.len());
    for i in code {
        let mut i = i.clone();
        if let crate::ir::Op::Bra { target } = &mut i.op {
            let t = (*target as usize)
                .checked_sub(start)
                .filter(|&t| t < code.len())
                .ok_or("branch out of the kernel")?;
            *target = t as u32;
        }
        local.push(i);
    }
    lower::check(&local, func.nregs, m.syms.len())?;
    // The instructions the compiled code points at (ALU functions) must live as long as it.
    let local: Box<[crate::ir::Inst]> = local.into_boxed_slice();

    let mut flags = settings::builder();
    let set = |f: &mut settings::Builder, k: &str, v: &str| f.set(k, v).map_err(|e| e.to_string());
    set(&mut flags, "opt_level", "speed")?;
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
    for t in [I64, I64, I32] {
        ctx.func.signature.params.push(AbiParam::new(t));
    }
    ctx.func.signature.returns.push(AbiParam::new(I32));
    let mut fbc = FunctionBuilderContext::new();
    {
        let b = FunctionBuilder::new(&mut ctx.func, &mut fbc);
        lower::Lower::build(b, &local, func.nregs, cc)?;
    }
    let id = jm
        .declare_function("kernel", Linkage::Local, &ctx.func.signature)
        .map_err(|e| e.to_string())?;
    jm.define_function(id, &mut ctx)
        .map_err(|e| format!("code generation: {e:?}"))?;
    jm.clear_context(&mut ctx);
    jm.finalize_definitions().map_err(|e| e.to_string())?;
    let p = jm.get_finalized_function(id);
    // SAFETY: `p` is the finalized code of a function with exactly this signature (three
    // parameters i64, i64, i32 returning i32 in the platform's default calling convention).
    let entry: KernelFn = unsafe { std::mem::transmute::<*const u8, KernelFn>(p) };
    Ok(Compiled {
        entry,
        nregs: func.nregs,
        frame: func.frame_size,
        _code: Code(Some(jm)),
        _insts: local,
    })
}

/// Per-worker state the helpers reach through [`ThreadCtx::env`].
pub(crate) struct Env<'a> {
    pub(crate) l: &'a Launch<'a>,
    pub(crate) gmem: GlobalMem<'a>,
    pub(crate) stop: Option<KernelError>,
    pub(crate) block_insts: u64,
}

/// A launch worker running compiled blocks until the grid is done.
pub(crate) fn worker(l: &Launch<'_>, c: &Compiled) {
    let n = l.nthreads as usize;
    let nregs = (c.nregs as usize).max(1);
    let frame = c.frame as usize;
    let mut env = Box::new(Env {
        l,
        gmem: GlobalMem::new(l.mem),
        stop: None,
        block_insts: 0,
    });
    let envp: *mut Env<'_> = &mut *env;
    let mut tcs: Vec<ThreadCtx> = (0..n).map(|_| ThreadCtx::new()).collect();
    let mut regs = vec![0u64; n * nregs];
    let mut local = vec![0u8; n * frame];
    let mut shared = vec![0u8; l.shared_size as usize];
    let [bx, by, _] = l.cfg.block;
    for (t, tc) in tcs.iter_mut().enumerate() {
        let t32 = t as u32;
        tc.tid = [t32 % bx, (t32 / bx) % by, t32 / (bx * by)];
        tc.ntid = l.cfg.block;
        tc.nctaid = l.cfg.grid;
        tc.linear = t32;
        tc.nsmid = l.opts.num_sms;
        tc.dyn_smem = l.cfg.dynamic_shared;
        tc.total_smem = l.shared_size;
        tc.params = l.params.as_ptr();
        tc.params_len = l.params.len() as u64;
        tc.syms = l.syms.as_ptr();
        tc.local = local.as_mut_ptr().wrapping_add(t * frame);
        tc.local_len = frame as u64;
        tc.env = envp.cast();
    }
    let mut state = vec![0u8; n];
    loop {
        if l.abort.load(Ordering::Relaxed) {
            break;
        }
        if let Err(e) = l.check_stop() {
            l.fail(u64::MAX, e);
            break;
        }
        let id = l.next_block.fetch_add(1, Ordering::Relaxed);
        if id >= l.nblocks {
            break;
        }
        let r = run_block(l, c, id, envp, &mut tcs, &mut regs, &mut shared, &mut state);
        // SAFETY: no compiled code is running; `envp` points at the live `env` box.
        let insts = unsafe { std::mem::take(&mut (*envp).block_insts) };
        l.insts.fetch_add(insts, Ordering::Relaxed);
        l.winsts.fetch_add(insts / 32, Ordering::Relaxed);
        if let Err(e) = r {
            l.fail(id, e);
            break;
        }
    }
    drop(env);
}

const RUN: u8 = 0;
const WAIT: u8 = 1;
const DONE: u8 = 2;

#[allow(clippy::too_many_arguments)]
fn run_block(
    l: &Launch<'_>,
    c: &Compiled,
    id: u64,
    envp: *mut Env<'_>,
    tcs: &mut [ThreadCtx],
    regs: &mut [u64],
    shared: &mut [u8],
    state: &mut [u8],
) -> Result<(), KernelError> {
    let [gx, gy, _] = l.cfg.grid;
    let ctaid = [
        (id % gx as u64) as u32,
        ((id / gx as u64) % gy as u64) as u32,
        (id / (gx as u64 * gy as u64)) as u32,
    ];
    shared.fill(0);
    let smid = (id % l.opts.num_sms.max(1) as u64) as u32;
    for tc in tcs.iter_mut() {
        tc.ctaid = ctaid;
        tc.smid = smid;
        tc.shared = shared.as_mut_ptr();
        tc.shared_len = shared.len() as u64;
        tc.icount = 0;
        tc.poll_at = POLL_INTERVAL;
        tc.resume = 0;
        tc.fault = 0;
    }
    state.fill(RUN);
    let nregs = (c.nregs as usize).max(1);
    let mut live = tcs.len();
    let mut started = vec![false; tcs.len()];
    let mut waiting = [0usize; 16];
    loop {
        for (t, tc) in tcs.iter_mut().enumerate() {
            if state[t] != RUN {
                continue;
            }
            let resume = if started[t] { tc.resume } else { 0 };
            started[t] = true;
            let before = tc.icount;
            let r = c.call(tc, &mut regs[t * nregs..(t + 1) * nregs], resume);
            // SAFETY: the compiled code has returned; nothing else uses `envp` now.
            let env = unsafe { &mut *envp };
            env.block_insts += tc.icount - before.min(tc.icount);
            match r {
                EXITED => {
                    state[t] = DONE;
                    live -= 1;
                }
                AT_BARRIER => {
                    state[t] = WAIT;
                    waiting[(tc.bar & 15) as usize] += 1;
                }
                FAULTED => {
                    let loc = Location {
                        block: ctaid,
                        thread: tc.tid,
                        line: tc.fault_line,
                    };
                    let (addr, size) = (tc.fault_addr, tc.fault_size);
                    return Err(if tc.fault == FAULT_MISALIGNED {
                        KernelError::MisalignedAddress { addr, size, loc }
                    } else {
                        KernelError::IllegalAddress {
                            addr,
                            size,
                            write: tc.fault_write != 0,
                            loc,
                        }
                    });
                }
                _ => {
                    return match env.stop.take() {
                        Some(e) => Err(e),
                        None => Ok(()),
                    };
                }
            }
        }
        if live == 0 {
            return Ok(());
        }
        let mut released = false;
        for (b, w) in waiting.iter_mut().enumerate() {
            if *w == 0 || *w < live {
                continue;
            }
            for (t, tc) in tcs.iter().enumerate() {
                if state[t] == WAIT && (tc.bar & 15) as usize == b {
                    state[t] = RUN;
                }
            }
            *w = 0;
            released = true;
        }
        if !released {
            return Err(KernelError::Deadlock { block: ctaid });
        }
        if l.abort.load(Ordering::Relaxed) {
            return Ok(());
        }
        l.check_stop()?;
    }
}
