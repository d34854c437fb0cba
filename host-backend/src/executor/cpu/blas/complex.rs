// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The complex (`C32`, `C64`) implementations of [`super::elem::Elem`] on CBLAS/LAPACK.

use super::*;

macro_rules! complex_elem {
    ($t:ty, $r:ty, $asum:ident, $nrm2:ident, $dotu:ident, $dotc:ident, $axpy:ident,
     $scal:ident, $rscal:ident, $copy:ident, $swap:ident, $iamax:ident, $gemv:ident,
     $geru:ident, $gerc:ident, $trsv:ident, $gemm:ident, $symm:ident, $syrk:ident,
     $trsm:ident, $getrf:ident, $getrs:ident) => {
        impl Elem for $t {
            const SIZE: u64 = size_of::<$t>() as u64;
            const ALIGN: u64 = size_of::<$t>() as u64;
            const REAL_SIZE: usize = size_of::<$r>();
            const COMPLEX: bool = true;
            fn load(b: &[u8]) -> Self {
                let h = size_of::<$r>();
                [
                    <$r>::from_le_bytes(b[..h].try_into().unwrap_or_default()),
                    <$r>::from_le_bytes(b[h..2 * h].try_into().unwrap_or_default()),
                ]
            }
            fn store(self, b: &mut [u8]) {
                let h = size_of::<$r>();
                b[..h].copy_from_slice(&self[0].to_le_bytes());
                b[h..2 * h].copy_from_slice(&self[1].to_le_bytes());
            }
            fn zero() -> Self {
                [0.0, 0.0]
            }
            fn mul(self, o: Self) -> Self {
                [
                    self[0] * o[0] - self[1] * o[1],
                    self[0] * o[1] + self[1] * o[0],
                ]
            }
            fn add(self, o: Self) -> Self {
                [self[0] + o[0], self[1] + o[1]]
            }
            fn conj(self) -> Self {
                [self[0], -self[1]]
            }
            fn abs1(self) -> f64 {
                f64::from(self[0].abs()) + f64::from(self[1].abs())
            }
            fn real_bytes(v: f64) -> [u8; 16] {
                let mut b = [0; 16];
                b[..size_of::<$r>()].copy_from_slice(&(v as $r).to_le_bytes());
                b
            }
            fn re(self) -> f64 {
                f64::from(self[0])
            }
            common_routines!(
                pointer, $asum, $nrm2, $axpy, $scal, $copy, $swap, $iamax, $gemv, $trsv, $gemm,
                $symm, $syrk, $trsm
            );
            unsafe fn dot(
                n: c_int,
                x: *const Self,
                ix: c_int,
                y: *const Self,
                iy: c_int,
                c: bool,
            ) -> Self {
                let mut out = Self::zero();
                // SAFETY: `Elem`'s contract covers `x` and `y` (extents checked by the caller,
                // no reference alive); `out` is a local.
                unsafe {
                    if c {
                        $dotc(n, x, ix, y, iy, &mut out)
                    } else {
                        $dotu(n, x, ix, y, iy, &mut out)
                    }
                };
                out
            }
            unsafe fn scal_real(n: c_int, a: f64, x: *mut Self, incx: c_int) {
                // SAFETY: the pointers cover what the routine touches (`Elem`'s contract).
                unsafe { $rscal(n, a as $r, x, incx) }
            }
            unsafe fn rot(
                _n: c_int,
                _x: *mut Self,
                _ix: c_int,
                _y: *mut Self,
                _iy: c_int,
                _c: f64,
                _s: f64,
            ) {
            }
            unsafe fn ger(
                m: c_int,
                n: c_int,
                alpha: Self,
                x: *const Self,
                incx: c_int,
                y: *const Self,
                incy: c_int,
                a: *mut Self,
                lda: c_int,
                conj: bool,
            ) {
                // SAFETY: the pointers cover what the routine touches (`Elem`'s contract).
                unsafe {
                    if conj {
                        $gerc(CblasColMajor, m, n, &alpha, x, incx, y, incy, a, lda)
                    } else {
                        $geru(CblasColMajor, m, n, &alpha, x, incx, y, incy, a, lda)
                    }
                }
            }
            unsafe fn symv(
                _u: u32,
                _n: c_int,
                _alpha: Self,
                _a: *const Self,
                _lda: c_int,
                _x: *const Self,
                _incx: c_int,
                _beta: Self,
                _y: *mut Self,
                _incy: c_int,
            ) -> Option<()> {
                // CBLAS has no complex symmetric (only Hermitian) matrix-vector product.
                None
            }
            unsafe fn getrf(
                n: c_int,
                a: *mut Self,
                lda: c_int,
                ipiv: *mut c_int,
                info: *mut c_int,
            ) {
                // SAFETY: `Elem`'s contract covers the matrix and vector pointers (extents
                // checked by the caller, no reference alive); the scalars are locals.
                unsafe { lapack_sys::$getrf(&n, &n, a.cast(), &lda, ipiv, info) }
            }
            unsafe fn getrs(
                t: u8,
                n: c_int,
                nrhs: c_int,
                a: *const Self,
                lda: c_int,
                ipiv: *const c_int,
                b: *mut Self,
                ldb: c_int,
                info: *mut c_int,
            ) {
                let t = t as c_char;
                // SAFETY: the pointers cover what the routine touches (`Elem`'s contract).
                unsafe {
                    lapack_sys::$getrs(&t, &n, &nrhs, a.cast(), &lda, ipiv, b.cast(), &ldb, info)
                }
            }
        }
    };
}

complex_elem!(
    C32,
    f32,
    cblas_scasum,
    cblas_scnrm2,
    cblas_cdotu_sub,
    cblas_cdotc_sub,
    cblas_caxpy,
    cblas_cscal,
    cblas_csscal,
    cblas_ccopy,
    cblas_cswap,
    cblas_icamax,
    cblas_cgemv,
    cblas_cgeru,
    cblas_cgerc,
    cblas_ctrsv,
    cblas_cgemm,
    cblas_csymm,
    cblas_csyrk,
    cblas_ctrsm,
    cgetrf_,
    cgetrs_
);
complex_elem!(
    C64,
    f64,
    cblas_dzasum,
    cblas_dznrm2,
    cblas_zdotu_sub,
    cblas_zdotc_sub,
    cblas_zaxpy,
    cblas_zscal,
    cblas_zdscal,
    cblas_zcopy,
    cblas_zswap,
    cblas_izamax,
    cblas_zgemv,
    cblas_zgeru,
    cblas_zgerc,
    cblas_ztrsv,
    cblas_zgemm,
    cblas_zsymm,
    cblas_zsyrk,
    cblas_ztrsm,
    zgetrf_,
    zgetrs_
);
