// SPDX-License-Identifier: Apache-2.0 OR MIT
//! cuBLAS's result layer: every cuBLAS call the executor makes, as thin wrappers over the
//! `u32`-returning entry points of [`super::lib_ffi::cublas`] that return typed errors
//! ([`BlasResult`]), named as cudarc's `cublas::result` names them (`sgemv` for
//! `cublasSgemv_v2`), as `driver` does for the driver.
//!
//! Every wrapper but [`create`] takes a handle and is `unsafe`: the caller guarantees that
//! the handle is live (created here, not destroyed) and its context current, and that the
//! operands are what cuBLAS documents. cuBLAS validates the sizes and modes and reports
//! misuse as a status.
//!
//! The wrappers are grouped as cuBLAS documents its API: handles and modes here,
//! `level1`, `level23` (single and double precision) and `gemm` (GEMM's `Ex` forms and the
//! batched LU routines), all re-exported here.

use cudarc::cublas::sys::{
    cublasHandle_t, cublasMath_t, cublasPointerMode_t, cublasStatus_t, cudaStream_t,
};

use super::lib_ffi::cublas;

mod gemm;
mod level1;
mod level23;

pub use self::gemm::*;
pub use self::level1::*;
pub use self::level23::*;

/// A cuBLAS result: the error is the library's status (one this build does not know is
/// `CUBLAS_STATUS_INTERNAL_ERROR`, see [`cublas::status`]).
pub type BlasResult<T> = Result<T, cublasStatus_t>;

fn ok(s: u32) -> BlasResult<()> {
    match cublas::status(s) {
        cublasStatus_t::CUBLAS_STATUS_SUCCESS => Ok(()),
        s => Err(s),
    }
}

/// Whether libcublas is loaded (loading it on the first call).
pub fn present() -> bool {
    cublas::present()
}

/// `cublasCreate_v2`: a handle in the current context.
pub fn create() -> BlasResult<cublasHandle_t> {
    let mut h: cublasHandle_t = std::ptr::null_mut();
    // SAFETY: `h` is a valid out-pointer.
    ok(unsafe { cublas::cublasCreate_v2(&mut h) })?;
    Ok(h)
}

/// `cublasDestroy_v2`.
///
/// # Safety
///
/// `handle` is a live handle, not used afterwards, whose context is current.
pub unsafe fn destroy(handle: cublasHandle_t) -> BlasResult<()> {
    // SAFETY: the caller's contract.
    ok(unsafe { cublas::cublasDestroy_v2(handle) })
}

/// `cublasSetStream_v2`.
///
/// # Safety
///
/// `handle` is a live handle whose context is current; `stream` is null or a live stream of that
/// context.
pub unsafe fn set_stream(handle: cublasHandle_t, stream_id: cudaStream_t) -> BlasResult<()> {
    // SAFETY: the caller's contract.
    ok(unsafe { cublas::cublasSetStream_v2(handle, stream_id) })
}

/// `cublasSetPointerMode_v2`.
///
/// # Safety
///
/// `handle` is a live handle whose context is current.
pub unsafe fn set_pointer_mode(
    handle: cublasHandle_t,
    mode: cublasPointerMode_t,
) -> BlasResult<()> {
    // SAFETY: the caller's contract.
    ok(unsafe { cublas::cublasSetPointerMode_v2(handle, mode) })
}

/// `cublasSetMathMode`.
///
/// # Safety
///
/// `handle` is a live handle whose context is current.
pub unsafe fn set_math_mode(handle: cublasHandle_t, mode: cublasMath_t) -> BlasResult<()> {
    // SAFETY: the caller's contract.
    ok(unsafe { cublas::cublasSetMathMode(handle, mode) })
}
