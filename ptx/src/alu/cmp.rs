// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Comparisons: `setp` and `set` for every integer and float lane type, with the ordered and
//! unordered comparison operators and the optional boolean combination with a predicate.

use super::{
    AluCtx, AluFn, AluSpec, Lanes, Mods,
    fp::{Bfloat, Double, Half, Load, Single},
    lanes, need, spec,
};
use crate::types::Ty;

// Comparison codes.
pub(crate) const C_EQ: u8 = 0;
pub(crate) const C_NE: u8 = 1;
pub(crate) const C_LT: u8 = 2;
pub(crate) const C_LE: u8 = 3;
pub(crate) const C_GT: u8 = 4;
pub(crate) const C_GE: u8 = 5;
pub(crate) const C_EQU: u8 = 6;
pub(crate) const C_NEU: u8 = 7;
pub(crate) const C_LTU: u8 = 8;
pub(crate) const C_LEU: u8 = 9;
pub(crate) const C_GTU: u8 = 10;
pub(crate) const C_GEU: u8 = 11;
pub(crate) const C_NUM: u8 = 12;
pub(crate) const C_NAN: u8 = 13;

#[inline(always)]
fn cmp<T: PartialOrd, const OP: u8>(a: T, b: T) -> bool {
    #[allow(clippy::eq_op)]
    let unord = a.partial_cmp(&b).is_none();
    match OP {
        C_EQ => a == b,
        C_NE => !unord && a != b,
        C_LT => a < b,
        C_LE => a <= b,
        C_GT => a > b,
        C_GE => a >= b,
        C_EQU => unord || a == b,
        C_NEU => a != b,
        C_LTU => unord || a < b,
        C_LEU => unord || a <= b,
        C_GTU => unord || a > b,
        C_GEU => unord || a >= b,
        C_NUM => !unord,
        _ => unord,
    }
}

#[inline(always)]
fn combine(r: bool, imm: u32, c: u64) -> (bool, bool) {
    let c = c & 1 != 0;
    match imm {
        0 => (r, !r),
        1 => (r && c, !r && c),
        2 => (r || c, !r || c),
        _ => (r ^ c, !r ^ c),
    }
}

fn setp_fn<L: Load, const OP: u8>(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    let (a, b, p) = (i[0], i[1], i[2]);
    for l in 0..lanes(c) {
        let r = cmp::<L::C, OP>(L::load(c, a[l]), L::load(c, b[l]));
        let (x, y) = combine(r, c.imm, p[l]);
        o[0][l] = x as u64;
        o[1][l] = y as u64;
    }
}

/// `set`: like setp but writes 0xffffffff / 1.0f (or 0).
fn set_fn<L: Load, const OP: u8>(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    let (a, b, p) = (i[0], i[1], i[2]);
    let one = if c.dty == Ty::F32 {
        1.0f32.to_bits() as u64
    } else {
        0xffff_ffff
    };
    for l in 0..lanes(c) {
        let r = cmp::<L::C, OP>(L::load(c, a[l]), L::load(c, b[l]));
        o[0][l] = if combine(r, c.imm, p[l]).0 { one } else { 0 };
    }
}

macro_rules! by_cmp {
    ($f:ident, $l:ty, $op:expr) => {
        match $op {
            C_EQ => $f::<$l, C_EQ> as AluFn,
            C_NE => $f::<$l, C_NE>,
            C_LT => $f::<$l, C_LT>,
            C_LE => $f::<$l, C_LE>,
            C_GT => $f::<$l, C_GT>,
            C_GE => $f::<$l, C_GE>,
            C_EQU => $f::<$l, C_EQU>,
            C_NEU => $f::<$l, C_NEU>,
            C_LTU => $f::<$l, C_LTU>,
            C_LEU => $f::<$l, C_LEU>,
            C_GTU => $f::<$l, C_GTU>,
            C_GEU => $f::<$l, C_GEU>,
            C_NUM => $f::<$l, C_NUM>,
            _ => $f::<$l, C_NAN>,
        }
    };
}

macro_rules! by_load {
    ($f:ident, $ty:expr, $op:expr) => {
        match $ty {
            Ty::U8 | Ty::B8 => Some(by_cmp!($f, u8, $op)),
            Ty::S8 => Some(by_cmp!($f, i8, $op)),
            Ty::U16 | Ty::B16 => Some(by_cmp!($f, u16, $op)),
            Ty::S16 => Some(by_cmp!($f, i16, $op)),
            Ty::U32 | Ty::B32 => Some(by_cmp!($f, u32, $op)),
            Ty::S32 => Some(by_cmp!($f, i32, $op)),
            Ty::U64 | Ty::B64 => Some(by_cmp!($f, u64, $op)),
            Ty::S64 => Some(by_cmp!($f, i64, $op)),
            Ty::F32 => Some(by_cmp!($f, Single, $op)),
            Ty::F64 => Some(by_cmp!($f, Double, $op)),
            Ty::F16 => Some(by_cmp!($f, Half, $op)),
            Ty::BF16 => Some(by_cmp!($f, Bfloat, $op)),
            _ => None,
        }
    };
}

pub(super) fn cmp_code(w: &str, ty: Ty) -> Option<(u8, Ty)> {
    let unsigned = |t: Ty| match t {
        Ty::S8 | Ty::B8 => Ty::U8,
        Ty::S16 | Ty::B16 => Ty::U16,
        Ty::S32 | Ty::B32 => Ty::U32,
        Ty::S64 | Ty::B64 => Ty::U64,
        t => t,
    };
    Some(match w {
        "eq" => (C_EQ, ty),
        "ne" => (C_NE, ty),
        "lt" => (C_LT, ty),
        "le" => (C_LE, ty),
        "gt" => (C_GT, ty),
        "ge" => (C_GE, ty),
        "lo" => (C_LT, unsigned(ty)),
        "ls" => (C_LE, unsigned(ty)),
        "hi" => (C_GT, unsigned(ty)),
        "hs" => (C_GE, unsigned(ty)),
        "equ" => (C_EQU, ty),
        "neu" => (C_NEU, ty),
        "ltu" => (C_LTU, ty),
        "leu" => (C_LEU, ty),
        "gtu" => (C_GTU, ty),
        "geu" => (C_GEU, ty),
        "num" => (C_NUM, ty),
        "nan" => (C_NAN, ty),
        _ => return None,
    })
}

fn bool_code(m: &Mods<'_>) -> Option<u32> {
    if m.has("and") {
        Some(1)
    } else if m.has("or") {
        Some(2)
    } else if m.has("xor") {
        Some(3)
    } else {
        None
    }
}

/// Decodes `setp` / `set` (`op`).
pub(super) fn setp_spec(op: &str, m: &Mods<'_>) -> Result<AluSpec, String> {
    let (dt, st) = match (op, m.tys.as_slice()) {
        ("setp", [s]) => (Ty::Pred, *s),
        ("set", [d, s]) => (*d, *s),
        _ => return Err("setp types".into()),
    };
    let cw = m
        .words
        .iter()
        .find_map(|w| cmp_code(w, st))
        .ok_or("comparison operator")?;
    let (code, lt) = cw;
    let bop = bool_code(m);
    let f = if op == "setp" {
        by_load!(setp_fn, lt, code)
    } else {
        by_load!(set_fn, lt, code)
    };
    let mut ctx = m.ctx(st);
    ctx.dty = dt;
    ctx.imm = bop.unwrap_or(0);
    let mut srcs = vec![st, st];
    if bop.is_some() {
        srcs.push(Ty::Pred);
    }
    let mut s = if op == "setp" {
        let mut s = spec(need(f, op)?, ctx, &[Ty::Pred, Ty::Pred], &srcs);
        s.opt_dsts = 1;
        s
    } else {
        spec(need(f, op)?, ctx, &[dt], &srcs)
    };
    s.ctx.sty = st;
    Ok(s)
}
