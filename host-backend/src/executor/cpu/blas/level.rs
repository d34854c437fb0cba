// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Running a request of element type `T`: levels 1 to 3, GEMM (plain, batched and
//! strided) and GEAM.

use super::*;

/// Rows and columns of the stored `op(X)` of an `rows x cols` result.
pub(super) fn stored(t: u32, rows: i64, cols: i64) -> (i64, i64) {
    if t == OP_N {
        (rows, cols)
    } else {
        (cols, rows)
    }
}

/// Runs a request whose element type is `T`.
pub(super) fn run<T: Elem>(cx: &mut Ctx<'_>) -> ExecResult<[u8; 16]> {
    let r = *cx.r;
    let (n, ix, iy) = (int(r.n), int(r.incx), int(r.incy));
    let none = Ok([0u8; 16]);
    match r.func {
        func::ASUM | func::NRM2 => {
            let v = if r.n <= 0 || r.incx <= 0 {
                0.0
            } else {
                let x = cx.vector::<T>(r.x, r.n, r.incx)?;
                // SAFETY: `x` covers n elements incx apart (checked by `vector`).
                unsafe {
                    if r.func == func::ASUM {
                        T::asum(n, x, ix)
                    } else {
                        T::nrm2(n, x, ix)
                    }
                }
            };
            cx.result(&T::real_bytes(v)[..T::REAL_SIZE])
        }
        func::IAMAX | func::IAMIN => {
            let i: i32 = if r.n <= 0 || r.incx <= 0 {
                0
            } else {
                let x = cx.vector::<T>(r.x, r.n, r.incx)?;
                if r.func == func::IAMAX {
                    // SAFETY: every operand was resolved just above by `cx.vector`/`cx.matrix`, which
                    // checked its whole extent in one allocation and its alignment; no Rust reference into the
                    // heap is alive during the call.
                    unsafe { T::iamax(n, x, ix) + 1 }
                } else {
                    let (mut best, mut at) = (f64::INFINITY, 0);
                    for i in 0..r.n as usize {
                        // SAFETY: element i lies within the checked extent.
                        let v = unsafe { x.add(i * r.incx as usize).read() }.abs1();
                        if v < best {
                            (best, at) = (v, i as i32 + 1);
                        }
                    }
                    at
                }
            };
            cx.result(&i.to_le_bytes())
        }
        func::DOT | func::DOTC => {
            let v = if r.n <= 0 {
                T::zero()
            } else {
                let x = cx.vector::<T>(r.x, r.n, r.incx)?;
                let y = cx.vector::<T>(r.y, r.n, r.incy)?;
                // SAFETY: every operand was resolved just above by `cx.vector`/`cx.matrix`, which
                // checked its whole extent in one allocation and its alignment; no Rust reference into the
                // heap is alive during the call.
                unsafe { T::dot(n, x, ix, y, iy, r.func == func::DOTC) }
            };
            let mut b = [0u8; 16];
            v.store(&mut b);
            cx.result(&b[..T::SIZE as usize])
        }
        func::AXPY | func::COPY | func::SWAP | func::ROT => {
            if r.n <= 0 {
                return none;
            }
            if r.func == func::ROT && T::COMPLEX {
                return Err(UNSUPPORTED);
            }
            let alpha = cx.scalar::<T>(&r.alpha)?;
            let beta = if r.func == func::ROT {
                cx.scalar::<T>(&r.beta)?
            } else {
                T::zero()
            };
            let x = cx.vector::<T>(r.x, r.n, r.incx)?;
            let y = cx.vector::<T>(r.y, r.n, r.incy)?;
            // SAFETY: both vectors' extents are checked; BLAS allows them to alias.
            unsafe {
                match r.func {
                    func::AXPY => T::axpy(n, alpha, x, ix, y, iy),
                    func::COPY => T::copy(n, x, ix, y, iy),
                    func::SWAP => T::swap(n, x, ix, y, iy),
                    _ => T::rot(n, x, ix, y, iy, alpha.re(), beta.re()),
                }
            }
            none
        }
        func::SCAL => {
            if r.n <= 0 || r.incx <= 0 {
                return none;
            }
            let x = cx.vector::<T>(r.x, r.n, r.incx)?;
            if T::COMPLEX && !check::is_complex(r.type_b) && r.type_b != 0 {
                // csscal / zdscal: a real scalar of the vector's precision.
                let a = if T::REAL_SIZE == 4 {
                    f64::from(cx.scalar::<f32>(&r.alpha)?)
                } else {
                    cx.scalar::<f64>(&r.alpha)?
                };
                // SAFETY: every operand was resolved just above by `cx.vector`/`cx.matrix`, which
                // checked its whole extent in one allocation and its alignment; no Rust reference into the
                // heap is alive during the call.
                unsafe { T::scal_real(n, a, x, ix) };
            } else {
                let a = cx.scalar::<T>(&r.alpha)?;
                // SAFETY: every operand was resolved just above by `cx.vector`/`cx.matrix`, which
                // checked its whole extent in one allocation and its alignment; no Rust reference into the
                // heap is alive during the call.
                unsafe { T::scal(n, a, x, ix) };
            }
            none
        }
        func::GEMV => {
            let (xl, yl) = if r.trans_a == OP_N {
                (r.n, r.m)
            } else {
                (r.m, r.n)
            };
            let (alpha, beta) = (cx.scalar::<T>(&r.alpha)?, cx.scalar::<T>(&r.beta)?);
            let a = cx.matrix::<T>(r.a, r.m, r.n, r.lda)?;
            let x = cx.vector::<T>(r.x, xl, r.incx)?;
            let y = cx.vector::<T>(r.y, yl, r.incy)?;
            if r.m == 0 || r.n == 0 {
                return none;
            }
            // SAFETY: every operand's extent is checked.
            unsafe {
                T::gemv(
                    r.trans_a,
                    int(r.m),
                    n,
                    alpha,
                    a,
                    int(r.lda),
                    x,
                    ix,
                    beta,
                    y,
                    iy,
                )
            };
            none
        }
        func::GER => {
            let alpha = cx.scalar::<T>(&r.alpha)?;
            let x = cx.vector::<T>(r.x, r.m, r.incx)?;
            let y = cx.vector::<T>(r.y, r.n, r.incy)?;
            let a = cx.matrix::<T>(r.a, r.m, r.n, r.lda)?;
            if r.m == 0 || r.n == 0 {
                return none;
            }
            // SAFETY: every operand was resolved just above by `cx.vector`/`cx.matrix`, which
            // checked its whole extent in one allocation and its alignment; no Rust reference into the
            // heap is alive during the call.
            unsafe {
                T::ger(
                    int(r.m),
                    n,
                    alpha,
                    x,
                    ix,
                    y,
                    iy,
                    a,
                    int(r.lda),
                    r.trans_b == OP_C,
                )
            };
            none
        }
        func::SYMV => {
            let (alpha, beta) = (cx.scalar::<T>(&r.alpha)?, cx.scalar::<T>(&r.beta)?);
            let a = cx.matrix::<T>(r.a, r.n, r.n, r.lda)?;
            let x = cx.vector::<T>(r.x, r.n, r.incx)?;
            let y = cx.vector::<T>(r.y, r.n, r.incy)?;
            if r.n == 0 {
                return none;
            }
            // SAFETY: every operand was resolved just above by `cx.vector`/`cx.matrix`, which
            // checked its whole extent in one allocation and its alignment; no Rust reference into the
            // heap is alive during the call.
            unsafe { T::symv(r.uplo, n, alpha, a, int(r.lda), x, ix, beta, y, iy) }
                .ok_or(UNSUPPORTED)?;
            none
        }
        func::TRSV => {
            let a = cx.matrix::<T>(r.a, r.n, r.n, r.lda)?;
            let x = cx.vector::<T>(r.x, r.n, r.incx)?;
            if r.n == 0 {
                return none;
            }
            // SAFETY: every operand was resolved just above by `cx.vector`/`cx.matrix`, which
            // checked its whole extent in one allocation and its alignment; no Rust reference into the
            // heap is alive during the call.
            unsafe { T::trsv(r.uplo, r.trans_a, r.diag, n, a, int(r.lda), x, ix) };
            none
        }
        func::GEMM | func::GEMM_BATCHED => gemm::<T>(cx).map(|()| [0; 16]),
        func::SYMM => {
            let (alpha, beta) = (cx.scalar::<T>(&r.alpha)?, cx.scalar::<T>(&r.beta)?);
            let ka = if r.side == check::SIDE_LEFT { r.m } else { r.n };
            let a = cx.matrix::<T>(r.a, ka, ka, r.lda)?;
            let b = cx.matrix::<T>(r.b, r.m, r.n, r.ldb)?;
            let c = cx.matrix::<T>(r.c, r.m, r.n, r.ldc)?;
            if r.m == 0 || r.n == 0 {
                return none;
            }
            // SAFETY: every operand was resolved just above by `cx.vector`/`cx.matrix`, which
            // checked its whole extent in one allocation and its alignment; no Rust reference into the
            // heap is alive during the call.
            unsafe {
                T::symm(
                    r.side,
                    r.uplo,
                    int(r.m),
                    n,
                    alpha,
                    a,
                    int(r.lda),
                    b,
                    int(r.ldb),
                    beta,
                    c,
                    int(r.ldc),
                )
            };
            none
        }
        func::SYRK => {
            let (alpha, beta) = (cx.scalar::<T>(&r.alpha)?, cx.scalar::<T>(&r.beta)?);
            let (ar, ac) = stored(r.trans_a, r.n, r.k);
            let a = cx.matrix::<T>(r.a, ar, ac, r.lda)?;
            let c = cx.matrix::<T>(r.c, r.n, r.n, r.ldc)?;
            if r.n == 0 {
                return none;
            }
            // SAFETY: every operand was resolved just above by `cx.vector`/`cx.matrix`, which
            // checked its whole extent in one allocation and its alignment; no Rust reference into the
            // heap is alive during the call.
            unsafe {
                T::syrk(
                    r.uplo,
                    r.trans_a,
                    n,
                    int(r.k),
                    alpha,
                    a,
                    int(r.lda),
                    beta,
                    c,
                    int(r.ldc),
                )
            };
            none
        }
        func::TRSM => {
            let alpha = cx.scalar::<T>(&r.alpha)?;
            let ka = if r.side == check::SIDE_LEFT { r.m } else { r.n };
            let a = cx.matrix::<T>(r.a, ka, ka, r.lda)?;
            let b = cx.matrix::<T>(r.b, r.m, r.n, r.ldb)?;
            if r.m == 0 || r.n == 0 {
                return none;
            }
            // SAFETY: every operand was resolved just above by `cx.vector`/`cx.matrix`, which
            // checked its whole extent in one allocation and its alignment; no Rust reference into the
            // heap is alive during the call.
            unsafe {
                T::trsm(
                    r.side,
                    r.uplo,
                    r.trans_a,
                    r.diag,
                    int(r.m),
                    n,
                    alpha,
                    a,
                    int(r.lda),
                    b,
                    int(r.ldb),
                )
            };
            none
        }
        func::GEAM => geam::<T>(cx).map(|()| [0; 16]),
        func::GETRF_BATCHED => getrf_batched::<T>(cx).map(|()| [0; 16]),
        func::GETRS_BATCHED => getrs_batched::<T>(cx),
        _ => Err(UNSUPPORTED),
    }
}

/// The device addresses of A, B and C of every matrix of a GEMM request.
pub(super) fn gemm_operands(cx: &Ctx<'_>, size: u64) -> ExecResult<Vec<(u64, u64, u64)>> {
    let r = cx.r;
    if r.func == func::GEMM_BATCHED {
        let a = cx.pointer_array(r.a, r.batch)?;
        let b = cx.pointer_array(r.b, r.batch)?;
        let c = cx.pointer_array(r.c, r.batch)?;
        return Ok(a
            .into_iter()
            .zip(b)
            .zip(c)
            .map(|((a, b), c)| (a, b, c))
            .collect());
    }
    if r.batch == 0 {
        return Ok(vec![(r.a, r.b, r.c)]);
    }
    (0..r.batch)
        .map(|i| {
            Ok((
                offset(r.a, i, r.stride_a, size)?,
                offset(r.b, i, r.stride_b, size)?,
                offset(r.c, i, r.stride_c, size)?,
            ))
        })
        .collect()
}

pub(super) fn gemm<T: Elem>(cx: &mut Ctx<'_>) -> ExecResult<()> {
    let r = *cx.r;
    let (alpha, beta) = (cx.scalar::<T>(&r.alpha)?, cx.scalar::<T>(&r.beta)?);
    let (ar, ac) = stored(r.trans_a, r.m, r.k);
    let (br, bc) = stored(r.trans_b, r.k, r.n);
    let ops = gemm_operands(cx, T::SIZE)?;
    // Check every matrix of the batch before running any.
    let mut checked = Vec::with_capacity(ops.len());
    for (a, b, c) in ops {
        checked.push((
            cx.matrix::<T>(a, ar, ac, r.lda)?,
            cx.matrix::<T>(b, br, bc, r.ldb)?,
            cx.matrix::<T>(c, r.m, r.n, r.ldc)?,
        ));
    }
    if r.m == 0 || r.n == 0 {
        return Ok(());
    }
    for (a, b, c) in checked {
        // SAFETY: each operand's extent was checked above.
        unsafe {
            T::gemm(
                r.trans_a,
                r.trans_b,
                int(r.m),
                int(r.n),
                int(r.k),
                alpha,
                a,
                int(r.lda),
                b,
                int(r.ldb),
                beta,
                c,
                int(r.ldc),
            )
        };
    }
    Ok(())
}

/// `op(X)(i, j)` of a column-major matrix at `p`.
///
/// # Safety
/// `p` must cover the stored matrix, and `(i, j)` be inside `op(X)`.
pub(super) unsafe fn at<T: Elem>(p: *const T, t: u32, ld: i64, i: i64, j: i64) -> T {
    let (r, c) = if t == OP_N { (i, j) } else { (j, i) };
    // SAFETY: the caller's contract.
    let v = unsafe { p.add((r + c * ld) as usize).read() };
    if t == OP_C { v.conj() } else { v }
}

pub(super) fn geam<T: Elem>(cx: &mut Ctx<'_>) -> ExecResult<()> {
    let r = *cx.r;
    let (alpha, beta) = (cx.scalar::<T>(&r.alpha)?, cx.scalar::<T>(&r.beta)?);
    let (ar, ac) = stored(r.trans_a, r.m, r.n);
    let (br, bc) = stored(r.trans_b, r.m, r.n);
    // A (B) is not read when alpha (beta) is zero, so it may be null then.
    let a = if alpha == T::zero() {
        None
    } else {
        Some(cx.matrix::<T>(r.a, ar, ac, r.lda)?)
    };
    let b = if beta == T::zero() {
        None
    } else {
        Some(cx.matrix::<T>(r.b, br, bc, r.ldb)?)
    };
    let c = cx.matrix::<T>(r.c, r.m, r.n, r.ldc)?;
    // Compute into a buffer first: C may be A or B (in-place geam).
    let mut out = Vec::with_capacity((r.m * r.n) as usize);
    for j in 0..r.n {
        for i in 0..r.m {
            let mut v = T::zero();
            if let Some(a) = a {
                // SAFETY: (i, j) is inside op(A), whose extent was checked.
                v = v.add(alpha.mul(unsafe { at(a, r.trans_a, r.lda, i, j) }));
            }
            if let Some(b) = b {
                // SAFETY: every operand was resolved just above by `cx.vector`/`cx.matrix`, which
                // checked its whole extent in one allocation and its alignment; no Rust reference into the
                // heap is alive during the call.
                v = v.add(beta.mul(unsafe { at(b, r.trans_b, r.ldb, i, j) }));
            }
            out.push(v);
        }
    }
    for j in 0..r.n {
        for i in 0..r.m {
            // SAFETY: inside C's checked extent.
            unsafe {
                c.add((i + j * r.ldc) as usize)
                    .write(out[(i + j * r.m) as usize])
            };
        }
    }
    Ok(())
}
