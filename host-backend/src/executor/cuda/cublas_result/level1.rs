// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Level-1 routines through their `*Ex` entry points (`cublasAsumEx`, `cublasDotEx`,
//! `cublasAxpyEx`, ...).

#![allow(clippy::too_many_arguments)]

use std::ffi::{c_int, c_void};

use cudarc::cublas::sys::{cublasHandle_t, cudaDataType};

use super::{BlasResult, ok};
use crate::executor::cuda::lib_ffi::cublas;

/// `cublasAsumEx`.
///
/// # Safety
///
/// `handle` is a live handle whose context is current, and the pointers are what
/// cuBLAS documents for `cublasAsumEx`: operands in memory the routine may read and write
/// (device memory of that context, or host memory for host-mode scalars and results).
pub unsafe fn asum_ex(
    handle: cublasHandle_t,
    n: c_int,
    x: *const c_void,
    x_type: cudaDataType,
    incx: c_int,
    result: *mut c_void,
    result_type: cudaDataType,
    executiontype: cudaDataType,
) -> BlasResult<()> {
    // SAFETY: the caller's contract.
    ok(unsafe {
        cublas::cublasAsumEx(
            handle,
            n,
            x,
            x_type,
            incx,
            result,
            result_type,
            executiontype,
        )
    })
}

/// `cublasNrm2Ex`.
///
/// # Safety
///
/// `handle` is a live handle whose context is current, and the pointers are what
/// cuBLAS documents for `cublasNrm2Ex`: operands in memory the routine may read and write
/// (device memory of that context, or host memory for host-mode scalars and results).
pub unsafe fn nrm2_ex(
    handle: cublasHandle_t,
    n: c_int,
    x: *const c_void,
    x_type: cudaDataType,
    incx: c_int,
    result: *mut c_void,
    result_type: cudaDataType,
    execution_type: cudaDataType,
) -> BlasResult<()> {
    // SAFETY: the caller's contract.
    ok(unsafe {
        cublas::cublasNrm2Ex(
            handle,
            n,
            x,
            x_type,
            incx,
            result,
            result_type,
            execution_type,
        )
    })
}

/// `cublasIamaxEx`.
///
/// # Safety
///
/// `handle` is a live handle whose context is current, and the pointers are what
/// cuBLAS documents for `cublasIamaxEx`: operands in memory the routine may read and write
/// (device memory of that context, or host memory for host-mode scalars and results).
pub unsafe fn iamax_ex(
    handle: cublasHandle_t,
    n: c_int,
    x: *const c_void,
    x_type: cudaDataType,
    incx: c_int,
    result: *mut c_int,
) -> BlasResult<()> {
    // SAFETY: the caller's contract.
    ok(unsafe { cublas::cublasIamaxEx(handle, n, x, x_type, incx, result) })
}

/// `cublasIaminEx`.
///
/// # Safety
///
/// `handle` is a live handle whose context is current, and the pointers are what
/// cuBLAS documents for `cublasIaminEx`: operands in memory the routine may read and write
/// (device memory of that context, or host memory for host-mode scalars and results).
pub unsafe fn iamin_ex(
    handle: cublasHandle_t,
    n: c_int,
    x: *const c_void,
    x_type: cudaDataType,
    incx: c_int,
    result: *mut c_int,
) -> BlasResult<()> {
    // SAFETY: the caller's contract.
    ok(unsafe { cublas::cublasIaminEx(handle, n, x, x_type, incx, result) })
}

/// `cublasDotEx`.
///
/// # Safety
///
/// `handle` is a live handle whose context is current, and the pointers are what
/// cuBLAS documents for `cublasDotEx`: operands in memory the routine may read and write
/// (device memory of that context, or host memory for host-mode scalars and results).
pub unsafe fn dot_ex(
    handle: cublasHandle_t,
    n: c_int,
    x: *const c_void,
    x_type: cudaDataType,
    incx: c_int,
    y: *const c_void,
    y_type: cudaDataType,
    incy: c_int,
    result: *mut c_void,
    result_type: cudaDataType,
    execution_type: cudaDataType,
) -> BlasResult<()> {
    // SAFETY: the caller's contract.
    ok(unsafe {
        cublas::cublasDotEx(
            handle,
            n,
            x,
            x_type,
            incx,
            y,
            y_type,
            incy,
            result,
            result_type,
            execution_type,
        )
    })
}

/// `cublasDotcEx`.
///
/// # Safety
///
/// `handle` is a live handle whose context is current, and the pointers are what
/// cuBLAS documents for `cublasDotcEx`: operands in memory the routine may read and write
/// (device memory of that context, or host memory for host-mode scalars and results).
pub unsafe fn dotc_ex(
    handle: cublasHandle_t,
    n: c_int,
    x: *const c_void,
    x_type: cudaDataType,
    incx: c_int,
    y: *const c_void,
    y_type: cudaDataType,
    incy: c_int,
    result: *mut c_void,
    result_type: cudaDataType,
    execution_type: cudaDataType,
) -> BlasResult<()> {
    // SAFETY: the caller's contract.
    ok(unsafe {
        cublas::cublasDotcEx(
            handle,
            n,
            x,
            x_type,
            incx,
            y,
            y_type,
            incy,
            result,
            result_type,
            execution_type,
        )
    })
}

/// `cublasAxpyEx`.
///
/// # Safety
///
/// `handle` is a live handle whose context is current, and the pointers are what
/// cuBLAS documents for `cublasAxpyEx`: operands in memory the routine may read and write
/// (device memory of that context, or host memory for host-mode scalars and results).
pub unsafe fn axpy_ex(
    handle: cublasHandle_t,
    n: c_int,
    alpha: *const c_void,
    alpha_type: cudaDataType,
    x: *const c_void,
    x_type: cudaDataType,
    incx: c_int,
    y: *mut c_void,
    y_type: cudaDataType,
    incy: c_int,
    executiontype: cudaDataType,
) -> BlasResult<()> {
    // SAFETY: the caller's contract.
    ok(unsafe {
        cublas::cublasAxpyEx(
            handle,
            n,
            alpha,
            alpha_type,
            x,
            x_type,
            incx,
            y,
            y_type,
            incy,
            executiontype,
        )
    })
}

/// `cublasCopyEx`.
///
/// # Safety
///
/// `handle` is a live handle whose context is current, and the pointers are what
/// cuBLAS documents for `cublasCopyEx`: operands in memory the routine may read and write
/// (device memory of that context, or host memory for host-mode scalars and results).
pub unsafe fn copy_ex(
    handle: cublasHandle_t,
    n: c_int,
    x: *const c_void,
    x_type: cudaDataType,
    incx: c_int,
    y: *mut c_void,
    y_type: cudaDataType,
    incy: c_int,
) -> BlasResult<()> {
    // SAFETY: the caller's contract.
    ok(unsafe { cublas::cublasCopyEx(handle, n, x, x_type, incx, y, y_type, incy) })
}

/// `cublasSwapEx`.
///
/// # Safety
///
/// `handle` is a live handle whose context is current, and the pointers are what
/// cuBLAS documents for `cublasSwapEx`: operands in memory the routine may read and write
/// (device memory of that context, or host memory for host-mode scalars and results).
pub unsafe fn swap_ex(
    handle: cublasHandle_t,
    n: c_int,
    x: *mut c_void,
    x_type: cudaDataType,
    incx: c_int,
    y: *mut c_void,
    y_type: cudaDataType,
    incy: c_int,
) -> BlasResult<()> {
    // SAFETY: the caller's contract.
    ok(unsafe { cublas::cublasSwapEx(handle, n, x, x_type, incx, y, y_type, incy) })
}

/// `cublasRotEx`.
///
/// # Safety
///
/// `handle` is a live handle whose context is current, and the pointers are what
/// cuBLAS documents for `cublasRotEx`: operands in memory the routine may read and write
/// (device memory of that context, or host memory for host-mode scalars and results).
pub unsafe fn rot_ex(
    handle: cublasHandle_t,
    n: c_int,
    x: *mut c_void,
    x_type: cudaDataType,
    incx: c_int,
    y: *mut c_void,
    y_type: cudaDataType,
    incy: c_int,
    c: *const c_void,
    s: *const c_void,
    cs_type: cudaDataType,
    executiontype: cudaDataType,
) -> BlasResult<()> {
    // SAFETY: the caller's contract.
    ok(unsafe {
        cublas::cublasRotEx(
            handle,
            n,
            x,
            x_type,
            incx,
            y,
            y_type,
            incy,
            c,
            s,
            cs_type,
            executiontype,
        )
    })
}

/// `cublasScalEx`.
///
/// # Safety
///
/// `handle` is a live handle whose context is current, and the pointers are what
/// cuBLAS documents for `cublasScalEx`: operands in memory the routine may read and write
/// (device memory of that context, or host memory for host-mode scalars and results).
pub unsafe fn scal_ex(
    handle: cublasHandle_t,
    n: c_int,
    alpha: *const c_void,
    alpha_type: cudaDataType,
    x: *mut c_void,
    x_type: cudaDataType,
    incx: c_int,
    execution_type: cudaDataType,
) -> BlasResult<()> {
    // SAFETY: the caller's contract.
    ok(unsafe {
        cublas::cublasScalEx(
            handle,
            n,
            alpha,
            alpha_type,
            x,
            x_type,
            incx,
            execution_type,
        )
    })
}
