// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Source operands in compiled code: registers, immediates, symbol addresses, frame offsets
//! and special registers.

use cranelift_codegen::ir::{
    InstBuilder, Value,
    types::{I32, I64},
};

use super::{
    lower::{FLAGS, Lower},
    rt::{self, off},
};
use crate::ir::{Src, Sreg};

impl Lower<'_, '_> {
    pub(super) fn src(&mut self, s: &Src) -> Value {
        match *s {
            Src::Reg(r) => self.b.use_var(self.vars[r as usize]),
            Src::NotReg(r) => {
                let v = self.b.use_var(self.vars[r as usize]);
                let v = self.b.ins().band_imm_u(v, 1);
                self.b.ins().bxor_imm_u(v, 1)
            }
            Src::Imm(v) => self.b.ins().iconst(I64, v as i64),
            Src::Sym(i, o) => {
                let syms = self.inv.syms;
                // The symbol table does not change during a launch.
                let v = self.b.ins().load(
                    I64,
                    FLAGS.with_readonly().with_can_move(),
                    syms,
                    (i as i32).wrapping_mul(8),
                );
                self.b.ins().iadd_imm_s(v, o)
            }
            Src::Local(o) => self.b.ins().iconst(I64, o as i64),
            Src::Sreg(sr) => self.sreg(sr),
        }
    }

    fn sreg(&mut self, s: Sreg) -> Value {
        let d = |x: u8| (x as i32 % 3) * 4;
        match s {
            Sreg::Tid(x) => self.b.use_var(self.tid[x as usize % 3]),
            Sreg::Ntid(x) => self.tc_u32(off::NTID + d(x)),
            Sreg::Ctaid(x) => self.tc_u32(off::CTAID + d(x)),
            Sreg::Nctaid(x) => self.tc_u32(off::NCTAID + d(x)),
            // Compiled code runs only launches without clusters (each block a cluster of
            // one): see `launch`.
            Sreg::Clusterid(x) => self.tc_u32(off::CTAID + d(x)),
            Sreg::Nclusterid(x) => self.tc_u32(off::NCTAID + d(x)),
            Sreg::ClusterCtaid(_) | Sreg::ClusterCtarank | Sreg::IsExplicitCluster => {
                self.b.ins().iconst(I64, 0)
            }
            Sreg::ClusterNctaid(_) | Sreg::ClusterNctarank => self.b.ins().iconst(I64, 1),
            Sreg::Laneid => {
                let l = self.b.use_var(self.t);
                self.b.ins().band_imm_u(l, 31)
            }
            Sreg::Warpid => {
                let l = self.b.use_var(self.t);
                self.b.ins().ushr_imm_u(l, 5)
            }
            Sreg::Nwarpid => self.b.ins().iconst(I64, 64),
            Sreg::Smid => self.tc_u32(off::SMID),
            Sreg::Nsmid => self.tc_u32(off::NSMID),
            Sreg::Gridid => self.b.ins().iconst(I64, 1),
            Sreg::LanemaskEq
            | Sreg::LanemaskLe
            | Sreg::LanemaskLt
            | Sreg::LanemaskGe
            | Sreg::LanemaskGt => {
                let l = self.b.use_var(self.t);
                let lane = self.b.ins().band_imm_u(l, 31);
                let one = self.b.ins().iconst(I64, 1);
                let two = self.b.ins().iconst(I64, 2);
                let eq = self.b.ins().ishl(one, lane);
                let le2 = self.b.ins().ishl(two, lane);
                let r = match s {
                    Sreg::LanemaskEq => eq,
                    Sreg::LanemaskLe => self.b.ins().iadd_imm_s(le2, -1),
                    Sreg::LanemaskLt => self.b.ins().iadd_imm_s(eq, -1),
                    Sreg::LanemaskGe => {
                        let lt = self.b.ins().iadd_imm_s(eq, -1);
                        self.b.ins().bnot(lt)
                    }
                    _ => {
                        let le = self.b.ins().iadd_imm_s(le2, -1);
                        self.b.ins().bnot(le)
                    }
                };
                self.b.ins().band_imm_u(r, 0xffff_ffff)
            }
            Sreg::DynamicSmem => self.tc_u32(off::DYN_SMEM),
            Sreg::TotalSmem => self.tc_u32(off::TOTAL_SMEM),
            Sreg::Const(v) => self.b.ins().iconst(I64, v as i64),
            Sreg::Clock
            | Sreg::ClockHi
            | Sreg::Clock64
            | Sreg::Globaltimer
            | Sreg::GlobaltimerLo
            | Sreg::GlobaltimerHi
            | Sreg::GridWorkspaceHi
            | Sreg::GridWorkspaceLo => {
                let code = match s {
                    Sreg::Clock => 0,
                    Sreg::ClockHi => 1,
                    Sreg::Clock64 => 2,
                    Sreg::Globaltimer => 3,
                    Sreg::GlobaltimerLo => 4,
                    Sreg::GlobaltimerHi => 5,
                    Sreg::GridWorkspaceHi => 6,
                    _ => 7,
                };
                let code = self.b.ins().iconst(I32, code);
                let f = self
                    .b
                    .ins()
                    .iconst(I64, rt::h_sreg as *const () as usize as i64);
                let call = self
                    .b
                    .ins()
                    .call_indirect(self.helpers.sreg, f, &[self.tc, code]);
                self.b.inst_results(call)[0]
            }
        }
    }
}
