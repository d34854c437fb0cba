// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The element types of the CPU cuBLAS and their BLAS routines: the [`Elem`] trait and its
//! real (`f32`, `f64`) implementations on CBLAS/LAPACK.

use super::*;

/// Single-precision complex, as CBLAS and cuBLAS lay it out.
pub(super) type C32 = [f32; 2];
/// Double-precision complex.
pub(super) type C64 = [f64; 2];

/// An element type and its BLAS routines. The routines take raw pointers that the caller
/// has checked to cover everything the routine touches.
pub(super) trait Elem: Copy + PartialEq + 'static {
    const SIZE: u64;
    const ALIGN: u64;
    /// Bytes of the real type of `asum`/`nrm2` results.
    const REAL_SIZE: usize;
    const COMPLEX: bool;
    fn load(b: &[u8]) -> Self;
    fn store(self, b: &mut [u8]);
    fn zero() -> Self;
    fn mul(self, o: Self) -> Self;
    fn add(self, o: Self) -> Self;
    fn conj(self) -> Self;
    /// `|re| + |im|`, cuBLAS's magnitude for `iamax`/`iamin`.
    fn abs1(self) -> f64;
    fn real_bytes(v: f64) -> [u8; 16];
    /// The real part, for a real scalar (`c` of `rot`, `alpha` of `csscal`).
    fn re(self) -> f64;

    unsafe fn asum(n: c_int, x: *const Self, incx: c_int) -> f64;
    unsafe fn nrm2(n: c_int, x: *const Self, incx: c_int) -> f64;
    unsafe fn dot(n: c_int, x: *const Self, ix: c_int, y: *const Self, iy: c_int, c: bool) -> Self;
    unsafe fn axpy(n: c_int, a: Self, x: *const Self, ix: c_int, y: *mut Self, iy: c_int);
    unsafe fn scal(n: c_int, a: Self, x: *mut Self, incx: c_int);
    unsafe fn scal_real(n: c_int, a: f64, x: *mut Self, incx: c_int);
    unsafe fn copy(n: c_int, x: *const Self, ix: c_int, y: *mut Self, iy: c_int);
    unsafe fn swap(n: c_int, x: *mut Self, ix: c_int, y: *mut Self, iy: c_int);
    unsafe fn rot(n: c_int, x: *mut Self, ix: c_int, y: *mut Self, iy: c_int, c: f64, s: f64);
    unsafe fn iamax(n: c_int, x: *const Self, incx: c_int) -> c_int;
    #[allow(clippy::too_many_arguments)]
    unsafe fn gemv(
        t: u32,
        m: c_int,
        n: c_int,
        alpha: Self,
        a: *const Self,
        lda: c_int,
        x: *const Self,
        incx: c_int,
        beta: Self,
        y: *mut Self,
        incy: c_int,
    );
    #[allow(clippy::too_many_arguments)]
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
    );
    /// `None`: not available for this type.
    #[allow(clippy::too_many_arguments)]
    unsafe fn symv(
        u: u32,
        n: c_int,
        alpha: Self,
        a: *const Self,
        lda: c_int,
        x: *const Self,
        incx: c_int,
        beta: Self,
        y: *mut Self,
        incy: c_int,
    ) -> Option<()>;
    #[allow(clippy::too_many_arguments)]
    unsafe fn trsv(
        u: u32,
        t: u32,
        d: u32,
        n: c_int,
        a: *const Self,
        lda: c_int,
        x: *mut Self,
        incx: c_int,
    );
    #[allow(clippy::too_many_arguments)]
    unsafe fn gemm(
        ta: u32,
        tb: u32,
        m: c_int,
        n: c_int,
        k: c_int,
        alpha: Self,
        a: *const Self,
        lda: c_int,
        b: *const Self,
        ldb: c_int,
        beta: Self,
        c: *mut Self,
        ldc: c_int,
    );
    #[allow(clippy::too_many_arguments)]
    unsafe fn symm(
        s: u32,
        u: u32,
        m: c_int,
        n: c_int,
        alpha: Self,
        a: *const Self,
        lda: c_int,
        b: *const Self,
        ldb: c_int,
        beta: Self,
        c: *mut Self,
        ldc: c_int,
    );
    #[allow(clippy::too_many_arguments)]
    unsafe fn syrk(
        u: u32,
        t: u32,
        n: c_int,
        k: c_int,
        alpha: Self,
        a: *const Self,
        lda: c_int,
        beta: Self,
        c: *mut Self,
        ldc: c_int,
    );
    #[allow(clippy::too_many_arguments)]
    unsafe fn trsm(
        s: u32,
        u: u32,
        t: u32,
        d: u32,
        m: c_int,
        n: c_int,
        alpha: Self,
        a: *const Self,
        lda: c_int,
        b: *mut Self,
        ldb: c_int,
    );
    unsafe fn getrf(n: c_int, a: *mut Self, lda: c_int, ipiv: *mut c_int, info: *mut c_int);
    #[allow(clippy::too_many_arguments)]
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
    );
}

/// A CBLAS scalar argument: the real routines take it by value, the complex ones by pointer.
macro_rules! cblas_scalar {
    (value, $v:expr) => {
        $v
    };
    (pointer, $v:expr) => {
        &$v
    };
}

/// The [`Elem`] routines whose real and complex CBLAS bindings differ only in how a scalar
/// is passed (`$pass`: `value` or `pointer`), for one element type.
macro_rules! common_routines {
    ($pass:ident, $asum:ident, $nrm2:ident, $axpy:ident, $scal:ident, $copy:ident, $swap:ident, $iamax:ident, $gemv:ident, $trsv:ident, $gemm:ident, $symm:ident, $syrk:ident, $trsm:ident) => {
        unsafe fn asum(n: c_int, x: *const Self, incx: c_int) -> f64 {
            // SAFETY: the caller checked `x`'s extent.
            f64::from(unsafe { $asum(n, x, incx) })
        }
        unsafe fn nrm2(n: c_int, x: *const Self, incx: c_int) -> f64 {
            // SAFETY: the pointers cover what the routine touches (`Elem`'s contract).
            f64::from(unsafe { $nrm2(n, x, incx) })
        }
        unsafe fn axpy(n: c_int, a: Self, x: *const Self, ix: c_int, y: *mut Self, iy: c_int) {
            // SAFETY: the pointers cover what the routine touches (`Elem`'s contract).
            unsafe { $axpy(n, cblas_scalar!($pass, a), x, ix, y, iy) }
        }
        unsafe fn scal(n: c_int, a: Self, x: *mut Self, incx: c_int) {
            // SAFETY: the pointers cover what the routine touches (`Elem`'s contract).
            unsafe { $scal(n, cblas_scalar!($pass, a), x, incx) }
        }
        unsafe fn copy(n: c_int, x: *const Self, ix: c_int, y: *mut Self, iy: c_int) {
            // SAFETY: the pointers cover what the routine touches (`Elem`'s contract).
            unsafe { $copy(n, x, ix, y, iy) }
        }
        unsafe fn swap(n: c_int, x: *mut Self, ix: c_int, y: *mut Self, iy: c_int) {
            // SAFETY: the pointers cover what the routine touches (`Elem`'s contract).
            unsafe { $swap(n, x, ix, y, iy) }
        }
        unsafe fn iamax(n: c_int, x: *const Self, incx: c_int) -> c_int {
            // SAFETY: the pointers cover what the routine touches (`Elem`'s contract).
            unsafe { $iamax(n, x, incx) }
        }
        unsafe fn gemv(
            t: u32,
            m: c_int,
            n: c_int,
            alpha: Self,
            a: *const Self,
            lda: c_int,
            x: *const Self,
            incx: c_int,
            beta: Self,
            y: *mut Self,
            incy: c_int,
        ) {
            // SAFETY: the pointers cover what the routine touches (`Elem`'s contract).
            unsafe {
                $gemv(
                    CblasColMajor,
                    trans(t),
                    m,
                    n,
                    cblas_scalar!($pass, alpha),
                    a,
                    lda,
                    x,
                    incx,
                    cblas_scalar!($pass, beta),
                    y,
                    incy,
                )
            }
        }
        unsafe fn trsv(
            u: u32,
            t: u32,
            d: u32,
            n: c_int,
            a: *const Self,
            lda: c_int,
            x: *mut Self,
            incx: c_int,
        ) {
            // SAFETY: the pointers cover what the routine touches (`Elem`'s contract).
            unsafe {
                $trsv(
                    CblasColMajor,
                    uplo(u),
                    trans(t),
                    diag(d),
                    n,
                    a,
                    lda,
                    x,
                    incx,
                )
            }
        }
        unsafe fn gemm(
            ta: u32,
            tb: u32,
            m: c_int,
            n: c_int,
            k: c_int,
            alpha: Self,
            a: *const Self,
            lda: c_int,
            b: *const Self,
            ldb: c_int,
            beta: Self,
            c: *mut Self,
            ldc: c_int,
        ) {
            // SAFETY: the pointers cover what the routine touches (`Elem`'s contract).
            unsafe {
                $gemm(
                    CblasColMajor,
                    trans(ta),
                    trans(tb),
                    m,
                    n,
                    k,
                    cblas_scalar!($pass, alpha),
                    a,
                    lda,
                    b,
                    ldb,
                    cblas_scalar!($pass, beta),
                    c,
                    ldc,
                )
            }
        }
        unsafe fn symm(
            s: u32,
            u: u32,
            m: c_int,
            n: c_int,
            alpha: Self,
            a: *const Self,
            lda: c_int,
            b: *const Self,
            ldb: c_int,
            beta: Self,
            c: *mut Self,
            ldc: c_int,
        ) {
            // SAFETY: the pointers cover what the routine touches (`Elem`'s contract).
            unsafe {
                $symm(
                    CblasColMajor,
                    side(s),
                    uplo(u),
                    m,
                    n,
                    cblas_scalar!($pass, alpha),
                    a,
                    lda,
                    b,
                    ldb,
                    cblas_scalar!($pass, beta),
                    c,
                    ldc,
                )
            }
        }
        unsafe fn syrk(
            u: u32,
            t: u32,
            n: c_int,
            k: c_int,
            alpha: Self,
            a: *const Self,
            lda: c_int,
            beta: Self,
            c: *mut Self,
            ldc: c_int,
        ) {
            // SAFETY: the pointers cover what the routine touches (`Elem`'s contract).
            unsafe {
                $syrk(
                    CblasColMajor,
                    uplo(u),
                    trans(t),
                    n,
                    k,
                    cblas_scalar!($pass, alpha),
                    a,
                    lda,
                    cblas_scalar!($pass, beta),
                    c,
                    ldc,
                )
            }
        }
        unsafe fn trsm(
            s: u32,
            u: u32,
            t: u32,
            d: u32,
            m: c_int,
            n: c_int,
            alpha: Self,
            a: *const Self,
            lda: c_int,
            b: *mut Self,
            ldb: c_int,
        ) {
            // SAFETY: the pointers cover what the routine touches (`Elem`'s contract).
            unsafe {
                $trsm(
                    CblasColMajor,
                    side(s),
                    uplo(u),
                    trans(t),
                    diag(d),
                    m,
                    n,
                    cblas_scalar!($pass, alpha),
                    a,
                    lda,
                    b,
                    ldb,
                )
            }
        }
    };
}

pub(super) use {cblas_scalar, common_routines};

macro_rules! real_elem {
    ($t:ty, $asum:ident, $nrm2:ident, $dot:ident, $axpy:ident, $scal:ident, $copy:ident,
     $swap:ident, $rot:ident, $iamax:ident, $gemv:ident, $ger:ident, $symv:ident,
     $trsv:ident, $gemm:ident, $symm:ident, $syrk:ident, $trsm:ident, $getrf:ident,
     $getrs:ident) => {
        impl Elem for $t {
            const SIZE: u64 = size_of::<$t>() as u64;
            const ALIGN: u64 = size_of::<$t>() as u64;
            const REAL_SIZE: usize = size_of::<$t>();
            const COMPLEX: bool = false;
            fn load(b: &[u8]) -> Self {
                <$t>::from_le_bytes(b[..size_of::<$t>()].try_into().unwrap_or_default())
            }
            fn store(self, b: &mut [u8]) {
                b[..size_of::<$t>()].copy_from_slice(&self.to_le_bytes());
            }
            fn zero() -> Self {
                0.0
            }
            fn mul(self, o: Self) -> Self {
                self * o
            }
            fn add(self, o: Self) -> Self {
                self + o
            }
            fn conj(self) -> Self {
                self
            }
            fn abs1(self) -> f64 {
                f64::from(self.abs())
            }
            fn real_bytes(v: f64) -> [u8; 16] {
                let mut b = [0; 16];
                (v as $t).store(&mut b);
                b
            }
            fn re(self) -> f64 {
                f64::from(self)
            }
            common_routines!(
                value, $asum, $nrm2, $axpy, $scal, $copy, $swap, $iamax, $gemv, $trsv, $gemm,
                $symm, $syrk, $trsm
            );
            unsafe fn dot(
                n: c_int,
                x: *const Self,
                ix: c_int,
                y: *const Self,
                iy: c_int,
                _c: bool,
            ) -> Self {
                // SAFETY: the pointers cover what the routine touches (`Elem`'s contract).
                unsafe { $dot(n, x, ix, y, iy) }
            }
            unsafe fn scal_real(n: c_int, a: f64, x: *mut Self, incx: c_int) {
                // SAFETY: the pointers cover what the routine touches (`Elem`'s contract).
                unsafe { $scal(n, a as $t, x, incx) }
            }
            unsafe fn rot(
                n: c_int,
                x: *mut Self,
                ix: c_int,
                y: *mut Self,
                iy: c_int,
                c: f64,
                s: f64,
            ) {
                // SAFETY: the pointers cover what the routine touches (`Elem`'s contract).
                unsafe { $rot(n, x, ix, y, iy, c as $t, s as $t) }
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
                _conj: bool,
            ) {
                // SAFETY: the pointers cover what the routine touches (`Elem`'s contract).
                unsafe { $ger(CblasColMajor, m, n, alpha, x, incx, y, incy, a, lda) }
            }
            unsafe fn symv(
                u: u32,
                n: c_int,
                alpha: Self,
                a: *const Self,
                lda: c_int,
                x: *const Self,
                incx: c_int,
                beta: Self,
                y: *mut Self,
                incy: c_int,
            ) -> Option<()> {
                // SAFETY: the pointers cover what the routine touches (`Elem`'s contract).
                unsafe {
                    $symv(
                        CblasColMajor,
                        uplo(u),
                        n,
                        alpha,
                        a,
                        lda,
                        x,
                        incx,
                        beta,
                        y,
                        incy,
                    )
                };
                Some(())
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
                unsafe { lapack_sys::$getrf(&n, &n, a, &lda, ipiv, info) }
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
                unsafe { lapack_sys::$getrs(&t, &n, &nrhs, a, &lda, ipiv, b, &ldb, info) }
            }
        }
    };
}

real_elem!(
    f32,
    cblas_sasum,
    cblas_snrm2,
    cblas_sdot,
    cblas_saxpy,
    cblas_sscal,
    cblas_scopy,
    cblas_sswap,
    cblas_srot,
    cblas_isamax,
    cblas_sgemv,
    cblas_sger,
    cblas_ssymv,
    cblas_strsv,
    cblas_sgemm,
    cblas_ssymm,
    cblas_ssyrk,
    cblas_strsm,
    sgetrf_,
    sgetrs_
);
real_elem!(
    f64,
    cblas_dasum,
    cblas_dnrm2,
    cblas_ddot,
    cblas_daxpy,
    cblas_dscal,
    cblas_dcopy,
    cblas_dswap,
    cblas_drot,
    cblas_idamax,
    cblas_dgemv,
    cblas_dger,
    cblas_dsymv,
    cblas_dtrsv,
    cblas_dgemm,
    cblas_dsymm,
    cblas_dsyrk,
    cblas_dtrsm,
    dgetrf_,
    dgetrs_
);
