// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Translation of one kernel's decoded instructions into a Cranelift function that runs one
//! round of a block: `fn(tc: *mut ThreadCtx) -> u32`.
//!
//! The function loops over the block's threads; each runnable one starts at the kernel's
//! entry or at the resume point after the barrier it waited on, and runs until it exits or
//! reaches a `bar.sync`. There it stores the registers live after the barrier (see
//! [`live_in`]) to its slot of the saved-register array, records the barrier id and resume
//! point, and the loop goes on with the next thread. The block runner
//! ([`super::run_block`]) releases barriers between rounds, so a block needs no stacks or
//! coroutines. PTX registers become Cranelift variables (all 64 bits wide, as in the
//! interpreter). Loads and stores check the region inline (shared, local and parameter
//! buffers, and the last global region used, kept in registers) and call [`rt::h_ptr`]
//! otherwise. ALU instructions with a [`Native`] form are inline (`alu.rs`); the others call
//! their interpreter function.

#![allow(clippy::needless_range_loop)] // operand arrays indexed by position, as in the IR

use std::collections::{BTreeSet, HashMap};

use cranelift_codegen::ir::{
    AbiParam, Block, InstBuilder, MemFlagsData, Signature, StackSlotData, StackSlotKind, Type,
    Value,
    condcodes::IntCC,
    types::{F32, F64, I8, I16, I32, I32X4, I64},
};
use cranelift_frontend::{FunctionBuilder, Switch, Variable};

use super::{
    forms::{Form, forms},
    live::{dirty_in, live_in},
    rt::{self, EXITED, FAULTED, ROUND, STOPPED, off},
};
use crate::{
    alu::native::Native,
    ir::{ArgCopy, BarKind, Inst, Op, SINK, Space, Src},
    module::{LOCAL_WINDOW, SHARED_WINDOW},
};

/// Why a kernel is not compiled (it then runs interpreted).
pub(crate) type Reject = String;

/// Checks that every instruction of `code` (one kernel's body) can be compiled.
pub(super) fn check(code: &[Inst], nregs: u32, nsyms: usize) -> Result<(), Reject> {
    let reg_ok = |s: &Src| match s {
        Src::Reg(r) | Src::NotReg(r) => *r < nregs,
        Src::Sym(i, _) => (*i as usize) < nsyms,
        _ => true,
    };
    for i in code {
        let ok = match &i.op {
            Op::Alu { src, .. } => src.iter().all(reg_ok),
            Op::Mov { .. }
            | Op::Pack { .. }
            | Op::Unpack { .. }
            | Op::Cvta { .. }
            | Op::Exit
            | Op::Ret
            | Op::Fence
            | Op::Nop
            | Op::Trap
            | Op::Brkpt
            | Op::Atom { .. } => true,
            Op::Surf(t) => {
                reg_ok(&t.handle) && t.coords.iter().all(reg_ok) && t.v.iter().all(reg_ok)
            }
            Op::Tex(t) => {
                reg_ok(&t.handle)
                    && t.coords.iter().all(reg_ok)
                    && t.layer.as_ref().is_none_or(reg_ok)
                    && t.lod.operands().iter().all(reg_ok)
            }
            Op::Intrinsic { args, .. } => {
                args.len() <= 8
                    && args.iter().all(|a| match a {
                        ArgCopy::Value { src, .. } => reg_ok(src),
                        ArgCopy::Frame { .. } => true,
                    })
            }
            Op::Bra { target } => (*target as usize) < code.len(),
            Op::Ld {
                volatile, space, ..
            }
            | Op::St {
                volatile, space, ..
            } => {
                if *volatile && matches!(space, Space::Shared | Space::Generic) {
                    return Err("volatile shared memory (warp-synchronous code)".into());
                }
                true
            }
            Op::Bar {
                kind: BarKind::Sync,
                id: Src::Imm(_),
                count: None,
                d,
                ..
            } => *d == SINK,
            op => return Err(op_name(op).to_string()),
        };
        if !ok {
            return Err("operands".into());
        }
        if let Some((g, _)) = i.guard
            && g >= nregs
        {
            return Err("guard register".into());
        }
    }
    Ok(())
}

fn op_name(op: &Op) -> &'static str {
    match op {
        Op::Brx { .. } => "brx.idx",
        Op::Call { .. } => "call",
        Op::Intrinsic { .. } => "printf/assert",
        Op::Trap => "trap",
        Op::Brkpt => "brkpt",
        Op::Bar { .. } => "bar other than bar.sync with a constant id",
        Op::Shfl { .. } => "shfl",
        Op::Vote { .. } => "vote",
        Op::Match { .. } => "match",
        Op::Redux { .. } => "redux",
        Op::Activemask { .. } => "activemask",
        Op::CpAsync { .. } => "cp.async",
        Op::Elect { .. } => "elect",
        Op::Mbar { .. } => "mbarrier",
        Op::Isspacep { .. } => "isspacep",
        Op::Tex(_) | Op::Surf(_) | Op::TexQuery { .. } => "texture and surface instructions",
        Op::Wmma(_) => "wmma",
        Op::Unsupported(_) => "an unsupported instruction",
        _ => "instruction",
    }
}

/// Helper signatures, imported once per function.
#[derive(Clone, Copy)]
pub(super) struct Inv {
    pub(super) shared: Value,
    pub(super) shared_len: Value,
    pub(super) params: Value,
    pub(super) params_len: Value,
    pub(super) syms: Value,
}

pub(super) struct Helpers {
    pub(super) ptr: cranelift_codegen::ir::SigRef,
    pub(super) atom: cranelift_codegen::ir::SigRef,
    pub(super) alu: cranelift_codegen::ir::SigRef,
    pub(super) sreg: cranelift_codegen::ir::SigRef,
    pub(super) poll: cranelift_codegen::ir::SigRef,
    pub(super) intrinsic: cranelift_codegen::ir::SigRef,
    pub(super) tex: cranelift_codegen::ir::SigRef,
}

pub(super) struct Lower<'a, 'b> {
    pub b: FunctionBuilder<'b>,
    /// The kernel's instructions (`code[0]` is its entry).
    pub code: &'a [Inst],
    pub vars: Vec<Variable>,
    pub tc: Value,
    pub ic: Variable,
    pub(super) tmp: Variable,
    /// The thread being run (its index in the block), its saved registers, its local
    /// memory, its `%tid`: the current lane's (see [`Lane`]).
    pub(super) t: Variable,
    pub(super) regs_t: Variable,
    pub(super) local_t: Variable,
    pub(super) tid: [Variable; 3],
    /// The other lanes' variables: `lanes[k]` for the group's lane `k`, `lanes[LANES]` the
    /// scalar code's; the current lane's live in the fields above (swapped in by `set_lane`).
    /// In vector group code a uniform register's variable is shared by the group's lanes.
    pub(super) lanes: Vec<Lane>,
    pub(super) lane: usize,
    /// Lanes per group (1: the kernel has no group code).
    pub(super) width: usize,
    /// The group code keeps registers in their [`Form`]s (else every register per lane).
    pub(super) vector: bool,
    pub(super) forms: Vec<Form>,
    /// Each register's stride from lane to lane, where it has one (see `forms::strides`).
    pub(super) strides: Vec<Option<i64>>,
    /// A vector register's variables in the group code: `I32X4` values, lanes `4h..4h+3`
    /// in the `h`-th.
    pub(super) vvars: Vec<Option<[Variable; HALVES]>>,
    /// Scratch vector variables.
    pub(super) vtmp: [Variable; HALVES],
    /// Shared memory's limit for the group's vector accesses (see `vector::span_limit`).
    pub(super) span_lim: Value,
    /// In the group code, the instruction whose failed memory check leaves the group for
    /// the scalar code (instead of calling `h_ptr`), and the blocks that do so by index.
    pub(super) bail: Option<usize>,
    bails: Vec<(usize, Block)>,
    /// Emitting the group code.
    pub(super) group: bool,
    /// The round's thread counter, and the first thread a group may start at again (threads
    /// below it run one at a time after a group diverged).
    pub(super) t_loop: Variable,
    scalar_until: Variable,
    /// The block's per-thread arrays and the released-barrier mask, loaded once per call.
    pub(super) arr: Arrays,
    /// The scalar code's check of thread `t_loop`, and the group code's move to the next group.
    check: Block,
    gnext: Block,
    /// Guarded branches, exits and barriers: where a group whose lanes disagree hands its
    /// threads to the scalar code, and the registers live there.
    divs: Vec<usize>,
    divsaved: Vec<Vec<u32>>,
    /// The group code's blocks (swapped with `blocks` while it is emitted).
    gblocks: HashMap<usize, Block>,
    /// Where `pin_float` stores.
    pin_slot: Option<cranelift_codegen::ir::StackSlot>,
    /// The global region cache, in registers (reloaded after `h_ptr` refills it).
    pub(super) gb: Variable,
    pub(super) gl: Variable,
    pub(super) gh: Variable,
    poll_at: Variable,
    /// Block-invariant values loaded once per call.
    pub(super) inv: Inv,
    /// Register values made from floats by `float_bits`, and the floats.
    floats: HashMap<Value, (Value, bool)>,
    /// Precomputed access limits (see `mem.rs`) of shared memory and parameters by size.
    pub(super) lims: Vec<(Space, u32, Value)>,
    /// Marks the current thread done / waiting and moves to the next one.
    next_thread: Block,
    pub(super) frame: u32,
    nregs: u32,
    blocks: HashMap<usize, Block>,
    leaders: Vec<usize>,
    pub(super) helpers: Helpers,
    /// Resume points: instruction index after each barrier.
    pub resumes: Vec<usize>,
    /// Registers live at each resume point: what a barrier saves and a resume reloads.
    saved: Vec<Vec<u32>>,
    /// What the group code may have changed since it loaded the registers, by instruction
    /// (see [`dirty_in`]).
    dirty: Vec<Vec<u64>>,
}

/// Threads a vector group runs in lockstep: the round's bookkeeping is paid once per group,
/// and a vector register is `HALVES` SIMD values of four lanes. Group code that keeps
/// every register per lane (each instruction emitted once per lane) runs `LANES / 2`.
pub(super) const LANES: usize = 8;
/// `I32X4` values per vector register.
pub(super) const HALVES: usize = LANES / 4;
/// Bytes between a thread's saved registers: each is next to the other lanes' copies.
pub(super) const REG_STRIDE: u32 = LANES as u32 * 8;
/// Kernels longer than this (instructions) get no group code: it costs a copy per lane.
const GROUP_MAX_INSTS: usize = 3000;
/// Kernels with more registers live at once than this run `LANES / 4` threads per group.
const FEW_LIVE: u32 = 12;

/// One lane's variables (see [`Lower::lanes`]).
#[derive(Clone)]
pub(super) struct Lane {
    pub(super) vars: Vec<Variable>,
    t: Variable,
    pub(super) regs_t: Variable,
    local_t: Variable,
    tid: [Variable; 3],
}

/// The block's arrays (see [`super::rt::ThreadCtx`]).
#[derive(Clone, Copy)]
pub(super) struct Arrays {
    state: Value,
    resumes: Value,
    bars: Value,
    regs: Value,
    local: Value,
    pub(super) tids: [Value; 3],
    released: Value,
    n: Value,
}

fn sig(cc: cranelift_codegen::isa::CallConv, params: &[Type], ret: Option<Type>) -> Signature {
    let mut s = Signature::new(cc);
    s.params.extend(params.iter().map(|t| AbiParam::new(*t)));
    if let Some(r) = ret {
        s.returns.push(AbiParam::new(r));
    }
    s
}

pub(super) const FLAGS: MemFlagsData = MemFlagsData::trusted();

/// How the states of a group of `w` threads (2 to 16) are read a word at a time: the
/// words' type, how many, and the word with a 1 in each thread's byte.
fn state_words(w: usize) -> (Type, usize, i64) {
    match w {
        2 => (I16, 1, 0x0101),
        4 => (I32, 1, 0x0101_0101),
        _ => (I64, w / 8, 0x0101_0101_0101_0101),
    }
}

impl<'a, 'b> Lower<'a, 'b> {
    /// Emits the whole function into `b`: one call runs every runnable thread of the block
    /// until it exits or reaches a barrier (a round), `frame` bytes of local memory each.
    /// Returns how many resume points (barriers) the code has.
    pub(super) fn build(
        mut b: FunctionBuilder<'b>,
        code: &'a [Inst],
        nregs: u32,
        frame: u32,
        cc: cranelift_codegen::isa::CallConv,
    ) -> Result<usize, Reject> {
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let tc = b.block_params(entry)[0];
        let live = live_in(code, nregs);
        let fm = forms(code, nregs);
        let vector_ok = super::vector_enabled();
        // Lanes share the processor's registers: kernels keeping many values live get fewer.
        // In vector group code a uniform or vector register takes one register for the group.
        let count = |l: &Vec<u64>, vector: bool| -> u32 {
            let (mut one, mut each) = (0u32, 0u32);
            for r in 0..nregs {
                if l[r as usize / 64] >> (r % 64) & 1 != 0 {
                    match fm[r as usize] {
                        Form::Lanes => each += 1,
                        _ if vector => one += 1,
                        _ => each += 1,
                    }
                }
            }
            each + one.div_ceil(LANES as u32)
        };
        let most_live = |vector: bool| live.iter().map(|l| count(l, vector)).max().unwrap_or(0);
        let (width, vector) = match code.len() {
            n if n > GROUP_MAX_INSTS => (1, false),
            _ if vector_ok && most_live(true) <= FEW_LIVE => (LANES, true),
            _ if most_live(false) > FEW_LIVE => (LANES / 4, false),
            _ => (LANES / 2, false),
        };
        let fm = if vector {
            fm
        } else {
            vec![Form::Lanes; nregs as usize]
        };
        let strides = if vector {
            super::forms::strides(code, &fm)
        } else {
            vec![None; nregs as usize]
        };
        let vvars: Vec<Option<[Variable; HALVES]>> = fm
            .iter()
            .map(|f| (*f == Form::Vector).then(|| [(); HALVES].map(|_| b.declare_var(I32X4))))
            .collect();
        let vtmp = [(); HALVES].map(|_| b.declare_var(I32X4));
        let mut var = || b.declare_var(I64);
        let (ic, tmp, t_loop, scalar_until) = (var(), var(), var(), var());
        let mut lanes: Vec<Lane> = (0..=LANES)
            .map(|_| Lane {
                vars: (0..nregs).map(|_| var()).collect(),
                t: var(),
                regs_t: var(),
                local_t: var(),
                tid: [var(), var(), var()],
            })
            .collect();
        let (gb, gl, gh, poll_at) = (var(), var(), var(), var());
        // A uniform register is one variable for the group's lanes.
        for (r, f) in fm.iter().enumerate() {
            if *f == Form::Uniform {
                let v = lanes[0].vars[r];
                for lane in lanes.iter_mut().take(LANES).skip(1) {
                    lane.vars[r] = v;
                }
            }
        }
        // The scalar code's thread is the round's counter.
        lanes[LANES].t = t_loop;
        // The current lane's variables live in `Lower`'s fields; its slot holds a copy.
        let mine = lanes[LANES].clone();
        let helpers = Helpers {
            ptr: b.import_signature(sig(cc, &[I64, I32, I64, I32, I32], Some(I64))),
            atom: b.import_signature(sig(cc, &[I64, I32, I64, I64, I64], Some(I64))),
            alu: b.import_signature(sig(cc, &[I64, I64, I64, I64, I64, I64], None)),
            sreg: b.import_signature(sig(cc, &[I64, I32], Some(I64))),
            poll: b.import_signature(sig(cc, &[I64], Some(I32))),
            intrinsic: b.import_signature(sig(cc, &[I64, I64, I64], Some(I32))),
            tex: b.import_signature(sig(cc, &[I64, I64, I64, I64], Some(I32))),
        };
        let ld = |b: &mut FunctionBuilder<'_>, ty: Type, o: i32| b.ins().load(ty, FLAGS, tc, o);
        let inv = Inv {
            shared: ld(&mut b, I64, off::SHARED),
            shared_len: ld(&mut b, I64, off::SHARED_LEN),
            params: ld(&mut b, I64, off::PARAMS),
            params_len: ld(&mut b, I64, off::PARAMS_LEN),
            syms: ld(&mut b, I64, off::SYMS),
        };
        let n = ld(&mut b, I32, off::N);
        let arr = Arrays {
            state: ld(&mut b, I64, off::STATE),
            resumes: ld(&mut b, I64, off::RESUMES),
            bars: ld(&mut b, I64, off::BARS),
            regs: ld(&mut b, I64, off::REGS),
            local: ld(&mut b, I64, off::LOCAL_BASE),
            tids: [
                ld(&mut b, I64, off::TIDS),
                ld(&mut b, I64, off::TIDS + 8),
                ld(&mut b, I64, off::TIDS + 16),
            ],
            released: ld(&mut b, I32, off::RELEASED),
            n: b.ins().uextend(I64, n),
        };
        // Guarded control transfers: a group whose lanes disagree on one leaves there; and
        // the vector group code's loads and stores whose check fails.
        let divs: Vec<usize> = if width > 1 {
            (0..code.len())
                .filter(|&pc| {
                    code[pc].guard.is_some()
                        && matches!(
                            code[pc].op,
                            Op::Bra { .. } | Op::Exit | Op::Ret | Op::Bar { .. }
                        )
                        || vector && super::vector::bails(&fm, &strides, &code[pc])
                })
                .collect()
        } else {
            Vec::new()
        };
        // Basic-block leaders: the entry, branch targets, what follows a branch, an exit
        // or a barrier, and the guarded control transfers.
        let mut lead = BTreeSet::new();
        lead.insert(0usize);
        lead.extend(divs.iter().copied());
        for (pc, i) in code.iter().enumerate() {
            match i.op {
                Op::Bra { target } => {
                    lead.insert(target as usize);
                    lead.insert(pc + 1);
                }
                Op::Exit | Op::Ret | Op::Bar { .. } => {
                    lead.insert(pc + 1);
                }
                _ => {}
            }
        }
        lead.retain(|&l| l < code.len());
        let leaders: Vec<usize> = lead.into_iter().collect();
        let blocks = leaders.iter().map(|&l| (l, b.create_block())).collect();
        let gblocks = if width > 1 {
            leaders.iter().map(|&l| (l, b.create_block())).collect()
        } else {
            HashMap::new()
        };
        let (next_thread, check, gnext) = (b.create_block(), b.create_block(), b.create_block());
        let mut lw = Lower {
            b,
            code,
            vars: mine.vars,
            tc,
            ic,
            tmp,
            t: mine.t,
            regs_t: mine.regs_t,
            local_t: mine.local_t,
            tid: mine.tid,
            lanes,
            lane: LANES,
            width,
            vector,
            forms: fm,
            strides,
            vvars,
            vtmp,
            span_lim: inv.shared_len,
            bail: None,
            bails: Vec::new(),
            group: false,
            t_loop,
            scalar_until,
            arr,
            check,
            gnext,
            divs,
            divsaved: Vec::new(),
            gblocks,
            pin_slot: None,
            gb,
            gl,
            gh,
            poll_at,
            inv,
            lims: Vec::new(),
            floats: HashMap::new(),
            next_thread,
            frame,
            nregs,
            blocks,
            leaders,
            helpers,
            resumes: Vec::new(),
            saved: Vec::new(),
            dirty: if width > 1 {
                dirty_in(code, nregs)
            } else {
                Vec::new()
            },
        };
        let set_of = |l: &Vec<u64>| -> Vec<u32> {
            (0..nregs)
                .filter(|r| l[*r as usize / 64] >> (r % 64) & 1 != 0)
                .collect()
        };
        for (pc, i) in code.iter().enumerate() {
            if let Op::Bar { .. } = i.op
                && pc + 1 < code.len()
            {
                lw.resumes.push(pc + 1);
                lw.saved.push(set_of(&live[pc + 1]));
            }
        }
        lw.divsaved = lw.divs.iter().map(|&pc| set_of(&live[pc])).collect();
        lw.prologue();
        lw.body()?;
        if lw.width > 1 {
            lw.group = true;
            std::mem::swap(&mut lw.blocks, &mut lw.gblocks);
            lw.body_group()?;
            std::mem::swap(&mut lw.blocks, &mut lw.gblocks);
            lw.group = false;
        }
        lw.b.seal_all_blocks();
        Ok(lw.resumes.len())
    }

    /// Makes lane `k`'s variables current (`LANES`: the scalar code's).
    pub(super) fn set_lane(&mut self, k: usize) {
        if k == self.lane {
            return;
        }
        // Put the current lane's variables back in its slot, then take lane `k`'s.
        self.swap_lane(self.lane);
        self.swap_lane(k);
        self.lane = k;
    }

    fn swap_lane(&mut self, k: usize) {
        let l = &mut self.lanes[k];
        std::mem::swap(&mut self.vars, &mut l.vars);
        std::mem::swap(&mut self.t, &mut l.t);
        std::mem::swap(&mut self.regs_t, &mut l.regs_t);
        std::mem::swap(&mut self.local_t, &mut l.local_t);
        std::mem::swap(&mut self.tid, &mut l.tid);
    }

    /// Switches to `blk` without sealing it (a branch into it comes later).
    fn enter_late(&mut self, blk: Block) {
        self.b.switch_to_block(blk);
    }

    /// Switches to `blk` and seals it: every branch into it has been emitted. Sealing early
    /// lets a variable's use in straight-line code see its definition, not a block parameter.
    pub(super) fn enter(&mut self, blk: Block) {
        self.b.switch_to_block(blk);
        self.b.seal_block(blk);
    }

    fn block_at(&self, pc: usize) -> Block {
        self.blocks[&pc]
    }

    fn ld_tc(&mut self, ty: Type, o: i32) -> Value {
        self.b.ins().load(ty, FLAGS, self.tc, o)
    }

    /// Reloads the global region cache after a helper refilled it.
    pub(super) fn reload_region(&mut self) {
        for (v, o) in [
            (self.gb, off::G_BASE),
            (self.gl, off::G_LEN),
            (self.gh, off::G_HOST),
        ] {
            let x = self.ld_tc(I64, o);
            self.b.def_var(v, x);
        }
    }

    /// The round: a loop over the block's threads, dispatching each runnable one to its
    /// start or to the resume point after the barrier it waited on. Where the kernel has
    /// group code, `LANES` threads at the same point run together.
    fn prologue(&mut self) {
        let ic0 = self.ld_tc(I64, off::ICOUNT);
        self.b.def_var(self.ic, ic0);
        for size in super::mem::SIZES {
            for (space, len) in [
                (Space::Shared, self.inv.shared_len),
                (Space::Param, self.inv.params_len),
            ] {
                let lim = self.limit(len, size);
                self.lims.push((space, size, lim));
            }
        }
        if self.vector {
            self.span_lim = self.span_limit(self.inv.shared_len);
        }
        let pa = self.ld_tc(I64, off::POLL_AT);
        self.b.def_var(self.poll_at, pa);
        self.reload_region();
        let zero = self.b.ins().iconst(I64, 0);
        self.b.def_var(self.tmp, zero);
        if self.vector {
            // Vector group code takes `%tid.y` and `%tid.z` as uniform in a group: only where
            // the block's rows hold whole groups. Elsewhere every thread runs alone.
            let bx = self.tc_u32(off::NTID);
            let odd = self.b.ins().band_imm_u(bx, LANES as i64 - 1);
            let never = self.b.ins().iconst(I64, -1);
            let su = self.b.ins().select(odd, never, zero);
            self.b.def_var(self.scalar_until, su);
        } else {
            self.b.def_var(self.scalar_until, zero);
        }
        for k in 0..=LANES {
            self.set_lane(k);
            for v in [
                self.t,
                self.regs_t,
                self.local_t,
                self.tid[0],
                self.tid[1],
                self.tid[2],
            ] {
                self.b.def_var(v, zero);
            }
        }
        let arr = self.arr;
        let head = self.b.create_block();
        self.b.ins().jump(head, &[]);

        // next_thread: t += 1; gnext: t += LANES.
        for (blk, step) in [(self.next_thread, 1), (self.gnext, self.width as i64)] {
            self.b.switch_to_block(blk);
            let t = self.b.use_var(self.t_loop);
            let t1 = self.b.ins().iadd_imm_s(t, step);
            self.b.def_var(self.t_loop, t1);
            self.b.ins().jump(head, &[]);
        }

        // head: done with the round, or the next runnable thread or group.
        self.b.switch_to_block(head);
        let t = self.b.use_var(self.t_loop);
        let more = self.b.ins().icmp(IntCC::UnsignedLessThan, t, arr.n);
        let done = self.b.create_block();
        let next = if self.width > 1 {
            self.b.create_block()
        } else {
            self.check
        };
        self.b.ins().brif(more, next, &[], done, &[]);
        self.enter(done);
        self.store_ic();
        let s = self.b.ins().iconst(I32, ROUND as i64);
        self.b.ins().return_(&[s]);
        if self.width > 1 {
            self.enter(next);
            self.group_dispatch();
        }

        // check: thread t runs if it has not stopped, or waits on a released barrier.
        self.b.switch_to_block(self.check);
        let t = self.b.use_var(self.t_loop);
        let (runnable, _) = self.runnable(t);
        let run = self.b.create_block();
        self.b.ins().brif(runnable, run, &[], self.next_thread, &[]);

        self.enter(run);
        let t32 = self.b.ins().ireduce(I32, t);
        self.b.ins().store(FLAGS, t32, self.tc, off::CUR);
        self.lane_values(t);
        let lt = self.b.use_var(self.local_t);
        self.b.ins().store(FLAGS, lt, self.tc, off::LOCAL);
        let t4 = self.b.ins().ishl_imm_u(t, 2);
        let rp = self.b.ins().iadd(arr.resumes, t4);
        let rs = self.b.ins().load(I32, FLAGS, rp, 0);
        let start = self.b.create_block();
        let mut sw = Switch::new();
        // Resume points: after each barrier, then at each guarded control transfer (where
        // a diverging group left its threads).
        let mut points: Vec<(usize, Vec<u32>)> = self
            .resumes
            .iter()
            .copied()
            .zip(self.saved.iter().cloned())
            .collect();
        points.extend(self.divs.iter().copied().zip(self.divsaved.iter().cloned()));
        let mut reload = Vec::new();
        for (k, _) in points.iter().enumerate() {
            let blk = self.b.create_block();
            sw.set_entry(k as u128 + 1, blk);
            reload.push(blk);
        }
        sw.emit(&mut self.b, rs, start);
        // A fresh thread: registers start at zero.
        self.enter(start);
        self.zero_vars();
        let first = self.block_at(0);
        self.b.ins().jump(first, &[]);
        for (blk, (pc, regs)) in reload.into_iter().zip(points) {
            self.enter(blk);
            self.reload(&regs);
            let target = self.block_at(pc);
            self.b.ins().jump(target, &[]);
        }
    }

    /// Whether thread `t` (i64) runs this round: it has not stopped, or it waits on a
    /// released barrier. Also returns its resume point (i32).
    fn runnable(&mut self, t: Value) -> (Value, Value) {
        let arr = self.arr;
        let sp = self.b.ins().iadd(arr.state, t);
        let st = self.b.ins().load(I8, FLAGS, sp, 0);
        let t4 = self.b.ins().ishl_imm_u(t, 2);
        let bp = self.b.ins().iadd(arr.bars, t4);
        let bar = self.b.ins().load(I32, FLAGS, bp, 0);
        let rp = self.b.ins().iadd(arr.resumes, t4);
        let res = self.b.ins().load(I32, FLAGS, rp, 0);
        let fresh = self.b.ins().icmp_imm_u(IntCC::Equal, st, 0);
        // WAIT or WAIT_GROUP.
        let odd = self.b.ins().band_imm_u(st, 1);
        let waits = self.b.ins().icmp_imm_u(IntCC::NotEqual, odd, 0);
        let rel = self.b.ins().ushr(arr.released, bar);
        let rel = self.b.ins().band_imm_u(rel, 1);
        let rel = self.b.ins().ireduce(I8, rel);
        let waits = self.b.ins().band(waits, rel);
        (self.b.ins().bor(fresh, waits), res)
    }

    /// Whether `test` (given a word of the states at `sp` and the word with a 1 in each
    /// thread's byte) holds for every word of a group of `w` threads' states (an `i8`).
    fn states_all(
        &mut self,
        sp: Value,
        w: usize,
        test: impl Fn(&mut Self, Value, i64) -> Value,
    ) -> Value {
        let (ty, words, ones) = state_words(w);
        let any = MemFlagsData::new().with_notrap();
        let mut all = None;
        for k in 0..words {
            let x = self
                .b
                .ins()
                .load(ty, any, sp, (k * ty.bytes() as usize) as i32);
            let ok = test(self, x, ones);
            all = Some(match all {
                None => ok,
                Some(a) => self.b.ins().band(a, ok),
            });
        }
        all.expect("state words")
    }

    /// Whether every one of a group of `w` threads' states at `sp` is `state` (an `i8`).
    fn states_are(&mut self, sp: Value, w: usize, state: u8) -> Value {
        self.states_all(sp, w, |lw, x, ones| {
            lw.b.ins().icmp_imm_u(IntCC::Equal, x, state as i64 * ones)
        })
    }

    /// Whether the `w` threads from `t` (`w` a multiple of four) all run this round at the
    /// same resume point (an `i8`), that point (`i32`), and whether they reached it
    /// together in the group code (an `i8`): the per-thread arrays read a group at a time.
    fn group_runnable(&mut self, t: Value, w: usize) -> (Value, Value, Value) {
        let arr = self.arr;
        let any = MemFlagsData::new().with_notrap();
        let sp = self.b.ins().iadd(arr.state, t);
        let t4 = self.b.ins().ishl_imm_u(t, 2);
        let rp = self.b.ins().iadd(arr.resumes, t4);
        let bp = self.b.ins().iadd(arr.bars, t4);
        // Whether the `w / 4` vectors at `p` all hold their first element, and that element.
        let same = |lw: &mut Self, p: Value| {
            let v0 = lw.b.ins().load(I32X4, any, p, 0);
            let x = lw.b.ins().extractlane(v0, 0);
            let s = lw.b.ins().splat(I32X4, x);
            let mut eq = lw.b.ins().icmp(IntCC::Equal, v0, s);
            for h in 1..w / 4 {
                let v = lw.b.ins().load(I32X4, any, p, 16 * h as i32);
                let e = lw.b.ins().icmp(IntCC::Equal, v, s);
                eq = lw.b.ins().band(eq, e);
            }
            (lw.b.ins().vall_true(eq), x)
        };
        let (same_res, res0) = same(self, rp);
        let (same_bar, bar0) = same(self, bp);
        let fresh = self.states_are(sp, w, 0);
        // Each WAIT or WAIT_GROUP.
        let waiting = self.states_all(sp, w, |lw, x, ones| {
            let x = lw.b.ins().bor_imm_u(x, 2 * ones);
            lw.b.ins()
                .icmp_imm_u(IntCC::Equal, x, rt::WAIT_GROUP as i64 * ones)
        });
        let together = self.states_are(sp, w, rt::WAIT_GROUP);
        let rel = self.b.ins().ushr(arr.released, bar0);
        let rel = self.b.ins().band_imm_u(rel, 1);
        let rel = self.b.ins().ireduce(I8, rel);
        let waits = self.b.ins().band(waiting, same_bar);
        let waits = self.b.ins().band(waits, rel);
        let ok = self.b.ins().bor(fresh, waits);
        (self.b.ins().band(ok, same_res), res0, together)
    }

    /// Defines the current lane's thread values for thread `t`: its saved-register slot,
    /// its local memory and its `%tid`.
    fn lane_values(&mut self, t: Value) {
        let arr = self.arr;
        let lt = self.b.ins().imul_imm_s(t, self.frame as i64);
        let lt = self.b.ins().iadd(arr.local, lt);
        self.b.def_var(self.local_t, lt);
        // Saved registers, a group of `LANES` threads at a time: register r of thread t at
        // `(t / LANES * nregs + r) * LANES + t % LANES` (a group's copies side by side).
        let g = self.b.ins().ushr_imm_u(t, LANES.trailing_zeros() as i64);
        let g = self
            .b
            .ins()
            .imul_imm_s(g, self.nregs.max(1) as i64 * REG_STRIDE as i64);
        let k = self.b.ins().band_imm_u(t, LANES as i64 - 1);
        let k = self.b.ins().ishl_imm_u(k, 3);
        let rt_ = self.b.ins().iadd(arr.regs, g);
        let rt_ = self.b.ins().iadd(rt_, k);
        self.b.def_var(self.regs_t, rt_);
        let t4 = self.b.ins().ishl_imm_u(t, 2);
        for d in 0..3 {
            let p = self.b.ins().iadd(arr.tids[d], t4);
            // Read-only during the call: unused loads go.
            let v = self
                .b
                .ins()
                .load(I32, FLAGS.with_readonly().with_can_move(), p, 0);
            let v = self.b.ins().uextend(I64, v);
            self.b.def_var(self.tid[d], v);
        }
    }

    pub(super) fn zero_vars(&mut self) {
        let zero = self.b.ins().iconst(I64, 0);
        for v in self.vars.clone() {
            self.b.def_var(v, zero);
        }
    }

    /// Loads the current lane's registers `regs` from its slot (the others start at zero).
    pub(super) fn reload(&mut self, regs: &[u32]) {
        self.zero_vars();
        let regs_t = self.b.use_var(self.regs_t);
        for &r in regs {
            let x = self
                .b
                .ins()
                .load(I64, FLAGS, regs_t, (r * REG_STRIDE) as i32);
            self.b.def_var(self.vars[r as usize], x);
        }
    }

    /// Stores the current lane's registers `regs` to its slot.
    pub(super) fn spill(&mut self, regs: &[u32]) {
        let regs_t = self.b.use_var(self.regs_t);
        for &r in regs {
            let x = self.b.use_var(self.vars[r as usize]);
            self.b
                .ins()
                .store(FLAGS, x, regs_t, (r * REG_STRIDE) as i32);
        }
    }

    /// The group code's entry, at a thread `t_loop` that is a multiple of `LANES`: the
    /// group runs when all its threads are runnable at the same resume point, else its
    /// threads go to the scalar code one at a time.
    fn group_dispatch(&mut self) {
        let w = self.width;
        let arr = self.arr;
        let t = self.b.use_var(self.t_loop);
        let su = self.b.use_var(self.scalar_until);
        let past = self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, t, su);
        let end = self.b.ins().iadd_imm_s(t, w as i64);
        let fits = self
            .b
            .ins()
            .icmp(IntCC::UnsignedLessThanOrEqual, end, arr.n);
        let ok = self.b.ins().band(past, fits);
        let gcheck = self.b.create_block();
        let scalar = self.b.create_block();
        // Filled in below, once `genter` exists: a round where every group is runnable at
        // one point skips the checks.
        let gfast = self.b.create_block();
        self.b.ins().brif(ok, gfast, &[], self.check, &[]);
        self.enter_late(gcheck);
        let mut all = None;
        let mut res0 = None;
        let mut together = None;
        if w.is_multiple_of(4) {
            let (a, r, tg) = self.group_runnable(t, w);
            all = Some(a);
            res0 = Some(r);
            together = Some(tg);
        }
        for k in (0..w).filter(|_| !w.is_multiple_of(4)) {
            let tk = self.b.ins().iadd_imm_s(t, k as i64);
            let (r, res) = self.runnable(tk);
            let ok = match res0 {
                None => {
                    res0 = Some(res);
                    r
                }
                Some(r0) => {
                    let same = self.b.ins().icmp(IntCC::Equal, res, r0);
                    self.b.ins().band(r, same)
                }
            };
            all = Some(match all {
                None => ok,
                Some(a) => self.b.ins().band(a, ok),
            });
        }
        let (all, res0) = (all.expect("lanes"), res0.expect("lanes"));
        let genter = self.b.create_block();
        let res0_p = self.b.append_block_param(genter, I32);
        let together_p = self.b.append_block_param(genter, I8);
        let tg = match together {
            Some(tg) => tg,
            None => self.b.ins().iconst(I8, 0),
        };
        self.b
            .ins()
            .brif(all, genter, &[res0.into(), tg.into()], scalar, &[]);
        let (res0, together) = (res0_p, together.map(|_| together_p));
        // Not a group this round: its threads run one at a time.
        self.b.switch_to_block(scalar);
        let until = self.b.ins().iadd_imm_s(t, w as i64);
        self.b.def_var(self.scalar_until, until);
        self.b.ins().jump(self.check, &[]);

        self.enter(gfast);
        let all_at = self.ld_tc(I32, off::ALL_AT);
        let res = self.b.ins().iadd_imm_s(all_at, -1);
        let sp = self.b.ins().iadd(arr.state, t);
        let tg_fast = self.states_are(sp, w, rt::WAIT_GROUP);
        self.b
            .ins()
            .brif(all_at, genter, &[res.into(), tg_fast.into()], gcheck, &[]);
        self.b.seal_block(gcheck);
        self.enter(genter);
        for k in 0..w {
            self.set_lane(k);
            let tk = self.b.ins().iadd_imm_s(t, k as i64);
            self.b.def_var(self.t, tk);
            self.lane_values(tk);
        }
        let start = self.b.create_block();
        let mut sw = Switch::new();
        let mut reload = Vec::new();
        for k in 0..self.resumes.len() {
            let blk = self.b.create_block();
            sw.set_entry(k as u128 + 1, blk);
            reload.push(blk);
        }
        // Anything else (none is expected: diverged threads reach a barrier or exit in the
        // round they diverged in) runs in the scalar code.
        let odd = self.b.create_block();
        sw.set_entry(0, start);
        sw.emit(&mut self.b, res0, odd);
        self.enter(odd);
        self.b.ins().jump(scalar, &[]);
        self.enter(start);
        for k in 0..w {
            self.set_lane(k);
            self.zero_vars();
        }
        self.set_lane(LANES);
        self.zero_vectors();
        let first = self.gblocks[&0];
        self.b.ins().jump(first, &[]);
        for (k, blk) in reload.into_iter().enumerate() {
            self.enter(blk);
            let regs = self.saved[k].clone();
            // Threads that ran apart may disagree on a uniform register: one at a time then.
            // Threads that reached the barrier together in the group code agree.
            let target = self.gblocks[&self.resumes[k]];
            let check = self.vector
                && regs
                    .iter()
                    .any(|&r| self.forms[r as usize] == Form::Uniform);
            if let (true, Some(tg)) = (check, together) {
                let (fast, checked) = (self.b.create_block(), self.b.create_block());
                self.b.ins().brif(tg, fast, &[], checked, &[]);
                self.enter(fast);
                self.group_reload(&regs, false);
                self.b.ins().jump(target, &[]);
                self.enter(checked);
            }
            match self.group_reload(&regs, true) {
                Some(differ) => {
                    self.b.ins().brif(differ, scalar, &[], target, &[]);
                }
                None => {
                    self.b.ins().jump(target, &[]);
                }
            }
        }
        self.set_lane(LANES);
        self.b.seal_block(scalar);
    }

    /// Records the current thread's new state and goes on with the next thread (or, in the
    /// group code, every lane's and the next group).
    fn thread_stops(&mut self, state: u8) {
        let arr = self.arr;
        let t = self.b.use_var(self.t_loop);
        let lanes = if self.group { self.width } else { 1 };
        let sp = self.b.ins().iadd(arr.state, t);
        if lanes > 1 {
            let (ty, words, ones) = state_words(lanes);
            let v = self.b.ins().iconst(ty, state as i64 * ones);
            for k in 0..words {
                let o = (k * ty.bytes() as usize) as i32;
                self.b
                    .ins()
                    .store(MemFlagsData::new().with_notrap(), v, sp, o);
            }
        } else {
            let v = self.b.ins().iconst(I8, state as i64);
            for k in 0..lanes {
                self.b.ins().store(FLAGS, v, sp, k as i32);
            }
        }
        if state == rt::DONE {
            self.count(off::DONE, lanes as i64);
        }
        let next = if self.group {
            self.gnext
        } else {
            self.next_thread
        };
        self.b.ins().jump(next, &[]);
    }

    /// Counts a barrier arrival at resume point `point` (index + 1) for the runner's
    /// next-round shortcut (see [`rt::ThreadCtx::all_at`]).
    fn group_arrival(&mut self, point: usize) {
        if point < rt::ARRIVAL_POINTS {
            let lanes = if self.group { self.width } else { 1 };
            self.count(off::ARRIVALS + 4 * point as i32, lanes as i64);
        }
    }

    /// Adds `n` to the u32 counter at `offset` in the ThreadCtx.
    fn count(&mut self, offset: i32, n: i64) {
        let c = self.ld_tc(I32, offset);
        let c = self.b.ins().iadd_imm_s(c, n);
        self.b.ins().store(FLAGS, c, self.tc, offset);
    }

    /// Instructions from leader `pc` to the next leader.
    fn run_len(&self, pc: usize) -> u64 {
        let i = self.leaders.partition_point(|&l| l <= pc);
        let next = self.leaders.get(i).copied().unwrap_or(self.code.len());
        (next - pc) as u64
    }

    fn body(&mut self) -> Result<(), Reject> {
        let mut open = false;
        for pc in 0..self.code.len() {
            if let Some(&blk) = self.blocks.get(&pc) {
                if open {
                    self.b.ins().jump(blk, &[]);
                }
                self.b.switch_to_block(blk);
                let n = self.run_len(pc);
                let ic = self.b.use_var(self.ic);
                let ic = self.b.ins().iadd_imm_s(ic, n as i64);
                self.b.def_var(self.ic, ic);
                open = true;
            }
            if !open {
                // Unreachable code after a terminator, before the next leader.
                continue;
            }
            let inst = &self.code[pc];
            let next = self.b.create_block();
            if let Some((g, neg)) = inst.guard {
                self.guard_branch(g, neg, next);
            }
            let falls = self.inst(pc, inst)?;
            if falls {
                self.b.ins().jump(next, &[]);
            }
            self.enter(next);
            open = true;
        }
        if open {
            self.exit(EXITED);
        }
        Ok(())
    }

    /// The group code: the kernel's body once more, each instruction emitted for every lane
    /// (with its own guard). Branches, exits and barriers are the group's; where a guarded
    /// one finds its lanes disagreeing, the group hands its threads to the scalar code there.
    fn body_group(&mut self) -> Result<(), Reject> {
        let w = self.width;
        let mut open = false;
        for pc in 0..self.code.len() {
            if let Some(&blk) = self.blocks.get(&pc) {
                if open {
                    self.b.ins().jump(blk, &[]);
                }
                self.b.switch_to_block(blk);
                let n = self.run_len(pc) * w as u64;
                let ic = self.b.use_var(self.ic);
                let ic = self.b.ins().iadd_imm_s(ic, n as i64);
                self.b.def_var(self.ic, ic);
                open = true;
            }
            if !open {
                continue;
            }
            let inst = &self.code[pc];
            let next = self.b.create_block();
            if matches!(
                inst.op,
                Op::Bra { .. } | Op::Exit | Op::Ret | Op::Bar { .. }
            ) {
                if let Some((g, neg)) = inst.guard {
                    let (all, any) = self.guard_all_any(g, neg);
                    let (doit, mixed, split) = (
                        self.b.create_block(),
                        self.b.create_block(),
                        self.b.create_block(),
                    );
                    self.b.ins().brif(all, doit, &[], mixed, &[]);
                    self.enter(mixed);
                    self.b.ins().brif(any, split, &[], next, &[]);
                    self.enter(split);
                    self.diverge(pc);
                    self.enter(doit);
                }
                self.set_lane(0);
                let falls = self.inst(pc, inst)?;
                self.set_lane(LANES);
                if falls {
                    self.b.ins().jump(next, &[]);
                }
            } else if self.vector {
                self.group_inst(pc, inst)?;
                self.b.ins().jump(next, &[]);
            } else {
                self.per_lane(pc, inst)?;
                self.b.ins().jump(next, &[]);
            }
            self.enter(next);
            open = true;
        }
        if open {
            self.exit(EXITED);
        }
        // Where a check failed: the group's threads go on one at a time from there.
        for (pc, blk) in std::mem::take(&mut self.bails) {
            self.enter(blk);
            self.b.set_cold_block(blk);
            self.diverge(pc);
        }
        Ok(())
    }

    /// Those of `regs` the group code may have changed before instruction `pc`: the others'
    /// slots hold their values.
    fn dirty_only(&self, pc: usize, regs: &[u32]) -> Vec<u32> {
        let Some(d) = self.dirty.get(pc) else {
            return regs.to_vec();
        };
        regs.iter()
            .copied()
            .filter(|&r| {
                d.get(r as usize / 64)
                    .is_none_or(|w| w >> (r % 64) & 1 != 0)
            })
            .collect()
    }

    /// The block leaving the group for the scalar code at `pc` (see [`Self::bail`]).
    pub(super) fn bail_block(&mut self, pc: usize) -> Block {
        if let Some(&(_, b)) = self.bails.iter().find(|(p, _)| *p == pc) {
            return b;
        }
        let b = self.b.create_block();
        self.bails.push((pc, b));
        b
    }

    /// Goes on in a new block where the current lane's guard `g` (negated with `neg`) holds,
    /// and to `skip` where it does not.
    pub(super) fn guard_branch(&mut self, g: u32, neg: bool, skip: Block) {
        let p = self.b.use_var(self.vars[g as usize]);
        let p = self.b.ins().band_imm_u(p, 1);
        let doit = self.b.create_block();
        if neg {
            self.b.ins().brif(p, skip, &[], doit, &[]);
        } else {
            self.b.ins().brif(p, doit, &[], skip, &[]);
        }
        self.enter(doit);
    }

    /// Emits a (non-control) instruction once per lane of the group, each with its guard.
    pub(super) fn per_lane(&mut self, pc: usize, inst: &Inst) -> Result<(), Reject> {
        for k in 0..self.width {
            self.set_lane(k);
            let lnext = self.b.create_block();
            if let Some((g, neg)) = inst.guard {
                self.guard_branch(g, neg, lnext);
            }
            if self.inst(pc, inst)? {
                self.b.ins().jump(lnext, &[]);
            }
            self.enter(lnext);
        }
        self.set_lane(LANES);
        Ok(())
    }

    /// A group's lanes disagree at the guarded control transfer at `pc`: each lane's live
    /// registers go to its slot with `pc` as its resume point, and its thread runs in the
    /// scalar code from there, this round.
    fn diverge(&mut self, pc: usize) {
        let w = self.width;
        let d = self.divs.iter().position(|&p| p == pc).unwrap_or(0);
        let point = (self.resumes.len() + 1 + d) as i64;
        let regs = self.dirty_only(pc, &self.divsaved[d].clone());
        self.group_spill(&regs);
        self.set_lane(LANES);
        let arr = self.arr;
        let t = self.b.use_var(self.t_loop);
        let t4 = self.b.ins().ishl_imm_u(t, 2);
        let rp = self.b.ins().iadd(arr.resumes, t4);
        let sp = self.b.ins().iadd(arr.state, t);
        let point = self.b.ins().iconst(I32, point);
        let fresh = self.b.ins().iconst(I8, 0);
        for k in 0..w {
            self.b.ins().store(FLAGS, point, rp, 4 * k as i32);
            self.b.ins().store(FLAGS, fresh, sp, k as i32);
        }
        // The scalar code counts the instruction at `pc` again.
        let ic = self.b.use_var(self.ic);
        let again = (self.run_len(pc) * w as u64) as i64;
        let ic = self.b.ins().iadd_imm_s(ic, -again);
        self.b.def_var(self.ic, ic);
        let until = self.b.ins().iadd_imm_s(t, w as i64);
        self.b.def_var(self.scalar_until, until);
        self.b.ins().jump(self.check, &[]);
    }

    /// In the group code, tells the helpers which thread runs: `cur` and its local memory.
    pub(super) fn sync_cur(&mut self) {
        if !self.group {
            return;
        }
        let t = self.b.use_var(self.t);
        let t32 = self.b.ins().ireduce(I32, t);
        self.b.ins().store(FLAGS, t32, self.tc, off::CUR);
        let lt = self.b.use_var(self.local_t);
        self.b.ins().store(FLAGS, lt, self.tc, off::LOCAL);
    }

    fn store_ic(&mut self) {
        let ic = self.b.use_var(self.ic);
        self.b.ins().store(FLAGS, ic, self.tc, off::ICOUNT);
    }

    /// Ends the current thread ([`EXITED`]) or the whole call (any other status).
    pub(super) fn exit(&mut self, status: u32) {
        if status == EXITED {
            self.thread_stops(rt::DONE);
            return;
        }
        self.store_ic();
        let s = self.b.ins().iconst(I32, status as i64);
        self.b.ins().return_(&[s]);
    }

    /// Emits one instruction; false when it does not fall through.
    pub(super) fn inst(&mut self, pc: usize, inst: &Inst) -> Result<bool, Reject> {
        match &inst.op {
            Op::Alu {
                native,
                ctx,
                src,
                nsrc,
                dst,
                ndst,
                ..
            } => {
                let n = (*nsrc as usize).min(4);
                let vals: Vec<Value> = (0..n).map(|k| self.src(&src[k])).collect();
                let plain = ctx.rnd == crate::float::Rnd::Rn && !ctx.ftz && !ctx.sat
                    || native
                        .is_some_and(|n| matches!(n, Native::CvtFI { .. } | Native::CvtFF { .. }));
                let out = match native {
                    Some(nat) if plain && !ctx.ftz && !ctx.sat => self.native(*nat, ctx.imm, &vals),
                    _ => None,
                };
                let (r0, r1) = match out {
                    Some(r) => r,
                    None => self.alu_call(inst, &vals),
                };
                let r0 = self.pin_float(r0);
                self.def(dst[0], r0);
                if *ndst >= 2
                    && let Some(r1) = r1
                {
                    self.def(dst[1], r1);
                }
            }
            Op::Mov { d, a, mask } => {
                let v = self.src(a);
                let v = self.mask(v, *mask);
                self.def(*d, v);
            }
            Op::Pack { d, srcs, n, bits } => {
                let em = if *bits >= 64 {
                    u64::MAX
                } else {
                    (1u64 << bits) - 1
                };
                let mut acc = self.b.ins().iconst(I64, 0);
                for k in 0..(*n as usize).min(4) {
                    let v = self.src(&srcs[k]);
                    let v = self.mask(v, em);
                    let v = self.b.ins().ishl_imm_u(v, (k as u32 * *bits as u32) as i64);
                    acc = self.b.ins().bor(acc, v);
                }
                self.def(*d, acc);
            }
            Op::Unpack { ds, n, bits, a } => {
                let em = if *bits >= 64 {
                    u64::MAX
                } else {
                    (1u64 << bits) - 1
                };
                let v = self.src(a);
                for k in 0..(*n as usize).min(4) {
                    let x = self.b.ins().ushr_imm_u(v, (k as u32 * *bits as u32) as i64);
                    let x = self.mask(x, em);
                    self.def(ds[k], x);
                }
            }
            Op::Cvta {
                to,
                space,
                d,
                a,
                mask,
            } => {
                let v = self.src(a);
                let base = match space {
                    Space::Shared => SHARED_WINDOW,
                    Space::Local => LOCAL_WINDOW,
                    _ => 0,
                };
                let r = if base == 0 {
                    v
                } else if *to {
                    self.b.ins().iadd_imm_s(v, (base as i64).wrapping_neg())
                } else {
                    self.b.ins().iadd_imm_s(v, base as i64)
                };
                let r = self.mask(r, *mask);
                self.def(*d, r);
            }
            Op::Ld {
                space,
                size,
                sext,
                n,
                d,
                addr,
                ..
            } => {
                let n = (*n as usize).clamp(1, 4);
                let a = self.src(&addr.base);
                let a = self.b.ins().iadd_imm_s(a, addr.off);
                let space = frame_space(*space, &addr.base);
                let p = self.ptr(space, a, *size as u32 * n as u32, false, inst.line);
                let ty = int_type(*size as u32);
                for k in 0..n {
                    let v =
                        self.b
                            .ins()
                            .load(ty, MemFlagsData::new(), p, (k * *size as usize) as i32);
                    let v = if ty == I64 {
                        v
                    } else if *sext {
                        self.b.ins().sextend(I64, v)
                    } else {
                        self.b.ins().uextend(I64, v)
                    };
                    self.def(d[k], v);
                }
            }
            Op::St {
                space,
                size,
                n,
                v,
                addr,
                ..
            } => {
                let n = (*n as usize).clamp(1, 4);
                let a = self.src(&addr.base);
                let a = self.b.ins().iadd_imm_s(a, addr.off);
                let vals: Vec<Value> = (0..n).map(|k| self.src(&v[k])).collect();
                let space = frame_space(*space, &addr.base);
                let p = self.ptr(space, a, *size as u32 * n as u32, true, inst.line);
                let ty = int_type(*size as u32);
                for (k, x) in vals.into_iter().enumerate() {
                    let x = if ty == I64 {
                        x
                    } else {
                        self.b.ins().ireduce(ty, x)
                    };
                    self.b
                        .ins()
                        .store(MemFlagsData::new(), x, p, (k * *size as usize) as i32);
                }
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
                let a = self.src(&addr.base);
                let a = self.b.ins().iadd_imm_s(a, addr.off);
                let (bv, cv) = (self.src(b), self.src(c));
                if let Some(old) =
                    self.shared_atomic(*space, *op, *size, *signed, a, bv, cv, inst.line)
                {
                    self.def(*d, old);
                    return Ok(true);
                }
                let opi = rt::ATOM_OPS.iter().position(|o| o == op).unwrap_or(0) as u32;
                let packed = rt::space_code(*space)
                    | opi << 4
                    | (*size as u32) << 8
                    | (*signed as u32) << 16;
                let packed = self.b.ins().iconst(I32, packed as i64);
                self.sync_cur();
                let f = self
                    .b
                    .ins()
                    .iconst(I64, rt::h_atom as *const () as usize as i64);
                let call =
                    self.b
                        .ins()
                        .call_indirect(self.helpers.atom, f, &[self.tc, packed, a, bv, cv]);
                let old = self.b.inst_results(call)[0];
                let fault = self.b.ins().load(I32, FLAGS, self.tc, off::FAULT);
                self.fault_if(fault, inst.line);
                self.def(*d, old);
            }
            Op::Bra { target } => {
                let t = *target as usize;
                let Some(&blk) = self.blocks.get(&t) else {
                    return Err("branch target".into());
                };
                if t <= pc {
                    // A loop's back edge: poll now and then.
                    let ic = self.b.use_var(self.ic);
                    let at = self.b.use_var(self.poll_at);
                    let due = self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, ic, at);
                    let poll = self.b.create_block();
                    self.b.ins().brif(due, poll, &[], blk, &[]);
                    self.enter(poll);
                    self.b.set_cold_block(poll);
                    self.store_ic();
                    let f = self
                        .b
                        .ins()
                        .iconst(I64, rt::h_poll as *const () as usize as i64);
                    let call = self.b.ins().call_indirect(self.helpers.poll, f, &[self.tc]);
                    let stop = self.b.inst_results(call)[0];
                    let pa = self.ld_tc(I64, off::POLL_AT);
                    self.b.def_var(self.poll_at, pa);
                    let halt = self.b.create_block();
                    self.b.ins().brif(stop, halt, &[], blk, &[]);
                    self.enter(halt);
                    self.b.set_cold_block(halt);
                    self.exit(STOPPED);
                } else {
                    self.b.ins().jump(blk, &[]);
                }
                return Ok(false);
            }
            Op::Exit | Op::Ret => {
                self.exit(EXITED);
                return Ok(false);
            }
            Op::Bar { id, .. } => {
                let Src::Imm(bid) = id else {
                    return Err("barrier id".into());
                };
                let k = self.resumes.iter().position(|&r| r == pc + 1);
                let Some(k) = k else {
                    // A barrier as the last instruction: nothing follows.
                    self.exit(EXITED);
                    return Ok(false);
                };
                let regs = self.saved[k].clone();
                let lanes = if self.group { self.width } else { 1 };
                let first = self.lane;
                if self.group {
                    let regs = self.dirty_only(pc, &regs);
                    self.group_spill(&regs);
                } else {
                    self.spill(&regs);
                }
                self.set_lane(first);
                let arr = self.arr;
                let t = self.b.use_var(self.t_loop);
                let t4 = self.b.ins().ishl_imm_u(t, 2);
                let bp = self.b.ins().iadd(arr.bars, t4);
                let rp = self.b.ins().iadd(arr.resumes, t4);
                let bid = *bid & 15;
                let bv = self.b.ins().iconst(I32, bid as i64);
                let k1 = self.b.ins().iconst(I32, k as i64 + 1);
                if lanes.is_multiple_of(4) {
                    let any = MemFlagsData::new().with_notrap();
                    let bv = self.b.ins().splat(I32X4, bv);
                    let k1 = self.b.ins().splat(I32X4, k1);
                    for h in 0..lanes / 4 {
                        self.b.ins().store(any, bv, bp, 16 * h as i32);
                        self.b.ins().store(any, k1, rp, 16 * h as i32);
                    }
                } else {
                    for l in 0..lanes {
                        self.b.ins().store(FLAGS, bv, bp, 4 * l as i32);
                        self.b.ins().store(FLAGS, k1, rp, 4 * l as i32);
                    }
                }
                self.count(off::WAITING + 4 * bid as i32, lanes as i64);
                self.group_arrival(k + 1);
                self.thread_stops(if self.group { rt::WAIT_GROUP } else { rt::WAIT });
                return Ok(false);
            }
            Op::Fence | Op::Nop => {}
            Op::Trap | Op::Brkpt => {
                let kind = if matches!(inst.op, Op::Trap) {
                    rt::FAULT_TRAP
                } else {
                    rt::FAULT_BRKPT
                };
                self.sync_cur();
                let k = self.b.ins().iconst(I32, kind as i64);
                self.b.ins().store(FLAGS, k, self.tc, off::FAULT);
                let l = self.b.ins().iconst(I32, inst.line as i64);
                self.b.ins().store(FLAGS, l, self.tc, off::FAULT_LINE);
                self.exit(FAULTED);
                return Ok(false);
            }
            Op::Surf(t) => {
                let mut srcs = vec![t.handle, t.coords[0], t.coords[1], t.coords[2]];
                srcs.extend(t.v.iter().copied());
                let f = rt::h_surf as *const () as usize as i64;
                let r = self.helper_call(inst, &srcs, f)?;
                if !t.store {
                    for k in 0..(t.n as usize).min(4) {
                        self.def(t.d[k], r[k]);
                    }
                }
            }
            Op::Tex(t) => {
                let mut srcs = vec![
                    t.handle,
                    t.coords[0],
                    t.coords[1],
                    t.coords[2],
                    t.layer.unwrap_or(Src::Imm(0)),
                ];
                srcs.extend(t.lod.operands());
                let f = rt::h_tex as *const () as usize as i64;
                let r = self.helper_call(inst, &srcs, f)?;
                for (d, v) in t.d.iter().zip(r) {
                    self.def(*d, v);
                }
                let one = self.b.ins().iconst(I64, 1);
                self.def(t.p, one);
            }
            Op::Intrinsic { args, .. } => {
                let slot = self.b.create_sized_stack_slot(StackSlotData::new(
                    StackSlotKind::ExplicitSlot,
                    64,
                    3,
                ));
                for (k, a) in args.iter().enumerate().take(8) {
                    let v = match *a {
                        ArgCopy::Value { src, .. } => self.src(&src),
                        ArgCopy::Frame { from, size } => {
                            let sz = [8u32, 4, 2, 1]
                                .into_iter()
                                .find(|&s| s <= size.clamp(1, 8))
                                .unwrap_or(1);
                            let a = self.b.ins().iconst(I64, from as i64);
                            let p = self.ptr(Space::Local, a, sz, false, inst.line);
                            let x = self.b.ins().load(int_type(sz), MemFlagsData::new(), p, 0);
                            self.widen(x, false)
                        }
                    };
                    self.b.ins().stack_store(I64, v, slot, (k * 8) as i32);
                }
                self.sync_cur();
                let ap = self.b.ins().stack_addr(I64, slot, 0);
                let ip = self
                    .b
                    .ins()
                    .iconst(I64, inst as *const Inst as usize as i64);
                let f = self
                    .b
                    .ins()
                    .iconst(I64, rt::h_intrinsic as *const () as usize as i64);
                let call =
                    self.b
                        .ins()
                        .call_indirect(self.helpers.intrinsic, f, &[self.tc, ip, ap]);
                let r = self.b.inst_results(call)[0];
                let bad = self.b.create_block();
                let ok = self.b.create_block();
                self.b.ins().brif(r, bad, &[], ok, &[]);
                self.enter(bad);
                self.b.set_cold_block(bad);
                self.store_ic();
                self.b.ins().return_(&[r]);
                self.enter(ok);
            }
            _ => return Err("instruction".into()),
        }
        Ok(true)
    }

    /// An integer atomic on shared memory, inline: the block's threads run one at a time on
    /// this OS thread, so a plain read-modify-write is atomic (as in `rt::h_atom`). Returns
    /// the old value, or `None` where the helper does it.
    #[allow(clippy::too_many_arguments)]
    fn shared_atomic(
        &mut self,
        space: Space,
        op: crate::ir::AtomOp,
        size: u8,
        signed: bool,
        a: Value,
        b: Value,
        c: Value,
        line: u32,
    ) -> Option<Value> {
        use crate::ir::AtomOp as A;
        let ty = match size {
            4 => I32,
            8 => I64,
            _ => return None,
        };
        if space != Space::Shared
            || !matches!(
                op,
                A::Add | A::Min | A::Max | A::Exch | A::Cas | A::And | A::Or | A::Xor
            )
        {
            return None;
        }
        let p = self.ptr(space, a, size as u32, true, line);
        let old = self.b.ins().load(ty, MemFlagsData::new(), p, 0);
        let b = self.narrow(b, size * 8);
        let new = match op {
            A::Add => self.b.ins().iadd(old, b),
            A::Min if signed => self.b.ins().smin(old, b),
            A::Min => self.b.ins().umin(old, b),
            A::Max if signed => self.b.ins().smax(old, b),
            A::Max => self.b.ins().umax(old, b),
            A::Exch => b,
            A::Cas => {
                let c = self.narrow(c, size * 8);
                let eq = self.b.ins().icmp(IntCC::Equal, old, b);
                self.b.ins().select(eq, c, old)
            }
            A::And => self.b.ins().band(old, b),
            A::Or => self.b.ins().bor(old, b),
            _ => self.b.ins().bxor(old, b),
        };
        self.b.ins().store(MemFlagsData::new(), new, p, 0);
        Some(self.widen(old, false))
    }

    /// Calls a helper `fn(tc, inst, args, out) -> u32` with the values of `srcs` as its
    /// argument words: the four words it writes to `out`, or the helper's nonzero status
    /// returned from the compiled function (a fault or a stop; the helper recorded why).
    fn helper_call(&mut self, inst: &Inst, srcs: &[Src], f: i64) -> Result<[Value; 4], Reject> {
        let n = srcs.len();
        let slot = self.b.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            ((n + 4) * 8) as u32,
            3,
        ));
        for (k, s) in srcs.iter().enumerate() {
            let v = self.src(s);
            self.b.ins().stack_store(I64, v, slot, (k * 8) as i32);
        }
        self.sync_cur();
        let ap = self.b.ins().stack_addr(I64, slot, 0);
        let outp = self.b.ins().stack_addr(I64, slot, (n * 8) as i32);
        let ip = self
            .b
            .ins()
            .iconst(I64, inst as *const Inst as usize as i64);
        let fv = self.b.ins().iconst(I64, f);
        let call = self
            .b
            .ins()
            .call_indirect(self.helpers.tex, fv, &[self.tc, ip, ap, outp]);
        let r = self.b.inst_results(call)[0];
        let bad = self.b.create_block();
        let ok = self.b.create_block();
        self.b.ins().brif(r, bad, &[], ok, &[]);
        self.enter(bad);
        self.b.set_cold_block(bad);
        self.store_ic();
        self.b.ins().return_(&[r]);
        self.enter(ok);
        Ok([0, 1, 2, 3].map(|k| {
            self.b
                .ins()
                .stack_load(I64, I64, slot, ((n + k) * 8) as i32)
        }))
    }

    pub(super) fn def(&mut self, r: u32, v: Value) {
        if r != SINK
            && let Some(var) = self.vars.get(r as usize)
        {
            self.b.def_var(*var, v);
        }
    }

    pub(super) fn mask(&mut self, v: Value, m: u64) -> Value {
        if m == u64::MAX {
            v
        } else {
            self.b.ins().band_imm_u(v, m as i64)
        }
    }

    pub(super) fn tc_u32(&mut self, offset: i32) -> Value {
        let v = self.b.ins().load(I32, FLAGS, self.tc, offset);
        self.b.ins().uextend(I64, v)
    }

    /// A cold exit taken when `cond` (i32 or i8, non-zero) holds: records `line` and returns
    /// [`FAULTED`] (the helper that detected the fault filled in the rest).
    fn fault_if(&mut self, cond: Value, line: u32) {
        let bad = self.b.create_block();
        let ok = self.b.create_block();
        self.b.ins().brif(cond, bad, &[], ok, &[]);
        self.enter(bad);
        self.b.set_cold_block(bad);
        let l = self.b.ins().iconst(I32, line as i64);
        self.b.ins().store(FLAGS, l, self.tc, off::FAULT_LINE);
        self.exit(FAULTED);
        self.enter(ok);
    }

    /// A constant of integer type `ty` (narrow constants are stored zero-extended).
    pub(super) fn iconst(&mut self, ty: Type, v: i64) -> Value {
        let bits = ty.bits();
        let v = if bits >= 64 {
            v
        } else {
            v & ((1i64 << bits) - 1)
        };
        self.b.ins().iconst(ty, v)
    }

    pub(super) fn narrow(&mut self, v: Value, bits: u8) -> Value {
        match bits {
            64 => v,
            _ => self.b.ins().ireduce(int_type(bits as u32 / 8), v),
        }
    }

    pub(super) fn widen(&mut self, v: Value, signed: bool) -> Value {
        if self.b.func.dfg.value_type(v) == I64 {
            v
        } else if signed {
            self.b.ins().sextend(I64, v)
        } else {
            self.b.ins().uextend(I64, v)
        }
    }

    pub(super) fn as_float(&mut self, v: Value, f64: bool) -> Value {
        // The float this register value was made from, if it was made here: no round trip
        // through an integer register.
        if let Some(&(f, is64)) = self.floats.get(&v)
            && is64 == f64
        {
            return f;
        }
        if f64 {
            self.b.ins().bitcast(F64, MemFlagsData::new(), v)
        } else {
            let n = self.b.ins().ireduce(I32, v);
            self.b.ins().bitcast(F32, MemFlagsData::new(), n)
        }
    }

    /// Computes a float result here, not where it is first used: the code generator places
    /// pure instructions at their first use, so a chain of floating-point operations fed by
    /// loads would run after all the loads, their values spilled meanwhile. A store of the
    /// result to a scratch slot (an effect, kept in place) pins it to this point.
    fn pin_float(&mut self, v: Value) -> Value {
        let Some(&(f, _)) = self.floats.get(&v) else {
            return v;
        };
        let slot = match self.pin_slot {
            Some(s) => s,
            None => {
                let s = self.b.create_sized_stack_slot(StackSlotData::new(
                    StackSlotKind::ExplicitSlot,
                    8,
                    3,
                ));
                self.pin_slot = Some(s);
                s
            }
        };
        self.b.ins().stack_store(I64, f, slot, 0);
        v
    }

    pub(super) fn float_bits(&mut self, v: Value) -> Value {
        let is64 = self.b.func.dfg.value_type(v) == F64;
        let bits = if is64 {
            self.b.ins().bitcast(I64, MemFlagsData::new(), v)
        } else {
            let n = self.b.ins().bitcast(I32, MemFlagsData::new(), v);
            self.b.ins().uextend(I64, n)
        };
        self.floats.insert(bits, (v, is64));
        bits
    }
}

/// `.param` accesses at frame offsets (a device function's parameters, call-site slots) are
/// local-memory accesses.
pub(super) fn frame_space(space: Space, base: &Src) -> Space {
    match (space, base) {
        (Space::Param, Src::Local(_)) => Space::Local,
        (s, _) => s,
    }
}

pub(super) fn int_type(bytes: u32) -> Type {
    match bytes {
        1 => I8,
        2 => I16,
        4 => I32,
        _ => I64,
    }
}
