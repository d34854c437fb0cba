// SPDX-License-Identifier: Apache-2.0 OR MIT
//! [`Lower::build`]: the layout of a kernel's compiled function (variables, helper
//! signatures, basic blocks, resume points, whether it gets group code and of which width)
//! and the round's prologue; and [`check`], which decides up front whether a kernel can be
//! compiled at all.

use std::collections::{BTreeSet, HashMap};

use cranelift_codegen::ir::{
    InstBuilder, Type,
    condcodes::IntCC,
    types::{I8, I32, I32X4, I64},
};
use cranelift_frontend::{FunctionBuilder, Switch, Variable};

use super::{
    forms::{self, Form, forms, strides},
    live::{dirty_in, live_in},
    lower::{Arrays, FLAGS, HALVES, Helpers, Inv, LANES, Lane, Lower, NARROW, Reject, sig},
    mem::SIZES,
    rt::{ROUND, off},
    vector_check::{bails, can_vector},
};
use crate::ir::{ArgCopy, BarKind, Inst, Op, SINK, Space, Src};

/// Whether group code holds registers as vectors and uniform values (`VCUDA_JIT_VECTOR=0`
/// turns it off, for comparisons).
fn vector_enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("VCUDA_JIT_VECTOR").is_none_or(|v| v != "0"))
}

/// Kernels longer than this (instructions) get no group code: it costs a copy per lane.
const GROUP_MAX_INSTS: usize = 3000;

/// Threads per vector group: `LANES` (16) for small kernels with barriers, whose rounds
/// pay the group's bookkeeping once per group and barrier, else `NARROW` (8). The code run
/// lane by lane (instructions without a vector form) doubles with the wide group, and its
/// compile with it. `VCUDA_JIT_LANES=8|16` overrides the choice (for comparisons).
fn vector_width(code: &[Inst], fm: &[Form], strides: &[Option<i64>]) -> usize {
    static FORCED: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    let forced = FORCED.get_or_init(|| {
        std::env::var("VCUDA_JIT_LANES")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .filter(|w| *w == NARROW || *w == LANES)
    });
    if let Some(w) = *forced {
        return w;
    }
    let barriers = code.iter().any(|i| matches!(i.op, Op::Bar { .. }));
    let per_lane = code
        .iter()
        .filter(|i| {
            !matches!(i.op, Op::Bra { .. } | Op::Exit | Op::Ret | Op::Bar { .. })
                && !forms::uniform_inst(i, fm)
                && !can_vector(fm, strides, i)
        })
        .count();
    if barriers && code.len() <= WIDE_MAX_INSTS && per_lane <= WIDE_MAX_PER_LANE {
        LANES
    } else {
        NARROW
    }
}

/// The longest kernel (instructions) [`vector_width`] gives the wide group, and the most
/// instructions it may run lane by lane: the tree reduction of `bench/cuda/reduction.cu`
/// has 3 and runs a fifth faster wide; Rodinia's backprop `forward` has 5 and ran 15%
/// slower (2-core development VM, 2026-11-30).
const WIDE_MAX_INSTS: usize = 400;
const WIDE_MAX_PER_LANE: usize = 3;
/// The compile budget: registers live at branch targets, summed, times the code versions
/// that carry them (the scalar code and one per lane of the group code). The largest kernel
/// of the test suite, Numba's and CuPy's included, costs about 16,000; a kernel keeping 500
/// registers live across 100 if/else diamonds costs 300,000 and took 5.6 s to compile
/// (release build on the 2-vCPU development VM, 2026-11-29).
const MAX_COMPILE_COST: u64 = 1 << 17;
/// Kernels with more registers live at once than this run 2 threads per group (else 4) where
/// the group code is not vector code.
const FEW_LIVE: u32 = 12;

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
            | Op::Yield
            | Op::Trap
            | Op::Brkpt
            | Op::Atom { .. } => true,
            Op::Surf(t) => {
                reg_ok(&t.handle) && t.coords.iter().all(reg_ok) && t.v.iter().all(reg_ok)
            }
            Op::TexQuery { handle, .. } => reg_ok(handle),
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
        Op::ClusterBar { .. } | Op::Mapa { .. } | Op::GetCtaRank { .. } => "cluster instructions",
        Op::Mbar { .. } => "mbarrier",
        Op::Bulk(_) => "cp.async.bulk",
        Op::TensormapReplace { .. } => "tensormap.replace",
        Op::Isspacep { .. } => "isspacep",
        Op::Tex(_) | Op::Surf(_) | Op::TexQuery { .. } => "texture and surface instructions",
        Op::Wmma(_) => "wmma",
        Op::Mma(_) => "mma.sync, ldmatrix, stmatrix and movmatrix",
        Op::Unsupported(_) => "an unsupported instruction",
        _ => "instruction",
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
        admit: &mut dyn FnMut(u64) -> Result<(), Reject>,
    ) -> Result<usize, Reject> {
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let tc = b.block_params(entry)[0];
        let live = live_in(code, nregs);
        let fm = forms(code, nregs);
        let vector_ok = vector_enabled();
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
            each + one.div_ceil(NARROW as u32)
        };
        let most_live = |vector: bool| live.iter().map(|l| count(l, vector)).max().unwrap_or(0);
        let vector_strides = || strides(code, &fm);
        let mut vstrides = None;
        let (width, vector) = match code.len() {
            n if n > GROUP_MAX_INSTS => (1, false),
            _ if vector_ok && most_live(true) <= FEW_LIVE => {
                let s = vstrides.insert(vector_strides());
                (vector_width(code, &fm, s), true)
            }
            _ if most_live(false) > FEW_LIVE => (2, false),
            _ => (4, false),
        };
        // The code generator's work grows with the registers live where control flow joins
        // (each becomes a block parameter, per lane in group code): a kernel from the guest
        // that keeps hundreds live across thousands of branches would take minutes and
        // gigabytes to compile. Past the budget it runs interpreted.
        let live_at = |pc: usize| -> u64 {
            live.get(pc)
                .map_or(0, |l| l.iter().map(|w| u64::from(w.count_ones())).sum())
        };
        let joins: u64 = code
            .iter()
            .filter_map(|i| match i.op {
                Op::Bra { target } => Some(live_at(target as usize)),
                _ => None,
            })
            .sum();
        let cost = joins.saturating_mul(width as u64 + 1);
        if cost > MAX_COMPILE_COST {
            return Err(format!(
                "too many registers live across branches to compile ({cost} > {MAX_COMPILE_COST})"
            ));
        }
        // The code generator's memory grows with the same cost: charged before it runs.
        admit(cost)?;
        let fm = if vector {
            fm
        } else {
            vec![Form::Lanes; nregs as usize]
        };
        let strides = match vstrides {
            Some(s) => s,
            None => vec![None; nregs as usize],
        };
        let vvars: Vec<Option<[Variable; HALVES]>> = fm
            .iter()
            .map(|f| (*f == Form::Vector).then(|| [(); HALVES].map(|_| b.declare_var(I32X4))))
            .collect();
        let vtmp = [(); HALVES].map(|_| b.declare_var(I32X4));
        let together = b.declare_var(I8);
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
        let (gb, gl, gh, poll_at) = (
            std::array::from_fn(|_| var()),
            std::array::from_fn(|_| var()),
            std::array::from_fn(|_| var()),
            var(),
        );
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
            lanes: b.import_signature(sig(cc, &[I64, I32, I64, I32, I64], Some(I32))),
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
                        || vector && bails(&fm, &strides, &code[pc])
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
            live: Vec::new(),
            mask: None,
            together,
            greload: Vec::new(),
            chain_from: HashMap::new(),
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
        if lw.width > 1 {
            lw.chain_from = chain_from(code, &lw.resumes);
        }
        lw.live = live;
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

    /// The round: a loop over the block's threads, dispatching each runnable one to its
    /// start or to the resume point after the barrier it waited on. Where the kernel has
    /// group code, `LANES` threads at the same point run together.
    pub(super) fn prologue(&mut self) {
        let ic0 = self.ld_tc(I64, off::ICOUNT);
        self.b.def_var(self.ic, ic0);
        for size in SIZES {
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
            let odd = self.b.ins().band_imm_u(bx, self.width as i64 - 1);
            let never = self.b.ins().iconst(I64, -1);
            let su = self.b.ins().select(odd, never, zero);
            self.b.def_var(self.scalar_until, su);
        } else {
            self.b.def_var(self.scalar_until, zero);
        }
        let su0 = self.b.use_var(self.scalar_until);
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
        self.next_round(head, su0);
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
}

/// For each barrier, the resume points (indices into `resumes`) from which the code reaches
/// it without passing another barrier, at most [`CHAIN_MAX`] of them (a barrier reached
/// from more gets none).
fn chain_from(code: &[Inst], resumes: &[usize]) -> HashMap<usize, Vec<usize>> {
    let mut from: HashMap<usize, Vec<usize>> = HashMap::new();
    for (k, &start) in resumes.iter().enumerate() {
        let mut seen = vec![false; code.len()];
        let mut stack = vec![start];
        while let Some(pc) = stack.pop() {
            if pc >= code.len() || std::mem::replace(&mut seen[pc], true) {
                continue;
            }
            let i = &code[pc];
            match i.op {
                Op::Bar { .. } => {
                    from.entry(pc).or_default().push(k);
                    if i.guard.is_some() {
                        stack.push(pc + 1);
                    }
                }
                Op::Exit | Op::Ret if i.guard.is_none() => {}
                Op::Bra { target } => {
                    stack.push(target as usize);
                    if i.guard.is_some() {
                        stack.push(pc + 1);
                    }
                }
                // Indirect branches and calls: give up on chaining from this point.
                Op::Brx { .. } | Op::Call { .. } => return HashMap::new(),
                _ => stack.push(pc + 1),
            }
        }
    }
    from.retain(|_, v| v.len() <= CHAIN_MAX);
    from
}

/// Most resume points a barrier chains to (one compare each).
const CHAIN_MAX: usize = 3;
