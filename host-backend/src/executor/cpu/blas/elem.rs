// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The element types of the CPU cuBLAS (`f32`, `f64` and their complex pairs): their
//! layout and arithmetic, and their CBLAS and LAPACK routines.
//!
//! The routines every type has are written once (`routines!`): a real (`s`, `d`) and a
//! complex (`c`, `z`) CBLAS routine differ only in taking a scalar by value or by pointer,
//! which [`Elem::arg`] adapts. What differs in substance (layout, arithmetic, `dot`'s
//! result, `rot` and `symv`, which CBLAS has for real types only) is in `real_items!` and
//! `complex_items!`.

use std::ffi::{c_char, c_int};

use cblas_sys::{
    CBLAS_DIAG, CBLAS_SIDE, CBLAS_TRANSPOSE, CBLAS_UPLO, CblasColMajor, CblasConjTrans, CblasLeft,
    CblasLower, CblasNoTrans, CblasNonUnit, CblasRight, CblasTrans, CblasUnit, CblasUpper,
};

use super::lazy::*;
use vcuda_protocol::blas::{self as check, OP_C, OP_T};

fn trans(t: u32) -> CBLAS_TRANSPOSE {
    match t {
        OP_T => CblasTrans,
        OP_C => CblasConjTrans,
        _ => CblasNoTrans,
    }
}

fn uplo(u: u32) -> CBLAS_UPLO {
    if u == check::FILL_UPPER {
        CblasUpper
    } else {
        CblasLower
    }
}

fn side(s: u32) -> CBLAS_SIDE {
    if s == check::SIDE_RIGHT {
        CblasRight
    } else {
        CblasLeft
    }
}

fn diag(d: u32) -> CBLAS_DIAG {
    if d == check::DIAG_UNIT {
        CblasUnit
    } else {
        CblasNonUnit
    }
}

/// An element type and its BLAS routines.
///
/// # Safety
///
/// Every `unsafe fn` takes raw pointers that the caller has checked (with
/// [`super::extent`]) to cover everything the routine touches, given its sizes, leading
/// dimensions and increments.
pub(super) trait Elem: Copy + PartialEq + 'static {
    const SIZE: u64;
    const ALIGN: u64;
    /// Bytes of the real type of `asum`/`nrm2` results.
    const REAL_SIZE: usize;
    const COMPLEX: bool;
    /// How CBLAS takes a scalar (`alpha`, `beta`) of this type: by value for the real
    /// routines, by pointer for the complex ones.
    type Arg;
    /// `self` as CBLAS takes it. A pointer borrows `self`: it is valid while `self` is.
    fn arg(&self) -> Self::Arg;
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

/// The items of a real [`Elem`] (`$t`) that a complex one does differently: scalars by
/// value, plain arithmetic, `dot` returning its result, and `rot` and `symv`.
macro_rules! real_items {
    ($t:ty, $dot:ident, $rot:ident, $symv:ident) => {
        const SIZE: u64 = size_of::<$t>() as u64;
        const ALIGN: u64 = size_of::<$t>() as u64;
        const REAL_SIZE: usize = size_of::<$t>();
        const COMPLEX: bool = false;
        type Arg = $t;
        fn arg(&self) -> $t {
            *self
        }
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
        unsafe fn dot(
            n: c_int,
            x: *const Self,
            ix: c_int,
            y: *const Self,
            iy: c_int,
            _c: bool,
        ) -> Self {
            // SAFETY: the caller checked that `x` and `y` cover `n` elements `ix` and `iy`
            // apart.
            unsafe { $dot(n, x, ix, y, iy) }
        }
        unsafe fn rot(n: c_int, x: *mut Self, ix: c_int, y: *mut Self, iy: c_int, c: f64, s: f64) {
            // SAFETY: the caller checked that `x` and `y` cover `n` elements `ix` and `iy`
            // apart.
            unsafe { $rot(n, x, ix, y, iy, c as $t, s as $t) }
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
            // SAFETY: the caller checked that `a` covers an `n x n` matrix with leading
            // dimension `lda`, and `x` and `y` `n` elements `incx` and `incy` apart.
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
    };
}

/// The items of a complex [`Elem`] (`$t`, of real parts `$r`) that a real one does
/// differently: scalars by pointer, complex arithmetic, `dot` through an output pointer,
/// and neither `rot` nor `symv`.
macro_rules! complex_items {
    ($t:ty, $r:ty, $dotu:ident, $dotc:ident) => {
        const SIZE: u64 = size_of::<$t>() as u64;
        const ALIGN: u64 = size_of::<$t>() as u64;
        const REAL_SIZE: usize = size_of::<$r>();
        const COMPLEX: bool = true;
        type Arg = *const $t;
        fn arg(&self) -> *const $t {
            self
        }
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
        unsafe fn dot(
            n: c_int,
            x: *const Self,
            ix: c_int,
            y: *const Self,
            iy: c_int,
            c: bool,
        ) -> Self {
            let mut out = Self::zero();
            // SAFETY: the caller checked that `x` and `y` cover `n` elements `ix` and `iy`
            // apart; `out` is a local.
            unsafe {
                if c {
                    $dotc(n, x, ix, y, iy, &mut out)
                } else {
                    $dotu(n, x, ix, y, iy, &mut out)
                }
            };
            out
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
    };
}

/// The routines every [`Elem`] has, one body for real and complex types: scalars go to
/// CBLAS as `alpha.arg()`. `$r` is the type of real parts, `$rscal` scales by a real
/// (`$scal` itself for a real type), `$geru`/`$gerc` are the plain and conjugated rank-1
/// updates (one routine for a real type, where conjugation is the identity).
macro_rules! routines {
    ($r:ty; $asum:ident, $nrm2:ident, $axpy:ident, $scal:ident, $rscal:ident, $copy:ident,
     $swap:ident, $iamax:ident, $gemv:ident, $geru:ident, $gerc:ident, $trsv:ident,
     $gemm:ident, $symm:ident, $syrk:ident, $trsm:ident, $getrf:ident, $getrs:ident) => {
        unsafe fn asum(n: c_int, x: *const Self, incx: c_int) -> f64 {
            // SAFETY: the caller checked that `x` covers `n` elements `incx` apart.
            f64::from(unsafe { $asum(n, x, incx) })
        }
        unsafe fn nrm2(n: c_int, x: *const Self, incx: c_int) -> f64 {
            // SAFETY: the caller checked that `x` covers `n` elements `incx` apart.
            f64::from(unsafe { $nrm2(n, x, incx) })
        }
        unsafe fn axpy(n: c_int, a: Self, x: *const Self, ix: c_int, y: *mut Self, iy: c_int) {
            // SAFETY: the caller checked that `x` and `y` cover `n` elements `ix` and `iy`
            // apart; `a.arg()` is a value or a pointer to the local `a`.
            unsafe { $axpy(n, a.arg(), x, ix, y, iy) }
        }
        unsafe fn scal(n: c_int, a: Self, x: *mut Self, incx: c_int) {
            // SAFETY: the caller checked that `x` covers `n` elements `incx` apart;
            // `a.arg()` is a value or a pointer to the local `a`.
            unsafe { $scal(n, a.arg(), x, incx) }
        }
        unsafe fn scal_real(n: c_int, a: f64, x: *mut Self, incx: c_int) {
            // SAFETY: the caller checked that `x` covers `n` elements `incx` apart.
            unsafe { $rscal(n, a as $r, x, incx) }
        }
        unsafe fn copy(n: c_int, x: *const Self, ix: c_int, y: *mut Self, iy: c_int) {
            // SAFETY: the caller checked that `x` and `y` cover `n` elements `ix` and `iy`
            // apart.
            unsafe { $copy(n, x, ix, y, iy) }
        }
        unsafe fn swap(n: c_int, x: *mut Self, ix: c_int, y: *mut Self, iy: c_int) {
            // SAFETY: the caller checked that `x` and `y` cover `n` elements `ix` and `iy`
            // apart.
            unsafe { $swap(n, x, ix, y, iy) }
        }
        unsafe fn iamax(n: c_int, x: *const Self, incx: c_int) -> c_int {
            // SAFETY: the caller checked that `x` covers `n` elements `incx` apart.
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
            // SAFETY: the caller checked that `a` covers an `m x n` matrix with leading
            // dimension `lda`, and `x` and `y` the lengths `op(A)` takes and gives,
            // `incx` and `incy` apart; the scalars are values or point to these locals.
            unsafe {
                $gemv(
                    CblasColMajor,
                    trans(t),
                    m,
                    n,
                    alpha.arg(),
                    a,
                    lda,
                    x,
                    incx,
                    beta.arg(),
                    y,
                    incy,
                )
            }
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
            // SAFETY: the caller checked that `x` covers `m` elements `incx` apart, `y`
            // `n` elements `incy` apart and `a` an `m x n` matrix with leading dimension
            // `lda`; `alpha.arg()` is a value or a pointer to the local `alpha`.
            unsafe {
                if conj {
                    $gerc(CblasColMajor, m, n, alpha.arg(), x, incx, y, incy, a, lda)
                } else {
                    $geru(CblasColMajor, m, n, alpha.arg(), x, incx, y, incy, a, lda)
                }
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
            // SAFETY: the caller checked that `a` covers an `n x n` matrix with leading
            // dimension `lda` and `x` `n` elements `incx` apart.
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
            // SAFETY: the caller checked that `a`, `b` and `c` cover the stored `op(A)`
            // (`m x k`), `op(B)` (`k x n`) and C (`m x n`) with their leading dimensions;
            // the scalars are values or point to these locals.
            unsafe {
                $gemm(
                    CblasColMajor,
                    trans(ta),
                    trans(tb),
                    m,
                    n,
                    k,
                    alpha.arg(),
                    a,
                    lda,
                    b,
                    ldb,
                    beta.arg(),
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
            // SAFETY: the caller checked that `a` covers the square A of side `s` (`m` or
            // `n`) and `b` and `c` `m x n` matrices, with their leading dimensions; the
            // scalars are values or point to these locals.
            unsafe {
                $symm(
                    CblasColMajor,
                    side(s),
                    uplo(u),
                    m,
                    n,
                    alpha.arg(),
                    a,
                    lda,
                    b,
                    ldb,
                    beta.arg(),
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
            // SAFETY: the caller checked that `a` covers the stored `op(A)` (`n x k`) and
            // `c` an `n x n` matrix, with their leading dimensions; the scalars are values
            // or point to these locals.
            unsafe {
                $syrk(
                    CblasColMajor,
                    uplo(u),
                    trans(t),
                    n,
                    k,
                    alpha.arg(),
                    a,
                    lda,
                    beta.arg(),
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
            // SAFETY: the caller checked that `a` covers the square A of side `s` (`m` or
            // `n`) and `b` an `m x n` matrix, with their leading dimensions; `alpha.arg()`
            // is a value or a pointer to the local `alpha`.
            unsafe {
                $trsm(
                    CblasColMajor,
                    side(s),
                    uplo(u),
                    trans(t),
                    diag(d),
                    m,
                    n,
                    alpha.arg(),
                    a,
                    lda,
                    b,
                    ldb,
                )
            }
        }
        unsafe fn getrf(n: c_int, a: *mut Self, lda: c_int, ipiv: *mut c_int, info: *mut c_int) {
            // SAFETY: the caller checked that `a` covers an `n x n` matrix with leading
            // dimension `lda`, `ipiv` `n` integers and `info` one; the scalars are locals.
            unsafe { $getrf(&n, &n, a.cast(), &lda, ipiv, info) }
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
            // SAFETY: the caller checked that `a` covers an `n x n` matrix, `b` an
            // `n x nrhs` one, with their leading dimensions, `ipiv` `n` integers and
            // `info` one; the scalars are locals.
            unsafe { $getrs(&t, &n, &nrhs, a.cast(), &lda, ipiv, b.cast(), &ldb, info) }
        }
    };
}

impl Elem for f32 {
    real_items!(f32, cblas_sdot, cblas_srot, cblas_ssymv);
    routines! {
        f32; cblas_sasum, cblas_snrm2, cblas_saxpy, cblas_sscal, cblas_sscal, cblas_scopy,
        cblas_sswap, cblas_isamax, cblas_sgemv, cblas_sger, cblas_sger, cblas_strsv,
        cblas_sgemm, cblas_ssymm, cblas_ssyrk, cblas_strsm, sgetrf_, sgetrs_
    }
}

impl Elem for f64 {
    real_items!(f64, cblas_ddot, cblas_drot, cblas_dsymv);
    routines! {
        f64; cblas_dasum, cblas_dnrm2, cblas_daxpy, cblas_dscal, cblas_dscal, cblas_dcopy,
        cblas_dswap, cblas_idamax, cblas_dgemv, cblas_dger, cblas_dger, cblas_dtrsv,
        cblas_dgemm, cblas_dsymm, cblas_dsyrk, cblas_dtrsm, dgetrf_, dgetrs_
    }
}

impl Elem for C32 {
    complex_items!(C32, f32, cblas_cdotu_sub, cblas_cdotc_sub);
    routines! {
        f32; cblas_scasum, cblas_scnrm2, cblas_caxpy, cblas_cscal, cblas_csscal, cblas_ccopy,
        cblas_cswap, cblas_icamax, cblas_cgemv, cblas_cgeru, cblas_cgerc, cblas_ctrsv,
        cblas_cgemm, cblas_csymm, cblas_csyrk, cblas_ctrsm, cgetrf_, cgetrs_
    }
}

impl Elem for C64 {
    complex_items!(C64, f64, cblas_zdotu_sub, cblas_zdotc_sub);
    routines! {
        f64; cblas_dzasum, cblas_dznrm2, cblas_zaxpy, cblas_zscal, cblas_zdscal, cblas_zcopy,
        cblas_zswap, cblas_izamax, cblas_zgemv, cblas_zgeru, cblas_zgerc, cblas_ztrsv,
        cblas_zgemm, cblas_zsymm, cblas_zsyrk, cblas_ztrsm, zgetrf_, zgetrs_
    }
}
