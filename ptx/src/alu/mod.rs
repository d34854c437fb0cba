// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Arithmetic, logic, comparison and conversion instructions.
//!
//! Every ALU instruction is decoded into an [`AluFn`] that computes all 32 lanes of a warp at
//! once from up to four source lane arrays into up to two destination lane arrays. Lanes that are
//! inactive are computed too and discarded by the caller, so these functions must be total: no
//! panics for any input (wrapping arithmetic, defined results for division by zero).
//!
//! The instruction families live in submodules: [`int`] (integer and bit operations),
//! [`fp`] (floating-point arithmetic and the lane value types), [`cmp`] (comparisons:
//! `setp`, `set`), [`cvt`] (conversions) and [`decode`] (the opcode table, [`lookup`]).
//! This module holds what they share: the context and spec types, modifier parsing and the
//! lane loops and macros that stamp out per-type functions.

use crate::{float::Rnd, types::Ty};

pub(crate) type Lanes = [u64; 32];
pub(crate) type AluFn = fn(&AluCtx, &[&Lanes; 4], &mut [Lanes; 2]);

/// Per-instruction parameters of an ALU function.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct AluCtx {
    pub rnd: Rnd,
    /// Round to an integral value (`.rni` ...).
    pub rint: bool,
    pub ftz: bool,
    pub sat: bool,
    /// Instruction-specific immediate: lop3 LUT, prmt mode, setp boolean op, min/max NaN mode.
    pub imm: u32,
    pub dty: Ty,
    pub sty: Ty,
    /// Lanes computed, from the first (32: all; the compiled code's helper asks for one).
    pub lanes: u8,
}

impl AluCtx {
    /// Round to nearest, no flush to zero, no saturation.
    #[inline(always)]
    fn is_plain(&self) -> bool {
        self.rnd == Rnd::Rn && !self.ftz && !self.sat
    }

    /// This context with the plain-case fields as constants the compiler can fold.
    #[inline(always)]
    fn plain(&self) -> AluCtx {
        AluCtx {
            rnd: Rnd::Rn,
            ftz: false,
            sat: false,
            ..*self
        }
    }
}

impl Default for AluCtx {
    fn default() -> Self {
        AluCtx {
            rnd: Rnd::Rn,
            rint: false,
            ftz: false,
            sat: false,
            imm: 0,
            dty: Ty::B32,
            sty: Ty::B32,
            lanes: 32,
        }
    }
}

/// How the decoder must wire an ALU instruction's operands.
#[derive(Debug, Clone)]
pub(crate) struct AluSpec {
    pub f: AluFn,
    pub ctx: AluCtx,
    /// Types of the destination operands; the last `opt_dsts` of them may be absent.
    pub dsts: Vec<Ty>,
    pub opt_dsts: usize,
    /// Types of the source operands, in operand order.
    pub srcs: Vec<Ty>,
    /// The last source is an immediate that goes into `ctx.imm` (lop3).
    pub imm_last: bool,
    /// Carry flag read as an extra, final source.
    pub cc_in: bool,
    /// Carry flag written as an extra, final destination.
    pub cc_out: bool,
}

// ---------------------------------------------------------------------------------------------
// Modifier parsing.

#[derive(Debug, Default)]
struct Mods<'a> {
    tys: Vec<Ty>,
    rnd: Option<Rnd>,
    rint: bool,
    ftz: bool,
    sat: bool,
    approx: bool,
    words: Vec<&'a str>,
}

impl<'a> Mods<'a> {
    fn parse(mods: &[&'a str]) -> Mods<'a> {
        let mut m = Mods::default();
        for &w in mods {
            if let Some(t) = Ty::parse(w) {
                m.tys.push(t);
                continue;
            }
            match w {
                "rn" => m.rnd = Some(Rnd::Rn),
                "rz" => m.rnd = Some(Rnd::Rz),
                "rm" => m.rnd = Some(Rnd::Rm),
                "rp" => m.rnd = Some(Rnd::Rp),
                "rna" => m.rnd = Some(Rnd::Rna),
                "rni" | "rzi" | "rmi" | "rpi" => {
                    m.rint = true;
                    m.rnd = Some(match w {
                        "rni" => Rnd::Rn,
                        "rzi" => Rnd::Rz,
                        "rmi" => Rnd::Rm,
                        _ => Rnd::Rp,
                    });
                }
                "ftz" => m.ftz = true,
                "sat" => m.sat = true,
                "approx" => m.approx = true,
                // Accepted and irrelevant here.
                "full" | "uni" | "sync" | "aligned" => {}
                _ => m.words.push(w),
            }
        }
        m
    }

    fn has(&self, w: &str) -> bool {
        self.words.contains(&w)
    }

    fn ty(&self) -> Result<Ty, String> {
        match self.tys.as_slice() {
            [t] => Ok(*t),
            _ => Err("exactly one type".into()),
        }
    }

    fn ctx(&self, ty: Ty) -> AluCtx {
        AluCtx {
            rnd: self.rnd.unwrap_or_default(),
            rint: self.rint,
            ftz: self.ftz,
            sat: self.sat,
            imm: 0,
            dty: ty,
            sty: ty,
            lanes: 32,
        }
    }
}

fn spec(f: AluFn, ctx: AluCtx, dsts: &[Ty], srcs: &[Ty]) -> AluSpec {
    AluSpec {
        f,
        ctx,
        dsts: dsts.to_vec(),
        opt_dsts: 0,
        srcs: srcs.to_vec(),
        imm_last: false,
        cc_in: false,
        cc_out: false,
    }
}

fn need<T>(v: Option<T>, what: &str) -> Result<T, String> {
    v.ok_or_else(|| format!("unsupported type for {what}"))
}

// ---------------------------------------------------------------------------------------------
// Lane loops.

/// Lanes an ALU function computes (at most 32).
#[inline(always)]
pub(super) fn lanes(c: &AluCtx) -> usize {
    (c.lanes as usize).min(32)
}

#[inline(always)]
fn map1(ctx: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2], f: impl Fn(u64) -> u64) {
    let a = i[0];
    for l in 0..lanes(ctx) {
        o[0][l] = f(a[l]);
    }
}

#[inline(always)]
fn map2(ctx: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2], f: impl Fn(u64, u64) -> u64) {
    let (a, b) = (i[0], i[1]);
    for l in 0..lanes(ctx) {
        o[0][l] = f(a[l], b[l]);
    }
}

#[inline(always)]
fn map3(ctx: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2], f: impl Fn(u64, u64, u64) -> u64) {
    let (a, b, c) = (i[0], i[1], i[2]);
    for l in 0..lanes(ctx) {
        o[0][l] = f(a[l], b[l], c[l]);
    }
}

#[inline(always)]
fn map4(ctx: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2], f: impl Fn(u64, u64, u64, u64) -> u64) {
    let (a, b, c, d) = (i[0], i[1], i[2], i[3]);
    for l in 0..lanes(ctx) {
        o[0][l] = f(a[l], b[l], c[l], d[l]);
    }
}

/// Expands `$m!(T, U, args)` for the integer type `$ty` (T: computation type, U: the unsigned
/// storage type of the same width); `None` for non-integer types.
macro_rules! for_int {
    ($ty:expr, $m:ident!($($args:tt)*)) => {
        match $ty {
            Ty::U8 | Ty::B8 => Some($m!(u8, u8, $($args)*)),
            Ty::S8 => Some($m!(i8, u8, $($args)*)),
            Ty::U16 | Ty::B16 => Some($m!(u16, u16, $($args)*)),
            Ty::S16 => Some($m!(i16, u16, $($args)*)),
            Ty::U32 | Ty::B32 => Some($m!(u32, u32, $($args)*)),
            Ty::S32 => Some($m!(i32, u32, $($args)*)),
            Ty::U64 | Ty::B64 => Some($m!(u64, u64, $($args)*)),
            Ty::S64 => Some($m!(i64, u64, $($args)*)),
            _ => None,
        }
    };
}

macro_rules! i1 {
    ($t:ty, $u:ty, |$c:ident, $a:ident| $e:expr) => {{
        #[allow(unused_variables, clippy::unnecessary_cast)]
        fn f($c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
            #[allow(dead_code)]
            type T = $t;
            map1($c, i, o, |x| {
                let $a = x as T;
                ($e) as $u as u64
            })
        }
        f as AluFn
    }};
}

macro_rules! i2 {
    ($t:ty, $u:ty, |$c:ident, $a:ident, $b:ident| $e:expr) => {{
        #[allow(unused_variables, clippy::unnecessary_cast)]
        fn f($c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
            #[allow(dead_code)]
            type T = $t;
            map2($c, i, o, |x, y| {
                let $a = x as T;
                let $b = y as T;
                ($e) as $u as u64
            })
        }
        f as AluFn
    }};
}

/// Second operand is a `u32` (shift amounts, bit positions).
macro_rules! i2s {
    ($t:ty, $u:ty, |$c:ident, $a:ident, $b:ident| $e:expr) => {{
        #[allow(unused_variables, clippy::unnecessary_cast)]
        fn f($c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
            #[allow(dead_code)]
            type T = $t;
            map2($c, i, o, |x, y| {
                let $a = x as T;
                let $b = y as u32;
                ($e) as $u as u64
            })
        }
        f as AluFn
    }};
}

macro_rules! i3 {
    ($t:ty, $u:ty, |$c:ident, $a:ident, $b:ident, $d:ident| $e:expr) => {{
        #[allow(unused_variables, clippy::unnecessary_cast)]
        fn f($c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
            #[allow(dead_code)]
            type T = $t;
            map3($c, i, o, |x, y, z| {
                let $a = x as T;
                let $b = y as T;
                let $d = z as T;
                ($e) as $u as u64
            })
        }
        f as AluFn
    }};
}

/// Two typed operands and two `u32` operands (bfe: a, pos, len; bfi: f, b, pos, len).
macro_rules! i_bf {
    ($t:ty, $u:ty, |$a:ident, $b:ident, $p:ident, $n:ident| $e:expr) => {{
        #[allow(unused_variables, clippy::unnecessary_cast)]
        fn f(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
            #[allow(dead_code)]
            type T = $t;
            map4(c, i, o, |w, x, y, z| {
                let $a = w as T;
                let $b = x as T;
                let $p = (y as u32) & 0xff;
                let $n = (z as u32) & 0xff;
                ($e) as $u as u64
            })
        }
        f as AluFn
    }};
}

/// Widening multiply helpers.
macro_rules! wide {
    ($t:ty, $w:ty, $wu:ty) => {{
        fn f(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
            map2(c, i, o, |x, y| {
                ((x as $t as $w).wrapping_mul(y as $t as $w)) as $wu as u64
            })
        }
        f as AluFn
    }};
}

macro_rules! wide_mad {
    ($t:ty, $w:ty, $wu:ty) => {{
        fn f(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
            map3(c, i, o, |x, y, z| {
                ((x as $t as $w).wrapping_mul(y as $t as $w)).wrapping_add(z as $wu as $w) as $wu
                    as u64
            })
        }
        f as AluFn
    }};
}

// Declared after the lane macros above, which `decode` uses.
pub(crate) mod cmp;
mod cvt;
mod decode;
mod fp;
mod fp8;
mod int;
pub(crate) mod native;
#[cfg(test)]
mod tests;

pub(crate) use decode::lookup;
pub(crate) use fp::{FMS, FNMA};
pub(crate) use fp8::f8_value;
