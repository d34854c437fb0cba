// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Masked regions of the vector group code: where a guarded forward branch finds its group's
//! lanes disagreeing and the instructions it skips are few and simple (`if (t < w) s[t] +=
//! s[t + w];` in a tree reduction), the group runs them for all its lanes under a mask
//! instead of handing its threads to the scalar code one at a time. A vector destination
//! keeps its old value in the lanes the mask leaves out (a select per half); a load reads
//! every lane where the group's span lies inside a buffer (what the left-out lanes read is
//! dropped) and only the lanes in the mask otherwise; a store writes only the lanes in the
//! mask (shared memory, the block's own, as a read, select and write of the span; global
//! memory lane by lane). Instructions computed once for the group run once: at least one
//! lane is in the mask, and what they define is dead where the branch goes.

use cranelift_codegen::ir::{
    InstBuilder, MemFlagsData, StackSlotData, StackSlotKind, Value,
    condcodes::IntCC,
    types::{I32, I32X4, I64},
};

use super::{
    forms::{self, Form},
    live::uses_defs,
    lower::{LANES, Lower, Reject},
    vector_check::can_vector,
};
use crate::ir::{Inst, Op, SINK, Space};

/// The most instructions a masked region has (each runs for every lane of the group).
const MASKED_MAX_INSTS: usize = 32;

impl Lower<'_, '_> {
    /// Whether the instructions the guarded branch at `pc` skips when taken (up to its
    /// `target`) can run as a masked region of the vector group code: a forward branch over
    /// straight-line code with no guards of its own, each instruction computed once for the
    /// group (defining only uniform registers dead at `target`, checking nothing a failure
    /// would leave the group over) or with a vector form defining only vector registers.
    pub(super) fn maskable(&self, pc: usize, target: usize) -> bool {
        if !self.vector || target <= pc + 1 || target - pc - 1 > MASKED_MAX_INSTS {
            return false;
        }
        let Some((g, _)) = self.code[pc].guard else {
            return false;
        };
        // (While the group code is emitted, `blocks` holds its blocks.)
        if self.form(g) != Form::Vector || !self.blocks.contains_key(&target) {
            return false;
        }
        // Straight-line code that nothing branches into (the vector accesses inside may be
        // leaders of the group code, where a group leaves for the scalar code: a masked
        // region does not leave).
        let inside = |t: u32| (t as usize) > pc + 1 && (t as usize) < target;
        let entered = self.code.iter().any(|i| match i.op {
            Op::Bra { target: t } => inside(t),
            Op::Brx { .. } => true,
            _ => false,
        });
        !entered
            && self.code[pc + 1..target]
                .iter()
                .all(|i| self.maskable_inst(i, target))
    }

    fn maskable_inst(&self, i: &Inst, target: usize) -> bool {
        let simple = matches!(
            i.op,
            Op::Mov { .. }
                | Op::Alu { .. }
                | Op::Pack { .. }
                | Op::Unpack { .. }
                | Op::Cvta { .. }
                | Op::Ld { .. }
                | Op::St { .. }
        );
        // Memory every lane reaches the same way: local memory is each thread's own (and a
        // generic address may lie in it), which one lane's variables do not reach.
        let space_ok = match i.op {
            Op::Ld { space, .. } => {
                matches!(
                    space,
                    Space::Global | Space::Shared | Space::Param | Space::Const
                )
            }
            Op::St { space, .. } => matches!(space, Space::Global | Space::Shared),
            _ => true,
        };
        if i.guard.is_some() || !simple || !space_ok {
            return false;
        }
        if self.uniform_store(i) {
            return true;
        }
        let (_, defs) = uses_defs(i);
        let mut defs = defs.into_iter().filter(|&d| d != SINK);
        if forms::uniform_inst(i, &self.forms) {
            // Once for the group; where the branch goes the other lanes never read it.
            let live = self.live.get(target);
            return defs.all(|d| {
                self.form(d) == Form::Uniform
                    && live
                        .and_then(|l| l.get(d as usize / 64))
                        .is_none_or(|w| w >> (d % 64) & 1 == 0)
            });
        }
        can_vector(&self.forms, &self.strides, i) && defs.all(|d| self.form(d) == Form::Vector)
    }

    /// Whether `i` stores the same word to the same address from every lane (run once).
    fn uniform_store(&self, i: &Inst) -> bool {
        matches!(i.op, Op::St { .. })
            && uses_defs(i)
                .0
                .iter()
                .all(|&u| self.form(u) == Form::Uniform)
    }

    /// Runs the region after the guarded branch at `pc` (guard `g`, negated with `neg`) up to
    /// `target` for the group's lanes that do not branch, then goes on at `target`: the
    /// group's lanes are together again there. [`Self::maskable`] said it can.
    pub(super) fn masked_region(
        &mut self,
        pc: usize,
        g: u32,
        neg: bool,
        target: usize,
    ) -> Result<(), Reject> {
        // The lanes that fall through: the guard fails in them.
        let zero = self.splat_const(0);
        let one = self.splat_const(1);
        let cc = if neg { IntCC::NotEqual } else { IntCC::Equal };
        let mut mask = Vec::with_capacity(self.halves());
        let mut active: Option<Value> = None;
        for h in 0..self.halves() {
            let v = self.vhalf(g, h);
            let v = self.b.ins().band(v, one);
            let m = self.b.ins().icmp(cc, v, zero);
            // Lanes in the mask, for the instruction count.
            let bits = self.b.ins().vhigh_bits(I32, m);
            let n = self.b.ins().popcnt(bits);
            active = Some(match active {
                None => n,
                Some(a) => self.b.ins().iadd(a, n),
            });
            mask.push(m);
        }
        let active = active.expect("halves");
        let active = self.b.ins().uextend(I64, active);
        let n = self.b.ins().imul_imm_s(active, (target - pc - 1) as i64);
        let ic = self.b.use_var(self.ic);
        let ic = self.b.ins().iadd(ic, n);
        self.b.def_var(self.ic, ic);
        self.mask = Some(mask);
        for p in pc + 1..target {
            let inst = &self.code[p];
            let r = if forms::uniform_inst(inst, &self.forms) {
                self.group_inst(p, inst)
            } else if self.uniform_store(inst) {
                self.set_lane(0);
                let r = self.inst(p, inst).map(|_| ());
                self.set_lane(LANES);
                r
            } else {
                self.set_lane(0);
                let r = self.vector_inst(inst);
                self.set_lane(LANES);
                r
            };
            if let Err(e) = r {
                self.mask = None;
                return Err(e);
            }
        }
        self.mask = None;
        let to = self.block_at(target);
        self.b.ins().jump(to, &[]);
        Ok(())
    }

    /// Half `h` of a vector destination's new value `x`: the old value where the mask of a
    /// masked region leaves the lane out.
    pub(super) fn masked_value(&mut self, d: u32, h: usize, x: Value) -> Value {
        match self.mask.as_ref().map(|m| m[h]) {
            Some(m) => {
                let old = self.vhalf(d, h);
                self.b.ins().bitselect(m, x, old)
            }
            None => x,
        }
    }

    /// A masked region's access of the group's 4-byte words at `addrs` in `space` where
    /// they are not one span inside a buffer: a loop over the lanes (one copy of the check,
    /// the code stays small) that checks and reaches only the lanes in the mask, a failed
    /// check faulting as in the scalar code. Returns what a load read (zero in the lanes
    /// left out).
    pub(super) fn masked_lanes(
        &mut self,
        space: Space,
        addrs: &[Value],
        store: Option<&[Value]>,
        line: u32,
    ) -> Option<Vec<Value>> {
        let mask = self.mask.clone().expect("a masked region");
        let w = addrs.len();
        // The lanes' addresses, then their mask words, then the values stored or loaded.
        let slot = self.b.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            16 * w as u32,
            4,
        ));
        let (addr_at, mask_at, val_at) = (0, 8 * w as i32, 12 * w as i32);
        let any = MemFlagsData::new().with_notrap();
        for (k, &a) in addrs.iter().enumerate() {
            self.b
                .ins()
                .stack_store(I64, a, slot, addr_at + 8 * k as i32);
        }
        for (h, &m) in mask.iter().enumerate() {
            self.b
                .ins()
                .stack_store(I64, m, slot, mask_at + 16 * h as i32);
            let x = match store {
                Some(vals) => vals[h],
                None => self.splat_const(0),
            };
            self.b
                .ins()
                .stack_store(I64, x, slot, val_at + 16 * h as i32);
        }
        let base = self.b.ins().stack_addr(I64, slot, 0);
        let k = self.b.declare_var(I64);
        let zero = self.b.ins().iconst(I64, 0);
        self.b.def_var(k, zero);
        let (head, body, on, next, done) = (
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
        );
        self.b.ins().jump(head, &[]);
        self.enter_late(head);
        let kv = self.b.use_var(k);
        let more = self
            .b
            .ins()
            .icmp_imm_u(IntCC::UnsignedLessThan, kv, w as i64);
        self.b.ins().brif(more, body, &[], done, &[]);
        self.enter(body);
        let k4 = self.b.ins().ishl_imm_u(kv, 2);
        let mp = self.b.ins().iadd(base, k4);
        let m = self.b.ins().load(I32, any, mp, mask_at);
        self.b.ins().brif(m, on, &[], next, &[]);
        self.enter(on);
        // Lane k's thread, for a fault's report.
        self.set_lane(0);
        let t0 = self.b.use_var(self.t);
        let tk = self.b.ins().iadd(t0, kv);
        self.b.def_var(self.t, tk);
        let k8 = self.b.ins().ishl_imm_u(kv, 3);
        let ap = self.b.ins().iadd(base, k8);
        let a = self.b.ins().load(I64, any, ap, addr_at);
        let p = self.ptr(space, a, 4, store.is_some(), line);
        let vp = self.b.ins().iadd(base, k4);
        if store.is_some() {
            let x = self.b.ins().load(I32, any, vp, val_at);
            self.b.ins().store(MemFlagsData::new(), x, p, 0);
        } else {
            let x = self.b.ins().load(I32, MemFlagsData::new(), p, 0);
            self.b.ins().store(any, x, vp, val_at);
        }
        let t0 = self.b.ins().isub(tk, kv);
        self.b.def_var(self.t, t0);
        self.b.ins().jump(next, &[]);
        self.enter(next);
        let k1 = self.b.ins().iadd_imm_s(kv, 1);
        self.b.def_var(k, k1);
        self.b.ins().jump(head, &[]);
        self.b.seal_block(head);
        self.enter(done);
        store.is_none().then(|| {
            (0..self.halves())
                .map(|h| {
                    self.b
                        .ins()
                        .stack_load(I64, I32X4, slot, val_at + 16 * h as i32)
                })
                .collect()
        })
    }
}
