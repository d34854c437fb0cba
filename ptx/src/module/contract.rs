// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Floating-point contraction, as `ptxas` does it: a floating-point `mul` (f32, f64, or half
//! precision) and the `add` or `sub` that consumes its product, both without a rounding
//! modifier, become one fused multiply-add rounded once.
//!
//! The PTX ISA lets the code generator contract `mul`/`add`/`sub` written without a rounding
//! modifier (`.rn` and the directed modes forbid it), and `ptxas` does so by default
//! (`--fmad=true`): CuPy's `remainder`, `a - floor(a / b) * b` as `mul.f64` then `sub.f64`,
//! gives 3.8e-15 for `fmod(255.6, 1.2)` on a GPU and 0 when the product is rounded first.
//! Running such PTX with two roundings gives results no GPU gives.
//!
//! The pass works on the syntax tree, before decoding, so removing the `mul` shifts no
//! instruction index. It is conservative: the product register is mentioned exactly twice in
//! the whole function (the `mul`'s destination, one source of the `add`/`sub`), both
//! instructions are unguarded and in the same straight run of instructions (no label, block,
//! declaration, branch, call or return between them), and nothing between them writes the
//! `mul`'s sources. The fused instruction takes the `add`/`sub`'s place, reading the sources
//! where the product was used. A `sub` negates the addend (`p - c`, [`FMS`]) or the product
//! (`c - p`, [`FNMA`]); both negations are exact, so one rounding remains.

use std::collections::HashMap;

use crate::{
    alu::{FMS, FNMA},
    ast::{Inst, Operand, Stmt},
};

/// How far after a `mul` its consumer is looked for.
const WINDOW: usize = 64;

/// `body` with every contractible pair fused, or `None` when it has none. `reserved` are
/// names that are not plain registers of the body (parameters and return values).
pub(super) fn contract<'a>(body: &[Stmt<'a>], reserved: &[&'a str]) -> Option<Vec<Stmt<'a>>> {
    if !has_candidate(body) {
        return None;
    }
    let mut uses: HashMap<&'a str, u32> = HashMap::new();
    count_stmts(body, &mut uses);
    for r in reserved {
        *uses.entry(r).or_default() += 2;
    }
    let mut changed = false;
    let out = rewrite(body, &uses, &mut changed);
    changed.then_some(out)
}

fn has_candidate(stmts: &[Stmt<'_>]) -> bool {
    stmts.iter().any(|s| match s {
        Stmt::Inst(i) => mul_type(i).is_some(),
        Stmt::Block(b) => has_candidate(b),
        _ => false,
    })
}

fn count_stmts<'a>(stmts: &[Stmt<'a>], uses: &mut HashMap<&'a str, u32>) {
    for s in stmts {
        match s {
            Stmt::Inst(i) => {
                if let Some((g, _, _)) = i.guard {
                    *uses.entry(g).or_default() += 1;
                }
                for a in &i.args {
                    names(a, &mut |n| *uses.entry(n).or_default() += 1);
                }
            }
            Stmt::Block(b) => count_stmts(b, uses),
            _ => {}
        }
    }
}

/// Every name `o` mentions.
fn names<'a>(o: &Operand<'a>, f: &mut impl FnMut(&'a str)) {
    match o {
        Operand::Name { name, .. } => f(name),
        Operand::Not(x) | Operand::Addr(x) => names(x, f),
        Operand::Pair(a, b) => {
            names(a, f);
            names(b, f);
        }
        Operand::Bracket(v) | Operand::Vec(v) | Operand::List(v) => {
            v.iter().for_each(|x| names(x, f))
        }
        Operand::Imm(_) | Operand::Sink => {}
    }
}

fn mentions(o: &Operand<'_>, n: &str) -> bool {
    let mut hit = false;
    names(o, &mut |m| hit |= m == n);
    hit
}

/// The register an operand is, if it is a plain register (no component, no offset).
fn plain_reg<'a>(o: &Operand<'a>) -> Option<&'a str> {
    match o {
        Operand::Name {
            name,
            comp: None,
            offset: 0,
            ..
        } => Some(name),
        _ => None,
    }
}

/// The floating-point types `ptxas` contracts (`cuda_fp16.h`'s `__hmul_rn` exists to keep
/// a half-precision product from being fused).
const TYPES: [&str; 6] = ["f32", "f64", "f16", "bf16", "f16x2", "bf16x2"];

/// The modifiers of a contractible `mul`/`add`/`sub`: a type of [`TYPES`] and at most
/// `.ftz`, no rounding modifier, no `.sat`.
fn plain_mods(i: &Inst<'_>) -> Option<(&'static str, bool)> {
    if i.guard.is_some() || i.args.len() != 3 {
        return None;
    }
    let mut ty = None;
    let mut ftz = false;
    for m in &i.mods {
        match TYPES.iter().find(|t| **t == *m) {
            Some(t) if ty.is_none() => ty = Some(*t),
            Some(_) => return None,
            None if *m == "ftz" && !ftz => ftz = true,
            None => return None,
        }
    }
    Some((ty?, ftz))
}

fn mul_type(i: &Inst<'_>) -> Option<(&'static str, bool)> {
    if i.op != "mul" {
        return None;
    }
    plain_mods(i)
}

/// Whether instruction `i`, between a `mul` and its consumer, keeps the pair fusable: not
/// control flow, and not writing (its first operand) any of `srcs`.
fn transparent(i: &Inst<'_>, srcs: &[&str]) -> bool {
    if matches!(i.op, "bra" | "brx" | "call" | "ret" | "exit" | "trap") {
        return false;
    }
    match i.args.first() {
        Some(d) => !srcs.iter().any(|n| mentions(d, n)),
        None => true,
    }
}

fn rewrite<'a>(
    stmts: &[Stmt<'a>],
    uses: &HashMap<&'a str, u32>,
    changed: &mut bool,
) -> Vec<Stmt<'a>> {
    let mut out: Vec<Stmt<'a>> = stmts.to_vec();
    // Indices of `mul`s removed, applied after the scan so indices stay put during it.
    let mut dead = vec![false; out.len()];
    for k in 0..out.len() {
        if let Stmt::Block(b) = &out[k] {
            out[k] = Stmt::Block(rewrite(b, uses, changed));
            continue;
        }
        let Stmt::Inst(mul) = &out[k] else { continue };
        let Some(kind) = mul_type(mul) else { continue };
        let Some(p) = plain_reg(&mul.args[0]) else {
            continue;
        };
        if uses.get(p) != Some(&2) {
            continue;
        }
        let (a, b) = (mul.args[1].clone(), mul.args[2].clone());
        let mut srcs: Vec<&str> = Vec::new();
        names(&a, &mut |n| srcs.push(n));
        names(&b, &mut |n| srcs.push(n));
        for j in k + 1..out.len().min(k + 1 + WINDOW) {
            let Stmt::Inst(i) = &out[j] else { break };
            let uses_p = i.args.iter().skip(1).any(|o| mentions(o, p));
            if !uses_p {
                if transparent(i, &srcs) {
                    continue;
                }
                break;
            }
            // The consumer: an `add`/`sub` of the same kind with the product as a whole
            // source.
            if !matches!(i.op, "add" | "sub") || plain_mods(i) != Some(kind) {
                break;
            }
            let first = plain_reg(&i.args[1]) == Some(p);
            let second = plain_reg(&i.args[2]) == Some(p);
            let (op, c) = match (i.op, first, second) {
                ("add", true, false) => ("fma", i.args[2].clone()),
                ("add", false, true) => ("fma", i.args[1].clone()),
                ("sub", true, false) => (FMS, i.args[2].clone()),
                ("sub", false, true) => (FNMA, i.args[1].clone()),
                _ => break,
            };
            let mut mods = vec!["rn"];
            if kind.1 {
                mods.push("ftz");
            }
            mods.push(kind.0);
            let fused = Inst {
                pos: i.pos,
                guard: None,
                op,
                mods,
                args: vec![i.args[0].clone(), a, b, c],
            };
            out[j] = Stmt::Inst(fused);
            dead[k] = true;
            *changed = true;
            break;
        }
    }
    out.into_iter()
        .zip(dead)
        .filter_map(|(s, d)| (!d).then_some(s))
        .collect()
}
