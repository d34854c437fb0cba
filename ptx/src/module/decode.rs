// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Decoding of single instructions into [`Op`]s.

use super::{
    defs::{FUNC_WINDOW, PARAM_WINDOW, Sym},
    layout::perr,
    lower::{DErr, DResult, Lower, ModSym, imm_bits, unsup},
    scope::{FnState, Local, sreg},
};
use crate::{
    alu,
    ast::{self, Operand, Pos, Value},
    ir::*,
    types::Ty,
};

pub(super) fn space_of(mods: &[&str]) -> Option<Space> {
    for m in mods {
        let base = m.split("::").next().unwrap_or(m);
        let s = match base {
            "global" => Space::Global,
            "shared" => Space::Shared,
            "local" => Space::Local,
            "const" => Space::Const,
            "param" => Space::Param,
            _ => continue,
        };
        return Some(s);
    }
    None
}

fn vec_of(mods: &[&str]) -> Option<u8> {
    mods.iter().find_map(|m| match *m {
        "v2" => Some(2),
        "v4" => Some(4),
        "v8" => Some(8),
        _ => None,
    })
}

fn ty_of(mods: &[&str]) -> Option<Ty> {
    mods.iter().rev().find_map(|m| Ty::parse(m))
}

fn has(mods: &[&str], w: &str) -> bool {
    mods.contains(&w)
}

fn arg<'b, 'a>(args: &'b [Operand<'a>], k: usize) -> DResult<&'b Operand<'a>> {
    args.get(k)
        .ok_or_else(|| DErr::Unsupported(format!("missing operand {}", k + 1)))
}

impl<'a> Lower<'a> {
    fn func_sym(&mut self, f: u32) -> u32 {
        if let Some(i) = self.syms.iter().position(|s| *s == Sym::Func(f)) {
            return i as u32;
        }
        self.add_sym(Sym::Func(f))
    }

    fn note_sym(&self, st: &mut FnState<'a>, s: u32) {
        if matches!(self.syms.get(s as usize), Some(Sym::SharedModule)) {
            st.module_shared.push(s);
        }
    }

    fn frame_off(off: u32, delta: i64, pos: Pos) -> DResult<u32> {
        u32::try_from(off as i64 + delta)
            .map_err(|_| DErr::Parse(perr(pos, "an offset inside the frame")))
    }

    pub(super) fn src(&mut self, st: &mut FnState<'a>, o: &Operand<'a>, ty: Ty) -> DResult<Src> {
        match o {
            Operand::Name {
                name,
                comp,
                offset,
                pos,
            } => {
                let local = st.lookup(name);
                match local {
                    Some(Local::Reg(d)) => {
                        if comp.is_some() || *offset != 0 {
                            return unsup("register component or offset");
                        }
                        Ok(Src::Reg(st.alloc(d)?))
                    }
                    Some(Local::Frame(off)) => Ok(Src::Local(Self::frame_off(off, *offset, *pos)?)),
                    Some(Local::KParam(off)) => Ok(Src::Imm(
                        (PARAM_WINDOW + off as u64).wrapping_add(*offset as u64),
                    )),
                    Some(Local::Sym(s)) => {
                        self.note_sym(st, s);
                        Ok(Src::Sym(s, *offset))
                    }
                    Some(Local::Label(_) | Local::Table(_)) => Err(DErr::Parse(perr(
                        *pos,
                        format!("a value, not label `{name}`"),
                    ))),
                    Some(Local::Range(..)) | None => match self.modsyms.get(name).copied() {
                        Some(ModSym::Var(s)) => {
                            self.note_sym(st, s);
                            Ok(Src::Sym(s, *offset))
                        }
                        Some(ModSym::Func(f)) => Ok(Src::Sym(self.func_sym(f), *offset)),
                        None => match sreg(name, *comp) {
                            Some(r) => Ok(Src::Sreg(r)),
                            None => Err(DErr::Parse(perr(
                                *pos,
                                format!("a declared name, not `{name}`"),
                            ))),
                        },
                    },
                }
            }
            Operand::Imm(v) => Ok(Src::Imm(imm_bits(*v, ty))),
            Operand::Not(inner) => match &**inner {
                Operand::Name { name, pos, .. } => Ok(Src::NotReg(st.reg(name, *pos)?)),
                _ => unsup("negated operand"),
            },
            _ => unsup("operand form"),
        }
    }

    pub(super) fn dst(&mut self, st: &mut FnState<'a>, o: &Operand<'a>) -> DResult<Reg> {
        match o {
            Operand::Name { name, pos, .. } => Ok(st.reg(name, *pos)?),
            Operand::Sink => Ok(SINK),
            _ => unsup("destination form"),
        }
    }

    pub(super) fn addr(
        &mut self,
        st: &mut FnState<'a>,
        o: &Operand<'a>,
        space: Space,
    ) -> DResult<(Space, Addr)> {
        let Operand::Addr(inner) = o else {
            return unsup("address form");
        };
        match &**inner {
            Operand::Name {
                name,
                offset,
                pos,
                comp: None,
            } => match st.lookup(name) {
                Some(Local::Reg(d)) => Ok((
                    space,
                    Addr {
                        base: Src::Reg(st.alloc(d)?),
                        off: *offset,
                    },
                )),
                Some(Local::Frame(off)) => Ok((
                    Space::Local,
                    Addr {
                        base: Src::Local(Self::frame_off(off, *offset, *pos)?),
                        off: 0,
                    },
                )),
                Some(Local::KParam(off)) => Ok((
                    Space::Param,
                    Addr {
                        base: Src::Imm(PARAM_WINDOW + off as u64),
                        off: *offset,
                    },
                )),
                _ => {
                    let s = self.src(st, inner, Ty::U64)?;
                    let (base, off) = match s {
                        Src::Sym(s, o) => (Src::Sym(s, 0), o),
                        other => (other, 0),
                    };
                    Ok((space, Addr { base, off }))
                }
            },
            Operand::Imm(Value::Int(v)) => Ok((
                space,
                Addr {
                    base: Src::Imm(*v),
                    off: 0,
                },
            )),
            _ => unsup("address form"),
        }
    }

    pub(super) fn inst(&mut self, st: &mut FnState<'a>, i: &ast::Inst<'a>) -> DResult<Op> {
        let mods = i.mods.as_slice();
        let args = i.args.as_slice();
        match alu::lookup(i.op, mods) {
            Ok(Some(spec)) => return self.alu(st, spec, args, alu::native::native(i.op, mods)),
            Ok(None) => {}
            Err(e) => return unsup(e),
        }
        Ok(match i.op {
            "mov" => {
                let ty = ty_of(mods).ok_or(DErr::Unsupported("mov type".into()))?;
                let (d, a) = (arg(args, 0)?, arg(args, 1)?);
                match (d, a) {
                    (Operand::Vec(ds), _) => {
                        let n = ds.len();
                        if !(2..=4).contains(&n) || ty.bits() % n as u32 != 0 {
                            return unsup("vector unpack");
                        }
                        let mut regs = [SINK; 4];
                        for (k, o) in ds.iter().enumerate() {
                            regs[k] = self.dst(st, o)?;
                        }
                        Op::Unpack {
                            ds: regs,
                            n: n as u8,
                            bits: (ty.bits() / n as u32) as u8,
                            a: self.src(st, a, ty)?,
                        }
                    }
                    (_, Operand::Vec(ss)) => {
                        let n = ss.len();
                        if !(2..=4).contains(&n) || ty.bits() % n as u32 != 0 {
                            return unsup("vector pack");
                        }
                        let bits = ty.bits() / n as u32;
                        let ety = match bits {
                            8 => Ty::B8,
                            16 => Ty::B16,
                            32 => Ty::B32,
                            _ => Ty::B64,
                        };
                        let mut srcs = [Src::Imm(0); 4];
                        for (k, o) in ss.iter().enumerate() {
                            srcs[k] = self.src(st, o, ety)?;
                        }
                        Op::Pack {
                            d: self.dst(st, d)?,
                            srcs,
                            n: n as u8,
                            bits: bits as u8,
                        }
                    }
                    _ => Op::Mov {
                        d: self.dst(st, d)?,
                        a: self.src(st, a, ty)?,
                        mask: ty.mask(),
                    },
                }
            }
            "ld" | "ldu" => self.ld(st, mods, args)?,
            "st" => {
                let space = space_of(mods).unwrap_or(Space::Generic);
                let ty = ty_of(mods).ok_or(DErr::Unsupported("st type".into()))?;
                if ty.size() > 8 {
                    return unsup("128-bit store");
                }
                let (space, addr) = self.addr(st, arg(args, 0)?, space)?;
                let mut v = [Src::Imm(0); 4];
                let n = match arg(args, 1)? {
                    Operand::Vec(vs) => {
                        if vs.len() > 4 {
                            return unsup("8-element vector");
                        }
                        for (k, o) in vs.iter().enumerate() {
                            v[k] = self.src(st, o, ty)?;
                        }
                        vs.len()
                    }
                    o => {
                        v[0] = self.src(st, o, ty)?;
                        1
                    }
                };
                if space == Space::Const
                    || (space == Space::Param && !matches!(addr.base, Src::Local(_)))
                {
                    return unsup("store to a read-only space");
                }
                Op::St {
                    space,
                    size: ty.size() as u8,
                    n: n as u8,
                    v,
                    addr,
                    volatile: has(mods, "volatile"),
                }
            }
            "atom" | "red" => self.atom(st, i.op == "red", mods, args)?,
            "cvta" => {
                let to = has(mods, "to");
                let space = space_of(mods).ok_or(DErr::Unsupported("cvta space".into()))?;
                let ty = ty_of(mods).unwrap_or(Ty::U64);
                Op::Cvta {
                    to,
                    space,
                    d: self.dst(st, arg(args, 0)?)?,
                    a: self.src(st, arg(args, 1)?, ty)?,
                    mask: ty.mask(),
                }
            }
            "isspacep" => {
                let space = space_of(mods).ok_or(DErr::Unsupported("isspacep space".into()))?;
                Op::Isspacep {
                    space,
                    d: self.dst(st, arg(args, 0)?)?,
                    a: self.src(st, arg(args, 1)?, Ty::U64)?,
                }
            }
            "bra" => {
                let Operand::Name { name, pos, .. } = arg(args, 0)? else {
                    return unsup("indirect branch");
                };
                let Some(Local::Label(id)) = st.lookup(name) else {
                    return Err(DErr::Parse(perr(*pos, format!("a label, not `{name}`"))));
                };
                st.fixups.push((self.code.len(), vec![id]));
                Op::Bra { target: 0 }
            }
            "brx" => {
                let idx = self.src(st, arg(args, 0)?, Ty::U32)?;
                let Operand::Name { name, pos, .. } = arg(args, 1)? else {
                    return unsup("brx target list");
                };
                let Some(Local::Table(t)) = st.lookup(name) else {
                    return Err(DErr::Parse(perr(
                        *pos,
                        format!("a .branchtargets label, not `{name}`"),
                    )));
                };
                let ids = st.tables.get(t as usize).cloned().unwrap_or_default();
                st.fixups.push((self.code.len(), ids));
                Op::Brx {
                    idx,
                    targets: Box::new([]),
                }
            }
            "call" => self.call(st, args)?,
            "ret" => Op::Ret,
            "exit" => Op::Exit,
            "trap" => Op::Trap,
            "brkpt" => Op::Brkpt,
            "bar" | "barrier" => self.bar(st, mods, args)?,
            "membar" | "fence" => {
                if mods
                    .first()
                    .is_some_and(|m| m.starts_with("proxy") || m.starts_with("mbarrier"))
                {
                    Op::Nop
                } else {
                    Op::Fence
                }
            }
            "nanosleep" => Op::Yield,
            "prefetch" | "prefetchu" | "pmevent" | "griddepcontrol" | "setmaxnreg"
            | "applypriority" | "discard" => Op::Nop,
            "createpolicy" => Op::Mov {
                d: self.dst(st, arg(args, 0)?)?,
                a: Src::Imm(0),
                mask: u64::MAX,
            },
            "shfl" => {
                let mode = if has(mods, "up") {
                    ShflMode::Up
                } else if has(mods, "down") {
                    ShflMode::Down
                } else if has(mods, "bfly") {
                    ShflMode::Bfly
                } else if has(mods, "idx") {
                    ShflMode::Idx
                } else {
                    return unsup("shfl mode");
                };
                let (d, p) = self.dst_pair(st, arg(args, 0)?)?;
                Op::Shfl {
                    mode,
                    d,
                    p,
                    a: self.src(st, arg(args, 1)?, Ty::B32)?,
                    b: self.src(st, arg(args, 2)?, Ty::U32)?,
                    c: self.src(st, arg(args, 3)?, Ty::U32)?,
                }
            }
            "vote" => {
                let mode = if has(mods, "all") {
                    VoteMode::All
                } else if has(mods, "any") {
                    VoteMode::Any
                } else if has(mods, "uni") {
                    VoteMode::Uni
                } else if has(mods, "ballot") {
                    VoteMode::Ballot
                } else {
                    return unsup("vote mode");
                };
                Op::Vote {
                    mode,
                    d: self.dst(st, arg(args, 0)?)?,
                    a: self.src(st, arg(args, 1)?, Ty::Pred)?,
                    members: match args.get(2) {
                        Some(m) => Some(self.src(st, m, Ty::B32)?),
                        None => None,
                    },
                }
            }
            "match" => {
                let all = has(mods, "all");
                if !all && !has(mods, "any") {
                    return unsup("match mode");
                }
                let ty = ty_of(mods).unwrap_or(Ty::B32);
                let (d, p) = self.dst_pair(st, arg(args, 0)?)?;
                Op::Match {
                    all,
                    d,
                    p,
                    a: self.src(st, arg(args, 1)?, ty)?,
                    mask64: ty.size() == 8,
                    members: self.src(st, arg(args, 2)?, Ty::B32)?,
                }
            }
            "redux" => {
                let op = if has(mods, "add") {
                    ReduxOp::Add
                } else if has(mods, "min") {
                    ReduxOp::Min
                } else if has(mods, "max") {
                    ReduxOp::Max
                } else if has(mods, "and") {
                    ReduxOp::And
                } else if has(mods, "or") {
                    ReduxOp::Or
                } else if has(mods, "xor") {
                    ReduxOp::Xor
                } else {
                    return unsup("redux op");
                };
                let ty = ty_of(mods).unwrap_or(Ty::B32);
                if ty.size() != 4 || ty.is_float() {
                    return unsup("redux type");
                }
                Op::Redux {
                    op,
                    signed: ty.is_signed(),
                    d: self.dst(st, arg(args, 0)?)?,
                    a: self.src(st, arg(args, 1)?, ty)?,
                    members: self.src(st, arg(args, 2)?, Ty::B32)?,
                }
            }
            "cp" if mods.first() == Some(&"async") && mods.get(1) == Some(&"mbarrier") => {
                if !has(mods, "arrive") {
                    return unsup("cp.async.mbarrier form");
                }
                let space = space_of(mods).unwrap_or(Space::Generic);
                let (space, addr) = self.addr(st, arg(args, 0)?, space)?;
                Op::Mbar {
                    op: MbarOp::CpAsyncArrive {
                        noinc: has(mods, "noinc"),
                    },
                    space,
                    d: SINK,
                    addr,
                    a: Src::Imm(1),
                }
            }
            "cp" if mods.first() == Some(&"async") && mods.get(1) == Some(&"bulk") => {
                self.bulk(st, &mods[2..], args)?
            }
            "tensormap" => self.tensormap(st, mods, args)?,
            "cp" if mods.first() == Some(&"async") => {
                if has(mods, "commit_group") || has(mods, "wait_group") || has(mods, "wait_all") {
                    return Ok(Op::Nop);
                }
                if mods
                    .iter()
                    .any(|m| m.starts_with("bulk") || m.starts_with("mbarrier"))
                {
                    return unsup("bulk or mbarrier cp.async");
                }
                let (_, dst) = self.addr(st, arg(args, 0)?, Space::Shared)?;
                let (_, src) = self.addr(st, arg(args, 1)?, Space::Global)?;
                let size = match arg(args, 2)? {
                    Operand::Imm(Value::Int(n @ (4 | 8 | 16))) => *n as u8,
                    _ => return unsup("cp.async size"),
                };
                let src_size = match args.get(3) {
                    Some(o @ (Operand::Imm(_) | Operand::Name { .. })) => {
                        Some(self.src(st, o, Ty::U32)?)
                    }
                    _ => None,
                };
                Op::CpAsync {
                    dst,
                    src,
                    size,
                    src_size,
                }
            }
            "mbarrier" => self.mbarrier(st, mods, args)?,
            "activemask" => Op::Activemask {
                d: self.dst(st, arg(args, 0)?)?,
            },
            "mapa" => Op::Mapa {
                d: self.dst(st, arg(args, 0)?)?,
                a: self.src(st, arg(args, 1)?, ty_of(mods).unwrap_or(Ty::U64))?,
                rank: self.src(st, arg(args, 2)?, Ty::U32)?,
                generic: space_of(mods).is_none(),
            },
            "getctarank" => Op::GetCtaRank {
                d: self.dst(st, arg(args, 0)?)?,
                a: self.src(st, arg(args, 1)?, ty_of(mods).unwrap_or(Ty::U64))?,
                generic: space_of(mods).is_none(),
            },
            "elect" => {
                let (d, p) = self.dst_pair(st, arg(args, 0)?)?;
                Op::Elect { d, p }
            }
            "tex" | "tld4" => self.tex(st, i.op == "tld4", mods, args)?,
            "wmma" => self.wmma(st, mods, args)?,
            "mma" => self.mma(st, mods, args)?,
            "ldmatrix" | "stmatrix" => self.ldst_matrix(st, i.op == "stmatrix", mods, args)?,
            "movmatrix" => self.movmatrix(st, mods, args)?,
            "suld" | "sust" => self.surf(st, i.op == "sust", mods, args)?,
            "txq" | "suq" => self.tex_query(st, i.op == "suq", mods, args)?,
            _ => return unsup(""),
        })
    }

    /// `d` or `d|p`.
    fn dst_pair(&mut self, st: &mut FnState<'a>, o: &Operand<'a>) -> DResult<(Reg, Reg)> {
        match o {
            Operand::Pair(a, b) => Ok((self.dst(st, a)?, self.dst(st, b)?)),
            o => Ok((self.dst(st, o)?, SINK)),
        }
    }

    fn alu(
        &mut self,
        st: &mut FnState<'a>,
        spec: alu::AluSpec,
        args: &[Operand<'a>],
        native: Option<alu::native::Native>,
    ) -> DResult<Op> {
        let Some((first, rest)) = args.split_first() else {
            return unsup("missing operands");
        };
        let mut dst = [SINK; 2];
        let mut nd = 0;
        let firsts: Vec<&Operand<'a>> = match first {
            Operand::Pair(a, b) => vec![a, b],
            o => vec![o],
        };
        let min_d = spec.dsts.len() - spec.opt_dsts;
        if firsts.len() < min_d || firsts.len() > spec.dsts.len() {
            return unsup("destination count");
        }
        for o in firsts {
            dst[nd] = self.dst(st, o)?;
            nd += 1;
        }
        nd = spec.dsts.len();
        let mut ctx = spec.ctx;
        let mut src = [Src::Imm(0); 4];
        let mut ns = spec.srcs.len();
        if rest.len() != ns {
            return unsup(format!("expected {} source operands", ns));
        }
        if spec.imm_last {
            ns -= 1;
            match &rest[ns] {
                Operand::Imm(v) => ctx.imm = imm_bits(*v, Ty::U32) as u32,
                _ => return unsup("non-immediate lookup table"),
            }
        }
        for k in 0..ns {
            src[k] = self.src(st, &rest[k], spec.srcs[k])?;
        }
        if spec.cc_in {
            if ns >= 4 {
                return unsup("too many operands");
            }
            src[ns] = Src::Reg(st.cc());
            ns += 1;
        }
        if spec.cc_out {
            if nd >= 2 {
                return unsup("too many destinations");
            }
            dst[nd] = st.cc();
            nd += 1;
        }
        Ok(Op::Alu {
            f: spec.f,
            ctx,
            native,
            src,
            nsrc: ns as u8,
            dst,
            ndst: nd as u8,
            narrow: spec.dsts.iter().all(|t| t.bits() <= 32),
        })
    }

    fn ld(&mut self, st: &mut FnState<'a>, mods: &[&str], args: &[Operand<'a>]) -> DResult<Op> {
        let space = space_of(mods).unwrap_or(Space::Generic);
        let ty = ty_of(mods).ok_or(DErr::Unsupported("ld type".into()))?;
        if ty.size() > 8 {
            return unsup("128-bit load");
        }
        let (space, addr) = self.addr(st, arg(args, 1)?, space)?;
        let mut d = [SINK; 4];
        let n = match arg(args, 0)? {
            Operand::Vec(ds) => {
                if ds.len() > 4 {
                    return unsup("8-element vector");
                }
                for (k, o) in ds.iter().enumerate() {
                    d[k] = self.dst(st, o)?;
                }
                ds.len()
            }
            o => {
                d[0] = self.dst(st, o)?;
                1
            }
        };
        Ok(Op::Ld {
            space,
            size: ty.size() as u8,
            sext: ty.is_signed(),
            n: n as u8,
            d,
            addr,
            volatile: has(mods, "volatile"),
        })
    }

    fn atom(
        &mut self,
        st: &mut FnState<'a>,
        red: bool,
        mods: &[&str],
        args: &[Operand<'a>],
    ) -> DResult<Op> {
        let space = space_of(mods).unwrap_or(Space::Generic);
        if vec_of(mods).is_some() {
            return unsup("vector atomics");
        }
        let ty = ty_of(mods).ok_or(DErr::Unsupported("atom type".into()))?;
        let op = if has(mods, "add") {
            if ty == Ty::F32 || ty == Ty::F64 {
                AtomOp::FAdd
            } else if ty.is_float() {
                return unsup("half-precision atomics");
            } else {
                AtomOp::Add
            }
        } else if has(mods, "min") {
            AtomOp::Min
        } else if has(mods, "max") {
            AtomOp::Max
        } else if has(mods, "exch") {
            AtomOp::Exch
        } else if has(mods, "cas") {
            AtomOp::Cas
        } else if has(mods, "and") {
            AtomOp::And
        } else if has(mods, "or") {
            AtomOp::Or
        } else if has(mods, "xor") {
            AtomOp::Xor
        } else if has(mods, "inc") {
            AtomOp::Inc
        } else if has(mods, "dec") {
            AtomOp::Dec
        } else {
            return unsup("atomic operation");
        };
        if !matches!(ty.size(), 4 | 8)
            || (ty.is_float() && !matches!(op, AtomOp::FAdd | AtomOp::Exch | AtomOp::Cas))
        {
            return unsup("atomic type");
        }
        let (d, rest) = if red {
            (SINK, args)
        } else {
            (self.dst(st, arg(args, 0)?)?, args.get(1..).unwrap_or(&[]))
        };
        let (space, addr) = self.addr(st, arg(rest, 0)?, space)?;
        if !matches!(space, Space::Global | Space::Shared | Space::Generic) {
            return unsup("atomic state space");
        }
        let b = self.src(st, arg(rest, 1)?, ty)?;
        let c = if op == AtomOp::Cas {
            self.src(st, arg(rest, 2)?, ty)?
        } else {
            Src::Imm(0)
        };
        Ok(Op::Atom {
            space,
            op,
            size: ty.size() as u8,
            signed: ty.is_signed(),
            d,
            addr,
            b,
            c,
        })
    }

    fn call(&mut self, st: &mut FnState<'a>, args: &[Operand<'a>]) -> DResult<Op> {
        let mut it = args.iter().peekable();
        let rets: &[Operand<'a>] = match it.peek() {
            Some(Operand::List(v)) => {
                it.next();
                v
            }
            _ => &[],
        };
        let (fname, pos) = match it.next() {
            Some(Operand::Name { name, pos, .. }) => (*name, *pos),
            _ => return unsup("call target"),
        };
        let actuals: &[Operand<'a>] = match it.next() {
            Some(Operand::List(v)) => v,
            _ => &[],
        };
        let frame_of = |st: &FnState<'a>, o: &Operand<'a>| -> Option<u32> {
            match o {
                Operand::Name {
                    name, offset: 0, ..
                } => match st.lookup(name) {
                    Some(Local::Frame(off)) => Some(off),
                    _ => None,
                },
                _ => None,
            }
        };
        let (func, target) = match self.func_names.get(fname) {
            Some(f) => (Some(*f), Src::Imm(FUNC_WINDOW + *f as u64)),
            None => match st.lookup(fname) {
                Some(Local::Reg(d)) => (None, Src::Reg(st.alloc(d)?)),
                _ => {
                    return Err(DErr::Parse(perr(
                        pos,
                        format!("a declared function, not `{fname}`"),
                    )));
                }
            },
        };
        let formals = func.map(|f| self.funcs[f as usize].params.clone());
        let mut copies = Vec::new();
        for (k, o) in actuals.iter().enumerate() {
            let size = formals.as_ref().and_then(|p| p.get(k)).map_or(8, |p| p.1);
            match frame_of(st, o) {
                Some(from) => copies.push(ArgCopy::Frame { from, size }),
                None => {
                    let ty = match size {
                        1 => Ty::B8,
                        2 => Ty::B16,
                        4 => Ty::B32,
                        _ => Ty::B64,
                    };
                    copies.push(ArgCopy::Value {
                        src: self.src(st, o, ty)?,
                        size: size.min(8),
                    });
                }
            }
        }
        let mut rs = Vec::new();
        for o in rets {
            match (frame_of(st, o), o) {
                (Some(to), Operand::Name { name, .. }) => {
                    let size = st.frame_sizes.get(name).copied().unwrap_or(8);
                    rs.push((to, size));
                }
                _ => return unsup("call return into a register"),
            }
        }
        if let Some(f) = func {
            let callee = &self.funcs[f as usize];
            if let Some(which) = callee.intrinsic {
                return Ok(Op::Intrinsic {
                    which,
                    args: copies.into_boxed_slice(),
                    ret: rs.first().map(|r| r.0),
                });
            }
            if callee.is_kernel {
                return unsup("call of a kernel");
            }
            if actuals.len() != callee.params.len() || rets.len() > callee.rets.len() {
                return unsup(format!("call of `{fname}` with a different signature"));
            }
            if !st.callees.contains(&f) {
                st.callees.push(f);
            }
        } else {
            st.indirect_calls = true;
        }
        Ok(Op::Call {
            func,
            target,
            args: copies.into_boxed_slice(),
            rets: rs.into_boxed_slice(),
        })
    }

    /// `mbarrier.*` (the object in shared memory; the cluster scope is the CTA's, one CTA per
    /// cluster here), with the transaction counts bulk copies complete.
    fn mbarrier(
        &mut self,
        st: &mut FnState<'a>,
        mods: &[&str],
        args: &[Operand<'a>],
    ) -> DResult<Op> {
        let space = space_of(mods).unwrap_or(Space::Generic);
        let op = match mods.first().copied() {
            Some("init") => MbarOp::Init,
            Some("arrive") if has(mods, "expect_tx") => MbarOp::ArriveExpectTx,
            Some("arrive_drop") if has(mods, "expect_tx") => {
                return unsup("mbarrier.arrive_drop.expect_tx");
            }
            Some("expect_tx") => MbarOp::ExpectTx,
            Some("complete_tx") => MbarOp::CompleteTx,
            Some("arrive") => MbarOp::Arrive { drop: false },
            Some("arrive_drop") => MbarOp::Arrive { drop: true },
            Some("test_wait" | "try_wait") => MbarOp::Wait {
                parity: has(mods, "parity"),
            },
            Some("pending_count") => MbarOp::PendingCount,
            Some("inval") => MbarOp::Inval,
            _ => return unsup("mbarrier operation"),
        };
        let none = Addr {
            base: Src::Imm(0),
            off: 0,
        };
        Ok(match op {
            MbarOp::Init | MbarOp::ExpectTx | MbarOp::CompleteTx => {
                let (space, addr) = self.addr(st, arg(args, 0)?, space)?;
                let a = self.src(st, arg(args, 1)?, Ty::U32)?;
                Op::Mbar {
                    op,
                    space,
                    d: SINK,
                    addr,
                    a,
                }
            }
            MbarOp::Inval => {
                let (space, addr) = self.addr(st, arg(args, 0)?, space)?;
                Op::Mbar {
                    op,
                    space,
                    d: SINK,
                    addr,
                    a: Src::Imm(0),
                }
            }
            MbarOp::Arrive { .. } | MbarOp::ArriveExpectTx => {
                let d = self.dst(st, arg(args, 0)?)?;
                let (space, addr) = self.addr(st, arg(args, 1)?, space)?;
                // The arrival count (one if absent), or the transaction bytes (required).
                let a = match args.get(2) {
                    Some(o) => self.src(st, o, Ty::U32)?,
                    None if op == MbarOp::ArriveExpectTx => return unsup("missing operand 3"),
                    None => Src::Imm(1),
                };
                Op::Mbar {
                    op,
                    space,
                    d,
                    addr,
                    a,
                }
            }
            MbarOp::Wait { .. } => {
                let d = self.dst(st, arg(args, 0)?)?;
                let (space, addr) = self.addr(st, arg(args, 1)?, space)?;
                let a = self.src(st, arg(args, 2)?, Ty::B64)?;
                Op::Mbar {
                    op,
                    space,
                    d,
                    addr,
                    a,
                }
            }
            MbarOp::PendingCount => Op::Mbar {
                op,
                space,
                d: self.dst(st, arg(args, 0)?)?,
                addr: none,
                a: self.src(st, arg(args, 1)?, Ty::B64)?,
            },
            MbarOp::CpAsyncArrive { .. } => return unsup("mbarrier operation"),
        })
    }

    fn bar(&mut self, st: &mut FnState<'a>, mods: &[&str], args: &[Operand<'a>]) -> DResult<Op> {
        if has(mods, "warp") {
            // The interpreter runs a warp's lanes in lockstep: nothing to do. The compiler
            // refuses the function (see `Function::warp_sync`).
            st.warp_sync = true;
            return Ok(Op::Nop);
        }
        if has(mods, "cluster") {
            return if has(mods, "arrive") {
                Ok(Op::ClusterBar { wait: false })
            } else if has(mods, "wait") {
                Ok(Op::ClusterBar { wait: true })
            } else {
                unsup("cluster barrier form")
            };
        }
        let kind = if has(mods, "red") {
            if has(mods, "popc") {
                BarKind::RedPopc
            } else if has(mods, "and") {
                BarKind::RedAnd
            } else if has(mods, "or") {
                BarKind::RedOr
            } else {
                return unsup("bar.red operation");
            }
        } else if has(mods, "arrive") {
            BarKind::Arrive
        } else if has(mods, "sync") || mods.is_empty() || mods == ["cta"] || has(mods, "aligned") {
            BarKind::Sync
        } else {
            return unsup("barrier form");
        };
        let mut rest = args;
        let mut d = SINK;
        if matches!(kind, BarKind::RedPopc | BarKind::RedAnd | BarKind::RedOr) {
            d = self.dst(st, arg(args, 0)?)?;
            rest = &args[1..];
        }
        let id = match rest.first() {
            Some(o) => self.src(st, o, Ty::U32)?,
            None => Src::Imm(0),
        };
        let (count, pred) = match kind {
            BarKind::Sync | BarKind::Arrive => (
                match rest.get(1) {
                    Some(o) => Some(self.src(st, o, Ty::U32)?),
                    None => None,
                },
                Src::Imm(0),
            ),
            _ => match rest.len() {
                2 => (None, self.src(st, &rest[1], Ty::Pred)?),
                3 => (
                    Some(self.src(st, &rest[1], Ty::U32)?),
                    self.src(st, &rest[2], Ty::Pred)?,
                ),
                _ => return unsup("bar.red operands"),
            },
        };
        Ok(Op::Bar {
            kind,
            id,
            count,
            pred,
            d,
        })
    }
}
