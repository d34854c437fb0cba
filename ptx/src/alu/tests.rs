// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Unit tests of the ALU functions, through [`super::lookup`].

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
    // tf32: 10 mantissa bits; rna rounds ties away from zero, rn to even, rz down.
    let tf = |mode: &str, x: u32| run("cvt", &[mode, "tf32", "f32"], &[u64::from(x)])[0];
    assert_eq!(tf("rna", 0x3f80_1000), 0x3f80_2000);
    assert_eq!(tf("rn", 0x3f80_1000), 0x3f80_0000);
    assert_eq!(tf("rn", 0x3f80_3000), 0x3f80_4000);
    assert_eq!(tf("rz", 0x3f80_1fff), 0x3f80_0000);
    assert_eq!(tf("rna", 0xbf80_1000), 0xbf80_2000);
    assert_eq!(tf("rna", 0x7f7f_ffff), 0x7f80_0000);
    assert_eq!(tf("rna", 0x7fc0_0001) & 0x7fc0_0000, 0x7fc0_0000);
    // bmsk: b ones from bit a; clamp stops at bit 32, wrap takes both modulo 32.
    assert_eq!(run("bmsk", &["clamp", "b32"], &[4, 3])[0], 0x70);
    assert_eq!(run("bmsk", &["clamp", "b32"], &[30, 8])[0], 0xc000_0000);
    assert_eq!(run("bmsk", &["clamp", "b32"], &[32, 8])[0], 0);
    assert_eq!(run("bmsk", &["clamp", "b32"], &[0, 40])[0], 0xffff_ffff);
    assert_eq!(run("bmsk", &["wrap", "b32"], &[33, 34])[0], 0b110);
    assert_eq!(run("bmsk", &["wrap", "b32"], &[0, 32])[0], 0);
    // szext: the low b bits, sign- or zero-extended.
    assert_eq!(run("szext", &["clamp", "s32"], &[0x1f0, 8])[0], 0xffff_fff0);
    assert_eq!(run("szext", &["clamp", "u32"], &[0x1f0, 8])[0], 0xf0);
    assert_eq!(run("szext", &["wrap", "s32"], &[0x1f0, 40])[0], 0xffff_fff0);
    assert_eq!(
        run("szext", &["clamp", "s32"], &[0x8000_0000, 99])[0],
        0x8000_0000
    );
    assert_eq!(run("szext", &["wrap", "u32"], &[0x1234, 0])[0], 0);
    assert_eq!(
        run("min", &["s32"], &[(-1i32) as u32 as u64, 1])[0],
        0xffff_ffff
    );
    assert_eq!(run("min", &["u32"], &[(-1i32) as u32 as u64, 1])[0], 1);
    assert_eq!(run("not", &["pred"], &[1])[0], 0);
    assert_eq!(run("cnot", &["b32"], &[0])[0], 1);
}

#[test]
fn packed_16x2_min_max() {
    // Each 16-bit half on its own: high 0x8000 (-32768 signed, 32768 unsigned) vs 0x0001,
    // low 0xfffe (-2 / 65534) vs 0x0003.
    let (a, b) = (0x8000_fffe, 0x0001_0003);
    assert_eq!(run("min", &["s16x2"], &[a, b])[0], 0x8000_fffe);
    assert_eq!(run("max", &["s16x2"], &[a, b])[0], 0x0001_0003);
    assert_eq!(run("min", &["u16x2"], &[a, b])[0], 0x0001_0003);
    assert_eq!(run("max", &["u16x2"], &[a, b])[0], 0x8000_fffe);
    assert_eq!(run("min", &["relu", "s16x2"], &[a, b])[0], 0);
    assert_eq!(
        run("max", &["relu", "s16x2"], &[a, 0x7fff_fff0])[0],
        0x7fff_0000
    );
    assert!(lookup("min", &["relu", "u16x2"]).is_err());
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
    // Single-precision arithmetic producing a NaN gives the canonical NaN whatever the
    // inputs' sign and payload; double precision keeps the first NaN input's payload (PTX
    // ISA: "NaN payloads are supported for double-precision instructions"), quiet; sign
    // operations keep them.
    let neg_nan = 0xffc0_1234u32 as u64;
    for (op, mods) in [
        ("add", &["rn", "f32"][..]),
        ("sub", &["f32"][..]),
        ("mul", &["rz", "f32"][..]),
        ("div", &["rn", "f32"][..]),
    ] {
        assert_eq!(run(op, mods, &[f32b(1.0), neg_nan])[0], 0x7fff_ffff, "{op}");
        assert_eq!(run(op, mods, &[neg_nan, f32b(1.0)])[0], 0x7fff_ffff, "{op}");
    }
    assert_eq!(run("sqrt", &["rn", "f32"], &[f32b(-1.0)])[0], 0x7fff_ffff);
    let d = |x: f64| x.to_bits();
    let snan = 0xfff0_0000_0000_0001u64;
    for (op, mods) in [
        ("add", &["rn", "f64"][..]),
        ("sub", &["f64"][..]),
        ("mul", &["rm", "f64"][..]),
        ("div", &["rn", "f64"][..]),
    ] {
        assert_eq!(
            run(op, mods, &[d(1.0), snan])[0],
            0xfff8_0000_0000_0001,
            "{op}"
        );
        assert_eq!(
            run(op, mods, &[0x7ff8_0000_0000_00aa, snan])[0],
            0x7ff8_0000_0000_00aa
        );
    }
    // A NaN no input carried (inf - inf): the canonical NaN.
    assert_eq!(
        run("sub", &["f64"], &[d(f64::INFINITY), d(f64::INFINITY)])[0],
        0x7fff_ffff_ffff_ffff
    );
    assert_eq!(
        run(
            "fma",
            &["rn", "f64"],
            &[d(2.0), d(3.0), 0x7ff8_0000_0000_0042]
        )[0],
        0x7ff8_0000_0000_0042
    );
    assert_eq!(
        run("sqrt", &["rn", "f64"], &[d(-1.0)])[0],
        0x7fff_ffff_ffff_ffff
    );
    assert_eq!(run("neg", &["f32"], &[neg_nan])[0], 0x7fc0_1234);
    assert_eq!(run("abs", &["f32"], &[neg_nan])[0], 0x7fc0_1234);
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
fn fp8_pairs_convert_both_ways() {
    assert_eq!(
        run(
            "cvt",
            &["rn", "satfinite", "e4m3x2", "f32"],
            &[f32b(1.0), f32b(-2.0)]
        )[0],
        0x38c0
    );
    assert_eq!(
        run(
            "cvt",
            &["rn", "satfinite", "relu", "e5m2x2", "f32"],
            &[f32b(-1.0), f32b(1e9)]
        )[0],
        0x007b
    );
    assert_eq!(
        run(
            "cvt",
            &["rn", "satfinite", "e4m3x2", "f16x2"],
            &[0x3c00_c000]
        )[0],
        0x38c0
    );
    assert_eq!(
        run("cvt", &["rn", "f16x2", "e4m3x2"], &[0x38c0])[0],
        0x3c00_c000
    );
    assert!(
        lookup("cvt", &["rn", "e4m3x2", "f32"]).is_err(),
        "satfinite is required"
    );
}

#[test]
fn fma_relu_clamps_half_precision_results() {
    // bf16: 1.0 = 0x3f80, 2.0 = 0x4000, -3.0 = 0xc040. 1*2 + -3 = -1 -> +0; 2*2 + -3 = 1.
    assert_eq!(
        run("fma", &["rn", "relu", "bf16"], &[0x3f80, 0x4000, 0xc040])[0],
        0
    );
    assert_eq!(
        run("fma", &["rn", "relu", "bf16"], &[0x4000, 0x4000, 0xc040])[0],
        0x3f80
    );
    // A NaN result is the canonical NaN.
    assert_eq!(
        run("fma", &["rn", "relu", "bf16"], &[0x7fc1, 0x4000, 0xc040])[0],
        0x7fff
    );
    // f16x2: (1*2 + -3, 2*2 + -3) with 1.0 = 0x3c00, 2.0 = 0x4000, -3.0 = 0xc200.
    assert_eq!(
        run(
            "fma",
            &["rn", "relu", "f16x2"],
            &[0x3c00_4000, 0x4000_4000, 0xc200_c200]
        )[0],
        0x0000_3c00
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

#[test]
fn one_lane_computes_the_first_only() {
    // The compiled code's helper asks for one lane; every way an ALU function walks its lanes
    // (the map helpers, setp's, the carry chains') stops after it.
    for (op, mods, srcs) in [
        ("cvt", &["f32", "f16"][..], &[0x3c00u64][..]),
        ("setp", &["lt", "s32"][..], &[1, 2, 1][..]),
        ("add", &["cc", "u32"][..], &[u32::MAX as u64, 1][..]),
        ("mul24", &["lo", "s32"][..], &[3, 4][..]),
    ] {
        let s = lookup(op, mods).unwrap().unwrap();
        let mut lanes = [[0u64; 32]; 4];
        for (k, v) in srcs.iter().enumerate() {
            lanes[k] = [*v; 32];
        }
        let ctx = AluCtx { lanes: 1, ..s.ctx };
        let mut one = [[0xdead; 32]; 2];
        (s.f)(
            &ctx,
            &[&lanes[0], &lanes[1], &lanes[2], &lanes[3]],
            &mut one,
        );
        let mut all = [[0u64; 32]; 2];
        (s.f)(
            &s.ctx,
            &[&lanes[0], &lanes[1], &lanes[2], &lanes[3]],
            &mut all,
        );
        assert_eq!(one[0][0], all[0][0], "{op}");
        assert!(one[0][1..].iter().all(|&v| v == 0xdead), "{op}");
    }
}
