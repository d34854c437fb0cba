// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Function-scope names: the scopes of a function body ([`Local`]: registers, register ranges,
//! frame variables, parameters, labels, branch tables), lazy register allocation, and the
//! special register names (`%tid`, `%laneid`, ...).

use std::collections::HashMap;

use super::{defs::MAX_REGS, layout::perr};
use crate::{
    ast::Pos,
    error::ParseError,
    ir::{Reg, Sreg},
    types::Ty,
};

/// A name visible in a function scope.
#[derive(Debug, Clone, Copy)]
pub(super) enum Local {
    /// A register (declaration id).
    Reg(u32),
    /// `%r<N>`: (first declaration id, count); registers are `decl + i`.
    Range(u32, u32),
    /// A `.local` variable or a `.param` in the frame at this offset.
    Frame(u32),
    /// A kernel parameter at this offset of the parameter buffer.
    KParam(u32),
    /// A function-scope shared or global symbol.
    Sym(u32),
    Label(u32),
    /// A `.branchtargets` table.
    Table(u32),
}

#[derive(Default)]
pub(super) struct Scope<'a> {
    pub(super) names: HashMap<&'a str, Local>,
    pub(super) ranges: Vec<(&'a str, Local)>,
}

/// Per-function decoding state.
pub(super) struct FnState<'a> {
    pub(super) is_kernel: bool,
    pub(super) scopes: Vec<Scope<'a>>,
    /// Declaration id counter; registers are allocated lazily on first use.
    pub(super) next_decl: u32,
    pub(super) reg_of_decl: HashMap<u32, Reg>,
    pub(super) decl_ty: HashMap<u32, Ty>,
    pub(super) nregs: u32,
    pub(super) cc: Option<Reg>,
    pub(super) frame: u64,
    pub(super) frame_max: u64,
    pub(super) labels: Vec<Option<u32>>,
    pub(super) tables: Vec<Vec<u32>>,
    /// (instruction index, label ids) to patch after the body.
    pub(super) fixups: Vec<(usize, Vec<u32>)>,
    pub(super) kernel_shared: u64,
    pub(super) pending_label: Option<&'a str>,
    pub(super) callees: Vec<u32>,
    /// Module-scope shared variables (symbol indices) the function refers to.
    pub(super) module_shared: Vec<u32>,
    pub(super) indirect_calls: bool,
    pub(super) warp_sync: bool,
    /// Sizes of frame variables by name (for call return values).
    pub(super) frame_sizes: HashMap<&'a str, u32>,
}

impl<'a> FnState<'a> {
    pub(super) fn new_decl(&mut self, ty: Ty) -> u32 {
        let d = self.next_decl;
        self.next_decl = self.next_decl.saturating_add(1);
        self.decl_ty.insert(d, ty);
        d
    }

    pub(super) fn lookup(&self, name: &str) -> Option<Local> {
        for sc in self.scopes.iter().rev() {
            if let Some(l) = sc.names.get(name) {
                return Some(*l);
            }
            if !sc.ranges.is_empty() {
                let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
                if digits > 0 {
                    let (prefix, num) = name.split_at(name.len() - digits);
                    if let Ok(n) = num.parse::<u32>() {
                        for (p, r) in sc.ranges.iter().rev() {
                            if let Local::Range(first, count) = *r
                                && *p == prefix
                                && n < count
                                && (num == "0" || !num.starts_with('0'))
                            {
                                return Some(Local::Reg(first + n));
                            }
                        }
                    }
                }
            }
        }
        None
    }

    pub(super) fn alloc(&mut self, decl: u32) -> Result<Reg, ParseError> {
        if let Some(r) = self.reg_of_decl.get(&decl) {
            return Ok(*r);
        }
        let r = self.nregs;
        if r >= MAX_REGS {
            return Err(perr(Pos::default(), "fewer registers in one function"));
        }
        self.nregs += 1;
        self.reg_of_decl.insert(decl, r);
        Ok(r)
    }

    /// A register operand by name.
    pub(super) fn reg(&mut self, name: &str, pos: Pos) -> Result<Reg, ParseError> {
        match self.lookup(name) {
            Some(Local::Reg(d)) => self.alloc(d),
            _ => Err(perr(pos, format!("a declared register, not `{name}`"))),
        }
    }

    pub(super) fn cc(&mut self) -> Reg {
        if let Some(c) = self.cc {
            return c;
        }
        let r = self.nregs;
        self.nregs += 1;
        self.cc = Some(r);
        r
    }
}

pub(super) fn sreg(name: &str, comp: Option<&str>) -> Option<Sreg> {
    let c = match comp {
        Some("x") => 0,
        Some("y") => 1,
        Some("z") => 2,
        Some(_) => 3,
        None => 0,
    };
    let dim = |f: fn(u8) -> Sreg| if c < 3 { Some(f(c)) } else { None };
    Some(match name {
        "%tid" => return dim(Sreg::Tid),
        "%ntid" => return dim(Sreg::Ntid),
        "%ctaid" => return dim(Sreg::Ctaid),
        "%nctaid" => return dim(Sreg::Nctaid),
        "%clusterid" => return dim(Sreg::Clusterid),
        "%nclusterid" => return dim(Sreg::Nclusterid),
        "%cluster_ctaid" => return dim(Sreg::ClusterCtaid),
        "%cluster_nctaid" => return dim(Sreg::ClusterNctaid),
        "%cluster_ctarank" => Sreg::ClusterCtarank,
        "%cluster_nctarank" => Sreg::ClusterNctarank,
        "%is_explicit_cluster" => Sreg::IsExplicitCluster,
        "%laneid" => Sreg::Laneid,
        "%warpid" => Sreg::Warpid,
        "%nwarpid" => Sreg::Nwarpid,
        "%smid" => Sreg::Smid,
        "%nsmid" => Sreg::Nsmid,
        "%gridid" => Sreg::Gridid,
        "%lanemask_eq" => Sreg::LanemaskEq,
        "%lanemask_le" => Sreg::LanemaskLe,
        "%lanemask_lt" => Sreg::LanemaskLt,
        "%lanemask_ge" => Sreg::LanemaskGe,
        "%lanemask_gt" => Sreg::LanemaskGt,
        "%clock" => Sreg::Clock,
        "%clock_hi" => Sreg::ClockHi,
        "%clock64" => Sreg::Clock64,
        "%globaltimer" => Sreg::Globaltimer,
        "%globaltimer_lo" => Sreg::GlobaltimerLo,
        "%globaltimer_hi" => Sreg::GlobaltimerHi,
        "%dynamic_smem_size" => Sreg::DynamicSmem,
        "%total_smem_size" | "%aggr_smem_size" => Sreg::TotalSmem,
        // The predefined constant nvcc writes for `warpSize`.
        "WARP_SZ" => Sreg::Const(32),
        "%envreg1" => Sreg::GridWorkspaceHi,
        "%envreg2" => Sreg::GridWorkspaceLo,
        n if n.starts_with("%pm")
            || n.starts_with("%envreg")
            || n.starts_with("%reserved_smem")
            || n == "%current_graph_exec" =>
        {
            Sreg::Const(0)
        }
        _ => return None,
    })
}
