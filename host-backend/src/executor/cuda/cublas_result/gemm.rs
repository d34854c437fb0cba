// SPDX-License-Identifier: Apache-2.0 OR MIT
//! GEMM in its `Ex` forms (plain, strided-batched, pointer-array-batched) and the batched
//! LU routines (`cublas[SD]getrfBatched`, `cublas[SD]getrsBatched`).

#![allow(clippy::too_many_arguments)]

use std::ffi::{c_int, c_longlong, c_void};

use cudarc::cublas::sys::{
    cublasComputeType_t, cublasGemmAlgo_t, cublasHandle_t, cublasOperation_t, cudaDataType,
};

use super::{BlasResult, ok};
use crate::executor::cuda::lib_ffi::cublas;

/// `cublasGemmEx`.
///
/// # Safety
///
/// `handle` is a live handle whose context is current, and the pointers are what
/// cuBLAS documents for `cublasGemmEx`: operands in memory the routine may read and write
/// (device memory of that context, or host memory for host-mode scalars and results).
pub unsafe fn gemm_ex(
    handle: cublasHandle_t,
    transa: cublasOperation_t,
    transb: cublasOperation_t,
    m: c_int,
    n: c_int,
    k: c_int,
    alpha: *const c_void,
    a: *const c_void,
    atype: cudaDataType,
    lda: c_int,
    b: *const c_void,
    btype: cudaDataType,
    ldb: c_int,
    beta: *const c_void,
    c: *mut c_void,
    ctype: cudaDataType,
    ldc: c_int,
    compute_type: cublasComputeType_t,
    algo: cublasGemmAlgo_t,
) -> BlasResult<()> {
    // SAFETY: the caller's contract.
    ok(unsafe {
        cublas::cublasGemmEx(
            handle,
            transa,
            transb,
            m,
            n,
            k,
            alpha,
            a,
            atype,
            lda,
            b,
            btype,
            ldb,
            beta,
            c,
            ctype,
            ldc,
            compute_type,
            algo,
        )
    })
}

/// `cublasGemmStridedBatchedEx`.
///
/// # Safety
///
/// `handle` is a live handle whose context is current, and the pointers are what cuBLAS documents
/// for `cublasGemmStridedBatchedEx`: operands in memory the routine may read and write (device
/// memory of that context, or host memory for host-mode scalars and results).
pub unsafe fn gemm_strided_batched_ex(
    handle: cublasHandle_t,
    transa: cublasOperation_t,
    transb: cublasOperation_t,
    m: c_int,
    n: c_int,
    k: c_int,
    alpha: *const c_void,
    a: *const c_void,
    atype: cudaDataType,
    lda: c_int,
    stride_a: c_longlong,
    b: *const c_void,
    btype: cudaDataType,
    ldb: c_int,
    stride_b: c_longlong,
    beta: *const c_void,
    c: *mut c_void,
    ctype: cudaDataType,
    ldc: c_int,
    stride_c: c_longlong,
    batch_count: c_int,
    compute_type: cublasComputeType_t,
    algo: cublasGemmAlgo_t,
) -> BlasResult<()> {
    // SAFETY: the caller's contract.
    ok(unsafe {
        cublas::cublasGemmStridedBatchedEx(
            handle,
            transa,
            transb,
            m,
            n,
            k,
            alpha,
            a,
            atype,
            lda,
            stride_a,
            b,
            btype,
            ldb,
            stride_b,
            beta,
            c,
            ctype,
            ldc,
            stride_c,
            batch_count,
            compute_type,
            algo,
        )
    })
}

/// `cublasGemmBatchedEx`.
///
/// # Safety
///
/// `handle` is a live handle whose context is current, and the pointers are what
/// cuBLAS documents for `cublasGemmBatchedEx`: operands in memory the routine may read and write
/// (device memory of that context, or host memory for host-mode scalars and results).
pub unsafe fn gemm_batched_ex(
    handle: cublasHandle_t,
    transa: cublasOperation_t,
    transb: cublasOperation_t,
    m: c_int,
    n: c_int,
    k: c_int,
    alpha: *const c_void,
    aarray: *const *const c_void,
    atype: cudaDataType,
    lda: c_int,
    barray: *const *const c_void,
    btype: cudaDataType,
    ldb: c_int,
    beta: *const c_void,
    carray: *const *mut c_void,
    ctype: cudaDataType,
    ldc: c_int,
    batch_count: c_int,
    compute_type: cublasComputeType_t,
    algo: cublasGemmAlgo_t,
) -> BlasResult<()> {
    // SAFETY: the caller's contract.
    ok(unsafe {
        cublas::cublasGemmBatchedEx(
            handle,
            transa,
            transb,
            m,
            n,
            k,
            alpha,
            aarray,
            atype,
            lda,
            barray,
            btype,
            ldb,
            beta,
            carray,
            ctype,
            ldc,
            batch_count,
            compute_type,
            algo,
        )
    })
}

/// `cublasSgetrfBatched`.
///
/// # Safety
///
/// `handle` is a live handle whose context is current, and the pointers are what
/// cuBLAS documents for `cublasSgetrfBatched`: operands in memory the routine may read and write
/// (device memory of that context, or host memory for host-mode scalars and results).
pub unsafe fn sgetrf_batched(
    handle: cublasHandle_t,
    n: c_int,
    a: *const *mut f32,
    lda: c_int,
    p: *mut c_int,
    info: *mut c_int,
    batch_size: c_int,
) -> BlasResult<()> {
    // SAFETY: the caller's contract.
    ok(unsafe { cublas::cublasSgetrfBatched(handle, n, a, lda, p, info, batch_size) })
}

/// `cublasDgetrfBatched`.
///
/// # Safety
///
/// `handle` is a live handle whose context is current, and the pointers are what
/// cuBLAS documents for `cublasDgetrfBatched`: operands in memory the routine may read and write
/// (device memory of that context, or host memory for host-mode scalars and results).
pub unsafe fn dgetrf_batched(
    handle: cublasHandle_t,
    n: c_int,
    a: *const *mut f64,
    lda: c_int,
    p: *mut c_int,
    info: *mut c_int,
    batch_size: c_int,
) -> BlasResult<()> {
    // SAFETY: the caller's contract.
    ok(unsafe { cublas::cublasDgetrfBatched(handle, n, a, lda, p, info, batch_size) })
}

/// `cublasSgetrsBatched`.
///
/// # Safety
///
/// `handle` is a live handle whose context is current, and the pointers are what
/// cuBLAS documents for `cublasSgetrsBatched`: operands in memory the routine may read and write
/// (device memory of that context, or host memory for host-mode scalars and results).
pub unsafe fn sgetrs_batched(
    handle: cublasHandle_t,
    trans: cublasOperation_t,
    n: c_int,
    nrhs: c_int,
    aarray: *const *const f32,
    lda: c_int,
    dev_ipiv: *const c_int,
    barray: *const *mut f32,
    ldb: c_int,
    info: *mut c_int,
    batch_size: c_int,
) -> BlasResult<()> {
    // SAFETY: the caller's contract.
    ok(unsafe {
        cublas::cublasSgetrsBatched(
            handle, trans, n, nrhs, aarray, lda, dev_ipiv, barray, ldb, info, batch_size,
        )
    })
}

/// `cublasDgetrsBatched`.
///
/// # Safety
///
/// `handle` is a live handle whose context is current, and the pointers are what
/// cuBLAS documents for `cublasDgetrsBatched`: operands in memory the routine may read and write
/// (device memory of that context, or host memory for host-mode scalars and results).
pub unsafe fn dgetrs_batched(
    handle: cublasHandle_t,
    trans: cublasOperation_t,
    n: c_int,
    nrhs: c_int,
    aarray: *const *const f64,
    lda: c_int,
    dev_ipiv: *const c_int,
    barray: *const *mut f64,
    ldb: c_int,
    info: *mut c_int,
    batch_size: c_int,
) -> BlasResult<()> {
    // SAFETY: the caller's contract.
    ok(unsafe {
        cublas::cublasDgetrsBatched(
            handle, trans, n, nrhs, aarray, lda, dev_ipiv, barray, ldb, info, batch_size,
        )
    })
}
