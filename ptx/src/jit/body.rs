// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Emitting a kernel's instructions in order: the scalar body, the group body (its lanes one
//! after another, or as vectors), and the ways out of the group code: guarded branches,
//! exits and barriers on which its lanes disagree, and the vector accesses that bail out.

use cranelift_codegen::ir::{
    Block, InstBuilder,
    types::{I8, I32},
};

use super::{
    lower::{FLAGS, LANES, Lower, Reject},
    rt::{self, EXITED, off},
};
use crate::ir::{Inst, Op};

impl<'a, 'b> Lower<'a, 'b> {
    pub(super) fn body(&mut self) -> Result<(), Reject> {
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
    pub(super) fn body_group(&mut self) -> Result<(), Reject> {
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
                    match inst.op {
                        Op::Bra { target } if self.maskable(pc, target as usize) => {
                            self.masked_region(pc, g, neg, target as usize)?;
                        }
                        _ => self.diverge(pc),
                    }
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
    pub(super) fn dirty_only(&self, pc: usize, regs: &[u32]) -> Vec<u32> {
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
    pub(super) fn diverge(&mut self, pc: usize) {
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

    pub(super) fn store_ic(&mut self) {
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
}
