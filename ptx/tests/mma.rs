// SPDX-License-Identifier: Apache-2.0 OR MIT
//! `mma.sync`, `ldmatrix`, `stmatrix` and `movmatrix` against the PTX ISA's fragment layouts
//! (9.7.14.5), written out here shape by shape as the ISA states them: the host places each
//! matrix element in the lane and register the ISA names, a kernel runs the instruction on
//! those registers, and the host reads D back the same way and compares it with its own
//! product. (The nvcc-built `tests/cuda/mma.cu` runs such code through the whole stack.)

mod common;
use common::*;
use vcuda_ptx::KernelError;

#[derive(Clone, Copy, PartialEq, Debug)]
enum El {
    F16,
    Bf16,
    Tf32,
    F32,
    F64,
    E4m3,
    E5m2,
    S8,
    U8,
    S4,
    U4,
    B1,
    S32,
}

impl El {
    fn bits(self) -> u32 {
        match self {
            El::F16 | El::Bf16 => 16,
            El::E4m3 | El::E5m2 | El::S8 | El::U8 => 8,
            El::S4 | El::U4 => 4,
            El::B1 => 1,
            El::F64 => 64,
            _ => 32,
        }
    }

    /// Elements to a register.
    fn per_reg(self) -> u32 {
        if self == El::F64 { 1 } else { 32 / self.bits() }
    }

    fn float(self) -> bool {
        !matches!(self, El::S8 | El::U8 | El::S4 | El::U4 | El::B1 | El::S32)
    }
}

/// A half's bits for a value that is exact in half precision (normal or zero).
fn half_bits(v: f32) -> u64 {
    if v == 0.0 {
        return 0;
    }
    let b = v.to_bits();
    let (s, e, m) = (b >> 31, (b >> 23) & 0xff, b & 0x7f_ffff);
    u64::from((s << 15) | ((e - 112) << 10) | (m >> 13))
}

/// E4M3 and E5M2 codes of -2, -1, -0.5, 0, 0.5, 1, 1.5 and 2.
const FP8_VALUES: [f64; 8] = [-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0];
const E4M3_CODES: [u8; 8] = [0xc0, 0xb8, 0xb0, 0x00, 0x30, 0x38, 0x3c, 0x40];
const E5M2_CODES: [u8; 8] = [0xc0, 0xbc, 0xb8, 0x00, 0x38, 0x3c, 0x3e, 0x40];

/// Element `idx` of a test matrix of type `t`: its raw bits and its value.
fn element(t: El, idx: usize, salt: usize) -> (u64, f64) {
    let h = idx * 7 + salt * 13;
    let q = ((h % 17) as f64 - 8.0) / 4.0; // quarters in [-2, 2]
    match t {
        El::F16 => (half_bits(q as f32), q),
        El::Bf16 => (u64::from((q as f32).to_bits() >> 16), q),
        // Low mantissa bits the tensor cores ignore.
        El::Tf32 => (
            u64::from((q as f32).to_bits() | (h as u32 * 0x123) & 0x1fff),
            q,
        ),
        El::F32 => (u64::from((q as f32).to_bits()), q),
        El::F64 => (q.to_bits(), q),
        El::E4m3 => (u64::from(E4M3_CODES[h % 8]), FP8_VALUES[h % 8]),
        El::E5m2 => (u64::from(E5M2_CODES[h % 8]), FP8_VALUES[h % 8]),
        El::S8 => {
            let v = (h * 37 % 256) as u8 as i8;
            (u64::from(v as u8), f64::from(v))
        }
        El::U8 => ((h * 53 % 256) as u64, (h * 53 % 256) as f64),
        El::S4 => {
            let n = (h * 5 % 16) as u8;
            (u64::from(n), f64::from(((n << 4) as i8) >> 4))
        }
        El::U4 => ((h * 5 % 16) as u64, (h * 5 % 16) as f64),
        El::B1 => (((h + h / 3) & 1) as u64, ((h + h / 3) & 1) as f64),
        El::S32 => {
            let v = (h as i32 * 1001) - 40_000;
            (u64::from(v as u32), f64::from(v))
        }
    }
}

/// Row and column of element `i` of lane `lane`'s fragment.
type Pos = fn(u32, u32) -> (u32, u32);

fn g(lane: u32) -> u32 {
    lane >> 2
}
fn t(lane: u32) -> u32 {
    lane % 4
}

/// The accumulator of every m16n8 shape.
fn c16(l: u32, i: u32) -> (u32, u32) {
    (if i < 2 { g(l) } else { g(l) + 8 }, t(l) * 2 + (i & 1))
}
/// The accumulator of the m8n8 shapes (two elements).
fn c8(l: u32, i: u32) -> (u32, u32) {
    (g(l), t(l) * 2 + i)
}

struct Case {
    inst: &'static str,
    /// M, N, K.
    shape: [u32; 3],
    /// Types of d, a, b, c.
    tys: [El; 4],
    a: Pos,
    b: Pos,
    c: Pos,
}

fn kernel(c: &Case, regs: [u32; 4]) -> String {
    let [nd, na, nb, nc] = regs;
    let w = |e: El| if e == El::F64 { 64 } else { 32 };
    let [wd, wa, wb, wc] = c.tys.map(w);
    let list = |p: &str, n: u32| {
        let v: Vec<String> = (0..n).map(|i| format!("%{p}{i}")).collect();
        format!("{{{}}}", v.join(", "))
    };
    let mut s = format!(
        ".version 8.0\n.target sm_90\n.address_size 64\n\
         .visible .entry k(.param .u64 inp, .param .u64 out)\n{{\n\
         .reg .b32 %r<4>;\n.reg .b64 %rd<8>;\n\
         .reg .b{wd} %d<{nd}>;\n.reg .b{wa} %a<{na}>;\n.reg .b{wb} %b<{nb}>;\n.reg .b{wc} %c<{nc}>;\n\
         ld.param.u64 %rd1, [inp];\nld.param.u64 %rd2, [out];\nmov.u32 %r1, %laneid;\n\
         mul.wide.u32 %rd3, %r1, {};\nadd.s64 %rd3, %rd1, %rd3;\n\
         mul.wide.u32 %rd4, %r1, {};\nadd.s64 %rd4, %rd2, %rd4;\n",
        8 * (na + nb + nc),
        8 * nd
    );
    let mut slot = 0;
    for (p, n, w) in [("a", na, wa), ("b", nb, wb), ("c", nc, wc)] {
        for i in 0..n {
            s += &format!("ld.global.b{w} %{p}{i}, [%rd3+{}];\n", 8 * slot);
            slot += 1;
        }
    }
    s += &format!(
        "{} {}, {}, {}, {};\n",
        c.inst,
        list("d", nd),
        list("a", na),
        list("b", nb),
        list("c", nc)
    );
    for i in 0..nd {
        s += &format!("st.global.b{wd} [%rd4+{}], %d{i};\n", 8 * i);
    }
    s + "ret;\n}\n"
}

/// Places matrix `m` (`rows` x `cols`, raw bits) in each lane's registers.
fn pack(m: &[u64], cols: u32, per_lane: u32, e: El, pos: Pos) -> Vec<Vec<u64>> {
    let n = per_lane.div_ceil(e.per_reg()) as usize;
    (0..32)
        .map(|lane| {
            let mut regs = vec![0u64; n];
            for i in 0..per_lane {
                let (r, c) = pos(lane, i);
                let raw = m[(r * cols + c) as usize];
                let (reg, sub) = ((i / e.per_reg()) as usize, i % e.per_reg());
                regs[reg] |= raw << (sub * e.bits());
            }
            regs
        })
        .collect()
}

/// Runs a case: returns D as the host reads it (raw bits) and the host's own D.
fn run_case(c: &Case, satfinite_c: Option<i32>) -> (Vec<u64>, Vec<u64>) {
    let [m, n, k] = c.shape;
    let [dt, at, bt, ct] = c.tys;
    let mat = |t: El, rows: u32, cols: u32, salt| -> Vec<(u64, f64)> {
        (0..(rows * cols) as usize)
            .map(|i| element(t, i, salt))
            .collect()
    };
    let am = mat(at, m, k, 1);
    let bm = mat(bt, k, n, 2);
    let mut cm = mat(ct, m, n, 3);
    if let Some(v) = satfinite_c {
        cm = vec![(u64::from(v as u32), f64::from(v)); (m * n) as usize];
    }
    let raw = |v: &[(u64, f64)]| v.iter().map(|x| x.0).collect::<Vec<_>>();
    let pa = pack(&raw(&am), k, m * k / 32, at, c.a);
    let pb = pack(&raw(&bm), n, k * n / 32, bt, c.b);
    let pc = pack(&raw(&cm), n, m * n / 32, ct, c.c);
    let nd = (m * n / 32).div_ceil(dt.per_reg());
    let regs = [
        nd,
        pa[0].len() as u32,
        pb[0].len() as u32,
        pc[0].len() as u32,
    ];
    let inp: Vec<u64> = (0..32)
        .flat_map(|l| [pa[l].clone(), pb[l].clone(), pc[l].clone()].concat())
        .collect();
    let gpu = Gpu::new(&kernel(c, regs));
    let (i, o) = (gpu.buf(&inp), gpu.zeros(32 * nd as usize * 8));
    gpu.run("k", 1, 32, &[Arg::Ptr(i), Arg::Ptr(o)]);
    let out: Vec<u64> = gpu.get(o, 32 * nd as usize);
    let mut got = vec![0u64; (m * n) as usize];
    for lane in 0..32u32 {
        for i in 0..m * n / 32 {
            let (r, col) = (c.c)(lane, i);
            let (reg, sub) = (i / dt.per_reg(), i % dt.per_reg());
            let word = out[(lane * nd + reg) as usize];
            let mask = if dt.bits() == 64 {
                u64::MAX
            } else {
                (1u64 << dt.bits()) - 1
            };
            got[(r * n + col) as usize] = (word >> (sub * dt.bits())) & mask;
        }
    }
    let want: Vec<u64> = (0..m * n)
        .map(|ij| {
            let (i, j) = (ij / n, ij % n);
            let cv = cm[ij as usize].1;
            if dt.float() {
                let s = (0..k).fold(cv, |acc, x| {
                    acc + am[(i * k + x) as usize].1 * bm[(x * n + j) as usize].1
                });
                match dt {
                    El::F16 => half_bits(s as f32),
                    El::F64 => s.to_bits(),
                    _ => u64::from((s as f32).to_bits()),
                }
            } else {
                let s = (0..k).fold(cv as i64, |acc, x| {
                    let (a, b) = (am[(i * k + x) as usize].1, bm[(x * n + j) as usize].1);
                    let p = if at == El::B1 && c.inst.contains("xor") {
                        (a as i64) ^ (b as i64)
                    } else {
                        a as i64 * b as i64
                    };
                    acc + p
                });
                let s = if satfinite_c.is_some() {
                    s.clamp(i64::from(i32::MIN), i64::from(i32::MAX))
                } else {
                    s
                };
                u64::from(s as i32 as u32)
            }
        })
        .collect();
    let _ = ct;
    (got, want)
}

fn check(c: Case) {
    let (got, want) = run_case(&c, None);
    assert_eq!(got, want, "{}", c.inst);
}

#[test]
fn half_and_bf16_shapes() {
    fn a16(l: u32, i: u32) -> (u32, u32) {
        let row = if i < 2 || (4..6).contains(&i) {
            g(l)
        } else {
            g(l) + 8
        };
        (row, t(l) * 2 + (i & 1) + if i >= 4 { 8 } else { 0 })
    }
    fn b16(l: u32, i: u32) -> (u32, u32) {
        (t(l) * 2 + (i & 1) + if i >= 2 { 8 } else { 0 }, g(l))
    }
    fn a8(l: u32, i: u32) -> (u32, u32) {
        (if i < 2 { g(l) } else { g(l) + 8 }, t(l) * 2 + (i & 1))
    }
    fn b8(l: u32, i: u32) -> (u32, u32) {
        (t(l) * 2 + i, g(l))
    }
    use El::*;
    for (inst, shape, tys, a, b) in [
        (
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
            [16, 8, 16],
            [F32, F16, F16, F32],
            a16 as Pos,
            b16 as Pos,
        ),
        (
            "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16",
            [16, 8, 16],
            [F16, F16, F16, F16],
            a16,
            b16,
        ),
        (
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
            [16, 8, 16],
            [F32, Bf16, Bf16, F32],
            a16,
            b16,
        ),
        (
            "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32",
            [16, 8, 8],
            [F32, F16, F16, F32],
            a8,
            b8,
        ),
        (
            "mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32",
            [16, 8, 8],
            [F32, Bf16, Bf16, F32],
            a8,
            b8,
        ),
    ] {
        check(Case {
            inst,
            shape,
            tys,
            a,
            b,
            c: c16,
        });
    }
}

#[test]
fn tf32_and_fp8_shapes() {
    fn a8(l: u32, i: u32) -> (u32, u32) {
        (
            if i.is_multiple_of(2) { g(l) } else { g(l) + 8 },
            if i < 2 { t(l) } else { t(l) + 4 },
        )
    }
    fn b8(l: u32, i: u32) -> (u32, u32) {
        (if i == 0 { t(l) } else { t(l) + 4 }, g(l))
    }
    fn a4(l: u32, i: u32) -> (u32, u32) {
        (if i == 0 { g(l) } else { g(l) + 8 }, t(l))
    }
    fn b4(l: u32, _: u32) -> (u32, u32) {
        (t(l), g(l))
    }
    fn a32(l: u32, i: u32) -> (u32, u32) {
        let row = if i < 4 || (8..12).contains(&i) {
            g(l)
        } else {
            g(l) + 8
        };
        (row, t(l) * 4 + (i & 3) + if i >= 8 { 16 } else { 0 })
    }
    fn b32(l: u32, i: u32) -> (u32, u32) {
        (t(l) * 4 + (i & 3) + if i >= 4 { 16 } else { 0 }, g(l))
    }
    use El::*;
    for (inst, shape, tys, a, b) in [
        (
            "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
            [16, 8, 8],
            [F32, Tf32, Tf32, F32],
            a8 as Pos,
            b8 as Pos,
        ),
        (
            "mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32",
            [16, 8, 4],
            [F32, Tf32, Tf32, F32],
            a4,
            b4,
        ),
        (
            "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32",
            [16, 8, 32],
            [F32, E4m3, E5m2, F32],
            a32,
            b32,
        ),
        (
            "mma.sync.aligned.m16n8k32.row.col.f16.e5m2.e5m2.f16",
            [16, 8, 32],
            [F16, E5m2, E5m2, F16],
            a32,
            b32,
        ),
    ] {
        check(Case {
            inst,
            shape,
            tys,
            a,
            b,
            c: c16,
        });
    }
}

#[test]
fn integer_shapes() {
    fn a32(l: u32, i: u32) -> (u32, u32) {
        let row = if i < 4 || (8..12).contains(&i) {
            g(l)
        } else {
            g(l) + 8
        };
        (row, t(l) * 4 + (i & 3) + if i >= 8 { 16 } else { 0 })
    }
    fn b32(l: u32, i: u32) -> (u32, u32) {
        (t(l) * 4 + (i & 3) + if i >= 4 { 16 } else { 0 }, g(l))
    }
    fn a16(l: u32, i: u32) -> (u32, u32) {
        (if i < 4 { g(l) } else { g(l) + 8 }, t(l) * 4 + (i & 3))
    }
    fn b16(l: u32, i: u32) -> (u32, u32) {
        (t(l) * 4 + i, g(l))
    }
    fn a8k16(l: u32, i: u32) -> (u32, u32) {
        (g(l), t(l) * 4 + i)
    }
    fn a64(l: u32, i: u32) -> (u32, u32) {
        let row = if i < 8 || (16..24).contains(&i) {
            g(l)
        } else {
            g(l) + 8
        };
        (row, t(l) * 8 + (i & 7) + if i >= 16 { 32 } else { 0 })
    }
    fn b64(l: u32, i: u32) -> (u32, u32) {
        (t(l) * 8 + (i & 7) + if i >= 8 { 32 } else { 0 }, g(l))
    }
    fn a128(l: u32, i: u32) -> (u32, u32) {
        (g(l), t(l) * 32 + i)
    }
    fn b128(l: u32, i: u32) -> (u32, u32) {
        (t(l) * 32 + i, g(l))
    }
    use El::*;
    for (inst, shape, tys, a, b, c) in [
        (
            "mma.sync.aligned.m16n8k32.row.col.s32.s8.u8.s32",
            [16, 8, 32],
            [S32, S8, U8, S32],
            a32 as Pos,
            b32 as Pos,
            c16 as Pos,
        ),
        (
            "mma.sync.aligned.m16n8k16.row.col.s32.u8.s8.s32",
            [16, 8, 16],
            [S32, U8, S8, S32],
            a16,
            b16,
            c16,
        ),
        (
            "mma.sync.aligned.m8n8k16.row.col.s32.s8.s8.s32",
            [8, 8, 16],
            [S32, S8, S8, S32],
            a8k16,
            b16,
            c8,
        ),
        (
            "mma.sync.aligned.m16n8k64.row.col.s32.s4.u4.s32",
            [16, 8, 64],
            [S32, S4, U4, S32],
            a64,
            b64,
            c16,
        ),
        (
            "mma.sync.aligned.m8n8k128.row.col.s32.b1.b1.s32.and.popc",
            [8, 8, 128],
            [S32, B1, B1, S32],
            a128,
            b128,
            c8,
        ),
        (
            "mma.sync.aligned.m8n8k128.row.col.s32.b1.b1.s32.xor.popc",
            [8, 8, 128],
            [S32, B1, B1, S32],
            a128,
            b128,
            c8,
        ),
    ] {
        check(Case {
            inst,
            shape,
            tys,
            a,
            b,
            c,
        });
    }
    // Past `i32::MAX`: `.satfinite` clamps.
    let c = Case {
        inst: "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.u8.u8.s32",
        shape: [16, 8, 32],
        tys: [S32, U8, U8, S32],
        a: a32,
        b: b32,
        c: c16,
    };
    let (got, want) = run_case(&c, Some(i32::MAX - 1000));
    assert!(want.iter().all(|w| *w == i32::MAX as u64));
    assert_eq!(got, want);
}

#[test]
fn double_shapes() {
    fn a4(l: u32, _: u32) -> (u32, u32) {
        (g(l), t(l))
    }
    fn b4(l: u32, _: u32) -> (u32, u32) {
        (t(l), g(l))
    }
    fn a16k4(l: u32, i: u32) -> (u32, u32) {
        (if i == 0 { g(l) } else { g(l) + 8 }, t(l))
    }
    fn a16k8(l: u32, i: u32) -> (u32, u32) {
        (
            if i.is_multiple_of(2) { g(l) } else { g(l) + 8 },
            if i < 2 { t(l) } else { t(l) + 4 },
        )
    }
    fn b8(l: u32, i: u32) -> (u32, u32) {
        (t(l) + 4 * i, g(l))
    }
    use El::*;
    for (inst, shape, a, b, c) in [
        (
            "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64",
            [8, 8, 4],
            a4 as Pos,
            b4 as Pos,
            c8 as Pos,
        ),
        (
            "mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64",
            [16, 8, 4],
            a16k4,
            b4,
            c16,
        ),
        (
            "mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64.rn",
            [16, 8, 8],
            a16k8,
            b8,
            c16,
        ),
    ] {
        check(Case {
            inst,
            shape,
            tys: [F64; 4],
            a,
            b,
            c,
        });
    }
}

/// `k(out)`: shared memory `s` holds four 8x8 matrices of halves, element (j, r, c) being
/// `j * 256 + r * 16 + c`; `body` runs with `%r5` the shared address of `s`, `%r1` the lane
/// and `%rd1` the lane's four output words; `%r10..%r13` are stored there.
fn matrix_kernel(body: &str) -> String {
    format!(
        ".version 8.0\n.target sm_90\n.address_size 64\n\
         .visible .entry k(.param .u64 out)\n{{\n\
         .reg .pred %p<4>;\n.reg .b32 %r<40>;\n.reg .b64 %rd<8>;\n\
         .shared .align 16 .b8 s[512];\n\
         mov.u32 %r5, s;\nmov.u32 %r1, %laneid;\n\
         ld.param.u64 %rd1, [out];\nmul.wide.u32 %rd2, %r1, 16;\nadd.s64 %rd1, %rd1, %rd2;\n\
         mov.u32 %r2, %r1;\nmov.u32 %r30, %ntid.x;\n\
         FILL:\nmov.u32 %r3, %r2;\n\
         shr.u32 %r4, %r3, 6;\nand.b32 %r6, %r3, 63;\nshr.u32 %r7, %r6, 3;\nand.b32 %r8, %r6, 7;\n\
         shl.b32 %r4, %r4, 8;\nshl.b32 %r7, %r7, 4;\nadd.s32 %r4, %r4, %r7;\nadd.s32 %r4, %r4, %r8;\n\
         shl.b32 %r9, %r3, 1;\nadd.s32 %r9, %r9, %r5;\nst.shared.u16 [%r9], %r4;\n\
         add.s32 %r2, %r2, %r30;\nsetp.lt.u32 %p1, %r2, 256;\n@%p1 bra FILL;\n\
         bar.sync 0;\n\
         mov.u32 %r10, 0;\nmov.u32 %r11, 0;\nmov.u32 %r12, 0;\nmov.u32 %r13, 0;\n\
         {body}\n\
         st.global.v4.u32 [%rd1], {{%r10, %r11, %r12, %r13}};\nret;\n}}\n"
    )
}

/// `%r20` = the shared address of row `lane % 8` of matrix `lane / 8`.
const ROW_ADDR: &str = "shl.b32 %r20, %r1, 4;\nadd.s32 %r20, %r20, %r5;\n";

fn run_matrix(body: &str) -> Result<Vec<[u32; 4]>, KernelError> {
    let gpu = Gpu::new(&matrix_kernel(body));
    let out = gpu.zeros(32 * 16);
    gpu.try_launch("k", [1, 1, 1], [32, 1, 1], 0, &[Arg::Ptr(out)])?;
    let w: Vec<u32> = gpu.get(out, 128);
    Ok(w.chunks(4).map(|c| [c[0], c[1], c[2], c[3]]).collect())
}

/// Element (j, r, c) of the test matrices.
fn el(j: u32, r: u32, c: u32) -> u32 {
    j * 256 + r * 16 + c
}

#[test]
fn ldmatrix_gives_each_lane_two_elements_of_a_row() {
    let out = run_matrix(&format!(
        "{ROW_ADDR}ldmatrix.sync.aligned.m8n8.x4.shared.b16 {{%r10, %r11, %r12, %r13}}, [%r20];"
    ))
    .unwrap();
    let tr = run_matrix(&format!(
        "{ROW_ADDR}ldmatrix.sync.aligned.m8n8.x4.trans.shared::cta.b16 {{%r10, %r11, %r12, %r13}}, [%r20];"
    ))
    .unwrap();
    let x2 = run_matrix(&format!(
        "{ROW_ADDR}cvt.u64.u32 %rd5, %r20;\ncvta.shared.u64 %rd5, %rd5;\n\
         ldmatrix.sync.aligned.m8n8.x2.b16 {{%r10, %r11}}, [%rd5];\n\
         ldmatrix.sync.aligned.m8n8.x1.shared.b16 {{%r12}}, [%r20+64];"
    ));
    for lane in 0..32u32 {
        let (r, c) = (lane / 4, 2 * (lane % 4));
        for j in 0..4 {
            let want = el(j, r, c) | el(j, r, c + 1) << 16;
            assert_eq!(
                out[lane as usize][j as usize], want,
                "lane {lane} matrix {j}"
            );
            let want = el(j, c, r) | el(j, c + 1, r) << 16;
            assert_eq!(
                tr[lane as usize][j as usize], want,
                "trans: lane {lane} matrix {j}"
            );
        }
    }
    // Generic addresses work; `.x1` takes lanes 0-7's addresses, here 64 bytes on.
    match x2 {
        Ok(x2) => {
            for lane in 0..32u32 {
                let (r, c) = (lane / 4, 2 * (lane % 4));
                let row = |j, rr| el(j, rr, c) | el(j, rr, c + 1) << 16;
                assert_eq!(
                    x2[lane as usize][..3],
                    [row(0, r), row(1, r), row((r + 4) / 8, (r + 4) % 8)],
                    "lane {lane}"
                );
            }
        }
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn stmatrix_and_movmatrix_invert_ldmatrix() {
    // Load, store transposed over the same rows, load again: each matrix transposed.
    let out = run_matrix(&format!(
        "{ROW_ADDR}ldmatrix.sync.aligned.m8n8.x4.shared.b16 {{%r10, %r11, %r12, %r13}}, [%r20];\n\
         bar.sync 0;\n\
         stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%r20], {{%r10, %r11, %r12, %r13}};\n\
         bar.sync 0;\n\
         ldmatrix.sync.aligned.m8n8.x4.shared.b16 {{%r10, %r11, %r12, %r13}}, [%r20];\n\
         movmatrix.sync.aligned.m8n8.trans.b16 %r13, %r13;"
    ))
    .unwrap();
    for lane in 0..32u32 {
        let (r, c) = (lane / 4, 2 * (lane % 4));
        for j in 0..3 {
            let want = el(j, c, r) | el(j, c + 1, r) << 16;
            assert_eq!(
                out[lane as usize][j as usize], want,
                "lane {lane} matrix {j}"
            );
        }
        // Transposed twice.
        let want = el(3, r, c) | el(3, r, c + 1) << 16;
        assert_eq!(out[lane as usize][3], want, "movmatrix: lane {lane}");
    }
}

#[test]
fn matrix_rows_must_be_aligned_and_odd_forms_are_refused() {
    let e = run_matrix(&format!(
        "{ROW_ADDR}add.s32 %r20, %r20, 8;\n\
         ldmatrix.sync.aligned.m8n8.x1.shared.b16 {{%r10}}, [%r20];"
    ))
    .unwrap_err();
    assert!(
        matches!(e, KernelError::MisalignedAddress { size: 16, .. }),
        "{e}"
    );
    for body in [
        "mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 {%r1,%r2,%r3,%r4}, {%r5,%r6,%r7,%r8}, {%r9,%r10,%r11,%r12}, {%r13,%r14,%r15,%r16}, %r17, 0;",
        "mma.sync.aligned.m16n8k16.col.row.f32.f16.f16.f32 {%r1,%r2,%r3,%r4}, {%r5,%r6,%r7,%r8}, {%r9,%r10}, {%r13,%r14,%r15,%r16};",
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%r1,%r2,%r3,%r4}, {%r5,%r6,%r7}, {%r9,%r10}, {%r13,%r14,%r15,%r16};",
        "ldmatrix.sync.aligned.m16n16.x1.trans.shared.b8 {%r1, %r2}, [%r5];",
        "mma.sync.aligned.m16n8k8.row.col.satfinite.f32.f16.f16.f32 {%r1,%r2,%r3,%r4}, {%r5,%r6}, {%r9}, {%r13,%r14,%r15,%r16};",
        "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32.rn {%r1,%r2,%r3,%r4}, {%r5,%r6}, {%r9}, {%r13,%r14,%r15,%r16};",
    ] {
        match run_matrix(body) {
            Err(KernelError::Unsupported { instruction, .. }) => {
                assert!(
                    body.starts_with(instruction.split('.').next().unwrap()),
                    "{body}: {instruction}"
                )
            }
            r => panic!("{body}: {r:?}"),
        }
    }
}

/// Volta's m8n8k4 `.f16`: four products at once, one per quad pair (lanes `4p..4p+3` with
/// `4p+16..4p+19`), A and B in either layout, accumulators of either type.
#[test]
fn quad_pairs_compute_four_products() {
    use El::*;
    for (inst, tys) in [
        (
            "mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32",
            [F32, F16, F16, F32],
        ),
        (
            "mma.sync.aligned.m8n8k4.col.row.f16.f16.f16.f16",
            [F16, F16, F16, F16],
        ),
        (
            "mma.sync.aligned.m8n8k4.row.row.f32.f16.f16.f16",
            [F32, F16, F16, F16],
        ),
        (
            "mma.sync.aligned.m8n8k4.col.col.f16.f16.f16.f16",
            [F16, F16, F16, F16],
        ),
    ] {
        let [dt, _, _, ct] = tys;
        let (a_col, b_row) = (
            inst.contains("k4.col"),
            inst.contains(".row.f") || inst.contains("row.row"),
        );
        let hi = |l: u32| if l >= 16 { 4 } else { 0 };
        let pos_a = |l: u32, i: u32| {
            if a_col {
                (i + hi(l), t(l))
            } else {
                (t(l) + hi(l), i)
            }
        };
        let pos_b = |l: u32, i: u32| {
            if b_row {
                (t(l), i + hi(l))
            } else {
                (i, t(l) + hi(l))
            }
        };
        let pos_c = |e: El, l: u32, i: u32| {
            if e == F32 {
                ((l & 1) + (i & 2) + hi(l), (i & 4) + (l & 2) + (i & 1))
            } else {
                (t(l) + hi(l), i)
            }
        };
        // Product p's matrices: A 8x4, B 4x8, C 8x8.
        let a = |p: u32, r: u32, c: u32| element(F16, (p * 32 + r * 4 + c) as usize, 1);
        let b = |p: u32, r: u32, c: u32| element(F16, (p * 32 + r * 8 + c) as usize, 2);
        let cm = |p: u32, r: u32, c: u32| element(ct, (p * 64 + r * 8 + c) as usize, 3);
        let (nd, nc) = (if dt == F32 { 8 } else { 4 }, if ct == F32 { 8 } else { 4 });
        let mut inp = Vec::new();
        for l in 0..32u32 {
            let p = (l >> 2) & 3;
            let mut regs = vec![0u64; 4 + nc];
            for i in 0..4 {
                let (r, c) = pos_a(l, i);
                regs[(i / 2) as usize] |= a(p, r, c).0 << (16 * (i % 2));
                let (r, c) = pos_b(l, i);
                regs[2 + (i / 2) as usize] |= b(p, r, c).0 << (16 * (i % 2));
            }
            for i in 0..8 {
                let (r, c) = pos_c(ct, l, i);
                let (reg, sh) = if ct == F32 {
                    (i, 0)
                } else {
                    (i / 2, 16 * (i % 2))
                };
                regs[4 + reg as usize] |= cm(p, r, c).0 << sh;
            }
            inp.extend(regs);
        }
        let case = Case {
            inst,
            shape: [8, 8, 4],
            tys,
            a: c8,
            b: c8,
            c: c8,
        };
        let gpu = Gpu::new(&kernel(&case, [nd as u32, 2, 2, nc as u32]));
        let (i, o) = (gpu.buf(&inp), gpu.zeros(32 * nd * 8));
        gpu.run("k", 1, 32, &[Arg::Ptr(i), Arg::Ptr(o)]);
        let out: Vec<u64> = gpu.get(o, 32 * nd);
        for l in 0..32u32 {
            let p = (l >> 2) & 3;
            for i in 0..8 {
                let (r, c) = pos_c(dt, l, i);
                let s = (0..4).fold(cm(p, r, c).1, |acc, x| acc + a(p, r, x).1 * b(p, x, c).1);
                let (got, want) = if dt == F32 {
                    (
                        out[(l * nd as u32 + i) as usize],
                        u64::from((s as f32).to_bits()),
                    )
                } else {
                    let w = out[(l * nd as u32 + i / 2) as usize];
                    ((w >> (16 * (i % 2))) & 0xffff, half_bits(s as f32))
                };
                assert_eq!(got, want, "{inst}: lane {l} element {i}");
            }
        }
    }
    // A half result from a float accumulator is not a form.
    let g = Gpu::new(&kernel(
        &Case {
            inst: "mma.sync.aligned.m8n8k4.row.col.f16.f16.f16.f32",
            shape: [8, 8, 4],
            tys: [F16, F16, F16, F32],
            a: c8,
            b: c8,
            c: c8,
        },
        [4, 2, 2, 8],
    ));
    let (i, o) = (g.zeros(32 * 12 * 8), g.zeros(32 * 4 * 8));
    let e = g.run_err("k", 1, 32, &[Arg::Ptr(i), Arg::Ptr(o)]);
    assert!(matches!(e, KernelError::Unsupported { .. }), "{e}");
}

/// In a block of 16 threads, the lanes that do not exist give no rows: matrices 0 and 1
/// load from lanes 0-15's rows, matrices 2 and 3 read as zeros, and a store of four
/// matrices writes only the rows lanes 0-15 address (nothing lands at address 0).
#[test]
fn a_partial_warp_moves_only_the_rows_its_lanes_address() {
    let gpu = Gpu::new(&matrix_kernel(&format!(
        "{ROW_ADDR}ldmatrix.sync.aligned.m8n8.x4.shared.b16 {{%r10, %r11, %r12, %r13}}, [%r20];\n\
         add.s32 %r21, %r20, 256;\n\
         stmatrix.sync.aligned.m8n8.x4.shared.b16 [%r21], {{%r11, %r11, %r11, %r11}};\n\
         bar.sync 0;\nld.shared.u32 %r13, [%r5];"
    )));
    let out = gpu.zeros(32 * 16);
    gpu.try_launch("k", [1, 1, 1], [16, 1, 1], 0, &[Arg::Ptr(out)])
        .unwrap();
    let w: Vec<u32> = gpu.get(out, 64);
    for lane in 0..16u32 {
        let (r, c) = (lane / 4, 2 * (lane % 4));
        let l = lane as usize * 4;
        assert_eq!(w[l], el(0, r, c) | el(0, r, c + 1) << 16, "lane {lane}");
        assert_eq!(w[l + 1], el(1, r, c) | el(1, r, c + 1) << 16, "lane {lane}");
        assert_eq!(w[l + 2], 0, "lane {lane}");
        assert_eq!(w[l + 3], el(0, 0, 0) | el(0, 0, 1) << 16, "lane {lane}");
    }
}

/// A generic address outside shared memory is an illegal address for these instructions.
#[test]
fn matrix_rows_live_in_shared_memory() {
    let e = run_matrix("ldmatrix.sync.aligned.m8n8.x1.b16 {%r10}, [%rd1];").unwrap_err();
    assert!(
        matches!(e, KernelError::IllegalAddress { size: 16, .. }),
        "{e}"
    );
}

/// nvcc's own output for such code (`fixtures/tensor.cu`): ldmatrix, mma.sync, movmatrix
/// and stmatrix as CUTLASS writes them in inline assembly.
#[test]
fn nvcc_built_tensor_core_kernels() {
    let g = Gpu::new(&fixture("tensor"));
    let q = |i: usize, s: usize| ((i * 7 + s) % 9) as f32 / 4.0 - 1.0;
    let a: Vec<u16> = (0..256).map(|i| half_bits(q(i, 1)) as u16).collect();
    let b: Vec<u16> = (0..128).map(|i| half_bits(q(i, 2)) as u16).collect();
    let (da, db, dd) = (g.buf(&a), g.buf(&b), g.zeros(128 * 4));
    g.run("tile", 1, 32, &[Arg::Ptr(da), Arg::Ptr(db), Arg::Ptr(dd)]);
    let d: Vec<f32> = g.get(dd, 128);
    for i in 0..16 {
        for j in 0..8 {
            let s = (0..16).fold(1.0, |acc, k| acc + q(i * 16 + k, 1) * q(k * 8 + j, 2));
            assert_eq!(d[i * 8 + j], s, "d[{i}][{j}]");
        }
    }
    let input: Vec<u16> = (0..64).map(|i| 1000 + i * 3).collect();
    let (di, dout) = (g.buf(&input), g.zeros(128));
    g.run("transpose", 1, 32, &[Arg::Ptr(di), Arg::Ptr(dout)]);
    let out: Vec<u16> = g.get(dout, 64);
    for r in 0..8 {
        for c in 0..8 {
            assert_eq!(out[r * 8 + c], input[c * 8 + r], "out[{r}][{c}]");
        }
    }
}
