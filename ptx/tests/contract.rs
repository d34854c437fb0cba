// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Floating-point contraction (`module/contract.rs`): a `mul` and the `add`/`sub` that
//! consumes its product, neither with a rounding modifier, are rounded once, as `ptxas`
//! contracts them into a fused multiply-add on a GPU; `.rn` forbids it, and a product used
//! twice, a guarded `mul`, or a source written in between keep the two roundings. Every
//! launch is also run by the interpreter and must agree with the compiled code
//! (`common::Gpu::try_launch`); 64 threads take the vector group code.

mod common;
use common::*;

const PTX: &str = r#"
.version 8.0
.target sm_80
.address_size 64

// Per thread t, with a, b, c = x[3t..3t+3], eight results out[8t..8t+8].
.visible .entry forms(.param .u64 x, .param .u64 out)
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  .reg .f32 %f<40>;
  .reg .b64 %rd<10>;
  ld.param.u64 %rd1, [x];
  ld.param.u64 %rd2, [out];
  cvta.to.global.u64 %rd3, %rd1;
  cvta.to.global.u64 %rd4, %rd2;
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd5, %r1, 12;
  add.s64 %rd6, %rd3, %rd5;
  mul.wide.u32 %rd7, %r1, 32;
  add.s64 %rd8, %rd4, %rd7;
  ld.global.f32 %f1, [%rd6];
  ld.global.f32 %f2, [%rd6+4];
  ld.global.f32 %f3, [%rd6+8];
  setp.eq.s32 %p1, %r1, 1000;
  // 0: a * b + c, fused (the product as the second source).
  mul.f32 %f10, %f1, %f2;
  add.f32 %f11, %f3, %f10;
  st.global.f32 [%rd8], %f11;
  // 1: a * b - c, fused, with an unrelated instruction between.
  mul.f32 %f12, %f1, %f2;
  add.f32 %f30, %f3, %f3;
  sub.f32 %f13, %f12, %f3;
  st.global.f32 [%rd8+4], %f13;
  // 2: c - a * b, fused.
  mul.ftz.f32 %f14, %f1, %f2;
  sub.ftz.f32 %f15, %f3, %f14;
  st.global.f32 [%rd8+8], %f15;
  // 3: `.rn` on the product: two roundings.
  mul.rn.f32 %f16, %f1, %f2;
  add.f32 %f17, %f16, %f3;
  st.global.f32 [%rd8+12], %f17;
  // 4, 5: the product used twice: two roundings.
  mul.f32 %f18, %f1, %f2;
  add.f32 %f19, %f18, %f3;
  st.global.f32 [%rd8+16], %f19;
  st.global.f32 [%rd8+20], %f18;
  // 6: a guarded product: two roundings.
  @!%p1 mul.f32 %f20, %f1, %f2;
  add.f32 %f21, %f20, %f3;
  st.global.f32 [%rd8+24], %f21;
  // 7: a source written between: two roundings, of the product of the old a.
  mul.f32 %f22, %f1, %f2;
  mov.f32 %f1, 0f00000000;
  add.f32 %f23, %f22, %f3;
  st.global.f32 [%rd8+28], %f23;
  ret;
}

// CuPy's float remainder: out[t] = a - floor(a / b) * b, in double precision.
.visible .entry rem(.param .u64 a, .param .u64 b, .param .u64 out)
{
  .reg .b32 %r<4>;
  .reg .f64 %fd<8>;
  .reg .b64 %rd<12>;
  ld.param.u64 %rd1, [a];
  ld.param.u64 %rd2, [b];
  ld.param.u64 %rd3, [out];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd4, %r1, 8;
  cvta.to.global.u64 %rd5, %rd1;
  add.s64 %rd6, %rd5, %rd4;
  cvta.to.global.u64 %rd7, %rd2;
  add.s64 %rd8, %rd7, %rd4;
  cvta.to.global.u64 %rd9, %rd3;
  add.s64 %rd10, %rd9, %rd4;
  ld.global.f64 %fd1, [%rd6];
  ld.global.f64 %fd2, [%rd8];
  div.rn.f64 %fd3, %fd1, %fd2;
  cvt.rmi.f64.f64 %fd4, %fd3;
  mul.f64 %fd5, %fd4, %fd2;
  sub.f64 %fd6, %fd1, %fd5;
  st.global.f64 [%rd10], %fd6;
  ret;
}

// Half precision, out[0..4] from a, b, c = x[0..3] (16-bit values): a * b + c, a * b - c,
// c - a * b fused; a * b + c with `.rn` on the product; out[4..6] c - a * b on `f16x2` pairs.
.visible .entry half(.param .u64 x, .param .u64 out)
{
  .reg .b16 %h<20>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [x];
  ld.param.u64 %rd2, [out];
  ld.global.b16 %h1, [%rd1];
  ld.global.b16 %h2, [%rd1+2];
  ld.global.b16 %h3, [%rd1+4];
  mul.f16 %h4, %h1, %h2;
  add.f16 %h5, %h4, %h3;
  st.global.b16 [%rd2], %h5;
  mul.f16 %h6, %h1, %h2;
  sub.f16 %h7, %h6, %h3;
  st.global.b16 [%rd2+2], %h7;
  mul.f16 %h8, %h1, %h2;
  sub.f16 %h9, %h3, %h8;
  st.global.b16 [%rd2+4], %h9;
  mul.rn.f16 %h10, %h1, %h2;
  add.f16 %h11, %h10, %h3;
  st.global.b16 [%rd2+6], %h11;
  // out[4..6]: c - a * b on pairs, from the pairs at x[4..10].
  ld.global.b32 %r1, [%rd1+8];
  ld.global.b32 %r2, [%rd1+12];
  ld.global.b32 %r3, [%rd1+16];
  mul.f16x2 %r4, %r1, %r2;
  sub.f16x2 %r5, %r3, %r4;
  st.global.b32 [%rd2+8], %r5;
  ret;
}
"#;

const THREADS: usize = 64;

/// Inputs where one rounding and two differ: a = b = 1 + k 2^-12, c = -(a * b rounded).
fn inputs() -> Vec<f32> {
    let mut x = Vec::new();
    for t in 0..THREADS {
        let a = 1.0 + (1 + t % 7) as f32 * 2f32.powi(-12);
        let b = 1.0 + (1 + t % 5) as f32 * 2f32.powi(-12);
        let c = if t % 2 == 0 { -(a * b) } else { a * b * 0.5 };
        x.extend([a, b, c]);
    }
    x
}

#[test]
fn mul_and_add_round_once() {
    let g = Gpu::new(PTX);
    let x = inputs();
    let (dx, out) = (g.buf(&x), g.zeros(THREADS * 32));
    g.run("forms", 1, THREADS as u32, &[Arg::Ptr(dx), Arg::Ptr(out)]);
    assert_eq!(g.compiled_launches(), 1);
    let o: Vec<f32> = g.get(out, THREADS * 8);
    let mut differs = 0;
    for t in 0..THREADS {
        let (a, b, c) = (x[3 * t], x[3 * t + 1], x[3 * t + 2]);
        let twice = a * b + c;
        let want = [
            a.mul_add(b, c),
            a.mul_add(b, -c),
            (-a).mul_add(b, c),
            twice,
            twice,
            a * b,
            twice,
            twice,
        ];
        let got = &o[8 * t..8 * t + 8];
        for (k, (g, w)) in got.iter().zip(want).enumerate() {
            assert_eq!(
                g.to_bits(),
                w.to_bits(),
                "thread {t}, result {k}: {g} vs {w}"
            );
        }
        differs += usize::from(a.mul_add(b, c) != twice);
    }
    // The inputs exercise the difference (else the test would prove nothing).
    assert!(differs >= THREADS / 4, "{differs}");
}

#[test]
fn cupy_remainder_is_fused() {
    let g = Gpu::new(PTX);
    let a: Vec<f64> = (0..THREADS).map(|t| 255.6 + t as f64 * 0.37).collect();
    let b: Vec<f64> = (0..THREADS).map(|t| 1.2 + (t % 3) as f64 * 0.1).collect();
    let (da, db, out) = (g.buf(&a), g.buf(&b), g.zeros(THREADS * 8));
    g.run(
        "rem",
        1,
        THREADS as u32,
        &[Arg::Ptr(da), Arg::Ptr(db), Arg::Ptr(out)],
    );
    assert_eq!(g.compiled_launches(), 1);
    let o: Vec<f64> = g.get(out, THREADS);
    for t in 0..THREADS {
        let q = (a[t] / b[t]).floor();
        let want = (-q).mul_add(b[t], a[t]);
        assert_eq!(o[t].to_bits(), want.to_bits(), "thread {t}");
    }
    // NumPy's and the GPU's fmod(255.6, 1.2), not the 0 of two roundings.
    assert_eq!(255.6f64 - 213.0 * 1.2, 0.0);
    assert!(o[0] > 0.0 && o[0] < 1e-13, "{}", o[0]);
}

#[test]
fn half_precision_is_fused_too() {
    let g = Gpu::new(PTX);
    // a = b = 1 + 2^-6: a * b = 1 + 2^-5 + 2^-12, which rounds to 1 + 2^-5 in half
    // precision; c = -(1 + 2^-5) leaves 2^-12 (0x0c00) fused, 0 rounded twice.
    // With c = 1 + 2^-5 instead, a * b - c and c - a * b are the ones at +-2^-12.
    for (c, want) in [
        (0xbc20u16, [0x0c00u16, 0x4020, 0xc020, 0x0000]),
        (0x3c20, [0x4020, 0x0c00, 0x8c00, 0x4020]),
    ] {
        // The pairs: a = b = (1 + 2^-6, 1 + 2^-6), c = (1 + 2^-5, -(1 + 2^-5)).
        let x = [
            0x3c10u16, 0x3c10, c, 0, 0x3c10, 0x3c10, 0x3c10, 0x3c10, 0x3c20, 0xbc20,
        ];
        let (dx, out) = (g.buf(&x), g.zeros(12));
        g.run("half", 1, 1, &[Arg::Ptr(dx), Arg::Ptr(out)]);
        let o: Vec<u16> = g.get(out, 6);
        assert_eq!(o[..4], want, "c {c:#x}");
        assert_eq!(o[4..], [0x8c00, 0xc020], "pairs");
    }
}
