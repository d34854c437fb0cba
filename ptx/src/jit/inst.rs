// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Lowering one instruction for the current lane ([`Lower::inst`]): moves, conversions,
//! ALU forms (inline or through their interpreter function), loads and stores, atomics
//! (shared memory inline, the rest through a helper), branches, barriers, exits, and the
//! intrinsics and texture instructions that call into the runtime.

#![allow(clippy::needless_range_loop)] // operand arrays indexed by position, as in the IR

use cranelift_codegen::ir::{
    InstBuilder, MemFlagsData, StackSlotData, StackSlotKind, Value,
    condcodes::IntCC,
    types::{I32, I32X4, I64},
};

use super::{
    forms::frame_space,
    lower::{FLAGS, Lower, Reject, int_type},
    rt::{self, EXITED, FAULTED, STOPPED, off},
};
use crate::{
    alu::native::Native,
    ir::{ArgCopy, Inst, Op, Space, Src},
    module::{LOCAL_WINDOW, SHARED_WINDOW},
};

impl<'a, 'b> Lower<'a, 'b> {
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
                if self.group {
                    self.group_stops(pc);
                } else {
                    self.thread_stops(rt::WAIT);
                }
                return Ok(false);
            }
            Op::Fence | Op::Nop => {}
            Op::Yield => {
                let f = self
                    .b
                    .ins()
                    .iconst(I64, rt::h_yield as *const () as usize as i64);
                self.b.ins().call_indirect(self.helpers.poll, f, &[self.tc]);
            }
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
            Op::TexQuery { d, handle, .. } => {
                let f = rt::h_txq as *const () as usize as i64;
                let r = self.helper_call(inst, &[*handle], f)?;
                self.def(*d, r[0]);
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
    pub(super) fn shared_atomic(
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
    pub(super) fn helper_call(
        &mut self,
        inst: &Inst,
        srcs: &[Src],
        f: i64,
    ) -> Result<[Value; 4], Reject> {
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
}
