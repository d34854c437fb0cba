// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Masked regions of the vector group code (`jit/masked.rs`): guarded forward branches over
//! a few instructions where a group's lanes disagree. Every launch here is also run by the
//! interpreter and must agree with it (results, instruction counts, faults: see
//! `common::Gpu::try_launch`); the kernels with a barrier get the wide group (16 lanes),
//! the others the narrow one (8).

mod common;
use common::*;

const PTX: &str = r#"
.version 8.0
.target sm_80
.address_size 64

// out[t] = t + (t odd): a value computed once for the group inside the region.
.visible .entry uni(.param .u64 out)
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  .reg .f32 %f<4>;
  .reg .b64 %rd<10>;
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r1, %tid.x;
  mul.wide.s32 %rd3, %r1, 4;
  add.s64 %rd9, %rd2, %rd3;
  and.b32 %r2, %r1, 1;
  setp.eq.s32 %p1, %r2, 0;
  cvt.rn.f32.s32 %f1, %r1;
  @%p1 bra $L1;
  mov.f32 %f2, 0f3F800000;
  add.f32 %f1, %f1, %f2;
$L1:
  st.global.f32 [%rd9], %f1;
  ret;
}

// A block's tree reduction in shared memory (256 threads): out[block] = sum of in.
.visible .entry tree(.param .u64 in, .param .u64 out)
{
  .reg .pred %p<4>;
  .reg .b32 %r<12>;
  .reg .f32 %f<8>;
  .reg .b64 %rd<10>;
  .shared .align 4 .b8 s[1024];
  ld.param.u64 %rd1, [in];
  ld.param.u64 %rd2, [out];
  cvta.to.global.u64 %rd3, %rd1;
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ctaid.x;
  shl.b32 %r3, %r2, 8;
  add.s32 %r4, %r3, %r1;
  mul.wide.s32 %rd4, %r4, 4;
  add.s64 %rd5, %rd3, %rd4;
  ld.global.f32 %f1, [%rd5];
  shl.b32 %r5, %r1, 2;
  mov.u32 %r6, s;
  add.s32 %r7, %r6, %r5;
  st.shared.f32 [%r7], %f1;
  bar.sync 0;
  mov.u32 %r8, 128;
$LOOP:
  setp.ge.u32 %p1, %r1, %r8;
  @%p1 bra $SKIP;
  shl.b32 %r9, %r8, 2;
  add.s32 %r10, %r7, %r9;
  ld.shared.f32 %f2, [%r10];
  ld.shared.f32 %f3, [%r7];
  add.f32 %f4, %f2, %f3;
  st.shared.f32 [%r7], %f4;
$SKIP:
  bar.sync 0;
  shr.u32 %r8, %r8, 1;
  setp.ne.s32 %p2, %r8, 0;
  @%p2 bra $LOOP;
  setp.ne.s32 %p3, %r1, 0;
  @%p3 bra $END;
  ld.shared.f32 %f5, [s];
  cvta.to.global.u64 %rd6, %rd2;
  mul.wide.u32 %rd7, %r2, 4;
  add.s64 %rd8, %rd6, %rd7;
  st.global.f32 [%rd8], %f5;
$END:
  ret;
}

// out[t] = t for t < n, through a store the region makes lane by lane (a global store in
// the group whose lanes straddle n), after a barrier.
.visible .entry edge(.param .u64 out, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r2, [n];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd2, %rd3;
  bar.sync 0;
  setp.ge.u32 %p1, %r1, %r2;
  @%p1 bra $END;
  st.global.u32 [%rd4], %r1;
$END:
  ret;
}

// Threads below k read s[t * stride] (the others would read far outside shared memory,
// and must not fault): out[t] = what they read, or 7.
.visible .entry far(.param .u64 out, .param .u32 k, .param .u32 stride)
{
  .reg .pred %p<2>;
  .reg .b32 %r<10>;
  .reg .b64 %rd<6>;
  .shared .align 4 .b8 s[256];
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r2, [k];
  ld.param.u32 %r3, [stride];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r1, %tid.x;
  shl.b32 %r4, %r1, 2;
  mov.u32 %r5, s;
  add.s32 %r6, %r5, %r4;
  add.s32 %r9, %r1, 100;
  st.shared.u32 [%r6], %r9;
  bar.sync 0;
  mov.u32 %r7, 7;
  setp.ge.u32 %p1, %r1, %r2;
  @%p1 bra $OUT;
  mul.lo.s32 %r8, %r4, %r3;
  add.s32 %r8, %r5, %r8;
  ld.shared.u32 %r7, [%r8];
$OUT:
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd2, %rd3;
  st.global.u32 [%rd4], %r7;
  ret;
}
"#;

#[test]
fn uniform_value_in_a_masked_region() {
    let g = Gpu::new(PTX);
    let out = g.zeros(64 * 4);
    g.run("uni", 1, 64, &[Arg::Ptr(out)]);
    let o: Vec<f32> = g.get(out, 64);
    for (t, &v) in o.iter().enumerate() {
        assert_eq!(v, t as f32 + (t % 2) as f32, "thread {t}");
    }
}

#[test]
fn tree_reduction_in_shared_memory() {
    let g = Gpu::new(PTX);
    let blocks = 6;
    let x: Vec<f32> = (0..256 * blocks).map(|i| (i % 17) as f32 - 3.0).collect();
    let (din, out) = (g.buf(&x), g.zeros(blocks * 4));
    g.run("tree", blocks as u32, 256, &[Arg::Ptr(din), Arg::Ptr(out)]);
    let o: Vec<f32> = g.get(out, blocks);
    for (b, &v) in o.iter().enumerate() {
        let want: f32 = x[b * 256..(b + 1) * 256].iter().sum();
        assert_eq!(v, want, "block {b}");
    }
}

#[test]
fn global_store_at_the_edge() {
    let g = Gpu::new(PTX);
    for n in [0u32, 1, 5, 13, 16, 29, 64] {
        let out = g.buf(&[u32::MAX; 64]);
        g.run("edge", 1, 64, &[Arg::Ptr(out), Arg::I32(n as i32)]);
        let o: Vec<u32> = g.get(out, 64);
        for (t, &v) in o.iter().enumerate() {
            let want = if (t as u32) < n { t as u32 } else { u32::MAX };
            assert_eq!(v, want, "n {n}, thread {t}");
        }
    }
}

#[test]
fn lanes_left_out_do_not_fault() {
    let g = Gpu::new(PTX);
    // Thread 1's s[1 * 40] is 160 bytes in: inside; the others' addresses are far outside.
    for k in [0u32, 1, 2] {
        let out = g.zeros(64 * 4);
        g.run(
            "far",
            1,
            64,
            &[Arg::Ptr(out), Arg::I32(k as i32), Arg::I32(40)],
        );
        let o: Vec<u32> = g.get(out, 64);
        for (t, &v) in o.iter().enumerate() {
            let want = if (t as u32) < k {
                (t * 40) as u32 + 100
            } else {
                7
            };
            assert_eq!(v, want, "k {k}, thread {t}");
        }
    }
}

#[test]
fn a_lane_in_the_mask_faults_as_in_the_scalar_code() {
    let g = Gpu::new(PTX);
    let out = g.zeros(64 * 4);
    // Thread 2 reads s[2 * 40] = 320 bytes in, past the 256 of shared memory: the error
    // (thread, address, line) must be the interpreter's.
    let e = g.run_err("far", 1, 64, &[Arg::Ptr(out), Arg::I32(3), Arg::I32(40)]);
    let msg = e.to_string();
    assert!(msg.contains("thread (2,0,0)"), "{msg}");
}
