// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Source operands: registers, immediates, symbol addresses, frame offsets and the special
//! registers (`%tid`, `%laneid`, `%clock`, ...), per lane or for a whole warp.

use super::{ctx::Ctx, warp::Warp};
use crate::{
    alu::Lanes,
    ir::{Addr, Src, Sreg},
};

impl<'a> Ctx<'a> {
    pub(super) fn sreg(&self, w: &Warp, s: Sreg, lane: usize) -> u64 {
        let l = self.l;
        let elapsed = || l.start.elapsed().as_nanos() as u64;
        match s {
            Sreg::Tid(d) => w.tid[d as usize % 3][lane] as u64,
            Sreg::Ntid(d) => l.cfg.block[d as usize % 3] as u64,
            Sreg::Ctaid(d) => self.ctaid[d as usize % 3] as u64,
            Sreg::Nctaid(d) => l.cfg.grid[d as usize % 3] as u64,
            Sreg::Laneid => lane as u64,
            Sreg::Warpid => w.idx as u64,
            Sreg::Nwarpid => 64,
            Sreg::Smid => self.block_linear % l.opts.num_sms.max(1) as u64,
            Sreg::Nsmid => l.opts.num_sms as u64,
            Sreg::Gridid => 1,
            Sreg::LanemaskEq => 1 << lane,
            Sreg::LanemaskLe => ((2u64 << lane) - 1) & 0xffff_ffff,
            Sreg::LanemaskLt => (1u64 << lane) - 1,
            Sreg::LanemaskGe => !((1u64 << lane) - 1) & 0xffff_ffff,
            Sreg::LanemaskGt => !((2u64 << lane) - 1) & 0xffff_ffff,
            Sreg::Clock => elapsed() & 0xffff_ffff,
            Sreg::ClockHi => (elapsed() >> 32) & 0xffff_ffff,
            Sreg::Clock64 => elapsed(),
            Sreg::Globaltimer => l.timer0.wrapping_add(elapsed()),
            Sreg::GlobaltimerLo => l.timer0.wrapping_add(elapsed()) & 0xffff_ffff,
            Sreg::GlobaltimerHi => l.timer0.wrapping_add(elapsed()) >> 32,
            Sreg::DynamicSmem => l.cfg.dynamic_shared as u64,
            Sreg::TotalSmem => l.shared_size as u64,
            Sreg::GridWorkspaceHi => l.cfg.grid_workspace >> 32,
            Sreg::GridWorkspaceLo => l.cfg.grid_workspace & 0xffff_ffff,
            Sreg::ClusterCtaid(d) => {
                (self.ctaid[d as usize % 3] % l.cluster[d as usize % 3]) as u64
            }
            Sreg::ClusterNctaid(d) => l.cluster[d as usize % 3] as u64,
            Sreg::ClusterCtarank => self.rank as u64,
            Sreg::ClusterNctarank => l.cluster_size() as u64,
            Sreg::Clusterid(d) => (self.ctaid[d as usize % 3] / l.cluster[d as usize % 3]) as u64,
            Sreg::Nclusterid(d) => (l.cfg.grid[d as usize % 3] / l.cluster[d as usize % 3]) as u64,
            Sreg::IsExplicitCluster => l.explicit_cluster as u64,
            Sreg::Const(v) => v as u64,
        }
    }

    #[inline(always)]
    /// Lane `lane`'s address of memory operand `a` (base plus offset).
    pub(super) fn addr_of(&self, w: &Warp, a: &Addr, lane: usize) -> u64 {
        self.val(w, &a.base, lane).wrapping_add(a.off as u64)
    }

    pub(super) fn val(&self, w: &Warp, s: &Src, lane: usize) -> u64 {
        match *s {
            Src::Reg(r) => w.get(r, lane),
            Src::NotReg(r) => (w.get(r, lane) & 1) ^ 1,
            Src::Imm(v) => v,
            Src::Sreg(sr) => self.sreg(w, sr, lane),
            Src::Sym(i, off) => self
                .l
                .syms
                .get(i as usize)
                .copied()
                .unwrap_or(0)
                .wrapping_add(off as u64),
            Src::Local(off) => w.frame_base[lane] as u64 + off as u64,
        }
    }

    #[inline]
    pub(super) fn fill(&self, w: &Warp, s: &Src, out: &mut Lanes) {
        match *s {
            Src::Imm(v) => *out = [v; 32],
            Src::Sym(..) => *out = [self.val(w, s, 0); 32],
            Src::Reg(r) => *out = *w.reg(r),
            Src::Sreg(Sreg::Tid(d)) => {
                for (o, t) in out.iter_mut().zip(&w.tid[d as usize % 3]) {
                    *o = *t as u64;
                }
            }
            Src::Sreg(Sreg::Ntid(_) | Sreg::Ctaid(_) | Sreg::Nctaid(_) | Sreg::Const(_)) => {
                *out = [self.val(w, s, 0); 32]
            }
            _ => {
                for (lane, o) in out.iter_mut().enumerate() {
                    *o = self.val(w, s, lane);
                }
            }
        }
    }
}
