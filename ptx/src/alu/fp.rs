// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Floating-point instructions: the lane value types ([`Load`], [`FStore`]: how f32, f64, f16
//! and bf16 registers are read and written, with flush-to-zero and saturation), [`FMath`], and
//! the binary, unary and fused multiply-add functions with their rounding modes, plus `testp`.

use super::{AluCtx, AluFn, AluSpec, Lanes, Mods, map1, map2, map3, spec};
use crate::{
    float::{
        Fp, Rnd, add_r, bf16_to_f32, div_r, f16_to_f32, f64_to_small, fma_r, ftz32, ftz64, mul_r,
        sqrt_r,
    },
    types::Ty,
};

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

pub(super) fn sat<F: FMath>(v: F) -> F {
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
    /// The NaN an arithmetic instruction gives when its result `r` is a NaN, as the GPU
    /// does (PTX ISA): single precision gives an unspecified NaN (the canonical one here, as
    /// the hardware does); double precision keeps NaN payloads: the first NaN input, quiet,
    /// or the canonical NaN when none of the inputs was a NaN (`inf - inf`).
    #[inline(always)]
    fn arith_nan(r: Self, inputs: &[Self]) -> Self {
        if !r.is_nan() {
            return r;
        }
        if Self::KEEPS_PAYLOAD
            && let Some(&n) = inputs.iter().find(|x| x.is_nan())
        {
            return n.quiet();
        }
        Self::canonical_nan()
    }
    /// Whether NaN payloads propagate ([`FMath::arith_nan`]).
    const KEEPS_PAYLOAD: bool;
    /// This NaN with its quiet bit set.
    fn quiet(self) -> Self;
    fn is_subnormal(self) -> bool;
    fn is_normal(self) -> bool;
    fn is_infinite(self) -> bool;
    fn round_int(self, rnd: Rnd) -> Self;
    fn fma_rn(a: Self, b: Self, c: Self) -> Self;
}

macro_rules! impl_fmath {
    ($t:ty, $nan:expr, $fma:path, $keeps:expr, $quiet:expr) => {
        impl FMath for $t {
            const KEEPS_PAYLOAD: bool = $keeps;
            #[inline(always)]
            fn quiet(self) -> Self {
                <$t>::from_bits(self.to_bits() | $quiet)
            }
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
impl_fmath!(f32, 0x7fff_ffff, crate::float::fma32, false, 0x0040_0000);
impl_fmath!(
    f64,
    0x7fff_ffff_ffff_ffff,
    f64::mul_add,
    true,
    0x0008_0000_0000_0000
);

// Floating-point operation codes (const generic parameters).
pub(super) const F_ADD: u8 = 0;
pub(super) const F_SUB: u8 = 1;
pub(super) const F_MUL: u8 = 2;
pub(super) const F_DIV: u8 = 3;
pub(super) const F_MIN: u8 = 4;
pub(super) const F_MAX: u8 = 5;
pub(super) const F_COPYSIGN: u8 = 6;
pub(super) const F_DIV_APPROX: u8 = 7;

pub(super) const U_ABS: u8 = 0;
pub(super) const U_NEG: u8 = 1;
pub(super) const U_SQRT: u8 = 2;
pub(super) const U_RSQRT: u8 = 3;
pub(super) const U_RCP: u8 = 4;
pub(super) const U_SIN: u8 = 5;
pub(super) const U_COS: u8 = 6;
pub(super) const U_LG2: u8 = 7;
pub(super) const U_EX2: u8 = 8;
pub(super) const U_TANH: u8 = 9;
pub(super) const U_RCP_APPROX: u8 = 10;
pub(super) const U_SQRT_APPROX: u8 = 11;

#[inline(always)]
fn fop2<F: FMath, const OP: u8>(exact: bool, c: &AluCtx, a: F, b: F) -> F {
    let rnd = if exact { c.rnd } else { Rnd::Rn };
    // A NaN result is the GPU's (`FMath::arith_nan`), whatever the host's instruction or
    // the software rounding propagated (`sub` negates `b` first, flipping its sign).
    let canon = |r: F| F::arith_nan(r, &[a, b]);
    match OP {
        F_ADD => canon(add_r(a, b, rnd)),
        F_SUB => canon(add_r(a, -b, rnd)),
        F_MUL => canon(mul_r(a, b, rnd)),
        F_DIV => canon(div_r(a, b, rnd)),
        F_DIV_APPROX => canon(a / b),
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

pub(super) fn fbin<S: FStore, const OP: u8>(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    if c.is_plain() {
        fbin_impl::<S, OP>(&c.plain(), i, o)
    } else {
        fbin_impl::<S, OP>(c, i, o)
    }
}

#[inline(always)]
fn fbin_impl<S: FStore, const OP: u8>(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    map2(c, i, o, |x, y| {
        S::store(
            c,
            fop2::<S::C, OP>(S::EXACT, c, S::load(c, x), S::load(c, y)),
        )
    })
}

pub(super) fn fbin_x2<S: FStore, const OP: u8>(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    map2(c, i, o, |x, y| {
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
    let r = match OP {
        // Sign operations keep a NaN's payload, as on the GPU.
        U_ABS => return a.abs(),
        U_NEG => return -a,
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
    };
    // The GPU's NaN (see `fop2`); the approximate reciprocals (`rcp.approx.ftz.f64`,
    // `rsqrt.approx`) give the canonical NaN for doubles too.
    if matches!(OP, U_RCP_APPROX | U_RSQRT) {
        if r.is_nan() { F::canonical_nan() } else { r }
    } else {
        F::arith_nan(r, &[a])
    }
}

pub(super) fn fun<S: FStore, const OP: u8>(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    map1(c, i, o, |x| {
        S::store(c, fop1::<S::C, OP>(S::EXACT, c, S::load(c, x)))
    })
}

pub(super) fn fun_x2<S: FStore, const OP: u8>(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    map1(c, i, o, |x| {
        let lo = S::store(c, fop1::<S::C, OP>(false, c, S::load(c, x)));
        let hi = S::store(c, fop1::<S::C, OP>(false, c, S::load(c, x >> 16)));
        (hi & 0xffff) << 16 | (lo & 0xffff)
    })
}

fn ffma<S: FStore>(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    match c.imm {
        0 => ffma_neg::<S, false, false>(c, i, o),
        FMA_NEG_ADDEND => ffma_neg::<S, false, true>(c, i, o),
        _ => ffma_neg::<S, true, false>(c, i, o),
    }
}

/// `fma` with the product (`NP`) or the addend (`NA`) negated: the forms a contracted `sub`
/// takes. A NaN result is chosen among the operands as written, not negated.
fn ffma_neg<S: FStore, const NP: bool, const NA: bool>(
    c: &AluCtx,
    i: &[&Lanes; 4],
    o: &mut [Lanes; 2],
) {
    let neg = |a: S::C, d: S::C| (if NP { -a } else { a }, if NA { -d } else { d });
    if S::EXACT && c.is_plain() {
        // The common case: round to nearest without flush or saturation (constant-folded).
        let c = &c.plain();
        map3(c, i, o, |x, y, z| {
            let (a, b, d) = (S::load(c, x), S::load(c, y), S::load(c, z));
            let (na, nd) = neg(a, d);
            let r = S::C::fma_rn(na, b, nd);
            // A NaN result is the GPU's (whatever the host's fused multiply-add propagates).
            S::store(c, S::C::arith_nan(r, &[a, b, d]))
        })
    } else {
        map3(c, i, o, |x, y, z| {
            let (a, b, d) = (S::load(c, x), S::load(c, y), S::load(c, z));
            let (na, nd) = neg(a, d);
            let r = if S::EXACT {
                fma_r(na, b, nd, c.rnd)
            } else {
                S::C::from_f64(na.to_f64().mul_add(b.to_f64(), nd.to_f64()))
            };
            S::store(c, S::C::arith_nan(r, &[a, b, d]))
        })
    }
}

fn ffma_x2<S: FStore>(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    // A contracted `sub` negates the product or the addend (`ffma_neg`).
    let (np, na) = (c.imm == FMA_NEG_PRODUCT, c.imm == FMA_NEG_ADDEND);
    map3(c, i, o, |x, y, z| {
        let h = |s: u32| {
            let (a, b, d) = (S::load(c, x >> s), S::load(c, y >> s), S::load(c, z >> s));
            let a = if np { -a } else { a };
            let d = if na { -d } else { d };
            S::store(
                c,
                S::C::from_f64(a.to_f64().mul_add(b.to_f64(), d.to_f64())),
            ) & 0xffff
        };
        h(16) << 16 | h(0)
    })
}

/// `fma.rn.relu` of a half-precision value: negative results (and -0) become +0, NaN
/// results the canonical NaN (`0x7fff`), as PTX defines `.relu`.
fn relu16<S: FStore>(c: &AluCtx, a: u64, b: u64, d: u64) -> u64 {
    let (a, b, d) = (S::load(c, a), S::load(c, b), S::load(c, d));
    let r = S::C::from_f64(a.to_f64().mul_add(b.to_f64(), d.to_f64()));
    let bits = S::store(c, r) & 0xffff;
    let v = S::load(c, bits);
    if v.is_nan() {
        0x7fff
    } else if v.to_f64() <= 0.0 {
        0
    } else {
        bits
    }
}

fn ffma_relu<S: FStore>(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    map3(c, i, o, |x, y, z| relu16::<S>(c, x, y, z))
}

fn ffma_relu_x2<S: FStore>(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    map3(c, i, o, |x, y, z| {
        let h = |s: u32| relu16::<S>(c, x >> s & 0xffff, y >> s & 0xffff, z >> s & 0xffff);
        h(16) << 16 | h(0)
    })
}

pub(super) fn testp<S: FStore, const K: u8>(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    map1(c, i, o, |x| {
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

/// `a * b - c`, rounded once: the internal opcode of a contracted `mul` and `sub` (no PTX
/// source can spell it).
pub(crate) const FMS: &str = "#fms";
/// `-(a * b) + c`, rounded once: the internal opcode of a contracted `sub` of a product.
pub(crate) const FNMA: &str = "#fnma";
/// `ctx.imm` of an `fma`: negate the addend.
pub(super) const FMA_NEG_ADDEND: u32 = 1;
/// `ctx.imm` of an `fma`: negate the product (its first factor).
pub(super) const FMA_NEG_PRODUCT: u32 = 2;

pub(super) fn fma_spec(ty: Ty, m: &Mods<'_>) -> Result<AluSpec, String> {
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
    ctx.imm = 0;
    if m.has("relu") {
        // `.relu` is for half precision, rounding to nearest (the one rounding it takes).
        let f: AluFn = match ty {
            Ty::F16 => ffma_relu::<Half>,
            Ty::BF16 => ffma_relu::<Bfloat>,
            Ty::F16x2 => ffma_relu_x2::<Half>,
            Ty::BF16x2 => ffma_relu_x2::<Bfloat>,
            _ => return Err("fma .relu on a type other than f16/bf16 (x2)".into()),
        };
        return Ok(spec(f, ctx, &[ty], &[ty, ty, ty]));
    }
    Ok(spec(f, ctx, &[ty], &[ty, ty, ty]))
}
