// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The compiler against the interpreter on generated kernels: random sequences of integer,
//! comparison, predicate, conversion and floating-point instructions (rounding modes, `.ftz`,
//! `.sat`, approximate functions), some of them guarded, over inputs rich in special values
//! (NaN, infinities, signed zeros, subnormals, `INT_MIN`, -1). Every thread works on its own
//! slice, so the two engines must agree bit for bit; the test helper runs each launch both
//! ways and compares memory (`Gpu::differential`). `PROPTEST_CASES=N` runs more cases.

mod common;
use common::*;
use proptest::prelude::*;

/// Register classes: (PTX prefix, count).
const R: (&str, usize) = ("%r", 12);
const RD: (&str, usize) = ("%rd", 8);
const F: (&str, usize) = ("%f", 12);
const FD: (&str, usize) = ("%fd", 8);
const P: (&str, usize) = ("%p", 6);

/// Instruction templates: the text with `D` (destination), `A`, `B`, `C` (sources) and
/// `Q` (a predicate source), and the register class of each.
type Tpl = (
    &'static str,
    (&'static str, usize),
    [(&'static str, usize); 3],
);

const TEMPLATES: &[Tpl] = &[
    ("add.s32 D, A, B", R, [R, R, R]),
    ("sub.s32 D, A, B", R, [R, R, R]),
    ("mul.lo.s32 D, A, B", R, [R, R, R]),
    ("mul.hi.s32 D, A, B", R, [R, R, R]),
    ("mul.hi.u32 D, A, B", R, [R, R, R]),
    ("mad.lo.s32 D, A, B, C", R, [R, R, R]),
    ("div.s32 D, A, B", R, [R, R, R]),
    ("div.u32 D, A, B", R, [R, R, R]),
    ("rem.s32 D, A, B", R, [R, R, R]),
    ("rem.u32 D, A, B", R, [R, R, R]),
    ("and.b32 D, A, B", R, [R, R, R]),
    ("or.b32 D, A, B", R, [R, R, R]),
    ("xor.b32 D, A, B", R, [R, R, R]),
    ("not.b32 D, A", R, [R, R, R]),
    ("neg.s32 D, A", R, [R, R, R]),
    ("abs.s32 D, A", R, [R, R, R]),
    ("min.s32 D, A, B", R, [R, R, R]),
    ("max.u32 D, A, B", R, [R, R, R]),
    ("shl.b32 D, A, B", R, [R, R, R]),
    ("shr.s32 D, A, B", R, [R, R, R]),
    ("shr.u32 D, A, B", R, [R, R, R]),
    ("shl.b64 D, A, B", RD, [RD, R, R]),
    ("shr.s64 D, A, B", RD, [RD, R, R]),
    ("add.sat.s32 D, A, B", R, [R, R, R]),
    ("popc.b32 D, A", R, [R, R, R]),
    ("add.s64 D, A, B", RD, [RD, RD, RD]),
    ("sub.s64 D, A, B", RD, [RD, RD, RD]),
    ("mul.lo.s64 D, A, B", RD, [RD, RD, RD]),
    ("mul.hi.u64 D, A, B", RD, [RD, RD, RD]),
    ("div.s64 D, A, B", RD, [RD, RD, RD]),
    ("rem.u64 D, A, B", RD, [RD, RD, RD]),
    ("min.u64 D, A, B", RD, [RD, RD, RD]),
    ("mul.wide.s32 D, A, B", RD, [R, R, R]),
    ("mul.wide.u32 D, A, B", RD, [R, R, R]),
    ("mad.wide.s32 D, A, B, C", RD, [R, R, RD]),
    ("setp.lt.s32 D, A, B", P, [R, R, R]),
    ("setp.hs.u32 D, A, B", P, [R, R, R]),
    ("setp.ne.s64 D, A, B", P, [RD, RD, RD]),
    ("setp.le.and.s32 D, A, B, Q", P, [R, R, R]),
    ("setp.gt.f32 D, A, B", P, [F, F, F]),
    ("setp.equ.f32 D, A, B", P, [F, F, F]),
    ("setp.neu.f64 D, A, B", P, [FD, FD, FD]),
    ("setp.nan.f32 D, A, B", P, [F, F, F]),
    ("setp.ge.xor.f64 D, A, B, Q", P, [FD, FD, FD]),
    ("and.pred D, A, B", P, [P, P, P]),
    ("or.pred D, A, B", P, [P, P, P]),
    ("not.pred D, A", P, [P, P, P]),
    ("selp.b32 D, A, B, Q", R, [R, R, R]),
    ("selp.f64 D, A, B, Q", FD, [FD, FD, FD]),
    ("add.rn.f32 D, A, B", F, [F, F, F]),
    ("add.f32 D, A, B", F, [F, F, F]),
    ("sub.rn.f32 D, A, B", F, [F, F, F]),
    ("mul.rn.f32 D, A, B", F, [F, F, F]),
    ("fma.rn.f32 D, A, B, C", F, [F, F, F]),
    ("div.rn.f32 D, A, B", F, [F, F, F]),
    ("div.full.f32 D, A, B", F, [F, F, F]),
    ("sqrt.rn.f32 D, A", F, [F, F, F]),
    ("rcp.rn.f32 D, A", F, [F, F, F]),
    ("min.f32 D, A, B", F, [F, F, F]),
    ("max.f32 D, A, B", F, [F, F, F]),
    ("neg.f32 D, A", F, [F, F, F]),
    ("abs.f32 D, A", F, [F, F, F]),
    ("add.rz.f32 D, A, B", F, [F, F, F]),
    ("mul.rm.ftz.f32 D, A, B", F, [F, F, F]),
    ("add.sat.f32 D, A, B", F, [F, F, F]),
    ("ex2.approx.ftz.f32 D, A", F, [F, F, F]),
    ("add.rn.f64 D, A, B", FD, [FD, FD, FD]),
    ("sub.rn.f64 D, A, B", FD, [FD, FD, FD]),
    ("rcp.rn.f64 D, A", FD, [FD, FD, FD]),
    ("mul.rn.f64 D, A, B", FD, [FD, FD, FD]),
    ("fma.rn.f64 D, A, B, C", FD, [FD, FD, FD]),
    ("div.rn.f64 D, A, B", FD, [FD, FD, FD]),
    ("sqrt.rn.f64 D, A", FD, [FD, FD, FD]),
    ("min.f64 D, A, B", FD, [FD, FD, FD]),
    ("max.f64 D, A, B", FD, [FD, FD, FD]),
    ("cvt.rn.f32.s32 D, A", F, [R, R, R]),
    ("cvt.rn.f32.u32 D, A", F, [R, R, R]),
    ("cvt.rn.f64.s64 D, A", FD, [RD, RD, RD]),
    ("cvt.rz.f32.s32 D, A", F, [R, R, R]),
    ("cvt.rzi.s32.f32 D, A", R, [F, F, F]),
    ("cvt.rni.s32.f32 D, A", R, [F, F, F]),
    ("cvt.rmi.u32.f32 D, A", R, [F, F, F]),
    ("cvt.rpi.s64.f64 D, A", RD, [FD, FD, FD]),
    ("cvt.rzi.u64.f64 D, A", RD, [FD, FD, FD]),
    ("cvt.f64.f32 D, A", FD, [F, F, F]),
    ("cvt.rn.f32.f64 D, A", F, [FD, FD, FD]),
    ("cvt.rz.f32.f64 D, A", F, [FD, FD, FD]),
    ("cvt.rni.f32.f32 D, A", F, [F, F, F]),
    ("cvt.rmi.f64.f64 D, A", FD, [FD, FD, FD]),
    ("cvt.s64.s32 D, A", RD, [R, R, R]),
    ("cvt.u64.u32 D, A", RD, [R, R, R]),
    ("cvt.u32.u64 D, A", R, [RD, RD, RD]),
    ("cvt.s16.s32 D, A", R, [R, R, R]),
    ("cvt.sat.s8.s32 D, A", R, [R, R, R]),
    ("mov.b32 D, A", R, [F, F, F]),
    ("mov.b64 D, A", FD, [RD, RD, RD]),
    // Appended, so the template indices in jit_diff.proptest-regressions keep their meaning.
    ("min.s16x2 D, A, B", R, [R, R, R]),
    ("max.u16x2 D, A, B", R, [R, R, R]),
    ("min.relu.s16x2 D, A, B", R, [R, R, R]),
];

/// Values that stress the corner cases, as 64-bit patterns (f32 patterns in the low half).
const SPECIAL: &[u64] = &[
    0,
    1,
    u64::MAX,
    0x8000_0000,
    0x7fff_ffff,
    0x8000_0000_0000_0000,
    0x7fc0_0000,
    0x7f80_0000,
    0xff80_0000,
    0x8000_0000_0000_0000 | 0x7ff8_0000_0000_0000,
    0x7ff0_0000_0000_0000,
    0x0000_0001,
    0x0080_0000,
    0x3f80_0000,
    0xbf00_0000,
    0x4f80_0000,
    0x0000_0000_0000_0001,
    0x41e0_0000_0000_0000,
    0x3ff0_0000_0000_0000,
    0xc3e0_0000_0000_0000,
    31,
    32,
    33,
    64,
];

#[derive(Debug, Clone)]
struct Case {
    /// (template index, destination, sources) per instruction.
    insts: Vec<(usize, usize, [usize; 4])>,
    inputs: Vec<u64>,
    /// Guard every k-th instruction with `@%p..` (0: none).
    guard_every: usize,
}

fn reg(class: (&str, usize), i: usize) -> String {
    format!("{}{}", class.0, i % class.1)
}

fn ptx(c: &Case) -> String {
    let mut body = String::new();
    // Each thread's 64-word slice: registers loaded from it, results stored back.
    let mut off = 0;
    let mut load = |class: (&str, usize), ty: &str, size: usize, body: &mut String| {
        for i in 0..class.1 {
            body.push_str(&format!(
                "ld.global.{ty} {}, [%rd60+{off}];\n",
                reg(class, i)
            ));
            off += size;
        }
    };
    load(R, "u32", 4, &mut body);
    load(RD, "u64", 8, &mut body);
    load(F, "f32", 4, &mut body);
    load(FD, "f64", 8, &mut body);
    for i in 0..P.1 {
        body.push_str(&format!("setp.lt.u32 %p{i}, %r{i}, %r{};\n", (i + 3) % R.1));
    }
    for (k, (t, d, s)) in c.insts.iter().enumerate() {
        let (text, dc, sc) = TEMPLATES[*t % TEMPLATES.len()];
        let line = text
            .replace('D', &reg(dc, *d))
            .replace('A', &reg(sc[0], s[0]))
            .replace('B', &reg(sc[1], s[1]))
            .replace('C', &reg(sc[2], s[2]))
            .replace('Q', &reg(P, s[3]));
        if c.guard_every != 0 && k % c.guard_every == c.guard_every - 1 {
            body.push_str(&format!("@%p{} ", s[3] % P.1));
        }
        body.push_str(&line);
        body.push_str(";\n");
    }
    let mut off = 0;
    let mut store = |class: (&str, usize), ty: &str, size: usize, body: &mut String| {
        for i in 0..class.1 {
            body.push_str(&format!(
                "st.global.{ty} [%rd61+{off}], {};\n",
                reg(class, i)
            ));
            off += size;
        }
    };
    store(R, "u32", 4, &mut body);
    store(RD, "u64", 8, &mut body);
    store(F, "f32", 4, &mut body);
    store(FD, "f64", 8, &mut body);
    for i in 0..P.1 {
        body.push_str(&format!(
            "selp.u32 %r0, 1, 0, %p{i};\nst.global.u32 [%rd61+{}], %r0;\n",
            off + 4 * i
        ));
    }
    format!(
        ".version 8.0\n.target sm_90\n.address_size 64\n\
         .visible .entry k(.param .u64 inp, .param .u64 out)\n{{\n\
         .reg .pred %p<8>;\n.reg .b32 %r<16>;\n.reg .b64 %rd<64>;\n\
         .reg .f32 %f<16>;\n.reg .f64 %fd<16>;\n.reg .b32 %t<4>;\n\
         ld.param.u64 %rd62, [inp];\nld.param.u64 %rd63, [out];\n\
         mov.u32 %t0, %tid.x;\nmul.wide.u32 %rd59, %t0, 512;\n\
         add.s64 %rd60, %rd62, %rd59;\nadd.s64 %rd61, %rd63, %rd59;\n{body}ret;\n}}\n"
    )
}

fn case() -> impl Strategy<Value = Case> {
    let inst = (
        0..TEMPLATES.len(),
        0..16usize,
        [0..16usize, 0..16usize, 0..16usize, 0..8usize],
    );
    let word = prop_oneof![
        3 => proptest::sample::select(SPECIAL),
        2 => any::<u64>(),
        1 => any::<u32>().prop_map(|x| x as u64),
    ];
    (
        proptest::collection::vec(inst, 1..40),
        proptest::collection::vec(word, 64 * 4),
        0..4usize,
    )
        .prop_map(|(insts, inputs, guard_every)| Case {
            insts,
            inputs,
            guard_every,
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, ..ProptestConfig::default() })]

    #[test]
    fn compiled_and_interpreted_agree_on_generated_alu_code(c in case()) {
        let src = ptx(&c);
        let g = Gpu::new(&src);
        let bytes: Vec<u8> = c.inputs.iter().flat_map(|w| w.to_le_bytes()).collect();
        let inp = g.mem.upload(&bytes);
        let out = g.zeros(bytes.len());
        // 4 threads, each on its own 512-byte slice; the helper compares both engines.
        g.run("k", 1, 4, &[Arg::Ptr(inp), Arg::Ptr(out)]);
        prop_assert_eq!(g.compiled_launches(), 1, "the generated kernel runs compiled");
    }
}
