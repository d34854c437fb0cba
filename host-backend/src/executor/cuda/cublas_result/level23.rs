// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Level-2 and level-3 routines in single and double precision (`cublas[SD]gemv`,
//! `ger`, `symv`, `trsv`, `symm`, `syrk`, `trsm`, `geam`).

#![allow(clippy::too_many_arguments)]

use std::ffi::c_int;

use cudarc::cublas::sys::{
    cublasDiagType_t, cublasFillMode_t, cublasHandle_t, cublasOperation_t, cublasSideMode_t,
};

use super::{BlasResult, ok};
use crate::executor::cuda::lib_ffi::cublas;

/// `cublasSgemv_v2`.
///
/// # Safety
///
/// `handle` is a live handle whose context is current, and the pointers are what
/// cuBLAS documents for `cublasSgemv_v2`: operands in memory the routine may read and write
/// (device memory of that context, or host memory for host-mode scalars and results).
pub unsafe fn sgemv(
    handle: cublasHandle_t,
    trans: cublasOperation_t,
    m: c_int,
    n: c_int,
    alpha: *const f32,
    a: *const f32,
    lda: c_int,
    x: *const f32,
    incx: c_int,
    beta: *const f32,
    y: *mut f32,
    incy: c_int,
) -> BlasResult<()> {
    // SAFETY: the caller's contract.
    ok(unsafe {
        cublas::cublasSgemv_v2(handle, trans, m, n, alpha, a, lda, x, incx, beta, y, incy)
    })
}

/// `cublasDgemv_v2`.
///
/// # Safety
///
/// `handle` is a live handle whose context is current, and the pointers are what
/// cuBLAS documents for `cublasDgemv_v2`: operands in memory the routine may read and write
/// (device memory of that context, or host memory for host-mode scalars and results).
pub unsafe fn dgemv(
    handle: cublasHandle_t,
    trans: cublasOperation_t,
    m: c_int,
    n: c_int,
    alpha: *const f64,
    a: *const f64,
    lda: c_int,
    x: *const f64,
    incx: c_int,
    beta: *const f64,
    y: *mut f64,
    incy: c_int,
) -> BlasResult<()> {
    // SAFETY: the caller's contract.
    ok(unsafe {
        cublas::cublasDgemv_v2(handle, trans, m, n, alpha, a, lda, x, incx, beta, y, incy)
    })
}

/// `cublasSger_v2`.
///
/// # Safety
///
/// `handle` is a live handle whose context is current, and the pointers are what
/// cuBLAS documents for `cublasSger_v2`: operands in memory the routine may read and write
/// (device memory of that context, or host memory for host-mode scalars and results).
pub unsafe fn sger(
    handle: cublasHandle_t,
    m: c_int,
    n: c_int,
    alpha: *const f32,
    x: *const f32,
    incx: c_int,
    y: *const f32,
    incy: c_int,
    a: *mut f32,
    lda: c_int,
) -> BlasResult<()> {
    // SAFETY: the caller's contract.
    ok(unsafe { cublas::cublasSger_v2(handle, m, n, alpha, x, incx, y, incy, a, lda) })
}

/// `cublasDger_v2`.
///
/// # Safety
///
/// `handle` is a live handle whose context is current, and the pointers are what
/// cuBLAS documents for `cublasDger_v2`: operands in memory the routine may read and write
/// (device memory of that context, or host memory for host-mode scalars and results).
pub unsafe fn dger(
    handle: cublasHandle_t,
    m: c_int,
    n: c_int,
    alpha: *const f64,
    x: *const f64,
    incx: c_int,
    y: *const f64,
    incy: c_int,
    a: *mut f64,
    lda: c_int,
) -> BlasResult<()> {
    // SAFETY: the caller's contract.
    ok(unsafe { cublas::cublasDger_v2(handle, m, n, alpha, x, incx, y, incy, a, lda) })
}

/// `cublasSsymv_v2`.
///
/// # Safety
///
/// `handle` is a live handle whose context is current, and the pointers are what
/// cuBLAS documents for `cublasSsymv_v2`: operands in memory the routine may read and write
/// (device memory of that context, or host memory for host-mode scalars and results).
pub unsafe fn ssymv(
    handle: cublasHandle_t,
    uplo: cublasFillMode_t,
    n: c_int,
    alpha: *const f32,
    a: *const f32,
    lda: c_int,
    x: *const f32,
    incx: c_int,
    beta: *const f32,
    y: *mut f32,
    incy: c_int,
) -> BlasResult<()> {
    // SAFETY: the caller's contract.
    ok(unsafe { cublas::cublasSsymv_v2(handle, uplo, n, alpha, a, lda, x, incx, beta, y, incy) })
}

/// `cublasDsymv_v2`.
///
/// # Safety
///
/// `handle` is a live handle whose context is current, and the pointers are what
/// cuBLAS documents for `cublasDsymv_v2`: operands in memory the routine may read and write
/// (device memory of that context, or host memory for host-mode scalars and results).
pub unsafe fn dsymv(
    handle: cublasHandle_t,
    uplo: cublasFillMode_t,
    n: c_int,
    alpha: *const f64,
    a: *const f64,
    lda: c_int,
    x: *const f64,
    incx: c_int,
    beta: *const f64,
    y: *mut f64,
    incy: c_int,
) -> BlasResult<()> {
    // SAFETY: the caller's contract.
    ok(unsafe { cublas::cublasDsymv_v2(handle, uplo, n, alpha, a, lda, x, incx, beta, y, incy) })
}

/// `cublasStrsv_v2`.
///
/// # Safety
///
/// `handle` is a live handle whose context is current, and the pointers are what
/// cuBLAS documents for `cublasStrsv_v2`: operands in memory the routine may read and write
/// (device memory of that context, or host memory for host-mode scalars and results).
pub unsafe fn strsv(
    handle: cublasHandle_t,
    uplo: cublasFillMode_t,
    trans: cublasOperation_t,
    diag: cublasDiagType_t,
    n: c_int,
    a: *const f32,
    lda: c_int,
    x: *mut f32,
    incx: c_int,
) -> BlasResult<()> {
    // SAFETY: the caller's contract.
    ok(unsafe { cublas::cublasStrsv_v2(handle, uplo, trans, diag, n, a, lda, x, incx) })
}

/// `cublasDtrsv_v2`.
///
/// # Safety
///
/// `handle` is a live handle whose context is current, and the pointers are what
/// cuBLAS documents for `cublasDtrsv_v2`: operands in memory the routine may read and write
/// (device memory of that context, or host memory for host-mode scalars and results).
pub unsafe fn dtrsv(
    handle: cublasHandle_t,
    uplo: cublasFillMode_t,
    trans: cublasOperation_t,
    diag: cublasDiagType_t,
    n: c_int,
    a: *const f64,
    lda: c_int,
    x: *mut f64,
    incx: c_int,
) -> BlasResult<()> {
    // SAFETY: the caller's contract.
    ok(unsafe { cublas::cublasDtrsv_v2(handle, uplo, trans, diag, n, a, lda, x, incx) })
}

/// `cublasSsymm_v2`.
///
/// # Safety
///
/// `handle` is a live handle whose context is current, and the pointers are what
/// cuBLAS documents for `cublasSsymm_v2`: operands in memory the routine may read and write
/// (device memory of that context, or host memory for host-mode scalars and results).
pub unsafe fn ssymm(
    handle: cublasHandle_t,
    side: cublasSideMode_t,
    uplo: cublasFillMode_t,
    m: c_int,
    n: c_int,
    alpha: *const f32,
    a: *const f32,
    lda: c_int,
    b: *const f32,
    ldb: c_int,
    beta: *const f32,
    c: *mut f32,
    ldc: c_int,
) -> BlasResult<()> {
    // SAFETY: the caller's contract.
    ok(unsafe {
        cublas::cublasSsymm_v2(
            handle, side, uplo, m, n, alpha, a, lda, b, ldb, beta, c, ldc,
        )
    })
}

/// `cublasDsymm_v2`.
///
/// # Safety
///
/// `handle` is a live handle whose context is current, and the pointers are what
/// cuBLAS documents for `cublasDsymm_v2`: operands in memory the routine may read and write
/// (device memory of that context, or host memory for host-mode scalars and results).
pub unsafe fn dsymm(
    handle: cublasHandle_t,
    side: cublasSideMode_t,
    uplo: cublasFillMode_t,
    m: c_int,
    n: c_int,
    alpha: *const f64,
    a: *const f64,
    lda: c_int,
    b: *const f64,
    ldb: c_int,
    beta: *const f64,
    c: *mut f64,
    ldc: c_int,
) -> BlasResult<()> {
    // SAFETY: the caller's contract.
    ok(unsafe {
        cublas::cublasDsymm_v2(
            handle, side, uplo, m, n, alpha, a, lda, b, ldb, beta, c, ldc,
        )
    })
}

/// `cublasSsyrk_v2`.
///
/// # Safety
///
/// `handle` is a live handle whose context is current, and the pointers are what
/// cuBLAS documents for `cublasSsyrk_v2`: operands in memory the routine may read and write
/// (device memory of that context, or host memory for host-mode scalars and results).
pub unsafe fn ssyrk(
    handle: cublasHandle_t,
    uplo: cublasFillMode_t,
    trans: cublasOperation_t,
    n: c_int,
    k: c_int,
    alpha: *const f32,
    a: *const f32,
    lda: c_int,
    beta: *const f32,
    c: *mut f32,
    ldc: c_int,
) -> BlasResult<()> {
    // SAFETY: the caller's contract.
    ok(unsafe { cublas::cublasSsyrk_v2(handle, uplo, trans, n, k, alpha, a, lda, beta, c, ldc) })
}

/// `cublasDsyrk_v2`.
///
/// # Safety
///
/// `handle` is a live handle whose context is current, and the pointers are what
/// cuBLAS documents for `cublasDsyrk_v2`: operands in memory the routine may read and write
/// (device memory of that context, or host memory for host-mode scalars and results).
pub unsafe fn dsyrk(
    handle: cublasHandle_t,
    uplo: cublasFillMode_t,
    trans: cublasOperation_t,
    n: c_int,
    k: c_int,
    alpha: *const f64,
    a: *const f64,
    lda: c_int,
    beta: *const f64,
    c: *mut f64,
    ldc: c_int,
) -> BlasResult<()> {
    // SAFETY: the caller's contract.
    ok(unsafe { cublas::cublasDsyrk_v2(handle, uplo, trans, n, k, alpha, a, lda, beta, c, ldc) })
}

/// `cublasStrsm_v2`.
///
/// # Safety
///
/// `handle` is a live handle whose context is current, and the pointers are what
/// cuBLAS documents for `cublasStrsm_v2`: operands in memory the routine may read and write
/// (device memory of that context, or host memory for host-mode scalars and results).
pub unsafe fn strsm(
    handle: cublasHandle_t,
    side: cublasSideMode_t,
    uplo: cublasFillMode_t,
    trans: cublasOperation_t,
    diag: cublasDiagType_t,
    m: c_int,
    n: c_int,
    alpha: *const f32,
    a: *const f32,
    lda: c_int,
    b: *mut f32,
    ldb: c_int,
) -> BlasResult<()> {
    // SAFETY: the caller's contract.
    ok(unsafe {
        cublas::cublasStrsm_v2(handle, side, uplo, trans, diag, m, n, alpha, a, lda, b, ldb)
    })
}

/// `cublasDtrsm_v2`.
///
/// # Safety
///
/// `handle` is a live handle whose context is current, and the pointers are what
/// cuBLAS documents for `cublasDtrsm_v2`: operands in memory the routine may read and write
/// (device memory of that context, or host memory for host-mode scalars and results).
pub unsafe fn dtrsm(
    handle: cublasHandle_t,
    side: cublasSideMode_t,
    uplo: cublasFillMode_t,
    trans: cublasOperation_t,
    diag: cublasDiagType_t,
    m: c_int,
    n: c_int,
    alpha: *const f64,
    a: *const f64,
    lda: c_int,
    b: *mut f64,
    ldb: c_int,
) -> BlasResult<()> {
    // SAFETY: the caller's contract.
    ok(unsafe {
        cublas::cublasDtrsm_v2(handle, side, uplo, trans, diag, m, n, alpha, a, lda, b, ldb)
    })
}

/// `cublasSgeam`.
///
/// # Safety
///
/// `handle` is a live handle whose context is current, and the pointers are what
/// cuBLAS documents for `cublasSgeam`: operands in memory the routine may read and write
/// (device memory of that context, or host memory for host-mode scalars and results).
pub unsafe fn sgeam(
    handle: cublasHandle_t,
    transa: cublasOperation_t,
    transb: cublasOperation_t,
    m: c_int,
    n: c_int,
    alpha: *const f32,
    a: *const f32,
    lda: c_int,
    beta: *const f32,
    b: *const f32,
    ldb: c_int,
    c: *mut f32,
    ldc: c_int,
) -> BlasResult<()> {
    // SAFETY: the caller's contract.
    ok(unsafe {
        cublas::cublasSgeam(
            handle, transa, transb, m, n, alpha, a, lda, beta, b, ldb, c, ldc,
        )
    })
}

/// `cublasDgeam`.
///
/// # Safety
///
/// `handle` is a live handle whose context is current, and the pointers are what
/// cuBLAS documents for `cublasDgeam`: operands in memory the routine may read and write
/// (device memory of that context, or host memory for host-mode scalars and results).
pub unsafe fn dgeam(
    handle: cublasHandle_t,
    transa: cublasOperation_t,
    transb: cublasOperation_t,
    m: c_int,
    n: c_int,
    alpha: *const f64,
    a: *const f64,
    lda: c_int,
    beta: *const f64,
    b: *const f64,
    ldb: c_int,
    c: *mut f64,
    ldc: c_int,
) -> BlasResult<()> {
    // SAFETY: the caller's contract.
    ok(unsafe {
        cublas::cublasDgeam(
            handle, transa, transb, m, n, alpha, a, lda, beta, b, ldb, c, ldc,
        )
    })
}
