// SPDX-License-Identifier: Apache-2.0 OR MIT
//! cuBLAS (`libcublas.so.13` and `.12`): handles, vector and matrix transfers, and the BLAS
//! routines, forwarded to the backend as `BlasCall` requests.
//!
//! The handle's stream, pointer mode and math mode live here and travel with every call,
//! so setting them costs no round trip. Calls that produce nothing on the host are posted
//! without waiting (their arguments are checked here first, with the same checks the
//! backend applies), like the asynchronous kernels cuBLAS launches; a reduction in host
//! pointer mode waits for its result. Names the library exports but does not implement
//! return `CUBLAS_STATUS_NOT_SUPPORTED` (see `entry_stub!`).
//!
//! This file holds the exported entry points (each returns `Result<(), BlasError>`, which
//! `entry_lib!` turns into the `cublasStatus_t`); [`handle`] keeps the handles' state and
//! [`marshal`] builds and sends the requests.

mod ex;
mod handle;
mod marshal;

use std::ffi::{c_char, c_int, c_longlong, c_void};

use vcuda_protocol::lib::{BLAS_NOT_SUPPORTED, dtype, func};
use vcuda_protocol::{BlasCreateReq, HandleReq, HandleResp, ops};

use self::handle::{H, HandleState, handle_state, update, with_handles};
use self::marshal::{
    C32, C64, Gemm, R32, R64, Result, dot, geam, gemm, gemv, ger, getrf, getrs, index_reduce,
    matrix_copy, real_reduce, scal, symm, symv, syrk, trsm, trsv, vec2, vector_copy,
};
use crate::client;
use crate::error::BlasError;
use crate::ffi::{cudaStream_t, memcpy_kind};
use crate::state;

/// The cuBLAS version reported (13.0.2).
const VERSION: c_int = 130_002;
const VERSION_PARTS: [c_int; 3] = [13, 0, 2];

fn status_text(s: u32, name: bool) -> *const c_char {
    let (n, t): (&[u8], &[u8]) = match s {
        0 => (b"CUBLAS_STATUS_SUCCESS\0", b"success\0"),
        1 => (
            b"CUBLAS_STATUS_NOT_INITIALIZED\0",
            b"the library was not initialized\0",
        ),
        3 => (
            b"CUBLAS_STATUS_ALLOC_FAILED\0",
            b"the resource allocation failed\0",
        ),
        7 => (
            b"CUBLAS_STATUS_INVALID_VALUE\0",
            b"an invalid numeric value was used as an argument\0",
        ),
        8 => (
            b"CUBLAS_STATUS_ARCH_MISMATCH\0",
            b"an absent device architectural feature is required\0",
        ),
        11 => (
            b"CUBLAS_STATUS_MAPPING_ERROR\0",
            b"an access to GPU memory space failed\0",
        ),
        13 => (
            b"CUBLAS_STATUS_EXECUTION_FAILED\0",
            b"the GPU program failed to execute\0",
        ),
        14 => (
            b"CUBLAS_STATUS_INTERNAL_ERROR\0",
            b"an internal operation failed\0",
        ),
        15 => (
            b"CUBLAS_STATUS_NOT_SUPPORTED\0",
            b"the functionality requested is not supported\0",
        ),
        16 => (
            b"CUBLAS_STATUS_LICENSE_ERROR\0",
            b"there is an error with the license\0",
        ),
        _ => (b"CUBLAS_STATUS_UNKNOWN\0", b"unknown error\0"),
    };
    (if name { n } else { t }).as_ptr().cast()
}

fn set_out<T>(p: *mut T, v: T) -> Result<()> {
    if p.is_null() {
        return Err(BlasError::INVALID_VALUE);
    }
    // SAFETY: `p` was checked non-null above, and cuBLAS's contract makes a non-null output
    // pointer valid for writing a `T`.
    unsafe { p.write(v) };
    Ok(())
}

entry_lib! {
    fn cublasSasum_v2(h: H, n: c_int, x: *const f32, incx: c_int, result: *mut f32) -> Result<(), BlasError> {
        real_reduce(h, func::ASUM, R32, n, x.cast(), incx, result.cast())
    }

    fn cublasSnrm2_v2(h: H, n: c_int, x: *const f32, incx: c_int, result: *mut f32) -> Result<(), BlasError> {
        real_reduce(h, func::NRM2, R32, n, x.cast(), incx, result.cast())
    }

    fn cublasSdot_v2(h: H, n: c_int, x: *const f32, incx: c_int, y: *const f32, incy: c_int, result: *mut f32) -> Result<(), BlasError> {
        dot(h, func::DOT, R32, n, x.cast(), incx, y.cast(), incy, result.cast())
    }

    fn cublasSrot_v2(h: H, n: c_int, x: *mut f32, incx: c_int, y: *mut f32, incy: c_int, c: *const f32, s: *const f32) -> Result<(), BlasError> {
        vec2(h, func::ROT, R32, n, c.cast(), s.cast(), size_of::<f32>(), x.cast(), incx, y.cast(), incy)
    }

    fn cublasIsamax_v2(h: H, n: c_int, x: *const f32, incx: c_int, result: *mut c_int) -> Result<(), BlasError> {
        index_reduce(h, func::IAMAX, R32, n, x.cast(), incx, result)
    }

    fn cublasIsamin_v2(h: H, n: c_int, x: *const f32, incx: c_int, result: *mut c_int) -> Result<(), BlasError> {
        index_reduce(h, func::IAMIN, R32, n, x.cast(), incx, result)
    }

    fn cublasSger_v2(h: H, m: c_int, n: c_int, alpha: *const f32, x: *const f32, incx: c_int, y: *const f32, incy: c_int, a: *mut f32, lda: c_int) -> Result<(), BlasError> {
        ger(h, R32, false, m, n, alpha.cast(), x.cast(), incx, y.cast(), incy, a.cast(), lda)
    }

    fn cublasSsymv_v2(h: H, uplo: c_int, n: c_int, alpha: *const f32, a: *const f32, lda: c_int, x: *const f32, incx: c_int, beta: *const f32, y: *mut f32, incy: c_int) -> Result<(), BlasError> {
        symv(h, R32, uplo, n, alpha.cast(), a.cast(), lda, x.cast(), incx, beta.cast(), y.cast(), incy)
    }

    fn cublasSaxpy_v2(h: H, n: c_int, alpha: *const f32, x: *const f32, incx: c_int, y: *mut f32, incy: c_int) -> Result<(), BlasError> {
        vec2(h, func::AXPY, R32, n, alpha.cast(), std::ptr::null(), size_of::<f32>(), x.cast(), incx, y.cast(), incy)
    }

    fn cublasScopy_v2(h: H, n: c_int, x: *const f32, incx: c_int, y: *mut f32, incy: c_int) -> Result<(), BlasError> {
        vec2(h, func::COPY, R32, n, std::ptr::null(), std::ptr::null(), 0, x.cast(), incx, y.cast(), incy)
    }

    fn cublasSswap_v2(h: H, n: c_int, x: *mut f32, incx: c_int, y: *mut f32, incy: c_int) -> Result<(), BlasError> {
        vec2(h, func::SWAP, R32, n, std::ptr::null(), std::ptr::null(), 0, x.cast(), incx, y.cast(), incy)
    }

    fn cublasSscal_v2(h: H, n: c_int, alpha: *const f32, x: *mut f32, incx: c_int) -> Result<(), BlasError> {
        scal(h, R32, R32, n, alpha.cast(), x.cast(), incx)
    }

    fn cublasSgemv_v2(h: H, trans: c_int, m: c_int, n: c_int, alpha: *const f32, a: *const f32, lda: c_int, x: *const f32, incx: c_int, beta: *const f32, y: *mut f32, incy: c_int) -> Result<(), BlasError> {
        gemv(h, R32, trans, m, n, alpha.cast(), a.cast(), lda, x.cast(), incx, beta.cast(), y.cast(), incy)
    }

    fn cublasStrsv_v2(h: H, uplo: c_int, trans: c_int, diag: c_int, n: c_int, a: *const f32, lda: c_int, x: *mut f32, incx: c_int) -> Result<(), BlasError> {
        trsv(h, R32, uplo, trans, diag, n, a.cast(), lda, x.cast(), incx)
    }

    fn cublasSgemm_v2(h: H, ta: c_int, tb: c_int, m: c_int, n: c_int, k: c_int, alpha: *const f32, a: *const f32, lda: c_int, b: *const f32, ldb: c_int, beta: *const f32, c: *mut f32, ldc: c_int) -> Result<(), BlasError> {
        gemm(h, &Gemm { ta, tb, m, n, k, alpha: alpha.cast(), a: a as u64, lda, b: b as u64, ldb, beta: beta.cast(), c: c as u64, ldc }, (R32, R32, R32, 0), func::GEMM, None)
    }

    fn cublasSgemmStridedBatched(h: H, ta: c_int, tb: c_int, m: c_int, n: c_int, k: c_int, alpha: *const f32, a: *const f32, lda: c_int, sa: c_longlong, b: *const f32, ldb: c_int, sb: c_longlong, beta: *const f32, c: *mut f32, ldc: c_int, sc: c_longlong, count: c_int) -> Result<(), BlasError> {
        gemm(h, &Gemm { ta, tb, m, n, k, alpha: alpha.cast(), a: a as u64, lda, b: b as u64, ldb, beta: beta.cast(), c: c as u64, ldc }, (R32, R32, R32, 0), func::GEMM, Some((count, [sa, sb, sc])))
    }

    fn cublasSgemmBatched(h: H, ta: c_int, tb: c_int, m: c_int, n: c_int, k: c_int, alpha: *const f32, a: *const *const f32, lda: c_int, b: *const *const f32, ldb: c_int, beta: *const f32, c: *const *mut f32, ldc: c_int, count: c_int) -> Result<(), BlasError> {
        if count < 0 { return Err(BlasError::INVALID_VALUE); }
        gemm(h, &Gemm { ta, tb, m, n, k, alpha: alpha.cast(), a: a as u64, lda, b: b as u64, ldb, beta: beta.cast(), c: c as u64, ldc }, (R32, R32, R32, 0), func::GEMM_BATCHED, Some((count, [0; 3])))
    }

    fn cublasSsymm_v2(h: H, side: c_int, uplo: c_int, m: c_int, n: c_int, alpha: *const f32, a: *const f32, lda: c_int, b: *const f32, ldb: c_int, beta: *const f32, c: *mut f32, ldc: c_int) -> Result<(), BlasError> {
        symm(h, R32, side, uplo, m, n, alpha.cast(), a.cast(), lda, b.cast(), ldb, beta.cast(), c.cast(), ldc)
    }

    fn cublasSsyrk_v2(h: H, uplo: c_int, trans: c_int, n: c_int, k: c_int, alpha: *const f32, a: *const f32, lda: c_int, beta: *const f32, c: *mut f32, ldc: c_int) -> Result<(), BlasError> {
        syrk(h, R32, uplo, trans, n, k, alpha.cast(), a.cast(), lda, beta.cast(), c.cast(), ldc)
    }

    fn cublasStrsm_v2(h: H, side: c_int, uplo: c_int, trans: c_int, diag: c_int, m: c_int, n: c_int, alpha: *const f32, a: *const f32, lda: c_int, b: *mut f32, ldb: c_int) -> Result<(), BlasError> {
        trsm(h, R32, side, uplo, trans, diag, m, n, alpha.cast(), a.cast(), lda, b.cast(), ldb)
    }

    fn cublasSgeam(h: H, ta: c_int, tb: c_int, m: c_int, n: c_int, alpha: *const f32, a: *const f32, lda: c_int, beta: *const f32, b: *const f32, ldb: c_int, c: *mut f32, ldc: c_int) -> Result<(), BlasError> {
        geam(h, R32, ta, tb, m, n, alpha.cast(), a.cast(), lda, beta.cast(), b.cast(), ldb, c.cast(), ldc)
    }

    fn cublasSgetrfBatched(h: H, n: c_int, a: *const *mut f32, lda: c_int, piv: *mut c_int, info: *mut c_int, count: c_int) -> Result<(), BlasError> {
        getrf(h, R32, n, a.cast(), lda, piv, info, count)
    }

    fn cublasSgetrsBatched(h: H, trans: c_int, n: c_int, nrhs: c_int, a: *const *const f32, lda: c_int, piv: *const c_int, b: *const *mut f32, ldb: c_int, info: *mut c_int, count: c_int) -> Result<(), BlasError> {
        getrs(h, R32, trans, n, nrhs, a.cast(), lda, piv, b.cast(), ldb, info, count)
    }

    fn cublasDasum_v2(h: H, n: c_int, x: *const f64, incx: c_int, result: *mut f64) -> Result<(), BlasError> {
        real_reduce(h, func::ASUM, R64, n, x.cast(), incx, result.cast())
    }

    fn cublasDnrm2_v2(h: H, n: c_int, x: *const f64, incx: c_int, result: *mut f64) -> Result<(), BlasError> {
        real_reduce(h, func::NRM2, R64, n, x.cast(), incx, result.cast())
    }

    fn cublasDdot_v2(h: H, n: c_int, x: *const f64, incx: c_int, y: *const f64, incy: c_int, result: *mut f64) -> Result<(), BlasError> {
        dot(h, func::DOT, R64, n, x.cast(), incx, y.cast(), incy, result.cast())
    }

    fn cublasDrot_v2(h: H, n: c_int, x: *mut f64, incx: c_int, y: *mut f64, incy: c_int, c: *const f64, s: *const f64) -> Result<(), BlasError> {
        vec2(h, func::ROT, R64, n, c.cast(), s.cast(), size_of::<f64>(), x.cast(), incx, y.cast(), incy)
    }

    fn cublasIdamax_v2(h: H, n: c_int, x: *const f64, incx: c_int, result: *mut c_int) -> Result<(), BlasError> {
        index_reduce(h, func::IAMAX, R64, n, x.cast(), incx, result)
    }

    fn cublasIdamin_v2(h: H, n: c_int, x: *const f64, incx: c_int, result: *mut c_int) -> Result<(), BlasError> {
        index_reduce(h, func::IAMIN, R64, n, x.cast(), incx, result)
    }

    fn cublasDger_v2(h: H, m: c_int, n: c_int, alpha: *const f64, x: *const f64, incx: c_int, y: *const f64, incy: c_int, a: *mut f64, lda: c_int) -> Result<(), BlasError> {
        ger(h, R64, false, m, n, alpha.cast(), x.cast(), incx, y.cast(), incy, a.cast(), lda)
    }

    fn cublasDsymv_v2(h: H, uplo: c_int, n: c_int, alpha: *const f64, a: *const f64, lda: c_int, x: *const f64, incx: c_int, beta: *const f64, y: *mut f64, incy: c_int) -> Result<(), BlasError> {
        symv(h, R64, uplo, n, alpha.cast(), a.cast(), lda, x.cast(), incx, beta.cast(), y.cast(), incy)
    }

    fn cublasDaxpy_v2(h: H, n: c_int, alpha: *const f64, x: *const f64, incx: c_int, y: *mut f64, incy: c_int) -> Result<(), BlasError> {
        vec2(h, func::AXPY, R64, n, alpha.cast(), std::ptr::null(), size_of::<f64>(), x.cast(), incx, y.cast(), incy)
    }

    fn cublasDcopy_v2(h: H, n: c_int, x: *const f64, incx: c_int, y: *mut f64, incy: c_int) -> Result<(), BlasError> {
        vec2(h, func::COPY, R64, n, std::ptr::null(), std::ptr::null(), 0, x.cast(), incx, y.cast(), incy)
    }

    fn cublasDswap_v2(h: H, n: c_int, x: *mut f64, incx: c_int, y: *mut f64, incy: c_int) -> Result<(), BlasError> {
        vec2(h, func::SWAP, R64, n, std::ptr::null(), std::ptr::null(), 0, x.cast(), incx, y.cast(), incy)
    }

    fn cublasDscal_v2(h: H, n: c_int, alpha: *const f64, x: *mut f64, incx: c_int) -> Result<(), BlasError> {
        scal(h, R64, R64, n, alpha.cast(), x.cast(), incx)
    }

    fn cublasDgemv_v2(h: H, trans: c_int, m: c_int, n: c_int, alpha: *const f64, a: *const f64, lda: c_int, x: *const f64, incx: c_int, beta: *const f64, y: *mut f64, incy: c_int) -> Result<(), BlasError> {
        gemv(h, R64, trans, m, n, alpha.cast(), a.cast(), lda, x.cast(), incx, beta.cast(), y.cast(), incy)
    }

    fn cublasDtrsv_v2(h: H, uplo: c_int, trans: c_int, diag: c_int, n: c_int, a: *const f64, lda: c_int, x: *mut f64, incx: c_int) -> Result<(), BlasError> {
        trsv(h, R64, uplo, trans, diag, n, a.cast(), lda, x.cast(), incx)
    }

    fn cublasDgemm_v2(h: H, ta: c_int, tb: c_int, m: c_int, n: c_int, k: c_int, alpha: *const f64, a: *const f64, lda: c_int, b: *const f64, ldb: c_int, beta: *const f64, c: *mut f64, ldc: c_int) -> Result<(), BlasError> {
        gemm(h, &Gemm { ta, tb, m, n, k, alpha: alpha.cast(), a: a as u64, lda, b: b as u64, ldb, beta: beta.cast(), c: c as u64, ldc }, (R64, R64, R64, 0), func::GEMM, None)
    }

    fn cublasDgemmStridedBatched(h: H, ta: c_int, tb: c_int, m: c_int, n: c_int, k: c_int, alpha: *const f64, a: *const f64, lda: c_int, sa: c_longlong, b: *const f64, ldb: c_int, sb: c_longlong, beta: *const f64, c: *mut f64, ldc: c_int, sc: c_longlong, count: c_int) -> Result<(), BlasError> {
        gemm(h, &Gemm { ta, tb, m, n, k, alpha: alpha.cast(), a: a as u64, lda, b: b as u64, ldb, beta: beta.cast(), c: c as u64, ldc }, (R64, R64, R64, 0), func::GEMM, Some((count, [sa, sb, sc])))
    }

    fn cublasDgemmBatched(h: H, ta: c_int, tb: c_int, m: c_int, n: c_int, k: c_int, alpha: *const f64, a: *const *const f64, lda: c_int, b: *const *const f64, ldb: c_int, beta: *const f64, c: *const *mut f64, ldc: c_int, count: c_int) -> Result<(), BlasError> {
        if count < 0 { return Err(BlasError::INVALID_VALUE); }
        gemm(h, &Gemm { ta, tb, m, n, k, alpha: alpha.cast(), a: a as u64, lda, b: b as u64, ldb, beta: beta.cast(), c: c as u64, ldc }, (R64, R64, R64, 0), func::GEMM_BATCHED, Some((count, [0; 3])))
    }

    fn cublasDsymm_v2(h: H, side: c_int, uplo: c_int, m: c_int, n: c_int, alpha: *const f64, a: *const f64, lda: c_int, b: *const f64, ldb: c_int, beta: *const f64, c: *mut f64, ldc: c_int) -> Result<(), BlasError> {
        symm(h, R64, side, uplo, m, n, alpha.cast(), a.cast(), lda, b.cast(), ldb, beta.cast(), c.cast(), ldc)
    }

    fn cublasDsyrk_v2(h: H, uplo: c_int, trans: c_int, n: c_int, k: c_int, alpha: *const f64, a: *const f64, lda: c_int, beta: *const f64, c: *mut f64, ldc: c_int) -> Result<(), BlasError> {
        syrk(h, R64, uplo, trans, n, k, alpha.cast(), a.cast(), lda, beta.cast(), c.cast(), ldc)
    }

    fn cublasDtrsm_v2(h: H, side: c_int, uplo: c_int, trans: c_int, diag: c_int, m: c_int, n: c_int, alpha: *const f64, a: *const f64, lda: c_int, b: *mut f64, ldb: c_int) -> Result<(), BlasError> {
        trsm(h, R64, side, uplo, trans, diag, m, n, alpha.cast(), a.cast(), lda, b.cast(), ldb)
    }

    fn cublasDgeam(h: H, ta: c_int, tb: c_int, m: c_int, n: c_int, alpha: *const f64, a: *const f64, lda: c_int, beta: *const f64, b: *const f64, ldb: c_int, c: *mut f64, ldc: c_int) -> Result<(), BlasError> {
        geam(h, R64, ta, tb, m, n, alpha.cast(), a.cast(), lda, beta.cast(), b.cast(), ldb, c.cast(), ldc)
    }

    fn cublasDgetrfBatched(h: H, n: c_int, a: *const *mut f64, lda: c_int, piv: *mut c_int, info: *mut c_int, count: c_int) -> Result<(), BlasError> {
        getrf(h, R64, n, a.cast(), lda, piv, info, count)
    }

    fn cublasDgetrsBatched(h: H, trans: c_int, n: c_int, nrhs: c_int, a: *const *const f64, lda: c_int, piv: *const c_int, b: *const *mut f64, ldb: c_int, info: *mut c_int, count: c_int) -> Result<(), BlasError> {
        getrs(h, R64, trans, n, nrhs, a.cast(), lda, piv, b.cast(), ldb, info, count)
    }

    fn cublasScasum_v2(h: H, n: c_int, x: *const C32T, incx: c_int, result: *mut f32) -> Result<(), BlasError> {
        real_reduce(h, func::ASUM, C32, n, x.cast(), incx, result.cast())
    }

    fn cublasScnrm2_v2(h: H, n: c_int, x: *const C32T, incx: c_int, result: *mut f32) -> Result<(), BlasError> {
        real_reduce(h, func::NRM2, C32, n, x.cast(), incx, result.cast())
    }

    fn cublasCdotu_v2(h: H, n: c_int, x: *const C32T, incx: c_int, y: *const C32T, incy: c_int, result: *mut C32T) -> Result<(), BlasError> {
        dot(h, func::DOT, C32, n, x.cast(), incx, y.cast(), incy, result.cast())
    }

    fn cublasCdotc_v2(h: H, n: c_int, x: *const C32T, incx: c_int, y: *const C32T, incy: c_int, result: *mut C32T) -> Result<(), BlasError> {
        dot(h, func::DOTC, C32, n, x.cast(), incx, y.cast(), incy, result.cast())
    }

    fn cublasIcamax_v2(h: H, n: c_int, x: *const C32T, incx: c_int, result: *mut c_int) -> Result<(), BlasError> {
        index_reduce(h, func::IAMAX, C32, n, x.cast(), incx, result)
    }

    fn cublasIcamin_v2(h: H, n: c_int, x: *const C32T, incx: c_int, result: *mut c_int) -> Result<(), BlasError> {
        index_reduce(h, func::IAMIN, C32, n, x.cast(), incx, result)
    }

    fn cublasCsscal_v2(h: H, n: c_int, alpha: *const f32, x: *mut C32T, incx: c_int) -> Result<(), BlasError> {
        scal(h, C32, R32, n, alpha.cast(), x.cast(), incx)
    }

    fn cublasCgeru_v2(h: H, m: c_int, n: c_int, alpha: *const C32T, x: *const C32T, incx: c_int, y: *const C32T, incy: c_int, a: *mut C32T, lda: c_int) -> Result<(), BlasError> {
        ger(h, C32, false, m, n, alpha.cast(), x.cast(), incx, y.cast(), incy, a.cast(), lda)
    }

    fn cublasCgerc_v2(h: H, m: c_int, n: c_int, alpha: *const C32T, x: *const C32T, incx: c_int, y: *const C32T, incy: c_int, a: *mut C32T, lda: c_int) -> Result<(), BlasError> {
        ger(h, C32, true, m, n, alpha.cast(), x.cast(), incx, y.cast(), incy, a.cast(), lda)
    }

    fn cublasCaxpy_v2(h: H, n: c_int, alpha: *const C32T, x: *const C32T, incx: c_int, y: *mut C32T, incy: c_int) -> Result<(), BlasError> {
        vec2(h, func::AXPY, C32, n, alpha.cast(), std::ptr::null(), size_of::<C32T>(), x.cast(), incx, y.cast(), incy)
    }

    fn cublasCcopy_v2(h: H, n: c_int, x: *const C32T, incx: c_int, y: *mut C32T, incy: c_int) -> Result<(), BlasError> {
        vec2(h, func::COPY, C32, n, std::ptr::null(), std::ptr::null(), 0, x.cast(), incx, y.cast(), incy)
    }

    fn cublasCswap_v2(h: H, n: c_int, x: *mut C32T, incx: c_int, y: *mut C32T, incy: c_int) -> Result<(), BlasError> {
        vec2(h, func::SWAP, C32, n, std::ptr::null(), std::ptr::null(), 0, x.cast(), incx, y.cast(), incy)
    }

    fn cublasCscal_v2(h: H, n: c_int, alpha: *const C32T, x: *mut C32T, incx: c_int) -> Result<(), BlasError> {
        scal(h, C32, C32, n, alpha.cast(), x.cast(), incx)
    }

    fn cublasCgemv_v2(h: H, trans: c_int, m: c_int, n: c_int, alpha: *const C32T, a: *const C32T, lda: c_int, x: *const C32T, incx: c_int, beta: *const C32T, y: *mut C32T, incy: c_int) -> Result<(), BlasError> {
        gemv(h, C32, trans, m, n, alpha.cast(), a.cast(), lda, x.cast(), incx, beta.cast(), y.cast(), incy)
    }

    fn cublasCtrsv_v2(h: H, uplo: c_int, trans: c_int, diag: c_int, n: c_int, a: *const C32T, lda: c_int, x: *mut C32T, incx: c_int) -> Result<(), BlasError> {
        trsv(h, C32, uplo, trans, diag, n, a.cast(), lda, x.cast(), incx)
    }

    fn cublasCgemm_v2(h: H, ta: c_int, tb: c_int, m: c_int, n: c_int, k: c_int, alpha: *const C32T, a: *const C32T, lda: c_int, b: *const C32T, ldb: c_int, beta: *const C32T, c: *mut C32T, ldc: c_int) -> Result<(), BlasError> {
        gemm(h, &Gemm { ta, tb, m, n, k, alpha: alpha.cast(), a: a as u64, lda, b: b as u64, ldb, beta: beta.cast(), c: c as u64, ldc }, (C32, C32, C32, 0), func::GEMM, None)
    }

    fn cublasCgemmStridedBatched(h: H, ta: c_int, tb: c_int, m: c_int, n: c_int, k: c_int, alpha: *const C32T, a: *const C32T, lda: c_int, sa: c_longlong, b: *const C32T, ldb: c_int, sb: c_longlong, beta: *const C32T, c: *mut C32T, ldc: c_int, sc: c_longlong, count: c_int) -> Result<(), BlasError> {
        gemm(h, &Gemm { ta, tb, m, n, k, alpha: alpha.cast(), a: a as u64, lda, b: b as u64, ldb, beta: beta.cast(), c: c as u64, ldc }, (C32, C32, C32, 0), func::GEMM, Some((count, [sa, sb, sc])))
    }

    fn cublasCgemmBatched(h: H, ta: c_int, tb: c_int, m: c_int, n: c_int, k: c_int, alpha: *const C32T, a: *const *const C32T, lda: c_int, b: *const *const C32T, ldb: c_int, beta: *const C32T, c: *const *mut C32T, ldc: c_int, count: c_int) -> Result<(), BlasError> {
        if count < 0 { return Err(BlasError::INVALID_VALUE); }
        gemm(h, &Gemm { ta, tb, m, n, k, alpha: alpha.cast(), a: a as u64, lda, b: b as u64, ldb, beta: beta.cast(), c: c as u64, ldc }, (C32, C32, C32, 0), func::GEMM_BATCHED, Some((count, [0; 3])))
    }

    fn cublasCsymm_v2(h: H, side: c_int, uplo: c_int, m: c_int, n: c_int, alpha: *const C32T, a: *const C32T, lda: c_int, b: *const C32T, ldb: c_int, beta: *const C32T, c: *mut C32T, ldc: c_int) -> Result<(), BlasError> {
        symm(h, C32, side, uplo, m, n, alpha.cast(), a.cast(), lda, b.cast(), ldb, beta.cast(), c.cast(), ldc)
    }

    fn cublasCsyrk_v2(h: H, uplo: c_int, trans: c_int, n: c_int, k: c_int, alpha: *const C32T, a: *const C32T, lda: c_int, beta: *const C32T, c: *mut C32T, ldc: c_int) -> Result<(), BlasError> {
        syrk(h, C32, uplo, trans, n, k, alpha.cast(), a.cast(), lda, beta.cast(), c.cast(), ldc)
    }

    fn cublasCtrsm_v2(h: H, side: c_int, uplo: c_int, trans: c_int, diag: c_int, m: c_int, n: c_int, alpha: *const C32T, a: *const C32T, lda: c_int, b: *mut C32T, ldb: c_int) -> Result<(), BlasError> {
        trsm(h, C32, side, uplo, trans, diag, m, n, alpha.cast(), a.cast(), lda, b.cast(), ldb)
    }

    fn cublasCgeam(h: H, ta: c_int, tb: c_int, m: c_int, n: c_int, alpha: *const C32T, a: *const C32T, lda: c_int, beta: *const C32T, b: *const C32T, ldb: c_int, c: *mut C32T, ldc: c_int) -> Result<(), BlasError> {
        geam(h, C32, ta, tb, m, n, alpha.cast(), a.cast(), lda, beta.cast(), b.cast(), ldb, c.cast(), ldc)
    }

    fn cublasCgetrfBatched(h: H, n: c_int, a: *const *mut C32T, lda: c_int, piv: *mut c_int, info: *mut c_int, count: c_int) -> Result<(), BlasError> {
        getrf(h, C32, n, a.cast(), lda, piv, info, count)
    }

    fn cublasCgetrsBatched(h: H, trans: c_int, n: c_int, nrhs: c_int, a: *const *const C32T, lda: c_int, piv: *const c_int, b: *const *mut C32T, ldb: c_int, info: *mut c_int, count: c_int) -> Result<(), BlasError> {
        getrs(h, C32, trans, n, nrhs, a.cast(), lda, piv, b.cast(), ldb, info, count)
    }

    fn cublasDzasum_v2(h: H, n: c_int, x: *const C64T, incx: c_int, result: *mut f64) -> Result<(), BlasError> {
        real_reduce(h, func::ASUM, C64, n, x.cast(), incx, result.cast())
    }

    fn cublasDznrm2_v2(h: H, n: c_int, x: *const C64T, incx: c_int, result: *mut f64) -> Result<(), BlasError> {
        real_reduce(h, func::NRM2, C64, n, x.cast(), incx, result.cast())
    }

    fn cublasZdotu_v2(h: H, n: c_int, x: *const C64T, incx: c_int, y: *const C64T, incy: c_int, result: *mut C64T) -> Result<(), BlasError> {
        dot(h, func::DOT, C64, n, x.cast(), incx, y.cast(), incy, result.cast())
    }

    fn cublasZdotc_v2(h: H, n: c_int, x: *const C64T, incx: c_int, y: *const C64T, incy: c_int, result: *mut C64T) -> Result<(), BlasError> {
        dot(h, func::DOTC, C64, n, x.cast(), incx, y.cast(), incy, result.cast())
    }

    fn cublasIzamax_v2(h: H, n: c_int, x: *const C64T, incx: c_int, result: *mut c_int) -> Result<(), BlasError> {
        index_reduce(h, func::IAMAX, C64, n, x.cast(), incx, result)
    }

    fn cublasIzamin_v2(h: H, n: c_int, x: *const C64T, incx: c_int, result: *mut c_int) -> Result<(), BlasError> {
        index_reduce(h, func::IAMIN, C64, n, x.cast(), incx, result)
    }

    fn cublasZdscal_v2(h: H, n: c_int, alpha: *const f64, x: *mut C64T, incx: c_int) -> Result<(), BlasError> {
        scal(h, C64, R64, n, alpha.cast(), x.cast(), incx)
    }

    fn cublasZgeru_v2(h: H, m: c_int, n: c_int, alpha: *const C64T, x: *const C64T, incx: c_int, y: *const C64T, incy: c_int, a: *mut C64T, lda: c_int) -> Result<(), BlasError> {
        ger(h, C64, false, m, n, alpha.cast(), x.cast(), incx, y.cast(), incy, a.cast(), lda)
    }

    fn cublasZgerc_v2(h: H, m: c_int, n: c_int, alpha: *const C64T, x: *const C64T, incx: c_int, y: *const C64T, incy: c_int, a: *mut C64T, lda: c_int) -> Result<(), BlasError> {
        ger(h, C64, true, m, n, alpha.cast(), x.cast(), incx, y.cast(), incy, a.cast(), lda)
    }

    fn cublasZaxpy_v2(h: H, n: c_int, alpha: *const C64T, x: *const C64T, incx: c_int, y: *mut C64T, incy: c_int) -> Result<(), BlasError> {
        vec2(h, func::AXPY, C64, n, alpha.cast(), std::ptr::null(), size_of::<C64T>(), x.cast(), incx, y.cast(), incy)
    }

    fn cublasZcopy_v2(h: H, n: c_int, x: *const C64T, incx: c_int, y: *mut C64T, incy: c_int) -> Result<(), BlasError> {
        vec2(h, func::COPY, C64, n, std::ptr::null(), std::ptr::null(), 0, x.cast(), incx, y.cast(), incy)
    }

    fn cublasZswap_v2(h: H, n: c_int, x: *mut C64T, incx: c_int, y: *mut C64T, incy: c_int) -> Result<(), BlasError> {
        vec2(h, func::SWAP, C64, n, std::ptr::null(), std::ptr::null(), 0, x.cast(), incx, y.cast(), incy)
    }

    fn cublasZscal_v2(h: H, n: c_int, alpha: *const C64T, x: *mut C64T, incx: c_int) -> Result<(), BlasError> {
        scal(h, C64, C64, n, alpha.cast(), x.cast(), incx)
    }

    fn cublasZgemv_v2(h: H, trans: c_int, m: c_int, n: c_int, alpha: *const C64T, a: *const C64T, lda: c_int, x: *const C64T, incx: c_int, beta: *const C64T, y: *mut C64T, incy: c_int) -> Result<(), BlasError> {
        gemv(h, C64, trans, m, n, alpha.cast(), a.cast(), lda, x.cast(), incx, beta.cast(), y.cast(), incy)
    }

    fn cublasZtrsv_v2(h: H, uplo: c_int, trans: c_int, diag: c_int, n: c_int, a: *const C64T, lda: c_int, x: *mut C64T, incx: c_int) -> Result<(), BlasError> {
        trsv(h, C64, uplo, trans, diag, n, a.cast(), lda, x.cast(), incx)
    }

    fn cublasZgemm_v2(h: H, ta: c_int, tb: c_int, m: c_int, n: c_int, k: c_int, alpha: *const C64T, a: *const C64T, lda: c_int, b: *const C64T, ldb: c_int, beta: *const C64T, c: *mut C64T, ldc: c_int) -> Result<(), BlasError> {
        gemm(h, &Gemm { ta, tb, m, n, k, alpha: alpha.cast(), a: a as u64, lda, b: b as u64, ldb, beta: beta.cast(), c: c as u64, ldc }, (C64, C64, C64, 0), func::GEMM, None)
    }

    fn cublasZgemmStridedBatched(h: H, ta: c_int, tb: c_int, m: c_int, n: c_int, k: c_int, alpha: *const C64T, a: *const C64T, lda: c_int, sa: c_longlong, b: *const C64T, ldb: c_int, sb: c_longlong, beta: *const C64T, c: *mut C64T, ldc: c_int, sc: c_longlong, count: c_int) -> Result<(), BlasError> {
        gemm(h, &Gemm { ta, tb, m, n, k, alpha: alpha.cast(), a: a as u64, lda, b: b as u64, ldb, beta: beta.cast(), c: c as u64, ldc }, (C64, C64, C64, 0), func::GEMM, Some((count, [sa, sb, sc])))
    }

    fn cublasZgemmBatched(h: H, ta: c_int, tb: c_int, m: c_int, n: c_int, k: c_int, alpha: *const C64T, a: *const *const C64T, lda: c_int, b: *const *const C64T, ldb: c_int, beta: *const C64T, c: *const *mut C64T, ldc: c_int, count: c_int) -> Result<(), BlasError> {
        if count < 0 { return Err(BlasError::INVALID_VALUE); }
        gemm(h, &Gemm { ta, tb, m, n, k, alpha: alpha.cast(), a: a as u64, lda, b: b as u64, ldb, beta: beta.cast(), c: c as u64, ldc }, (C64, C64, C64, 0), func::GEMM_BATCHED, Some((count, [0; 3])))
    }

    fn cublasZsymm_v2(h: H, side: c_int, uplo: c_int, m: c_int, n: c_int, alpha: *const C64T, a: *const C64T, lda: c_int, b: *const C64T, ldb: c_int, beta: *const C64T, c: *mut C64T, ldc: c_int) -> Result<(), BlasError> {
        symm(h, C64, side, uplo, m, n, alpha.cast(), a.cast(), lda, b.cast(), ldb, beta.cast(), c.cast(), ldc)
    }

    fn cublasZsyrk_v2(h: H, uplo: c_int, trans: c_int, n: c_int, k: c_int, alpha: *const C64T, a: *const C64T, lda: c_int, beta: *const C64T, c: *mut C64T, ldc: c_int) -> Result<(), BlasError> {
        syrk(h, C64, uplo, trans, n, k, alpha.cast(), a.cast(), lda, beta.cast(), c.cast(), ldc)
    }

    fn cublasZtrsm_v2(h: H, side: c_int, uplo: c_int, trans: c_int, diag: c_int, m: c_int, n: c_int, alpha: *const C64T, a: *const C64T, lda: c_int, b: *mut C64T, ldb: c_int) -> Result<(), BlasError> {
        trsm(h, C64, side, uplo, trans, diag, m, n, alpha.cast(), a.cast(), lda, b.cast(), ldb)
    }

    fn cublasZgeam(h: H, ta: c_int, tb: c_int, m: c_int, n: c_int, alpha: *const C64T, a: *const C64T, lda: c_int, beta: *const C64T, b: *const C64T, ldb: c_int, c: *mut C64T, ldc: c_int) -> Result<(), BlasError> {
        geam(h, C64, ta, tb, m, n, alpha.cast(), a.cast(), lda, beta.cast(), b.cast(), ldb, c.cast(), ldc)
    }

    fn cublasZgetrfBatched(h: H, n: c_int, a: *const *mut C64T, lda: c_int, piv: *mut c_int, info: *mut c_int, count: c_int) -> Result<(), BlasError> {
        getrf(h, C64, n, a.cast(), lda, piv, info, count)
    }

    fn cublasZgetrsBatched(h: H, trans: c_int, n: c_int, nrhs: c_int, a: *const *const C64T, lda: c_int, piv: *const c_int, b: *const *mut C64T, ldb: c_int, info: *mut c_int, count: c_int) -> Result<(), BlasError> {
        getrs(h, C64, trans, n, nrhs, a.cast(), lda, piv, b.cast(), ldb, info, count)
    }

    fn cublasGemmEx(h: H, ta: c_int, tb: c_int, m: c_int, n: c_int, k: c_int, alpha: *const c_void, a: *const c_void, at: u32, lda: c_int, b: *const c_void, bt: u32, ldb: c_int, beta: *const c_void, c: *mut c_void, ct: u32, ldc: c_int, compute: c_int, _algo: c_int) -> Result<(), BlasError> {
        gemm(h, &Gemm { ta, tb, m, n, k, alpha, a: a as u64, lda, b: b as u64, ldb, beta, c: c as u64, ldc }, (at, bt, ct, compute), func::GEMM, None)
    }

    fn cublasHgemm(h: H, ta: c_int, tb: c_int, m: c_int, n: c_int, k: c_int, alpha: *const c_void, a: *const c_void, lda: c_int, b: *const c_void, ldb: c_int, beta: *const c_void, c: *mut c_void, ldc: c_int) -> Result<(), BlasError> {
        // GemmEx over `__half` with CUBLAS_COMPUTE_16F (`__half` scalars).
        gemm(h, &Gemm { ta, tb, m, n, k, alpha, a: a as u64, lda, b: b as u64, ldb, beta, c: c as u64, ldc }, HALF, func::GEMM, None)
    }

    fn cublasHgemmStridedBatched(h: H, ta: c_int, tb: c_int, m: c_int, n: c_int, k: c_int, alpha: *const c_void, a: *const c_void, lda: c_int, sa: c_longlong, b: *const c_void, ldb: c_int, sb: c_longlong, beta: *const c_void, c: *mut c_void, ldc: c_int, sc: c_longlong, count: c_int) -> Result<(), BlasError> {
        gemm(h, &Gemm { ta, tb, m, n, k, alpha, a: a as u64, lda, b: b as u64, ldb, beta, c: c as u64, ldc }, HALF, func::GEMM, Some((count, [sa, sb, sc])))
    }

    fn cublasHgemmBatched(h: H, ta: c_int, tb: c_int, m: c_int, n: c_int, k: c_int, alpha: *const c_void, a: *const *const c_void, lda: c_int, b: *const *const c_void, ldb: c_int, beta: *const c_void, c: *const *mut c_void, ldc: c_int, count: c_int) -> Result<(), BlasError> {
        gemm(h, &Gemm { ta, tb, m, n, k, alpha, a: a as u64, lda, b: b as u64, ldb, beta, c: c as u64, ldc }, HALF, func::GEMM_BATCHED, Some((count, [0; 3])))
    }

    fn cublasGemmStridedBatchedEx(h: H, ta: c_int, tb: c_int, m: c_int, n: c_int, k: c_int, alpha: *const c_void, a: *const c_void, at: u32, lda: c_int, sa: c_longlong, b: *const c_void, bt: u32, ldb: c_int, sb: c_longlong, beta: *const c_void, c: *mut c_void, ct: u32, ldc: c_int, sc: c_longlong, count: c_int, compute: c_int, _algo: c_int) -> Result<(), BlasError> {
        gemm(h, &Gemm { ta, tb, m, n, k, alpha, a: a as u64, lda, b: b as u64, ldb, beta, c: c as u64, ldc }, (at, bt, ct, compute), func::GEMM, Some((count, [sa, sb, sc])))
    }

    fn cublasGemmBatchedEx(h: H, ta: c_int, tb: c_int, m: c_int, n: c_int, k: c_int, alpha: *const c_void, a: *const *const c_void, at: u32, lda: c_int, b: *const *const c_void, bt: u32, ldb: c_int, beta: *const c_void, c: *const *mut c_void, ct: u32, ldc: c_int, count: c_int, compute: c_int, _algo: c_int) -> Result<(), BlasError> {
        gemm(h, &Gemm { ta, tb, m, n, k, alpha, a: a as u64, lda, b: b as u64, ldb, beta, c: c as u64, ldc }, (at, bt, ct, compute), func::GEMM_BATCHED, Some((count, [0; 3])))
    }
}

/// `__half` operands and scalars: `CUDA_R_16F` throughout, `CUBLAS_COMPUTE_16F`.
const HALF: (u32, u32, u32, c_int) = (dtype::R_16F, dtype::R_16F, dtype::R_16F, 64);

/// `cuComplex`.
type C32T = [f32; 2];
/// `cuDoubleComplex`.
type C64T = [f64; 2];

entry_lib! {
    fn cublasCreate_v2(out: *mut H) -> Result<(), BlasError> {
        if out.is_null() {
            return Err(BlasError::INVALID_VALUE);
        }
        let c = client::client().map_err(|_| BlasError::NOT_INITIALIZED)?;
        let device = c.check_device(state::device()).map_err(|_| BlasError::NOT_INITIALIZED)?;
        let r: HandleResp = c
            .call::<ops::BlasCreate>(&BlasCreateReq { device, reserved: 0 })
            .map_err(|e| if e.0 == BLAS_NOT_SUPPORTED { BlasError::NOT_SUPPORTED } else { BlasError::NOT_INITIALIZED })?;
        let st = HandleState { stream: 0, pointer_mode: 0, math_mode: 0, atomics: 0 };
        with_handles(|m| m.insert(r.handle, st));
        // SAFETY: `out` was checked non-null above, and cuBLAS's contract makes a non-null
        // handle output pointer valid for writing a `cublasHandle_t`.
        unsafe { out.write(r.handle as H) };
        Ok(())
    }

    fn cublasDestroy_v2(h: H) -> Result<(), BlasError> {
        with_handles(|m| m.remove(&(h as u64))).ok_or(BlasError::NOT_INITIALIZED)?;
        let c = client::client().map_err(|_| BlasError::NOT_INITIALIZED)?;
        // Destroying waits for the handle's work, as cuBLAS does.
        c.call::<ops::BlasDestroy>(&HandleReq { handle: h as u64 })
            .map_err(BlasError::from)
    }

    fn cublasSetStream_v2(h: H, stream: cudaStream_t) -> Result<(), BlasError> {
        update(h, |s| s.stream = stream as usize)
    }

    fn cublasGetStream_v2(h: H, out: *mut cudaStream_t) -> Result<(), BlasError> {
        set_out(out, handle_state(h)?.stream as cudaStream_t)
    }

    fn cublasSetPointerMode_v2(h: H, mode: c_int) -> Result<(), BlasError> {
        if !matches!(mode, 0 | 1) {
            return Err(BlasError::INVALID_VALUE);
        }
        update(h, |s| s.pointer_mode = mode)
    }

    fn cublasGetPointerMode_v2(h: H, out: *mut c_int) -> Result<(), BlasError> {
        set_out(out, handle_state(h)?.pointer_mode)
    }

    fn cublasSetMathMode(h: H, mode: c_int) -> Result<(), BlasError> {
        if !matches!(mode & 0xf, 0..=4) || mode & !0x1f != 0 {
            return Err(BlasError::INVALID_VALUE);
        }
        update(h, |s| s.math_mode = mode)
    }

    fn cublasGetMathMode(h: H, out: *mut c_int) -> Result<(), BlasError> {
        set_out(out, handle_state(h)?.math_mode)
    }

    fn cublasSetAtomicsMode(h: H, mode: c_int) -> Result<(), BlasError> {
        if !matches!(mode, 0 | 1) {
            return Err(BlasError::INVALID_VALUE);
        }
        update(h, |s| s.atomics = mode)
    }

    fn cublasGetAtomicsMode(h: H, out: *mut c_int) -> Result<(), BlasError> {
        set_out(out, handle_state(h)?.atomics)
    }

    fn cublasSetWorkspace_v2(h: H, _workspace: *mut c_void, _size: usize) -> Result<(), BlasError> {
        // The backend brings its own workspace; the guest's is not needed.
        handle_state(h).map(drop)
    }

    fn cublasGetVersion_v2(h: H, out: *mut c_int) -> Result<(), BlasError> {
        handle_state(h)?;
        set_out(out, VERSION)
    }

    fn cublasGetVersion(out: *mut c_int) -> Result<(), BlasError> {
        set_out(out, VERSION)
    }

    fn cublasGetProperty(ty: c_int, out: *mut c_int) -> Result<(), BlasError> {
        match VERSION_PARTS.get(ty as usize) {
            Some(&v) if ty >= 0 => set_out(out, v),
            _ => Err(BlasError::INVALID_VALUE),
        }
    }

    fn cublasLoggerConfigure(_on: c_int, _stdout: c_int, _stderr: c_int, _file: *const c_char) -> Result<(), BlasError> {
        Ok(())
    }

    fn cublasSetVector(n: c_int, es: c_int, x: *const c_void, incx: c_int, y: *mut c_void, incy: c_int) -> Result<(), BlasError> {
        vector_copy(n, es, x, incx, y, incy, memcpy_kind::H2D, None)
    }

    fn cublasGetVector(n: c_int, es: c_int, x: *const c_void, incx: c_int, y: *mut c_void, incy: c_int) -> Result<(), BlasError> {
        vector_copy(n, es, x, incx, y, incy, memcpy_kind::D2H, None)
    }

    fn cublasSetVectorAsync(n: c_int, es: c_int, x: *const c_void, incx: c_int, y: *mut c_void, incy: c_int, s: cudaStream_t) -> Result<(), BlasError> {
        vector_copy(n, es, x, incx, y, incy, memcpy_kind::H2D, Some(s))
    }

    fn cublasGetVectorAsync(n: c_int, es: c_int, x: *const c_void, incx: c_int, y: *mut c_void, incy: c_int, s: cudaStream_t) -> Result<(), BlasError> {
        vector_copy(n, es, x, incx, y, incy, memcpy_kind::D2H, Some(s))
    }

    fn cublasSetMatrix(rows: c_int, cols: c_int, es: c_int, a: *const c_void, lda: c_int, b: *mut c_void, ldb: c_int) -> Result<(), BlasError> {
        matrix_copy(rows, cols, es, a, lda, b, ldb, memcpy_kind::H2D, None)
    }

    fn cublasGetMatrix(rows: c_int, cols: c_int, es: c_int, a: *const c_void, lda: c_int, b: *mut c_void, ldb: c_int) -> Result<(), BlasError> {
        matrix_copy(rows, cols, es, a, lda, b, ldb, memcpy_kind::D2H, None)
    }

    fn cublasSetMatrixAsync(rows: c_int, cols: c_int, es: c_int, a: *const c_void, lda: c_int, b: *mut c_void, ldb: c_int, s: cudaStream_t) -> Result<(), BlasError> {
        matrix_copy(rows, cols, es, a, lda, b, ldb, memcpy_kind::H2D, Some(s))
    }

    fn cublasGetMatrixAsync(rows: c_int, cols: c_int, es: c_int, a: *const c_void, lda: c_int, b: *mut c_void, ldb: c_int, s: cudaStream_t) -> Result<(), BlasError> {
        matrix_copy(rows, cols, es, a, lda, b, ldb, memcpy_kind::D2H, Some(s))
    }
}

entry_raw! {
    fn cublasGetCudartVersion() -> usize {
        client::RUNTIME_VERSION as usize
    }

    fn cublasGetStatusName(s: u32) -> *const c_char {
        status_text(s, true)
    }

    fn cublasGetStatusString(s: u32) -> *const c_char {
        status_text(s, false)
    }
}
