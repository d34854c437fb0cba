// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Hand-written PTX snippets per instruction family, run through `launch`.

// Reference expressions spell out each term of the PTX computation.
#![allow(clippy::identity_op, clippy::erasing_op)]

mod common;
use common::*;
use vcuda_ptx::{KernelError, Module};

/// A kernel `k(out, inp)` whose body sees `%rd63` = out + 64 * tid.x and `%rd61` = inp.
fn kernel(decls: &str, body: &str) -> String {
    format!(
        ".version 9.0\n.target sm_90\n.address_size 64\n{decls}\n\
         .visible .entry k(.param .u64 out, .param .u64 inp)\n{{\n\
         .reg .pred %p<16>;\n.reg .b16 %h<16>;\n.reg .b32 %r<64>;\n.reg .b64 %rd<64>;\n\
         .reg .f32 %f<32>;\n.reg .f64 %fd<16>;\n\
         ld.param.u64 %rd60, [out];\nld.param.u64 %rd61, [inp];\nmov.u32 %r60, %tid.x;\n\
         mul.wide.u32 %rd62, %r60, 64;\nadd.s64 %rd63, %rd60, %rd62;\n{body}\nret;\n}}\n"
    )
}

/// Runs `k` with `threads` threads and returns the 16 u32 words of each thread's slot.
fn run(src: &str, threads: u32, inp: &[u8]) -> Vec<Vec<u32>> {
    let g = Gpu::new(src);
    let out = g.zeros(threads as usize * 64);
    let inp = g.mem.upload(if inp.is_empty() { &[0] } else { inp });
    g.run("k", 1, threads, &[Arg::Ptr(out), Arg::Ptr(inp)]);
    g.get::<u32>(out, threads as usize * 16)
        .chunks(16)
        .map(|c| c.to_vec())
        .collect()
}

fn run1(body: &str) -> Vec<u32> {
    run(&kernel("", body), 1, &[]).remove(0)
}

fn try_run(src: &str, threads: u32) -> Result<(), KernelError> {
    let g = Gpu::new(src);
    let out = g.zeros(threads as usize * 64);
    g.try_launch(
        "k",
        [1, 1, 1],
        [threads, 1, 1],
        0,
        &[Arg::Ptr(out), Arg::Ptr(out)],
    )
    .map(|_| ())
}

#[test]
fn carry_chains_multiply_128() {
    let (a, b) = (0xfedc_ba98_7654_3210u64, 0x0123_4567_89ab_cdefu64);
    let r = run1(&format!(
        "mov.u32 %r1, {}; mov.u32 %r2, {}; mov.u32 %r3, {}; mov.u32 %r4, {};\n\
         mul.lo.u32 %r10, %r1, %r3;\n\
         mul.hi.u32 %r11, %r1, %r3;\n\
         mad.lo.cc.u32 %r11, %r1, %r4, %r11;\n\
         madc.hi.u32 %r12, %r1, %r4, 0;\n\
         mad.lo.cc.u32 %r11, %r2, %r3, %r11;\n\
         madc.hi.cc.u32 %r12, %r2, %r3, %r12;\n\
         madc.hi.u32 %r13, %r2, %r4, 0;\n\
         mad.lo.cc.u32 %r12, %r2, %r4, %r12;\n\
         addc.u32 %r13, %r13, 0;\n\
         st.global.v4.u32 [%rd63], {{%r10, %r11, %r12, %r13}};\n\
         mov.u32 %r20, -1; add.cc.u32 %r21, %r20, 1; addc.cc.u32 %r22, 0, 0; subc.u32 %r23, 5, 1;\n\
         sub.cc.u32 %r24, 0, 1; subc.u32 %r25, 10, 0;\n\
         st.global.v4.u32 [%rd63+16], {{%r21, %r22, %r23, %r25}};",
        a as u32,
        (a >> 32) as u32,
        b as u32,
        (b >> 32) as u32
    ));
    let p = a as u128 * b as u128;
    assert_eq!(
        &r[..4],
        &[
            p as u32,
            (p >> 32) as u32,
            (p >> 64) as u32,
            (p >> 96) as u32
        ]
    );
    assert_eq!(&r[4..8], &[0, 1, 4, 9]);
}

#[test]
fn compare_select_and_predicates() {
    let r = run1(
        "mov.f32 %f1, 0f7FC00000; mov.f32 %f2, 0f3F800000;\n\
         setp.lt.s32 %p1|%p2, -5, 3;\n\
         setp.gtu.f32 %p3, %f1, %f2;\n\
         setp.gt.f32 %p4, %f1, %f2;\n\
         setp.ne.and.s32 %p5, 1, 2, !%p4;\n\
         setp.eq.or.u32 %p6, 1, 2, %p4;\n\
         setp.hi.s32 %p7, -1, 1;\n\
         selp.u32 %r1, 10, 20, %p1; selp.u32 %r2, 10, 20, %p2;\n\
         selp.u32 %r3, 1, 0, %p3; selp.u32 %r4, 1, 0, %p4; selp.u32 %r5, 1, 0, %p5;\n\
         selp.u32 %r6, 1, 0, %p6; selp.u32 %r7, 1, 0, %p7;\n\
         set.lt.u32.s32 %r8, 1, 2; set.ge.f32.f32 %f3, %f2, %f2; mov.b32 %r9, %f3;\n\
         slct.s32.s32 %r10, 7, 8, -1; slct.u32.f32 %r11, 7, 8, %f2;\n\
         not.pred %p8, %p1; selp.u32 %r12, 1, 0, %p8;\n\
         xor.pred %p9, %p1, %p3; selp.u32 %r13, 1, 0, %p9;\n\
         @!%p1 mov.u32 %r14, 99; @%p1 mov.u32 %r14, 77;\n\
         testp.notanumber.f32 %p10, %f1; selp.u32 %r15, 1, 0, %p10;\n\
         st.global.v4.u32 [%rd63], {%r1, %r2, %r3, %r4};\n\
         st.global.v4.u32 [%rd63+16], {%r5, %r6, %r7, %r8};\n\
         st.global.v4.u32 [%rd63+32], {%r9, %r10, %r11, %r12};\n\
         st.global.v2.u32 [%rd63+48], {%r13, %r14}; st.global.u32 [%rd63+56], %r15;",
    );
    assert_eq!(
        &r[..15],
        &[
            10,
            20,
            1,
            0,
            1,
            0,
            1,
            u32::MAX,
            1f32.to_bits(),
            8,
            7,
            0,
            0,
            77,
            1
        ]
    );
}

#[test]
fn bit_manipulation() {
    let r = run1(
        "mov.u32 %r1, 0x12345678;\n\
         prmt.b32 %r2, %r1, 0x9abcdef0, 0x7531;\n\
         prmt.b32.ecl %r3, %r1, 0, 2;\n\
         prmt.b32.rc16 %r4, %r1, 0, 1;\n\
         lop3.b32 %r5, %r1, 0xff00ff00, 0x0f0f0f0f, 0xe8;\n\
         bfe.u32 %r6, %r1, 8, 12; bfe.s32 %r7, 0x00f00000, 20, 4;\n\
         bfi.b32 %r8, 0xab, %r1, 24, 8;\n\
         bfind.u32 %r9, %r1; bfind.shiftamt.u32 %r10, %r1; brev.b32 %r11, %r1;\n\
         shf.l.clamp.b32 %r12, %r1, 0x80000000, 4; shf.r.wrap.b32 %r13, %r1, 0xf, 36;\n\
         dp4a.s32.u32 %r14, 0x01ff0203, 0x04030201, 100;\n\
         dp2a.lo.u32.u32 %r15, 0x00020003, 0x00000504, 1;\n\
         st.global.v4.u32 [%rd63], {%r2, %r3, %r4, %r5};\n\
         st.global.v4.u32 [%rd63+16], {%r6, %r7, %r8, %r9};\n\
         st.global.v4.u32 [%rd63+32], {%r10, %r11, %r12, %r13};\n\
         st.global.v2.u32 [%rd63+48], {%r14, %r15};",
    );
    let x = 0x1234_5678u32;
    let maj = |a: u32, b: u32, c: u32| (a & b) | (a & c) | (b & c);
    assert_eq!(r[0], 0x9ade_1256, "prmt {:#x}", r[0]);
    assert_eq!(r[1], 0x1234_3434);
    assert_eq!(r[2], 0x1234_1234);
    assert_eq!(r[3], maj(x, 0xff00_ff00, 0x0f0f_0f0f));
    assert_eq!(&r[4..8], &[0x456, 0xffff_ffff, 0xab34_5678, 28]);
    assert_eq!(
        &r[8..12],
        &[
            3,
            x.reverse_bits(),
            (0x8000_0000u64 << 32 | x as u64)
                .wrapping_shl(4)
                .wrapping_shr(32) as u32,
            ((0xfu64 << 32 | x as u64) >> 4) as u32
        ]
    );
    assert_eq!(
        r[12],
        (100 + 3 * 1 + 2 * 2 - 3 + 4) as u32,
        "signed bytes of a"
    );
    assert_eq!(r[13], 1 + 3 * 4 + 2 * 5);
}

#[test]
fn conversions_and_rounding() {
    let r = run1(
        "mov.f64 %fd1, 0d3FB999999999999A;\n\
         cvt.rn.f32.f64 %f1, %fd1; cvt.rz.f32.f64 %f2, %fd1; cvt.rm.f32.f64 %f3, %fd1; cvt.rp.f32.f64 %f4, %fd1;\n\
         mov.f32 %f5, 0fC0200000;\n\
         cvt.rni.s32.f32 %r1, %f5; cvt.rzi.s32.f32 %r2, %f5; cvt.rmi.s32.f32 %r3, %f5; cvt.rpi.s32.f32 %r4, %f5;\n\
         cvt.rzi.u32.f32 %r5, %f5; cvt.sat.u8.s32 %r6, -3; cvt.s8.s32 %r7, 300; cvt.s32.s8 %r8, %r7;\n\
         cvt.rn.f16.f32 %h1, %f5; cvt.f32.f16 %f6, %h1;\n\
         cvt.rn.f16x2.f32 %r9, %f5, 0f3F800000;\n\
         mov.b32 {%h2, %h3}, %r9; cvt.f32.f16 %f7, %h3;\n\
         fma.rn.f16x2 %r10, %r9, %r9, %r9;\n\
         add.rz.f32 %f8, 0f3F800000, 0f33800000;\n\
         div.rp.f32 %f9, 0f3F800000, 0f40400000;\n\
         st.global.v4.f32 [%rd63], {%f1, %f2, %f3, %f4};\n\
         st.global.v4.u32 [%rd63+16], {%r1, %r2, %r3, %r4};\n\
         st.global.v4.u32 [%rd63+32], {%r5, %r6, %r7, %r8};\n\
         st.global.v4.f32 [%rd63+48], {%f6, %f7, %f8, %f9};",
    );
    let f = |i: usize| f32::from_bits(r[i]);
    let tenth = 0.1f32;
    assert_eq!(f(0), tenth);
    assert_eq!(f(1), f32::from_bits(tenth.to_bits() - 1));
    assert_eq!(f(2), f32::from_bits(tenth.to_bits() - 1));
    assert_eq!(f(3), tenth);
    assert_eq!(
        &r[4..8],
        &[-2i32 as u32, -2i32 as u32, -3i32 as u32, -2i32 as u32]
    );
    assert_eq!(&r[8..12], &[0, 0, 44, 44]);
    assert_eq!(
        (f(12), f(13)),
        (-2.5, -2.5),
        "the first cvt source is the high half"
    );
    assert_eq!(f(14), 1.0, "add.rz drops the tiny addend");
    assert_eq!(
        f(15),
        f32::from_bits((1.0f32 / 3.0).to_bits()),
        "1/3 rounds up to nearest already"
    );
}

#[test]
fn vectors_packing_and_generic_addresses() {
    let src = kernel(
        ".global .align 16 .b8 gbuf[256];",
        ".shared .align 16 .b8 sh[64];\n.local .align 8 .b8 loc[16];\n\
         mov.u64 %rd1, {%r60, %r60}; mov.b64 {%r1, %r2}, 0x1111222233334444;\n\
         mov.u32 %r3, sh; cvta.shared.u64 %rd2, %rd0; mov.u64 %rd3, sh; cvta.shared.u64 %rd2, %rd3;\n\
         st.u32 [%rd2+8], 0xabcd; ld.shared.u32 %r4, [%r3+8];\n\
         mov.u64 %rd4, loc; cvta.local.u64 %rd5, %rd4; st.u64 [%rd5], %rd1; ld.local.u32 %r5, [loc+4];\n\
         isspacep.shared %p1, %rd2; isspacep.local %p2, %rd2; isspacep.global %p3, %rd63;\n\
         selp.u32 %r6, 1, 0, %p1; selp.u32 %r7, 1, 0, %p2; selp.u32 %r8, 1, 0, %p3;\n\
         cvta.to.shared.u64 %rd6, %rd2; cvt.u32.u64 %r9, %rd6;\n\
         mov.u64 %rd7, gbuf; mul.wide.u32 %rd8, %r60, 16; add.s64 %rd9, %rd7, %rd8;\n\
         st.global.v2.u64 [%rd9+16], {%rd1, %rd1}; ld.global.v4.u32 {%r10, %r11, %r12, %r13}, [%rd9+16];\n\
         mov.b32 %r14, {%h1, %h2}; mov.b16 %h3, 0x1234; mov.b32 %r15, {%h3, %h3};\n\
         st.global.v4.u32 [%rd63], {%r1, %r2, %r4, %r5};\n\
         st.global.v4.u32 [%rd63+16], {%r6, %r7, %r8, %r9};\n\
         st.global.v4.u32 [%rd63+32], {%r10, %r11, %r12, %r13};\n\
         st.global.u32 [%rd63+48], %r15;",
    );
    let r = run(&src, 3, &[]);
    for (t, r) in r.iter().enumerate() {
        let t = t as u32;
        assert_eq!(
            &r[..4],
            &[0x3333_4444, 0x1111_2222, 0xabcd, t],
            "thread {t}"
        );
        assert_eq!(&r[4..8], &[1, 0, 1, 0]);
        assert_eq!(&r[8..13], &[t, t, t, t, 0x1234_1234]);
    }
}

#[test]
fn param_address_and_calls() {
    let src = r#"
.version 9.0
.target sm_90
.address_size 64
.func (.param .b64 ret) twice_plus(.param .b32 a, .param .align 8 .b8 s[16])
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    ld.param.u32 %r1, [a];
    ld.param.u64 %rd1, [s+8];
    cvt.u64.u32 %rd2, %r1;
    shl.b64 %rd2, %rd2, 1;
    add.s64 %rd3, %rd2, %rd1;
    st.param.b64 [ret], %rd3;
    ret;
}
.visible .entry k(.param .u64 out, .param .align 8 .b8 big[24])
{
    .reg .pred %p<3>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<12>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mov.b64 %rd2, big;
    cvta.param.u64 %rd3, %rd2;
    ld.u64 %rd4, [%rd3+16];
    ld.param.u32 %r2, [%rd2+8];
    setp.lt.u32 %p1, %r1, 2;
    @%p1 bra DONE;
    {
    .param .b32 a0;
    .param .align 8 .b8 a1[16];
    .param .b64 r0;
    st.param.b32 [a0], %r1;
    st.param.b64 [a1+8], %rd4;
    call.uni (r0), twice_plus, (a0, a1);
    ld.param.b64 %rd5, [r0];
    }
    mul.wide.u32 %rd6, %r1, 16;
    add.s64 %rd7, %rd1, %rd6;
    st.global.v2.u64 [%rd7], {%rd5, %rd4};
    st.global.u32 [%rd7+8], %r2;
    setp.eq.u32 %p2, %r1, 3;
    @%p2 exit;
    st.global.u32 [%rd7+12], 5;
DONE:
    ret;
}
"#;
    let g = Gpu::new(src);
    let out = g.zeros(6 * 16);
    let mut big = vec![0u8; 24];
    big[8..12].copy_from_slice(&77u32.to_le_bytes());
    big[16..24].copy_from_slice(&1000u64.to_le_bytes());
    g.run("k", 1, 6, &[Arg::Ptr(out), Arg::Bytes(big)]);
    let o: Vec<u64> = g.get(out, 12);
    for t in 0..6u64 {
        if t < 2 {
            assert_eq!(&o[t as usize * 2..t as usize * 2 + 2], &[0, 0]);
        } else {
            assert_eq!(o[t as usize * 2], 2 * t + 1000);
            let hi = if t == 3 { 77 } else { 77 | (5 << 32) };
            assert_eq!(o[t as usize * 2 + 1], hi, "thread {t}");
        }
    }
}

#[test]
fn jump_table_and_loops() {
    let src = kernel(
        "",
        "and.b32 %r1, %r60, 3; mov.u32 %r2, 0;\n\
         ts: .branchtargets L0, L1, L2, L3;\n\
         brx.idx %r1, ts;\n\
         L0: add.u32 %r2, %r2, 1; bra.uni E;\n\
         L1: add.u32 %r2, %r2, 10; bra.uni E;\n\
         L2: add.u32 %r2, %r2, 100;\n\
         L3: add.u32 %r2, %r2, 1000;\n\
         E: mov.u32 %r3, 0; mov.u32 %r4, 0;\n\
         LOOP: add.u32 %r4, %r4, %r3; add.u32 %r3, %r3, 1; setp.le.u32 %p1, %r3, %r60; @%p1 bra LOOP;\n\
         activemask.b32 %r5;\n\
         st.global.v4.u32 [%rd63], {%r1, %r2, %r4, %r5};",
    );
    let r = run(&src, 40, &[]);
    for (t, r) in r.iter().enumerate() {
        let want_sel = [1, 10, 1100, 1000][t % 4];
        let full = if t < 32 { u32::MAX } else { 0xff };
        assert_eq!(
            &r[..4],
            &[(t % 4) as u32, want_sel, (t * (t + 1) / 2) as u32, full],
            "thread {t}"
        );
    }
}

#[test]
fn named_barriers_producer_consumer() {
    let src = kernel(
        "",
        ".shared .align 4 .b8 box[128];\n\
         mov.u32 %r1, box; shr.u32 %r2, %r60, 5; and.b32 %r3, %r60, 31; shl.b32 %r4, %r3, 2; add.u32 %r5, %r1, %r4;\n\
         setp.eq.u32 %p1, %r2, 1;\n\
         @%p1 bra PRODUCER;\n\
         bar.sync 1, 64;\n\
         ld.shared.u32 %r6, [%r5];\n\
         st.global.u32 [%rd63], %r6;\n\
         bra.uni END;\n\
         PRODUCER: mul.lo.u32 %r7, %r3, 3; st.shared.u32 [%r5], %r7;\n\
         bar.arrive 1, 64;\n\
         END: bar.red.popc.u32 %r8, 0, %p1; bar.red.or.pred %p2, 0, %p1; selp.u32 %r9, 1, 0, %p2;\n\
         st.global.v2.u32 [%rd63+8], {%r8, %r9};",
    );
    let r = run(&src, 64, &[]);
    for (t, r) in r.iter().enumerate() {
        if t < 32 {
            assert_eq!(r[0], t as u32 * 3);
        }
        assert_eq!(&r[2..4], &[32, 1], "thread {t}");
    }
}

#[test]
fn warp_misc_partial_masks() {
    let src = kernel(
        "",
        "and.b32 %r1, %r60, 3; setp.lt.u32 %p1, %r60, 20;\n\
         @!%p1 bra SKIP;\n\
         elect.sync %r2|%p2, 0xffffffff; selp.u32 %r3, 1, 0, %p2;\n\
         match.all.sync.b32 %r4|%p3, 7, 0xfffff; match.any.sync.b32 %r5, %r1, 0xfffff;\n\
         redux.sync.min.u32 %r6, %r60, 0xfffff; redux.sync.xor.b32 %r7, %r60, 0xfffff;\n\
         vote.sync.any.pred %p4, %p1, 0xfffff; vote.sync.uni.pred %p5, %p2, 0xfffff;\n\
         selp.u32 %r8, 1, 0, %p4; selp.u32 %r9, 1, 0, %p5;\n\
         shfl.sync.bfly.b32 %r10|%p6, %r60, 1, 0x101f, 0xfffff; selp.u32 %r11, 1, 0, %p6;\n\
         shfl.sync.idx.b32 %r12, %r60, 3, 0x181f, 0xfffff;\n\
         activemask.b32 %r13;\n\
         st.global.v4.u32 [%rd63], {%r2, %r3, %r4, %r5};\n\
         st.global.v4.u32 [%rd63+16], {%r6, %r7, %r8, %r9};\n\
         st.global.v4.u32 [%rd63+32], {%r10, %r11, %r12, %r13};\n\
         SKIP: bar.warp.sync -1;",
    );
    let r = run(&src, 32, &[]);
    let mask = 0xfffffu32;
    for (t, r) in r.iter().enumerate().take(20) {
        let t = t as u32;
        let any = (0..20)
            .filter(|k| k % 4 == t % 4)
            .fold(0u32, |m, k| m | 1 << k);
        let xor = (0..20u32).fold(0, |a, k| a ^ k);
        // bfly 1 within segments of 16 (c = 0x101f); idx 3 within segments of 8 (c = 0x181f).
        let idx_src = (t & 0x18) | 3;
        assert_eq!(&r[..4], &[0, (t == 0) as u32, mask, any], "lane {t}");
        assert_eq!(&r[4..8], &[0, xor, 1, 0]);
        assert_eq!(&r[8..12], &[t ^ 1, 1, idx_src, mask], "lane {t}");
    }
}

/// All 32 lanes converged, each naming its own group as membermask (as
/// `cg::labeled_partition` and `__match_any_sync` partitions do): every lane votes,
/// matches and reduces within its group only.
#[test]
fn warp_ops_within_each_lanes_membermask() {
    let src = kernel(
        "",
        "and.b32 %r1, %r60, 3; match.any.sync.b32 %r2, %r1, -1;\n\
         redux.sync.max.u32 %r3, %r60, %r2; redux.sync.add.u32 %r4, %r60, %r2;\n\
         setp.lt.u32 %p1, %r60, 8; vote.sync.ballot.b32 %r5, %p1, %r2;\n\
         vote.sync.all.pred %p2, %p1, %r2; selp.u32 %r6, 1, 0, %p2;\n\
         match.all.sync.b32 %r7|%p3, %r1, %r2; selp.u32 %r8, 1, 0, %p3;\n\
         shr.u32 %r9, %r60, 4; match.any.sync.b32 %r10, %r9, %r2;\n\
         st.global.v4.u32 [%rd63], {%r2, %r3, %r4, %r5};\n\
         st.global.v4.u32 [%rd63+16], {%r6, %r7, %r8, %r10};",
    );
    let r = run(&src, 32, &[]);
    for (t, r) in r.iter().enumerate() {
        let t = t as u32;
        let group: Vec<u32> = (0..32).filter(|k| k % 4 == t % 4).collect();
        let mask = group.iter().fold(0u32, |m, k| m | 1 << k);
        let below8 = group
            .iter()
            .filter(|&&k| k < 8)
            .fold(0u32, |m, k| m | 1 << k);
        let half = group
            .iter()
            .filter(|&&k| k >> 4 == t >> 4)
            .fold(0u32, |m, k| m | 1 << k);
        assert_eq!(
            &r[..4],
            &[mask, 28 + t % 4, group.iter().sum::<u32>(), below8],
            "lane {t}"
        );
        assert_eq!(&r[4..8], &[0, mask, 1, half], "lane {t}");
    }
}

#[test]
fn atomics_generic_shared_and_red() {
    let src = kernel(
        ".global .align 8 .u64 g64;",
        ".shared .align 8 .b8 s[16];\n\
         mov.u64 %rd1, s; cvta.shared.u64 %rd2, %rd1;\n\
         setp.eq.u32 %p1, %r60, 0; @%p1 st.shared.u32 [s], 0; bar.sync 0;\n\
         atom.add.u32 %r1, [%rd2], 2;\n\
         red.shared.max.s32 [s+4], %r60;\n\
         atom.global.cas.b64 %rd3, [g64], 0, 1;\n\
         red.global.add.u64 [g64], 10;\n\
         atom.shared.inc.u32 %r2, [s+8], 5;\n\
         bar.sync 0;\n\
         ld.shared.v2.u32 {%r3, %r4}, [s]; ld.global.u64 %rd4, [g64];\n\
         st.global.v4.u32 [%rd63], {%r1, %r3, %r4, %r2}; st.global.u64 [%rd63+16], %rd4;",
    );
    let r = run(&src, 16, &[]);
    let mut olds: Vec<u32> = r.iter().map(|x| x[0]).collect();
    olds.sort();
    assert_eq!(olds, (0..16).map(|k| 2 * k).collect::<Vec<_>>());
    // inc with limit 5 counts 0, 1, .., 5, 0, 1, ..
    let mut incs: Vec<u32> = r.iter().map(|x| x[3]).collect();
    incs.sort();
    let mut want: Vec<u32> = (0..16).map(|k| k % 6).collect();
    want.sort();
    assert_eq!(incs, want);
    for x in &r {
        assert_eq!(&x[1..3], &[32, 15]);
        assert_eq!(x[4] as u64 | (x[5] as u64) << 32, 161);
    }
}

#[test]
fn unsupported_reported_only_when_executed() {
    let src = kernel(
        ".extern .func foo(.param .b32 x);",
        "setp.eq.u32 %p1, %r60, 7;\n\
         @%p1 tex.2dms.v4.s32.s32 {%r1, %r2, %r3, %r4}, [%rd1, {%r1, %r5, %r6, %r6}];\n\
         st.global.u32 [%rd63], 1;",
    );
    assert!(try_run(&src, 4).is_ok());
    let e = try_run(&src, 8).unwrap_err();
    match &e {
        KernelError::Unsupported { instruction, loc } => {
            assert!(instruction.starts_with("tex.2dms"), "{instruction}");
            assert_eq!(loc.thread, [7, 0, 0]);
        }
        e => panic!("{e}"),
    }
    assert_eq!(e.cuda_status(), 801);
    let src = kernel(
        ".extern .func foo(.param .b32 x);",
        "{ .param .b32 a; st.param.b32 [a], 1; call.uni foo, (a); }",
    );
    let e = try_run(&src, 1).unwrap_err();
    assert!(
        e.to_string().contains("call of external function `foo`"),
        "{e}"
    );
}

#[test]
fn launch_failures() {
    // A barrier that can never complete.
    let e = try_run(&kernel("", "bar.sync 1, 64;"), 32).unwrap_err();
    assert_eq!(e.cuda_status(), 702, "{e}");
    // An infinite loop stops at the instruction limit.
    let mut g = Gpu::new(&kernel("", "L: bra.uni L;"));
    g.opts.instruction_limit = Some(100_000);
    let e = g
        .try_launch("k", [2, 1, 1], [64, 1, 1], 0, &[Arg::Ptr(0), Arg::Ptr(0)])
        .unwrap_err();
    assert!(matches!(e, KernelError::InstructionLimit { .. }), "{e}");
    // So does one around a barrier (compiled: a round per iteration, checked between rounds).
    let mut g = Gpu::new(&kernel("", "L: bar.sync 0; bra.uni L;"));
    g.opts.instruction_limit = Some(100_000);
    let e = g
        .try_launch("k", [2, 1, 1], [64, 1, 1], 0, &[Arg::Ptr(0), Arg::Ptr(0)])
        .unwrap_err();
    assert!(matches!(e, KernelError::InstructionLimit { .. }), "{e}");
    // Unbounded recursion overflows the stack.
    let src = ".version 9.0\n.target sm_90\n.address_size 64\n\
        .func f(.param .b64 x) { .local .b8 pad[256]; { .param .b64 y; st.param.b64 [y], 1; call f, (y); } ret; }\n\
        .visible .entry k(.param .u64 out, .param .u64 inp) { { .param .b64 y; st.param.b64 [y], 1; call f, (y); } ret; }";
    let e = try_run(src, 1).unwrap_err();
    assert_eq!(e.cuda_status(), 714, "{e}");
    // A kernel frame over the local memory limit cannot launch.
    let e = try_run(
        &kernel(
            "",
            ".local .align 8 .b8 big[2000000]; st.local.u32 [big], 1;",
        ),
        1,
    )
    .unwrap_err();
    assert_eq!(e.cuda_status(), 701, "{e}");
    // Local memory beyond the frame.
    let e = try_run(&kernel("", ".local .b8 l[8]; ld.local.u32 %r1, [l+16];"), 1).unwrap_err();
    assert_eq!(e.cuda_status(), 700, "{e}");
    // Writes to const space and misaligned vectors.
    let e = try_run(&kernel("", "ld.global.v2.u32 {%r1, %r2}, [%rd63+4];"), 1).unwrap_err();
    assert_eq!(e.cuda_status(), 716, "{e}");
    // Bad configurations.
    let g = Gpu::new(&kernel("", ""));
    for (grid, block) in [
        ([1, 1, 1], [1025, 1, 1]),
        ([0, 1, 1], [1, 1, 1]),
        ([1, 1, 1], [1, 1, 65]),
    ] {
        let e = g
            .try_launch("k", grid, block, 0, &[Arg::Ptr(0), Arg::Ptr(0)])
            .unwrap_err();
        assert_eq!(e.cuda_status(), 9);
    }
    let e = g
        .try_launch(
            "k",
            [1, 1, 1],
            [1, 1, 1],
            1 << 20,
            &[Arg::Ptr(0), Arg::Ptr(0)],
        )
        .unwrap_err();
    assert!(matches!(e, KernelError::SharedMemoryTooLarge { .. }), "{e}");
}

#[test]
fn module_metadata() {
    let src = r#"
.version 9.0
.target sm_90
.address_size 64
.global .align 4 .u32 arr[4] = {1, 2, 3};
.const .align 8 .f64 two = 0d4000000000000000;
.global .align 8 .u64 ptrs[2] = {generic(arr)+4, arr};
.const .align 4 .f32 fl[2] = {1.5, 0f40000000};
.global .align 1 .b8 str[3] = {104, 105};
.shared .align 8 .b8 modsh[24];
.extern .shared .align 16 .b8 dyn[];
.func (.param .b32 r) helper() { .reg .b32 %r1; mov.u32 %r1, modsh; st.param.b32 [r], %r1; ret; }
.visible .entry k(.param .u8 a, .param .u64 b, .param .align 16 .b8 c[20], .param .u16 d) .reqntid 64, 2
{
    .local .align 8 .b8 depot[40];
    .shared .align 4 .b8 own[100];
    .reg .b32 %r<3>;
    { .param .b32 r0; call.uni (r0), helper, (); ld.param.b32 %r1, [r0]; }
    mov.u32 %r2, own;
    ret;
}
.entry plain() .maxntid 256 .minnctapersm 2 { ret; }
"#;
    let m = Module::parse(src).unwrap();
    let k = &m.kernels()[0];
    let layout: Vec<(u32, u32, u32)> = k
        .params
        .iter()
        .map(|p| (p.offset, p.size, p.align))
        .collect();
    assert_eq!(layout, [(0, 1, 1), (8, 8, 8), (16, 20, 16), (36, 2, 2)]);
    assert_eq!(k.param_size, 38);
    assert_eq!(k.reqntid, Some([64, 2, 1]));
    assert_eq!(
        k.static_shared,
        32 + 100,
        "module block (24 -> 32) plus its own"
    );
    assert!(k.local_bytes >= 40);
    let p = &m.kernels()[1];
    assert_eq!(
        (p.maxntid, p.minnctapersm, p.static_shared),
        (Some([256, 1, 1]), Some(2), 0)
    );
    let names: Vec<&str> = m.globals().iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["arr", "two", "ptrs", "fl", "str"]);
    let g = |n: &str| m.globals()[m.global(n).unwrap().0 as usize].clone();
    // Only the initialized prefix is stored; the rest is zero.
    assert_eq!(g("arr").init, [1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0]);
    assert_eq!(g("arr").size, 16);
    assert_eq!(g("two").init, 2f64.to_le_bytes());
    assert_eq!(g("two").space, vcuda_ptx::GlobalSpace::Const);
    assert_eq!(
        g("fl").init,
        [1.5f32.to_le_bytes(), 2f32.to_le_bytes()].concat()
    );
    assert_eq!(g("str").init, [104, 105]);
    assert_eq!(g("str").size, 3);
    let ptrs = g("ptrs");
    assert_eq!(ptrs.relocs.len(), 2);
    let bytes = ptrs.initial_bytes(&|id| 0x7f00_0000_1000 + id.0 as u64);
    assert_eq!(
        u64::from_le_bytes(bytes[..8].try_into().unwrap()),
        0x7f00_0000_1004
    );
    assert_eq!(
        u64::from_le_bytes(bytes[8..].try_into().unwrap()),
        0x7f00_0000_1000
    );
    // Large uninitialized variables cost no memory at parse time.
    let huge = Module::parse(".global .align 8 .b8 huge[4000000000];").unwrap();
    assert!(huge.globals()[0].init.is_empty() && huge.globals()[0].size == 4_000_000_000);
    // .reqntid must match the launch.
    let gpu = Gpu::new(src);
    let args = [
        Arg::Bytes(vec![1]),
        Arg::Ptr(0),
        Arg::Bytes(vec![0; 20]),
        Arg::Bytes(vec![0; 2]),
    ];
    assert_eq!(
        gpu.try_launch("k", [1, 1, 1], [64, 1, 1], 0, &args)
            .unwrap_err()
            .cuda_status(),
        9
    );
    gpu.try_launch("k", [1, 1, 1], [64, 2, 1], 0, &args)
        .unwrap();
}

#[test]
fn parse_errors_name_positions() {
    let cases = [
        (
            ".version 9.0\n.entry k() {\n  mov.u32 %r1, 1;\n}",
            3,
            "a declared register",
        ),
        (
            ".entry k() {\n.reg .b32 %r<2>;\n  bra NOWHERE;\n}",
            3,
            "a label",
        ),
        (".entry k() {\nA: ret;\nA: ret;\n}", 3, "unique label"),
        (".entry k( {", 1, "`.param`"),
        (".global .u32 x = {1, 2};", 1, "no more initializers"),
        (".global .u33 x;", 1, "a type"),
        (".entry k() { ret; ", 1, "`}`"),
    ];
    for (src, line, what) in cases {
        let e = Module::parse(src).unwrap_err();
        assert_eq!(e.line, line, "{src}: {e}");
        assert!(e.to_string().contains(what), "{src}: {e}");
    }
}

#[test]
fn cp_async_is_a_synchronous_copy() {
    let src = kernel(
        "",
        ".shared .align 16 .b8 s[512];\n\
         mov.u32 %r1, s; shl.b32 %r2, %r60, 4; add.u32 %r3, %r1, %r2;\n\
         mul.wide.u32 %rd1, %r60, 16; add.s64 %rd2, %rd61, %rd1;\n\
         cp.async.cg.shared.global [%r3], [%rd2], 16, 12;\n\
         cp.async.ca.shared.global [%r3+256], [%rd2], 4;\n\
         cp.async.commit_group; cp.async.wait_group 0; bar.sync 0;\n\
         ld.shared.v4.u32 {%r4, %r5, %r6, %r7}, [%r3]; ld.shared.u32 %r8, [%r3+256];\n\
         st.global.v4.u32 [%rd63], {%r4, %r5, %r6, %r7}; st.global.u32 [%rd63+16], %r8;",
    );
    let inp: Vec<u8> = (0..4 * 16 * 4).map(|i| i as u8).collect();
    let r = run(&src, 4, &inp);
    for (t, r) in r.iter().enumerate() {
        let w = |k: usize| {
            u32::from_le_bytes(inp[t * 16 + k * 4..t * 16 + k * 4 + 4].try_into().unwrap())
        };
        assert_eq!(&r[..5], &[w(0), w(1), w(2), 0, w(0)], "thread {t}");
    }
}

#[test]
fn predefined_identifiers() {
    // `warpSize` compiles to the predefined identifier WARP_SZ.
    let r = run1(
        "mov.u32 %r1, WARP_SZ; rem.u32 %r2, 70, WARP_SZ;\n\
         mov.u32 %r3, %cluster_nctarank; mov.u32 %r4, %is_explicit_cluster;\n\
         st.global.v4.u32 [%rd63], {%r1, %r2, %r3, %r4};",
    );
    assert_eq!(&r[..4], &[32, 6, 1, 0]);
}

#[test]
fn runaway_launches_stop_on_time_and_on_cancel() {
    use std::time::{Duration, Instant};

    use vcuda_ptx::Cancel;

    // An endless kernel stops at the time limit with cudaErrorLaunchTimeout.
    let mut g = Gpu::new(&kernel("", "L: bra.uni L;"));
    g.opts.time_limit = Some(Duration::from_millis(200));
    let t = Instant::now();
    let e = g
        .try_launch("k", [4, 1, 1], [64, 1, 1], 0, &[Arg::Ptr(0), Arg::Ptr(0)])
        .unwrap_err();
    assert!(matches!(e, KernelError::Timeout { limit_ms: 200 }), "{e}");
    assert_eq!(e.cuda_status(), 702);
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    // So does a grid of 2^31 - 1 blocks that each end at once.
    let mut g = Gpu::new(&kernel("", ""));
    g.opts.time_limit = Some(Duration::from_millis(200));
    let t = Instant::now();
    let e = g
        .try_launch(
            "k",
            [i32::MAX as u32, 1, 1],
            [1, 1, 1],
            0,
            &[Arg::Ptr(0), Arg::Ptr(0)],
        )
        .unwrap_err();
    assert!(matches!(e, KernelError::Timeout { .. }), "{e}");
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    // Cancelling from another thread stops an endless kernel.
    let mut g = Gpu::new(&kernel("", "L: bra.uni L;"));
    let cancel = Cancel::default();
    g.opts.cancel = Some(cancel.clone());
    let t = Instant::now();
    let e = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(100));
            cancel.cancel();
        });
        g.try_launch("k", [4, 1, 1], [64, 1, 1], 0, &[Arg::Ptr(0), Arg::Ptr(0)])
            .unwrap_err()
    });
    assert!(matches!(e, KernelError::Cancelled), "{e}");
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    // A cancelled token fails every later launch at once.
    let e = g
        .try_launch("k", [1, 1, 1], [1, 1, 1], 0, &[Arg::Ptr(0), Arg::Ptr(0)])
        .unwrap_err();
    assert!(matches!(e, KernelError::Cancelled), "{e}");
}

#[test]
fn kernels_too_large_to_compile_run_interpreted() {
    // Code generation grows with the kernel's size, and kernels come from the guest: past a
    // bound, a kernel runs interpreted (and still runs).
    let body = "add.s32 %r1, %r1, 1;\n".repeat(70_000) + "st.global.u32 [%rd63], %r1;";
    let g = Gpu::new(&kernel("", &format!("mov.u32 %r1, 0;\n{body}")));
    let out = g.zeros(64);
    let s = g.run("k", 1, 1, &[Arg::Ptr(out), Arg::Ptr(out)]);
    assert!(!s.compiled);
    assert_eq!(g.get::<u32>(out, 1)[0], 70_000);
}

#[test]
fn shared_and_local_addresses_wrap_at_32_bits() {
    // `[%r + 68]` with %r = -64 (as a 32-bit register) is offset 4, as on the GPU; the
    // differential harness runs it interpreted and compiled.
    let src = kernel(
        ".shared .align 16 .b8 sh[64];",
        ".local .align 8 .b8 loc[16];\n\
         mov.u32 %r3, sh; st.shared.u32 [%r3+4], 0x1234; st.shared.u32 [%r3+8], 0x5678;\n\
         mov.u32 %r5, -64; add.s32 %r5, %r5, %r3; ld.shared.u32 %r4, [%r5+68];\n\
         mov.u32 %r6, -72; ld.shared.u32 %r7, [%r6+80];\n\
         cvt.u64.u32 %rd4, %r5; ld.shared.u32 %r8, [%rd4+68];\n\
         mov.u32 %r9, loc; st.local.u32 [%r9+12], 0x9abc; add.s32 %r10, %r9, -16;\n\
         ld.local.u32 %r11, [%r10+28];\n\
         st.shared.u32 [%r3+12], 0x9999; ld.shared.v2.u32 {%r12, %r13}, [%r5+72];\n\
         st.shared.v2.u32 [%r5+80], {%r13, %r12}; ld.shared.u32 %r14, [%r3+20];\n\
         st.u32 [%rd63], %r4; st.u32 [%rd63+4], %r7; st.u32 [%rd63+8], %r8; st.u32 [%rd63+12], %r11;\n\
         st.u32 [%rd63+16], %r12; st.u32 [%rd63+20], %r13; st.u32 [%rd63+24], %r14;",
    );
    let r = run(&src, 4, &[]);
    for t in r {
        assert_eq!(
            &t[..7],
            &[0x1234, 0x5678, 0x1234, 0x9abc, 0x5678, 0x9999, 0x5678]
        );
    }
}

/// Threads that the compiled code runs as a group (lanes in lockstep) diverge at a loop with
/// per-thread trip counts and at an exit, meet again at barriers, and the block's size is not
/// a multiple of the group's: every thread's result is checked, and both engines agree.
#[test]
fn groups_diverge_and_meet_again_at_barriers() {
    let src = kernel(
        ".shared .align 4 .b32 sh[64];",
        "rem.u32 %r2, %r60, 3;\n\
         mov.u32 %r3, 0;\n\
         mov.u32 %r4, 0;\n\
         $Lloop:\n\
         add.u32 %r3, %r3, %r60;\n\
         add.u32 %r3, %r3, 7;\n\
         add.u32 %r4, %r4, 1;\n\
         setp.le.u32 %p1, %r4, %r2;\n\
         @%p1 bra $Lloop;\n\
         shl.b32 %r5, %r60, 2;\n\
         mov.u32 %r6, sh;\n\
         add.u32 %r7, %r6, %r5;\n\
         st.shared.u32 [%r7], %r3;\n\
         bar.sync 0;\n\
         xor.b32 %r8, %r60, 1;\n\
         min.u32 %r8, %r8, 10;\n\
         shl.b32 %r9, %r8, 2;\n\
         add.u32 %r10, %r6, %r9;\n\
         ld.shared.u32 %r11, [%r10];\n\
         st.global.u32 [%rd63], %r11;\n\
         st.global.u32 [%rd63+4], %r4;\n\
         setp.eq.u32 %p2, %r60, 5;\n\
         @%p2 bra $Ldone;\n\
         setp.lt.u32 %p3, %r60, 100;\n\
         @%p3 bar.sync 0;\n\
         shl.b32 %r12, %r3, 1;\n\
         st.shared.u32 [%r7], %r12;\n\
         bar.sync 0;\n\
         add.u32 %r13, %r60, 2;\n\
         rem.u32 %r13, %r13, 11;\n\
         shl.b32 %r14, %r13, 2;\n\
         add.u32 %r15, %r6, %r14;\n\
         ld.shared.u32 %r16, [%r15];\n\
         st.global.u32 [%rd63+8], %r16;\n\
         $Ldone:",
    );
    let g = Gpu::new(&src);
    let n = 11usize;
    let out = g.zeros(n * 64);
    g.run("k", 1, n as u32, &[Arg::Ptr(out), Arg::Ptr(out)]);
    assert_eq!(g.compiled_launches(), 1, "the kernel runs compiled");
    let r: Vec<Vec<u32>> = g
        .get::<u32>(out, n * 16)
        .chunks(16)
        .map(|c| c.to_vec())
        .collect();
    let acc = |t: usize| ((t % 3) + 1) as u32 * (t as u32 + 7);
    for (t, r) in r.iter().enumerate() {
        assert_eq!(
            r[0],
            acc((t ^ 1).min(10)),
            "thread {t}: its neighbour's sum"
        );
        assert_eq!(r[1], (t % 3) as u32 + 1, "thread {t}: its trip count");
        // Thread 5 left before the second phase; thread 3 reads its slot from the first.
        let from = (t + 2) % 11;
        let want = if t == 5 {
            0
        } else if from == 5 {
            acc(5)
        } else {
            2 * acc(from)
        };
        assert_eq!(r[2], want, "thread {t}: second phase");
    }
}

/// `bar.warp.sync` (`__syncwarp`, a cooperative-groups tile's `sync()`) orders a warp's
/// lanes through shared memory: the compiler, which runs threads one after another, leaves
/// such kernels to the interpreter (a cooperative-groups sample summed wrong before).
#[test]
fn warp_sync_kernels_run_interpreted_and_see_their_neighbours() {
    let src = kernel(
        ".shared .align 4 .b32 sh[32];",
        "shl.b32 %r1, %r60, 2;\n\
         mov.u32 %r2, sh;\n\
         add.u32 %r3, %r2, %r1;\n\
         add.u32 %r4, %r60, 100;\n\
         st.shared.u32 [%r3], %r4;\n\
         bar.warp.sync -1;\n\
         xor.b32 %r5, %r60, 1;\n\
         shl.b32 %r6, %r5, 2;\n\
         add.u32 %r7, %r2, %r6;\n\
         ld.shared.u32 %r8, [%r7];\n\
         st.global.u32 [%rd63], %r8;",
    );
    let g = Gpu::new(&src);
    let out = g.zeros(32 * 64);
    g.run("k", 1, 32, &[Arg::Ptr(out), Arg::Ptr(out)]);
    assert_eq!(g.compiled_launches(), 0, "runs interpreted");
    let r = g.get::<u32>(out, 32 * 16);
    for t in 0..32u32 {
        assert_eq!(r[t as usize * 16], (t ^ 1) + 100, "thread {t}");
    }
}

#[test]
fn group_code_sees_registers_threads_set_apart_before_a_barrier() {
    // %r1 only ever receives constants (uniform to the group code's analysis), but which
    // one depends on the thread: after the barrier a group of threads must not take the
    // first thread's value for all.
    let body = "mov.u32 %r1, 7;\n\
        and.b32 %r2, %r60, 1;\n\
        setp.eq.u32 %p1, %r2, 0;\n\
        @%p1 bra SKIP;\n\
        mov.u32 %r1, 9;\n\
        SKIP:\n\
        bar.sync 0;\n\
        add.u32 %r3, %r1, 1;\n\
        st.global.u32 [%rd63], %r3;";
    let r = run(&kernel("", body), 64, &[]);
    for (t, w) in r.iter().enumerate() {
        assert_eq!(w[0], if t % 2 == 0 { 8 } else { 10 }, "thread {t}");
    }
}

#[test]
fn group_code_sees_one_group_apart_among_groups_together() {
    // Only thread 5 takes the branch: its group reaches the barriers a thread at a time,
    // every other group together, all at the same points (the rounds' shortcut), and the
    // group with thread 5 must still not take one thread's %r1 for all.
    let body = "mov.u32 %r1, 7;\n\
        setp.ne.u32 %p1, %r60, 5;\n\
        @%p1 bra SKIP;\n\
        mov.u32 %r1, 9;\n\
        SKIP:\n\
        bar.sync 0;\n\
        add.u32 %r3, %r1, 1;\n\
        bar.sync 0;\n\
        add.u32 %r3, %r3, %r1;\n\
        st.global.u32 [%rd63], %r3;";
    let r = run(&kernel("", body), 64, &[]);
    for (t, w) in r.iter().enumerate() {
        assert_eq!(w[0], if t == 5 { 19 } else { 15 }, "thread {t}");
    }
}

#[test]
fn group_code_loads_and_stores_words_in_and_out_of_order() {
    // Consecutive words (one 16-byte access for a group), a group's words reversed (lane by
    // lane), and a shared word every thread reads.
    let body = "mov.u32 %r1, sh;\n\
        shl.b32 %r2, %r60, 2;\n\
        add.u32 %r3, %r1, %r2;\n\
        mul.lo.u32 %r4, %r60, 3;\n\
        st.shared.u32 [%r3], %r4;\n\
        bar.sync 0;\n\
        xor.b32 %r5, %r60, 3;\n\
        shl.b32 %r6, %r5, 2;\n\
        add.u32 %r7, %r1, %r6;\n\
        ld.shared.u32 %r8, [%r7];\n\
        ld.shared.u32 %r9, [%r3+4];\n\
        ld.shared.u32 %r10, [sh+8];\n\
        st.global.u32 [%rd63], %r8;\n\
        st.global.u32 [%rd63+4], %r9;\n\
        st.global.u32 [%rd63+8], %r10;";
    let r = run(&kernel(".shared .align 16 .b8 sh[1028];", body), 256, &[]);
    for (t, w) in r.iter().enumerate() {
        let t = t as u32;
        assert_eq!(w[0], (t ^ 3) * 3, "thread {t}");
        assert_eq!(w[1], if t < 255 { (t + 1) * 3 } else { 0 }, "thread {t}");
        assert_eq!(w[2], 6, "thread {t}");
    }
}

#[test]
fn group_code_sees_words_out_of_order_in_a_groups_second_half() {
    // Threads 6 and 7 of every eight swap words: the group's first four lanes' addresses
    // are consecutive, the whole group's are not. With 12 and 20 threads (x not a multiple
    // of eight) the threads run one at a time.
    let body = "and.b32 %r1, %r60, 7;\n\
        setp.eq.u32 %p1, %r1, 6;\n\
        setp.eq.u32 %p2, %r1, 7;\n\
        selp.u32 %r2, 1, 0, %p1;\n\
        selp.u32 %r3, 1, 0, %p2;\n\
        add.u32 %r4, %r60, %r2;\n\
        sub.u32 %r4, %r4, %r3;\n\
        shl.b32 %r5, %r4, 2;\n\
        mov.u32 %r6, sh;\n\
        add.u32 %r7, %r6, %r5;\n\
        mul.lo.u32 %r8, %r60, 5;\n\
        st.shared.u32 [%r7], %r8;\n\
        bar.sync 0;\n\
        shl.b32 %r9, %r60, 2;\n\
        add.u32 %r10, %r6, %r9;\n\
        ld.shared.u32 %r11, [%r10];\n\
        ld.shared.u32 %r12, [%r7];\n\
        st.global.u32 [%rd63], %r11;\n\
        st.global.u32 [%rd63+4], %r12;";
    for threads in [64u32, 12, 20] {
        let r = run(
            &kernel(".shared .align 16 .b8 sh[1024];", body),
            threads,
            &[],
        );
        for (t, w) in r.iter().enumerate() {
            let t = t as u32;
            let swap = match t % 8 {
                6 => t + 1,
                7 => t - 1,
                _ => t,
            };
            assert_eq!(w[0], swap * 5, "{threads} threads: thread {t}");
            assert_eq!(w[1], t * 5, "{threads} threads: thread {t}");
        }
    }
}

#[test]
fn group_code_widens_only_what_does_not_wrap() {
    // %rd1 steps by one from lane to lane, unless the 32-bit values wrap inside a group
    // (threads 0-3 here): the group code must see that and go lane by lane.
    let body = "add.s32 %r1, %r60, 2147483646;\n\
        mul.wide.s32 %rd1, %r1, 1;\n\
        st.global.u64 [%rd63], %rd1;\n\
        mul.wide.u32 %rd2, %r1, 4;\n\
        st.global.u64 [%rd63+8], %rd2;";
    let r = run(&kernel("", body), 16, &[]);
    for (t, w) in r.iter().enumerate() {
        let x = 2147483646i32.wrapping_add(t as i32);
        let got = |k: usize| w[k] as u64 | (w[k + 1] as u64) << 32;
        assert_eq!(got(0), x as i64 as u64, "thread {t}");
        assert_eq!(got(2), x as u32 as u64 * 4, "thread {t}");
    }
}

#[test]
fn group_code_sees_addresses_threads_moved_apart_before_a_barrier() {
    // %rd1 steps by 4 from lane to lane, until odd threads add 100 on their own.
    let body = "mul.wide.u32 %rd1, %r60, 4;\n\
        and.b32 %r2, %r60, 1;\n\
        setp.eq.u32 %p1, %r2, 0;\n\
        @%p1 bra SKIP;\n\
        add.s64 %rd1, %rd1, 100;\n\
        SKIP:\n\
        bar.sync 0;\n\
        add.s64 %rd1, %rd1, 1;\n\
        st.global.u64 [%rd63], %rd1;";
    let r = run(&kernel("", body), 64, &[]);
    for (t, w) in r.iter().enumerate() {
        let want = t as u64 * 4 + if t % 2 == 1 { 100 } else { 0 } + 1;
        assert_eq!(w[0] as u64 | (w[1] as u64) << 32, want, "thread {t}");
    }
}

#[test]
fn shared_atomics_of_every_inline_kind() {
    let body = "setp.ne.u32 %p1, %r60, 0;\n\
        @%p1 bra READY;\n\
        st.shared.u32 [sh], 0;\n\
        st.shared.u32 [sh+4], -1;\n\
        st.shared.u32 [sh+8], 0;\n\
        st.shared.u32 [sh+12], 0xffff;\n\
        st.shared.u32 [sh+16], 0;\n\
        st.shared.u32 [sh+20], 0;\n\
        st.shared.u32 [sh+24], 7;\n\
        st.shared.u32 [sh+28], 99;\n\
        st.shared.u64 [sh+32], 0;\n\
        st.shared.u64 [sh+40], 0;\n\
        st.shared.u64 [sh+48], 0;\n\
        READY:\n\
        bar.sync 0;\n\
        add.u32 %r1, %r60, 5;\n\
        atom.shared.add.u32 %r2, [sh], %r1;\n\
        atom.shared.min.u32 %r2, [sh+4], %r1;\n\
        atom.shared.max.u32 %r2, [sh+8], %r1;\n\
        mov.u32 %r5, 1;\n\
        shl.b32 %r4, %r5, %r60;\n\
        not.b32 %r6, %r4;\n\
        atom.shared.and.b32 %r2, [sh+12], %r6;\n\
        atom.shared.or.b32 %r2, [sh+16], %r4;\n\
        atom.shared.xor.b32 %r2, [sh+20], %r1;\n\
        add.u32 %r7, %r60, 7;\n\
        add.u32 %r8, %r60, 8;\n\
        atom.shared.cas.b32 %r2, [sh+24], %r7, %r8;\n\
        atom.shared.exch.b32 %r2, [sh+28], %r60;\n\
        cvt.s64.s32 %rd1, %r60;\n\
        mul.lo.s64 %rd2, %rd1, -1000000000000;\n\
        atom.shared.add.u64 %rd3, [sh+32], %rd1;\n\
        atom.shared.max.s64 %rd3, [sh+40], %rd2;\n\
        atom.shared.min.s64 %rd3, [sh+48], %rd2;\n\
        bar.sync 0;\n\
        @%p1 bra DONE;\n\
        ld.shared.v4.u32 {%r10, %r11, %r12, %r13}, [sh];\n\
        ld.shared.v4.u32 {%r14, %r15, %r16, %r17}, [sh+16];\n\
        ld.shared.v2.u32 {%r18, %r19}, [sh+48];\n\
        st.global.v4.u32 [%rd63], {%r10, %r11, %r12, %r13};\n\
        st.global.v4.u32 [%rd63+16], {%r14, %r15, %r16, %r17};\n\
        ld.shared.u64 %rd4, [sh+32];\n\
        ld.shared.u64 %rd5, [sh+40];\n\
        st.global.u64 [%rd63+32], %rd4;\n\
        st.global.u64 [%rd63+40], %rd5;\n\
        st.global.v2.u32 [%rd63+48], {%r18, %r19};\n\
        DONE:";
    let r = run(&kernel(".shared .align 16 .b8 sh[64];", body), 8, &[]);
    let w = &r[0];
    let ts = 0..8u32;
    assert_eq!(w[0], ts.clone().map(|t| t + 5).sum::<u32>());
    assert_eq!((w[1], w[2]), (5, 12));
    assert_eq!(w[3], 0xffff & !0xff);
    assert_eq!(w[4], 0xff);
    assert_eq!(w[5], ts.clone().fold(0, |a, t| a ^ (t + 5)));
    // The compare-and-swaps chain in whatever order the threads ran (both engines run them
    // in the same order, which the differential run checks); some thread exchanged last.
    assert!((7..=15).contains(&w[6]), "{}", w[6]);
    assert!(w[7] < 8);
    let u64at = |k: usize| w[k] as u64 | (w[k + 1] as u64) << 32;
    assert_eq!(u64at(8), 28);
    assert_eq!(u64at(10), 0);
    assert_eq!(u64at(12) as i64, -7_000_000_000_000);
}

/// Module-scope `.shared` variables (where nvcc puts a kernel's `__shared__` ones) count
/// only for the kernels that use them: a module of two kernels with 150 KiB each launches
/// both, and a kernel using two of them (one through a device function) sees them apart.
#[test]
fn module_shared_variables_are_laid_out_per_kernel() {
    let src = ".version 9.0\n.target sm_90\n.address_size 64\n\
         .shared .align 16 .b8 big_a[153600];\n\
         .shared .align 16 .b8 big_b[153600];\n\
         .shared .align 4 .b8 small[8];\n\
         .func (.param .b32 rv) peek()\n{\n .reg .b32 %r<2>;\n ld.shared.u32 %r1, [small+4];\n\
          st.param.b32 [rv], %r1;\n ret;\n}\n\
         .visible .entry ka(.param .u64 out)\n{\n .reg .b32 %r<4>;\n .reg .b64 %rd<4>;\n\
          ld.param.u64 %rd1, [out];\n st.shared.u32 [big_a+153596], 7;\n\
          st.shared.u32 [small+4], 9;\n ld.shared.u32 %r1, [big_a+153596];\n\
          {\n .param .b32 rv;\n call.uni (rv), peek, ();\n ld.param.b32 %r2, [rv];\n }\n st.global.v2.u32 [%rd1], {%r1, %r2};\n ret;\n}\n\
         .visible .entry kb(.param .u64 out)\n{\n .reg .b32 %r<4>;\n .reg .b64 %rd<4>;\n\
          ld.param.u64 %rd1, [out];\n st.shared.u32 [big_b], 5;\n ld.shared.u32 %r1, [big_b];\n\
          st.global.u32 [%rd1], %r1;\n ret;\n}\n";
    let g = Gpu::new(src);
    let out = g.zeros(8);
    g.run("ka", 1, 1, &[Arg::Ptr(out)]);
    assert_eq!(g.get::<u32>(out, 2), [7, 9]);
    g.run("kb", 1, 1, &[Arg::Ptr(out)]);
    assert_eq!(g.get::<u32>(out, 1), [5]);
    let shared = |name: &str| {
        g.module
            .kernels()
            .iter()
            .find(|k| k.name == name)
            .map(|k| k.static_shared)
    };
    // ka: big_a, then small (both its own); kb: big_b alone.
    assert_eq!(shared("ka"), Some(153_616));
    assert_eq!(shared("kb"), Some(153_600));
}

/// `bmsk` and `szext` (CUB's radix sort uses `bmsk.clamp`), interpreted and compiled.
#[test]
fn bit_masks_and_field_extension() {
    let src = kernel(
        "",
        "add.u32 %r1, %r60, 28; bmsk.clamp.b32 %r2, %r1, 8; bmsk.wrap.b32 %r3, %r1, 8;\n\
         szext.clamp.s32 %r4, 0x1f0, %r60; szext.wrap.u32 %r5, 0x1f0, %r60;\n\
         st.global.v4.u32 [%rd63], {%r2, %r3, %r4, %r5};",
    );
    let r = run(&src, 8, &[]);
    for (t, r) in r.iter().enumerate() {
        let a = 28 + t as u32;
        let clamp = if a >= 32 {
            0
        } else {
            ((0xffu64 << a) & 0xffff_ffff) as u32
        };
        let wrap = ((0xffu64 << (a & 31)) & 0xffff_ffff) as u32;
        let n = t as u32;
        let sext = if n == 0 {
            0
        } else {
            ((0x1f0u32 << (32 - n)) as i32 >> (32 - n)) as u32
        };
        let zext = if n == 0 { 0 } else { 0x1f0 & ((1u32 << n) - 1) };
        assert_eq!(&r[..4], &[clamp, wrap, sext, zext], "thread {t}");
    }
}

/// `wmma` forms vcuda does not run (sub-byte types, shapes of no element type) fail the
/// launch naming the instruction; a supported load decodes and runs.
#[test]
fn wmma_forms() {
    for body in [
        "wmma.load.a.sync.aligned.row.m8n8k32.global.s4 {%r1}, [%rd60], %r60;",
        "wmma.load.a.sync.aligned.row.m16n16k8.global.f16 {%r1, %r2, %r3, %r4}, [%rd60], %r60;",
        "wmma.mma.sync.aligned.row.col.m16n16k16.f64.f64 {%fd1}, {%r1}, {%r2}, {%fd2};",
    ] {
        let g = Gpu::new(&kernel("", body));
        let out = g.zeros(64 * 32);
        let e = g.run_err("k", 1, 32, &[Arg::Ptr(out), Arg::Ptr(out)]);
        match &e {
            KernelError::Unsupported { instruction, .. } => {
                assert!(instruction.starts_with("wmma"), "{body}: {instruction}")
            }
            e => panic!("{body}: {e}"),
        }
    }
    // A double accumulator tile: lane l holds elements 2l and 2l + 1 of the row-major 8 x 8.
    let src = kernel(
        "",
        "mov.u32 %r1, 8; wmma.load.c.sync.aligned.row.m8n8k4.global.f64 {%fd1, %fd2}, [%rd61], %r1;\n\
         st.global.v2.f64 [%rd63], {%fd1, %fd2};",
    );
    let inp: Vec<u8> = (0..64).flat_map(|i| (i as f64).to_le_bytes()).collect();
    let r = run(&src, 32, &inp);
    for (l, r) in r.iter().enumerate() {
        let v = |k: usize| f64::from_bits(u64::from(r[2 * k]) | u64::from(r[2 * k + 1]) << 32);
        assert_eq!(
            (v(0), v(1)),
            ((2 * l) as f64, (2 * l + 1) as f64),
            "lane {l}"
        );
    }
}

/// `k(out, a, b, c, d, e, n)`: `out[i] = a[i] + b[i] + c[i] + d[i] + e[i]` for `i < n`, with
/// `n` not checked against the buffers' sizes: six buffers in turn, more than the compiled
/// code's region cache holds.
const SIX_BUFFERS: &str = ".version 9.0\n.target sm_90\n.address_size 64\n\
    .visible .entry k(.param .u64 out, .param .u64 a, .param .u64 b, .param .u64 c,\n\
    .param .u64 d, .param .u64 e, .param .u32 n)\n{\n\
    .reg .pred %p<2>;\n.reg .b32 %r<16>;\n.reg .b64 %rd<24>;\n\
    mov.u32 %r1, %ctaid.x;\nmov.u32 %r2, %ntid.x;\nmov.u32 %r3, %tid.x;\n\
    mad.lo.s32 %r4, %r1, %r2, %r3;\nld.param.u32 %r5, [n];\n\
    setp.ge.u32 %p1, %r4, %r5;\n@%p1 bra DONE;\n\
    mul.wide.u32 %rd1, %r4, 4;\n\
    ld.param.u64 %rd2, [a];\nadd.s64 %rd3, %rd2, %rd1;\nld.global.u32 %r6, [%rd3];\n\
    ld.param.u64 %rd4, [b];\nadd.s64 %rd5, %rd4, %rd1;\nld.global.u32 %r7, [%rd5];\n\
    ld.param.u64 %rd6, [c];\nadd.s64 %rd7, %rd6, %rd1;\nld.global.u32 %r8, [%rd7];\n\
    ld.param.u64 %rd8, [d];\nadd.s64 %rd9, %rd8, %rd1;\nld.global.u32 %r9, [%rd9];\n\
    ld.param.u64 %rd10, [e];\nadd.s64 %rd11, %rd10, %rd1;\nld.global.u32 %r10, [%rd11];\n\
    add.s32 %r11, %r6, %r7;\nadd.s32 %r11, %r11, %r8;\nadd.s32 %r11, %r11, %r9;\n\
    add.s32 %r11, %r11, %r10;\n\
    ld.param.u64 %rd12, [out];\nadd.s64 %rd13, %rd12, %rd1;\nst.global.u32 [%rd13], %r11;\n\
    DONE:\nret;\n}\n";

#[test]
fn more_buffers_than_cached_regions_give_every_value() {
    let n = 4096u32;
    let g = Gpu::new(SIX_BUFFERS);
    let ins: Vec<Vec<u32>> = (0..5u32)
        .map(|k| (0..n).map(|i| i * 10 + k).collect())
        .collect();
    let bufs: Vec<u64> = ins.iter().map(|v| g.buf(v)).collect();
    let out = g.zeros(n as usize * 4);
    let mut args = vec![Arg::Ptr(out)];
    args.extend(bufs.iter().map(|&p| Arg::Ptr(p)));
    args.push(Arg::U32(n));
    g.run("k", n / 256, 256, &args);
    let want: Vec<u32> = (0..n).map(|i| 50 * i + 10).collect();
    assert_eq!(g.get::<u32>(out, n as usize), want);
}

#[test]
fn an_access_past_a_cached_region_faults() {
    // One thread more than the buffers hold: its loads lie past the end of regions the
    // other threads' accesses put in the cache.
    let n = 1024u32;
    let g = Gpu::new(SIX_BUFFERS);
    let bufs: Vec<u64> = (0..5).map(|_| g.zeros(n as usize * 4)).collect();
    let out = g.zeros(n as usize * 4);
    let mut args = vec![Arg::Ptr(out)];
    args.extend(bufs.iter().map(|&p| Arg::Ptr(p)));
    args.push(Arg::U32(n + 1));
    let e = g.run_err("k", n / 256 + 1, 256, &args);
    assert!(matches!(e, KernelError::IllegalAddress { .. }), "{e}");
}

/// A block's shared memory comes in 128-byte units, as on a GPU: NVVM widens a load into
/// the padding after the dynamic part (`.pragma "used_bytes_mask"`; Numba's
/// `test_dynshared_slice_gaps`), which reads zeros; past the unit, an access faults.
#[test]
fn shared_memory_padding_reads_as_on_a_gpu() {
    let decls = ".extern .shared .align 16 .b8 dyn[];";
    let src = kernel(
        decls,
        "mov.u32 %r1, 99; st.shared.v4.u32 [dyn], {%r1, %r1, %r1, %r1};\n\
         st.shared.v2.u32 [dyn+16], {%r1, %r1}; st.shared.u32 [dyn+24], %r1;\n\
         .pragma \"used_bytes_mask 4095\";\n\
         ld.shared.v4.u32 {%r2, %r3, %r4, %r5}, [dyn+16];\n\
         st.u32 [%rd63], %r2; st.u32 [%rd63+4], %r3; st.u32 [%rd63+8], %r4;\n\
         st.u32 [%rd63+12], %r5;",
    );
    let g = Gpu::new(&src);
    let out = g.zeros(64);
    g.try_launch(
        "k",
        [1, 1, 1],
        [1, 1, 1],
        28,
        &[Arg::Ptr(out), Arg::Ptr(out)],
    )
    .unwrap();
    assert_eq!(g.get::<u32>(out, 4), [99, 99, 99, 0]);
    let far = kernel(decls, "ld.shared.u32 %r2, [dyn+128]; st.u32 [%rd63], %r2;");
    let g = Gpu::new(&far);
    let out = g.zeros(64);
    let r = g.try_launch(
        "k",
        [1, 1, 1],
        [1, 1, 1],
        28,
        &[Arg::Ptr(out), Arg::Ptr(out)],
    );
    assert!(r.is_err(), "{r:?}");
}
