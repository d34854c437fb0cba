// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Integer and bit-level instructions that are more than a one-line lane expression: carry
//! chains, bit fields, `prmt`, `lop3`, `mul24`, selects, funnel shifts and dot products. (The
//! one-line ones are stamped out by the lane macros in [`super::decode`].)

use super::{
    AluCtx, AluFn, AluSpec, Lanes,
    fp::{Load, Single},
    lanes, map2, map3, spec,
};
use crate::types::Ty;

// ---------------------------------------------------------------------------------------------
// Carry chains (add.cc, addc, sub.cc, subc, mad.cc, madc).

fn carry_fn<const BITS: u32, const SUB: bool, const CIN: bool>(
    c: &AluCtx,
    i: &[&Lanes; 4],
    o: &mut [Lanes; 2],
) {
    let mask = if BITS == 64 {
        u64::MAX
    } else {
        (1u64 << BITS) - 1
    };
    for l in 0..lanes(c) {
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
pub(super) fn mad_carry_fn<const BITS: u32, const HI: bool, const SIGNED: bool, const CIN: bool>(
    c: &AluCtx,
    i: &[&Lanes; 4],
    o: &mut [Lanes; 2],
) {
    let mask = if BITS == 64 {
        u64::MAX
    } else {
        (1u64 << BITS) - 1
    };
    for l in 0..lanes(c) {
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
pub(super) fn bfi(f: u64, b: u64, bits: u32, pos: u32, len: u32) -> u64 {
    if pos >= bits {
        return b & low_mask(bits);
    }
    let eff = len.min(bits - pos);
    let m = low_mask(eff) << pos;
    ((b & !m) | ((f << pos) & m)) & low_mask(bits)
}

#[inline(always)]
pub(super) fn bfind(a: u64, bits: u32, signed: bool, shiftamt: bool) -> u64 {
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
// Other fixed functions.

pub(super) fn mul24_fn<const SIGNED: bool, const HI: bool, const MAD: bool>(
    c: &AluCtx,
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
    map3(c, i, o, |a, b, c| {
        let p = m24(a) * m24(b);
        let r = if HI { (p >> 16) as u32 } else { p as u32 };
        (if MAD { r.wrapping_add(c as u32) } else { r }) as u64
    })
}

pub(super) fn bfe_fn<const BITS: u32, const SIGNED: bool>(
    c: &AluCtx,
    i: &[&Lanes; 4],
    o: &mut [Lanes; 2],
) {
    map3(c, i, o, |a, p, n| {
        bfe(a, BITS, SIGNED, p as u32 & 0xff, n as u32 & 0xff)
    })
}

pub(super) fn selp(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    let m = c.dty.mask();
    map3(c, i, o, |a, b, p| if p & 1 != 0 { a & m } else { b & m })
}

pub(super) fn slct_int(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    let m = c.dty.mask();
    map3(c, i, o, |a, b, s| if s as i32 >= 0 { a & m } else { b & m })
}

pub(super) fn slct_f32(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    let m = c.dty.mask();
    map3(c, i, o, |a, b, s| {
        if Single::load(c, s) >= 0.0 {
            a & m
        } else {
            b & m
        }
    })
}

pub(super) fn lop3_fn(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    let m = c.dty.mask();
    map3(c, i, o, |a, b, d| lop3(a, b, d, c.imm) & m)
}

pub(super) fn prmt_fn(c: &AluCtx, i: &[&Lanes; 4], o: &mut [Lanes; 2]) {
    map3(c, i, o, |a, b, s| {
        prmt(a as u32, b as u32, s as u32, c.imm) as u64
    })
}

pub(super) fn shf_fn<const LEFT: bool, const WRAP: bool>(
    c: &AluCtx,
    i: &[&Lanes; 4],
    o: &mut [Lanes; 2],
) {
    map3(c, i, o, |a, b, n| {
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

pub(super) fn dp4a_fn<const AS: bool, const BS: bool>(
    c: &AluCtx,
    i: &[&Lanes; 4],
    o: &mut [Lanes; 2],
) {
    let _ = c;
    map3(c, i, o, |a, b, d| {
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

pub(super) fn dp2a_fn<const AS: bool, const BS: bool, const HI: bool>(
    c: &AluCtx,
    i: &[&Lanes; 4],
    o: &mut [Lanes; 2],
) {
    map3(c, i, o, |a, b, d| {
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

/// `min`/`max` `.u16x2`/`.s16x2` (`RELU`: `.relu`, negative halves become 0): the two
/// 16-bit halves of each 32-bit operand compared on their own.
pub(super) fn minmax_16x2<const MIN: bool, const SIGNED: bool, const RELU: bool>(
    c: &AluCtx,
    i: &[&Lanes; 4],
    o: &mut [Lanes; 2],
) {
    map2(c, i, o, |a, b| {
        let mut r = 0u64;
        for sh in [0, 16] {
            let (x, y) = ((a >> sh) as u16, (b >> sh) as u16);
            let h = if SIGNED {
                let (x, y) = (x as i16, y as i16);
                let m = if MIN { x.min(y) } else { x.max(y) };
                (if RELU { m.max(0) } else { m }) as u16
            } else if MIN {
                x.min(y)
            } else {
                x.max(y)
            };
            r |= (h as u64) << sh;
        }
        r
    })
}

pub(super) fn carry(ty: Ty, sub: bool, cin: bool, cout: bool) -> Result<AluSpec, String> {
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
