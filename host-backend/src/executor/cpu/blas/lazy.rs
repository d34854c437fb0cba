// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The CBLAS and LAPACK routines the CPU cuBLAS calls, loaded from OpenBLAS on first use.
//!
//! Linking OpenBLAS would load it, with libgfortran, and run its start-up (CPU detection,
//! a thread pool) in every backend process, about 2 ms before `main` even where no program
//! uses cuBLAS, and would make a GPU host install it for nothing. Instead the first cuBLAS
//! handle loads it ([`available`]); without it, `cublasCreate` fails with
//! `CUBLAS_STATUS_NOT_INITIALIZED` and the backend says what to install.
//!
//! Each routine here has the name and C signature of the standard one (as `cblas-sys` and
//! `lapack-sys` declare them) and calls it through the loaded table.

#![allow(clippy::too_many_arguments)]

use std::ffi::{c_char, c_double, c_float, c_int};
use std::sync::OnceLock;

use cblas_sys::{
    CBLAS_DIAG, CBLAS_INDEX, CBLAS_LAYOUT, CBLAS_SIDE, CBLAS_TRANSPOSE, CBLAS_UPLO,
    c_double_complex, c_float_complex,
};
use log::{debug, warn};

/// Single-precision complex, as CBLAS and cuBLAS lay it out.
pub type C32 = [f32; 2];
/// Double-precision complex.
pub type C64 = [f64; 2];

/// The names OpenBLAS is installed under (Debian: `libopenblas0`).
const LIBRARIES: [&str; 2] = ["libopenblas.so.0", "libopenblas.so"];

macro_rules! routines {
    ($(fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?;)*) => {
        /// The loaded routines.
        #[allow(non_snake_case)]
        struct Table {
            $($name: unsafe extern "C" fn($($ty),*) $(-> $ret)?,)*
        }

        impl Table {
            fn load(lib: &libloading::Library) -> Result<Self, libloading::Error> {
                Ok(Self {
                    $(
                        // SAFETY: the symbol is the standard CBLAS/LAPACK routine of this
                        // name, whose C signature is the one declared here.
                        $name: *unsafe { lib.get(concat!(stringify!($name), "\0").as_bytes())? },
                    )*
                })
            }
        }

        $(
            /// The standard routine of this name. Only called once [`available`] said yes
            /// (a cuBLAS handle exists); before that it does nothing and returns zero.
            ///
            /// # Safety
            ///
            /// As for the C routine: every pointer must cover what it describes.
            pub unsafe fn $name($($arg: $ty),*) $(-> $ret)? {
                match table() {
                    // SAFETY: the caller upholds the routine's contract.
                    Some(t) => unsafe { (t.$name)($($arg),*) },
                    None => Default::default(),
                }
            }
        )*
    };
}

routines! {
    fn cblas_caxpy(n: c_int, alpha: *const c_float_complex, x: *const c_float_complex, incx: c_int, y: *mut c_float_complex, incy: c_int);
    fn cblas_ccopy(n: c_int, x: *const c_float_complex, incx: c_int, y: *mut c_float_complex, incy: c_int);
    fn cblas_cdotc_sub(n: c_int, x: *const c_float_complex, incx: c_int, y: *const c_float_complex, incy: c_int, dotc: *mut c_float_complex);
    fn cblas_cdotu_sub(n: c_int, x: *const c_float_complex, incx: c_int, y: *const c_float_complex, incy: c_int, dotu: *mut c_float_complex);
    fn cblas_cgemm(layout: CBLAS_LAYOUT, transa: CBLAS_TRANSPOSE, transb: CBLAS_TRANSPOSE, m: c_int, n: c_int, k: c_int, alpha: *const c_float_complex, a: *const c_float_complex, lda: c_int, b: *const c_float_complex, ldb: c_int, beta: *const c_float_complex, c: *mut c_float_complex, ldc: c_int);
    fn cblas_cgemv(layout: CBLAS_LAYOUT, transa: CBLAS_TRANSPOSE, m: c_int, n: c_int, alpha: *const c_float_complex, a: *const c_float_complex, lda: c_int, x: *const c_float_complex, incx: c_int, beta: *const c_float_complex, y: *mut c_float_complex, incy: c_int);
    fn cblas_cgerc(layout: CBLAS_LAYOUT, m: c_int, n: c_int, alpha: *const c_float_complex, x: *const c_float_complex, incx: c_int, y: *const c_float_complex, incy: c_int, a: *mut c_float_complex, lda: c_int);
    fn cblas_cgeru(layout: CBLAS_LAYOUT, m: c_int, n: c_int, alpha: *const c_float_complex, x: *const c_float_complex, incx: c_int, y: *const c_float_complex, incy: c_int, a: *mut c_float_complex, lda: c_int);
    fn cblas_cscal(n: c_int, alpha: *const c_float_complex, x: *mut c_float_complex, incx: c_int);
    fn cblas_csscal(n: c_int, alpha: c_float, x: *mut c_float_complex, incx: c_int);
    fn cblas_cswap(n: c_int, x: *mut c_float_complex, incx: c_int, y: *mut c_float_complex, incy: c_int);
    fn cblas_csymm(layout: CBLAS_LAYOUT, side: CBLAS_SIDE, uplo: CBLAS_UPLO, m: c_int, n: c_int, alpha: *const c_float_complex, a: *const c_float_complex, lda: c_int, b: *const c_float_complex, ldb: c_int, beta: *const c_float_complex, c: *mut c_float_complex, ldc: c_int);
    fn cblas_csyrk(layout: CBLAS_LAYOUT, uplo: CBLAS_UPLO, trans: CBLAS_TRANSPOSE, n: c_int, k: c_int, alpha: *const c_float_complex, a: *const c_float_complex, lda: c_int, beta: *const c_float_complex, c: *mut c_float_complex, ldc: c_int);
    fn cblas_ctrsm(layout: CBLAS_LAYOUT, side: CBLAS_SIDE, uplo: CBLAS_UPLO, transa: CBLAS_TRANSPOSE, diag: CBLAS_DIAG, m: c_int, n: c_int, alpha: *const c_float_complex, a: *const c_float_complex, lda: c_int, b: *mut c_float_complex, ldb: c_int);
    fn cblas_ctrsv(layout: CBLAS_LAYOUT, uplo: CBLAS_UPLO, transa: CBLAS_TRANSPOSE, diag: CBLAS_DIAG, n: c_int, a: *const c_float_complex, lda: c_int, x: *mut c_float_complex, incx: c_int);
    fn cblas_dasum(n: c_int, x: *const c_double, incx: c_int) -> c_double;
    fn cblas_daxpy(n: c_int, alpha: c_double, x: *const c_double, incx: c_int, y: *mut c_double, incy: c_int);
    fn cblas_dcopy(n: c_int, x: *const c_double, incx: c_int, y: *mut c_double, incy: c_int);
    fn cblas_ddot(n: c_int, x: *const c_double, incx: c_int, y: *const c_double, incy: c_int) -> c_double;
    fn cblas_dgemm(layout: CBLAS_LAYOUT, transa: CBLAS_TRANSPOSE, transb: CBLAS_TRANSPOSE, m: c_int, n: c_int, k: c_int, alpha: c_double, a: *const c_double, lda: c_int, b: *const c_double, ldb: c_int, beta: c_double, c: *mut c_double, ldc: c_int);
    fn cblas_dgemv(layout: CBLAS_LAYOUT, transa: CBLAS_TRANSPOSE, m: c_int, n: c_int, alpha: c_double, a: *const c_double, lda: c_int, x: *const c_double, incx: c_int, beta: c_double, y: *mut c_double, incy: c_int);
    fn cblas_dger(layout: CBLAS_LAYOUT, m: c_int, n: c_int, alpha: c_double, x: *const c_double, incx: c_int, y: *const c_double, incy: c_int, a: *mut c_double, lda: c_int);
    fn cblas_dnrm2(n: c_int, x: *const c_double, incx: c_int) -> c_double;
    fn cblas_drot(n: c_int, x: *mut c_double, incx: c_int, y: *mut c_double, incy: c_int, c: c_double, s: c_double);
    fn cblas_dscal(n: c_int, alpha: c_double, x: *mut c_double, incx: c_int);
    fn cblas_dswap(n: c_int, x: *mut c_double, incx: c_int, y: *mut c_double, incy: c_int);
    fn cblas_dsymm(layout: CBLAS_LAYOUT, side: CBLAS_SIDE, uplo: CBLAS_UPLO, m: c_int, n: c_int, alpha: c_double, a: *const c_double, lda: c_int, b: *const c_double, ldb: c_int, beta: c_double, c: *mut c_double, ldc: c_int);
    fn cblas_dsymv(layout: CBLAS_LAYOUT, uplo: CBLAS_UPLO, n: c_int, alpha: c_double, a: *const c_double, lda: c_int, x: *const c_double, incx: c_int, beta: c_double, y: *mut c_double, incy: c_int);
    fn cblas_dsyrk(layout: CBLAS_LAYOUT, uplo: CBLAS_UPLO, trans: CBLAS_TRANSPOSE, n: c_int, k: c_int, alpha: c_double, a: *const c_double, lda: c_int, beta: c_double, c: *mut c_double, ldc: c_int);
    fn cblas_dtrsm(layout: CBLAS_LAYOUT, side: CBLAS_SIDE, uplo: CBLAS_UPLO, transa: CBLAS_TRANSPOSE, diag: CBLAS_DIAG, m: c_int, n: c_int, alpha: c_double, a: *const c_double, lda: c_int, b: *mut c_double, ldb: c_int);
    fn cblas_dtrsv(layout: CBLAS_LAYOUT, uplo: CBLAS_UPLO, transa: CBLAS_TRANSPOSE, diag: CBLAS_DIAG, n: c_int, a: *const c_double, lda: c_int, x: *mut c_double, incx: c_int);
    fn cblas_dzasum(n: c_int, x: *const c_double_complex, incx: c_int) -> c_double;
    fn cblas_dznrm2(n: c_int, x: *const c_double_complex, incx: c_int) -> c_double;
    fn cblas_icamax(n: c_int, x: *const c_float_complex, incx: c_int) -> CBLAS_INDEX;
    fn cblas_idamax(n: c_int, x: *const c_double, incx: c_int) -> CBLAS_INDEX;
    fn cblas_isamax(n: c_int, x: *const c_float, incx: c_int) -> CBLAS_INDEX;
    fn cblas_izamax(n: c_int, x: *const c_double_complex, incx: c_int) -> CBLAS_INDEX;
    fn cblas_sasum(n: c_int, x: *const c_float, incx: c_int) -> c_float;
    fn cblas_saxpy(n: c_int, alpha: c_float, x: *const c_float, incx: c_int, y: *mut c_float, incy: c_int);
    fn cblas_scasum(n: c_int, x: *const c_float_complex, incx: c_int) -> c_float;
    fn cblas_scnrm2(n: c_int, x: *const c_float_complex, incx: c_int) -> c_float;
    fn cblas_scopy(n: c_int, x: *const c_float, incx: c_int, y: *mut c_float, incy: c_int);
    fn cblas_sdot(n: c_int, x: *const c_float, incx: c_int, y: *const c_float, incy: c_int) -> c_float;
    fn cblas_sgemm(layout: CBLAS_LAYOUT, transa: CBLAS_TRANSPOSE, transb: CBLAS_TRANSPOSE, m: c_int, n: c_int, k: c_int, alpha: c_float, a: *const c_float, lda: c_int, b: *const c_float, ldb: c_int, beta: c_float, c: *mut c_float, ldc: c_int);
    fn cblas_sgemv(layout: CBLAS_LAYOUT, transa: CBLAS_TRANSPOSE, m: c_int, n: c_int, alpha: c_float, a: *const c_float, lda: c_int, x: *const c_float, incx: c_int, beta: c_float, y: *mut c_float, incy: c_int);
    fn cblas_sger(layout: CBLAS_LAYOUT, m: c_int, n: c_int, alpha: c_float, x: *const c_float, incx: c_int, y: *const c_float, incy: c_int, a: *mut c_float, lda: c_int);
    fn cblas_snrm2(n: c_int, x: *const c_float, incx: c_int) -> c_float;
    fn cblas_srot(n: c_int, x: *mut c_float, incx: c_int, y: *mut c_float, incy: c_int, c: c_float, s: c_float);
    fn cblas_sscal(n: c_int, alpha: c_float, x: *mut c_float, incx: c_int);
    fn cblas_sswap(n: c_int, x: *mut c_float, incx: c_int, y: *mut c_float, incy: c_int);
    fn cblas_ssymm(layout: CBLAS_LAYOUT, side: CBLAS_SIDE, uplo: CBLAS_UPLO, m: c_int, n: c_int, alpha: c_float, a: *const c_float, lda: c_int, b: *const c_float, ldb: c_int, beta: c_float, c: *mut c_float, ldc: c_int);
    fn cblas_ssymv(layout: CBLAS_LAYOUT, uplo: CBLAS_UPLO, n: c_int, alpha: c_float, a: *const c_float, lda: c_int, x: *const c_float, incx: c_int, beta: c_float, y: *mut c_float, incy: c_int);
    fn cblas_ssyrk(layout: CBLAS_LAYOUT, uplo: CBLAS_UPLO, trans: CBLAS_TRANSPOSE, n: c_int, k: c_int, alpha: c_float, a: *const c_float, lda: c_int, beta: c_float, c: *mut c_float, ldc: c_int);
    fn cblas_strsm(layout: CBLAS_LAYOUT, side: CBLAS_SIDE, uplo: CBLAS_UPLO, transa: CBLAS_TRANSPOSE, diag: CBLAS_DIAG, m: c_int, n: c_int, alpha: c_float, a: *const c_float, lda: c_int, b: *mut c_float, ldb: c_int);
    fn cblas_strsv(layout: CBLAS_LAYOUT, uplo: CBLAS_UPLO, transa: CBLAS_TRANSPOSE, diag: CBLAS_DIAG, n: c_int, a: *const c_float, lda: c_int, x: *mut c_float, incx: c_int);
    fn cblas_zaxpy(n: c_int, alpha: *const c_double_complex, x: *const c_double_complex, incx: c_int, y: *mut c_double_complex, incy: c_int);
    fn cblas_zcopy(n: c_int, x: *const c_double_complex, incx: c_int, y: *mut c_double_complex, incy: c_int);
    fn cblas_zdotc_sub(n: c_int, x: *const c_double_complex, incx: c_int, y: *const c_double_complex, incy: c_int, dotc: *mut c_double_complex);
    fn cblas_zdotu_sub(n: c_int, x: *const c_double_complex, incx: c_int, y: *const c_double_complex, incy: c_int, dotu: *mut c_double_complex);
    fn cblas_zdscal(n: c_int, alpha: c_double, x: *mut c_double_complex, incx: c_int);
    fn cblas_zgemm(layout: CBLAS_LAYOUT, transa: CBLAS_TRANSPOSE, transb: CBLAS_TRANSPOSE, m: c_int, n: c_int, k: c_int, alpha: *const c_double_complex, a: *const c_double_complex, lda: c_int, b: *const c_double_complex, ldb: c_int, beta: *const c_double_complex, c: *mut c_double_complex, ldc: c_int);
    fn cblas_zgemv(layout: CBLAS_LAYOUT, transa: CBLAS_TRANSPOSE, m: c_int, n: c_int, alpha: *const c_double_complex, a: *const c_double_complex, lda: c_int, x: *const c_double_complex, incx: c_int, beta: *const c_double_complex, y: *mut c_double_complex, incy: c_int);
    fn cblas_zgerc(layout: CBLAS_LAYOUT, m: c_int, n: c_int, alpha: *const c_double_complex, x: *const c_double_complex, incx: c_int, y: *const c_double_complex, incy: c_int, a: *mut c_double_complex, lda: c_int);
    fn cblas_zgeru(layout: CBLAS_LAYOUT, m: c_int, n: c_int, alpha: *const c_double_complex, x: *const c_double_complex, incx: c_int, y: *const c_double_complex, incy: c_int, a: *mut c_double_complex, lda: c_int);
    fn cblas_zscal(n: c_int, alpha: *const c_double_complex, x: *mut c_double_complex, incx: c_int);
    fn cblas_zswap(n: c_int, x: *mut c_double_complex, incx: c_int, y: *mut c_double_complex, incy: c_int);
    fn cblas_zsymm(layout: CBLAS_LAYOUT, side: CBLAS_SIDE, uplo: CBLAS_UPLO, m: c_int, n: c_int, alpha: *const c_double_complex, a: *const c_double_complex, lda: c_int, b: *const c_double_complex, ldb: c_int, beta: *const c_double_complex, c: *mut c_double_complex, ldc: c_int);
    fn cblas_zsyrk(layout: CBLAS_LAYOUT, uplo: CBLAS_UPLO, trans: CBLAS_TRANSPOSE, n: c_int, k: c_int, alpha: *const c_double_complex, a: *const c_double_complex, lda: c_int, beta: *const c_double_complex, c: *mut c_double_complex, ldc: c_int);
    fn cblas_ztrsm(layout: CBLAS_LAYOUT, side: CBLAS_SIDE, uplo: CBLAS_UPLO, transa: CBLAS_TRANSPOSE, diag: CBLAS_DIAG, m: c_int, n: c_int, alpha: *const c_double_complex, a: *const c_double_complex, lda: c_int, b: *mut c_double_complex, ldb: c_int);
    fn cblas_ztrsv(layout: CBLAS_LAYOUT, uplo: CBLAS_UPLO, transa: CBLAS_TRANSPOSE, diag: CBLAS_DIAG, n: c_int, a: *const c_double_complex, lda: c_int, x: *mut c_double_complex, incx: c_int);
    fn sgetrf_(m: *const c_int, n: *const c_int, a: *mut f32, lda: *const c_int, ipiv: *mut c_int, info: *mut c_int);
    fn dgetrf_(m: *const c_int, n: *const c_int, a: *mut f64, lda: *const c_int, ipiv: *mut c_int, info: *mut c_int);
    fn cgetrf_(m: *const c_int, n: *const c_int, a: *mut C32, lda: *const c_int, ipiv: *mut c_int, info: *mut c_int);
    fn zgetrf_(m: *const c_int, n: *const c_int, a: *mut C64, lda: *const c_int, ipiv: *mut c_int, info: *mut c_int);
    fn sgetrs_(trans: *const c_char, n: *const c_int, nrhs: *const c_int, a: *const f32, lda: *const c_int, ipiv: *const c_int, b: *mut f32, ldb: *const c_int, info: *mut c_int);
    fn dgetrs_(trans: *const c_char, n: *const c_int, nrhs: *const c_int, a: *const f64, lda: *const c_int, ipiv: *const c_int, b: *mut f64, ldb: *const c_int, info: *mut c_int);
    fn cgetrs_(trans: *const c_char, n: *const c_int, nrhs: *const c_int, a: *const C32, lda: *const c_int, ipiv: *const c_int, b: *mut C32, ldb: *const c_int, info: *mut c_int);
    fn zgetrs_(trans: *const c_char, n: *const c_int, nrhs: *const c_int, a: *const C64, lda: *const c_int, ipiv: *const c_int, b: *mut C64, ldb: *const c_int, info: *mut c_int);
}

/// The library and its routines, loaded at most once.
fn table() -> Option<&'static Table> {
    static TABLE: OnceLock<Option<(libloading::Library, Table)>> = OnceLock::new();
    TABLE
        .get_or_init(|| {
            let mut why = Vec::new();
            for name in LIBRARIES {
                // SAFETY: OpenBLAS's initialisers (CPU detection, its thread pool) have no
                // preconditions of ours; the library stays loaded for the process.
                let lib = match unsafe { libloading::Library::new(name) } {
                    Ok(l) => l,
                    Err(e) => {
                        why.push(e.to_string());
                        continue;
                    }
                };
                match Table::load(&lib) {
                    Ok(t) => {
                        debug!("CPU cuBLAS: loaded {name}");
                        return Some((lib, t));
                    }
                    Err(e) => why.push(format!("{name}: {e}")),
                }
            }
            warn!(
                "the CPU executor's cuBLAS needs OpenBLAS (Debian: libopenblas0), which did \
                 not load: {}",
                why.join("; ")
            );
            None
        })
        .as_ref()
        .map(|(_, t)| t)
}

/// Whether the routines are there (loads them the first time).
pub fn available() -> bool {
    table().is_some()
}
