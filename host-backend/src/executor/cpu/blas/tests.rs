// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Tests of the CPU cuBLAS: every routine against a naive reference on the simulated
//! device memory.

use half::f16;
use vcuda_protocol::blas::{OP_N, OP_T};
use vcuda_protocol::lib::BLAS_DEVICE_POINTERS;

use super::call::{FAULT, MISALIGNED, compute};
use super::*;
use crate::executor::cpu::memory::{AllocKind, MemoryBudget};

struct Env {
    heap: DeviceHeap,
    blas: Blas,
    h: u64,
}

impl Env {
    fn new() -> Self {
        let mut blas = Blas::default();
        let h = blas.create().expect("OpenBLAS (libopenblas0) loads");
        Self {
            heap: DeviceHeap::new(MemoryBudget::new(1 << 26), u64::MAX),
            blas,
            h,
        }
    }

    fn put<T: Elem>(&mut self, v: &[T]) -> u64 {
        let len = v.len() as u64 * T::SIZE;
        let a = self.heap.alloc(len.max(1), AllocKind::User).unwrap();
        let b = self.heap.bytes_mut(a, len).unwrap();
        for (i, x) in v.iter().enumerate() {
            x.store(&mut b[i * T::SIZE as usize..]);
        }
        a
    }

    fn get<T: Elem>(&self, a: u64, n: usize) -> Vec<T> {
        let b = self.heap.bytes(a, n as u64 * T::SIZE).unwrap();
        b.chunks(T::SIZE as usize).map(T::load).collect()
    }

    fn call(&mut self, r: BlasCallReq) -> ExecResult<[u8; 16]> {
        let r = BlasCallReq {
            handle: self.h,
            ..r
        };
        self.blas.call(&mut self.heap, &r)
    }
}

fn s16<T: Elem>(v: T) -> [u8; 16] {
    let mut b = [0; 16];
    v.store(&mut b);
    b
}

fn data(n: usize, seed: u32) -> Vec<f64> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            f64::from((s >> 8) & 0xffff) / 65536.0 - 0.5
        })
        .collect()
}

fn close(a: &[f64], b: &[f64], tol: f64) {
    assert_eq!(a.len(), b.len());
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!((x - y).abs() <= tol * (1.0 + y.abs()), "[{i}] {x} vs {y}");
    }
}

fn op(t: u32, a: &[f64], ld: usize, i: usize, j: usize) -> f64 {
    if t == OP_N {
        a[i + j * ld]
    } else {
        a[j + i * ld]
    }
}

#[test]
fn gemm_all_transposes_and_batches() {
    for (ta, tb) in [(OP_N, OP_N), (OP_N, OP_T), (OP_T, OP_N), (OP_T, OP_T)] {
        let (m, n, k) = (5usize, 3usize, 4usize);
        let lda = if ta == OP_N { m + 1 } else { k + 2 };
        let ldb = if tb == OP_N { k } else { n + 1 };
        let ldc = m + 3;
        let a = data(lda * if ta == OP_N { k } else { m }, 1);
        let b = data(ldb * if tb == OP_N { n } else { k }, 2);
        let c = data(ldc * n, 3);
        let mut e = Env::new();
        let (da, db, dc) = (e.put(&a), e.put(&b), e.put(&c));
        e.call(BlasCallReq {
            func: func::GEMM,
            type_a: dtype::R_64F,
            type_b: dtype::R_64F,
            type_c: dtype::R_64F,
            trans_a: ta,
            trans_b: tb,
            m: m as i64,
            n: n as i64,
            k: k as i64,
            lda: lda as i64,
            ldb: ldb as i64,
            ldc: ldc as i64,
            a: da,
            b: db,
            c: dc,
            alpha: s16(2.0f64),
            beta: s16(-1.0f64),
            ..Default::default()
        })
        .unwrap();
        let mut want = c.clone();
        for j in 0..n {
            for i in 0..m {
                let s: f64 = (0..k)
                    .map(|p| op(ta, &a, lda, i, p) * op(tb, &b, ldb, p, j))
                    .sum();
                want[i + j * ldc] = 2.0 * s - c[i + j * ldc];
            }
        }
        close(&e.get::<f64>(dc, c.len()), &want, 1e-12);
    }
    // Strided batch and pointer-array batch in f32 give the same results.
    let (m, n, k, batch) = (3usize, 2usize, 4usize, 3usize);
    let a: Vec<f32> = data(m * k * batch, 4).iter().map(|&x| x as f32).collect();
    let b: Vec<f32> = data(k * n * batch, 5).iter().map(|&x| x as f32).collect();
    let mut e = Env::new();
    let (da, db) = (e.put(&a), e.put(&b));
    let dc = e.put(&vec![0.0f32; m * n * batch]);
    let base = BlasCallReq {
        type_a: dtype::R_32F,
        type_b: dtype::R_32F,
        type_c: dtype::R_32F,
        m: m as i64,
        n: n as i64,
        k: k as i64,
        lda: m as i64,
        ldb: k as i64,
        ldc: m as i64,
        batch: batch as i64,
        alpha: s16(1.0f32),
        beta: s16(0.0f32),
        ..Default::default()
    };
    e.call(BlasCallReq {
        func: func::GEMM,
        a: da,
        b: db,
        c: dc,
        stride_a: (m * k) as i64,
        stride_b: (k * n) as i64,
        stride_c: (m * n) as i64,
        ..base
    })
    .unwrap();
    let strided = e.get::<f32>(dc, m * n * batch);
    let dc2 = e.put(&vec![0.0f32; m * n * batch]);
    let ptrs = |base: u64, stride: usize| -> Vec<f64> {
        (0..batch)
            .map(|i| f64::from_bits(base + (i * stride * 4) as u64))
            .collect()
    };
    let pa = e.put(&ptrs(da, m * k));
    let pb = e.put(&ptrs(db, k * n));
    let pc = e.put(&ptrs(dc2, m * n));
    e.call(BlasCallReq {
        func: func::GEMM_BATCHED,
        a: pa,
        b: pb,
        c: pc,
        ..base
    })
    .unwrap();
    assert_eq!(e.get::<f32>(dc2, m * n * batch), strided);
    for bi in 0..batch {
        for j in 0..n {
            for i in 0..m {
                let s: f32 = (0..k)
                    .map(|p| a[bi * m * k + i + p * m] * b[bi * k * n + p + j * k])
                    .sum();
                assert!((strided[bi * m * n + i + j * m] - s).abs() < 1e-5);
            }
        }
    }
}

#[test]
fn level_one() {
    let x = data(10, 7);
    let y = data(10, 8);
    let mut e = Env::new();
    let (dx, dy) = (e.put(&x), e.put(&y));
    let v = BlasCallReq {
        type_a: dtype::R_64F,
        n: 5,
        x: dx,
        incx: 2,
        y: dy,
        incy: -2,
        ..Default::default()
    };
    let get = |b: [u8; 16]| f64::load(&b);
    let asum = get(e
        .call(BlasCallReq {
            func: func::ASUM,
            ..v
        })
        .unwrap());
    close(
        &[asum],
        &[x.iter().step_by(2).map(|v| v.abs()).sum()],
        1e-12,
    );
    let nrm = get(e
        .call(BlasCallReq {
            func: func::NRM2,
            ..v
        })
        .unwrap());
    close(
        &[nrm],
        &[x.iter().step_by(2).map(|v| v * v).sum::<f64>().sqrt()],
        1e-12,
    );
    // Negative increments walk y backwards from its last element.
    let dot = get(e
        .call(BlasCallReq {
            func: func::DOT,
            ..v
        })
        .unwrap());
    let want: f64 = (0..5).map(|i| x[2 * i] * y[8 - 2 * i]).sum();
    close(&[dot], &[want], 1e-12);
    let imax = e
        .call(BlasCallReq {
            func: func::IAMAX,
            ..v
        })
        .unwrap();
    let imin = e
        .call(BlasCallReq {
            func: func::IAMIN,
            ..v
        })
        .unwrap();
    let xs: Vec<f64> = x.iter().step_by(2).map(|v| v.abs()).collect();
    let arg = |f: &dyn Fn(f64, f64) -> bool| {
        (0..5).fold(0, |b, i| if f(xs[i], xs[b]) { i } else { b }) as i32 + 1
    };
    assert_eq!(
        i32::from_le_bytes(imax[..4].try_into().unwrap()),
        arg(&|a, b| a > b)
    );
    assert_eq!(
        i32::from_le_bytes(imin[..4].try_into().unwrap()),
        arg(&|a, b| a < b)
    );
    // Empty vectors give zero.
    assert_eq!(
        e.call(BlasCallReq {
            func: func::NRM2,
            n: 0,
            ..v
        })
        .unwrap(),
        [0; 16]
    );
    e.call(BlasCallReq {
        func: func::AXPY,
        alpha: s16(3.0f64),
        ..v
    })
    .unwrap();
    let mut want = y.clone();
    for i in 0..5 {
        want[8 - 2 * i] += 3.0 * x[2 * i];
    }
    close(&e.get::<f64>(dy, 10), &want, 1e-12);
    e.call(BlasCallReq {
        func: func::SCAL,
        alpha: s16(-2.0f64),
        ..v
    })
    .unwrap();
    let sx = e.get::<f64>(dx, 10);
    assert!((0..10).all(|i| sx[i] == if i % 2 == 0 { -2.0 * x[i] } else { x[i] }));
    let before_y = e.get::<f64>(dy, 10);
    e.call(BlasCallReq {
        func: func::SWAP,
        incy: 2,
        ..v
    })
    .unwrap();
    assert_eq!(e.get::<f64>(dx, 10)[2], before_y[2]);
    e.call(BlasCallReq {
        func: func::COPY,
        incy: 2,
        ..v
    })
    .unwrap();
    assert_eq!(e.get::<f64>(dy, 10)[4], e.get::<f64>(dx, 10)[4]);
    let (c, s) = (0.6f64, 0.8f64);
    let (bx, by) = (e.get::<f64>(dx, 10), e.get::<f64>(dy, 10));
    e.call(BlasCallReq {
        func: func::ROT,
        incy: 2,
        alpha: s16(c),
        beta: s16(s),
        ..v
    })
    .unwrap();
    let (ax, ay) = (e.get::<f64>(dx, 10), e.get::<f64>(dy, 10));
    close(
        &[ax[6], ay[6]],
        &[c * bx[6] + s * by[6], c * by[6] - s * bx[6]],
        1e-12,
    );
}

#[test]
fn level_two() {
    let (m, n) = (4usize, 3usize);
    let a = data(m * n, 9);
    let x = data(m, 10);
    let y = data(n, 11);
    let mut e = Env::new();
    let (da, dx, dy) = (e.put(&a), e.put(&x), e.put(&y));
    let base = BlasCallReq {
        type_a: dtype::R_64F,
        m: m as i64,
        n: n as i64,
        a: da,
        lda: m as i64,
        x: dx,
        incx: 1,
        y: dy,
        incy: 1,
        alpha: s16(1.0f64),
        beta: s16(0.5f64),
        ..Default::default()
    };
    // y = A^T x + 0.5 y.
    e.call(BlasCallReq {
        func: func::GEMV,
        trans_a: OP_T,
        ..base
    })
    .unwrap();
    let want: Vec<f64> = (0..n)
        .map(|j| (0..m).map(|i| a[i + j * m] * x[i]).sum::<f64>() + 0.5 * y[j])
        .collect();
    close(&e.get::<f64>(dy, n), &want, 1e-12);
    let y2 = e.get::<f64>(dy, n);
    e.call(BlasCallReq {
        func: func::GER,
        ..base
    })
    .unwrap();
    let got = e.get::<f64>(da, m * n);
    for j in 0..n {
        for i in 0..m {
            assert!((got[i + j * m] - (a[i + j * m] + x[i] * y2[j])).abs() < 1e-12);
        }
    }
    // A lower-triangular 3 x 3 system: symv with the lower part, then trsv undoes the
    // triangular product.
    let l = [2.0, 0.5, -1.0, 9.0, 3.0, 0.25, 9.0, 9.0, 4.0f64];
    let v = [1.0, -2.0, 0.5f64];
    let mut e = Env::new();
    let (dl, dv, dw) = (e.put(&l), e.put(&v), e.put(&[0.0f64; 3]));
    let tri = BlasCallReq {
        type_a: dtype::R_64F,
        n: 3,
        a: dl,
        lda: 3,
        x: dv,
        incx: 1,
        y: dw,
        incy: 1,
        uplo: check::FILL_LOWER,
        alpha: s16(1.0f64),
        beta: s16(0.0f64),
        ..Default::default()
    };
    e.call(BlasCallReq {
        func: func::SYMV,
        ..tri
    })
    .unwrap();
    let sym = |i: usize, j: usize| if i >= j { l[i + j * 3] } else { l[j + i * 3] };
    let want: Vec<f64> = (0..3)
        .map(|i| (0..3).map(|j| sym(i, j) * v[j]).sum())
        .collect();
    close(&e.get::<f64>(dw, 3), &want, 1e-12);
    // b = L v, then solve L x = b.
    let b: Vec<f64> = (0..3)
        .map(|i| (0..=i).map(|j| l[i + j * 3] * v[j]).sum())
        .collect();
    let db = e.put(&b);
    e.call(BlasCallReq {
        func: func::TRSV,
        x: db,
        ..tri
    })
    .unwrap();
    close(&e.get::<f64>(db, 3), &v, 1e-12);
}

#[test]
fn level_three() {
    let (m, n) = (3usize, 2usize);
    let l = [2.0, 0.5, -1.0, 0.0, 3.0, 0.25, 0.0, 0.0, 4.0f64];
    let x = data(m * n, 12);
    let b: Vec<f64> = (0..m * n)
        .map(|ij| {
            let (i, j) = (ij % m, ij / m);
            (0..=i).map(|p| l[i + p * m] * x[p + j * m]).sum()
        })
        .collect();
    let mut e = Env::new();
    let (dl, db) = (e.put(&l), e.put(&b));
    let base = BlasCallReq {
        type_a: dtype::R_64F,
        m: m as i64,
        n: n as i64,
        a: dl,
        lda: m as i64,
        b: db,
        ldb: m as i64,
        uplo: check::FILL_LOWER,
        alpha: s16(1.0f64),
        beta: s16(0.0f64),
        ..Default::default()
    };
    e.call(BlasCallReq {
        func: func::TRSM,
        ..base
    })
    .unwrap();
    close(&e.get::<f64>(db, m * n), &x, 1e-12);
    // symm: C = S X with S the symmetric completion of the lower triangle of l.
    let dc = e.put(&vec![0.0f64; m * n]);
    let dx = e.put(&x);
    e.call(BlasCallReq {
        func: func::SYMM,
        b: dx,
        c: dc,
        ldc: m as i64,
        ..base
    })
    .unwrap();
    let sym = |i: usize, j: usize| if i >= j { l[i + j * m] } else { l[j + i * m] };
    let want: Vec<f64> = (0..m * n)
        .map(|ij| (0..m).map(|p| sym(ij % m, p) * x[p + (ij / m) * m]).sum())
        .collect();
    close(&e.get::<f64>(dc, m * n), &want, 1e-12);
    // syrk: lower triangle of X X^T.
    let dk = e.put(&vec![0.0f64; m * m]);
    e.call(BlasCallReq {
        func: func::SYRK,
        n: m as i64,
        k: n as i64,
        a: dx,
        c: dk,
        ldc: m as i64,
        ..base
    })
    .unwrap();
    let got = e.get::<f64>(dk, m * m);
    for j in 0..m {
        for i in j..m {
            let w: f64 = (0..n).map(|p| x[i + p * m] * x[j + p * m]).sum();
            assert!((got[i + j * m] - w).abs() < 1e-12);
        }
    }
    // geam in place: X = 2 X + (-1) L[0..3, 0..2]^T^T.
    e.call(BlasCallReq {
        func: func::GEAM,
        a: dx,
        b: dl,
        c: dx,
        ldc: m as i64,
        alpha: s16(2.0f64),
        beta: s16(-1.0f64),
        ..base
    })
    .unwrap();
    let want: Vec<f64> = (0..m * n).map(|i| 2.0 * x[i] - l[i]).collect();
    close(&e.get::<f64>(dx, m * n), &want, 1e-12);
}

#[test]
fn lu_factor_and_solve() {
    let a = [1.0, 4.0, 7.0, 2.0, 5.0, 8.0, 3.0, 6.0, 10.0f32];
    let xs = [1.0, 2.0, 3.0f32];
    let b: Vec<f32> = (0..3)
        .map(|i| (0..3).map(|j| a[i + j * 3] * xs[j]).sum())
        .collect();
    let mut e = Env::new();
    let (da, db) = (e.put(&a), e.put(&b));
    let (pa, pb) = (e.put(&[f64::from_bits(da)]), e.put(&[f64::from_bits(db)]));
    let piv = e.put(&[0.0f32; 3]);
    let info = e.put(&[1.0f32]);
    let base = BlasCallReq {
        type_a: dtype::R_32F,
        n: 3,
        k: 1,
        a: pa,
        lda: 3,
        b: pb,
        ldb: 3,
        x: piv,
        y: info,
        batch: 1,
        ..Default::default()
    };
    e.call(BlasCallReq {
        func: func::GETRF_BATCHED,
        ..base
    })
    .unwrap();
    assert_eq!(e.heap.bytes(info, 4).unwrap(), &[0; 4]);
    e.call(BlasCallReq {
        func: func::GETRS_BATCHED,
        ..base
    })
    .unwrap();
    let got = e.get::<f32>(db, 3);
    assert!(
        got.iter().zip(xs).all(|(g, w)| (g - w).abs() < 1e-4),
        "{got:?}"
    );
    // Without pivots (a null pivot array) on a diagonally dominant matrix.
    let d = [4.0, 1.0, 1.0, 5.0f64];
    let dd = e.put(&d);
    let pd = e.put(&[f64::from_bits(dd)]);
    e.call(BlasCallReq {
        func: func::GETRF_BATCHED,
        type_a: dtype::R_64F,
        a: pd,
        n: 2,
        lda: 2,
        x: 0,
        ..base
    })
    .unwrap();
    close(&e.get::<f64>(dd, 4), &[4.0, 0.25, 1.0, 4.75], 1e-12);
}

#[test]
fn gemm_ex_half_inputs() {
    let (m, n, k) = (2usize, 2usize, 3usize);
    let a: Vec<f32> = vec![1.0, 2.0, 0.5, -1.0, 3.0, 0.25];
    let b: Vec<f32> = vec![1.0, 0.0, 2.0, -2.0, 1.5, 1.0];
    let mut e = Env::new();
    let half = |v: &[f32]| -> Vec<u8> {
        v.iter()
            .flat_map(|&x| f16::from_f32(x).to_le_bytes())
            .collect()
    };
    let put_bytes = |e: &mut Env, b: &[u8]| {
        let a = e.heap.alloc(b.len() as u64, AllocKind::User).unwrap();
        e.heap
            .bytes_mut(a, b.len() as u64)
            .unwrap()
            .copy_from_slice(b);
        a
    };
    let da = put_bytes(&mut e, &half(&a));
    let db = put_bytes(&mut e, &half(&b));
    let dc = e.put(&[0.0f32; 4]);
    e.call(BlasCallReq {
        func: func::GEMM,
        type_a: dtype::R_16F,
        type_b: dtype::R_16F,
        type_c: dtype::R_32F,
        compute: compute::C32F,
        m: m as i64,
        n: n as i64,
        k: k as i64,
        lda: m as i64,
        ldb: k as i64,
        ldc: m as i64,
        a: da,
        b: db,
        c: dc,
        alpha: s16(1.0f32),
        beta: s16(0.0f32),
        ..Default::default()
    })
    .unwrap();
    let want: Vec<f32> = (0..m * n)
        .map(|ij| {
            (0..k)
                .map(|p| a[ij % m + p * m] * b[p + (ij / m) * k])
                .sum()
        })
        .collect();
    assert_eq!(e.get::<f32>(dc, 4), want);
}

#[test]
fn faults_and_errors() {
    let mut e = Env::new();
    let dx = e.put(&[1.0f32; 8]);
    let v = BlasCallReq {
        func: func::ASUM,
        type_a: dtype::R_32F,
        n: 8,
        x: dx,
        incx: 1,
        ..Default::default()
    };
    assert_eq!(f32::load(&e.call(v).unwrap()), 8.0);
    // One element past the allocation, a stride that walks out of it, a misaligned
    // pointer, an unknown handle, a bad leading dimension, an unknown type.
    assert_eq!(e.call(BlasCallReq { n: 9, ..v }), Err(FAULT));
    assert_eq!(e.call(BlasCallReq { incx: 2, ..v }), Err(FAULT));
    assert_eq!(e.call(BlasCallReq { x: dx + 2, ..v }), Err(MISALIGNED));
    assert_eq!(
        e.blas.call(&mut e.heap, &BlasCallReq { handle: 1, ..v }),
        Err(Status(BLAS_NOT_INITIALIZED))
    );
    let g = BlasCallReq {
        func: func::GEMM,
        type_a: dtype::R_32F,
        type_b: dtype::R_32F,
        type_c: dtype::R_32F,
        m: 2,
        n: 2,
        k: 2,
        lda: 2,
        ldb: 2,
        ldc: 2,
        a: dx,
        b: dx,
        c: dx,
        ..Default::default()
    };
    assert!(e.call(g).is_ok());
    assert_eq!(
        e.call(BlasCallReq { lda: 1, ..g }),
        Err(Status(vcuda_protocol::lib::BLAS_INVALID_VALUE))
    );
    assert_eq!(e.call(BlasCallReq { ldc: 7, ..g }), Err(FAULT));
    assert_eq!(e.call(BlasCallReq { type_a: 99, ..v }), Err(UNSUPPORTED));
    // Device pointer mode: the result goes to device memory.
    let host = f32::load(&e.call(v).unwrap());
    let dr = e.put(&[0.0f32]);
    let out = e
        .call(BlasCallReq {
            flags: BLAS_DEVICE_POINTERS,
            result: dr,
            ..v
        })
        .unwrap();
    assert_eq!(out, [0; 16]);
    assert_eq!(e.get::<f32>(dr, 1), [host]);
    e.blas.destroy(e.h).unwrap();
    assert_eq!(e.call(v), Err(Status(BLAS_NOT_INITIALIZED)));
}
