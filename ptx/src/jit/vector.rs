// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Vector group code: a group's `LANES` threads executed together, registers held in their
//! [`Form`]s. A uniform register is one value for the group and what only reads uniform
//! values is computed once; a vector register is `HALVES` `I32X4` values (lanes `4h` to
//! `4h + 3` in the `h`-th), and the common 32-bit integer and single-precision operations,
//! comparisons and selects are one SIMD instruction per half. Loads and stores of
//! consecutive 32-bit words (each lane's address 4 bytes after the previous lane's) are
//! 16-byte accesses with one bounds check; other addresses, and instructions without a
//! vector form, run lane by lane on the lanes' unpacked values, exactly as the scalar group
//! code does. The group code's registers are kept in [`super::group`]; which instructions
//! have a vector form is decided in [`super::vector_check`].

use cranelift_codegen::ir::{
    InstBuilder, MemFlagsData, StackSlotData, StackSlotKind, Value,
    condcodes::{FloatCC, IntCC},
    types::{F32X4, I8, I32, I32X4, I64},
};
use cranelift_frontend::Variable;

use super::{
    forms::{self, Form},
    group::little,
    live::uses_defs,
    lower::{FLAGS, LANES, Lower, REGISTER_SLOTS, Reject},
    rt,
    vector_check::{bails, can_vector, vector_fcc},
};
use crate::{
    alu::native::{FOp, IntOp, Native},
    ir::{Inst, Op, SINK, Space, Src, Sreg},
    types::Ty,
};

impl Lower<'_, '_> {
    /// Emits a non-control instruction in the vector group code: once for the group where
    /// it reads only uniform values, as vector operations where it has a vector form, else
    /// lane by lane.
    pub(super) fn group_inst(&mut self, pc: usize, inst: &Inst) -> Result<(), Reject> {
        let guard_uniform = inst
            .guard
            .is_none_or(|(g, _)| self.form(g) == Form::Uniform);
        let (uses, defs) = uses_defs(inst);
        if defs.iter().any(|&d| self.form(d) == Form::Affine) {
            return self.affine_inst(pc, inst, &uses, &defs);
        }
        let bails = bails(&self.forms, &self.strides, inst);
        if guard_uniform && forms::uniform_inst(inst, &self.forms) {
            self.set_lane(0);
            let skip = self.uniform_guard(inst);
            // In a masked region a failed check faults (the group cannot leave there).
            self.bail = (bails && self.mask.is_none()).then_some(pc);
            let falls = self.inst(pc, inst);
            self.bail = None;
            if falls? {
                // Give the other forms of the destinations their value.
                for &d in &defs {
                    if d == SINK || d as usize >= self.forms.len() {
                        continue;
                    }
                    match self.form(d) {
                        // (An affine register's lane-0 variable holds its base.)
                        Form::Uniform | Form::Affine => {}
                        Form::Vector => {
                            let x = self.b.use_var(self.vars[d as usize]);
                            let x = self.b.ins().ireduce(I32, x);
                            let v = self.b.ins().splat(I32X4, x);
                            for var_h in self.vvar(d).expect("vector register") {
                                self.b.def_var(var_h, v);
                            }
                        }
                        Form::Lanes => {
                            let x = self.b.use_var(self.vars[d as usize]);
                            for k in 1..self.width {
                                let var = self.lane_var(k, d);
                                self.b.def_var(var, x);
                            }
                        }
                    }
                }
                if let Some(s) = skip {
                    self.b.ins().jump(s, &[]);
                }
            }
            if let Some(s) = skip {
                self.enter(s);
            }
            self.set_lane(LANES);
            return Ok(());
        }
        if guard_uniform && can_vector(&self.forms, &self.strides, inst) {
            self.set_lane(0);
            let skip = self.uniform_guard(inst);
            self.bail = bails.then_some(pc);
            let r = self.vector_inst(inst);
            self.bail = None;
            r?;
            if let Some(s) = skip {
                self.b.ins().jump(s, &[]);
                self.enter(s);
            }
            self.set_lane(LANES);
            return Ok(());
        }
        // Lane by lane, on the lanes' copies of the vector registers it touches.
        let mut touched: Vec<u32> = uses.iter().chain(defs.iter()).copied().collect();
        if let Some((g, _)) = inst.guard {
            touched.push(g);
        }
        touched.retain(|&r| r != SINK);
        touched.sort_unstable();
        touched.dedup();
        self.set_lane(LANES);
        self.unpack(&touched);
        self.per_lane(pc, inst)?;
        let mut written = defs;
        written.retain(|&r| r != SINK);
        self.pack(&written);
        Ok(())
    }

    /// Emits an instruction writing an affine register: computed once, for lane 0, which
    /// gives the base (the instructions with strides are linear). Where it reads a vector
    /// register (a 32-bit value widened, or used in 64-bit arithmetic) the last lane is
    /// computed too, and a group whose lanes wrap (the last lane not where the stride puts it) leaves for
    /// the scalar code at this instruction.
    pub(super) fn affine_inst(
        &mut self,
        pc: usize,
        inst: &Inst,
        uses: &[u32],
        defs: &[u32],
    ) -> Result<(), Reject> {
        let vectors: Vec<u32> = uses
            .iter()
            .copied()
            .filter(|&u| self.form(u) == Form::Vector)
            .collect();
        let affine: Vec<u32> = uses
            .iter()
            .copied()
            .filter(|&u| self.form(u) == Form::Affine)
            .collect();
        self.set_lane(0);
        let skip = self.uniform_guard(inst);
        let check = !vectors.is_empty();
        if check {
            // The first and last lanes of the vector sources; the last of the affine ones.
            let last = self.width - 1;
            self.set_lane(LANES);
            for &r in &vectors {
                for k in [0, last] {
                    let v = self.vhalf(r, k / 4);
                    let x = self.b.ins().extractlane(v, (k % 4) as u8);
                    let x = self.b.ins().uextend(I64, x);
                    let var = self.lane_var(k, r);
                    self.b.def_var(var, x);
                }
            }
            for &r in &affine {
                let stride = self.stride(r);
                let var0 = self.lane_var(0, r);
                let x0 = self.b.use_var(var0);
                let x = self.b.ins().iadd_imm_s(x0, stride * last as i64);
                let var = self.lane_var(last, r);
                self.b.def_var(var, x);
            }
            self.set_lane(last);
            if !self.inst(pc, inst)? {
                return Err("affine instruction".into());
            }
        }
        // A destination that is also a source: its value before the instruction, for the
        // scalar code should the group leave here.
        let before: Vec<(Variable, Value)> = if check {
            defs.iter()
                .filter(|d| uses.contains(d))
                .map(|&d| {
                    let var = self.lane_var(0, d);
                    (var, self.b.use_var(var))
                })
                .collect()
        } else {
            Vec::new()
        };
        self.set_lane(0);
        if !self.inst(pc, inst)? {
            return Err("affine instruction".into());
        }
        if check {
            self.set_lane(LANES);
            let mut ok: Option<Value> = None;
            for &d in defs {
                if d == SINK || self.form(d) != Form::Affine {
                    continue;
                }
                let stride = self.stride(d);
                let var0 = self.lane_var(0, d);
                let x0 = self.b.use_var(var0);
                let last = self.width - 1;
                let var3 = self.lane_var(last, d);
                let x3 = self.b.use_var(var3);
                let want = self.b.ins().iadd_imm_s(x0, stride * last as i64);
                let same = self.b.ins().icmp(IntCC::Equal, x3, want);
                ok = Some(match ok {
                    None => same,
                    Some(a) => self.b.ins().band(a, same),
                });
            }
            if let Some(ok) = ok {
                let (go, undo) = (self.b.create_block(), self.b.create_block());
                self.b.ins().brif(ok, go, &[], undo, &[]);
                self.enter(undo);
                self.b.set_cold_block(undo);
                for &(var, v) in &before {
                    self.b.def_var(var, v);
                }
                let out = self.bail_block(pc);
                self.b.ins().jump(out, &[]);
                self.enter(go);
            }
        }
        if let Some(s) = skip {
            self.b.ins().jump(s, &[]);
            self.enter(s);
        }
        self.set_lane(LANES);
        Ok(())
    }

    /// Branches around what follows when the instruction's uniform guard fails: the block to
    /// go on at, which the caller enters after the instruction.
    pub(super) fn uniform_guard(&mut self, inst: &Inst) -> Option<cranelift_codegen::ir::Block> {
        let (g, neg) = inst.guard?;
        debug_assert_eq!(self.lane, 0);
        let skip = self.b.create_block();
        self.guard_branch(g, neg, skip);
        Some(skip)
    }

    /// Half `h` of source `s` as a vector (the current lane is lane 0).
    pub(super) fn vsrc(&mut self, s: &Src, h: usize) -> Value {
        match *s {
            Src::Reg(r) if self.form(r) == Form::Vector => self.vhalf(r, h),
            Src::NotReg(r) if self.form(r) == Form::Vector => {
                let v = self.vhalf(r, h);
                let one = self.splat_const(1);
                let v = self.b.ins().band(v, one);
                self.b.ins().bxor(v, one)
            }
            Src::Sreg(Sreg::Tid(0)) => {
                // The group's threads are consecutive: their %tid.x are too in the array.
                let t = self.b.use_var(self.t_loop);
                let t4 = self.b.ins().ishl_imm_u(t, 2);
                let p = self.b.ins().iadd(self.arr.tids[0], t4);
                // The array is 4-byte aligned only, and read-only during the call.
                let f = MemFlagsData::new()
                    .with_notrap()
                    .with_readonly()
                    .with_can_move();
                self.b.ins().load(I32X4, f, p, 16 * h as i32)
            }
            _ => {
                let x = self.src(s);
                let x = self.b.ins().ireduce(I32, x);
                self.b.ins().splat(I32X4, x)
            }
        }
    }

    pub(super) fn fvec(&mut self, v: Value) -> Value {
        self.b.ins().bitcast(F32X4, little(), v)
    }

    pub(super) fn ivec(&mut self, v: Value) -> Value {
        self.b.ins().bitcast(I32X4, little(), v)
    }

    /// `r` (F32X4) as bits, NaN lanes replaced by the canonical NaN.
    pub(super) fn vcanon(&mut self, r: Value) -> Value {
        let nan = self.b.ins().fcmp(FloatCC::Unordered, r, r);
        let bits = self.ivec(r);
        let canon = self.splat_const(0x7fff_ffff);
        self.b.ins().bitselect(nan, canon, bits)
    }

    pub(super) fn vdef(&mut self, d: u32, v: &[Value]) {
        if let Some(vv) = self.vvar(d) {
            for (h, (var_h, &x)) in vv.into_iter().zip(v).enumerate() {
                let x = self.masked_value(d, h, x);
                self.b.def_var(var_h, x);
            }
        }
    }

    /// Emits `inst`'s vector form (see [`Self::can_vector`]).
    pub(super) fn vector_inst(&mut self, inst: &Inst) -> Result<(), Reject> {
        // Every half's sources are read before any destination is written.
        match &inst.op {
            Op::Mov { d, a, .. } => {
                let v: Vec<Value> = (0..self.halves()).map(|h| self.vsrc(a, h)).collect();
                self.vdef(*d, &v);
            }
            Op::Alu {
                native: Some(nat),
                ctx,
                src,
                nsrc,
                dst,
                ndst,
                ..
            } => {
                let n = (*nsrc as usize).min(4);
                let halves = self.halves();
                let mut r0 = Vec::with_capacity(halves);
                let mut r1 = Vec::with_capacity(halves);
                for h in 0..halves {
                    let (a, b) = self.vector_alu(*nat, ctx.imm, &src[..n], h)?;
                    r0.push(a);
                    r1.extend(b);
                }
                self.vdef(dst[0], &r0);
                if *ndst >= 2 && r1.len() == halves {
                    self.vdef(dst[1], &r1);
                }
            }
            Op::Ld { space, d, addr, .. } => {
                let v = self.span_access(*space, addr.base, addr.off, None, inst.line)?;
                if let Some(v) = v {
                    self.vdef(d[0], &v);
                }
            }
            Op::St { space, v, addr, .. } => {
                let x: Vec<Value> = (0..self.halves()).map(|h| self.vsrc(&v[0], h)).collect();
                self.span_access(*space, addr.base, addr.off, Some(x), inst.line)?;
            }
            _ => return Err("vector form".into()),
        }
        Ok(())
    }

    /// Half `h` of a vector ALU instruction's results.
    pub(super) fn vector_alu(
        &mut self,
        nat: Native,
        imm: u32,
        src: &[Src],
        h: usize,
    ) -> Result<(Value, Option<Value>), Reject> {
        let arg = |k: usize| src.get(k).copied().ok_or_else(|| Reject::from("operands"));
        Ok(match nat {
            Native::Int { op, bits: 1, .. } => {
                let one = self.splat_const(1);
                let a = self.vsrc(&arg(0)?, h);
                let a = self.b.ins().band(a, one);
                let r = if op == IntOp::Not {
                    self.b.ins().bxor(a, one)
                } else {
                    let b = self.vsrc(&arg(1)?, h);
                    let b = self.b.ins().band(b, one);
                    match op {
                        IntOp::And => self.b.ins().band(a, b),
                        IntOp::Or => self.b.ins().bor(a, b),
                        _ => self.b.ins().bxor(a, b),
                    }
                };
                (r, None)
            }
            Native::Int { op, signed, .. } => {
                let a = self.vsrc(&arg(0)?, h);
                let r = match op {
                    IntOp::Not => self.b.ins().bnot(a),
                    IntOp::Neg => self.b.ins().ineg(a),
                    IntOp::Shl | IntOp::Shr => {
                        let Src::Imm(s) = arg(1)? else {
                            return Err("shift amount".into());
                        };
                        let s = self.b.ins().iconst(I32, s as i64);
                        match (op, signed) {
                            (IntOp::Shl, _) => self.b.ins().ishl(a, s),
                            (_, true) => self.b.ins().sshr(a, s),
                            _ => self.b.ins().ushr(a, s),
                        }
                    }
                    _ => {
                        let b = self.vsrc(&arg(1)?, h);
                        match op {
                            IntOp::Add => self.b.ins().iadd(a, b),
                            IntOp::Sub => self.b.ins().isub(a, b),
                            IntOp::MulLo => self.b.ins().imul(a, b),
                            IntOp::MadLo => {
                                let c = self.vsrc(&arg(2)?, h);
                                let m = self.b.ins().imul(a, b);
                                self.b.ins().iadd(m, c)
                            }
                            IntOp::And => self.b.ins().band(a, b),
                            IntOp::Or => self.b.ins().bor(a, b),
                            IntOp::Xor => self.b.ins().bxor(a, b),
                            IntOp::Min if signed => self.b.ins().smin(a, b),
                            IntOp::Min => self.b.ins().umin(a, b),
                            IntOp::Max if signed => self.b.ins().smax(a, b),
                            IntOp::Max => self.b.ins().umax(a, b),
                            _ => return Err("vector integer operation".into()),
                        }
                    }
                };
                (r, None)
            }
            Native::Float { op, .. } => {
                let a = self.vsrc(&arg(0)?, h);
                let a = self.fvec(a);
                let r = match op {
                    FOp::Neg => {
                        let r = self.b.ins().fneg(a);
                        self.ivec(r)
                    }
                    FOp::Abs => {
                        let r = self.b.ins().fabs(a);
                        self.ivec(r)
                    }
                    FOp::Sqrt => {
                        let r = self.b.ins().sqrt(a);
                        self.vcanon(r)
                    }
                    _ => {
                        let b = self.vsrc(&arg(1)?, h);
                        let b = self.fvec(b);
                        let r = match op {
                            FOp::Add => self.b.ins().fadd(a, b),
                            FOp::Sub => self.b.ins().fsub(a, b),
                            FOp::Mul => self.b.ins().fmul(a, b),
                            FOp::Div => self.b.ins().fdiv(a, b),
                            FOp::Fma | FOp::Fms | FOp::Fnma => {
                                let c = self.vsrc(&arg(2)?, h);
                                let c = self.fvec(c);
                                match op {
                                    FOp::Fms => {
                                        let c = self.b.ins().fneg(c);
                                        self.b.ins().fma(a, b, c)
                                    }
                                    FOp::Fnma => {
                                        let a = self.b.ins().fneg(a);
                                        self.b.ins().fma(a, b, c)
                                    }
                                    _ => self.b.ins().fma(a, b, c),
                                }
                            }
                            _ => return Err("vector float operation".into()),
                        };
                        self.vcanon(r)
                    }
                };
                (r, None)
            }
            Native::Setp { cmp, ty } => {
                let a = self.vsrc(&arg(0)?, h);
                let b = self.vsrc(&arg(1)?, h);
                let m = if ty == Ty::F32 {
                    let cc = vector_fcc(cmp).ok_or_else(|| Reject::from("comparison"))?;
                    let (a, b) = (self.fvec(a), self.fvec(b));
                    self.b.ins().fcmp(cc, a, b)
                } else {
                    let cc = super::alu::int_cc(cmp, ty.is_signed())
                        .ok_or_else(|| Reject::from("comparison"))?;
                    self.b.ins().icmp(cc, a, b)
                };
                let one = self.splat_const(1);
                let r = self.b.ins().band(m, one);
                let nr = self.b.ins().bxor(r, one);
                if imm == 0 {
                    (r, Some(nr))
                } else {
                    let c = self.vsrc(&arg(2)?, h);
                    let c = self.b.ins().band(c, one);
                    match imm {
                        1 => (self.b.ins().band(r, c), Some(self.b.ins().band(nr, c))),
                        2 => (self.b.ins().bor(r, c), Some(self.b.ins().bor(nr, c))),
                        _ => (self.b.ins().bxor(r, c), Some(self.b.ins().bxor(nr, c))),
                    }
                }
            }
            Native::Selp { .. } => {
                let a = self.vsrc(&arg(0)?, h);
                let b = self.vsrc(&arg(1)?, h);
                let p = self.vsrc(&arg(2)?, h);
                let one = self.splat_const(1);
                let p = self.b.ins().band(p, one);
                let zero = self.splat_const(0);
                let m = self.b.ins().icmp(IntCC::NotEqual, p, zero);
                (self.b.ins().bitselect(m, a, b), None)
            }
            Native::CvtIF { .. } => {
                let a = self.vsrc(&arg(0)?, h);
                let r = self.b.ins().fcvt_from_sint(F32X4, a);
                (self.ivec(r), None)
            }
            _ => return Err("vector form".into()),
        })
    }

    /// A 32-bit load (`store` is `None`; returns the vector loaded) or store of the group's
    /// lanes at `base + off`: 16-byte accesses where the lanes' addresses are consecutive
    /// words inside the space's fast-path buffer, else lane by lane (global memory: see
    /// [`Self::lane_ptrs`]; shared memory: the scalar checks).
    pub(super) fn span_access(
        &mut self,
        space: Space,
        base: Src,
        off: i64,
        store: Option<Vec<Value>>,
        line: u32,
    ) -> Result<Option<Vec<Value>>, Reject> {
        let Src::Reg(r) = base else {
            return Err("address".into());
        };
        let w = self.width;
        // Each lane's address, and whether they are consecutive words.
        let (addrs, contig) = match self.form(r) {
            Form::Vector => {
                let (contig, x0) = self.vsteps(r, 4);
                let addrs: Vec<Value> = (0..w)
                    .map(|k| {
                        let x = if k == 0 {
                            x0
                        } else {
                            let v = self.vhalf(r, k / 4);
                            self.b.ins().extractlane(v, (k % 4) as u8)
                        };
                        let x = self.b.ins().uextend(I64, x);
                        self.b.ins().iadd_imm_s(x, off)
                    })
                    .collect();
                (addrs, contig)
            }
            Form::Affine => {
                // Consecutive words (see `span_ok`).
                let stride = self.stride(r);
                let var0 = self.lane_var(0, r);
                let x0 = self.b.use_var(var0);
                let addrs: Vec<Value> = (0..w)
                    .map(|k| self.b.ins().iadd_imm_s(x0, off + stride * k as i64))
                    .collect();
                (addrs, self.b.ins().iconst(I8, 1))
            }
            _ => {
                let addrs: Vec<Value> = (0..w)
                    .map(|k| {
                        let var = self.lane_var(k, r);
                        let x = self.b.use_var(var);
                        self.b.ins().iadd_imm_s(x, off)
                    })
                    .collect();
                let mut contig = None;
                for k in 1..w {
                    let d = self.b.ins().isub(addrs[k], addrs[0]);
                    let c = self.b.ins().icmp_imm_u(IntCC::Equal, d, 4 * k as i64);
                    contig = Some(contig.map_or(c, |a| self.b.ins().band(a, c)));
                }
                (addrs, contig.expect("lanes"))
            }
        };
        let (inside, p) = self.span(space, addrs[0]);
        let go = self.b.ins().band(contig, inside);
        // A masked region writes global memory only in its lanes: other blocks may write the
        // words of the lanes it leaves out.
        let masked_global_store = self.mask.is_some() && store.is_some() && space != Space::Shared;
        let go = if masked_global_store {
            self.b.ins().iconst(I8, 0)
        } else {
            go
        };
        let (fast, slow, join) = (
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
        );
        self.b.ins().brif(go, fast, &[], slow, &[]);
        self.enter(fast);
        self.span_move(p, store.as_deref());
        self.b.ins().jump(join, &[]);
        self.enter(slow);
        self.b.set_cold_block(slow);
        let global = space != Space::Shared;
        if self.mask.is_some() {
            let v = self.masked_lanes(space, &addrs, store.as_deref(), line);
            if let Some(v) = v {
                for (h, x) in v.into_iter().enumerate() {
                    self.b.def_var(self.vtmp[h], x);
                }
            }
            self.b.ins().jump(join, &[]);
            self.enter(join);
            let halves = self.halves();
            return Ok(store.is_none().then(|| {
                self.vtmp[..halves]
                    .iter()
                    .map(|&var_h| self.b.use_var(var_h))
                    .collect()
            }));
        }
        if global {
            // Consecutive words in a cached region not held in registers (a kernel reaching
            // more buffers than there are register slots, SRAD's six) are one access too.
            // A gather (lanes not consecutive) goes straight to the lanes.
            let (look, cached, lanes) = (
                self.b.create_block(),
                self.b.create_block(),
                self.b.create_block(),
            );
            self.b.ins().brif(contig, look, &[], lanes, &[]);
            self.enter(look);
            self.b.set_cold_block(look);
            // A call, not the slots' checks inline: emitted for every access, those made the
            // fast path of a kernel of many loads slower (streamcluster's, by a fifth).
            let p = self.call_ptr(rt::h_span, space, addrs[0], 4 * w as u32, store.is_some());
            self.b.ins().brif(p, cached, &[], lanes, &[]);
            self.enter(cached);
            self.b.set_cold_block(cached);
            self.span_move(p, store.as_deref());
            self.b.ins().jump(join, &[]);
            self.enter(lanes);
            self.b.set_cold_block(lanes);
        }
        let tmpv = self.vtmp;
        // Every lane's check before any lane's access: a failed check leaves the group
        // with nothing done (see `Lower::bail`).
        let ps = match self.bail {
            Some(pc) if global => self.lane_ptrs(space, &addrs, store.is_some(), pc),
            _ => {
                let mut ps = Vec::with_capacity(w);
                for (k, &a) in addrs.iter().enumerate() {
                    self.set_lane(k);
                    ps.push(self.ptr(space, a, 4, store.is_some(), line));
                }
                ps
            }
        };
        let mut v = None;
        for (k, &pk) in ps.iter().enumerate() {
            let lane = (k % 4) as u8;
            match &store {
                None => {
                    let x = self.b.ins().load(I32, MemFlagsData::new(), pk, 0);
                    v = Some(match v {
                        Some(v) if lane != 0 => self.b.ins().insertlane(v, x, lane),
                        _ => self.b.ins().scalar_to_vector(I32X4, x),
                    });
                    if lane == 3
                        && let Some(v) = v
                    {
                        self.b.def_var(tmpv[k / 4], v);
                    }
                }
                Some(vals) => {
                    let x = self.b.ins().extractlane(vals[k / 4], lane);
                    self.b.ins().store(MemFlagsData::new(), x, pk, 0);
                }
            }
        }
        self.set_lane(0);
        self.b.ins().jump(join, &[]);
        self.enter(join);
        let halves = self.halves();
        Ok(store.is_none().then(|| {
            tmpv[..halves]
                .iter()
                .map(|&var_h| self.b.use_var(var_h))
                .collect()
        }))
    }

    /// The limit for the group's 16-byte accesses (aligned to 4) into a buffer of `len`
    /// bytes: offsets below it, rotated right by 2, start such accesses inside the buffer.
    pub(super) fn span_limit(&mut self, len: Value) -> Value {
        self.limit_aligned(len, 4 * self.width as u32, 2)
    }

    /// Whether vector register `r`'s lanes step by `s` from lane 0's value, wrapping as
    /// 32-bit values do (an `i8`), and lane 0's value.
    pub(super) fn vsteps(&mut self, r: u32, s: i64) -> (Value, Value) {
        let v0 = self.vhalf(r, 0);
        let x0 = self.b.ins().extractlane(v0, 0);
        let x = self.b.ins().splat(I32X4, x0);
        let mut all = None;
        for h in 0..self.halves() {
            let v = self.vhalf(r, h);
            let steps = self.iota_of(s, h);
            let want = self.b.ins().iadd(x, steps);
            let eq = self.b.ins().icmp(IntCC::Equal, v, want);
            all = Some(match all {
                None => eq,
                Some(a) => self.b.ins().band(a, eq),
            });
        }
        (self.b.ins().vall_true(all.expect("halves")), x0)
    }

    /// The vector `[4h, 4h + 1, 4h + 2, 4h + 3]` times `s` (32-bit lanes, wrapping): half `h`
    /// of the lanes' steps.
    pub(super) fn iota_of(&mut self, s: i64, h: usize) -> Value {
        let bytes: Vec<u8> = (0..4u32)
            .map(|k| (s as u32).wrapping_mul(4 * h as u32 + k))
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let c = self.b.func.dfg.constants.insert(bytes.into());
        self.b.ins().vconst(I32X4, c)
    }

    /// Whether the group's `4 * LANES` bytes at `a` (4-byte aligned) lie in the buffer `space`'s fast path knows
    /// (an `i8`), and their host address there.
    pub(super) fn span(&mut self, space: Space, a: Value) -> (Value, Value) {
        let (o, len, host) = match space {
            Space::Shared => {
                // Shared addresses are 32 bits wide.
                let a = self.b.ins().ireduce(I32, a);
                let o = self.b.ins().uextend(I64, a);
                (o, self.inv.shared_len, self.inv.shared)
            }
            _ => return self.global_span(a),
        };
        // One comparison, as in `ptr`: a misaligned offset rotates its low bits to the top.
        let lim = match space {
            Space::Shared => self.span_lim,
            _ => self.span_limit(len),
        };
        let r = self.b.ins().rotr_imm_u(o, 2);
        let ok = self.b.ins().icmp(IntCC::UnsignedLessThan, r, lim);
        let p = self.b.ins().iadd(host, o);
        (ok, p)
    }
}

impl Lower<'_, '_> {
    /// The host addresses of the group's 4-byte accesses at `addrs` (global, generic or
    /// constant memory) for the group code of instruction `pc`: inline where every lane
    /// lies in the register-cached region that holds lane 0's (a gather inside one buffer),
    /// else from [`rt::h_lanes`], which looks at every cached region and the session's
    /// memory; where a lane's access is misaligned or outside it the group leaves for the
    /// scalar code, which reports the fault. Emitted once per access, the code stays small
    /// (lane by lane checks of every region took most of the compile of a kernel of loads).
    fn lane_ptrs(&mut self, space: Space, addrs: &[Value], write: bool, pc: usize) -> Vec<Value> {
        // Lane 0's region among the register slots, chosen without branches.
        let mut found: Option<(Value, Value, Value, Value)> = None;
        for k in (0..REGISTER_SLOTS).rev() {
            let (gb, gl, gh) = self.region_slot(k);
            let lim = self.limit(gl, 4);
            let o = self.b.ins().isub(addrs[0], gb);
            let r = self.b.ins().rotr_imm_u(o, 2);
            let ok = self.b.ins().icmp(IntCC::UnsignedLessThan, r, lim);
            found = Some(match found {
                None => (ok, gb, lim, gh),
                Some((ok_o, gb_o, lim_o, gh_o)) => (
                    self.b.ins().bor(ok, ok_o),
                    self.b.ins().select(ok, gb, gb_o),
                    self.b.ins().select(ok, lim, lim_o),
                    self.b.ins().select(ok, gh, gh_o),
                ),
            });
        }
        let (mut all, gb, lim, gh) = found.expect("register slots");
        let mut inline = Vec::with_capacity(addrs.len());
        for (k, &a) in addrs.iter().enumerate() {
            let o = self.b.ins().isub(a, gb);
            if k > 0 {
                let r = self.b.ins().rotr_imm_u(o, 2);
                let ok = self.b.ins().icmp(IntCC::UnsignedLessThan, r, lim);
                all = self.b.ins().band(all, ok);
            }
            let p = self.b.ins().iadd(gh, o);
            inline.push(p.into());
        }
        let (join, call) = (self.b.create_block(), self.b.create_block());
        let ps: Vec<Value> = addrs
            .iter()
            .map(|_| self.b.append_block_param(join, I64))
            .collect();
        self.b.ins().brif(all, join, &inline, call, &[]);
        self.enter(call);
        self.b.set_cold_block(call);
        let bytes = 8 * addrs.len() as u32;
        let slot = self.b.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            2 * bytes,
            3,
        ));
        let at = self.b.ins().stack_addr(I64, slot, 0);
        let out = self.b.ins().stack_addr(I64, slot, bytes as i32);
        for (k, &a) in addrs.iter().enumerate() {
            self.b.ins().store(FLAGS, a, at, 8 * k as i32);
        }
        let sc = self.b.ins().iconst(I32, rt::space_code(space) as i64);
        // The lanes' count above the write flag.
        let wr = (addrs.len() << 8) as i64 | write as i64;
        let wr = self.b.ins().iconst(I32, wr);
        let f = self
            .b
            .ins()
            .iconst(I64, rt::h_lanes as *const () as usize as i64);
        let c = self
            .b
            .ins()
            .call_indirect(self.helpers.lanes, f, &[self.tc, sc, at, wr, out]);
        let ok = self.b.inst_results(c)[0];
        let found = self.b.create_block();
        let out_blk = self.bail_block(pc);
        self.b.ins().brif(ok, found, &[], out_blk, &[]);
        self.enter(found);
        let loaded: Vec<_> = (0..addrs.len())
            .map(|k| self.b.ins().load(I64, FLAGS, out, 8 * k as i32).into())
            .collect();
        self.b.ins().jump(join, &loaded);
        self.enter(join);
        ps
    }

    /// [`Self::span`] in global memory: the first of the cached regions held in registers
    /// (newest first) that holds the group's bytes, chosen without branches. (Looking further,
    /// into the slots read from the `ThreadCtx`, cost a kernel reaching three buffers 15%:
    /// where none of these holds them, the group goes on in the scalar code, whose check
    /// looks at every slot.)
    fn global_span(&mut self, a: Value) -> (Value, Value) {
        self.span_in_slots(a, 0..REGISTER_SLOTS)
    }

    /// [`Self::span`] in the cached global regions `slots` (newest first wins), without
    /// branches: whether one holds the group's bytes, and their host address there. The
    /// cold path looks at the slots past the registers (read from the `ThreadCtx`).
    fn span_in_slots(&mut self, a: Value, slots: std::ops::Range<usize>) -> (Value, Value) {
        let mut found: Option<(Value, Value)> = None;
        for k in slots.rev() {
            let (gb, gl, gh) = self.region_slot(k);
            let o = self.b.ins().isub(a, gb);
            let lim = self.span_limit(gl);
            let r = self.b.ins().rotr_imm_u(o, 2);
            let ok = self.b.ins().icmp(IntCC::UnsignedLessThan, r, lim);
            let p = self.b.ins().iadd(gh, o);
            found = Some(match found {
                None => (ok, p),
                Some((ok_older, p_older)) => {
                    let p = self.b.ins().select(ok, p, p_older);
                    (self.b.ins().bor(ok, ok_older), p)
                }
            });
        }
        found.unwrap_or_else(|| {
            let zero = self.b.ins().iconst(I64, 0);
            (self.b.ins().icmp_imm_u(IntCC::NotEqual, zero, 0), zero)
        })
    }
}

impl Lower<'_, '_> {
    /// The group's 16-byte accesses at host address `p`: loads into the scratch vector
    /// variables (`store` is `None`), or stores of `store`.
    fn span_move(&mut self, p: Value, store: Option<&[Value]>) {
        for h in 0..self.halves() {
            let o = 16 * h as i32;
            match store {
                None => {
                    let v = self.b.ins().load(I32X4, MemFlagsData::new(), p, o);
                    self.b.def_var(self.vtmp[h], v);
                }
                Some(x) => {
                    // In a masked region (shared memory only), the lanes left out keep
                    // their words.
                    let x = match self.mask.as_ref().map(|m| m[h]) {
                        Some(m) => {
                            let old = self.b.ins().load(I32X4, MemFlagsData::new(), p, o);
                            self.b.ins().bitselect(m, x[h], old)
                        }
                        None => x[h],
                    };
                    self.b.ins().store(MemFlagsData::new(), x, p, o);
                }
            }
        }
    }
}
