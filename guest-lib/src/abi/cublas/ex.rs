// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The level-1 `*Ex` routines, whose types are arguments (`cudaDataType`): they run as the
//! typed routines when every type is the same one of `R_32F`, `R_64F`, `C_32F` or `C_64F`
//! (the scalar of `ScalEx` may be the real type of a complex vector, as `Csscal`/`Zdscal`),
//! and answer `CUBLAS_STATUS_NOT_SUPPORTED` for mixed or half precision.

use std::ffi::{c_int, c_void};

use vcuda_protocol::lib::func;

use super::handle::H;
use super::marshal::{
    C32, C64, R32, R64, Result, dot, elem_size, index_reduce, real_reduce, scal, vec2,
};
use crate::error::BlasError;

/// The one type of a call whose types must all be equal and supported.
fn uniform(types: &[u32]) -> Result<u32> {
    match types {
        [t, rest @ ..] if matches!(*t, R32 | R64 | C32 | C64) && rest.iter().all(|r| r == t) => {
            Ok(*t)
        }
        _ => Err(BlasError::NOT_SUPPORTED),
    }
}

/// The real type of `t`'s precision.
fn real_of(t: u32) -> u32 {
    match t {
        C32 => R32,
        C64 => R64,
        t => t,
    }
}

entry_lib! {
    fn cublasAxpyEx(h: H, n: c_int, alpha: *const c_void, alpha_type: u32, x: *const c_void, x_type: u32, incx: c_int, y: *mut c_void, y_type: u32, incy: c_int, exec: u32) -> Result<(), BlasError> {
        let t = uniform(&[alpha_type, x_type, y_type, exec])?;
        vec2(h, func::AXPY, t, n, alpha, std::ptr::null(), elem_size(t), x, incx, y.cast_const(), incy)
    }

    fn cublasCopyEx(h: H, n: c_int, x: *const c_void, x_type: u32, incx: c_int, y: *mut c_void, y_type: u32, incy: c_int) -> Result<(), BlasError> {
        let t = uniform(&[x_type, y_type])?;
        vec2(h, func::COPY, t, n, std::ptr::null(), std::ptr::null(), 0, x, incx, y.cast_const(), incy)
    }

    fn cublasSwapEx(h: H, n: c_int, x: *mut c_void, x_type: u32, incx: c_int, y: *mut c_void, y_type: u32, incy: c_int) -> Result<(), BlasError> {
        let t = uniform(&[x_type, y_type])?;
        vec2(h, func::SWAP, t, n, std::ptr::null(), std::ptr::null(), 0, x.cast_const(), incx, y.cast_const(), incy)
    }

    fn cublasDotEx(h: H, n: c_int, x: *const c_void, x_type: u32, incx: c_int, y: *const c_void, y_type: u32, incy: c_int, result: *mut c_void, result_type: u32, exec: u32) -> Result<(), BlasError> {
        let t = uniform(&[x_type, y_type, result_type, exec])?;
        dot(h, func::DOT, t, n, x, incx, y, incy, result)
    }

    fn cublasDotcEx(h: H, n: c_int, x: *const c_void, x_type: u32, incx: c_int, y: *const c_void, y_type: u32, incy: c_int, result: *mut c_void, result_type: u32, exec: u32) -> Result<(), BlasError> {
        let t = uniform(&[x_type, y_type, result_type, exec])?;
        dot(h, func::DOTC, t, n, x, incx, y, incy, result)
    }

    fn cublasNrm2Ex(h: H, n: c_int, x: *const c_void, x_type: u32, incx: c_int, result: *mut c_void, result_type: u32, exec: u32) -> Result<(), BlasError> {
        let t = uniform(&[x_type])?;
        uniform(&[real_of(t), result_type, real_of(exec)])?;
        real_reduce(h, func::NRM2, t, n, x, incx, result)
    }

    fn cublasAsumEx(h: H, n: c_int, x: *const c_void, x_type: u32, incx: c_int, result: *mut c_void, result_type: u32, exec: u32) -> Result<(), BlasError> {
        let t = uniform(&[x_type])?;
        uniform(&[real_of(t), result_type, real_of(exec)])?;
        real_reduce(h, func::ASUM, t, n, x, incx, result)
    }

    fn cublasIamaxEx(h: H, n: c_int, x: *const c_void, x_type: u32, incx: c_int, result: *mut c_int) -> Result<(), BlasError> {
        index_reduce(h, func::IAMAX, uniform(&[x_type])?, n, x, incx, result)
    }

    fn cublasIaminEx(h: H, n: c_int, x: *const c_void, x_type: u32, incx: c_int, result: *mut c_int) -> Result<(), BlasError> {
        index_reduce(h, func::IAMIN, uniform(&[x_type])?, n, x, incx, result)
    }

    fn cublasScalEx(h: H, n: c_int, alpha: *const c_void, alpha_type: u32, x: *mut c_void, x_type: u32, incx: c_int, exec: u32) -> Result<(), BlasError> {
        let t = uniform(&[x_type, exec])?;
        if alpha_type != t && alpha_type != real_of(t) {
            return Err(BlasError::NOT_SUPPORTED);
        }
        scal(h, t, alpha_type, n, alpha, x, incx)
    }

    fn cublasRotEx(h: H, n: c_int, x: *mut c_void, x_type: u32, incx: c_int, y: *mut c_void, y_type: u32, incy: c_int, c: *const c_void, s: *const c_void, cs_type: u32, exec: u32) -> Result<(), BlasError> {
        // Real rotations only (complex vectors with real or complex c, s are not).
        let t = uniform(&[x_type, y_type, cs_type, exec])?;
        if !matches!(t, R32 | R64) {
            return Err(BlasError::NOT_SUPPORTED);
        }
        vec2(h, func::ROT, t, n, c, s, elem_size(t), x.cast_const(), incx, y.cast_const(), incy)
    }
}
