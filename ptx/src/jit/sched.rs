// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Scheduling a round in the compiled code: which thread or group of threads runs next,
//! whether a group's threads are runnable together and where, their values of `%tid` and
//! their registers, and what a thread records when it exits or reaches a barrier.

use cranelift_codegen::ir::{
    Block, InstBuilder, MemFlagsData, Value,
    condcodes::IntCC,
    types::{I8, I32, I32X4, I64},
};
use cranelift_frontend::Switch;

use super::{
    forms::Form,
    lower::{FLAGS, LANES, Lower, state_words},
    rt::{self, off},
};
use crate::ir::{BarKind, Op, Src};

impl<'a, 'b> Lower<'a, 'b> {
    /// Whether thread `t` (i64) runs this round: it has not stopped, or it waits on a
    /// released barrier. Also returns its resume point (i32).
    pub(super) fn runnable(&mut self, t: Value) -> (Value, Value) {
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
        let released = self.ld_tc(I32, off::RELEASED);
        let rel = self.b.ins().ushr(released, bar);
        let rel = self.b.ins().band_imm_u(rel, 1);
        let rel = self.b.ins().ireduce(I8, rel);
        let waits = self.b.ins().band(waits, rel);
        (self.b.ins().bor(fresh, waits), res)
    }

    /// Whether `test` (given a word of the states at `sp` and the word with a 1 in each
    /// thread's byte) holds for every word of a group of `w` threads' states (an `i8`).
    pub(super) fn states_all(
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
    pub(super) fn states_are(&mut self, sp: Value, w: usize, state: u8) -> Value {
        self.states_all(sp, w, |lw, x, ones| {
            lw.b.ins().icmp_imm_u(IntCC::Equal, x, state as i64 * ones)
        })
    }

    /// Whether the `w` threads from `t` (`w` a multiple of four) all run this round at the
    /// same resume point (an `i8`), that point (`i32`), and whether they reached it
    /// together in the group code (an `i8`): the per-thread arrays read a group at a time.
    pub(super) fn group_runnable(&mut self, t: Value, w: usize) -> (Value, Value, Value) {
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
        let released = self.ld_tc(I32, off::RELEASED);
        let rel = self.b.ins().ushr(released, bar0);
        let rel = self.b.ins().band_imm_u(rel, 1);
        let rel = self.b.ins().ireduce(I8, rel);
        let waits = self.b.ins().band(waiting, same_bar);
        let waits = self.b.ins().band(waits, rel);
        let ok = self.b.ins().bor(fresh, waits);
        (self.b.ins().band(ok, same_res), res0, together)
    }

    /// Defines the current lane's thread values for thread `t`: its saved-register slot,
    /// its local memory and its `%tid`.
    pub(super) fn lane_values(&mut self, t: Value) {
        let arr = self.arr;
        let lt = self.b.ins().imul_imm_s(t, self.frame as i64);
        let lt = self.b.ins().iadd(arr.local, lt);
        self.b.def_var(self.local_t, lt);
        // Saved registers, a group of `G` threads at a time (`G` the layout's group): register
        // r of thread t at `(t / G * nregs + r) * G + t % G` (a group's copies side by side).
        let lg = self.layout_group();
        let g = self.b.ins().ushr_imm_u(t, lg.trailing_zeros() as i64);
        let group_bytes = self.nregs.max(1) as i64 * self.reg_stride() as i64;
        let g = self.b.ins().imul_imm_s(g, group_bytes);
        let k = self.b.ins().band_imm_u(t, lg as i64 - 1);
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

    /// The group code's entry, at a thread `t_loop` that is a multiple of `LANES`: the
    /// group runs when all its threads are runnable at the same resume point, else its
    /// threads go to the scalar code one at a time.
    pub(super) fn group_dispatch(&mut self) {
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
        let res0 = res0_p;
        let together = together.is_some();
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
        self.b.def_var(self.together, together_p);
        self.group_lanes(t);
        let start = self.b.create_block();
        let mut sw = Switch::new();
        // The switch goes to a block of its own for each resume point, which goes on to the
        // reload block: barriers of the group code jump to the reload blocks too
        // (`group_stops`), so they are sealed only once the group code is emitted.
        let mut pre = Vec::new();
        let mut reload = Vec::new();
        for k in 0..self.resumes.len() {
            let blk = self.b.create_block();
            sw.set_entry(k as u128 + 1, blk);
            pre.push(blk);
            reload.push(self.b.create_block());
        }
        self.greload = reload.clone();
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
            self.enter(pre[k]);
            self.b.ins().jump(blk, &[]);
            self.enter_late(blk);
            let regs = self.saved[k].clone();
            // Threads that ran apart may disagree on a uniform register: one at a time then.
            // Threads that reached the barrier together in the group code agree.
            let target = self.gblocks[&self.resumes[k]];
            let check = self.vector
                && regs
                    .iter()
                    .any(|&r| self.forms[r as usize] == Form::Uniform);
            if check && together {
                let tg = self.b.use_var(self.together);
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

    /// Defines each lane's thread values for the group of threads from `t` (the group
    /// code's entry, as the dispatch or a chained barrier makes it).
    fn group_lanes(&mut self, t: Value) {
        for k in 0..self.width {
            self.set_lane(k);
            let tk = self.b.ins().iadd_imm_s(t, k as i64);
            self.b.def_var(self.t, tk);
            self.lane_values(tk);
        }
    }

    /// Stores `state` for the `lanes` threads from `t`.
    fn record_states(&mut self, t: Value, lanes: usize, state: u8) {
        let sp = self.b.ins().iadd(self.arr.state, t);
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
            self.b.ins().store(FLAGS, v, sp, 0);
        }
    }

    /// Records the current thread's new state and goes on with the next thread (or, in the
    /// group code, every lane's and the next group).
    pub(super) fn thread_stops(&mut self, state: u8) {
        let t = self.b.use_var(self.t_loop);
        let lanes = if self.group { self.width } else { 1 };
        self.record_states(t, lanes, state);
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

    /// A group's barrier at `pc`: records its threads' state (as [`Self::thread_stops`]),
    /// then, in a round that runs every thread from one resume point (`all_at`) from which
    /// this barrier is reached, starts the next group there with a direct branch (its
    /// reload block) instead of through the dispatch and its jump table. Anything else goes
    /// to the dispatch as before.
    pub(super) fn group_stops(&mut self, pc: usize) {
        let cands = self.chain_from.get(&pc).cloned().unwrap_or_default();
        let arr = self.arr;
        let w = self.width;
        let lane = self.lane;
        let t = self.b.use_var(self.t_loop);
        self.record_states(t, w, rt::WAIT_GROUP);
        let cands: Vec<usize> = cands
            .into_iter()
            .filter(|&k| k + 1 < rt::ARRIVAL_POINTS && k < self.greload.len())
            .collect();
        if cands.is_empty() {
            self.b.ins().jump(self.gnext, &[]);
            return;
        }
        let t2 = self.b.ins().iadd_imm_s(t, w as i64);
        let end = self.b.ins().iadd_imm_s(t2, w as i64);
        let fits = self
            .b
            .ins()
            .icmp(IntCC::UnsignedLessThanOrEqual, end, arr.n);
        let su = self.b.use_var(self.scalar_until);
        let past = self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, t2, su);
        let ok = self.b.ins().band(fits, past);
        let test = self.b.create_block();
        self.b.ins().brif(ok, test, &[], self.gnext, &[]);
        self.enter(test);
        let all_at = self.ld_tc(I32, off::ALL_AT);
        for k in cands {
            let (go, other) = (self.b.create_block(), self.b.create_block());
            // `all_at` is the arrivals slot + 1, the slot the resume index + 1.
            let here = self.b.ins().icmp_imm_u(IntCC::Equal, all_at, k as i64 + 2);
            self.b.ins().brif(here, go, &[], other, &[]);
            self.enter(go);
            self.b.def_var(self.t_loop, t2);
            self.group_lanes(t2);
            let sp2 = self.b.ins().iadd(arr.state, t2);
            let tg = self.states_are(sp2, w, rt::WAIT_GROUP);
            self.b.def_var(self.together, tg);
            self.b.ins().jump(self.greload[k], &[]);
            self.enter(other);
        }
        self.b.ins().jump(self.gnext, &[]);
        self.set_lane(lane);
    }

    /// At the end of a round (the current block): where every live thread waits on barrier
    /// 0 at one counted resume point, releases it and starts the next round at `head` as the
    /// block runner would (`super::run_block`: `released`, `all_at`, the counts reset), with
    /// the round's thread counter back at 0 and `su0` as `scalar_until`; else goes on in the
    /// current block (which returns to the runner). A kernel with other barrier ids always
    /// returns. Saves the runner's round trip (a tenth of a tree reduction's time); the
    /// runner's checks between rounds (cancellation, time and instruction limits) are the
    /// polls at loop back edges, which every unbounded kernel has.
    pub(super) fn next_round(&mut self, head: Block, su0: Value) {
        let only_0 = self.code.iter().all(|i| match &i.op {
            Op::Bar {
                kind, id, count, ..
            } => *kind == BarKind::Sync && *id == Src::Imm(0) && count.is_none(),
            _ => true,
        });
        if !only_0 || self.resumes.is_empty() {
            return;
        }
        let n = self.b.ins().ireduce(I32, self.arr.n);
        let done = self.ld_tc(I32, off::DONE);
        let live = self.b.ins().isub(n, done);
        let waiting = self.ld_tc(I32, off::WAITING);
        let some = self.b.ins().icmp_imm_u(IntCC::NotEqual, live, 0);
        let all_wait = self
            .b
            .ins()
            .icmp(IntCC::UnsignedGreaterThanOrEqual, waiting, live);
        let mut ok = self.b.ins().band(some, all_wait);
        // The resume point every thread reached, as `all_at` (its arrivals slot + 1, as the
        // runner sets it; 0: none).
        let counted = self.resumes.len().min(rt::ARRIVAL_POINTS - 1);
        let mut all_at = self.b.ins().iconst(I32, 0);
        for q in 1..=counted {
            let a = self.ld_tc(I32, off::ARRIVALS + 4 * q as i32);
            let every = self.b.ins().icmp(IntCC::Equal, a, n);
            let v = self.b.ins().iconst(I32, q as i64 + 1);
            all_at = self.b.ins().select(every, v, all_at);
        }
        let one = self.b.ins().icmp_imm_u(IntCC::NotEqual, all_at, 0);
        ok = self.b.ins().band(ok, one);
        let (fuse, back) = (self.b.create_block(), self.b.create_block());
        self.b.ins().brif(ok, fuse, &[], back, &[]);
        self.enter(fuse);
        let zero = self.b.ins().iconst(I32, 0);
        for q in 1..=counted {
            self.b
                .ins()
                .store(FLAGS, zero, self.tc, off::ARRIVALS + 4 * q as i32);
        }
        self.b.ins().store(FLAGS, zero, self.tc, off::WAITING);
        let bit0 = self.b.ins().iconst(I32, 1);
        self.b.ins().store(FLAGS, bit0, self.tc, off::RELEASED);
        self.b.ins().store(FLAGS, all_at, self.tc, off::ALL_AT);
        let t0 = self.b.ins().iconst(I64, 0);
        self.b.def_var(self.t_loop, t0);
        self.b.def_var(self.scalar_until, su0);
        self.b.ins().jump(head, &[]);
        self.enter(back);
    }

    /// Counts a barrier arrival at resume point `point` (index + 1) for the runner's
    /// next-round shortcut (see [`rt::ThreadCtx::all_at`]).
    pub(super) fn group_arrival(&mut self, point: usize) {
        if point < rt::ARRIVAL_POINTS {
            let lanes = if self.group { self.width } else { 1 };
            self.count(off::ARRIVALS + 4 * point as i32, lanes as i64);
        }
    }

    /// Adds `n` to the u32 counter at `offset` in the ThreadCtx.
    pub(super) fn count(&mut self, offset: i32, n: i64) {
        let c = self.ld_tc(I32, offset);
        let c = self.b.ins().iadd_imm_s(c, n);
        self.b.ins().store(FLAGS, c, self.tc, offset);
    }

    /// Instructions from leader `pc` to the next leader.
    pub(super) fn run_len(&self, pc: usize) -> u64 {
        let i = self.leaders.partition_point(|&l| l <= pc);
        let next = self.leaders.get(i).copied().unwrap_or(self.code.len());
        (next - pc) as u64
    }
}
