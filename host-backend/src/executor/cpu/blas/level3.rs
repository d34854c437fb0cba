// SPDX-License-Identifier: Apache-2.0 OR MIT
//! BLAS level 3 on the CPU: `gemm` (single, strided-batched and pointer-array batched),
//! `symm`, `syrk`, the triangular solve `trsm`, and the `geam` extension.

use vcuda_protocol::blas::{self as check, OP_C, OP_N};
use vcuda_protocol::lib::func;

use super::call::{Ctx, int, stored};
use super::elem::Elem;
use super::extent::offset;
use crate::executor::ExecResult;

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

/// `C = alpha op(A) op(B) + beta C` for one matrix or every matrix of a batch.
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
        // SAFETY: `matrix` checked each operand's extent above: the stored op(A) and
        // op(B) and C (m x n), with their leading dimensions.
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

/// `C = alpha A B + beta C` (left) or `alpha B A + beta C` (right), A symmetric.
pub(super) fn symm<T: Elem>(cx: &mut Ctx<'_>) -> ExecResult<()> {
    let r = *cx.r;
    let (alpha, beta) = (cx.scalar::<T>(&r.alpha)?, cx.scalar::<T>(&r.beta)?);
    let ka = if r.side == check::SIDE_LEFT { r.m } else { r.n };
    let a = cx.matrix::<T>(r.a, ka, ka, r.lda)?;
    let b = cx.matrix::<T>(r.b, r.m, r.n, r.ldb)?;
    let c = cx.matrix::<T>(r.c, r.m, r.n, r.ldc)?;
    if r.m == 0 || r.n == 0 {
        return Ok(());
    }
    // SAFETY: `matrix` checked A (ka x ka, lda), B (m x n, ldb) and C (m x n, ldc).
    unsafe {
        T::symm(
            r.side,
            r.uplo,
            int(r.m),
            int(r.n),
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
    Ok(())
}

/// `C = alpha op(A) op(A)^T + beta C`, one triangle of C.
pub(super) fn syrk<T: Elem>(cx: &mut Ctx<'_>) -> ExecResult<()> {
    let r = *cx.r;
    let (alpha, beta) = (cx.scalar::<T>(&r.alpha)?, cx.scalar::<T>(&r.beta)?);
    let (ar, ac) = stored(r.trans_a, r.n, r.k);
    let a = cx.matrix::<T>(r.a, ar, ac, r.lda)?;
    let c = cx.matrix::<T>(r.c, r.n, r.n, r.ldc)?;
    if r.n == 0 {
        return Ok(());
    }
    // SAFETY: `matrix` checked the stored op(A) (n x k, lda) and C (n x n, ldc).
    unsafe {
        T::syrk(
            r.uplo,
            r.trans_a,
            int(r.n),
            int(r.k),
            alpha,
            a,
            int(r.lda),
            beta,
            c,
            int(r.ldc),
        )
    };
    Ok(())
}

/// Solves `op(A) X = alpha B` (left) or `X op(A) = alpha B` (right) in place, A triangular.
pub(super) fn trsm<T: Elem>(cx: &mut Ctx<'_>) -> ExecResult<()> {
    let r = *cx.r;
    let alpha = cx.scalar::<T>(&r.alpha)?;
    let ka = if r.side == check::SIDE_LEFT { r.m } else { r.n };
    let a = cx.matrix::<T>(r.a, ka, ka, r.lda)?;
    let b = cx.matrix::<T>(r.b, r.m, r.n, r.ldb)?;
    if r.m == 0 || r.n == 0 {
        return Ok(());
    }
    // SAFETY: `matrix` checked A (ka x ka, lda) and B (m x n, ldb).
    unsafe {
        T::trsm(
            r.side,
            r.uplo,
            r.trans_a,
            r.diag,
            int(r.m),
            int(r.n),
            alpha,
            a,
            int(r.lda),
            b,
            int(r.ldb),
        )
    };
    Ok(())
}

/// `op(X)(i, j)` of a column-major matrix at `p`.
///
/// # Safety
/// `p` must cover the stored matrix, and `(i, j)` be inside `op(X)`.
unsafe fn at<T: Elem>(p: *const T, t: u32, ld: i64, i: i64, j: i64) -> T {
    let (r, c) = if t == OP_N { (i, j) } else { (j, i) };
    // SAFETY: the caller's contract: `p` covers the stored matrix and `(r, c)` is in it.
    let v = unsafe { p.add((r + c * ld) as usize).read() };
    if t == OP_C { v.conj() } else { v }
}

/// `C = alpha op(A) + beta op(B)`, in place if C is A or B.
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
                // SAFETY: (i, j) is inside op(A), whose extent `matrix` checked.
                v = v.add(alpha.mul(unsafe { at(a, r.trans_a, r.lda, i, j) }));
            }
            if let Some(b) = b {
                // SAFETY: (i, j) is inside op(B), whose extent `matrix` checked.
                v = v.add(beta.mul(unsafe { at(b, r.trans_b, r.ldb, i, j) }));
            }
            out.push(v);
        }
    }
    for j in 0..r.n {
        for i in 0..r.m {
            // SAFETY: (i, j) is inside C (m x n, ldc), whose extent `matrix` checked.
            unsafe {
                c.add((i + j * r.ldc) as usize)
                    .write(out[(i + j * r.m) as usize])
            };
        }
    }
    Ok(())
}
