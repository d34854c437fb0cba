// SPDX-License-Identifier: Apache-2.0 OR MIT
//! How the group code keeps each register (see [`Form`]): one value for the whole group,
//! one 4 x 32-bit vector, or one value per lane.
//!
//! The analysis is flow-insensitive: a register is uniform when every definition of it is,
//! and narrow (its values fit in 32 bits, zero-extended) when every definition is. A
//! definition is uniform when its sources and its guard are and its instruction gives every
//! thread the same result for the same inputs: not `%tid.x`, `%laneid` or the clock, not an
//! atomic, not a load from local memory (each thread has its own) or through a generic or
//! volatile address. `%tid.y` and `%tid.z` count as uniform: the group code runs only where
//! the block's x dimension is a multiple of the group (see `Lower::prologue`), so a group's
//! threads share them.
//!
//! Why that is sound: a group runs only threads at the same point, and its code has no
//! divergent control flow (a guarded branch whose lanes disagree hands the threads to the
//! scalar code). Inside the group, a uniform register therefore holds one value in every
//! lane. Where a group starts from saved registers (after a barrier), the threads may have
//! run apart before; the group code compares their uniform registers first and runs them
//! one at a time if they differ.

use crate::ir::{Inst, Op, SINK, Space, Src, Sreg};

/// How the group code holds a register.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Form {
    /// The same value in every lane: one 64-bit value.
    Uniform,
    /// Values of at most 32 bits: `HALVES` `I32X4` vectors, lane `k` in element `k % 4` of
    /// the `k / 4`-th.
    Vector,
    /// 64-bit values that step by a constant from lane to lane (see [`strides`]): lane 0's
    /// value, the others computed from it.
    Affine,
    /// One 64-bit value per lane.
    Lanes,
}

/// Strides beyond this are not tracked (a group's span must not wrap).
const MAX_STRIDE: i64 = 1 << 24;

/// The form of each register of `code`.
pub(super) fn forms(code: &[Inst], nregs: u32) -> Vec<Form> {
    let n = nregs as usize;
    // Registers never written hold zero: uniform and narrow.
    let mut uniform = vec![true; n];
    let mut narrow = vec![true; n];
    let mut changed = true;
    while changed {
        changed = false;
        for i in code {
            let guard_uniform = i
                .guard
                .is_none_or(|(g, _)| uniform.get(g as usize) == Some(&true));
            let reg = |r: u32| {
                let k = r as usize;
                (
                    uniform.get(k).copied().unwrap_or(false),
                    narrow.get(k).copied().unwrap_or(false),
                )
            };
            for (r, u, w) in defs(i, &reg) {
                let Some(k) = (r != SINK).then_some(r as usize).filter(|&k| k < n) else {
                    continue;
                };
                if uniform[k] && !(u && guard_uniform) {
                    uniform[k] = false;
                    changed = true;
                }
                if narrow[k] && !w {
                    narrow[k] = false;
                    changed = true;
                }
            }
        }
    }
    let mut f: Vec<Form> = (0..n)
        .map(|k| match (uniform[k], narrow[k]) {
            (true, _) => Form::Uniform,
            (false, true) => Form::Vector,
            (false, false) => Form::Lanes,
        })
        .collect();
    let st = strides(code, &f);
    for (k, form) in f.iter_mut().enumerate() {
        if *form == Form::Lanes && st[k].is_some() {
            *form = Form::Affine;
        }
    }
    f
}

/// A stride in the analysis: no definition seen yet, a constant, or none.
#[derive(Debug, Clone, Copy, PartialEq)]
enum St {
    Top,
    K(i64),
    Bot,
}

impl St {
    fn join(self, o: St) -> St {
        match (self, o) {
            (St::Top, x) | (x, St::Top) => x,
            (St::K(a), St::K(b)) if a == b => St::K(a),
            _ => St::Bot,
        }
    }

    fn map2(self, o: St, f: impl Fn(i64, i64) -> Option<i64>) -> St {
        match (self, o) {
            (St::Bot, _) | (_, St::Bot) => St::Bot,
            (St::Top, _) | (_, St::Top) => St::Top,
            (St::K(a), St::K(b)) => match f(a, b) {
                Some(x) if x.abs() <= MAX_STRIDE => St::K(x),
                _ => St::Bot,
            },
        }
    }
}

/// Each register's stride from lane to lane in the group code, where it has one: lane
/// `k`'s value is lane 0's plus `k` times it (modulo 2^32 for narrow registers, whose
/// arithmetic is 32 bits wide, and 2^64 for the others). `%tid.x` steps by 1 (groups are
/// consecutive threads of a row), uniform values by 0; sums, differences, products with
/// constants and shifts by constants of values with strides have strides. Widening a
/// narrow value keeps its stride only where no lane wraps; the group code checks that
/// where it widens (see `Lower::affine_inst`). Registers the group code reloads are
/// checked too, unless the group reached the barrier together.
pub(super) fn strides(code: &[Inst], forms: &[Form]) -> Vec<Option<i64>> {
    let n = forms.len();
    let mut st: Vec<St> = forms
        .iter()
        .map(|f| {
            if *f == Form::Uniform {
                St::K(0)
            } else {
                St::Top
            }
        })
        .collect();
    let mut changed = true;
    while changed {
        changed = false;
        for i in code {
            let guard_uniform = i
                .guard
                .is_none_or(|(g, _)| forms.get(g as usize) == Some(&Form::Uniform));
            let (_, dl) = super::live::uses_defs(i);
            let v = if guard_uniform && dl.len() == 1 {
                def_stride(i, &st, forms)
            } else {
                St::Bot
            };
            for d in dl {
                let Some(k) = (d != SINK).then_some(d as usize).filter(|&k| k < n) else {
                    continue;
                };
                if forms[k] == Form::Uniform {
                    continue;
                }
                let j = st[k].join(v);
                if j != st[k] {
                    st[k] = j;
                    changed = true;
                }
            }
        }
    }
    st.into_iter()
        .map(|s| match s {
            St::K(x) => Some(x),
            _ => None,
        })
        .collect()
}

fn src_stride(s: &Src, st: &[St]) -> St {
    match s {
        Src::Reg(r) => st.get(*r as usize).copied().unwrap_or(St::Bot),
        Src::Imm(_) | Src::Sym(..) | Src::Local(_) => St::K(0),
        Src::Sreg(Sreg::Tid(0)) => St::K(1),
        Src::Sreg(sr) if sreg(*sr).0 => St::K(0),
        _ => St::Bot,
    }
}

/// The stride of the value instruction `i` writes, from its sources' strides.
fn def_stride(i: &Inst, st: &[St], forms: &[Form]) -> St {
    use crate::alu::native::{IntOp, Native};
    let s = |x: &Src| src_stride(x, st);
    let imm = |x: &Src| match x {
        Src::Imm(v) => Some(*v as i64),
        _ => None,
    };
    // a * b where one side is a constant.
    let mul = |a: &Src, b: &Src| match (imm(a), imm(b)) {
        (_, Some(c)) => s(a).map2(St::K(0), |x, _| x.checked_mul(c)),
        (Some(c), _) => s(b).map2(St::K(0), |x, _| x.checked_mul(c)),
        _ => s(a).map2(s(b), |x, y| (x == 0 && y == 0).then_some(0)),
    };
    match &i.op {
        // A 32-bit mask keeps a stride modulo 2^32: for narrow registers only.
        Op::Mov { a, mask, d } => {
            let narrow = forms.get(*d as usize) == Some(&Form::Vector);
            if *mask == u64::MAX || *mask == u32::MAX as u64 && narrow {
                s(a)
            } else {
                St::Bot
            }
        }
        Op::Cvta { a, mask, .. } if *mask == u64::MAX => s(a),
        Op::Alu {
            native: Some(nat),
            ctx,
            src,
            ..
        } if !ctx.sat && !ctx.ftz => match *nat {
            Native::Int { op, bits, .. } if bits == 32 || bits == 64 => match op {
                IntOp::Add => s(&src[0]).map2(s(&src[1]), i64::checked_add),
                IntOp::Sub => s(&src[0]).map2(s(&src[1]), i64::checked_sub),
                IntOp::Neg => s(&src[0]).map2(St::K(0), |x, _| x.checked_neg()),
                IntOp::MulLo => mul(&src[0], &src[1]),
                IntOp::MadLo => mul(&src[0], &src[1]).map2(s(&src[2]), i64::checked_add),
                IntOp::Shl => match imm(&src[1]) {
                    Some(c) if (0..bits as i64).contains(&c) => {
                        s(&src[0]).map2(St::K(0), |x, _| x.checked_mul(1 << c))
                    }
                    _ => St::Bot,
                },
                _ => St::Bot,
            },
            Native::Wide { mad, bits: 32, .. } => {
                let m = mul(&src[0], &src[1]);
                if mad {
                    m.map2(s(&src[2]), i64::checked_add)
                } else {
                    m
                }
            }
            Native::CvtII { dst, src: sty } if dst.bits() >= sty.bits() => s(&src[0]),
            _ => St::Bot,
        },
        _ => St::Bot,
    }
}

/// Whether special register `s` is uniform across a group, and narrow.
pub(super) fn sreg(s: Sreg) -> (bool, bool) {
    match s {
        Sreg::Tid(0) | Sreg::Laneid | Sreg::Warpid => (false, true),
        Sreg::LanemaskEq
        | Sreg::LanemaskLe
        | Sreg::LanemaskLt
        | Sreg::LanemaskGe
        | Sreg::LanemaskGt => (false, true),
        Sreg::Tid(_)
        | Sreg::Ntid(_)
        | Sreg::Ctaid(_)
        | Sreg::Nctaid(_)
        | Sreg::Nwarpid
        | Sreg::Smid
        | Sreg::Nsmid
        | Sreg::Gridid
        | Sreg::DynamicSmem
        | Sreg::TotalSmem
        | Sreg::Clusterid(_)
        | Sreg::Nclusterid(_)
        | Sreg::ClusterCtaid(_)
        | Sreg::ClusterNctaid(_)
        | Sreg::ClusterCtarank
        | Sreg::ClusterNctarank
        | Sreg::IsExplicitCluster
        | Sreg::Const(_) => (true, true),
        _ => (false, false),
    }
}

/// Whether `i` computes the same values in every lane of a group from registers of these
/// forms (an instruction writing registers, reading only uniform values).
pub(super) fn uniform_inst(i: &Inst, forms: &[Form]) -> bool {
    let reg = |r: u32| (forms.get(r as usize) == Some(&Form::Uniform), true);
    let d = defs(i, &reg);
    !d.is_empty() && d.iter().all(|x| x.1)
}

/// Whether source `s` is uniform, and narrow; `reg` answers for registers.
fn src(s: &Src, reg: &dyn Fn(u32) -> (bool, bool)) -> (bool, bool) {
    match s {
        Src::Reg(r) => reg(*r),
        Src::NotReg(r) => (reg(*r).0, true),
        Src::Imm(v) => (true, *v <= u32::MAX as u64),
        Src::Sreg(sr) => sreg(*sr),
        Src::Sym(..) => (true, false),
        Src::Local(_) => (true, true),
    }
}

/// The registers instruction `i` writes: (register, uniform, narrow) for each.
fn defs(i: &Inst, reg: &dyn Fn(u32) -> (bool, bool)) -> Vec<(u32, bool, bool)> {
    let s = |x: &Src| src(x, reg);
    let all_uniform = |xs: &[Src]| xs.iter().all(|x| s(x).0);
    let bits_narrow = |m: u64| m <= u32::MAX as u64;
    match &i.op {
        Op::Alu {
            src: xs,
            nsrc,
            dst,
            ndst,
            narrow: w,
            ..
        } => {
            let u = all_uniform(&xs[..(*nsrc as usize).min(4)]);
            let w = *w;
            dst.iter()
                .take(*ndst as usize)
                .map(|&d| (d, u, w))
                .collect()
        }
        Op::Mov { d, a, mask } => {
            let (u, w) = s(a);
            vec![(*d, u, w || bits_narrow(*mask))]
        }
        Op::Cvta { d, a, mask, .. } => vec![(*d, s(a).0, bits_narrow(*mask))],
        Op::Pack { d, srcs, n, bits } => {
            let u = all_uniform(&srcs[..(*n as usize).min(4)]);
            vec![(*d, u, *n as u32 * *bits as u32 <= 32)]
        }
        Op::Unpack { ds, n, bits, a } => {
            let u = s(a).0;
            ds.iter()
                .take(*n as usize)
                .map(|&d| (d, u, *bits <= 32))
                .collect()
        }
        Op::Ld {
            space,
            size,
            sext,
            n,
            d,
            addr,
            volatile,
        } => {
            let space = frame_space(*space, &addr.base);
            let shared_value = matches!(
                space,
                Space::Shared | Space::Global | Space::Const | Space::Param
            );
            let u = shared_value && !volatile && s(&addr.base).0;
            let w = *size <= 4 && !sext;
            d.iter()
                .take((*n).max(1) as usize)
                .map(|&r| (r, u, w))
                .collect()
        }
        Op::Atom { d, .. } => vec![(*d, false, false)],
        Op::Tex(t) => {
            let mut v: Vec<_> = t.d.iter().map(|&r| (r, false, false)).collect();
            v.push((t.p, false, false));
            v
        }
        Op::TexQuery { d, .. } => vec![(*d, false, false)],
        Op::Surf(t) if !t.store => {
            t.d.iter()
                .take(t.n as usize)
                .map(|&r| (r, false, false))
                .collect()
        }
        _ => Vec::new(),
    }
}

/// `.param` accesses at frame offsets (a device function's parameters, call-site slots) are
/// local-memory accesses.
pub(super) fn frame_space(space: Space, base: &Src) -> Space {
    match (space, base) {
        (Space::Param, Src::Local(_)) => Space::Local,
        (s, _) => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::module::Module;

    fn kernel_forms(src: &str, name: &str) -> (Vec<Form>, Vec<Inst>) {
        let m = Module::parse(src).expect("PTX");
        let id = m.kernel(name).expect("kernel");
        let k = &m.kernels[id.0 as usize];
        let flat = super::super::inline::flatten(&m, k.func as usize).expect("flatten");
        (forms(&flat.code, flat.nregs), flat.code)
    }

    #[test]
    fn vector_add_addresses_step_by_a_word() {
        let src = include_str!("../../tests/fixtures/basic.ptx");
        let (f, code) = kernel_forms(src, "vectorAdd");
        let st = strides(&code, &f);
        // Every global access goes through an address stepping 4 bytes per lane.
        let mut n = 0;
        for i in &code {
            let base = match &i.op {
                Op::Ld {
                    space: Space::Global,
                    addr,
                    ..
                }
                | Op::St {
                    space: Space::Global,
                    addr,
                    ..
                } => addr.base,
                _ => continue,
            };
            let Src::Reg(r) = base else { panic!("address") };
            assert_eq!((f[r as usize], st[r as usize]), (Form::Affine, Some(4)));
            n += 1;
        }
        assert_eq!(n, 3);
    }

    #[test]
    fn matmul_tiles_are_uniform_rows_and_vector_columns() {
        let src = include_str!("../../tests/fixtures/basic.ptx");
        let (f, code) = kernel_forms(src, "matmul");
        // The shared-memory loads of the inner product: A's row (uniform in a group of
        // consecutive x threads) and B's column (a vector).
        let mut loads = code.iter().filter_map(|i| match &i.op {
            Op::Ld {
                space: Space::Shared,
                addr,
                d,
                ..
            } => match addr.base {
                Src::Reg(r) => Some((f[r as usize], f[d[0] as usize])),
                _ => None,
            },
            _ => None,
        });
        let (b_addr, b_val) = loads.next().expect("a load");
        let (a_addr, a_val) = loads.next().expect("a load");
        assert_eq!((b_addr, b_val), (Form::Vector, Form::Vector));
        assert_eq!((a_addr, a_val), (Form::Uniform, Form::Uniform));
    }
}
