// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Register liveness over a kernel's instructions.

use crate::ir::{Inst, Op, SINK, Src};

/// Registers live on entry to each instruction (bitsets of `nregs` bits), by backward
/// dataflow over the kernel's control flow: a barrier spills only what is live after it.
pub(super) fn live_in(code: &[Inst], nregs: u32) -> Vec<Vec<u64>> {
    let words = (nregs as usize).div_ceil(64).max(1);
    let set = |s: &mut Vec<u64>, r: u32| {
        if r < nregs {
            s[r as usize / 64] |= 1 << (r % 64);
        }
    };
    // Uses and (killing) definitions per instruction.
    let mut uses = vec![vec![0u64; words]; code.len()];
    let mut defs = vec![vec![0u64; words]; code.len()];
    for (pc, i) in code.iter().enumerate() {
        let (u, dl) = uses_defs(i);
        for r in u {
            set(&mut uses[pc], r);
        }
        if let Some((g, _)) = i.guard {
            set(&mut uses[pc], g);
        } else {
            for r in dl {
                if r != SINK {
                    set(&mut defs[pc], r);
                }
            }
        }
    }
    let succ = |pc: usize| -> [Option<usize>; 2] {
        let next = (pc + 1 < code.len()).then_some(pc + 1);
        let guarded = code[pc].guard.is_some();
        match code[pc].op {
            Op::Bra { target } => [Some(target as usize), if guarded { next } else { None }],
            Op::Exit | Op::Ret => [if guarded { next } else { None }, None],
            _ => [next, None],
        }
    };
    let mut live = vec![vec![0u64; words]; code.len()];
    let mut changed = true;
    while changed {
        changed = false;
        for pc in (0..code.len()).rev() {
            let mut out = vec![0u64; words];
            for s in succ(pc).into_iter().flatten() {
                if let Some(l) = live.get(s) {
                    for (o, x) in out.iter_mut().zip(l) {
                        *o |= x;
                    }
                }
            }
            for w in 0..words {
                let v = uses[pc][w] | (out[w] & !defs[pc][w]);
                if v != live[pc][w] {
                    live[pc][w] = v;
                    changed = true;
                }
            }
        }
    }
    live
}

/// The registers instruction `i` reads (its guard not included) and writes.
pub(super) fn uses_defs(i: &Inst) -> (Vec<u32>, Vec<u32>) {
    let mut u: Vec<u32> = Vec::new();
    let mut dl: Vec<u32> = Vec::new();
    let use_src = |u: &mut Vec<u32>, s: &Src| {
        if let Src::Reg(r) | Src::NotReg(r) = s {
            u.push(*r);
        }
    };
    match &i.op {
        Op::Alu {
            src,
            nsrc,
            dst,
            ndst,
            ..
        } => {
            src.iter()
                .take(*nsrc as usize)
                .for_each(|s| use_src(&mut u, s));
            dl.extend(dst.iter().take(*ndst as usize));
        }
        Op::Mov { d: x, a, .. } | Op::Cvta { d: x, a, .. } => {
            use_src(&mut u, a);
            dl.push(*x);
        }
        Op::Pack { d: x, srcs, n, .. } => {
            srcs.iter()
                .take(*n as usize)
                .for_each(|s| use_src(&mut u, s));
            dl.push(*x);
        }
        Op::Unpack { ds, n, a, .. } => {
            use_src(&mut u, a);
            dl.extend(ds.iter().take(*n as usize));
        }
        Op::Ld { d: ds, n, addr, .. } => {
            use_src(&mut u, &addr.base);
            dl.extend(ds.iter().take((*n).max(1) as usize));
        }
        Op::St { v, n, addr, .. } => {
            use_src(&mut u, &addr.base);
            v.iter()
                .take((*n).max(1) as usize)
                .for_each(|s| use_src(&mut u, s));
        }
        Op::Atom {
            d: x, addr, b, c, ..
        } => {
            use_src(&mut u, &addr.base);
            use_src(&mut u, b);
            use_src(&mut u, c);
            dl.push(*x);
        }
        Op::Surf(t) => {
            use_src(&mut u, &t.handle);
            t.coords.iter().for_each(|s| use_src(&mut u, s));
            if t.store {
                t.v.iter().for_each(|s| use_src(&mut u, s));
            } else {
                dl.extend(t.d.iter().take(t.n as usize).copied());
            }
        }
        Op::Tex(t) => {
            use_src(&mut u, &t.handle);
            t.coords.iter().for_each(|s| use_src(&mut u, s));
            if let Some(l) = &t.layer {
                use_src(&mut u, l);
            }
            t.lod.operands().iter().for_each(|s| use_src(&mut u, s));
            dl.extend(t.d.iter().copied());
            dl.push(t.p);
        }
        Op::TexQuery { d, handle, .. } => {
            use_src(&mut u, handle);
            dl.push(*d);
        }
        Op::Intrinsic { args, .. } => {
            for a in args.iter() {
                if let crate::ir::ArgCopy::Value { src, .. } = a {
                    use_src(&mut u, src);
                }
            }
        }
        _ => {}
    }
    (u, dl)
}

/// Registers the group code may have changed since it last loaded them from the threads'
/// slots, on entry to each instruction (bitsets of `nregs` bits): everything from the
/// kernel's start (the slots hold nothing yet), nothing right after a barrier (the group
/// resumes there by loading them), each instruction's destinations after it. A barrier or a
/// divergence stores only these: the slots hold the others already.
pub(super) fn dirty_in(code: &[Inst], nregs: u32) -> Vec<Vec<u64>> {
    let words = (nregs as usize).div_ceil(64).max(1);
    let mut dirty = vec![vec![0u64; words]; code.len()];
    if code.is_empty() {
        return dirty;
    }
    dirty[0] = vec![u64::MAX; words];
    let defs: Vec<Vec<u64>> = code
        .iter()
        .map(|i| {
            let mut d = vec![0u64; words];
            for r in uses_defs(i).1 {
                if r < nregs {
                    d[r as usize / 64] |= 1 << (r % 64);
                }
            }
            d
        })
        .collect();
    let succ = |pc: usize| -> [Option<usize>; 2] {
        let next = (pc + 1 < code.len()).then_some(pc + 1);
        let guarded = code[pc].guard.is_some();
        match code[pc].op {
            Op::Bra { target } => [Some(target as usize), if guarded { next } else { None }],
            // A barrier ends the round; the group resumes after it with clean registers
            // (unless its guard failed and it fell through).
            Op::Exit | Op::Ret | Op::Bar { .. } => [if guarded { next } else { None }, None],
            _ => [next, None],
        }
    };
    let mut changed = true;
    while changed {
        changed = false;
        for pc in 0..code.len() {
            let out: Vec<u64> = dirty[pc]
                .iter()
                .zip(&defs[pc])
                .map(|(a, b)| a | b)
                .collect();
            for s in succ(pc).into_iter().flatten() {
                let Some(d) = dirty.get_mut(s) else { continue };
                for (x, o) in d.iter_mut().zip(&out) {
                    if *x | o != *x {
                        *x |= o;
                        changed = true;
                    }
                }
            }
        }
    }
    dirty
}
