// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The group code's registers: each lane's variables, a register's [`Form`] and stride,
//! vector registers packed from and unpacked to the lanes' values, spilled to and reloaded
//! from the saved-register array, and guards read across the group's lanes.

use cranelift_codegen::ir::{
    Endianness, InstBuilder, MemFlagsData, Value,
    condcodes::IntCC,
    types::{I8X16, I32, I32X4, I64, I64X2},
};
use cranelift_frontend::Variable;

use super::{
    forms::Form,
    lower::{FLAGS, HALVES, LANES, Lower},
};

/// Lane order of vector bitcasts.
pub(super) fn little() -> MemFlagsData {
    MemFlagsData::new().with_endianness(Endianness::Little)
}

impl Lower<'_, '_> {
    /// Lane `k`'s variable for register `r` (the current lane's is in `vars`).
    pub(super) fn lane_var(&self, k: usize, r: u32) -> Variable {
        if k == self.lane {
            self.vars[r as usize]
        } else {
            self.lanes[k].vars[r as usize]
        }
    }

    pub(super) fn lane_regs_t(&self, k: usize) -> Variable {
        if k == self.lane {
            self.regs_t
        } else {
            self.lanes[k].regs_t
        }
    }

    pub(super) fn form(&self, r: u32) -> Form {
        self.forms.get(r as usize).copied().unwrap_or(Form::Lanes)
    }

    /// Register `r`'s stride from lane to lane (0 where it has none).
    pub(super) fn stride(&self, r: u32) -> i64 {
        self.strides.get(r as usize).copied().flatten().unwrap_or(0)
    }

    /// Vector register `r`'s variables (its [`Self::halves`] halves).
    pub(super) fn vvar(&self, r: u32) -> Option<Vec<Variable>> {
        let v: [Variable; HALVES] = self.vvars.get(r as usize).copied().flatten()?;
        Some(v[..self.halves()].to_vec())
    }

    /// Half `h` of vector register `r`.
    pub(super) fn vhalf(&mut self, r: u32, h: usize) -> Value {
        let vv = self.vvar(r).expect("vector register");
        self.b.use_var(vv[h])
    }

    /// An `I32X4` of four copies of the 32-bit constant `x`.
    pub(super) fn splat_const(&mut self, x: i64) -> Value {
        let c = self.b.ins().iconst(I32, x & 0xffff_ffff);
        self.b.ins().splat(I32X4, c)
    }

    /// Zeroes every vector register (a fresh group).
    pub(super) fn zero_vectors(&mut self) {
        if !self.vector {
            return;
        }
        let z = self.splat_const(0);
        for v in self.vvars.clone().into_iter().flatten().flatten() {
            self.b.def_var(v, z);
        }
    }

    /// Copies the vector registers among `regs` to their lanes' variables.
    pub(super) fn unpack(&mut self, regs: &[u32]) {
        if !self.vector {
            return;
        }
        for &r in regs {
            if self.form(r) == Form::Affine {
                let stride = self.stride(r);
                let var0 = self.lane_var(0, r);
                let base = self.b.use_var(var0);
                for k in 1..self.width {
                    let x = self.b.ins().iadd_imm_s(base, stride * k as i64);
                    let var = self.lane_var(k, r);
                    self.b.def_var(var, x);
                }
                continue;
            }
            if self.vvar(r).is_none() {
                continue;
            }
            for k in 0..self.width {
                let v = self.vhalf(r, k / 4);
                let x = self.b.ins().extractlane(v, (k % 4) as u8);
                let x = self.b.ins().uextend(I64, x);
                let var = self.lane_var(k, r);
                self.b.def_var(var, x);
            }
        }
    }

    /// Builds the vector registers among `regs` from their lanes' variables.
    pub(super) fn pack(&mut self, regs: &[u32]) {
        if !self.vector {
            return;
        }
        for &r in regs {
            let Some(vv) = self.vvar(r) else { continue };
            for (h, &var_h) in vv.iter().enumerate() {
                let mut v = None;
                for k in 0..4 {
                    let var = self.lane_var(4 * h + k, r);
                    let x = self.b.use_var(var);
                    let x = self.b.ins().ireduce(I32, x);
                    v = Some(match v {
                        None => self.b.ins().scalar_to_vector(I32X4, x),
                        Some(v) => self.b.ins().insertlane(v, x, k as u8),
                    });
                }
                if let Some(v) = v {
                    self.b.def_var(var_h, v);
                }
            }
        }
    }

    /// Stores the group's registers `regs` to their threads' slots: a uniform or vector
    /// register as 16-byte stores, the others lane by lane.
    pub(super) fn group_spill(&mut self, regs: &[u32]) {
        let any = MemFlagsData::new().with_notrap();
        let rt0 = self.lane_regs_t(0);
        let base = self.b.use_var(rt0);
        let stride_r = self.reg_stride();
        for &r in regs {
            let o = (r * stride_r) as i32;
            match self.form(r) {
                Form::Uniform if self.vector => {
                    let var = self.lane_var(0, r);
                    let x = self.b.use_var(var);
                    let v = self.b.ins().splat(I64X2, x);
                    for k in 0..self.width as i32 / 2 {
                        self.b.ins().store(any, v, base, o + 16 * k);
                    }
                }
                Form::Affine => {
                    let stride = self.stride(r);
                    let var0 = self.lane_var(0, r);
                    let x0 = self.b.use_var(var0);
                    for k in 0..self.width {
                        let x = self.b.ins().iadd_imm_s(x0, stride * k as i64);
                        self.b.ins().store(FLAGS, x, base, o + 8 * k as i32);
                    }
                }
                Form::Vector => {
                    for h in 0..self.halves() {
                        let v = self.vhalf(r, h);
                        let lo = self.b.ins().uwiden_low(v);
                        let hi = self.b.ins().uwiden_high(v);
                        let oh = o + 32 * h as i32;
                        self.b.ins().store(any, lo, base, oh);
                        self.b.ins().store(any, hi, base, oh + 16);
                    }
                }
                _ => {
                    for k in 0..self.width {
                        let var = self.lane_var(k, r);
                        let x = self.b.use_var(var);
                        self.b.ins().store(FLAGS, x, base, o + 8 * k as i32);
                    }
                }
            }
        }
    }

    /// Loads the group's registers `regs` from their threads' slots (the others start at
    /// zero). With `check`, returns whether the threads disagree on a uniform register (an
    /// `i8`), if `regs` holds one: they then have to run one at a time.
    pub(super) fn group_reload(&mut self, regs: &[u32], check: bool) -> Option<Value> {
        for k in 0..self.width {
            self.set_lane(k);
            self.zero_vars();
        }
        self.set_lane(LANES);
        self.zero_vectors();
        let any = MemFlagsData::new().with_notrap();
        let rt0 = self.lane_regs_t(0);
        let base = self.b.use_var(rt0);
        let mut differ: Option<Value> = None;
        let stride_r = self.reg_stride();
        for &r in regs {
            let o = (r * stride_r) as i32;
            match self.form(r) {
                Form::Uniform if self.vector && !check => {
                    let x = self.b.ins().load(I64, FLAGS, base, o);
                    let var = self.lane_var(0, r);
                    self.b.def_var(var, x);
                }
                Form::Uniform if self.vector => {
                    let v0 = self.b.ins().load(I64X2, any, base, o);
                    let x = self.b.ins().extractlane(v0, 0);
                    let s = self.b.ins().splat(I64X2, x);
                    let mut eq = self.b.ins().icmp(IntCC::Equal, v0, s);
                    for k in 1..self.width as i32 / 2 {
                        let v = self.b.ins().load(I64X2, any, base, o + 16 * k);
                        let e = self.b.ins().icmp(IntCC::Equal, v, s);
                        eq = self.b.ins().band(eq, e);
                    }
                    let same = self.b.ins().vall_true(eq);
                    differ = Some(match differ {
                        None => same,
                        Some(d) => self.b.ins().band(d, same),
                    });
                    let var = self.lane_var(0, r);
                    self.b.def_var(var, x);
                }
                Form::Vector => {
                    let vv = self.vvar(r).expect("vector register");
                    for (h, &var_h) in vv.iter().enumerate() {
                        // Each 64-bit slot holds a zero-extended 32-bit value: the low words.
                        let oh = o + 32 * h as i32;
                        let lo = self.b.ins().load(I32X4, any, base, oh);
                        let hi = self.b.ins().load(I32X4, any, base, oh + 16);
                        let v = self.low_words(lo, hi);
                        self.b.def_var(var_h, v);
                    }
                    if let (true, Some(stride)) = (check, self.strides[r as usize]) {
                        // The lanes must step by the register's stride.
                        let (same, _) = self.vsteps(r, stride);
                        differ = Some(match differ {
                            None => same,
                            Some(d) => self.b.ins().band(d, same),
                        });
                    }
                }
                Form::Affine => {
                    let stride = self.stride(r);
                    let x0 = self.b.ins().load(I64, FLAGS, base, o);
                    let var0 = self.lane_var(0, r);
                    self.b.def_var(var0, x0);
                    if check {
                        for k in 1..self.width {
                            let x = self.b.ins().load(I64, FLAGS, base, o + 8 * k as i32);
                            let want = self.b.ins().iadd_imm_s(x0, stride * k as i64);
                            let same = self.b.ins().icmp(IntCC::Equal, x, want);
                            differ = Some(match differ {
                                None => same,
                                Some(d) => self.b.ins().band(d, same),
                            });
                        }
                    }
                }
                _ => {
                    for k in 0..self.width {
                        let x = self.b.ins().load(I64, FLAGS, base, o + 8 * k as i32);
                        let var = self.lane_var(k, r);
                        self.b.def_var(var, x);
                    }
                }
            }
        }
        // `differ` holds whether all agree so far.
        differ.map(|same| self.b.ins().bxor_imm_u(same, 1))
    }

    /// The even 32-bit words of `a` then of `b` (each `I32X4`).
    pub(super) fn low_words(&mut self, a: Value, b: Value) -> Value {
        let mut mask = [0u8; 16];
        for (k, m) in mask.iter_mut().enumerate() {
            let word = [0usize, 2, 4, 6][k / 4];
            *m = (word * 4 + k % 4) as u8;
        }
        let imm = self.b.func.dfg.immediates.push(mask.to_vec().into());
        let a8 = self.b.ins().bitcast(I8X16, little(), a);
        let b8 = self.b.ins().bitcast(I8X16, little(), b);
        let r = self.b.ins().shuffle(a8, b8, imm);
        self.b.ins().bitcast(I32X4, little(), r)
    }

    /// Whether every lane's and whether any lane's guard `g` (negated with `neg`) holds.
    pub(super) fn guard_all_any(&mut self, g: u32, neg: bool) -> (Value, Value) {
        match self.form(g) {
            Form::Uniform => {
                let var = self.lane_var(0, g);
                let p = self.b.use_var(var);
                let p = self.b.ins().band_imm_u(p, 1);
                let p = if neg {
                    self.b.ins().bxor_imm_u(p, 1)
                } else {
                    p
                };
                (p, p)
            }
            Form::Vector => {
                let one = self.splat_const(1);
                let zero = self.splat_const(0);
                let cc = if neg { IntCC::Equal } else { IntCC::NotEqual };
                let (mut all, mut any) = (None, None);
                for h in 0..self.halves() {
                    let v = self.vhalf(g, h);
                    let v = self.b.ins().band(v, one);
                    let m = self.b.ins().icmp(cc, v, zero);
                    all = Some(match all {
                        None => m,
                        Some(a) => self.b.ins().band(a, m),
                    });
                    any = Some(match any {
                        None => m,
                        Some(a) => self.b.ins().bor(a, m),
                    });
                }
                let (all, any) = (all.expect("halves"), any.expect("halves"));
                (self.b.ins().vall_true(all), self.b.ins().vany_true(any))
            }
            Form::Lanes | Form::Affine => {
                self.unpack(&[g]);
                let (mut all, mut any) = (None, None);
                for k in 0..self.width {
                    let var = self.lane_var(k, g);
                    let p = self.b.use_var(var);
                    let p = self.b.ins().band_imm_u(p, 1);
                    let p = if neg {
                        self.b.ins().bxor_imm_u(p, 1)
                    } else {
                        p
                    };
                    all = Some(all.map_or(p, |a| self.b.ins().band(a, p)));
                    any = Some(any.map_or(p, |a| self.b.ins().bor(a, p)));
                }
                (all.expect("lanes"), any.expect("lanes"))
            }
        }
    }
}
