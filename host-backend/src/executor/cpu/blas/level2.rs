// SPDX-License-Identifier: Apache-2.0 OR MIT
//! BLAS level 2 on the CPU: matrix-vector products and updates (`gemv`, `ger`, `symv`)
//! and the triangular solve `trsv`.

use vcuda_protocol::blas::{OP_C, OP_N};

use super::call::{Ctx, UNSUPPORTED, int};
use super::elem::Elem;
use crate::executor::ExecResult;

/// `y = alpha op(A) x + beta y`.
pub(super) fn gemv<T: Elem>(cx: &mut Ctx<'_>) -> ExecResult<()> {
    let r = *cx.r;
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
        return Ok(());
    }
    // SAFETY: `matrix` and `vector` checked A (m x n, lda) and x and y (the lengths op(A)
    // takes and gives, incx and incy apart).
    unsafe {
        T::gemv(
            r.trans_a,
            int(r.m),
            int(r.n),
            alpha,
            a,
            int(r.lda),
            x,
            int(r.incx),
            beta,
            y,
            int(r.incy),
        )
    };
    Ok(())
}

/// `A += alpha x y^T` (`y^H` for `gerc`, flagged by `trans_b == OP_C`).
pub(super) fn ger<T: Elem>(cx: &mut Ctx<'_>) -> ExecResult<()> {
    let r = *cx.r;
    let alpha = cx.scalar::<T>(&r.alpha)?;
    let x = cx.vector::<T>(r.x, r.m, r.incx)?;
    let y = cx.vector::<T>(r.y, r.n, r.incy)?;
    let a = cx.matrix::<T>(r.a, r.m, r.n, r.lda)?;
    if r.m == 0 || r.n == 0 {
        return Ok(());
    }
    // SAFETY: `vector` and `matrix` checked x (m elements), y (n elements) and A (m x n,
    // lda).
    unsafe {
        T::ger(
            int(r.m),
            int(r.n),
            alpha,
            x,
            int(r.incx),
            y,
            int(r.incy),
            a,
            int(r.lda),
            r.trans_b == OP_C,
        )
    };
    Ok(())
}

/// `y = alpha A x + beta y` with A symmetric (real types only).
pub(super) fn symv<T: Elem>(cx: &mut Ctx<'_>) -> ExecResult<()> {
    let r = *cx.r;
    let (alpha, beta) = (cx.scalar::<T>(&r.alpha)?, cx.scalar::<T>(&r.beta)?);
    let a = cx.matrix::<T>(r.a, r.n, r.n, r.lda)?;
    let x = cx.vector::<T>(r.x, r.n, r.incx)?;
    let y = cx.vector::<T>(r.y, r.n, r.incy)?;
    if r.n == 0 {
        return Ok(());
    }
    // SAFETY: `matrix` and `vector` checked A (n x n, lda), x and y (n elements each).
    unsafe {
        T::symv(
            r.uplo,
            int(r.n),
            alpha,
            a,
            int(r.lda),
            x,
            int(r.incx),
            beta,
            y,
            int(r.incy),
        )
    }
    .ok_or(UNSUPPORTED)?;
    Ok(())
}

/// Solves `op(A) x = b` in place, A triangular.
pub(super) fn trsv<T: Elem>(cx: &mut Ctx<'_>) -> ExecResult<()> {
    let r = *cx.r;
    let a = cx.matrix::<T>(r.a, r.n, r.n, r.lda)?;
    let x = cx.vector::<T>(r.x, r.n, r.incx)?;
    if r.n == 0 {
        return Ok(());
    }
    // SAFETY: `matrix` and `vector` checked A (n x n, lda) and x (n elements incx apart).
    unsafe {
        T::trsv(
            r.uplo,
            r.trans_a,
            r.diag,
            int(r.n),
            a,
            int(r.lda),
            x,
            int(r.incx),
        )
    };
    Ok(())
}
