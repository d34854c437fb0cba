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
    /// Values of at most 32 bits: one `I32X4` vector, lane `k` in element `k`.
    Vector,
    /// One 64-bit value per lane.
    Lanes,
}

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
            for (r, u, w) in defs(i, &uniform, &narrow) {
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
    (0..n)
        .map(|k| match (uniform[k], narrow[k]) {
            (true, _) => Form::Uniform,
            (false, true) => Form::Vector,
            (false, false) => Form::Lanes,
        })
        .collect()
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
        | Sreg::Const(_) => (true, true),
        _ => (false, false),
    }
}

/// Whether `i` computes the same values in every lane of a group from registers of these
/// forms (an instruction writing registers, reading only uniform values).
pub(super) fn uniform_inst(i: &Inst, forms: &[Form]) -> bool {
    let uniform: Vec<bool> = forms.iter().map(|f| *f == Form::Uniform).collect();
    let narrow = vec![true; forms.len()];
    let d = defs(i, &uniform, &narrow);
    !d.is_empty() && d.iter().all(|x| x.1)
}

/// Whether source `s` is uniform, and narrow.
fn src(s: &Src, uniform: &[bool], narrow: &[bool]) -> (bool, bool) {
    let reg = |r: &u32| {
        (
            uniform.get(*r as usize).copied().unwrap_or(false),
            narrow.get(*r as usize).copied().unwrap_or(false),
        )
    };
    match s {
        Src::Reg(r) => reg(r),
        Src::NotReg(r) => (reg(r).0, true),
        Src::Imm(v) => (true, *v <= u32::MAX as u64),
        Src::Sreg(sr) => sreg(*sr),
        Src::Sym(..) => (true, false),
        Src::Local(_) => (true, true),
    }
}

/// The registers instruction `i` writes: (register, uniform, narrow) for each.
fn defs(i: &Inst, uniform: &[bool], narrow: &[bool]) -> Vec<(u32, bool, bool)> {
    let s = |x: &Src| src(x, uniform, narrow);
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
            let space = match (space, &addr.base) {
                (Space::Param, Src::Local(_)) => Space::Local,
                (sp, _) => *sp,
            };
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
        Op::Surf(t) if !t.store => {
            t.d.iter()
                .take(t.n as usize)
                .map(|&r| (r, false, false))
                .collect()
        }
        _ => Vec::new(),
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
