// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Argument checks of cuBLAS operations ([`crate::BlasCallReq`]), shared by the guest
//! library (which checks before posting a call without waiting for it) and the executors
//! (which never trust the guest). They follow the checks cuBLAS documents for each routine:
//! negative sizes, leading dimensions smaller than the rows they hold, zero strides and
//! unknown enum values give `CUBLAS_STATUS_INVALID_VALUE`.

use crate::lib::{BLAS_INVALID_VALUE, dtype, func};
use crate::op::BlasCallReq;

/// `CUBLAS_OP_N`.
pub const OP_N: u32 = 0;
/// `CUBLAS_OP_T`.
pub const OP_T: u32 = 1;
/// `CUBLAS_OP_C`.
pub const OP_C: u32 = 2;
/// `CUBLAS_FILL_MODE_LOWER`.
pub const FILL_LOWER: u32 = 0;
/// `CUBLAS_FILL_MODE_UPPER`.
pub const FILL_UPPER: u32 = 1;
/// `CUBLAS_SIDE_LEFT`.
pub const SIDE_LEFT: u32 = 0;
/// `CUBLAS_SIDE_RIGHT`.
pub const SIDE_RIGHT: u32 = 1;
/// `CUBLAS_DIAG_NON_UNIT`.
pub const DIAG_NON_UNIT: u32 = 0;
/// `CUBLAS_DIAG_UNIT`.
pub const DIAG_UNIT: u32 = 1;

/// Largest size or leading dimension the 32-bit cuBLAS API can express.
pub const MAX_DIM: i64 = i32::MAX as i64;

fn ok(cond: bool) -> Result<(), u32> {
    if cond {
        Ok(())
    } else {
        Err(BLAS_INVALID_VALUE)
    }
}

fn dim(v: i64) -> bool {
    (0..=MAX_DIM).contains(&v)
}

fn ld(ld: i64, rows: i64) -> bool {
    ld >= rows.max(1) && ld <= MAX_DIM
}

fn inc(v: i64) -> bool {
    v != 0 && v.unsigned_abs() <= MAX_DIM as u64
}

fn op(v: u32) -> bool {
    matches!(v, OP_N | OP_T | OP_C)
}

fn fill(v: u32) -> bool {
    matches!(v, FILL_LOWER | FILL_UPPER)
}

fn side(v: u32) -> bool {
    matches!(v, SIDE_LEFT | SIDE_RIGHT)
}

fn diag(v: u32) -> bool {
    matches!(v, DIAG_NON_UNIT | DIAG_UNIT)
}

/// Whether `t` is a `cudaDataType` of the plain (non-`Ex`) routines.
pub fn is_blas_type(t: u32) -> bool {
    matches!(t, dtype::R_32F | dtype::R_64F | dtype::C_32F | dtype::C_64F)
}

/// Whether a `cudaDataType` is complex.
pub fn is_complex(t: u32) -> bool {
    matches!(t, dtype::C_32F | dtype::C_64F)
}

/// Rows of `op(X)`'s storage: `a` rows when not transposed, else `b`.
fn rows(trans: u32, a: i64, b: i64) -> i64 {
    if trans == OP_N { a } else { b }
}

/// Checks a request's sizes, enums and leading dimensions. Level-1 routines with `n <= 0`
/// are valid (they do nothing); so are routines with empty matrices.
pub fn validate(r: &BlasCallReq) -> Result<(), u32> {
    ok(dim(r.batch))?;
    match r.func {
        func::ASUM | func::NRM2 | func::IAMAX | func::IAMIN => {
            // cuBLAS returns 0 for n <= 0 or incx <= 0.
            ok(r.n <= MAX_DIM && r.incx.unsigned_abs() <= MAX_DIM as u64)
        }
        func::DOT | func::DOTC | func::AXPY | func::COPY | func::SWAP | func::ROT => ok(r.n
            <= MAX_DIM
            && r.incx.unsigned_abs() <= MAX_DIM as u64
            && r.incy.unsigned_abs() <= MAX_DIM as u64),
        func::SCAL => ok(r.n <= MAX_DIM && r.incx.unsigned_abs() <= MAX_DIM as u64),
        func::GEMV => ok(op(r.trans_a)
            && dim(r.m)
            && dim(r.n)
            && ld(r.lda, r.m)
            && inc(r.incx)
            && inc(r.incy)),
        func::GER => ok(dim(r.m) && dim(r.n) && inc(r.incx) && inc(r.incy) && ld(r.lda, r.m)),
        func::SYMV => ok(fill(r.uplo) && dim(r.n) && ld(r.lda, r.n) && inc(r.incx) && inc(r.incy)),
        func::TRSV => ok(fill(r.uplo)
            && op(r.trans_a)
            && diag(r.diag)
            && dim(r.n)
            && ld(r.lda, r.n)
            && inc(r.incx)),
        func::GEMM | func::GEMM_BATCHED => ok(op(r.trans_a)
            && op(r.trans_b)
            && dim(r.m)
            && dim(r.n)
            && dim(r.k)
            && ld(r.lda, rows(r.trans_a, r.m, r.k))
            && ld(r.ldb, rows(r.trans_b, r.k, r.n))
            && ld(r.ldc, r.m)),
        func::SYMM => {
            let ka = if r.side == SIDE_LEFT { r.m } else { r.n };
            ok(side(r.side)
                && fill(r.uplo)
                && dim(r.m)
                && dim(r.n)
                && ld(r.lda, ka)
                && ld(r.ldb, r.m)
                && ld(r.ldc, r.m))
        }
        func::SYRK => ok(fill(r.uplo)
            && matches!(r.trans_a, OP_N | OP_T)
            && dim(r.n)
            && dim(r.k)
            && ld(r.lda, rows(r.trans_a, r.n, r.k))
            && ld(r.ldc, r.n)),
        func::TRSM => {
            let ka = if r.side == SIDE_LEFT { r.m } else { r.n };
            ok(side(r.side)
                && fill(r.uplo)
                && op(r.trans_a)
                && diag(r.diag)
                && dim(r.m)
                && dim(r.n)
                && ld(r.lda, ka)
                && ld(r.ldb, r.m))
        }
        func::GEAM => ok(op(r.trans_a)
            && op(r.trans_b)
            && dim(r.m)
            && dim(r.n)
            && ld(r.lda, rows(r.trans_a, r.m, r.n))
            && ld(r.ldb, rows(r.trans_b, r.m, r.n))
            && ld(r.ldc, r.m)),
        func::GETRF_BATCHED => ok(dim(r.n) && ld(r.lda, r.n)),
        func::GETRS_BATCHED => {
            ok(op(r.trans_a) && dim(r.n) && dim(r.k) && ld(r.lda, r.n) && ld(r.ldb, r.n))
        }
        _ => Err(crate::lib::BLAS_NOT_SUPPORTED),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gemm() -> BlasCallReq {
        BlasCallReq {
            func: func::GEMM,
            m: 3,
            n: 4,
            k: 5,
            lda: 3,
            ldb: 5,
            ldc: 3,
            ..Default::default()
        }
    }

    #[test]
    fn gemm_checks_follow_cublas() {
        assert_eq!(validate(&gemm()), Ok(()));
        let t = BlasCallReq {
            trans_a: OP_T,
            ..gemm()
        };
        // op(A) = A^T is m x k, so A is k x m: lda >= k.
        assert_eq!(validate(&t), Err(BLAS_INVALID_VALUE));
        assert_eq!(validate(&BlasCallReq { lda: 5, ..t }), Ok(()));
        assert_eq!(
            validate(&BlasCallReq { m: -1, ..gemm() }),
            Err(BLAS_INVALID_VALUE)
        );
        assert_eq!(
            validate(&BlasCallReq {
                trans_b: 7,
                ..gemm()
            }),
            Err(BLAS_INVALID_VALUE)
        );
        assert_eq!(
            validate(&BlasCallReq { ldc: 2, ..gemm() }),
            Err(BLAS_INVALID_VALUE)
        );
        // Empty matrices still need leading dimensions of at least 1.
        assert_eq!(
            validate(&BlasCallReq {
                m: 0,
                lda: 0,
                ..gemm()
            }),
            Err(BLAS_INVALID_VALUE)
        );
        assert_eq!(
            validate(&BlasCallReq {
                func: 999,
                ..gemm()
            }),
            Err(crate::lib::BLAS_NOT_SUPPORTED)
        );
    }

    #[test]
    fn level_one_accepts_empty_vectors() {
        let r = BlasCallReq {
            func: func::NRM2,
            n: 0,
            incx: 0,
            ..Default::default()
        };
        assert_eq!(validate(&r), Ok(()));
        let r = BlasCallReq {
            func: func::GEMV,
            m: 2,
            n: 2,
            lda: 2,
            incx: 0,
            incy: 1,
            ..Default::default()
        };
        assert_eq!(validate(&r), Err(BLAS_INVALID_VALUE));
    }
}
