// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The cuBLAS and cuRAND entry points the executor calls, typed to return a plain `u32`.
//!
//! cudarc's `cublas` and `curand` bindings declare every entry point as returning
//! `cublasStatus_t` or `curandStatus_t`, `#[repr(u32)]` enums of the statuses its CUDA
//! version knows. A newer library can return a status those enums cannot hold, and
//! receiving one would be undefined behavior; a missing entry point makes cudarc panic. So,
//! as [`super::ffi`] does for the driver, the executor looks each entry point up itself with
//! a `u32` result, and [`cublas::status`] / [`curand::status`] turn the number into the enum
//! only after checking it (unknown statuses become `CUBLAS_STATUS_INTERNAL_ERROR` and
//! `CURAND_STATUS_INTERNAL_ERROR`, logged once per value).
//!
//! The library is the one cudarc's own `culib` loads: the first of cudarc's candidate file
//! names (`cudarc::get_lib_name_candidates`) that opens, tried in cudarc's order, kept open
//! for the life of the process. Without the library, or without an entry point, a call
//! returns the status the executor answers when the library is absent
//! (`CUBLAS_STATUS_NOT_SUPPORTED`, `CURAND_STATUS_INITIALIZATION_FAILED`) instead of
//! panicking. Argument types are cudarc's.
//!
//! The signatures are those of cudarc 0.19's CUDA 13.0 bindings (argument names in snake
//! case); a test checks that every `cublas::cublas*` and `curand::curand*` call of the
//! executor is declared here, and that cudarc's enum-returning wrappers are called nowhere.

#![allow(clippy::too_many_arguments)]

use std::sync::Mutex;

use libloading::Library;
use log::warn;

macro_rules! lib_fns {
    ($lib:ident, $missing:expr; $(fn $name:ident($($arg:ident: $ty:ty),* $(,)?);)*) => {$(
        #[allow(non_snake_case)]
        #[doc = concat!("`", stringify!($name), "`.")]
        ///
        /// # Safety
        ///
        /// As the library documents for this entry point.
        pub unsafe fn $name($($arg: $ty),*) -> u32 {
            type F = unsafe extern "C" fn($($ty),*) -> u32;
            static ENTRY: std::sync::OnceLock<Option<F>> = std::sync::OnceLock::new();
            let f = ENTRY.get_or_init(|| {
                // SAFETY: the symbol, if the library has it, is the C function with this
                // signature (the library's headers), read with a `u32` result, which holds
                // any value the function returns.
                unsafe { $crate::executor::cuda::lib_ffi::entry::<F>($lib(), concat!(stringify!($name), "\0")) }
            });
            match f {
                // SAFETY: the caller's contract for the arguments.
                Some(f) => unsafe { f($($arg),*) },
                None => $missing,
            }
        }
    )*};
}

/// The library cudarc's `culib` loads for `name` (`"cublas"`, `"curand"`): the first of
/// cudarc's candidate file names that opens, in cudarc's order; `None` when none does.
fn open(name: &str) -> Option<Library> {
    cudarc::get_lib_name_candidates(name)
        .into_iter()
        .find_map(|file| {
            // SAFETY: loading cuBLAS or cuRAND runs their initialisers, which have no
            // preconditions of ours (cudarc's `is_culib_present` and `culib` load the same
            // files the same way).
            unsafe { Library::new(file) }.ok()
        })
}

/// The entry point `name` (NUL-terminated) of `lib`, read as an `F`; `None` without the
/// library or the symbol.
///
/// # Safety
///
/// `F` must be the type of the C function `name` names, where the library has it.
unsafe fn entry<F: Copy>(lib: Option<&Library>, name: &str) -> Option<F> {
    // SAFETY: the caller's contract: `F` is the symbol's type.
    lib.and_then(|lib| unsafe { lib.get::<F>(name.as_bytes()) }.ok().map(|s| *s))
}

/// Logs, once per library and value, that `lib` returned a status this build does not know.
fn unknown(lib: &'static str, code: u32, reported: &str) {
    static SEEN: Mutex<Vec<(&str, u32)>> = Mutex::new(Vec::new());
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if !seen.contains(&(lib, code)) && seen.len() < 64 {
        seen.push((lib, code));
        warn!(
            "{lib} returned status {code}, which this build does not know; reported as {reported}"
        );
    }
}

/// cuBLAS.
pub mod cublas {
    use std::sync::OnceLock;

    use cudarc::cublas::sys::*;
    use libloading::Library;

    /// libcublas, loaded on first use (`None` when it cannot be).
    fn lib() -> Option<&'static Library> {
        static LIB: OnceLock<Option<Library>> = OnceLock::new();
        LIB.get_or_init(|| crate::executor::cuda::lib_ffi::open("cublas"))
            .as_ref()
    }

    /// Whether libcublas is loaded (loading it on the first call).
    pub fn present() -> bool {
        lib().is_some()
    }

    /// A raw cuBLAS status as a `cublasStatus_t`: the status itself where the bindings know
    /// it, `CUBLAS_STATUS_INTERNAL_ERROR` (logged once per value) for one a newer cuBLAS
    /// added.
    pub fn status(code: u32) -> cublasStatus_t {
        if let Some(&s) = ALL_STATUSES.iter().find(|&&s| s as u32 == code) {
            return s;
        }
        crate::executor::cuda::lib_ffi::unknown("cuBLAS", code, "CUBLAS_STATUS_INTERNAL_ERROR");
        cublasStatus_t::CUBLAS_STATUS_INTERNAL_ERROR
    }

    /// Every `cublasStatus_t` of the CUDA 13.0 bindings.
    pub const ALL_STATUSES: &[cublasStatus_t] = {
        use cublasStatus_t::*;
        &[
            CUBLAS_STATUS_SUCCESS,
            CUBLAS_STATUS_NOT_INITIALIZED,
            CUBLAS_STATUS_ALLOC_FAILED,
            CUBLAS_STATUS_INVALID_VALUE,
            CUBLAS_STATUS_ARCH_MISMATCH,
            CUBLAS_STATUS_MAPPING_ERROR,
            CUBLAS_STATUS_EXECUTION_FAILED,
            CUBLAS_STATUS_INTERNAL_ERROR,
            CUBLAS_STATUS_NOT_SUPPORTED,
            CUBLAS_STATUS_LICENSE_ERROR,
        ]
    };

    /// `CUBLAS_STATUS_NOT_SUPPORTED`, for a missing library or entry point.
    const MISSING: u32 = cublasStatus_t::CUBLAS_STATUS_NOT_SUPPORTED as u32;

    lib_fns! {
        lib, MISSING;
        fn cublasAsumEx(handle: cublasHandle_t, n: ::core::ffi::c_int, x: *const ::core::ffi::c_void, x_type: cudaDataType, incx: ::core::ffi::c_int, result: *mut ::core::ffi::c_void, result_type: cudaDataType, executiontype: cudaDataType);
        fn cublasAxpyEx(handle: cublasHandle_t, n: ::core::ffi::c_int, alpha: *const ::core::ffi::c_void, alpha_type: cudaDataType, x: *const ::core::ffi::c_void, x_type: cudaDataType, incx: ::core::ffi::c_int, y: *mut ::core::ffi::c_void, y_type: cudaDataType, incy: ::core::ffi::c_int, executiontype: cudaDataType);
        fn cublasCopyEx(handle: cublasHandle_t, n: ::core::ffi::c_int, x: *const ::core::ffi::c_void, x_type: cudaDataType, incx: ::core::ffi::c_int, y: *mut ::core::ffi::c_void, y_type: cudaDataType, incy: ::core::ffi::c_int);
        fn cublasCreate_v2(handle: *mut cublasHandle_t);
        fn cublasDestroy_v2(handle: cublasHandle_t);
        fn cublasDgeam(handle: cublasHandle_t, transa: cublasOperation_t, transb: cublasOperation_t, m: ::core::ffi::c_int, n: ::core::ffi::c_int, alpha: *const f64, a: *const f64, lda: ::core::ffi::c_int, beta: *const f64, b: *const f64, ldb: ::core::ffi::c_int, c: *mut f64, ldc: ::core::ffi::c_int);
        fn cublasDgemv_v2(handle: cublasHandle_t, trans: cublasOperation_t, m: ::core::ffi::c_int, n: ::core::ffi::c_int, alpha: *const f64, a: *const f64, lda: ::core::ffi::c_int, x: *const f64, incx: ::core::ffi::c_int, beta: *const f64, y: *mut f64, incy: ::core::ffi::c_int);
        fn cublasDger_v2(handle: cublasHandle_t, m: ::core::ffi::c_int, n: ::core::ffi::c_int, alpha: *const f64, x: *const f64, incx: ::core::ffi::c_int, y: *const f64, incy: ::core::ffi::c_int, a: *mut f64, lda: ::core::ffi::c_int);
        fn cublasDgetrfBatched(handle: cublasHandle_t, n: ::core::ffi::c_int, a: *const *mut f64, lda: ::core::ffi::c_int, p: *mut ::core::ffi::c_int, info: *mut ::core::ffi::c_int, batch_size: ::core::ffi::c_int);
        fn cublasDgetrsBatched(handle: cublasHandle_t, trans: cublasOperation_t, n: ::core::ffi::c_int, nrhs: ::core::ffi::c_int, aarray: *const *const f64, lda: ::core::ffi::c_int, dev_ipiv: *const ::core::ffi::c_int, barray: *const *mut f64, ldb: ::core::ffi::c_int, info: *mut ::core::ffi::c_int, batch_size: ::core::ffi::c_int);
        fn cublasDotEx(handle: cublasHandle_t, n: ::core::ffi::c_int, x: *const ::core::ffi::c_void, x_type: cudaDataType, incx: ::core::ffi::c_int, y: *const ::core::ffi::c_void, y_type: cudaDataType, incy: ::core::ffi::c_int, result: *mut ::core::ffi::c_void, result_type: cudaDataType, execution_type: cudaDataType);
        fn cublasDotcEx(handle: cublasHandle_t, n: ::core::ffi::c_int, x: *const ::core::ffi::c_void, x_type: cudaDataType, incx: ::core::ffi::c_int, y: *const ::core::ffi::c_void, y_type: cudaDataType, incy: ::core::ffi::c_int, result: *mut ::core::ffi::c_void, result_type: cudaDataType, execution_type: cudaDataType);
        fn cublasDsymm_v2(handle: cublasHandle_t, side: cublasSideMode_t, uplo: cublasFillMode_t, m: ::core::ffi::c_int, n: ::core::ffi::c_int, alpha: *const f64, a: *const f64, lda: ::core::ffi::c_int, b: *const f64, ldb: ::core::ffi::c_int, beta: *const f64, c: *mut f64, ldc: ::core::ffi::c_int);
        fn cublasDsymv_v2(handle: cublasHandle_t, uplo: cublasFillMode_t, n: ::core::ffi::c_int, alpha: *const f64, a: *const f64, lda: ::core::ffi::c_int, x: *const f64, incx: ::core::ffi::c_int, beta: *const f64, y: *mut f64, incy: ::core::ffi::c_int);
        fn cublasDsyrk_v2(handle: cublasHandle_t, uplo: cublasFillMode_t, trans: cublasOperation_t, n: ::core::ffi::c_int, k: ::core::ffi::c_int, alpha: *const f64, a: *const f64, lda: ::core::ffi::c_int, beta: *const f64, c: *mut f64, ldc: ::core::ffi::c_int);
        fn cublasDtrsm_v2(handle: cublasHandle_t, side: cublasSideMode_t, uplo: cublasFillMode_t, trans: cublasOperation_t, diag: cublasDiagType_t, m: ::core::ffi::c_int, n: ::core::ffi::c_int, alpha: *const f64, a: *const f64, lda: ::core::ffi::c_int, b: *mut f64, ldb: ::core::ffi::c_int);
        fn cublasDtrsv_v2(handle: cublasHandle_t, uplo: cublasFillMode_t, trans: cublasOperation_t, diag: cublasDiagType_t, n: ::core::ffi::c_int, a: *const f64, lda: ::core::ffi::c_int, x: *mut f64, incx: ::core::ffi::c_int);
        fn cublasGemmBatchedEx(handle: cublasHandle_t, transa: cublasOperation_t, transb: cublasOperation_t, m: ::core::ffi::c_int, n: ::core::ffi::c_int, k: ::core::ffi::c_int, alpha: *const ::core::ffi::c_void, aarray: *const *const ::core::ffi::c_void, atype: cudaDataType, lda: ::core::ffi::c_int, barray: *const *const ::core::ffi::c_void, btype: cudaDataType, ldb: ::core::ffi::c_int, beta: *const ::core::ffi::c_void, carray: *const *mut ::core::ffi::c_void, ctype: cudaDataType, ldc: ::core::ffi::c_int, batch_count: ::core::ffi::c_int, compute_type: cublasComputeType_t, algo: cublasGemmAlgo_t);
        fn cublasGemmEx(handle: cublasHandle_t, transa: cublasOperation_t, transb: cublasOperation_t, m: ::core::ffi::c_int, n: ::core::ffi::c_int, k: ::core::ffi::c_int, alpha: *const ::core::ffi::c_void, a: *const ::core::ffi::c_void, atype: cudaDataType, lda: ::core::ffi::c_int, b: *const ::core::ffi::c_void, btype: cudaDataType, ldb: ::core::ffi::c_int, beta: *const ::core::ffi::c_void, c: *mut ::core::ffi::c_void, ctype: cudaDataType, ldc: ::core::ffi::c_int, compute_type: cublasComputeType_t, algo: cublasGemmAlgo_t);
        fn cublasGemmStridedBatchedEx(handle: cublasHandle_t, transa: cublasOperation_t, transb: cublasOperation_t, m: ::core::ffi::c_int, n: ::core::ffi::c_int, k: ::core::ffi::c_int, alpha: *const ::core::ffi::c_void, a: *const ::core::ffi::c_void, atype: cudaDataType, lda: ::core::ffi::c_int, stride_a: ::core::ffi::c_longlong, b: *const ::core::ffi::c_void, btype: cudaDataType, ldb: ::core::ffi::c_int, stride_b: ::core::ffi::c_longlong, beta: *const ::core::ffi::c_void, c: *mut ::core::ffi::c_void, ctype: cudaDataType, ldc: ::core::ffi::c_int, stride_c: ::core::ffi::c_longlong, batch_count: ::core::ffi::c_int, compute_type: cublasComputeType_t, algo: cublasGemmAlgo_t);
        fn cublasIamaxEx(handle: cublasHandle_t, n: ::core::ffi::c_int, x: *const ::core::ffi::c_void, x_type: cudaDataType, incx: ::core::ffi::c_int, result: *mut ::core::ffi::c_int);
        fn cublasIaminEx(handle: cublasHandle_t, n: ::core::ffi::c_int, x: *const ::core::ffi::c_void, x_type: cudaDataType, incx: ::core::ffi::c_int, result: *mut ::core::ffi::c_int);
        fn cublasNrm2Ex(handle: cublasHandle_t, n: ::core::ffi::c_int, x: *const ::core::ffi::c_void, x_type: cudaDataType, incx: ::core::ffi::c_int, result: *mut ::core::ffi::c_void, result_type: cudaDataType, execution_type: cudaDataType);
        fn cublasRotEx(handle: cublasHandle_t, n: ::core::ffi::c_int, x: *mut ::core::ffi::c_void, x_type: cudaDataType, incx: ::core::ffi::c_int, y: *mut ::core::ffi::c_void, y_type: cudaDataType, incy: ::core::ffi::c_int, c: *const ::core::ffi::c_void, s: *const ::core::ffi::c_void, cs_type: cudaDataType, executiontype: cudaDataType);
        fn cublasScalEx(handle: cublasHandle_t, n: ::core::ffi::c_int, alpha: *const ::core::ffi::c_void, alpha_type: cudaDataType, x: *mut ::core::ffi::c_void, x_type: cudaDataType, incx: ::core::ffi::c_int, execution_type: cudaDataType);
        fn cublasSetMathMode(handle: cublasHandle_t, mode: cublasMath_t);
        fn cublasSetPointerMode_v2(handle: cublasHandle_t, mode: cublasPointerMode_t);
        fn cublasSetStream_v2(handle: cublasHandle_t, stream_id: cudaStream_t);
        fn cublasSgeam(handle: cublasHandle_t, transa: cublasOperation_t, transb: cublasOperation_t, m: ::core::ffi::c_int, n: ::core::ffi::c_int, alpha: *const f32, a: *const f32, lda: ::core::ffi::c_int, beta: *const f32, b: *const f32, ldb: ::core::ffi::c_int, c: *mut f32, ldc: ::core::ffi::c_int);
        fn cublasSgemv_v2(handle: cublasHandle_t, trans: cublasOperation_t, m: ::core::ffi::c_int, n: ::core::ffi::c_int, alpha: *const f32, a: *const f32, lda: ::core::ffi::c_int, x: *const f32, incx: ::core::ffi::c_int, beta: *const f32, y: *mut f32, incy: ::core::ffi::c_int);
        fn cublasSger_v2(handle: cublasHandle_t, m: ::core::ffi::c_int, n: ::core::ffi::c_int, alpha: *const f32, x: *const f32, incx: ::core::ffi::c_int, y: *const f32, incy: ::core::ffi::c_int, a: *mut f32, lda: ::core::ffi::c_int);
        fn cublasSgetrfBatched(handle: cublasHandle_t, n: ::core::ffi::c_int, a: *const *mut f32, lda: ::core::ffi::c_int, p: *mut ::core::ffi::c_int, info: *mut ::core::ffi::c_int, batch_size: ::core::ffi::c_int);
        fn cublasSgetrsBatched(handle: cublasHandle_t, trans: cublasOperation_t, n: ::core::ffi::c_int, nrhs: ::core::ffi::c_int, aarray: *const *const f32, lda: ::core::ffi::c_int, dev_ipiv: *const ::core::ffi::c_int, barray: *const *mut f32, ldb: ::core::ffi::c_int, info: *mut ::core::ffi::c_int, batch_size: ::core::ffi::c_int);
        fn cublasSsymm_v2(handle: cublasHandle_t, side: cublasSideMode_t, uplo: cublasFillMode_t, m: ::core::ffi::c_int, n: ::core::ffi::c_int, alpha: *const f32, a: *const f32, lda: ::core::ffi::c_int, b: *const f32, ldb: ::core::ffi::c_int, beta: *const f32, c: *mut f32, ldc: ::core::ffi::c_int);
        fn cublasSsymv_v2(handle: cublasHandle_t, uplo: cublasFillMode_t, n: ::core::ffi::c_int, alpha: *const f32, a: *const f32, lda: ::core::ffi::c_int, x: *const f32, incx: ::core::ffi::c_int, beta: *const f32, y: *mut f32, incy: ::core::ffi::c_int);
        fn cublasSsyrk_v2(handle: cublasHandle_t, uplo: cublasFillMode_t, trans: cublasOperation_t, n: ::core::ffi::c_int, k: ::core::ffi::c_int, alpha: *const f32, a: *const f32, lda: ::core::ffi::c_int, beta: *const f32, c: *mut f32, ldc: ::core::ffi::c_int);
        fn cublasStrsm_v2(handle: cublasHandle_t, side: cublasSideMode_t, uplo: cublasFillMode_t, trans: cublasOperation_t, diag: cublasDiagType_t, m: ::core::ffi::c_int, n: ::core::ffi::c_int, alpha: *const f32, a: *const f32, lda: ::core::ffi::c_int, b: *mut f32, ldb: ::core::ffi::c_int);
        fn cublasStrsv_v2(handle: cublasHandle_t, uplo: cublasFillMode_t, trans: cublasOperation_t, diag: cublasDiagType_t, n: ::core::ffi::c_int, a: *const f32, lda: ::core::ffi::c_int, x: *mut f32, incx: ::core::ffi::c_int);
        fn cublasSwapEx(handle: cublasHandle_t, n: ::core::ffi::c_int, x: *mut ::core::ffi::c_void, x_type: cudaDataType, incx: ::core::ffi::c_int, y: *mut ::core::ffi::c_void, y_type: cudaDataType, incy: ::core::ffi::c_int);
    }
}

/// cuRAND.
pub mod curand {
    use std::sync::OnceLock;

    use cudarc::curand::sys::*;
    use libloading::Library;

    /// libcurand, loaded on first use (`None` when it cannot be).
    fn lib() -> Option<&'static Library> {
        static LIB: OnceLock<Option<Library>> = OnceLock::new();
        LIB.get_or_init(|| crate::executor::cuda::lib_ffi::open("curand"))
            .as_ref()
    }

    /// Whether libcurand is loaded (loading it on the first call).
    pub fn present() -> bool {
        lib().is_some()
    }

    /// A raw cuRAND status as a `curandStatus_t`: the status itself where the bindings know
    /// it, `CURAND_STATUS_INTERNAL_ERROR` (logged once per value) for one a newer cuRAND
    /// added.
    pub fn status(code: u32) -> curandStatus_t {
        if let Some(&s) = ALL_STATUSES.iter().find(|&&s| s as u32 == code) {
            return s;
        }
        crate::executor::cuda::lib_ffi::unknown("cuRAND", code, "CURAND_STATUS_INTERNAL_ERROR");
        curandStatus_t::CURAND_STATUS_INTERNAL_ERROR
    }

    /// Every `curandStatus_t` of the CUDA 13.0 bindings.
    pub const ALL_STATUSES: &[curandStatus_t] = {
        use curandStatus_t::*;
        &[
            CURAND_STATUS_SUCCESS,
            CURAND_STATUS_VERSION_MISMATCH,
            CURAND_STATUS_NOT_INITIALIZED,
            CURAND_STATUS_ALLOCATION_FAILED,
            CURAND_STATUS_TYPE_ERROR,
            CURAND_STATUS_OUT_OF_RANGE,
            CURAND_STATUS_LENGTH_NOT_MULTIPLE,
            CURAND_STATUS_DOUBLE_PRECISION_REQUIRED,
            CURAND_STATUS_LAUNCH_FAILURE,
            CURAND_STATUS_PREEXISTING_FAILURE,
            CURAND_STATUS_INITIALIZATION_FAILED,
            CURAND_STATUS_ARCH_MISMATCH,
            CURAND_STATUS_INTERNAL_ERROR,
        ]
    };

    /// `CURAND_STATUS_INITIALIZATION_FAILED`, for a missing library or entry point.
    const MISSING: u32 = curandStatus_t::CURAND_STATUS_INITIALIZATION_FAILED as u32;

    lib_fns! {
        lib, MISSING;
        fn curandCreateGenerator(generator: *mut curandGenerator_t, rng_type: curandRngType_t);
        fn curandCreateGeneratorHost(generator: *mut curandGenerator_t, rng_type: curandRngType_t);
        fn curandDestroyGenerator(generator: curandGenerator_t);
        fn curandGenerate(generator: curandGenerator_t, output_ptr: *mut ::core::ffi::c_uint, num: usize);
        fn curandGenerateLogNormal(generator: curandGenerator_t, output_ptr: *mut f32, n: usize, mean: f32, stddev: f32);
        fn curandGenerateLogNormalDouble(generator: curandGenerator_t, output_ptr: *mut f64, n: usize, mean: f64, stddev: f64);
        fn curandGenerateLongLong(generator: curandGenerator_t, output_ptr: *mut ::core::ffi::c_ulonglong, num: usize);
        fn curandGenerateNormal(generator: curandGenerator_t, output_ptr: *mut f32, n: usize, mean: f32, stddev: f32);
        fn curandGenerateNormalDouble(generator: curandGenerator_t, output_ptr: *mut f64, n: usize, mean: f64, stddev: f64);
        fn curandGeneratePoisson(generator: curandGenerator_t, output_ptr: *mut ::core::ffi::c_uint, n: usize, lambda: f64);
        fn curandGenerateUniform(generator: curandGenerator_t, output_ptr: *mut f32, num: usize);
        fn curandGenerateUniformDouble(generator: curandGenerator_t, output_ptr: *mut f64, num: usize);
        fn curandSetGeneratorOffset(generator: curandGenerator_t, offset: ::core::ffi::c_ulonglong);
        fn curandSetGeneratorOrdering(generator: curandGenerator_t, order: curandOrdering_t);
        fn curandSetPseudoRandomGeneratorSeed(generator: curandGenerator_t, seed: ::core::ffi::c_ulonglong);
        fn curandSetQuasiRandomGeneratorDimensions(generator: curandGenerator_t, num_dimensions: ::core::ffi::c_uint);
        fn curandSetStream(generator: curandGenerator_t, stream: cudaStream_t);
    }
}

#[cfg(test)]
mod tests {
    use cudarc::cublas::sys::cublasStatus_t;
    use cudarc::curand::sys::curandStatus_t;

    use super::*;

    /// Raw statuses become enums without ever holding a value the enum lacks.
    #[test]
    fn raw_statuses_are_checked_before_they_become_enums() {
        for &s in cublas::ALL_STATUSES {
            assert_eq!(cublas::status(s as u32), s);
        }
        for &s in curand::ALL_STATUSES {
            assert_eq!(curand::status(s as u32), s);
        }
        assert_eq!(cublas::ALL_STATUSES.len(), 10);
        assert_eq!(curand::ALL_STATUSES.len(), 13);
        // Statuses a newer library may add, and nonsense.
        for code in [2, 12, 17, 1000, u32::MAX] {
            assert_eq!(
                cublas::status(code),
                cublasStatus_t::CUBLAS_STATUS_INTERNAL_ERROR
            );
        }
        for code in [1, 107, 205, 998, u32::MAX] {
            assert_eq!(
                curand::status(code),
                curandStatus_t::CURAND_STATUS_INTERNAL_ERROR
            );
        }
    }

    /// A missing library or entry point is a status, not a panic.
    #[test]
    fn a_missing_library_or_entry_point_is_a_status() {
        type F = unsafe extern "C" fn();
        assert!(open("vcuda_no_such_library").is_none());
        // SAFETY: nothing is called through what is looked up.
        unsafe {
            assert!(entry::<F>(None, "cublasCreate_v2\0").is_none());
            let libc = Library::new("libc.so.6").unwrap();
            assert!(entry::<F>(Some(&libc), "cublasCreate_v2\0").is_none());
            assert!(entry::<F>(Some(&libc), "getpid\0").is_some());
        }
        // Where the library is absent (as without a GPU), the entry points answer the
        // status the executor gives for a missing library.
        if !cublas::present() {
            let mut h = std::ptr::null_mut();
            // SAFETY: `h` is a valid out pointer (and nothing is called).
            let s = unsafe { cublas::cublasCreate_v2(&mut h) };
            assert_eq!(s, cublasStatus_t::CUBLAS_STATUS_NOT_SUPPORTED as u32);
        }
        if !curand::present() {
            let mut g = std::ptr::null_mut();
            let t = cudarc::curand::sys::curandRngType_t::CURAND_RNG_PSEUDO_DEFAULT;
            // SAFETY: `g` is a valid out pointer (and nothing is called).
            let s = unsafe { curand::curandCreateGenerator(&mut g, t) };
            assert_eq!(
                s,
                curandStatus_t::CURAND_STATUS_INITIALIZATION_FAILED as u32
            );
        }
    }
}
