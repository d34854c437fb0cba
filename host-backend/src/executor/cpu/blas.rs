// SPDX-License-Identifier: Apache-2.0 OR MIT
//! cuBLAS on the CPU executor: CBLAS and LAPACK (the system OpenBLAS, Debian package
//! `libopenblas-dev`) run on the session's simulated device memory.
//!
//! Every operand is resolved against the session's [`DeviceHeap`] before anything runs:
//! the full extent an operation may touch (`(n - 1) * |inc| + 1` elements of a vector,
//! `(cols - 1) * ld + rows` of a column-major matrix, every matrix of a batch) must lie in
//! one allocation and be aligned to its element, or the call fails with
//! `cudaErrorIllegalAddress` / `cudaErrorMisalignedAddress`, as a faulting kernel would.
//! Only then do raw pointers into the heap reach OpenBLAS; no Rust reference to device
//! memory is alive meanwhile, so aliased operands (which cuBLAS allows for some routines)
//! are fine.
//!
//! Scalars follow the handle's pointer mode: host mode carries values in the request,
//! device mode carries device addresses, and reductions write their result to device
//! memory. Semantics follow cuBLAS: reductions of `n <= 0` (or `incx <= 0`) give 0,
//! `iamax`/`iamin` are 1-based, `beta == 0` never reads C.

use std::collections::HashSet;
use std::ffi::{c_char, c_int};
use std::ptr::NonNull;

use cblas_sys::*;
use half::f16;
use vcuda_protocol::blas::{self as check, OP_C, OP_N, OP_T};
use vcuda_protocol::lib::{
    BLAS_DEVICE_POINTERS, BLAS_EXECUTION_FAILED, BLAS_NOT_INITIALIZED, BLAS_NOT_SUPPORTED, dtype,
    func,
};
use vcuda_protocol::{BlasCallReq, status};

use super::memory::DeviceHeap;
use crate::executor::{ExecResult, Status};

// The CBLAS and LAPACK symbols `cblas-sys` and `lapack-sys` declare come from OpenBLAS.
#[link(name = "openblas")]
unsafe extern "C" {}

const FAULT: Status = Status(status::ILLEGAL_ADDRESS);
const MISALIGNED: Status = Status(status::MISALIGNED_ADDRESS);
const UNSUPPORTED: Status = Status(BLAS_NOT_SUPPORTED);

/// `cublasComputeType_t` values.
mod compute {
    pub const C16F: u32 = 64;
    pub const C16F_PEDANTIC: u32 = 65;
    pub const C32F: u32 = 68;
    pub const C32F_PEDANTIC: u32 = 69;
    pub const C64F: u32 = 70;
    pub const C64F_PEDANTIC: u32 = 71;
    pub const C32F_FAST_16F: u32 = 74;
    pub const C32F_FAST_16BF: u32 = 75;
    pub const C32F_FAST_TF32: u32 = 77;
    pub const C32F_EMULATED_16BFX9: u32 = 78;
}

/// The session's cuBLAS handles. The CPU needs no per-handle state: the guest sends the
/// stream, pointer mode and math mode with every call.
#[derive(Debug, Default)]
pub struct Blas {
    handles: HashSet<u64>,
    next: u64,
}

impl Blas {
    /// A new handle.
    pub fn create(&mut self) -> u64 {
        self.next += 1;
        let h = 0xb1a5_0000_0000 | self.next;
        self.handles.insert(h);
        h
    }

    /// Destroys a handle.
    pub fn destroy(&mut self, h: u64) -> ExecResult<()> {
        if self.handles.remove(&h) {
            Ok(())
        } else {
            Err(Status(BLAS_NOT_INITIALIZED))
        }
    }

    /// Forgets every handle (`cudaDeviceReset`).
    pub fn clear(&mut self) {
        self.handles.clear();
    }

    /// Runs one operation.
    pub fn call(&self, heap: &mut DeviceHeap, r: &BlasCallReq) -> ExecResult<[u8; 16]> {
        if !self.handles.contains(&r.handle) {
            return Err(Status(BLAS_NOT_INITIALIZED));
        }
        check::validate(r).map_err(Status)?;
        let mut cx = Ctx { heap, r };
        if matches!(r.func, func::GEMM | func::GEMM_BATCHED) && is_ex(r) {
            return gemm_ex(&mut cx).map(|()| [0; 16]);
        }
        match r.type_a {
            dtype::R_32F => run::<f32>(&mut cx),
            dtype::R_64F => run::<f64>(&mut cx),
            dtype::C_32F => run::<C32>(&mut cx),
            dtype::C_64F => run::<C64>(&mut cx),
            _ => Err(UNSUPPORTED),
        }
    }
}

/// Whether a GEMM request is a `cublasGemmEx`-style one with mixed types.
fn is_ex(r: &BlasCallReq) -> bool {
    r.compute != 0 || r.type_a != r.type_b || r.type_a != r.type_c
}

/// One call's view of the heap.
struct Ctx<'a> {
    heap: &'a mut DeviceHeap,
    r: &'a BlasCallReq,
}

/// Elements spanned by `n` elements `inc` apart.
fn vec_extent(n: i64, inc: i64) -> ExecResult<u64> {
    if n <= 0 {
        return Ok(0);
    }
    (n as u64 - 1)
        .checked_mul(inc.unsigned_abs())
        .and_then(|v| v.checked_add(1))
        .ok_or(FAULT)
}

/// Elements spanned by a column-major `rows x cols` matrix with leading dimension `ld`.
fn mat_extent(rows: i64, cols: i64, ld: i64) -> ExecResult<u64> {
    if rows <= 0 || cols <= 0 {
        return Ok(0);
    }
    (cols as u64 - 1)
        .checked_mul(ld as u64)
        .and_then(|v| v.checked_add(rows as u64))
        .ok_or(FAULT)
}

/// `base + index * stride` elements of `size` bytes, as a device address.
fn offset(base: u64, index: i64, stride: i64, size: u64) -> ExecResult<u64> {
    let off = i128::from(index) * i128::from(stride) * i128::from(size);
    u64::try_from(i128::from(base) + off).map_err(|_| FAULT)
}

fn int(v: i64) -> c_int {
    // `check::validate` bounds every size, leading dimension and stride by `i32::MAX`.
    v.clamp(i64::from(c_int::MIN), i64::from(c_int::MAX)) as c_int
}

impl Ctx<'_> {
    fn device_ptrs(&self) -> bool {
        self.r.flags & BLAS_DEVICE_POINTERS != 0
    }

    /// The host address of `elems` elements of `size` bytes at device address `addr`,
    /// checked to lie in one allocation and to be aligned to `align`.
    fn raw(&self, addr: u64, elems: u64, size: u64, align: u64) -> ExecResult<*mut u8> {
        if elems == 0 {
            return Ok(NonNull::<u64>::dangling().as_ptr().cast());
        }
        if !addr.is_multiple_of(align) {
            return Err(MISALIGNED);
        }
        let bytes = elems.checked_mul(size).ok_or(FAULT)?;
        let a = self.heap.resolve(addr).ok_or(FAULT)?;
        let off = addr - a.base;
        match off.checked_add(bytes) {
            // SAFETY: `off + bytes <= a.len`, so the pointer stays inside the allocation.
            Some(end) if end <= a.len => Ok(unsafe { a.host.add(off as usize) }),
            _ => Err(FAULT),
        }
    }

    fn ptr<T: Elem>(&self, addr: u64, elems: u64) -> ExecResult<*mut T> {
        self.raw(addr, elems, T::SIZE, T::ALIGN).map(|p| p.cast())
    }

    fn vector<T: Elem>(&self, addr: u64, n: i64, inc: i64) -> ExecResult<*mut T> {
        self.ptr(addr, vec_extent(n, inc)?)
    }

    fn matrix<T: Elem>(&self, addr: u64, rows: i64, cols: i64, ld: i64) -> ExecResult<*mut T> {
        self.ptr(addr, mat_extent(rows, cols, ld)?)
    }

    /// A scalar argument of `size` bytes: the value in host pointer mode, read from device
    /// memory in device pointer mode.
    fn scalar_bytes(&self, field: &[u8; 16], size: u64) -> ExecResult<[u8; 16]> {
        if !self.device_ptrs() {
            return Ok(*field);
        }
        let addr = u64::from_le_bytes(field[..8].try_into().unwrap_or_default());
        let mut out = [0u8; 16];
        let src = self.heap.bytes(addr, size).map_err(|_| FAULT)?;
        out[..src.len()].copy_from_slice(src);
        Ok(out)
    }

    fn scalar<T: Elem>(&self, field: &[u8; 16]) -> ExecResult<T> {
        self.scalar_bytes(field, T::SIZE).map(|b| T::load(&b))
    }

    /// Delivers a scalar result: in the reply (host mode) or to `result` (device mode).
    fn result(&mut self, bytes: &[u8]) -> ExecResult<[u8; 16]> {
        let mut out = [0u8; 16];
        if self.device_ptrs() {
            let dst = self
                .heap
                .bytes_mut(self.r.result, bytes.len() as u64)
                .map_err(|_| FAULT)?;
            dst.copy_from_slice(bytes);
        } else {
            out[..bytes.len()].copy_from_slice(bytes);
        }
        Ok(out)
    }

    /// Reads `n` device pointers from the device array at `addr`.
    fn pointer_array(&self, addr: u64, n: i64) -> ExecResult<Vec<u64>> {
        let n = u64::try_from(n).map_err(|_| FAULT)?;
        let bytes = self
            .heap
            .bytes(addr, n.checked_mul(8).ok_or(FAULT)?)
            .map_err(|_| FAULT)?;
        Ok(bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()))
            .collect())
    }
}

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

/// Single-precision complex, as CBLAS and cuBLAS lay it out.
pub type C32 = [f32; 2];
/// Double-precision complex.
pub type C64 = [f64; 2];

/// An element type and its BLAS routines. The routines take raw pointers that the caller
/// has checked to cover everything the routine touches.
trait Elem: Copy + PartialEq + 'static {
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
            unsafe fn asum(n: c_int, x: *const Self, incx: c_int) -> f64 {
                // SAFETY: the caller checked `x`'s extent.
                f64::from(unsafe { $asum(n, x, incx) })
            }
            unsafe fn nrm2(n: c_int, x: *const Self, incx: c_int) -> f64 {
                // SAFETY: as above.
                f64::from(unsafe { $nrm2(n, x, incx) })
            }
            unsafe fn dot(
                n: c_int,
                x: *const Self,
                ix: c_int,
                y: *const Self,
                iy: c_int,
                _c: bool,
            ) -> Self {
                // SAFETY: as above.
                unsafe { $dot(n, x, ix, y, iy) }
            }
            unsafe fn axpy(n: c_int, a: Self, x: *const Self, ix: c_int, y: *mut Self, iy: c_int) {
                // SAFETY: as above.
                unsafe { $axpy(n, a, x, ix, y, iy) }
            }
            unsafe fn scal(n: c_int, a: Self, x: *mut Self, incx: c_int) {
                // SAFETY: as above.
                unsafe { $scal(n, a, x, incx) }
            }
            unsafe fn scal_real(n: c_int, a: f64, x: *mut Self, incx: c_int) {
                // SAFETY: as above.
                unsafe { $scal(n, a as $t, x, incx) }
            }
            unsafe fn copy(n: c_int, x: *const Self, ix: c_int, y: *mut Self, iy: c_int) {
                // SAFETY: as above.
                unsafe { $copy(n, x, ix, y, iy) }
            }
            unsafe fn swap(n: c_int, x: *mut Self, ix: c_int, y: *mut Self, iy: c_int) {
                // SAFETY: as above.
                unsafe { $swap(n, x, ix, y, iy) }
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
                // SAFETY: as above.
                unsafe { $rot(n, x, ix, y, iy, c as $t, s as $t) }
            }
            unsafe fn iamax(n: c_int, x: *const Self, incx: c_int) -> c_int {
                // SAFETY: as above.
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
                // SAFETY: as above.
                unsafe {
                    $gemv(
                        CblasColMajor,
                        trans(t),
                        m,
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
                _conj: bool,
            ) {
                // SAFETY: as above.
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
                // SAFETY: as above.
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
                // SAFETY: as above.
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
                // SAFETY: as above.
                unsafe {
                    $gemm(
                        CblasColMajor,
                        trans(ta),
                        trans(tb),
                        m,
                        n,
                        k,
                        alpha,
                        a,
                        lda,
                        b,
                        ldb,
                        beta,
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
                // SAFETY: as above.
                unsafe {
                    $symm(
                        CblasColMajor,
                        side(s),
                        uplo(u),
                        m,
                        n,
                        alpha,
                        a,
                        lda,
                        b,
                        ldb,
                        beta,
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
                // SAFETY: as above.
                unsafe {
                    $syrk(
                        CblasColMajor,
                        uplo(u),
                        trans(t),
                        n,
                        k,
                        alpha,
                        a,
                        lda,
                        beta,
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
                // SAFETY: as above.
                unsafe {
                    $trsm(
                        CblasColMajor,
                        side(s),
                        uplo(u),
                        trans(t),
                        diag(d),
                        m,
                        n,
                        alpha,
                        a,
                        lda,
                        b,
                        ldb,
                    )
                }
            }
            unsafe fn getrf(
                n: c_int,
                a: *mut Self,
                lda: c_int,
                ipiv: *mut c_int,
                info: *mut c_int,
            ) {
                // SAFETY: as above; the scalars are locals.
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
                // SAFETY: as above.
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
            unsafe fn asum(n: c_int, x: *const Self, incx: c_int) -> f64 {
                // SAFETY: the caller checked `x`'s extent.
                f64::from(unsafe { $asum(n, x, incx) })
            }
            unsafe fn nrm2(n: c_int, x: *const Self, incx: c_int) -> f64 {
                // SAFETY: as above.
                f64::from(unsafe { $nrm2(n, x, incx) })
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
                // SAFETY: as above; `out` is a local.
                unsafe {
                    if c {
                        $dotc(n, x, ix, y, iy, &mut out)
                    } else {
                        $dotu(n, x, ix, y, iy, &mut out)
                    }
                };
                out
            }
            unsafe fn axpy(n: c_int, a: Self, x: *const Self, ix: c_int, y: *mut Self, iy: c_int) {
                // SAFETY: as above.
                unsafe { $axpy(n, &a, x, ix, y, iy) }
            }
            unsafe fn scal(n: c_int, a: Self, x: *mut Self, incx: c_int) {
                // SAFETY: as above.
                unsafe { $scal(n, &a, x, incx) }
            }
            unsafe fn scal_real(n: c_int, a: f64, x: *mut Self, incx: c_int) {
                // SAFETY: as above.
                unsafe { $rscal(n, a as $r, x, incx) }
            }
            unsafe fn copy(n: c_int, x: *const Self, ix: c_int, y: *mut Self, iy: c_int) {
                // SAFETY: as above.
                unsafe { $copy(n, x, ix, y, iy) }
            }
            unsafe fn swap(n: c_int, x: *mut Self, ix: c_int, y: *mut Self, iy: c_int) {
                // SAFETY: as above.
                unsafe { $swap(n, x, ix, y, iy) }
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
            unsafe fn iamax(n: c_int, x: *const Self, incx: c_int) -> c_int {
                // SAFETY: as above.
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
                // SAFETY: as above.
                unsafe {
                    $gemv(
                        CblasColMajor,
                        trans(t),
                        m,
                        n,
                        &alpha,
                        a,
                        lda,
                        x,
                        incx,
                        &beta,
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
                // SAFETY: as above.
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
                // SAFETY: as above.
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
                // SAFETY: as above.
                unsafe {
                    $gemm(
                        CblasColMajor,
                        trans(ta),
                        trans(tb),
                        m,
                        n,
                        k,
                        &alpha,
                        a,
                        lda,
                        b,
                        ldb,
                        &beta,
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
                // SAFETY: as above.
                unsafe {
                    $symm(
                        CblasColMajor,
                        side(s),
                        uplo(u),
                        m,
                        n,
                        &alpha,
                        a,
                        lda,
                        b,
                        ldb,
                        &beta,
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
                // SAFETY: as above.
                unsafe {
                    $syrk(
                        CblasColMajor,
                        uplo(u),
                        trans(t),
                        n,
                        k,
                        &alpha,
                        a,
                        lda,
                        &beta,
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
                // SAFETY: as above.
                unsafe {
                    $trsm(
                        CblasColMajor,
                        side(s),
                        uplo(u),
                        trans(t),
                        diag(d),
                        m,
                        n,
                        &alpha,
                        a,
                        lda,
                        b,
                        ldb,
                    )
                }
            }
            unsafe fn getrf(
                n: c_int,
                a: *mut Self,
                lda: c_int,
                ipiv: *mut c_int,
                info: *mut c_int,
            ) {
                // SAFETY: as above; the scalars are locals.
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
                // SAFETY: as above.
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

/// Rows and columns of the stored `op(X)` of an `rows x cols` result.
fn stored(t: u32, rows: i64, cols: i64) -> (i64, i64) {
    if t == OP_N {
        (rows, cols)
    } else {
        (cols, rows)
    }
}

/// Runs a request whose element type is `T`.
fn run<T: Elem>(cx: &mut Ctx<'_>) -> ExecResult<[u8; 16]> {
    let r = *cx.r;
    let (n, ix, iy) = (int(r.n), int(r.incx), int(r.incy));
    let none = Ok([0u8; 16]);
    match r.func {
        func::ASUM | func::NRM2 => {
            let v = if r.n <= 0 || r.incx <= 0 {
                0.0
            } else {
                let x = cx.vector::<T>(r.x, r.n, r.incx)?;
                // SAFETY: `x` covers n elements incx apart (checked by `vector`).
                unsafe {
                    if r.func == func::ASUM {
                        T::asum(n, x, ix)
                    } else {
                        T::nrm2(n, x, ix)
                    }
                }
            };
            cx.result(&T::real_bytes(v)[..T::REAL_SIZE])
        }
        func::IAMAX | func::IAMIN => {
            let i: i32 = if r.n <= 0 || r.incx <= 0 {
                0
            } else {
                let x = cx.vector::<T>(r.x, r.n, r.incx)?;
                if r.func == func::IAMAX {
                    // SAFETY: as above.
                    unsafe { T::iamax(n, x, ix) + 1 }
                } else {
                    let (mut best, mut at) = (f64::INFINITY, 0);
                    for i in 0..r.n as usize {
                        // SAFETY: element i lies within the checked extent.
                        let v = unsafe { x.add(i * r.incx as usize).read() }.abs1();
                        if v < best {
                            (best, at) = (v, i as i32 + 1);
                        }
                    }
                    at
                }
            };
            cx.result(&i.to_le_bytes())
        }
        func::DOT | func::DOTC => {
            let v = if r.n <= 0 {
                T::zero()
            } else {
                let x = cx.vector::<T>(r.x, r.n, r.incx)?;
                let y = cx.vector::<T>(r.y, r.n, r.incy)?;
                // SAFETY: as above.
                unsafe { T::dot(n, x, ix, y, iy, r.func == func::DOTC) }
            };
            let mut b = [0u8; 16];
            v.store(&mut b);
            cx.result(&b[..T::SIZE as usize])
        }
        func::AXPY | func::COPY | func::SWAP | func::ROT => {
            if r.n <= 0 {
                return none;
            }
            if r.func == func::ROT && T::COMPLEX {
                return Err(UNSUPPORTED);
            }
            let alpha = cx.scalar::<T>(&r.alpha)?;
            let beta = if r.func == func::ROT {
                cx.scalar::<T>(&r.beta)?
            } else {
                T::zero()
            };
            let x = cx.vector::<T>(r.x, r.n, r.incx)?;
            let y = cx.vector::<T>(r.y, r.n, r.incy)?;
            // SAFETY: both vectors' extents are checked; BLAS allows them to alias.
            unsafe {
                match r.func {
                    func::AXPY => T::axpy(n, alpha, x, ix, y, iy),
                    func::COPY => T::copy(n, x, ix, y, iy),
                    func::SWAP => T::swap(n, x, ix, y, iy),
                    _ => T::rot(n, x, ix, y, iy, alpha.re(), beta.re()),
                }
            }
            none
        }
        func::SCAL => {
            if r.n <= 0 || r.incx <= 0 {
                return none;
            }
            let x = cx.vector::<T>(r.x, r.n, r.incx)?;
            if T::COMPLEX && !check::is_complex(r.type_b) && r.type_b != 0 {
                // csscal / zdscal: a real scalar of the vector's precision.
                let a = if T::REAL_SIZE == 4 {
                    f64::from(cx.scalar::<f32>(&r.alpha)?)
                } else {
                    cx.scalar::<f64>(&r.alpha)?
                };
                // SAFETY: as above.
                unsafe { T::scal_real(n, a, x, ix) };
            } else {
                let a = cx.scalar::<T>(&r.alpha)?;
                // SAFETY: as above.
                unsafe { T::scal(n, a, x, ix) };
            }
            none
        }
        func::GEMV => {
            let (xl, yl) = if r.trans_a == OP_N {
                (r.n, r.m)
            } else {
                (r.m, r.n)
            };
            let (alpha, beta) = (cx.scalar::<T>(&r.alpha)?, cx.scalar::<T>(&r.beta)?);
            let a = cx.matrix::<T>(r.a, r.m, r.n, r.lda)?;
            let x = cx.vector::<T>(r.x, xl, r.incx)?;
            let y = cx.vector::<T>(r.y, yl, r.incy)?;
            if r.m == 0 || r.n == 0 {
                return none;
            }
            // SAFETY: every operand's extent is checked.
            unsafe {
                T::gemv(
                    r.trans_a,
                    int(r.m),
                    n,
                    alpha,
                    a,
                    int(r.lda),
                    x,
                    ix,
                    beta,
                    y,
                    iy,
                )
            };
            none
        }
        func::GER => {
            let alpha = cx.scalar::<T>(&r.alpha)?;
            let x = cx.vector::<T>(r.x, r.m, r.incx)?;
            let y = cx.vector::<T>(r.y, r.n, r.incy)?;
            let a = cx.matrix::<T>(r.a, r.m, r.n, r.lda)?;
            if r.m == 0 || r.n == 0 {
                return none;
            }
            // SAFETY: as above.
            unsafe {
                T::ger(
                    int(r.m),
                    n,
                    alpha,
                    x,
                    ix,
                    y,
                    iy,
                    a,
                    int(r.lda),
                    r.trans_b == OP_C,
                )
            };
            none
        }
        func::SYMV => {
            let (alpha, beta) = (cx.scalar::<T>(&r.alpha)?, cx.scalar::<T>(&r.beta)?);
            let a = cx.matrix::<T>(r.a, r.n, r.n, r.lda)?;
            let x = cx.vector::<T>(r.x, r.n, r.incx)?;
            let y = cx.vector::<T>(r.y, r.n, r.incy)?;
            if r.n == 0 {
                return none;
            }
            // SAFETY: as above.
            unsafe { T::symv(r.uplo, n, alpha, a, int(r.lda), x, ix, beta, y, iy) }
                .ok_or(UNSUPPORTED)?;
            none
        }
        func::TRSV => {
            let a = cx.matrix::<T>(r.a, r.n, r.n, r.lda)?;
            let x = cx.vector::<T>(r.x, r.n, r.incx)?;
            if r.n == 0 {
                return none;
            }
            // SAFETY: as above.
            unsafe { T::trsv(r.uplo, r.trans_a, r.diag, n, a, int(r.lda), x, ix) };
            none
        }
        func::GEMM | func::GEMM_BATCHED => gemm::<T>(cx).map(|()| [0; 16]),
        func::SYMM => {
            let (alpha, beta) = (cx.scalar::<T>(&r.alpha)?, cx.scalar::<T>(&r.beta)?);
            let ka = if r.side == check::SIDE_LEFT { r.m } else { r.n };
            let a = cx.matrix::<T>(r.a, ka, ka, r.lda)?;
            let b = cx.matrix::<T>(r.b, r.m, r.n, r.ldb)?;
            let c = cx.matrix::<T>(r.c, r.m, r.n, r.ldc)?;
            if r.m == 0 || r.n == 0 {
                return none;
            }
            // SAFETY: as above.
            unsafe {
                T::symm(
                    r.side,
                    r.uplo,
                    int(r.m),
                    n,
                    alpha,
                    a,
                    int(r.lda),
                    b,
                    int(r.ldb),
                    beta,
                    c,
                    int(r.ldc),
                )
            };
            none
        }
        func::SYRK => {
            let (alpha, beta) = (cx.scalar::<T>(&r.alpha)?, cx.scalar::<T>(&r.beta)?);
            let (ar, ac) = stored(r.trans_a, r.n, r.k);
            let a = cx.matrix::<T>(r.a, ar, ac, r.lda)?;
            let c = cx.matrix::<T>(r.c, r.n, r.n, r.ldc)?;
            if r.n == 0 {
                return none;
            }
            // SAFETY: as above.
            unsafe {
                T::syrk(
                    r.uplo,
                    r.trans_a,
                    n,
                    int(r.k),
                    alpha,
                    a,
                    int(r.lda),
                    beta,
                    c,
                    int(r.ldc),
                )
            };
            none
        }
        func::TRSM => {
            let alpha = cx.scalar::<T>(&r.alpha)?;
            let ka = if r.side == check::SIDE_LEFT { r.m } else { r.n };
            let a = cx.matrix::<T>(r.a, ka, ka, r.lda)?;
            let b = cx.matrix::<T>(r.b, r.m, r.n, r.ldb)?;
            if r.m == 0 || r.n == 0 {
                return none;
            }
            // SAFETY: as above.
            unsafe {
                T::trsm(
                    r.side,
                    r.uplo,
                    r.trans_a,
                    r.diag,
                    int(r.m),
                    n,
                    alpha,
                    a,
                    int(r.lda),
                    b,
                    int(r.ldb),
                )
            };
            none
        }
        func::GEAM => geam::<T>(cx).map(|()| [0; 16]),
        func::GETRF_BATCHED => getrf_batched::<T>(cx).map(|()| [0; 16]),
        func::GETRS_BATCHED => getrs_batched::<T>(cx),
        _ => Err(UNSUPPORTED),
    }
}

/// The device addresses of A, B and C of every matrix of a GEMM request.
fn gemm_operands(cx: &Ctx<'_>, size: u64) -> ExecResult<Vec<(u64, u64, u64)>> {
    let r = cx.r;
    if r.func == func::GEMM_BATCHED {
        let a = cx.pointer_array(r.a, r.batch)?;
        let b = cx.pointer_array(r.b, r.batch)?;
        let c = cx.pointer_array(r.c, r.batch)?;
        return Ok(a
            .into_iter()
            .zip(b)
            .zip(c)
            .map(|((a, b), c)| (a, b, c))
            .collect());
    }
    if r.batch == 0 {
        return Ok(vec![(r.a, r.b, r.c)]);
    }
    (0..r.batch)
        .map(|i| {
            Ok((
                offset(r.a, i, r.stride_a, size)?,
                offset(r.b, i, r.stride_b, size)?,
                offset(r.c, i, r.stride_c, size)?,
            ))
        })
        .collect()
}

fn gemm<T: Elem>(cx: &mut Ctx<'_>) -> ExecResult<()> {
    let r = *cx.r;
    let (alpha, beta) = (cx.scalar::<T>(&r.alpha)?, cx.scalar::<T>(&r.beta)?);
    let (ar, ac) = stored(r.trans_a, r.m, r.k);
    let (br, bc) = stored(r.trans_b, r.k, r.n);
    let ops = gemm_operands(cx, T::SIZE)?;
    // Check every matrix of the batch before running any.
    let mut checked = Vec::with_capacity(ops.len());
    for (a, b, c) in ops {
        checked.push((
            cx.matrix::<T>(a, ar, ac, r.lda)?,
            cx.matrix::<T>(b, br, bc, r.ldb)?,
            cx.matrix::<T>(c, r.m, r.n, r.ldc)?,
        ));
    }
    if r.m == 0 || r.n == 0 {
        return Ok(());
    }
    for (a, b, c) in checked {
        // SAFETY: each operand's extent was checked above.
        unsafe {
            T::gemm(
                r.trans_a,
                r.trans_b,
                int(r.m),
                int(r.n),
                int(r.k),
                alpha,
                a,
                int(r.lda),
                b,
                int(r.ldb),
                beta,
                c,
                int(r.ldc),
            )
        };
    }
    Ok(())
}

/// `op(X)(i, j)` of a column-major matrix at `p`.
///
/// # Safety
/// `p` must cover the stored matrix, and `(i, j)` be inside `op(X)`.
unsafe fn at<T: Elem>(p: *const T, t: u32, ld: i64, i: i64, j: i64) -> T {
    let (r, c) = if t == OP_N { (i, j) } else { (j, i) };
    // SAFETY: the caller's contract.
    let v = unsafe { p.add((r + c * ld) as usize).read() };
    if t == OP_C { v.conj() } else { v }
}

fn geam<T: Elem>(cx: &mut Ctx<'_>) -> ExecResult<()> {
    let r = *cx.r;
    let (alpha, beta) = (cx.scalar::<T>(&r.alpha)?, cx.scalar::<T>(&r.beta)?);
    let (ar, ac) = stored(r.trans_a, r.m, r.n);
    let (br, bc) = stored(r.trans_b, r.m, r.n);
    // A (B) is not read when alpha (beta) is zero, so it may be null then.
    let a = if alpha == T::zero() {
        None
    } else {
        Some(cx.matrix::<T>(r.a, ar, ac, r.lda)?)
    };
    let b = if beta == T::zero() {
        None
    } else {
        Some(cx.matrix::<T>(r.b, br, bc, r.ldb)?)
    };
    let c = cx.matrix::<T>(r.c, r.m, r.n, r.ldc)?;
    // Compute into a buffer first: C may be A or B (in-place geam).
    let mut out = Vec::with_capacity((r.m * r.n) as usize);
    for j in 0..r.n {
        for i in 0..r.m {
            let mut v = T::zero();
            if let Some(a) = a {
                // SAFETY: (i, j) is inside op(A), whose extent was checked.
                v = v.add(alpha.mul(unsafe { at(a, r.trans_a, r.lda, i, j) }));
            }
            if let Some(b) = b {
                // SAFETY: as above.
                v = v.add(beta.mul(unsafe { at(b, r.trans_b, r.ldb, i, j) }));
            }
            out.push(v);
        }
    }
    for j in 0..r.n {
        for i in 0..r.m {
            // SAFETY: inside C's checked extent.
            unsafe {
                c.add((i + j * r.ldc) as usize)
                    .write(out[(i + j * r.m) as usize])
            };
        }
    }
    Ok(())
}

/// LU factorization without pivoting (`getrfBatched` with a null pivot array).
///
/// # Safety
/// `a` must cover an `n x n` matrix with leading dimension `lda`.
unsafe fn lu_no_pivot<T: Elem>(n: i64, a: *mut T, lda: i64) -> i32 {
    let idx = |i: i64, j: i64| (i + j * lda) as usize;
    let mut info = 0;
    for k in 0..n {
        // SAFETY: every index is inside the n x n matrix (the caller's contract).
        let p = unsafe { a.add(idx(k, k)).read() };
        if p == T::zero() {
            if info == 0 {
                info = k as i32 + 1;
            }
            continue;
        }
        // 1 / p, computed as conj(p) / |p|^2 for complex types.
        let inv = recip(p);
        for i in k + 1..n {
            // SAFETY: as above.
            unsafe {
                let l = a.add(idx(i, k)).read().mul(inv);
                a.add(idx(i, k)).write(l);
                for j in k + 1..n {
                    let u = a.add(idx(k, j)).read();
                    let v = a.add(idx(i, j)).read();
                    a.add(idx(i, j)).write(v.add(neg(l.mul(u))));
                }
            }
        }
    }
    info
}

fn neg<T: Elem>(v: T) -> T {
    let mut b = [0u8; 16];
    v.store(&mut b);
    let h = T::REAL_SIZE;
    // Flip the sign bit of every component.
    for part in b[..T::SIZE as usize].chunks_mut(h) {
        part[h - 1] ^= 0x80;
    }
    T::load(&b)
}

fn recip<T: Elem>(v: T) -> T {
    let mut b = [0u8; 16];
    v.store(&mut b);
    if T::REAL_SIZE == 4 {
        let re = f32::from_le_bytes(b[..4].try_into().unwrap_or_default());
        let im = if T::COMPLEX {
            f32::from_le_bytes(b[4..8].try_into().unwrap_or_default())
        } else {
            0.0
        };
        let d = re * re + im * im;
        b[..4].copy_from_slice(&(re / d).to_le_bytes());
        if T::COMPLEX {
            b[4..8].copy_from_slice(&(-im / d).to_le_bytes());
        }
    } else {
        let re = f64::from_le_bytes(b[..8].try_into().unwrap_or_default());
        let im = if T::COMPLEX {
            f64::from_le_bytes(b[8..16].try_into().unwrap_or_default())
        } else {
            0.0
        };
        let d = re * re + im * im;
        b[..8].copy_from_slice(&(re / d).to_le_bytes());
        if T::COMPLEX {
            b[8..16].copy_from_slice(&(-im / d).to_le_bytes());
        }
    }
    T::load(&b)
}

fn getrf_batched<T: Elem>(cx: &mut Ctx<'_>) -> ExecResult<()> {
    let r = *cx.r;
    let mats = cx.pointer_array(r.a, r.batch)?;
    let mut checked = Vec::with_capacity(mats.len());
    for (i, &m) in mats.iter().enumerate() {
        let a = cx.matrix::<T>(m, r.n, r.n, r.lda)?;
        let piv = if r.x == 0 {
            None
        } else {
            let p = offset(r.x, i as i64, r.n, 4)?;
            Some(cx.raw(p, r.n as u64, 4, 4)?.cast::<c_int>())
        };
        let info = cx
            .raw(offset(r.y, i as i64, 1, 4)?, 1, 4, 4)?
            .cast::<c_int>();
        checked.push((a, piv, info));
    }
    for (a, piv, info) in checked {
        // SAFETY: the matrix, pivot and info extents were checked above.
        unsafe {
            match piv {
                Some(p) if r.n > 0 => T::getrf(int(r.n), a, int(r.lda), p, info),
                Some(_) => info.write(0),
                None => info.write(lu_no_pivot(r.n, a, r.lda)),
            }
        }
    }
    Ok(())
}

fn getrs_batched<T: Elem>(cx: &mut Ctx<'_>) -> ExecResult<[u8; 16]> {
    let r = *cx.r;
    let a_mats = cx.pointer_array(r.a, r.batch)?;
    let b_mats = cx.pointer_array(r.b, r.batch)?;
    let identity: Vec<c_int> = (1..=int(r.n)).collect();
    let mut checked = Vec::with_capacity(a_mats.len());
    for (i, (&am, &bm)) in a_mats.iter().zip(&b_mats).enumerate() {
        let a = cx.matrix::<T>(am, r.n, r.n, r.lda)?;
        let b = cx.matrix::<T>(bm, r.n, r.k, r.ldb)?;
        let piv = if r.x == 0 {
            identity.as_ptr()
        } else {
            let p = offset(r.x, i as i64, r.n, 4)?;
            cx.raw(p, r.n as u64, 4, 4)?.cast::<c_int>().cast_const()
        };
        checked.push((a, b, piv));
    }
    let t = match r.trans_a {
        OP_N => b'N',
        OP_T => b'T',
        _ => b'C',
    };
    if r.n > 0 && r.k > 0 {
        for (a, b, piv) in checked {
            let mut info = 0;
            // SAFETY: as above; pivots come from getrf (1-based, in range) or are the
            // identity; LAPACK checks its arguments and reports through `info`.
            unsafe {
                T::getrs(
                    t,
                    int(r.n),
                    int(r.k),
                    a,
                    int(r.lda),
                    piv,
                    b,
                    int(r.ldb),
                    &mut info,
                )
            };
            if info != 0 {
                return Err(Status(BLAS_EXECUTION_FAILED));
            }
        }
    }
    Ok([0; 16])
}

/// A matrix of `GemmEx` operands converted to `f32` or `f64`.
fn load_matrix<W: Copy>(
    cx: &Ctx<'_>,
    t: u32,
    addr: u64,
    rows: i64,
    cols: i64,
    ld: i64,
    conv: impl Fn(&[u8]) -> W,
) -> ExecResult<Vec<W>> {
    let size = type_size(t).ok_or(UNSUPPORTED)?;
    let p = cx.raw(addr, mat_extent(rows, cols, ld)?, size, size)?;
    let mut out = Vec::with_capacity((rows.max(0) * cols.max(0)) as usize);
    for j in 0..cols {
        for i in 0..rows {
            let off = ((i + j * ld) as u64 * size) as usize;
            // SAFETY: (i, j) is inside the checked extent.
            let b = unsafe { std::slice::from_raw_parts(p.add(off), size as usize) };
            out.push(conv(b));
        }
    }
    Ok(out)
}

fn type_size(t: u32) -> Option<u64> {
    match t {
        dtype::R_16F => Some(2),
        dtype::R_32F => Some(4),
        dtype::R_64F | dtype::C_32F => Some(8),
        dtype::C_64F => Some(16),
        _ => None,
    }
}

fn to_f32(t: u32) -> impl Fn(&[u8]) -> f32 {
    move |b: &[u8]| match t {
        dtype::R_16F => f16::from_le_bytes([b[0], b[1]]).to_f32(),
        _ => f32::from_le_bytes(b[..4].try_into().unwrap_or_default()),
    }
}

/// `cublasGemmEx` and friends for the type combinations the plain routines do not cover:
/// `R_16F` inputs with an `R_16F` or `R_32F` output, computed in `f32` (the scalars are
/// `f32`, or `f16` for `CUBLAS_COMPUTE_16F`). Same-type `f32`/`f64`/complex requests run
/// the plain routines.
fn gemm_ex(cx: &mut Ctx<'_>) -> ExecResult<()> {
    let r = *cx.r;
    use compute::*;
    let c32 = matches!(
        r.compute,
        C32F | C32F_PEDANTIC
            | C32F_FAST_16F
            | C32F_FAST_16BF
            | C32F_FAST_TF32
            | C32F_EMULATED_16BFX9
    );
    let c64 = matches!(r.compute, C64F | C64F_PEDANTIC);
    let c16 = matches!(r.compute, C16F | C16F_PEDANTIC);
    let same = r.type_a == r.type_b && r.type_a == r.type_c;
    match (r.type_a, same) {
        (dtype::R_32F | dtype::C_32F, true) if c32 => {
            return if r.type_a == dtype::R_32F {
                gemm::<f32>(cx)
            } else {
                gemm::<C32>(cx)
            };
        }
        (dtype::R_64F | dtype::C_64F, true) if c64 => {
            return if r.type_a == dtype::R_64F {
                gemm::<f64>(cx)
            } else {
                gemm::<C64>(cx)
            };
        }
        _ => {}
    }
    let half_out = r.type_c == dtype::R_16F;
    if r.type_a != dtype::R_16F
        || r.type_b != dtype::R_16F
        || !(half_out || r.type_c == dtype::R_32F)
        || !(c32 || (c16 && half_out))
    {
        return Err(UNSUPPORTED);
    }
    let scalar = |cx: &Ctx<'_>, f: &[u8; 16]| -> ExecResult<f32> {
        if c16 {
            let b = cx.scalar_bytes(f, 2)?;
            Ok(f16::from_le_bytes([b[0], b[1]]).to_f32())
        } else {
            cx.scalar::<f32>(f)
        }
    };
    let (alpha, beta) = (scalar(cx, &r.alpha)?, scalar(cx, &r.beta)?);
    let (ar, ac) = stored(r.trans_a, r.m, r.k);
    let (br, bc) = stored(r.trans_b, r.k, r.n);
    let csize = type_size(r.type_c).ok_or(UNSUPPORTED)?;
    let ops = gemm_operands(cx, 2)?;
    // Strides of a strided batch count elements of each operand's own type.
    let ops: Vec<_> = if r.func == func::GEMM && r.batch > 0 {
        (0..r.batch)
            .map(|i| {
                Ok((
                    offset(r.a, i, r.stride_a, 2)?,
                    offset(r.b, i, r.stride_b, 2)?,
                    offset(r.c, i, r.stride_c, csize)?,
                ))
            })
            .collect::<ExecResult<_>>()?
    } else {
        ops
    };
    for &(a, b, c) in &ops {
        // Check everything before writing anything.
        cx.raw(a, mat_extent(ar, ac, r.lda)?, 2, 2)?;
        cx.raw(b, mat_extent(br, bc, r.ldb)?, 2, 2)?;
        cx.raw(c, mat_extent(r.m, r.n, r.ldc)?, csize, csize)?;
    }
    if r.m == 0 || r.n == 0 {
        return Ok(());
    }
    for (a, b, c) in ops {
        let am = load_matrix(cx, dtype::R_16F, a, ar, ac, r.lda, to_f32(dtype::R_16F))?;
        let bm = load_matrix(cx, dtype::R_16F, b, br, bc, r.ldb, to_f32(dtype::R_16F))?;
        let mut cm = if beta == 0.0 {
            vec![0.0f32; (r.m * r.n) as usize]
        } else {
            load_matrix(cx, r.type_c, c, r.m, r.n, r.ldc, to_f32(r.type_c))?
        };
        // SAFETY: dense local buffers of the right sizes (`ld` = rows of each).
        unsafe {
            f32::gemm(
                r.trans_a,
                r.trans_b,
                int(r.m),
                int(r.n),
                int(r.k),
                alpha,
                am.as_ptr(),
                int(ar.max(1)),
                bm.as_ptr(),
                int(br.max(1)),
                beta,
                cm.as_mut_ptr(),
                int(r.m),
            )
        };
        let p = cx.raw(c, mat_extent(r.m, r.n, r.ldc)?, csize, csize)?;
        for j in 0..r.n {
            for i in 0..r.m {
                let v = cm[(i + j * r.m) as usize];
                let off = ((i + j * r.ldc) as u64 * csize) as usize;
                let bytes: &[u8] = if half_out {
                    &f16::from_f32(v).to_le_bytes()
                } else {
                    &v.to_le_bytes()
                };
                // SAFETY: inside C's checked extent.
                unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), p.add(off), bytes.len()) };
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    //! Every routine against a naive reference on the simulated device memory.

    use super::*;
    use crate::executor::cpu::memory::{AllocKind, MemoryBudget};

    struct Env {
        heap: DeviceHeap,
        blas: Blas,
        h: u64,
    }

    impl Env {
        fn new() -> Self {
            let mut blas = Blas::default();
            let h = blas.create();
            Self {
                heap: DeviceHeap::new(MemoryBudget::new(1 << 26)),
                blas,
                h,
            }
        }

        fn put<T: Elem>(&mut self, v: &[T]) -> u64 {
            let len = v.len() as u64 * T::SIZE;
            let a = self.heap.alloc(len.max(1), AllocKind::User).unwrap();
            let b = self.heap.bytes_mut(a, len).unwrap();
            for (i, x) in v.iter().enumerate() {
                x.store(&mut b[i * T::SIZE as usize..]);
            }
            a
        }

        fn get<T: Elem>(&self, a: u64, n: usize) -> Vec<T> {
            let b = self.heap.bytes(a, n as u64 * T::SIZE).unwrap();
            b.chunks(T::SIZE as usize).map(T::load).collect()
        }

        fn call(&mut self, r: BlasCallReq) -> ExecResult<[u8; 16]> {
            let r = BlasCallReq {
                handle: self.h,
                ..r
            };
            self.blas.call(&mut self.heap, &r)
        }
    }

    fn s16<T: Elem>(v: T) -> [u8; 16] {
        let mut b = [0; 16];
        v.store(&mut b);
        b
    }

    fn data(n: usize, seed: u32) -> Vec<f64> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                f64::from((s >> 8) & 0xffff) / 65536.0 - 0.5
            })
            .collect()
    }

    fn close(a: &[f64], b: &[f64], tol: f64) {
        assert_eq!(a.len(), b.len());
        for (i, (x, y)) in a.iter().zip(b).enumerate() {
            assert!((x - y).abs() <= tol * (1.0 + y.abs()), "[{i}] {x} vs {y}");
        }
    }

    fn op(t: u32, a: &[f64], ld: usize, i: usize, j: usize) -> f64 {
        if t == OP_N {
            a[i + j * ld]
        } else {
            a[j + i * ld]
        }
    }

    #[test]
    fn gemm_all_transposes_and_batches() {
        for (ta, tb) in [(OP_N, OP_N), (OP_N, OP_T), (OP_T, OP_N), (OP_T, OP_T)] {
            let (m, n, k) = (5usize, 3usize, 4usize);
            let lda = if ta == OP_N { m + 1 } else { k + 2 };
            let ldb = if tb == OP_N { k } else { n + 1 };
            let ldc = m + 3;
            let a = data(lda * if ta == OP_N { k } else { m }, 1);
            let b = data(ldb * if tb == OP_N { n } else { k }, 2);
            let c = data(ldc * n, 3);
            let mut e = Env::new();
            let (da, db, dc) = (e.put(&a), e.put(&b), e.put(&c));
            e.call(BlasCallReq {
                func: func::GEMM,
                type_a: dtype::R_64F,
                type_b: dtype::R_64F,
                type_c: dtype::R_64F,
                trans_a: ta,
                trans_b: tb,
                m: m as i64,
                n: n as i64,
                k: k as i64,
                lda: lda as i64,
                ldb: ldb as i64,
                ldc: ldc as i64,
                a: da,
                b: db,
                c: dc,
                alpha: s16(2.0f64),
                beta: s16(-1.0f64),
                ..Default::default()
            })
            .unwrap();
            let mut want = c.clone();
            for j in 0..n {
                for i in 0..m {
                    let s: f64 = (0..k)
                        .map(|p| op(ta, &a, lda, i, p) * op(tb, &b, ldb, p, j))
                        .sum();
                    want[i + j * ldc] = 2.0 * s - c[i + j * ldc];
                }
            }
            close(&e.get::<f64>(dc, c.len()), &want, 1e-12);
        }
        // Strided batch and pointer-array batch in f32 give the same results.
        let (m, n, k, batch) = (3usize, 2usize, 4usize, 3usize);
        let a: Vec<f32> = data(m * k * batch, 4).iter().map(|&x| x as f32).collect();
        let b: Vec<f32> = data(k * n * batch, 5).iter().map(|&x| x as f32).collect();
        let mut e = Env::new();
        let (da, db) = (e.put(&a), e.put(&b));
        let dc = e.put(&vec![0.0f32; m * n * batch]);
        let base = BlasCallReq {
            type_a: dtype::R_32F,
            type_b: dtype::R_32F,
            type_c: dtype::R_32F,
            m: m as i64,
            n: n as i64,
            k: k as i64,
            lda: m as i64,
            ldb: k as i64,
            ldc: m as i64,
            batch: batch as i64,
            alpha: s16(1.0f32),
            beta: s16(0.0f32),
            ..Default::default()
        };
        e.call(BlasCallReq {
            func: func::GEMM,
            a: da,
            b: db,
            c: dc,
            stride_a: (m * k) as i64,
            stride_b: (k * n) as i64,
            stride_c: (m * n) as i64,
            ..base
        })
        .unwrap();
        let strided = e.get::<f32>(dc, m * n * batch);
        let dc2 = e.put(&vec![0.0f32; m * n * batch]);
        let ptrs = |base: u64, stride: usize| -> Vec<f64> {
            (0..batch)
                .map(|i| f64::from_bits(base + (i * stride * 4) as u64))
                .collect()
        };
        let pa = e.put(&ptrs(da, m * k));
        let pb = e.put(&ptrs(db, k * n));
        let pc = e.put(&ptrs(dc2, m * n));
        e.call(BlasCallReq {
            func: func::GEMM_BATCHED,
            a: pa,
            b: pb,
            c: pc,
            ..base
        })
        .unwrap();
        assert_eq!(e.get::<f32>(dc2, m * n * batch), strided);
        for bi in 0..batch {
            for j in 0..n {
                for i in 0..m {
                    let s: f32 = (0..k)
                        .map(|p| a[bi * m * k + i + p * m] * b[bi * k * n + p + j * k])
                        .sum();
                    assert!((strided[bi * m * n + i + j * m] - s).abs() < 1e-5);
                }
            }
        }
    }

    #[test]
    fn level_one() {
        let x = data(10, 7);
        let y = data(10, 8);
        let mut e = Env::new();
        let (dx, dy) = (e.put(&x), e.put(&y));
        let v = BlasCallReq {
            type_a: dtype::R_64F,
            n: 5,
            x: dx,
            incx: 2,
            y: dy,
            incy: -2,
            ..Default::default()
        };
        let get = |b: [u8; 16]| f64::load(&b);
        let asum = get(e
            .call(BlasCallReq {
                func: func::ASUM,
                ..v
            })
            .unwrap());
        close(
            &[asum],
            &[x.iter().step_by(2).map(|v| v.abs()).sum()],
            1e-12,
        );
        let nrm = get(e
            .call(BlasCallReq {
                func: func::NRM2,
                ..v
            })
            .unwrap());
        close(
            &[nrm],
            &[x.iter().step_by(2).map(|v| v * v).sum::<f64>().sqrt()],
            1e-12,
        );
        // Negative increments walk y backwards from its last element.
        let dot = get(e
            .call(BlasCallReq {
                func: func::DOT,
                ..v
            })
            .unwrap());
        let want: f64 = (0..5).map(|i| x[2 * i] * y[8 - 2 * i]).sum();
        close(&[dot], &[want], 1e-12);
        let imax = e
            .call(BlasCallReq {
                func: func::IAMAX,
                ..v
            })
            .unwrap();
        let imin = e
            .call(BlasCallReq {
                func: func::IAMIN,
                ..v
            })
            .unwrap();
        let xs: Vec<f64> = x.iter().step_by(2).map(|v| v.abs()).collect();
        let arg = |f: &dyn Fn(f64, f64) -> bool| {
            (0..5).fold(0, |b, i| if f(xs[i], xs[b]) { i } else { b }) as i32 + 1
        };
        assert_eq!(
            i32::from_le_bytes(imax[..4].try_into().unwrap()),
            arg(&|a, b| a > b)
        );
        assert_eq!(
            i32::from_le_bytes(imin[..4].try_into().unwrap()),
            arg(&|a, b| a < b)
        );
        // Empty vectors give zero.
        assert_eq!(
            e.call(BlasCallReq {
                func: func::NRM2,
                n: 0,
                ..v
            })
            .unwrap(),
            [0; 16]
        );
        e.call(BlasCallReq {
            func: func::AXPY,
            alpha: s16(3.0f64),
            ..v
        })
        .unwrap();
        let mut want = y.clone();
        for i in 0..5 {
            want[8 - 2 * i] += 3.0 * x[2 * i];
        }
        close(&e.get::<f64>(dy, 10), &want, 1e-12);
        e.call(BlasCallReq {
            func: func::SCAL,
            alpha: s16(-2.0f64),
            ..v
        })
        .unwrap();
        let sx = e.get::<f64>(dx, 10);
        assert!((0..10).all(|i| sx[i] == if i % 2 == 0 { -2.0 * x[i] } else { x[i] }));
        let before_y = e.get::<f64>(dy, 10);
        e.call(BlasCallReq {
            func: func::SWAP,
            incy: 2,
            ..v
        })
        .unwrap();
        assert_eq!(e.get::<f64>(dx, 10)[2], before_y[2]);
        e.call(BlasCallReq {
            func: func::COPY,
            incy: 2,
            ..v
        })
        .unwrap();
        assert_eq!(e.get::<f64>(dy, 10)[4], e.get::<f64>(dx, 10)[4]);
        let (c, s) = (0.6f64, 0.8f64);
        let (bx, by) = (e.get::<f64>(dx, 10), e.get::<f64>(dy, 10));
        e.call(BlasCallReq {
            func: func::ROT,
            incy: 2,
            alpha: s16(c),
            beta: s16(s),
            ..v
        })
        .unwrap();
        let (ax, ay) = (e.get::<f64>(dx, 10), e.get::<f64>(dy, 10));
        close(
            &[ax[6], ay[6]],
            &[c * bx[6] + s * by[6], c * by[6] - s * bx[6]],
            1e-12,
        );
    }

    #[test]
    fn level_two() {
        let (m, n) = (4usize, 3usize);
        let a = data(m * n, 9);
        let x = data(m, 10);
        let y = data(n, 11);
        let mut e = Env::new();
        let (da, dx, dy) = (e.put(&a), e.put(&x), e.put(&y));
        let base = BlasCallReq {
            type_a: dtype::R_64F,
            m: m as i64,
            n: n as i64,
            a: da,
            lda: m as i64,
            x: dx,
            incx: 1,
            y: dy,
            incy: 1,
            alpha: s16(1.0f64),
            beta: s16(0.5f64),
            ..Default::default()
        };
        // y = A^T x + 0.5 y.
        e.call(BlasCallReq {
            func: func::GEMV,
            trans_a: OP_T,
            ..base
        })
        .unwrap();
        let want: Vec<f64> = (0..n)
            .map(|j| (0..m).map(|i| a[i + j * m] * x[i]).sum::<f64>() + 0.5 * y[j])
            .collect();
        close(&e.get::<f64>(dy, n), &want, 1e-12);
        let y2 = e.get::<f64>(dy, n);
        e.call(BlasCallReq {
            func: func::GER,
            ..base
        })
        .unwrap();
        let got = e.get::<f64>(da, m * n);
        for j in 0..n {
            for i in 0..m {
                assert!((got[i + j * m] - (a[i + j * m] + x[i] * y2[j])).abs() < 1e-12);
            }
        }
        // A lower-triangular 3 x 3 system: symv with the lower part, then trsv undoes the
        // triangular product.
        let l = [2.0, 0.5, -1.0, 9.0, 3.0, 0.25, 9.0, 9.0, 4.0f64];
        let v = [1.0, -2.0, 0.5f64];
        let mut e = Env::new();
        let (dl, dv, dw) = (e.put(&l), e.put(&v), e.put(&[0.0f64; 3]));
        let tri = BlasCallReq {
            type_a: dtype::R_64F,
            n: 3,
            a: dl,
            lda: 3,
            x: dv,
            incx: 1,
            y: dw,
            incy: 1,
            uplo: check::FILL_LOWER,
            alpha: s16(1.0f64),
            beta: s16(0.0f64),
            ..Default::default()
        };
        e.call(BlasCallReq {
            func: func::SYMV,
            ..tri
        })
        .unwrap();
        let sym = |i: usize, j: usize| if i >= j { l[i + j * 3] } else { l[j + i * 3] };
        let want: Vec<f64> = (0..3)
            .map(|i| (0..3).map(|j| sym(i, j) * v[j]).sum())
            .collect();
        close(&e.get::<f64>(dw, 3), &want, 1e-12);
        // b = L v, then solve L x = b.
        let b: Vec<f64> = (0..3)
            .map(|i| (0..=i).map(|j| l[i + j * 3] * v[j]).sum())
            .collect();
        let db = e.put(&b);
        e.call(BlasCallReq {
            func: func::TRSV,
            x: db,
            ..tri
        })
        .unwrap();
        close(&e.get::<f64>(db, 3), &v, 1e-12);
    }

    #[test]
    fn level_three() {
        let (m, n) = (3usize, 2usize);
        let l = [2.0, 0.5, -1.0, 0.0, 3.0, 0.25, 0.0, 0.0, 4.0f64];
        let x = data(m * n, 12);
        let b: Vec<f64> = (0..m * n)
            .map(|ij| {
                let (i, j) = (ij % m, ij / m);
                (0..=i).map(|p| l[i + p * m] * x[p + j * m]).sum()
            })
            .collect();
        let mut e = Env::new();
        let (dl, db) = (e.put(&l), e.put(&b));
        let base = BlasCallReq {
            type_a: dtype::R_64F,
            m: m as i64,
            n: n as i64,
            a: dl,
            lda: m as i64,
            b: db,
            ldb: m as i64,
            uplo: check::FILL_LOWER,
            alpha: s16(1.0f64),
            beta: s16(0.0f64),
            ..Default::default()
        };
        e.call(BlasCallReq {
            func: func::TRSM,
            ..base
        })
        .unwrap();
        close(&e.get::<f64>(db, m * n), &x, 1e-12);
        // symm: C = S X with S the symmetric completion of the lower triangle of l.
        let dc = e.put(&vec![0.0f64; m * n]);
        let dx = e.put(&x);
        e.call(BlasCallReq {
            func: func::SYMM,
            b: dx,
            c: dc,
            ldc: m as i64,
            ..base
        })
        .unwrap();
        let sym = |i: usize, j: usize| if i >= j { l[i + j * m] } else { l[j + i * m] };
        let want: Vec<f64> = (0..m * n)
            .map(|ij| (0..m).map(|p| sym(ij % m, p) * x[p + (ij / m) * m]).sum())
            .collect();
        close(&e.get::<f64>(dc, m * n), &want, 1e-12);
        // syrk: lower triangle of X X^T.
        let dk = e.put(&vec![0.0f64; m * m]);
        e.call(BlasCallReq {
            func: func::SYRK,
            n: m as i64,
            k: n as i64,
            a: dx,
            c: dk,
            ldc: m as i64,
            ..base
        })
        .unwrap();
        let got = e.get::<f64>(dk, m * m);
        for j in 0..m {
            for i in j..m {
                let w: f64 = (0..n).map(|p| x[i + p * m] * x[j + p * m]).sum();
                assert!((got[i + j * m] - w).abs() < 1e-12);
            }
        }
        // geam in place: X = 2 X + (-1) L[0..3, 0..2]^T^T.
        e.call(BlasCallReq {
            func: func::GEAM,
            a: dx,
            b: dl,
            c: dx,
            ldc: m as i64,
            alpha: s16(2.0f64),
            beta: s16(-1.0f64),
            ..base
        })
        .unwrap();
        let want: Vec<f64> = (0..m * n).map(|i| 2.0 * x[i] - l[i]).collect();
        close(&e.get::<f64>(dx, m * n), &want, 1e-12);
    }

    #[test]
    fn lu_factor_and_solve() {
        let a = [1.0, 4.0, 7.0, 2.0, 5.0, 8.0, 3.0, 6.0, 10.0f32];
        let xs = [1.0, 2.0, 3.0f32];
        let b: Vec<f32> = (0..3)
            .map(|i| (0..3).map(|j| a[i + j * 3] * xs[j]).sum())
            .collect();
        let mut e = Env::new();
        let (da, db) = (e.put(&a), e.put(&b));
        let (pa, pb) = (e.put(&[f64::from_bits(da)]), e.put(&[f64::from_bits(db)]));
        let piv = e.put(&[0.0f32; 3]);
        let info = e.put(&[1.0f32]);
        let base = BlasCallReq {
            type_a: dtype::R_32F,
            n: 3,
            k: 1,
            a: pa,
            lda: 3,
            b: pb,
            ldb: 3,
            x: piv,
            y: info,
            batch: 1,
            ..Default::default()
        };
        e.call(BlasCallReq {
            func: func::GETRF_BATCHED,
            ..base
        })
        .unwrap();
        assert_eq!(e.heap.bytes(info, 4).unwrap(), &[0; 4]);
        e.call(BlasCallReq {
            func: func::GETRS_BATCHED,
            ..base
        })
        .unwrap();
        let got = e.get::<f32>(db, 3);
        assert!(
            got.iter().zip(xs).all(|(g, w)| (g - w).abs() < 1e-4),
            "{got:?}"
        );
        // Without pivots (a null pivot array) on a diagonally dominant matrix.
        let d = [4.0, 1.0, 1.0, 5.0f64];
        let dd = e.put(&d);
        let pd = e.put(&[f64::from_bits(dd)]);
        e.call(BlasCallReq {
            func: func::GETRF_BATCHED,
            type_a: dtype::R_64F,
            a: pd,
            n: 2,
            lda: 2,
            x: 0,
            ..base
        })
        .unwrap();
        close(&e.get::<f64>(dd, 4), &[4.0, 0.25, 1.0, 4.75], 1e-12);
    }

    #[test]
    fn gemm_ex_half_inputs() {
        let (m, n, k) = (2usize, 2usize, 3usize);
        let a: Vec<f32> = vec![1.0, 2.0, 0.5, -1.0, 3.0, 0.25];
        let b: Vec<f32> = vec![1.0, 0.0, 2.0, -2.0, 1.5, 1.0];
        let mut e = Env::new();
        let half = |v: &[f32]| -> Vec<u8> {
            v.iter()
                .flat_map(|&x| f16::from_f32(x).to_le_bytes())
                .collect()
        };
        let put_bytes = |e: &mut Env, b: &[u8]| {
            let a = e.heap.alloc(b.len() as u64, AllocKind::User).unwrap();
            e.heap
                .bytes_mut(a, b.len() as u64)
                .unwrap()
                .copy_from_slice(b);
            a
        };
        let da = put_bytes(&mut e, &half(&a));
        let db = put_bytes(&mut e, &half(&b));
        let dc = e.put(&[0.0f32; 4]);
        e.call(BlasCallReq {
            func: func::GEMM,
            type_a: dtype::R_16F,
            type_b: dtype::R_16F,
            type_c: dtype::R_32F,
            compute: compute::C32F,
            m: m as i64,
            n: n as i64,
            k: k as i64,
            lda: m as i64,
            ldb: k as i64,
            ldc: m as i64,
            a: da,
            b: db,
            c: dc,
            alpha: s16(1.0f32),
            beta: s16(0.0f32),
            ..Default::default()
        })
        .unwrap();
        let want: Vec<f32> = (0..m * n)
            .map(|ij| {
                (0..k)
                    .map(|p| a[ij % m + p * m] * b[p + (ij / m) * k])
                    .sum()
            })
            .collect();
        assert_eq!(e.get::<f32>(dc, 4), want);
    }

    #[test]
    fn faults_and_errors() {
        let mut e = Env::new();
        let dx = e.put(&[1.0f32; 8]);
        let v = BlasCallReq {
            func: func::ASUM,
            type_a: dtype::R_32F,
            n: 8,
            x: dx,
            incx: 1,
            ..Default::default()
        };
        assert_eq!(f32::load(&e.call(v).unwrap()), 8.0);
        // One element past the allocation, a stride that walks out of it, a misaligned
        // pointer, an unknown handle, a bad leading dimension, an unknown type.
        assert_eq!(e.call(BlasCallReq { n: 9, ..v }), Err(FAULT));
        assert_eq!(e.call(BlasCallReq { incx: 2, ..v }), Err(FAULT));
        assert_eq!(e.call(BlasCallReq { x: dx + 2, ..v }), Err(MISALIGNED));
        assert_eq!(
            e.blas.call(&mut e.heap, &BlasCallReq { handle: 1, ..v }),
            Err(Status(BLAS_NOT_INITIALIZED))
        );
        let g = BlasCallReq {
            func: func::GEMM,
            type_a: dtype::R_32F,
            type_b: dtype::R_32F,
            type_c: dtype::R_32F,
            m: 2,
            n: 2,
            k: 2,
            lda: 2,
            ldb: 2,
            ldc: 2,
            a: dx,
            b: dx,
            c: dx,
            ..Default::default()
        };
        assert!(e.call(g).is_ok());
        assert_eq!(
            e.call(BlasCallReq { lda: 1, ..g }),
            Err(Status(vcuda_protocol::lib::BLAS_INVALID_VALUE))
        );
        assert_eq!(e.call(BlasCallReq { ldc: 7, ..g }), Err(FAULT));
        assert_eq!(e.call(BlasCallReq { type_a: 99, ..v }), Err(UNSUPPORTED));
        // Device pointer mode: the result goes to device memory.
        let host = f32::load(&e.call(v).unwrap());
        let dr = e.put(&[0.0f32]);
        let out = e
            .call(BlasCallReq {
                flags: BLAS_DEVICE_POINTERS,
                result: dr,
                ..v
            })
            .unwrap();
        assert_eq!(out, [0; 16]);
        assert_eq!(e.get::<f32>(dr, 1), [host]);
        e.blas.destroy(e.h).unwrap();
        assert_eq!(e.call(v), Err(Status(BLAS_NOT_INITIALIZED)));
    }
}
