// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Arithmetic, logic, comparison and conversion instructions.
//!
//! Every ALU instruction is decoded into an [`AluFn`] that computes all 32 lanes of a warp at
//! once from up to four source lane arrays into up to two destination lane arrays. Lanes that are
//! inactive are computed too and discarded by the caller, so these functions must be total: no
//! panics for any input (wrapping arithmetic, defined results for division by zero).

use crate::{
    float::{
        Fp, Rnd, add_r, bf16_to_f32, directed, div_r, f16_to_f32, f64_to_f32, f64_to_small, fma_r,
        ftz32, ftz64, mul_r, sqrt_r,
    },
    types::Ty,
};

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

// ---------------------------------------------------------------------------------------------
// Lane loops.

#[inline(always)]
fn map1(i: &[&Lanes; 4], o: &mut [Lanes; 2], f: impl Fn(u64) -> u64) {
    let a = i[0];
    for l in 0..32 {
        o[0][l] = f(a[l]);
    }
}

#[inline(always)]
fn map2(i: &[&Lanes; 4], o: &mut [Lanes; 2], f: impl Fn(u64, u64) -> u64) {
    let (a, b) = (i[0], i[1]);
    for l in 0..32 {
        o[0][l] = f(a[l], b[l]);
    }
}

#[inline(always)]
fn map3(i: &[&Lanes; 4], o: &mut [Lanes; 2], f: impl Fn(u64, u64, u64) -> u64) {
    let (a, b, c) = (i[0], i[1], i[2]);
    for l in 0..32 {
        o[0][l] = f(a[l], b[l], c[l]);
    }
}

#[inline(always)]
fn map4(i: &[&Lanes; 4], o: &mut [Lanes; 2], f: impl Fn(u64, u64, u64, u64) -> u64) {
    let (a, b, c, d) = (i[0], i[1], i[2], i[3]);
    for l in 0..32 {
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
            map1(i, o, |x| {
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
            map2(i, o, |x, y| {
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
            map2(i, o, |x, y| {
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
            map3(i, o, |x, y, z| {
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
        fn f(_: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
            #[allow(dead_code)]
            type T = $t;
            map4(i, o, |w, x, y, z| {
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
        fn f(_: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
            map2(i, o, |x, y| {
                ((x as $t as $w).wrapping_mul(y as $t as $w)) as $wu as u64
            })
        }
        f as AluFn
    }};
}

macro_rules! wide_mad {
    ($t:ty, $w:ty, $wu:ty) => {{
        fn f(_: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
            map3(i, o, |x, y, z| {
                ((x as $t as $w).wrapping_mul(y as $t as $w)).wrapping_add(z as $wu as $w) as $wu
                    as u64
            })
        }
        f as AluFn
    }};
}

// ---------------------------------------------------------------------------------------------
// Carry chains (add.cc, addc, sub.cc, subc, mad.cc, madc).

fn carry_fn<const BITS: u32, const SUB: bool, const CIN: bool>(
    _: &AluCtx,
    i: &[&Lanes; 4],
    o: &mut [Lanes; 2],
) {
    let mask = if BITS == 64 {
        u64::MAX
    } else {
        (1u64 << BITS) - 1
    };
    for l in 0..32 {
        let a = (i[0][l] & mask) as u128;
        let b = (i[1][l] & mask) as u128;
        let cin = if CIN { (i[2][l] & 1) as u128 } else { 0 };
        let (r, c) = if SUB {
            let r = a.wrapping_sub(b).wrapping_sub(cin);
            (r, (a < b + cin) as u64)
        } else {
            let s = a + b + cin;
            (s, (s >> BITS) as u64 & 1)
        };
        o[0][l] = r as u64 & mask;
        o[1][l] = c;
    }
}

/// mad{c}.{lo,hi}{.cc}: d = (a*b).{lo,hi} + c (+ carry-in from source 3).
fn mad_carry_fn<const BITS: u32, const HI: bool, const SIGNED: bool, const CIN: bool>(
    _: &AluCtx,
    i: &[&Lanes; 4],
    o: &mut [Lanes; 2],
) {
    let mask = if BITS == 64 {
        u64::MAX
    } else {
        (1u64 << BITS) - 1
    };
    for l in 0..32 {
        let (a, b) = (i[0][l] & mask, i[1][l] & mask);
        let p: u128 = if SIGNED {
            let sa = ((a << (64 - BITS)) as i64 >> (64 - BITS)) as i128;
            let sb = ((b << (64 - BITS)) as i64 >> (64 - BITS)) as i128;
            sa.wrapping_mul(sb) as u128
        } else {
            (a as u128) * (b as u128)
        };
        let part = if HI {
            (p >> BITS) as u64 & mask
        } else {
            p as u64 & mask
        };
        let cin = if CIN { i[3][l] & 1 } else { 0 };
        let s = part as u128 + (i[2][l] & mask) as u128 + cin as u128;
        o[0][l] = s as u64 & mask;
        o[1][l] = (s >> BITS) as u64 & 1;
    }
}

// ---------------------------------------------------------------------------------------------
// Bit-field helpers.

#[inline(always)]
fn low_mask(n: u32) -> u64 {
    if n >= 64 { u64::MAX } else { (1u64 << n) - 1 }
}

#[inline(always)]
fn bfe(a: u64, bits: u32, signed: bool, pos: u32, len: u32) -> u64 {
    let msb = bits - 1;
    let a = a & low_mask(bits);
    let sbit = if !signed || len == 0 {
        0
    } else {
        (a >> pos.saturating_add(len).saturating_sub(1).min(msb)) & 1
    };
    let eff = if pos > msb { 0 } else { len.min(bits - pos) };
    let field = if pos > msb {
        0
    } else {
        (a >> pos) & low_mask(eff)
    };
    let r = if sbit != 0 {
        field | !low_mask(eff)
    } else {
        field
    };
    r & low_mask(bits)
}

#[inline(always)]
fn bfi(f: u64, b: u64, bits: u32, pos: u32, len: u32) -> u64 {
    if pos >= bits {
        return b & low_mask(bits);
    }
    let eff = len.min(bits - pos);
    let m = low_mask(eff) << pos;
    ((b & !m) | ((f << pos) & m)) & low_mask(bits)
}

#[inline(always)]
fn bfind(a: u64, bits: u32, signed: bool, shiftamt: bool) -> u64 {
    let a = a & low_mask(bits);
    let v = if signed && (a >> (bits - 1)) & 1 == 1 {
        !a & low_mask(bits)
    } else {
        a
    };
    if v == 0 {
        return 0xffff_ffff;
    }
    let idx = 63 - v.leading_zeros();
    if shiftamt {
        (bits - 1 - idx) as u64
    } else {
        idx as u64
    }
}

fn prmt(a: u32, b: u32, c: u32, mode: u32) -> u32 {
    let bytes = ((b as u64) << 32) | a as u64;
    let byte = |i: u32| ((bytes >> ((i & 7) * 8)) & 0xff) as u32;
    let sel: [u32; 4] = match mode {
        0 => {
            let mut r = 0;
            for k in 0..4 {
                let s = (c >> (k * 4)) & 0xf;
                let mut v = byte(s & 7);
                if s & 8 != 0 {
                    v = if v & 0x80 != 0 { 0xff } else { 0 };
                }
                r |= v << (k * 8);
            }
            return r;
        }
        // .f4e
        1 => {
            let s = c & 3;
            [s, s + 1, s + 2, s + 3]
        }
        // .b4e (listed b0..b3)
        2 => match c & 3 {
            0 => [0, 7, 6, 5],
            1 => [1, 0, 7, 6],
            2 => [2, 1, 0, 7],
            _ => [3, 2, 1, 0],
        },
        // .rc8
        3 => [c & 3; 4],
        // .ecl
        4 => match c & 3 {
            0 => [0, 1, 2, 3],
            1 => [1, 1, 2, 3],
            2 => [2, 2, 2, 3],
            _ => [3, 3, 3, 3],
        },
        // .ecr
        5 => match c & 3 {
            0 => [0, 0, 0, 0],
            1 => [0, 1, 1, 1],
            2 => [0, 1, 2, 2],
            _ => [0, 1, 2, 3],
        },
        // .rc16
        _ => match c & 1 {
            0 => [0, 1, 0, 1],
            _ => [2, 3, 2, 3],
        },
    };
    sel.iter()
        .enumerate()
        .fold(0, |r, (k, &s)| r | (byte(s) << (k * 8)))
}

fn lop3(a: u64, b: u64, c: u64, lut: u32) -> u64 {
    let mut r = 0;
    for k in 0..8 {
        if lut >> k & 1 != 0 {
            let x = if k & 4 != 0 { a } else { !a };
            let y = if k & 2 != 0 { b } else { !b };
            let z = if k & 1 != 0 { c } else { !c };
            r |= x & y & z;
        }
    }
    r
}

// ---------------------------------------------------------------------------------------------
// Typed loads for comparisons and floating point.

/// A lane value type: how a register's bits are read and written.
pub(crate) trait Load {
    type C: Copy + PartialOrd;
    fn load(c: &AluCtx, x: u64) -> Self::C;
}

macro_rules! load_int {
    ($($t:ty),*) => {$(
        impl Load for $t {
            type C = $t;
            #[inline(always)]
            fn load(_: &AluCtx, x: u64) -> $t {
                x as $t
            }
        }
    )*};
}
load_int!(u8, u16, u32, u64, i8, i16, i32, i64);

/// f32 registers.
pub(crate) struct Single;
/// f64 registers.
pub(crate) struct Double;
/// f16 registers (computed in f32).
pub(crate) struct Half;
/// bf16 registers (computed in f32).
pub(crate) struct Bfloat;

/// Floating-point lane types.
pub(crate) trait FStore: Load<C: FMath> {
    fn store(c: &AluCtx, v: Self::C) -> u64;
    /// Whether directed rounding can be done exactly in `C`.
    const EXACT: bool;
}

impl Load for Single {
    type C = f32;
    #[inline(always)]
    fn load(c: &AluCtx, x: u64) -> f32 {
        let v = f32::from_bits(x as u32);
        if c.ftz { ftz32(v) } else { v }
    }
}
impl FStore for Single {
    const EXACT: bool = true;
    #[inline(always)]
    fn store(c: &AluCtx, v: f32) -> u64 {
        let v = if c.sat { sat(v) } else { v };
        let v = if c.ftz { ftz32(v) } else { v };
        v.to_bits() as u64
    }
}
impl Load for Double {
    type C = f64;
    #[inline(always)]
    fn load(c: &AluCtx, x: u64) -> f64 {
        let v = f64::from_bits(x);
        if c.ftz { ftz64(v) } else { v }
    }
}
impl FStore for Double {
    const EXACT: bool = true;
    #[inline(always)]
    fn store(c: &AluCtx, v: f64) -> u64 {
        let v = if c.sat { sat(v) } else { v };
        v.to_bits()
    }
}
impl Load for Half {
    type C = f32;
    #[inline(always)]
    fn load(_: &AluCtx, x: u64) -> f32 {
        f16_to_f32(x as u16)
    }
}
impl FStore for Half {
    const EXACT: bool = false;
    #[inline(always)]
    fn store(c: &AluCtx, v: f32) -> u64 {
        let v = if c.sat { sat(v) } else { v };
        f64_to_small(v as f64, c.rnd, 5, 10) as u64
    }
}
impl Load for Bfloat {
    type C = f32;
    #[inline(always)]
    fn load(_: &AluCtx, x: u64) -> f32 {
        bf16_to_f32(x as u16)
    }
}
impl FStore for Bfloat {
    const EXACT: bool = false;
    #[inline(always)]
    fn store(c: &AluCtx, v: f32) -> u64 {
        let v = if c.sat { sat(v) } else { v };
        f64_to_small(v as f64, c.rnd, 8, 7) as u64
    }
}

fn sat<F: FMath>(v: F) -> F {
    if v.is_nan() || v < F::ZERO {
        F::ZERO
    } else if v > F::ONE {
        F::ONE
    } else {
        v
    }
}

/// Math on f32/f64.
pub(crate) trait FMath: Fp {
    const ONE: Self;
    fn abs(self) -> Self;
    fn to_f64(self) -> f64;
    fn from_f64(v: f64) -> Self;
    fn exp2(self) -> Self;
    fn log2(self) -> Self;
    fn sin(self) -> Self;
    fn cos(self) -> Self;
    fn tanh(self) -> Self;
    fn sign_bit(self) -> bool;
    fn copysign(self, s: Self) -> Self;
    fn canonical_nan() -> Self;
    fn is_subnormal(self) -> bool;
    fn is_normal(self) -> bool;
    fn is_infinite(self) -> bool;
    fn round_int(self, rnd: Rnd) -> Self;
    fn fma_rn(a: Self, b: Self, c: Self) -> Self;
}

macro_rules! impl_fmath {
    ($t:ty, $nan:expr, $fma:path) => {
        impl FMath for $t {
            #[inline(always)]
            fn fma_rn(a: Self, b: Self, c: Self) -> Self {
                $fma(a, b, c)
            }
            const ONE: Self = 1.0;
            #[inline(always)]
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            fn exp2(self) -> Self {
                <$t>::exp2(self)
            }
            fn log2(self) -> Self {
                <$t>::log2(self)
            }
            fn sin(self) -> Self {
                <$t>::sin(self)
            }
            fn cos(self) -> Self {
                <$t>::cos(self)
            }
            fn tanh(self) -> Self {
                <$t>::tanh(self)
            }
            #[inline(always)]
            fn sign_bit(self) -> bool {
                self.is_sign_negative()
            }
            #[inline(always)]
            fn copysign(self, s: Self) -> Self {
                <$t>::copysign(self, s)
            }
            fn canonical_nan() -> Self {
                <$t>::from_bits($nan)
            }
            fn is_subnormal(self) -> bool {
                <$t>::is_subnormal(self)
            }
            fn is_normal(self) -> bool {
                <$t>::is_normal(self)
            }
            fn is_infinite(self) -> bool {
                <$t>::is_infinite(self)
            }
            fn round_int(self, rnd: Rnd) -> Self {
                match rnd {
                    Rnd::Rn => self.round_ties_even(),
                    Rnd::Rna => self.round(),
                    Rnd::Rz => self.trunc(),
                    Rnd::Rm => self.floor(),
                    Rnd::Rp => self.ceil(),
                }
            }
        }
    };
}
impl_fmath!(f32, 0x7fff_ffff, crate::float::fma32);
impl_fmath!(f64, 0x7fff_ffff_ffff_ffff, f64::mul_add);

// Floating-point operation codes (const generic parameters).
const F_ADD: u8 = 0;
const F_SUB: u8 = 1;
const F_MUL: u8 = 2;
const F_DIV: u8 = 3;
const F_MIN: u8 = 4;
const F_MAX: u8 = 5;
const F_COPYSIGN: u8 = 6;
const F_DIV_APPROX: u8 = 7;

const U_ABS: u8 = 0;
const U_NEG: u8 = 1;
const U_SQRT: u8 = 2;
const U_RSQRT: u8 = 3;
const U_RCP: u8 = 4;
const U_SIN: u8 = 5;
const U_COS: u8 = 6;
const U_LG2: u8 = 7;
const U_EX2: u8 = 8;
const U_TANH: u8 = 9;
const U_RCP_APPROX: u8 = 10;
const U_SQRT_APPROX: u8 = 11;

#[inline(always)]
fn fop2<F: FMath, const OP: u8>(exact: bool, c: &AluCtx, a: F, b: F) -> F {
    let rnd = if exact { c.rnd } else { Rnd::Rn };
    match OP {
        F_ADD => add_r(a, b, rnd),
        F_SUB => add_r(a, -b, rnd),
        F_MUL => mul_r(a, b, rnd),
        F_DIV => div_r(a, b, rnd),
        F_DIV_APPROX => a / b,
        F_MIN | F_MAX => {
            if a.is_nan() || b.is_nan() {
                if c.imm == 1 || (a.is_nan() && b.is_nan()) {
                    F::canonical_nan()
                } else if a.is_nan() {
                    b
                } else {
                    a
                }
            } else if a == b {
                // -0 < +0.
                if (OP == F_MIN) == a.sign_bit() { a } else { b }
            } else if (a < b) == (OP == F_MIN) {
                a
            } else {
                b
            }
        }
        // copysign d, a, b: magnitude of b, sign of a.
        _ => b.copysign(a),
    }
}

fn fbin<S: FStore, const OP: u8>(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    if c.is_plain() {
        fbin_impl::<S, OP>(&c.plain(), i, o)
    } else {
        fbin_impl::<S, OP>(c, i, o)
    }
}

#[inline(always)]
fn fbin_impl<S: FStore, const OP: u8>(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    map2(i, o, |x, y| {
        S::store(
            c,
            fop2::<S::C, OP>(S::EXACT, c, S::load(c, x), S::load(c, y)),
        )
    })
}

fn fbin_x2<S: FStore, const OP: u8>(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    map2(i, o, |x, y| {
        let lo = S::store(c, fop2::<S::C, OP>(false, c, S::load(c, x), S::load(c, y)));
        let hi = S::store(
            c,
            fop2::<S::C, OP>(false, c, S::load(c, x >> 16), S::load(c, y >> 16)),
        );
        (hi & 0xffff) << 16 | (lo & 0xffff)
    })
}

#[inline(always)]
fn fop1<F: FMath, const OP: u8>(exact: bool, c: &AluCtx, a: F) -> F {
    let rnd = if exact { c.rnd } else { Rnd::Rn };
    match OP {
        U_ABS => a.abs(),
        U_NEG => -a,
        U_SQRT => sqrt_r(a, rnd),
        U_SQRT_APPROX => a.sqrt(),
        U_RSQRT => F::ONE / a.sqrt(),
        U_RCP => div_r(F::ONE, a, rnd),
        U_RCP_APPROX => F::ONE / a,
        U_SIN => a.sin(),
        U_COS => a.cos(),
        U_LG2 => a.log2(),
        U_EX2 => a.exp2(),
        _ => a.tanh(),
    }
}

fn fun<S: FStore, const OP: u8>(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    map1(i, o, |x| {
        S::store(c, fop1::<S::C, OP>(S::EXACT, c, S::load(c, x)))
    })
}

fn fun_x2<S: FStore, const OP: u8>(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    map1(i, o, |x| {
        let lo = S::store(c, fop1::<S::C, OP>(false, c, S::load(c, x)));
        let hi = S::store(c, fop1::<S::C, OP>(false, c, S::load(c, x >> 16)));
        (hi & 0xffff) << 16 | (lo & 0xffff)
    })
}

fn ffma<S: FStore>(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    if S::EXACT && c.is_plain() {
        // The common case: round to nearest without flush or saturation (constant-folded).
        let c = &c.plain();
        map3(i, o, |x, y, z| {
            S::store(c, S::C::fma_rn(S::load(c, x), S::load(c, y), S::load(c, z)))
        })
    } else {
        map3(i, o, |x, y, z| {
            let (a, b, d) = (S::load(c, x), S::load(c, y), S::load(c, z));
            let r = if S::EXACT {
                fma_r(a, b, d, c.rnd)
            } else {
                S::C::from_f64(a.to_f64().mul_add(b.to_f64(), d.to_f64()))
            };
            S::store(c, r)
        })
    }
}

fn ffma_x2<S: FStore>(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    map3(i, o, |x, y, z| {
        let h = |s: u32| {
            let (a, b, d) = (S::load(c, x >> s), S::load(c, y >> s), S::load(c, z >> s));
            S::store(
                c,
                S::C::from_f64(a.to_f64().mul_add(b.to_f64(), d.to_f64())),
            ) & 0xffff
        };
        h(16) << 16 | h(0)
    })
}

// Comparison codes.
const C_EQ: u8 = 0;
const C_NE: u8 = 1;
const C_LT: u8 = 2;
const C_LE: u8 = 3;
const C_GT: u8 = 4;
const C_GE: u8 = 5;
const C_EQU: u8 = 6;
const C_NEU: u8 = 7;
const C_LTU: u8 = 8;
const C_LEU: u8 = 9;
const C_GTU: u8 = 10;
const C_GEU: u8 = 11;
const C_NUM: u8 = 12;
const C_NAN: u8 = 13;

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
    for l in 0..32 {
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
    for l in 0..32 {
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

fn cmp_code(w: &str, ty: Ty) -> Option<(u8, Ty)> {
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

// ---------------------------------------------------------------------------------------------
// Conversions.

/// Integer value of a register read as `ty` (sign- or zero-extended).
#[inline(always)]
fn int_in(x: u64, ty: Ty) -> i128 {
    match ty {
        Ty::S8 => x as i8 as i128,
        Ty::S16 => x as i16 as i128,
        Ty::S32 => x as i32 as i128,
        Ty::S64 => x as i64 as i128,
        t => (x & t.mask()) as i128,
    }
}

#[inline(always)]
fn int_range(ty: Ty) -> (i128, i128) {
    let bits = ty.bits();
    if ty.is_signed() {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    }
}

#[inline(always)]
fn float_in(c: &AluCtx, x: u64, ty: Ty) -> f64 {
    match ty {
        Ty::F16 => f16_to_f32(x as u16) as f64,
        Ty::BF16 => bf16_to_f32(x as u16) as f64,
        Ty::F32 => Single::load(c, x) as f64,
        _ => f64::from_bits(x),
    }
}

/// Rounds the exact value `v` (an f64 or an integer) into float type `ty`.
fn float_out(c: &AluCtx, v: f64, ty: Ty, rnd: Rnd) -> u64 {
    match ty {
        Ty::F16 => f64_to_small(if c.sat { sat(v) } else { v }, rnd, 5, 10) as u64,
        Ty::BF16 => f64_to_small(if c.sat { sat(v) } else { v }, rnd, 8, 7) as u64,
        Ty::F32 => Single::store(c, f64_to_f32(v, rnd)),
        _ => Double::store(c, v),
    }
}

fn int_to_f64(v: i128, rnd: Rnd) -> f64 {
    let r = v as f64;
    if rnd == Rnd::Rn {
        return r;
    }
    let back = r as i128;
    let err = (v > back) as i32 - (v < back) as i32;
    directed(r, err, rnd)
}

fn cvt_ii(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    let (lo, hi) = int_range(c.dty);
    let mask = c.dty.mask();
    map1(i, o, |x| {
        let v = int_in(x, c.sty);
        let v = if c.sat { v.clamp(lo, hi) } else { v };
        v as u64 & mask
    })
}

fn cvt_if(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    map1(i, o, |x| {
        let v = int_in(x, c.sty);
        match c.dty {
            Ty::F64 => Double::store(c, int_to_f64(v, c.rnd)),
            Ty::F32 => {
                // Exact integer -> f32 rounding: i64 values need more than f64's 53 bits.
                let r = v as f32;
                let back = if r.is_finite() { r as i128 } else { v };
                let err = (v > back) as i32 - (v < back) as i32;
                Single::store(c, directed(r, err, c.rnd))
            }
            t => float_out(c, v as f64, t, c.rnd),
        }
    })
}

fn cvt_fi(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    let (lo, hi) = int_range(c.dty);
    let mask = c.dty.mask();
    map1(i, o, |x| {
        let v = float_in(c, x, c.sty);
        if v.is_nan() {
            return 0;
        }
        let r = v.round_int(c.rnd);
        let n = if r >= hi as f64 {
            hi
        } else if r <= lo as f64 {
            lo
        } else {
            r as i128
        };
        n as u64 & mask
    })
}

fn cvt_ff(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    map1(i, o, |x| {
        let v = float_in(c, x, c.sty);
        if c.rint {
            // Same-size rounding to an integral value.
            let r = match c.sty {
                Ty::F32 => (v as f32).round_int(c.rnd) as f64,
                _ => v.round_int(c.rnd),
            };
            return float_out(c, r, c.dty, Rnd::Rn);
        }
        if c.sty == Ty::F64 && c.dty == Ty::F64 {
            return Double::store(c, v);
        }
        float_out(c, v, c.dty, c.rnd)
    })
}

/// cvt.rn.f16x2.f32 d, a, b: d = {hi: a, lo: b}.
fn cvt_pack_x2(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    let (eb, mb) = if c.dty == Ty::BF16x2 { (8, 7) } else { (5, 10) };
    map2(i, o, |a, b| {
        let h = |x: u64| {
            let v = Single::load(c, x) as f64;
            let v = if c.sat { sat(v) } else { v };
            let v = if c.imm == 1 && v < 0.0 { 0.0 } else { v };
            f64_to_small(v, c.rnd, eb, mb) as u64
        };
        h(a) << 16 | h(b)
    })
}

// ---------------------------------------------------------------------------------------------
// Other fixed functions.

fn mul24_fn<const SIGNED: bool, const HI: bool, const MAD: bool>(
    _: &AluCtx,
    i: &[&Lanes; 4],
    o: &mut [Lanes; 2],
) {
    let m24 = |x: u64| {
        if SIGNED {
            ((x as u32) << 8) as i32 as i64 >> 8
        } else {
            (x & 0xff_ffff) as i64
        }
    };
    map3(i, o, |a, b, c| {
        let p = m24(a) * m24(b);
        let r = if HI { (p >> 16) as u32 } else { p as u32 };
        (if MAD { r.wrapping_add(c as u32) } else { r }) as u64
    })
}

fn bfe_fn<const BITS: u32, const SIGNED: bool>(_: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    map3(i, o, |a, p, n| {
        bfe(a, BITS, SIGNED, p as u32 & 0xff, n as u32 & 0xff)
    })
}

fn selp(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    let m = c.dty.mask();
    map3(i, o, |a, b, p| if p & 1 != 0 { a & m } else { b & m })
}

fn slct_int(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    let m = c.dty.mask();
    map3(i, o, |a, b, s| if s as i32 >= 0 { a & m } else { b & m })
}

fn slct_f32(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    let m = c.dty.mask();
    map3(i, o, |a, b, s| {
        if Single::load(c, s) >= 0.0 {
            a & m
        } else {
            b & m
        }
    })
}

fn testp<S: FStore, const K: u8>(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    map1(i, o, |x| {
        let v = S::load(c, x);
        (match K {
            0 => v.is_finite(),
            1 => v.is_infinite(),
            2 => !v.is_nan(),
            3 => v.is_nan(),
            4 => v.is_normal(),
            _ => v.is_subnormal(),
        }) as u64
    })
}

fn lop3_fn(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    let m = c.dty.mask();
    map3(i, o, |a, b, d| lop3(a, b, d, c.imm) & m)
}

fn prmt_fn(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    map3(i, o, |a, b, s| {
        prmt(a as u32, b as u32, s as u32, c.imm) as u64
    })
}

fn shf_fn<const LEFT: bool, const WRAP: bool>(_: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    map3(i, o, |a, b, n| {
        let n = n as u32;
        let n = if WRAP { n & 31 } else { n.min(32) } as u64;
        let v = ((b as u32 as u64) << 32) | a as u32 as u64;
        if LEFT {
            ((v << n) >> 32) as u32 as u64
        } else {
            (v >> n) as u32 as u64
        }
    })
}

fn dp4a_fn<const AS: bool, const BS: bool>(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    let _ = c;
    map3(i, o, |a, b, d| {
        let byte = |x: u64, k: u32, s: bool| {
            let v = (x >> (k * 8)) as u8;
            if s { v as i8 as i64 } else { v as i64 }
        };
        let mut acc = d as u32 as i64;
        for k in 0..4 {
            acc = acc.wrapping_add(byte(a, k, AS) * byte(b, k, BS));
        }
        acc as u32 as u64
    })
}

fn dp2a_fn<const AS: bool, const BS: bool, const HI: bool>(
    _: &AluCtx,
    i: &[&Lanes; 4],
    o: &mut [Lanes; 2],
) {
    map3(i, o, |a, b, d| {
        let half = |x: u64, k: u32| {
            let v = (x >> (k * 16)) as u16;
            if AS { v as i16 as i64 } else { v as i64 }
        };
        let byte = |x: u64, k: u32| {
            let v = (x >> (k * 8)) as u8;
            if BS { v as i8 as i64 } else { v as i64 }
        };
        let base = if HI { 2 } else { 0 };
        let acc = (d as u32 as i64)
            .wrapping_add(half(a, 0) * byte(b, base))
            .wrapping_add(half(a, 1) * byte(b, base + 1));
        acc as u32 as u64
    })
}

// ---------------------------------------------------------------------------------------------
// Decoding.

fn need<T>(v: Option<T>, what: &str) -> Result<T, String> {
    v.ok_or_else(|| format!("unsupported type for {what}"))
}

fn float_kind(ty: Ty) -> bool {
    ty.is_float()
}

macro_rules! fsel2 {
    ($ty:expr, $op:expr) => {
        match $ty {
            Ty::F32 => Some(fbin::<Single, $op> as AluFn),
            Ty::F64 => Some(fbin::<Double, $op> as AluFn),
            Ty::F16 => Some(fbin::<Half, $op> as AluFn),
            Ty::BF16 => Some(fbin::<Bfloat, $op> as AluFn),
            Ty::F16x2 => Some(fbin_x2::<Half, $op> as AluFn),
            Ty::BF16x2 => Some(fbin_x2::<Bfloat, $op> as AluFn),
            _ => None,
        }
    };
}

macro_rules! fsel1 {
    ($ty:expr, $op:expr) => {
        match $ty {
            Ty::F32 => Some(fun::<Single, $op> as AluFn),
            Ty::F64 => Some(fun::<Double, $op> as AluFn),
            Ty::F16 => Some(fun::<Half, $op> as AluFn),
            Ty::BF16 => Some(fun::<Bfloat, $op> as AluFn),
            Ty::F16x2 => Some(fun_x2::<Half, $op> as AluFn),
            Ty::BF16x2 => Some(fun_x2::<Bfloat, $op> as AluFn),
            _ => None,
        }
    };
}

/// Decodes an ALU instruction. `Ok(None)`: not an ALU opcode; `Err`: an ALU opcode with
/// unsupported modifiers or types.
pub(crate) fn lookup(op: &str, mods: &[&str]) -> Result<Option<AluSpec>, String> {
    let m = Mods::parse(mods);
    let r = match op {
        "add" | "sub" => {
            let ty = m.ty()?;
            let sub = op == "sub";
            if m.has("cc") {
                carry(ty, sub, false, true)?
            } else if float_kind(ty) {
                let f = if sub {
                    fsel2!(ty, F_SUB)
                } else {
                    fsel2!(ty, F_ADD)
                };
                spec(need(f, op)?, m.ctx(ty), &[ty], &[ty, ty])
            } else {
                let f = match (sub, m.sat) {
                    (false, false) => for_int!(ty, i2!(|c, a, b| a.wrapping_add(b))),
                    (true, false) => for_int!(ty, i2!(|c, a, b| a.wrapping_sub(b))),
                    (false, true) => for_int!(ty, i2!(|c, a, b| a.saturating_add(b))),
                    (true, true) => for_int!(ty, i2!(|c, a, b| a.saturating_sub(b))),
                };
                spec(need(f, op)?, m.ctx(ty), &[ty], &[ty, ty])
            }
        }
        "addc" | "subc" => carry(m.ty()?, op == "subc", true, m.has("cc"))?,
        "mul" => {
            let ty = m.ty()?;
            if float_kind(ty) {
                spec(need(fsel2!(ty, F_MUL), op)?, m.ctx(ty), &[ty], &[ty, ty])
            } else if m.has("wide") {
                let (f, dt) = match ty {
                    Ty::U16 => (wide!(u16, u32, u32), Ty::U32),
                    Ty::S16 => (wide!(i16, i32, u32), Ty::S32),
                    Ty::U32 => (wide!(u32, u64, u64), Ty::U64),
                    Ty::S32 => (wide!(i32, i64, u64), Ty::S64),
                    _ => return Err("mul.wide type".into()),
                };
                spec(f, m.ctx(ty), &[dt], &[ty, ty])
            } else if m.has("hi") {
                let f = for_int!(
                    ty,
                    i2!(|c, a, b| ((a as i128).wrapping_mul(b as i128) >> T::BITS) as T)
                );
                spec(need(f, op)?, m.ctx(ty), &[ty], &[ty, ty])
            } else {
                let f = for_int!(ty, i2!(|c, a, b| a.wrapping_mul(b)));
                spec(need(f, op)?, m.ctx(ty), &[ty], &[ty, ty])
            }
        }
        "mad" | "madc" => {
            let ty = m.ty()?;
            if float_kind(ty) {
                fma_spec(ty, &m)?
            } else if op == "madc" || m.has("cc") {
                let hi = m.has("hi");
                let cin = op == "madc";
                let f: AluFn = match (ty, hi, cin) {
                    (Ty::U32 | Ty::B32, false, false) => mad_carry_fn::<32, false, false, false>,
                    (Ty::U32 | Ty::B32, false, true) => mad_carry_fn::<32, false, false, true>,
                    (Ty::U32 | Ty::B32, true, false) => mad_carry_fn::<32, true, false, false>,
                    (Ty::U32 | Ty::B32, true, true) => mad_carry_fn::<32, true, false, true>,
                    (Ty::S32, false, false) => mad_carry_fn::<32, false, true, false>,
                    (Ty::S32, false, true) => mad_carry_fn::<32, false, true, true>,
                    (Ty::S32, true, false) => mad_carry_fn::<32, true, true, false>,
                    (Ty::S32, true, true) => mad_carry_fn::<32, true, true, true>,
                    (Ty::U64 | Ty::B64, false, false) => mad_carry_fn::<64, false, false, false>,
                    (Ty::U64 | Ty::B64, false, true) => mad_carry_fn::<64, false, false, true>,
                    (Ty::U64 | Ty::B64, true, false) => mad_carry_fn::<64, true, false, false>,
                    (Ty::U64 | Ty::B64, true, true) => mad_carry_fn::<64, true, false, true>,
                    (Ty::S64, false, false) => mad_carry_fn::<64, false, true, false>,
                    (Ty::S64, false, true) => mad_carry_fn::<64, false, true, true>,
                    (Ty::S64, true, false) => mad_carry_fn::<64, true, true, false>,
                    (Ty::S64, true, true) => mad_carry_fn::<64, true, true, true>,
                    _ => return Err("mad.cc type".into()),
                };
                let mut s = spec(f, m.ctx(ty), &[ty], &[ty, ty, ty]);
                s.cc_in = cin;
                s.cc_out = m.has("cc");
                s
            } else if m.has("wide") {
                let (f, dt) = match ty {
                    Ty::U16 => (wide_mad!(u16, u32, u32), Ty::U32),
                    Ty::S16 => (wide_mad!(i16, i32, u32), Ty::S32),
                    Ty::U32 => (wide_mad!(u32, u64, u64), Ty::U64),
                    Ty::S32 => (wide_mad!(i32, i64, u64), Ty::S64),
                    _ => return Err("mad.wide type".into()),
                };
                spec(f, m.ctx(ty), &[dt], &[ty, ty, dt])
            } else if m.has("hi") {
                let f = if m.sat {
                    for_int!(
                        ty,
                        i3!(
                            |c, a, b, d| ((a as i128).wrapping_mul(b as i128) >> T::BITS)
                                .saturating_add(d as i128)
                                .clamp(T::MIN as i128, T::MAX as i128)
                                as T
                        )
                    )
                } else {
                    for_int!(
                        ty,
                        i3!(
                            |c, a, b, d| (((a as i128).wrapping_mul(b as i128) >> T::BITS) as T)
                                .wrapping_add(d)
                        )
                    )
                };
                spec(need(f, op)?, m.ctx(ty), &[ty], &[ty, ty, ty])
            } else {
                let f = for_int!(ty, i3!(|c, a, b, d| a.wrapping_mul(b).wrapping_add(d)));
                spec(need(f, op)?, m.ctx(ty), &[ty], &[ty, ty, ty])
            }
        }
        "fma" => fma_spec(m.ty()?, &m)?,
        "mul24" | "mad24" => {
            let ty = m.ty()?;
            let hi = m.has("hi");
            let f: AluFn = match (ty, hi, op == "mad24") {
                (Ty::U32, false, false) => mul24_fn::<false, false, false>,
                (Ty::U32, true, false) => mul24_fn::<false, true, false>,
                (Ty::S32, false, false) => mul24_fn::<true, false, false>,
                (Ty::S32, true, false) => mul24_fn::<true, true, false>,
                (Ty::U32, false, true) => mul24_fn::<false, false, true>,
                (Ty::U32, true, true) => mul24_fn::<false, true, true>,
                (Ty::S32, false, true) => mul24_fn::<true, false, true>,
                (Ty::S32, true, true) => mul24_fn::<true, true, true>,
                _ => return Err("mul24 type".into()),
            };
            let n = if op == "mad24" { 3 } else { 2 };
            spec(f, m.ctx(ty), &[ty], &vec![ty; n])
        }
        "div" => {
            let ty = m.ty()?;
            if float_kind(ty) {
                let f = if m.approx || m.rnd.is_none() {
                    fsel2!(ty, F_DIV_APPROX)
                } else {
                    fsel2!(ty, F_DIV)
                };
                spec(need(f, op)?, m.ctx(ty), &[ty], &[ty, ty])
            } else {
                let f = for_int!(
                    ty,
                    i2!(|c, a, b| if b == 0 { !(0 as T) } else { a.wrapping_div(b) })
                );
                spec(need(f, op)?, m.ctx(ty), &[ty], &[ty, ty])
            }
        }
        "rem" => {
            let ty = m.ty()?;
            let f = for_int!(
                ty,
                i2!(|c, a, b| if b == 0 { a } else { a.wrapping_rem(b) })
            );
            spec(need(f, op)?, m.ctx(ty), &[ty], &[ty, ty])
        }
        "abs" | "neg" => {
            let ty = m.ty()?;
            let f = if float_kind(ty) {
                if op == "abs" {
                    fsel1!(ty, U_ABS)
                } else {
                    fsel1!(ty, U_NEG)
                }
            } else if op == "abs" {
                for_int!(ty, i1!(|c, a| (a as i128).unsigned_abs() as T))
            } else {
                for_int!(ty, i1!(|c, a| a.wrapping_neg()))
            };
            spec(need(f, op)?, m.ctx(ty), &[ty], &[ty])
        }
        "min" | "max" => {
            let ty = m.ty()?;
            let is_min = op == "min";
            if float_kind(ty) {
                let f = if is_min {
                    fsel2!(ty, F_MIN)
                } else {
                    fsel2!(ty, F_MAX)
                };
                let mut ctx = m.ctx(ty);
                ctx.imm = m.has("NaN") as u32;
                if m.has("xorsign") {
                    return Err("min/max .xorsign".into());
                }
                spec(need(f, op)?, ctx, &[ty], &[ty, ty])
            } else {
                let relu = m.has("relu");
                let f = match (is_min, relu) {
                    (true, false) => for_int!(ty, i2!(|c, a, b| a.min(b))),
                    (false, false) => for_int!(ty, i2!(|c, a, b| a.max(b))),
                    (true, true) => for_int!(ty, i2!(|c, a, b| a.min(b).max(0 as T))),
                    (false, true) => for_int!(ty, i2!(|c, a, b| a.max(b).max(0 as T))),
                };
                spec(need(f, op)?, m.ctx(ty), &[ty], &[ty, ty])
            }
        }
        "sad" => {
            let ty = m.ty()?;
            let f = for_int!(
                ty,
                i3!(|c, a, b, d| d.wrapping_add(if a > b {
                    a.wrapping_sub(b)
                } else {
                    b.wrapping_sub(a)
                }))
            );
            spec(need(f, op)?, m.ctx(ty), &[ty], &[ty, ty, ty])
        }
        "popc" | "clz" | "brev" => {
            let ty = m.ty()?;
            let f = match op {
                "popc" => for_int!(ty, i1!(|c, a| a.count_ones())),
                "clz" => for_int!(ty, i1!(|c, a| a.leading_zeros())),
                _ => for_int!(ty, i1!(|c, a| a.reverse_bits())),
            };
            let dt = if op == "brev" { ty } else { Ty::U32 };
            spec(need(f, op)?, m.ctx(ty), &[dt], &[ty])
        }
        "bfind" => {
            let ty = m.ty()?;
            let sh = m.has("shiftamt");
            let f: AluFn = match (ty, sh) {
                (Ty::U32, false) => i1!(u64, u64, |c, a| bfind(a, 32, false, false)),
                (Ty::U32, true) => i1!(u64, u64, |c, a| bfind(a, 32, false, true)),
                (Ty::S32, false) => i1!(u64, u64, |c, a| bfind(a, 32, true, false)),
                (Ty::S32, true) => i1!(u64, u64, |c, a| bfind(a, 32, true, true)),
                (Ty::U64, false) => i1!(u64, u64, |c, a| bfind(a, 64, false, false)),
                (Ty::U64, true) => i1!(u64, u64, |c, a| bfind(a, 64, false, true)),
                (Ty::S64, false) => i1!(u64, u64, |c, a| bfind(a, 64, true, false)),
                (Ty::S64, true) => i1!(u64, u64, |c, a| bfind(a, 64, true, true)),
                _ => return Err("bfind type".into()),
            };
            spec(f, m.ctx(ty), &[Ty::U32], &[ty])
        }
        "bfe" => {
            let ty = m.ty()?;
            let f: AluFn = match ty {
                Ty::U32 | Ty::B32 => bfe_fn::<32, false>,
                Ty::S32 => bfe_fn::<32, true>,
                Ty::U64 | Ty::B64 => bfe_fn::<64, false>,
                Ty::S64 => bfe_fn::<64, true>,
                _ => return Err("bfe type".into()),
            };
            spec(f, m.ctx(ty), &[ty], &[ty, Ty::U32, Ty::U32])
        }
        "bfi" => {
            let ty = m.ty()?;
            let f: AluFn = match ty {
                Ty::B32 | Ty::U32 | Ty::S32 => i_bf!(u64, u64, |a, b, p, n| bfi(a, b, 32, p, n)),
                Ty::B64 | Ty::U64 | Ty::S64 => i_bf!(u64, u64, |a, b, p, n| bfi(a, b, 64, p, n)),
                _ => return Err("bfi type".into()),
            };
            spec(f, m.ctx(ty), &[ty], &[ty, ty, Ty::U32, Ty::U32])
        }
        "prmt" => {
            let mut ctx = m.ctx(Ty::B32);
            ctx.imm = if m.has("f4e") {
                1
            } else if m.has("b4e") {
                2
            } else if m.has("rc8") {
                3
            } else if m.has("ecl") {
                4
            } else if m.has("ecr") {
                5
            } else if m.has("rc16") {
                6
            } else {
                0
            };
            spec(prmt_fn, ctx, &[Ty::B32], &[Ty::B32, Ty::B32, Ty::B32])
        }
        "lop3" => {
            let ty = m.ty()?;
            let mut s = spec(lop3_fn, m.ctx(ty), &[ty], &[ty, ty, ty, Ty::U32]);
            s.imm_last = true;
            s
        }
        "shf" => {
            let left = m.has("l");
            let wrap = m.has("wrap");
            let f: AluFn = match (left, wrap) {
                (true, true) => shf_fn::<true, true>,
                (true, false) => shf_fn::<true, false>,
                (false, true) => shf_fn::<false, true>,
                (false, false) => shf_fn::<false, false>,
            };
            spec(f, m.ctx(Ty::B32), &[Ty::B32], &[Ty::B32, Ty::B32, Ty::U32])
        }
        "shl" => {
            let ty = m.ty()?;
            let f = for_int!(
                ty,
                i2s!(|c, a, b| if b >= T::BITS { 0 as T } else { a << b })
            );
            spec(need(f, op)?, m.ctx(ty), &[ty], &[ty, Ty::U32])
        }
        "shr" => {
            let ty = m.ty()?;
            let f = for_int!(
                ty,
                i2s!(|c, a, b| if b >= T::BITS {
                    a >> (T::BITS - 1) >> 1
                } else {
                    a >> b
                })
            );
            spec(need(f, op)?, m.ctx(ty), &[ty], &[ty, Ty::U32])
        }
        "and" | "or" | "xor" | "not" | "cnot" => {
            let ty = m.ty()?;
            let it = if ty == Ty::Pred { Ty::U8 } else { ty };
            let f = match op {
                "and" => for_int!(it, i2!(|c, a, b| a & b)),
                "or" => for_int!(it, i2!(|c, a, b| a | b)),
                "xor" => for_int!(it, i2!(|c, a, b| a ^ b)),
                "not" if ty == Ty::Pred => Some(i1!(u8, u8, |c, a| (a & 1) ^ 1)),
                "not" => for_int!(it, i1!(|c, a| !a)),
                _ => for_int!(it, i1!(|c, a| (a == 0) as T)),
            };
            let n = if matches!(op, "not" | "cnot") { 1 } else { 2 };
            spec(need(f, op)?, m.ctx(ty), &[ty], &vec![ty; n])
        }
        "dp4a" | "dp2a" => {
            let (at, bt) = match m.tys.as_slice() {
                [a, b] => (*a, *b),
                _ => return Err("dp4a types".into()),
            };
            let (sa, sb) = (at == Ty::S32, bt == Ty::S32);
            let f: AluFn = if op == "dp4a" {
                match (sa, sb) {
                    (false, false) => dp4a_fn::<false, false>,
                    (false, true) => dp4a_fn::<false, true>,
                    (true, false) => dp4a_fn::<true, false>,
                    (true, true) => dp4a_fn::<true, true>,
                }
            } else {
                match (sa, sb, m.has("hi")) {
                    (false, false, false) => dp2a_fn::<false, false, false>,
                    (false, true, false) => dp2a_fn::<false, true, false>,
                    (true, false, false) => dp2a_fn::<true, false, false>,
                    (true, true, false) => dp2a_fn::<true, true, false>,
                    (false, false, true) => dp2a_fn::<false, false, true>,
                    (false, true, true) => dp2a_fn::<false, true, true>,
                    (true, false, true) => dp2a_fn::<true, false, true>,
                    (true, true, true) => dp2a_fn::<true, true, true>,
                }
            };
            let dt = if sa || sb { Ty::S32 } else { Ty::U32 };
            spec(f, m.ctx(dt), &[dt], &[at, bt, dt])
        }
        "testp" => {
            let ty = m.ty()?;
            let k = [
                "finite",
                "infinite",
                "number",
                "notanumber",
                "normal",
                "subnormal",
            ]
            .iter()
            .position(|w| m.has(w))
            .ok_or("testp kind")?;
            macro_rules! tp {
                ($s:ty) => {
                    match k {
                        0 => testp::<$s, 0> as AluFn,
                        1 => testp::<$s, 1>,
                        2 => testp::<$s, 2>,
                        3 => testp::<$s, 3>,
                        4 => testp::<$s, 4>,
                        _ => testp::<$s, 5>,
                    }
                };
            }
            let f = match ty {
                Ty::F32 => tp!(Single),
                Ty::F64 => tp!(Double),
                _ => return Err("testp type".into()),
            };
            spec(f, m.ctx(ty), &[Ty::Pred], &[ty])
        }
        "copysign" => {
            let ty = m.ty()?;
            spec(
                need(fsel2!(ty, F_COPYSIGN), op)?,
                m.ctx(ty),
                &[ty],
                &[ty, ty],
            )
        }
        "selp" => {
            let ty = m.ty()?;
            spec(selp, m.ctx(ty), &[ty], &[ty, ty, Ty::Pred])
        }
        "slct" => {
            let (dt, ct) = match m.tys.as_slice() {
                [d, c] => (*d, *c),
                _ => return Err("slct types".into()),
            };
            let f: AluFn = if ct == Ty::F32 { slct_f32 } else { slct_int };
            let mut ctx = m.ctx(dt);
            ctx.sty = ct;
            spec(f, ctx, &[dt], &[dt, dt, ct])
        }
        "setp" | "set" => {
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
            let bop = bool_code(&m);
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
            s
        }
        "rcp" | "sqrt" | "rsqrt" | "sin" | "cos" | "lg2" | "ex2" | "tanh" => {
            let ty = m.ty()?;
            let f = match op {
                "rcp" if m.approx || m.rnd.is_none() => fsel1!(ty, U_RCP_APPROX),
                "rcp" => fsel1!(ty, U_RCP),
                "sqrt" if m.approx || m.rnd.is_none() => fsel1!(ty, U_SQRT_APPROX),
                "sqrt" => fsel1!(ty, U_SQRT),
                "rsqrt" => fsel1!(ty, U_RSQRT),
                "sin" => fsel1!(ty, U_SIN),
                "cos" => fsel1!(ty, U_COS),
                "lg2" => fsel1!(ty, U_LG2),
                "ex2" => fsel1!(ty, U_EX2),
                _ => fsel1!(ty, U_TANH),
            };
            spec(need(f, op)?, m.ctx(ty), &[ty], &[ty])
        }
        "cvt" => cvt_spec(&m)?,
        _ => return Ok(None),
    };
    Ok(Some(r))
}

fn carry(ty: Ty, sub: bool, cin: bool, cout: bool) -> Result<AluSpec, String> {
    let bits64 = match ty {
        Ty::U32 | Ty::S32 | Ty::B32 => false,
        Ty::U64 | Ty::S64 | Ty::B64 => true,
        _ => return Err("carry type".into()),
    };
    let f: AluFn = match (bits64, sub, cin) {
        (false, false, false) => carry_fn::<32, false, false>,
        (false, false, true) => carry_fn::<32, false, true>,
        (false, true, false) => carry_fn::<32, true, false>,
        (false, true, true) => carry_fn::<32, true, true>,
        (true, false, false) => carry_fn::<64, false, false>,
        (true, false, true) => carry_fn::<64, false, true>,
        (true, true, false) => carry_fn::<64, true, false>,
        (true, true, true) => carry_fn::<64, true, true>,
    };
    let mut s = spec(f, AluCtx::default(), &[ty], &[ty, ty]);
    s.cc_in = cin;
    s.cc_out = cout;
    Ok(s)
}

fn fma_spec(ty: Ty, m: &Mods<'_>) -> Result<AluSpec, String> {
    let f: AluFn = match ty {
        Ty::F32 => ffma::<Single>,
        Ty::F64 => ffma::<Double>,
        Ty::F16 => ffma::<Half>,
        Ty::BF16 => ffma::<Bfloat>,
        Ty::F16x2 => ffma_x2::<Half>,
        Ty::BF16x2 => ffma_x2::<Bfloat>,
        _ => return Err("fma type".into()),
    };
    let mut ctx = m.ctx(ty);
    if m.has("relu") {
        return Err("fma .relu".into());
    }
    ctx.imm = 0;
    Ok(spec(f, ctx, &[ty], &[ty, ty, ty]))
}

fn cvt_spec(m: &Mods<'_>) -> Result<AluSpec, String> {
    let (dt, st) = match m.tys.as_slice() {
        [d, s] => (*d, *s),
        _ => return Err("cvt needs two types".into()),
    };
    let mut ctx = m.ctx(dt);
    ctx.sty = st;
    if matches!(dt, Ty::F16x2 | Ty::BF16x2) && st == Ty::F32 {
        ctx.imm = m.has("relu") as u32;
        return Ok(spec(cvt_pack_x2, ctx, &[dt], &[Ty::F32, Ty::F32]));
    }
    if m.has("relu") || m.has("satfinite") || !m.words.is_empty() {
        return Err(format!("cvt modifiers {:?}", m.words));
    }
    let scalar = |t: Ty| t.is_int() || matches!(t, Ty::F16 | Ty::BF16 | Ty::F32 | Ty::F64);
    if !scalar(dt) || !scalar(st) {
        return Err("cvt types".into());
    }
    let f: AluFn = match (dt.is_float(), st.is_float()) {
        (false, false) => cvt_ii,
        (true, false) => cvt_if,
        (false, true) => cvt_fi,
        (true, true) => cvt_ff,
    };
    if !dt.is_float() && st.is_float() && m.rnd.is_none() {
        // Float -> int requires an integer rounding; default to truncation.
        ctx.rnd = Rnd::Rz;
    }
    Ok(spec(f, ctx, &[dt], &[st]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(op: &str, mods: &[&str], srcs: &[u64]) -> [u64; 2] {
        let s = lookup(op, mods).unwrap().unwrap();
        let mut lanes = [[0u64; 32]; 4];
        for (k, v) in srcs.iter().enumerate() {
            lanes[k] = [*v; 32];
        }
        if s.imm_last {
            let mut ctx = s.ctx;
            ctx.imm = *srcs.last().unwrap() as u32;
            let mut o = [[0u64; 32]; 2];
            (s.f)(&ctx, &[&lanes[0], &lanes[1], &lanes[2], &lanes[3]], &mut o);
            return [o[0][0], o[1][0]];
        }
        let mut o = [[0u64; 32]; 2];
        (s.f)(
            &s.ctx,
            &[&lanes[0], &lanes[1], &lanes[2], &lanes[3]],
            &mut o,
        );
        [o[0][0], o[1][0]]
    }

    fn f32b(x: f32) -> u64 {
        x.to_bits() as u64
    }

    #[test]
    fn integer_ops() {
        assert_eq!(
            run("add", &["s32"], &[5, (-7i32) as u32 as u64])[0],
            (-2i32) as u32 as u64
        );
        assert_eq!(
            run("add", &["sat", "s32"], &[0x7fff_ffff, 1])[0],
            0x7fff_ffff
        );
        assert_eq!(
            run("mul", &["hi", "u32"], &[0xffff_ffff, 0xffff_ffff])[0],
            0xffff_fffe
        );
        assert_eq!(run("mul", &["hi", "s64"], &[u64::MAX, 2])[0], u64::MAX);
        assert_eq!(
            run("mul", &["hi", "u64"], &[u64::MAX, u64::MAX])[0],
            u64::MAX - 1
        );
        assert_eq!(
            run("mul", &["wide", "s32"], &[(-3i32) as u32 as u64, 4])[0],
            (-12i64) as u64
        );
        assert_eq!(run("div", &["u32"], &[7, 0])[0], 0xffff_ffff);
        assert_eq!(
            run("div", &["s32"], &[0x8000_0000, 0xffff_ffff])[0],
            0x8000_0000
        );
        assert_eq!(
            run("rem", &["s32"], &[(-7i32) as u32 as u64, 3])[0],
            (-1i32) as u32 as u64
        );
        assert_eq!(run("shr", &["s32"], &[0x8000_0000, 40])[0], 0xffff_ffff);
        assert_eq!(run("shl", &["b32"], &[1, 32])[0], 0);
        assert_eq!(run("bfe", &["u32"], &[0xabcd, 4, 8])[0], 0xbc);
        assert_eq!(run("bfe", &["s32"], &[0xf0, 4, 4])[0], 0xffff_ffff);
        assert_eq!(
            run("bfi", &["b32"], &[0xf, 0xffff_0000, 4, 4])[0],
            0xffff_00f0
        );
        assert_eq!(run("bfind", &["u32"], &[0x10])[0], 4);
        assert_eq!(run("bfind", &["shiftamt", "u32"], &[0x10])[0], 27);
        assert_eq!(run("bfind", &["s32"], &[0xffff_ffff])[0], 0xffff_ffff);
        assert_eq!(
            run("prmt", &["b32"], &[0x33221100, 0x77665544, 0x5140])[0],
            0x55114400
        );
        assert_eq!(
            run("prmt", &["b32", "f4e"], &[0x33221100, 0x77665544, 1])[0],
            0x44332211
        );
        assert_eq!(
            run("lop3", &["b32"], &[0xf0, 0xcc, 0xaa, 0x96])[0],
            0xf0 ^ 0xcc ^ 0xaa
        );
        assert_eq!(
            run("shf", &["l", "wrap", "b32"], &[0x8000_0000, 1, 1])[0],
            3
        );
        assert_eq!(run("shf", &["r", "clamp", "b32"], &[0, 1, 40])[0], 1);
        assert_eq!(run("popc", &["b64"], &[u64::MAX])[0], 64);
        assert_eq!(run("clz", &["b32"], &[1])[0], 31);
        assert_eq!(run("brev", &["b32"], &[1])[0], 0x8000_0000);
        assert_eq!(run("add", &["cc", "u32"], &[0xffff_ffff, 1]), [0, 1]);
        assert_eq!(run("addc", &["u32"], &[1, 1, 1])[0], 3);
        assert_eq!(run("sub", &["cc", "u32"], &[0, 1]), [0xffff_ffff, 1]);
        assert_eq!(
            run(
                "madc",
                &["hi", "cc", "u32"],
                &[0xffff_ffff, 2, 0xffff_ffff, 1]
            ),
            [1, 1]
        );
        assert_eq!(run("dp4a", &["s32", "s32"], &[0xff01, 0x0202, 10])[0], 10);
        assert_eq!(run("sad", &["u32"], &[3, 10, 1])[0], 8);
        assert_eq!(
            run("min", &["s32"], &[(-1i32) as u32 as u64, 1])[0],
            0xffff_ffff
        );
        assert_eq!(run("min", &["u32"], &[(-1i32) as u32 as u64, 1])[0], 1);
        assert_eq!(run("not", &["pred"], &[1])[0], 0);
        assert_eq!(run("cnot", &["b32"], &[0])[0], 1);
    }

    #[test]
    fn compare_and_select() {
        assert_eq!(
            run("setp", &["lt", "s32"], &[(-1i32) as u32 as u64, 0]),
            [1, 0]
        );
        assert_eq!(
            run("setp", &["lo", "s32"], &[(-1i32) as u32 as u64, 0]),
            [0, 1]
        );
        assert_eq!(run("setp", &["lt", "and", "s32"], &[1, 2, 0]), [0, 0]);
        let nan = f32b(f32::NAN);
        assert_eq!(run("setp", &["ne", "f32"], &[nan, f32b(1.0)])[0], 0);
        assert_eq!(run("setp", &["neu", "f32"], &[nan, f32b(1.0)])[0], 1);
        assert_eq!(run("setp", &["nan", "f32"], &[nan, f32b(1.0)])[0], 1);
        assert_eq!(
            run("set", &["gt", "u32", "f32"], &[f32b(2.0), f32b(1.0)])[0],
            0xffff_ffff
        );
        assert_eq!(run("selp", &["b32"], &[1, 2, 0])[0], 2);
        assert_eq!(run("slct", &["b32", "s32"], &[1, 2, 0])[0], 1);
    }

    #[test]
    fn float_ops() {
        assert_eq!(
            run("add", &["f32"], &[f32b(1.5), f32b(2.25)])[0],
            f32b(3.75)
        );
        assert_eq!(
            run("add", &["sat", "f32"], &[f32b(1.5), f32b(2.25)])[0],
            f32b(1.0)
        );
        assert_eq!(
            run("fma", &["rn", "f32"], &[f32b(2.0), f32b(3.0), f32b(1.0)])[0],
            f32b(7.0)
        );
        assert_eq!(
            run("div", &["rn", "f64"], &[1.0f64.to_bits(), 4.0f64.to_bits()])[0],
            0.25f64.to_bits()
        );
        assert_eq!(
            run("min", &["f32"], &[f32b(f32::NAN), f32b(1.0)])[0],
            f32b(1.0)
        );
        assert_eq!(run("max", &["f32"], &[f32b(-0.0), f32b(0.0)])[0], f32b(0.0));
        assert_eq!(
            run("min", &["f32"], &[f32b(0.0), f32b(-0.0)])[0],
            f32b(-0.0)
        );
        assert_eq!(
            run("copysign", &["f32"], &[f32b(-1.0), f32b(2.0)])[0],
            f32b(-2.0)
        );
        assert_eq!(
            run("ex2", &["approx", "ftz", "f32"], &[f32b(3.0)])[0],
            f32b(8.0)
        );
        assert_eq!(run("add", &["f16"], &[0x3c00, 0x3c00])[0], 0x4000);
        assert_eq!(
            run("mul", &["f16x2"], &[0x4000_3c00, 0x4000_4000])[0],
            0x4400_4000
        );
        assert_eq!(
            run("testp", &["notanumber", "f32"], &[f32b(f32::NAN)])[0],
            1
        );
    }

    #[test]
    fn conversions() {
        assert_eq!(
            run("cvt", &["rzi", "s32", "f32"], &[f32b(-2.7)])[0],
            (-2i32) as u32 as u64
        );
        assert_eq!(run("cvt", &["rni", "s32", "f32"], &[f32b(2.5)])[0], 2);
        assert_eq!(
            run("cvt", &["rmi", "s32", "f32"], &[f32b(-2.5)])[0],
            (-3i32) as u32 as u64
        );
        assert_eq!(run("cvt", &["rzi", "u8", "f32"], &[f32b(300.0)])[0], 255);
        assert_eq!(run("cvt", &["rzi", "s32", "f32"], &[f32b(f32::NAN)])[0], 0);
        assert_eq!(run("cvt", &["s64", "s32"], &[0xffff_ffff])[0], u64::MAX);
        assert_eq!(run("cvt", &["u32", "u64"], &[0x1_0000_0005])[0], 5);
        assert_eq!(run("cvt", &["sat", "s8", "s32"], &[1000])[0], 127);
        assert_eq!(
            run("cvt", &["rn", "f32", "s32"], &[(-3i32) as u32 as u64])[0],
            f32b(-3.0)
        );
        assert_eq!(
            run("cvt", &["rz", "f32", "u64"], &[(1u64 << 24) + 1])[0],
            f32b(16_777_216.0)
        );
        assert_eq!(
            run("cvt", &["rp", "f32", "u64"], &[(1u64 << 24) + 1])[0],
            f32b(16_777_218.0)
        );
        assert_eq!(
            run("cvt", &["rn", "f32", "f64"], &[0.1f64.to_bits()])[0],
            f32b(0.1)
        );
        assert_eq!(
            run("cvt", &["f64", "f32"], &[f32b(0.5)])[0],
            0.5f64.to_bits()
        );
        assert_eq!(
            run("cvt", &["rni", "f32", "f32"], &[f32b(2.5)])[0],
            f32b(2.0)
        );
        assert_eq!(
            run("cvt", &["sat", "f32", "f32"], &[f32b(2.5)])[0],
            f32b(1.0)
        );
        assert_eq!(run("cvt", &["f32", "f16"], &[0x3c00])[0], f32b(1.0));
        assert_eq!(run("cvt", &["rn", "f16", "f32"], &[f32b(2.0)])[0], 0x4000);
        assert_eq!(
            run("cvt", &["rn", "f16x2", "f32"], &[f32b(2.0), f32b(1.0)])[0],
            0x4000_3c00
        );
        assert_eq!(run("cvt", &["rn", "bf16", "f32"], &[f32b(1.0)])[0], 0x3f80);
    }
}
